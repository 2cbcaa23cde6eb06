//! The project's own fixtures (`tests/fixtures/`, written by `tests/fixtures/agents.mjs`), the
//! shared real-world ones when they are beside the repository, and the reference helpers of the
//! tokenizer tests. One module for the tests (`mod common;`) and the examples
//! (`#[path = "../tests/common/mod.rs"] mod common;`).
#![allow(dead_code)]

use context_compactor::bpe::BpeEncoding;
use context_compactor::compact::{BudgetOptions, BuildOptions, BuildOutcome, RepairKind};
use context_compactor::message::Format;
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use serde_json::Value;
use std::path::PathBuf;

pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// Where the shared real-world fixtures would be: `CC_SHARED` when it is set (that folder, or its
/// `fixtures/`), else `../shared/fixtures` beside the repository.
pub fn shared_fixtures_path() -> PathBuf {
    match std::env::var_os("CC_SHARED") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.join("fixtures").is_dir() {
                dir.join("fixtures")
            } else {
                dir
            }
        }
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures"),
    }
}

/// The shared fixtures, for the tests that need them (`tests/shared.rs`, run with `--ignored`).
/// Absent, it panics: those tests are only run when the fixtures are there.
pub fn shared_fixtures() -> PathBuf {
    let path = shared_fixtures_path();
    assert!(path.is_dir(), "shared fixtures not found at {}", path.display());
    path
}

pub fn fixture_path(relative: &str) -> PathBuf {
    fixtures().join(relative)
}

