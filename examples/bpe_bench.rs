//! Native benchmark of `bpe` against tiktoken-rs:
//!
//!     cargo run --release --example bpe_bench [-- <seconds per measurement>]
//!
//! Prints the time to the first count (table load + map build + first call) and MB/s on
//! (a) the airline runs' message texts concatenated (bulk) and (b) per message, and
//! the same on a mix of all conversation fixtures (prose, JSON, code, tool output).
use context_compactor::bpe::{BpeEncoder, BpeEncoding};
use std::time::{Duration, Instant};

#[path = "../tests/common/mod.rs"]
mod common;
use common::{airline_texts, fixtures};

fn strings(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => a.iter().for_each(|x| strings(x, out)),
        serde_json::Value::Object(o) => o.values().for_each(|x| strings(x, out)),
        _ => {}
    }
}

/// Every string of the other fixtures (SWE-agent: code and tool output; Claude Code logs).
fn others() -> Vec<String> {
    let mut out = Vec::new();
    let s = std::fs::read_to_string(fixtures().join(common::SWE_AGENT_FILE)).unwrap();
    strings(&serde_json::from_str(&s).unwrap(), &mut out);
    for f in ["anthropic/claude-code-short.jsonl", "anthropic/claude-code-tool-heavy.jsonl"] {
        for line in std::fs::read_to_string(fixtures().join(f)).unwrap().lines() {
            if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                strings(&v, &mut out);
            }
        }
    }
    out
}

/// Best MB/s over repeated runs of `f` for about `budget`.
fn mbps(bytes: usize, budget: Duration, mut f: impl FnMut() -> usize) -> (f64, usize) {
    let start = Instant::now();
    let mut best = f64::INFINITY;
    let mut result = 0;
    let mut runs = 0;
    while runs < 2 || (start.elapsed() < budget && runs < 50) {
        let t = Instant::now();
        result = std::hint::black_box(f());
        best = best.min(t.elapsed().as_secs_f64());
        runs += 1;
    }
    (bytes as f64 / 1e6 / best, result)
}

fn main() {
    let budget = Duration::from_secs_f64(std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0));

    // Cold start first, before anything else touches the encoders.
    let t = Instant::now();
    let o = BpeEncoder::get(BpeEncoding::O200kBase).unwrap();
    let n = o.count("hello world");
    let cold_o = t.elapsed();
    let t = Instant::now();
    let c = BpeEncoder::get(BpeEncoding::Cl100kBase).unwrap();
    let m = c.count("hello world");
    let cold_c = t.elapsed();
    assert_eq!((n, m), (2, 2));
    let t = Instant::now();
    let ro = tiktoken_rs::o200k_base().unwrap();
    ro.encode_ordinary("hello world");
    let cold_ro = t.elapsed();
    let t = Instant::now();
    let rc = tiktoken_rs::cl100k_base().unwrap();
    rc.encode_ordinary("hello world");
    let cold_rc = t.elapsed();
    println!("time to first count (ms)      bpe      tiktoken-rs");
    println!("  o200k_base                {:>7.2}  {:>9.2}", ms(cold_o), ms(cold_ro));
    println!("  cl100k_base (o200k built) {:>7.2}  {:>9.2}", ms(cold_c), ms(cold_rc));

    let tau = airline_texts();
    let mut mix = tau.clone();
    mix.extend(others());
    use context_compactor::bpe::clear_piece_cache as clear;
    for (name, msgs) in [("airline-run messages", &tau), ("all fixtures mix", &mix)] {
        let bulk = msgs.join("\n");
        let per_bytes: usize = msgs.iter().map(|s| s.len()).sum();
        println!(
            "\n{name}: {} messages, {:.2} MB; MB/s, best of runs. \"new\": the piece cache \
             emptied before each run (counting new text); \"warm\": not emptied.",
            msgs.len(),
            bulk.len() as f64 / 1e6
        );
        println!(
            "  {:<8} {:>10} {:>10} {:>10} {:>11} {:>11} | {:>9} {:>9} | {:>6} {:>6}",
            "",
            "bulk new",
            "bulk warm",
            "encode new",
            "per-msg new",
            "per-msg warm",
            "tt-rs bulk",
            "tt-rs msg",
            "bulk x",
            "msg x"
        );
        for (enc, ours, reference) in [("o200k", o, &ro), ("cl100k", c, &rc)] {
            let (bulk_new, n1) = mbps(bulk.len(), budget, || {
                clear();
                ours.count(&bulk)
            });
            let (bulk_warm, _) = mbps(bulk.len(), budget, || ours.count(&bulk));
            let (enc_new, n2) = mbps(bulk.len(), budget, || {
                clear();
                ours.encode(&bulk).len()
            });
            let (ref_bulk, n3) = mbps(bulk.len(), budget, || reference.encode_ordinary(&bulk).len());
            let (msg_new, _) = mbps(per_bytes, budget, || {
                clear();
                msgs.iter().map(|s| ours.count(s)).sum()
            });
            let (msg_warm, _) = mbps(per_bytes, budget, || msgs.iter().map(|s| ours.count(s)).sum());
            let (ref_msg, _) =
                mbps(per_bytes, budget, || msgs.iter().map(|s| reference.encode_ordinary(s).len()).sum());
            assert_eq!((n1, n2), (n3, n3), "token counts differ from tiktoken-rs");
            println!(
                "  {enc:<8} {bulk_new:>10.2} {bulk_warm:>10.2} {enc_new:>10.2} {msg_new:>11.2} {msg_warm:>11.2} | {ref_bulk:>9.2} {ref_msg:>9.2} | {:>5.1}x {:>5.1}x   ({n1} tokens)",
                bulk_new / ref_bulk,
                msg_new / ref_msg
            );
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
