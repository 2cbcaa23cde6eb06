//! The first build after a session is opened (issue #13), natively: what it outputs and what it
//! takes. Each fixture (5,000 airline-run messages, the SWE-agent run, the Claude Code logs) is
//! built under several option sets twice: fresh (one appendMany, then the build), and reopened
//! (appended one message at a time with a build at each user message, as a chat app does, then
//! exported and loaded into a new session whose first and second builds are recorded).
//!
//!     cargo run --release --example first_build -- dump <file>   every output, one JSON line each:
//!         run it before and after a change to the build path and `cmp` the files (the requests,
//!         receipts, entries and counts must stay byte-identical)
//!     cargo run --release --example first_build -- time [runs]   the reopened 5,000-message
//!         session's first build (and its request), median of `runs` fresh loads
//!     cargo run --release --example first_build -- compress [runs]   the long JSON tool outputs
//!         of the fixtures compressed, beside the time their parse alone takes

use std::io::Write;
use std::time::Instant;

use context_compactor::compact::BuildOptions;
use context_compactor::message::Format;
use context_compactor::session::{Session, SessionExport};
use context_compactor::tokens::Encoding;
use serde_json::{json, Value};

#[path = "../tests/common/mod.rs"]
mod common;

fn fixtures() -> Vec<(&'static str, Vec<Value>, Format)> {
    let mut out = vec![
        ("airline-5000", common::long_conversation(5000), Format::OpenAi),
        ("swe-agent", common::swe_agent().as_array().cloned().unwrap_or_default(), Format::OpenAi),
    ];
    for name in common::CLAUDE_CODE_LOGS {
        out.push((name, common::claude_code(name), Format::Anthropic));
    }
    out
}

fn option_sets() -> Vec<(&'static str, Value)> {
    let budget = json!({ "contextWindow": 100_000, "targetRatio": 1 });
    let tight = json!({ "contextWindow": 8_000 });
    vec![
        ("default-100k", json!({ "budget": budget })),
        ("select-only", json!({ "budget": budget, "summary": null, "compress": null, "digest": null })),
        ("tight", json!({ "budget": tight })),
        ("tight-no-summary-thin", json!({ "budget": tight, "summary": null, "thin": true })),
        ("tight-anthropic", json!({ "budget": tight, "format": "anthropic" })),
        ("max-messages", json!({ "maxMessages": 40 })),
        ("no-budget", json!({})),
    ]
}

fn parse_options(value: &Value) -> BuildOptions {
    serde_json::from_value(value.clone()).expect("options")
}

fn append_all(session: &mut Session, messages: &[Value], format: Format) {
    session.history.append_values(Value::Array(messages.to_vec()), format).expect("append");
}

/// Appended one message at a time, built at each user message; exported.
fn reopened(messages: &[Value], format: Format, options: &BuildOptions) -> SessionExport {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    for message in messages {
        session.history.append_value(message.clone(), format).expect("append");
        if message["role"] == "user" {
            session.build(options).expect("build while appending");
        }
    }
    session.export().expect("export")
}

/// One build's whole output: the request, the receipt and its entries, the counts, the summary
/// made or requested.
fn output(session: &mut Session, options: &BuildOptions) -> Value {
    match session.build(options) {
        Err(e) => json!({ "error": e.message }),
        Ok(outcome) => {
            let request = session.compactor.request_value(&outcome.context).expect("request");
            json!({
                "request": request,
                "tokens": outcome.context.tokens,
                "receipt": outcome.context.receipt,
                "entries": session.receipt_entries(),
                "newSummary": outcome.new_summary,
                "summaryRequest": outcome.summary_request.map(|r| serde_json::to_value(r).expect("request")),
            })
        }
    }
}