pub fn read_json(relative: &str) -> Value {
    let path = fixture_path(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

pub const AIRLINE_RUNS_FILE: &str = "openai/airline-runs.json";
pub const SWE_AGENT_FILE: &str = "openai/swe-agent-trajectory.traj";

/// The generated airline runs (tau-bench's layout), each an OpenAI message list.
pub fn airline_runs() -> Vec<Value> {
    runs_of(read_json(AIRLINE_RUNS_FILE))
}

/// The `traj` of each run of a tau-bench run list.
pub fn runs_of(file: Value) -> Vec<Value> {
    match file {
        Value::Array(runs) => runs.into_iter().map(|mut run| run["traj"].take()).collect(),
        _ => panic!("a run list is an array"),
    }
}

/// A conversation of `n` messages: the airline runs' messages over and over, tool-call ids made
/// unique per lap. What the scale benchmarks and tests build on.
pub fn long_conversation(n: usize) -> Vec<Value> {
    laps_of(airline_runs(), n)
}

/// The shared tau-bench runs (200 real GPT-4o runs, 5,308 messages), for the tests whose bounds
/// were measured on real messages' sizes.
pub fn shared_tau_bench() -> Vec<Value> {
    runs_of(read_json_at(&shared_fixtures().join("openai/tau-bench-gpt-4o-airline.json")))
}

/// `long_conversation` over the shared tau-bench runs.
pub fn shared_long_conversation(n: usize) -> Vec<Value> {
    laps_of(shared_tau_bench(), n)
}

fn read_json_at(path: &std::path::Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// `n` messages: the runs' messages over and over, tool-call ids made unique per lap.
pub fn laps_of(runs: Vec<Value>, n: usize) -> Vec<Value> {
    let templates: Vec<Value> =
        runs.into_iter().flat_map(|run| if let Value::Array(list) = run { list } else { vec![] }).collect();
    (0..n)
        .map(|i| {
            let lap = i / templates.len();
            let mut m = templates[i % templates.len()].clone();
            if lap > 0 {
                if let Some(calls) = m["tool_calls"].as_array_mut() {
                    for call in calls {
                        call["id"] = Value::from(format!("{}~{lap}", call["id"].as_str().unwrap_or("")));
                    }
                }
                if let Some(id) = m["tool_call_id"].as_str() {
                    m["tool_call_id"] = Value::from(format!("{id}~{lap}"));
                }
            }
            m
        })
        .collect()
}

/// Every message text of the airline runs, in order: contents and tool-call arguments.
pub fn airline_texts() -> Vec<String> {
    let mut out = Vec::new();
    for run in airline_runs() {
        for m in run.as_array().into_iter().flatten() {
            if let Some(c) = m["content"].as_str() {
                out.push(c.to_string());
            }
            for c in m["tool_calls"].as_array().into_iter().flatten() {
                if let Some(a) = c["function"]["arguments"].as_str() {
                    out.push(a.to_string());
                }
            }
        }
    }
    out
}

/// (encoding, sample, ids) of the token vectors (`tokens/token-vectors.txt`, ids made by the
/// `tiktoken` npm package).
pub fn token_vectors() -> Vec<(String, String, Vec<u32>)> {
    test_plans_at(&fixture_path("tokens/token-vectors.txt"))
}

/// (encoding, sample, ids) of a file in gpt-tokenizer's TestPlans.txt layout: a sample runs from
/// after "Sample: " up to the line that starts with "Encoded: " (it may span lines).
pub fn test_plans_at(path: &std::path::Path) -> Vec<(String, String, Vec<u32>)> {
    // Every block starts a line; a leading comment (`#` lines) is not a block.
    let text =
        "\n".to_string() + &std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let mut plans = Vec::new();
    for block in text.split("\nEncodingName: ").skip(1) {
        let (name, rest) = block.split_once('\n').unwrap();
        let rest = rest.strip_prefix("Sample: ").expect("Sample: follows the name");
        let (sample, encoded) = rest.split_once("\nEncoded: ").expect("Encoded: follows the sample");
        let ids: Vec<u32> = serde_json::from_str(encoded.lines().next().unwrap()).unwrap();
        plans.push((name.trim().to_string(), sample.to_string(), ids));
    }
    plans
}

/// The SWE-agent history with each `tool_call_ids: [id]` mapped to `tool_call_id: id`.
pub fn swe_agent() -> Value {
    swe_agent_history(read_json(SWE_AGENT_FILE))
}

pub fn swe_agent_history(mut trajectory: Value) -> Value {
    let mut history = trajectory["history"].take();
    for message in history.as_array_mut().expect("history is an array") {
        let object = message.as_object_mut().expect("message is an object");
        if let Some(Value::Array(ids)) = object.remove("tool_call_ids") {
            assert_eq!(ids.len(), 1, "one id per tool message");
            object.insert("tool_call_id".into(), ids[0].clone());
        }
    }
    history
}

/// The `.message` of every user/assistant record of a Claude Code log.
pub fn claude_code(name: &str) -> Vec<Value> {
    claude_code_at(&fixture_path(&format!("anthropic/{name}")))
}

pub fn claude_code_at(path: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON record a line"))
        .filter(|record| matches!(record["type"].as_str(), Some("user") | Some("assistant")))
        .map(|mut record| record["message"].take())
        .collect()
}

pub const CLAUDE_CODE_LOGS: [&str; 2] = ["claude-code-short.jsonl", "claude-code-tool-heavy.jsonl"];

// The tokenizer tests' reference: tiktoken-rs, and our encoder.

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
    for name in [AIRLINE_RUNS_FILE, SWE_AGENT_FILE] {
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

#[track_caller]
pub fn assert_same(enc: BpeEncoding, text: &str) {
    let ours = ours(enc);
    let want = reference(enc).encode_ordinary(text);
    let got = ours.encode(text);
    if got != want {
        let pieces = context_compactor::bpe::split_pieces(enc, text);
        panic!("{enc:?} differs on {text:?}\n ours {got:?}\n want {want:?}\n our pieces {pieces:?}");
    }
    assert_eq!(ours.count(text), want.len(), "{enc:?} count of {text:?}");
}

/// Agent runs concatenated into one history and built to a 100k window (a window the whole does
/// not fit): within it, a fate for each of the `messages`, and the `copies` of the repeated system
/// prompt kept once. The session, its options and the outcome, for more checks.
pub fn concatenated_to_a_100k_budget(
    runs: Vec<Value>,
    messages: usize,
    copies: usize,
) -> (Session, BuildOptions, BuildOutcome) {
    let mut h = Session::with_encoding(Encoding::O200kBase);
    for run in runs {
        h.history.append_values(run, Format::OpenAi).unwrap();
    }
    assert_eq!(h.history.len(), messages);
    let options = BuildOptions {
        budget: Some(BudgetOptions { context_window: 100_000, target_ratio: 1.0, ..BudgetOptions::default() }),
        ..BuildOptions::default()
    };
    let outcome = h.build(&options).unwrap();
    let context = &outcome.context;
    assert!(context.tokens.total <= 100_000);
    assert_eq!(context.receipt.fates.len(), messages);
    assert_eq!(context.receipt.repairs.iter().filter(|r| r.kind == RepairKind::DuplicateSystem).count(), copies);
    assert!(context.to_request().is_ok());
    (h, options, outcome)
}
