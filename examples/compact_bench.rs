//! Native timing of the compaction pipeline on the shared tau-bench runs concatenated into one
//! 5,308-message conversation, built to a 100k-token budget: cold (nothing counted or cached),
//! warm, and after appending one message.
//!
//!     cargo run --release --example compact_bench [-- iterations]

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
    let iterations: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(50);
    let runs = common::tau_bench();
    let mut messages = Vec::new();
    for run in runs {
        if let Value::Array(list) = run {
            messages.extend(list);
        }
    }
    let options = BuildOptions {
        budget: Some(BudgetOptions { context_window: 100_000, target_ratio: 1.0, ..BudgetOptions::default() }),
        ..BuildOptions::default()
    };
    let no_summary = BuildOptions { summary: None, ..options.clone() };

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
        println!("== {label}");
        println!(
            "messages: {} ({} tokens stored), context: {} messages, {} tokens ({} emitted)",
            session.history.len(),
            cold.context.receipt.tokens_before,
            cold.context.messages.len(),
            cold.context.tokens.total,
            request.as_array().map_or(0, Vec::len)
        );
        println!("cold build (counting all {} messages): {cold_ms:.1} ms", messages.len());
        println!("warm build: median {:.2} ms over {iterations}", median(warm));
        println!("append one message + build: median {:.2} ms over {iterations}", median(appended));
        println!("request-mode emission + validation: {emit_ms:.2} ms");
    }
}