fn dump(path: &str) {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path).expect("output file"));
    for (fixture, messages, format) in fixtures() {
        for (label, value) in option_sets() {
            let options = parse_options(&value);
            let mut fresh = Session::with_encoding(Encoding::O200kBase);
            append_all(&mut fresh, &messages, format);
            let first = output(&mut fresh, &options);
            let second = output(&mut fresh, &options);
            let export = reopened(&messages, format, &options);
            let mut loaded = Session::from_export(export).expect("load");
            let reopened_first = output(&mut loaded, &options);
            let reopened_second = output(&mut loaded, &options);
            let line = json!({
                "fixture": fixture, "options": label,
                "fresh": [first, second], "reopened": [reopened_first, reopened_second],
            });
            writeln!(file, "{line}").expect("write");
            eprintln!("{fixture} {label}: done");
        }
    }
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn time(runs: usize) {
    let options = parse_options(&json!({ "budget": { "contextWindow": 100_000, "targetRatio": 1 } }));
    let messages = common::long_conversation(5000);
    let export = reopened(&messages, Format::OpenAi, &options);
    // Counted once: a stored session's counts are kept with its records (and loaded, not made).
    let mut counted = Session::from_export(export).expect("load");
    counted.history.count_all();
    let (mut build, mut request, mut next) = (Vec::new(), Vec::new(), Vec::new());
    let mut work = (0, 0);
    for _ in 0..runs {
        let mut session = counted.clone();
        let start = Instant::now();
        let outcome = session.build(&options).expect("build");
        build.push(start.elapsed().as_secs_f64() * 1e3);
        work = (session.compactor.reductions_computed(), session.compactor.units_planned());
        let start = Instant::now();
        let value = session.compactor.request_value(&outcome.context).expect("request");
        request.push(start.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(value);
        let start = Instant::now();
        std::hint::black_box(session.build(&options).expect("build"));
        next.push(start.elapsed().as_secs_f64() * 1e3);
    }
    println!(
        "reopened 5,000 messages, budget 100k: first build {:.2} ms ({} reductions computed, {} units planned), \
         its request {:.2} ms; next build {:.2} ms (median of {runs})",
        median(build),
        work.0,
        work.1,
        median(request),
        median(next)
    );
}

/// Every long JSON tool output of the fixtures compressed as a build does, beside the time
/// parsing it takes (what compression costs beyond its parse).
fn compress(runs: usize) {
    use context_compactor::compact::reduce::compress::compress_text;
    let options = context_compactor::compact::CompressOptions::default();
    let mut outputs: Vec<String> = Vec::new();
    for (_, messages, _) in fixtures() {
        for message in &messages {
            if let Some(text) = message["content"].as_str().filter(|_| message["role"] == "tool") {
                outputs.push(text.to_string());
            }
            for block in message["content"].as_array().into_iter().flatten() {
                for inner in block["content"].as_array().into_iter().flatten() {
                    outputs.extend(inner["text"].as_str().map(String::from));
                }
                outputs.extend(block["content"].as_str().map(String::from));
            }
        }
    }
    outputs.retain(|t| t.len() > 800 && t.trim_start().starts_with(['{', '[']));
    let timed = |f: &dyn Fn(&str) -> usize| {
        let start = Instant::now();
        for _ in 0..runs {
            for text in &outputs {
                std::hint::black_box(f(text));
            }
        }
        start.elapsed().as_secs_f64() * 1e3 / runs as f64
    };
    let parse = timed(&|t| serde_json::from_str::<Value>(t).map_or(0, |v| v.is_object() as usize));
    let compress = timed(&|t| compress_text(t, &options).map_or(0, |c| c.len()));
    let bytes: usize = outputs.iter().map(String::len).sum();
    println!(
        "{} JSON tool outputs over 800 B ({bytes} B): compress_text {compress:.2} ms, their parse alone {parse:.2} ms (mean of {runs})",
        outputs.len()
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("dump") => dump(args.get(1).map_or("/tmp/first-build.jsonl", String::as_str)),
        Some("time") => time(args.get(1).and_then(|n| n.parse().ok()).unwrap_or(30)),
        Some("compress") => compress(args.get(1).and_then(|n| n.parse().ok()).unwrap_or(10)),
        _ => eprintln!("usage: first_build dump <file> | time [runs] | compress [runs]"),
    }
}
