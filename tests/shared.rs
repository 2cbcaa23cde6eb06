//! The shared real-world fixtures (`../shared/fixtures`, or `$CC_SHARED/fixtures`): real agent
//! logs and published token vectors that are not this repository's to ship. A plain `cargo test`
//! lists these as ignored; `scripts/test.sh` runs them (`cargo test --test shared -- --ignored`)
//! when the fixtures are there and says so when they are not. Everything they check on real
//! sessions is checked on the project's own fixtures by the other suites.

mod common;

use common::*;
use context_compactor::bpe::BpeEncoding;
use context_compactor::compact::{validate, BudgetOptions, BuildOptions, SummaryOptions};
use context_compactor::load::{load, LoadOptions, MarkKind, Source};
use context_compactor::message::{self, Format};
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use serde_json::Value;

fn shared(relative: &str) -> std::path::PathBuf {
    shared_fixtures().join(relative)
}

fn read(relative: &str) -> String {
    let path = shared(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

const TAU_BENCH: &str = "openai/tau-bench-gpt-4o-airline.json";
const MARSHMALLOW: &str = "openai/swe-agent-marshmallow-1867.traj";

fn tau_bench() -> Vec<Value> {
    runs_of(serde_json::from_str(&read(TAU_BENCH)).unwrap())
}

fn build_valid(messages: Value, format: Format) {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    session.history.append_values(messages, format).unwrap();
    for format in [Format::OpenAi, Format::Anthropic] {
        let outcome = session.build(&BuildOptions { format, ..BuildOptions::default() }).unwrap();
        let request = outcome.context.to_request().unwrap();
        assert_eq!(validate(&request, format), Ok(()), "{format:?}");
    }
}

#[test]
#[ignore = "reads the shared fixtures"]
fn gpt_tokenizer_test_plans() {
    let plans = test_plans_at(&shared("tokens/gpt-tokenizer-TestPlans.txt"));
    let count = |e: &str| plans.iter().filter(|p| p.0 == e).count();
    assert_eq!((count("cl100k_base"), count("o200k_base")), (64, 57));
    for (name, sample, ids) in &plans {
        let (bpe, encoding) = match name.as_str() {
            "cl100k_base" => (BpeEncoding::Cl100kBase, Encoding::Cl100kBase),
            "o200k_base" => (BpeEncoding::O200kBase, Encoding::O200kBase),
            _ => continue,
        };
        assert_same(bpe, sample);
        assert_eq!(&encoding.encode(sample).unwrap(), ids, "{name}: {sample:?}");
    }
}

#[test]
#[ignore = "reads the shared fixtures"]
fn every_text_of_the_real_sessions_tokenizes_as_tiktoken_rs() {
    let mut texts = Vec::new();
    for name in [TAU_BENCH, MARSHMALLOW] {
        json_texts(&serde_json::from_str(&read(name)).unwrap(), &mut texts);
    }
    for entry in std::fs::read_dir(shared("anthropic")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            for line in std::fs::read_to_string(&path).unwrap().lines() {
                json_texts(&serde_json::from_str(line).unwrap(), &mut texts);
            }
        }
    }
    assert!(texts.len() > 10_000, "only {} texts", texts.len());
    for text in &texts {
        for enc in ENCODINGS {
            assert_same(enc, text);
        }
    }
}

#[test]
#[ignore = "reads the shared fixtures"]
fn tau_bench_runs_round_trip_load_and_build() {
    let runs = tau_bench();
    assert_eq!((runs.len(), runs.iter().map(|r| r.as_array().unwrap().len()).sum::<usize>()), (200, 5308));
    let text = read(TAU_BENCH);
    for (index, traj) in runs.iter().enumerate() {
        let parsed = message::parse(traj.clone(), Format::OpenAi).unwrap();
        assert_eq!(&message::emit(&parsed, Format::OpenAi), traj, "run {index} round-trips");
        let loaded = load(&text, &LoadOptions { run: Some(index), ..LoadOptions::default() }).unwrap();
        assert_eq!((loaded.source, &loaded.messages), (Source::TauBench, traj), "run {index} loads as written");
        if index < 3 {
            build_valid(traj.clone(), Format::OpenAi);
        }
    }
    let error = load(&text, &LoadOptions { run: Some(200), ..LoadOptions::default() }).unwrap_err();
    assert_eq!(error.to_string(), "run 200 does not exist: the file has 200 runs (0 to 199)");
}

#[test]
#[ignore = "reads the shared fixtures"]
fn tau_bench_concatenated_to_a_100k_budget() {
    common::concatenated_to_a_100k_budget(tau_bench(), 5308, 199);
}

#[test]
#[ignore = "reads the shared fixtures"]
fn swe_agent_marshmallow_trajectory() {
    let loaded = load(&read(MARSHMALLOW), &LoadOptions::default()).unwrap();
    assert_eq!((loaded.source, loaded.format), (Source::SweAgent, Format::OpenAi));
    let history = swe_agent_history(serde_json::from_str(&read(MARSHMALLOW)).unwrap());
    assert_eq!(loaded.messages, history);
    assert_eq!(history.as_array().map(Vec::len), Some(24));
    assert!(loaded.notes.iter().any(|n| n.starts_with("11 tool messages")), "{:?}", loaded.notes);
    let parsed = message::parse(history.clone(), Format::OpenAi).unwrap();
    assert_eq!(message::emit(&parsed, Format::OpenAi), history);
    build_valid(history, Format::OpenAi);
}

#[test]
#[ignore = "reads the shared fixtures"]
fn claude_code_real_logs() {
    // (file, (lines, messages after merging, assistant records merged away, skipped lines))
    for (name, expected) in [
        ("claude-code-short.jsonl", Some((15, 5, 4, 6))),
        ("claude-code-tool-heavy.jsonl", Some((39, 17, 5, 17))),
        ("claude-code-subagent.jsonl", None),
    ] {
        let path = shared(&format!("anthropic/{name}"));
        let loaded = load(
            &read(&format!("anthropic/{name}")),
            &LoadOptions { name: Some(name.into()), ..LoadOptions::default() },
        )
        .unwrap();
        assert_eq!((loaded.source, loaded.format), (Source::ClaudeCode, Format::Anthropic), "{name}");
        let records = claude_code_at(&path);
        for (i, record) in records.iter().enumerate() {
            let parsed = message::parse_anthropic_message(record.clone(), i).expect("record parses");
            assert_eq!(message::emit(&[parsed], Format::Anthropic)["messages"][0], *record, "{name} record {i}");
        }
        if let Some((lines, messages, merged, skipped)) = expected {
            let list = loaded.messages["messages"].as_array().unwrap();
            assert_eq!((list.len(), records.len(), loaded.skipped.len()), (messages, messages + merged, skipped));
            assert_eq!(loaded.skipped.len() + records.len(), lines);
        }
        build_valid(loaded.messages["messages"].clone(), Format::Anthropic);
    }
    let heavy = load(&read("anthropic/claude-code-tool-heavy.jsonl"), &LoadOptions::default()).unwrap();
    let marks: Vec<(MarkKind, Option<usize>)> = heavy.marks.iter().map(|m| (m.kind, m.line)).collect();
    assert_eq!(
        marks,
        [(MarkKind::Meta, Some(20)), (MarkKind::LocalCommand, Some(21)), (MarkKind::LocalCommand, Some(22))]
    );
    assert!(heavy.origins.iter().any(|o| o.lines.as_deref() == Some(&[34, 37][..])), "lines 34 and 37 merged");
}

#[test]
#[ignore = "reads the shared fixtures"]
fn claude_code_file_reads_are_digested_within_the_last_turn() {
    let mut h = Session::with_encoding(Encoding::O200kBase);
    let log = claude_code_at(&shared("anthropic/claude-code-tool-heavy.jsonl"));
    h.history.append_values(Value::Array(log), Format::Anthropic).unwrap();
    // One user turn: reads are digested within it once the history does not fit. 2,447 tokens
    // whole; with the read of app.js (962) digested, 1,182 counted bill ~1,640, within 1,650. A
    // low-water ratio of 1 fills the budget; the default would leave room and compress instead.
    let budget = BudgetOptions { max_tokens: Some(1_650), low_water_ratio: Some(1.0), ..BudgetOptions::default() };
    let options = BuildOptions {
        format: Format::Anthropic,
        keep_recent_steps: 1,
        budget: Some(budget),
        summary: None,
        ..BuildOptions::default()
    };
    let context = h.build(&options).unwrap().context;
    let digests: Vec<String> = context
        .messages
        .iter()
        .flat_map(|m| m.message.tool_results().map(|r| r.content.joined_text()).collect::<Vec<_>>())
        .filter(|t| t.starts_with("[file read]"))
        .collect();
    assert!(digests.iter().any(|d| d.starts_with("[file read] app.js (javascript, ")), "{digests:?}");
    let mut options = BuildOptions { format: Format::Anthropic, keep_recent_steps: 1, ..BuildOptions::default() };
    options.summary = Some(SummaryOptions {
        trigger_tokens: Some(200),
        target_tokens: Some(100),
        min_messages: 5,
        ..SummaryOptions::default()
    });
    let summary: Value = serde_json::from_str(&h.build(&options).unwrap().new_summary.unwrap().text).unwrap();
    assert!(summary["files"].to_string().contains("/home/marco/projects/spotter/assets/js/app.js"));
}
