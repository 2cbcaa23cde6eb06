//! Counts the airline runs' messages once per encoding (after loading both), for instruction
//! counting under `valgrind --tool=callgrind` (a measure that ignores the noisy neighbours).
use context_compactor::bpe::{BpeEncoder, BpeEncoding};
#[path = "../tests/common/mod.rs"]
mod common;

fn main() {
    let msgs = common::airline_texts();
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
