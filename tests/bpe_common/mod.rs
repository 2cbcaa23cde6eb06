//! Shared helpers of the bpe integration tests (a directory module, so cargo does not
//! build it as a test crate of its own).
#![allow(dead_code)]

use context_compactor::bpe::BpeEncoding;
use std::path::PathBuf;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures")
}

pub fn reference(enc: BpeEncoding) -> &'static tiktoken_rs::CoreBPE {
    match enc {
        BpeEncoding::O200kBase => tiktoken_rs::o200k_base_singleton(),
        BpeEncoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton(),
    }
}

/// Our encoder. Without the `embedded-ranks` feature (the lite build), first loads the
/// standalone tables build.rs wrote, as the npm lite build does, which tests that path too.
pub fn ours(enc: BpeEncoding) -> &'static context_compactor::bpe::BpeEncoder {
    #[cfg(not(feature = "embedded-ranks"))]
    {
        use context_compactor::bpe::load_ranks;
        static O: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.cctab"));
        static C: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.cctab"));
        load_ranks(BpeEncoding::O200kBase, O).unwrap();
        load_ranks(BpeEncoding::Cl100kBase, C).unwrap();
    }
    context_compactor::bpe::BpeEncoder::get(enc).unwrap()
}

pub const ENCODINGS: [BpeEncoding; 2] = [BpeEncoding::O200kBase, BpeEncoding::Cl100kBase];

/// Every string leaf of a JSON value, plus the serialization of every object and array.
pub fn json_texts(v: &serde_json::Value, out: &mut Vec<String>) {
    match v {
        serde_json::Value::String(s) => out.push(s.clone()),
        serde_json::Value::Array(a) => {
            out.push(serde_json::to_string(v).unwrap());
            a.iter().for_each(|x| json_texts(x, out));
        }
        serde_json::Value::Object(o) => {
            out.push(serde_json::to_string(v).unwrap());
            o.values().for_each(|x| json_texts(x, out));
        }
        _ => {}
    }
}

/// All texts of the conversation fixtures: every message content, tool-call name and
/// argument string, Anthropic text/thinking/tool input/result, and every message, tool
/// call and content block serialized as JSON.
pub fn fixture_texts() -> Vec<(String, Vec<String>)> {
    let dir = fixtures();
    let mut files = Vec::new();
    for name in [
        "openai/tau-bench-gpt-4o-airline.json",
        "openai/swe-agent-marshmallow-1867.traj",
    ] {
        let s = std::fs::read_to_string(dir.join(name)).unwrap();
        let v: serde_json::Value = serde_json::from_str(&s).unwrap();
        let mut out = Vec::new();
        json_texts(&v, &mut out);
        files.push((name.to_string(), out));
    }
    for entry in std::fs::read_dir(dir.join("anthropic")).unwrap() {
        let p = entry.unwrap().path();
        if p.extension().is_some_and(|e| e == "jsonl") {
            let mut out = Vec::new();
            for line in std::fs::read_to_string(&p).unwrap().lines() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                    json_texts(&v, &mut out);
                }
            }
            files.push((p.display().to_string(), out));
        }
    }
    files
}

/// The concatenated texts of the tau-bench fixture (message contents and tool-call
/// arguments), the bulk benchmark text.
pub fn tau_bench_messages() -> Vec<String> {
    let s =
        std::fs::read_to_string(fixtures().join("openai/tau-bench-gpt-4o-airline.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    let mut out = Vec::new();
    for run in v.as_array().unwrap() {
        for m in run["traj"].as_array().unwrap() {
            if let Some(c) = m["content"].as_str() {
                out.push(c.to_string());
            }
            if let Some(calls) = m["tool_calls"].as_array() {
                for c in calls {
                    if let Some(a) = c["function"]["arguments"].as_str() {
                        out.push(a.to_string());
                    }
                }
            }
        }
    }
    out
}

#[track_caller]
pub fn assert_same(enc: BpeEncoding, text: &str) {
    let ours = ours(enc);
    let want = reference(enc).encode_ordinary(text);
    let got = ours.encode(text);
    if got != want {
        let pieces = context_compactor::bpe::split_pieces(enc, text);
        panic!(
            "{enc:?} differs on {text:?}\n ours {got:?}\n want {want:?}\n our pieces {pieces:?}"
        );
    }
    assert_eq!(ours.count(text), want.len(), "{enc:?} count of {text:?}");
}
