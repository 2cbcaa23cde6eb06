//! The shared fixtures (`../shared/fixtures/`), read as they are.
#![allow(dead_code)]

use serde_json::Value;
use std::path::PathBuf;

pub fn fixture_path(relative: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/fixtures").join(relative)
}

pub fn read_json(relative: &str) -> Value {
    let path = fixture_path(relative);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// The 200 tau-bench runs, each an OpenAI message list.
pub fn tau_bench() -> Vec<Value> {
    match read_json("openai/tau-bench-gpt-4o-airline.json") {
        Value::Array(runs) => runs.into_iter().map(|mut run| run["traj"].take()).collect(),
        _ => panic!("tau-bench fixture is not an array"),
    }
}

/// The SWE-agent history with each `tool_call_ids: [id]` mapped to `tool_call_id: id`.
pub fn swe_agent() -> Value {
    let mut trajectory = read_json("openai/swe-agent-marshmallow-1867.traj");
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
    let path = fixture_path(&format!("anthropic/{name}"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    text.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON record a line"))
        .filter(|record| matches!(record["type"].as_str(), Some("user") | Some("assistant")))
        .map(|mut record| record["message"].take())
        .collect()
}

pub const CLAUDE_CODE_LOGS: [&str; 2] = ["claude-code-short.jsonl", "claude-code-tool-heavy.jsonl"];
