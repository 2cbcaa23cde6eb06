//! Native timing of the compaction pipeline on the airline runs (tests/fixtures) concatenated into one
//! conversation (1,780 messages a lap, repeated with fresh tool-call ids up to each size), built to
//! a 100k-token budget: cold (nothing counted or cached), warm, and after appending one message —
//! the cost issue #18 item 4 wants independent of the history's length.
//!
//!     cargo run --release --example compact_bench [-- iterations [sizes…]]

use std::time::Instant;

use context_compactor::compact::{BudgetOptions, BuildOptions};
use context_compactor::message::Format;
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use serde_json::{json, Value};

#[path = "../tests/common/mod.rs"]
mod common;

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(|a, b| a.total_cmp(b));
    samples[samples.len() / 2]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let iterations: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(50);
    let mut sizes: Vec<usize> = args.filter_map(|a| a.parse().ok()).collect();
    if sizes.is_empty() {
        sizes.push(common::airline_runs().iter().filter_map(Value::as_array).map(Vec::len).sum());
    }
    let options = BuildOptions {
        budget: Some(BudgetOptions { context_window: 100_000, target_ratio: 1.0, ..BudgetOptions::default() }),
        ..BuildOptions::default()
    };
    let no_summary = BuildOptions { summary: None, ..options.clone() };

    let mut table = Vec::new();
    for &n in &sizes {
        let messages = common::long_conversation(n);
        for (label, options) in
            [("with summary compaction (extractive)", &options), ("selection only (no summary)", &no_summary)]
        {
            let mut session = Session::with_encoding(Encoding::O200kBase);
            session.history.append_values(Value::Array(messages.clone()), Format::OpenAi).expect("append");
            let start = Instant::now();
            let cold = session.build(options).expect("cold build");
            let cold_ms = start.elapsed().as_secs_f64() * 1e3;

            let mut warm = Vec::new();
            for _ in 0..iterations {
                let start = Instant::now();
                let outcome = session.build(options).expect("warm build");
                warm.push(start.elapsed().as_secs_f64() * 1e3);
                std::hint::black_box(&outcome);
            }
            let start = Instant::now();
            let request = cold.context.to_request().expect("valid");
            let emit_ms = start.elapsed().as_secs_f64() * 1e3;

            let mut appended = Vec::new();
            for i in 0..iterations {
                let counted = session.history.counted_messages();
                let start = Instant::now();
                session
                    .history
                    .append_value(
                        json!({"role": "user", "content": format!("One more question, number {i}.")}),
                        Format::OpenAi,
                    )
                    .expect("append");
                let outcome = session.build(options).expect("build after append");
                appended.push(start.elapsed().as_secs_f64() * 1e3);
                assert_eq!(session.history.counted_messages(), counted + 1);
                std::hint::black_box(&outcome);
            }
            println!("== {n} messages, {label}");
            println!(
                "messages: {} ({} tokens stored), receipt: {} runs, {} repairs; context: {} messages, {} tokens ({} emitted)",
                session.history.len(),
                cold.context.receipt.tokens_before,
                cold.context.receipt.runs.len(),
                cold.context.receipt.repairs.len(),
                cold.context.messages.len(),
                cold.context.tokens.total,
                request.as_array().map_or(0, Vec::len)
            );
            println!("cold build (counting all {n} messages): {cold_ms:.1} ms");
            println!("warm build: median {:.2} ms over {iterations}", median(warm.clone()));
            println!("append one message + build: median {:.2} ms over {iterations}", median(appended.clone()));
            println!("request-mode emission + validation: {emit_ms:.2} ms");
            table.push((n, label, median(warm), median(appended)));
        }
    }
    println!("\n{:>9}  {:<38} {:>12} {:>16}", "messages", "options", "warm ms", "append+build ms");
    for (n, label, warm, appended) in table {
        println!("{n:>9}  {label:<38} {warm:>12.2} {appended:>16.2}");
    }
}
