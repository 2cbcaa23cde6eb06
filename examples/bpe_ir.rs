//! Counts the tau-bench messages once per encoding (after loading both), for instruction
//! counting under `valgrind --tool=callgrind` (a measure that ignores the noisy neighbours).
use context_compactor::bpe::{BpeEncoder, BpeEncoding};
fn main() {
    let s = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../shared/fixtures/openai/tau-bench-gpt-4o-airline.json"
    ))
    .unwrap();
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    let mut msgs = Vec::new();
    for run in v.as_array().unwrap() {
        for m in run["traj"].as_array().unwrap() {
            if let Some(c) = m["content"].as_str() {
                msgs.push(c.to_string());
            }
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                if let Some(a) = c["function"]["arguments"].as_str() {
                    msgs.push(a.to_string());
                }
            }
        }
    }
    let o = BpeEncoder::get(BpeEncoding::O200kBase).unwrap();
    let c = BpeEncoder::get(BpeEncoding::Cl100kBase).unwrap();
    let which = std::env::args().nth(1).unwrap_or_default();
    if which == "none" {
        return;
    }
    let enc = if which == "cl100k" { c } else { o };
    let n: usize = msgs.iter().map(|m| enc.count(m)).sum();
    println!("{n}");
}
