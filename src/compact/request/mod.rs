//! What goes to a provider: request-mode emission (here), each provider's rules (`validate`), and
//! a request assembled from the forms of messages emitted before (`emitted`).
//!
//! Request mode strips what the APIs reject in a request (response-only fields such as
//! Anthropic's `id`, `model`, `usage`, `stop_reason`; OpenAI's `annotations`, `refusal: null`;
//! unknown block fields such as Claude Code's `caller`), and for Anthropic merges adjacent
//! same-role messages, puts tool results first in their user message and thinking first in its
//! assistant message, and drops whitespace-only text blocks.

use std::collections::HashSet;

pub mod emitted;
pub mod hints;
pub(crate) mod lists;
mod validate;
mod violation;

use serde_json::{Map, Value};

pub(crate) use lists::is_output;
pub use validate::validate;
pub(crate) use validate::validate_parts;
pub use violation::Violation;

use crate::error::Result;
use crate::message::{self, Format, Message};

/// The text of the user message inserted when Anthropic needs one first and none is left.
pub const PLACEHOLDER_TEXT: &str = "(earlier conversation omitted)";

/// The user message put first when the provider needs one and none is left.
pub(crate) fn placeholder(format: Format) -> Message {
    Message::new(message::Role::User, message::Content::text(PLACEHOLDER_TEXT), format)
}

/// Emits `messages` in `format` as a provider request expects them.
pub fn emit_request<'a>(messages: impl IntoIterator<Item = &'a Message>, format: Format) -> Result<Value> {
    emit_request_each(&mut messages.into_iter(), format)
}

/// `emit_request`'s work, compiled once for its callers' kinds of message list.
fn emit_request_each(messages: &mut dyn Iterator<Item = &Message>, format: Format) -> Result<Value> {
    let value = message::emit_each(messages, format);
    Ok(match format {
        Format::OpenAi => sanitize_openai(value),
        Format::Anthropic => sanitize_anthropic(value),
        Format::Responses => lists::drop_detached_reasoning(value),
        Format::AiSdk => lists::merge_ai_sdk_continuations(value),
    })
}

/// The `keys` of `object`, in that order, moved out of it (a request's messages are emitted to be
/// cleaned: copying their contents would double the work).
fn keep_keys(object: &mut Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for key in keys {
        if let Some(value) = object.remove(*key) {
            out.insert((*key).to_string(), value);
        }
    }
    out
}

/// Content as a list of parts, for merging.
fn openai_parts(content: Option<&Value>) -> Vec<Value> {
    match content {
        Some(Value::String(text)) if !text.is_empty() => vec![serde_json::json!({"type": "text", "text": text})],
        Some(Value::Array(parts)) => parts.clone(),
        _ => Vec::new(),
    }
}

/// One response logged as several assistant messages (Claude Code does) must reach OpenAI as one
/// message, or its tool calls would not be followed by their results.
fn merge_openai_assistant(previous: &mut Map<String, Value>, next: Map<String, Value>) {
    let mut parts = openai_parts(previous.get("content"));
    parts.extend(openai_parts(next.get("content")));
    let content = if parts.is_empty() {
        Value::Null
    } else if parts.iter().all(|p| p.get("type").and_then(Value::as_str) == Some("text")) {
        let texts: Vec<&str> = parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect();
        Value::from(texts.join("\n"))
    } else {
        Value::Array(parts)
    };
    previous.insert("content".into(), content);
    let mut calls = match previous.remove("tool_calls") {
        Some(Value::Array(calls)) => calls,
        _ => Vec::new(),
    };
    if let Some(Value::Array(more)) = next.get("tool_calls") {
        calls.extend(more.iter().cloned());
    }
    if !calls.is_empty() {
        previous.insert("tool_calls".into(), Value::Array(calls));
    }
}

pub(super) fn sanitize_openai(value: Value) -> Value {
    let Value::Array(list) = value else { return value };
    let mut merged: Vec<Value> = Vec::with_capacity(list.len());
    for message in list {
        let is_assistant = message.get("role").and_then(Value::as_str) == Some("assistant");
        let previous_calls = merged.last().is_some_and(|p| {
            p.get("role").and_then(Value::as_str) == Some("assistant")
                && matches!(p.get("tool_calls"), Some(Value::Array(c)) if !c.is_empty())
        });
        match (is_assistant && previous_calls, merged.last_mut(), message) {
            (true, Some(Value::Object(previous)), Value::Object(next)) => merge_openai_assistant(previous, next),
            (_, _, message) => merged.push(message),
        }
    }
    let list = merged;
    let mut out = Vec::with_capacity(list.len());
    for message in list {
        let Value::Object(mut object) = message else { continue };
        let role = object.get("role").and_then(Value::as_str).unwrap_or("").to_string();
        let mut clean = match role.as_str() {
            "tool" => keep_keys(&mut object, &["role", "content", "tool_call_id"]),
            "assistant" => {
                let mut clean = keep_keys(&mut object, &["role", "content", "name", "tool_calls"]);
                if let Some(Value::String(refusal)) = object.get("refusal") {
                    clean.insert("refusal".into(), Value::from(refusal.clone()));
                }
                if let Some(Value::String(id)) = object.get("audio").and_then(|a| a.get("id")) {
                    clean.insert("audio".into(), serde_json::json!({ "id": id }));
                }
                if let Some(Value::Array(calls)) = clean.get_mut("tool_calls") {
                    for call in calls.iter_mut() {
                        if let Value::Object(call_object) = call {
                            // A custom tool's call holds `custom: { name, input }`.
                            let (body, input) = match call_object.get("type").and_then(Value::as_str) {
                                Some("custom") => ("custom", "input"),
                                _ => ("function", "arguments"),
                            };
                            let mut fixed = keep_keys(call_object, &["id", "type", body]);
                            fixed.entry("type").or_insert_with(|| Value::from(body));
                            if let Some(Value::Object(function)) = fixed.get_mut(body) {
                                *function = keep_keys(function, &["name", input]);
                            }
                            *call_object = fixed;
                        }
                    }
                }
                let has_calls = matches!(clean.get("tool_calls"), Some(Value::Array(c)) if !c.is_empty());
                if !has_calls {
                    clean.remove("tool_calls");
                    if matches!(clean.get("content"), None | Some(Value::Null))
                        && !clean.contains_key("refusal")
                        && !clean.contains_key("audio")
                    {
                        clean.insert("content".into(), Value::from(""));
                    }
                }
                clean
            }
            _ => keep_keys(&mut object, &["role", "content", "name"]),
        };
        if let Some(Value::Array(parts)) = clean.get_mut("content") {
            for part in parts.iter_mut() {
                if let Value::Object(p) = part {
                    if p.get("type").and_then(Value::as_str) == Some("text") {
                        *p = keep_keys(p, &["type", "text"]);
                    }
                }
            }
        }
        out.push(Value::Object(clean));
    }
    Value::Array(out)
}

pub(super) fn block_keys(kind: &str) -> Option<&'static [&'static str]> {
    Some(match kind {
        "text" => &["type", "text", "cache_control", "citations"],
        "image" => &["type", "source", "cache_control"],
        "document" => &["type", "source", "title", "context", "citations", "cache_control"],
        "tool_use" => &["type", "id", "name", "input", "cache_control"],
        "tool_result" => &["type", "tool_use_id", "content", "is_error", "cache_control"],
        "thinking" => &["type", "thinking", "signature"],
        "redacted_thinking" => &["type", "data"],
        _ => return None,
    })
}

pub(super) fn is_blank_text(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
        && block.get("text").and_then(Value::as_str).is_none_or(|t| t.trim().is_empty())
}

fn sanitize_block(block: Value) -> Value {
    let Value::Object(mut object) = block else { return block };
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    let Some(keys) = block_keys(&kind) else { return Value::Object(object) };
    let mut clean = keep_keys(&mut object, keys);
    if kind == "tool_result" {
        if let Some(Value::Array(inner)) = clean.get_mut("content") {
            let blocks: Vec<Value> =
                std::mem::take(inner).into_iter().filter(|b| !is_blank_text(b)).map(sanitize_block).collect();
            if blocks.is_empty() {
                clean.remove("content");
            } else {
                *inner = blocks;
            }
        }
    }
    Value::Object(clean)
}

fn rank(block: &Value, role: &str) -> u8 {
    let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
    match (role, kind) {
        ("user", "tool_result") => 0,
        ("assistant", "thinking" | "redacted_thinking") => 0,
        _ => 1,
    }
}

/// Anthropic wants tool_use ids unique in a request; OpenAI logs reuse an id once answered.
/// Every call is answered in the very next message, so a renamed id is renamed there too.
fn rename_reused_tool_ids(messages: &mut [(String, Vec<Value>)]) {
    let mut seen: HashSet<String> = HashSet::new();
    for i in 0..messages.len() {
        let mut renamed: Vec<(String, String)> = Vec::new();
        if let Some((_, blocks)) = messages.get_mut(i) {
            for block in blocks.iter_mut() {
                if block.get("type").and_then(Value::as_str) != Some("tool_use") {
                    continue;
                }
                let id = block.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                if seen.insert(id.clone()) {
                    continue;
                }
                let mut n = 2;
                let fresh = loop {
                    let candidate = format!("{id}_{n}");
                    if !seen.contains(&candidate) {
                        break candidate;
                    }
                    n += 1;
                };
                seen.insert(fresh.clone());
                // `block` is an object (its "type" was read above), so indexing inserts.
                block["id"] = Value::from(fresh.clone());
                renamed.push((id, fresh));
            }
        }
        if renamed.is_empty() {
            continue;
        }
        if let Some((_, blocks)) = messages.get_mut(i + 1) {
            for (old, fresh) in renamed {
                let target = blocks.iter_mut().find(|b| {
                    b.get("type").and_then(Value::as_str) == Some("tool_result")
                        && b.get("tool_use_id").and_then(Value::as_str) == Some(old.as_str())
                });
                if let Some(block) = target {
                    // An object, as its "type" and "tool_use_id" were read from it.
                    block["tool_use_id"] = Value::from(fresh);
                }
            }
        }
    }
}

fn sanitize_anthropic(value: Value) -> Value {
    let Value::Object(mut request) = value else { return value };
    let list = match request.remove("messages") {
        Some(Value::Array(list)) => list,
        _ => Vec::new(),
    };
    let mut merged: Vec<(String, Vec<Value>)> = Vec::new();
    for message in list {
        let role = message.get("role").and_then(Value::as_str).unwrap_or("user").to_string();
        let blocks: Vec<Value> = match message.get("content") {
            Some(Value::String(text)) if !text.trim().is_empty() => {
                vec![serde_json::json!({"type": "text", "text": text})]
            }
            Some(Value::Array(blocks)) => {
                blocks.iter().filter(|b| !is_blank_text(b)).cloned().map(sanitize_block).collect()
            }
            _ => Vec::new(),
        };
        if blocks.is_empty() {
            continue;
        }
        match merged.last_mut() {
            Some((last_role, last_blocks)) if *last_role == role => last_blocks.extend(blocks),
            _ => merged.push((role, blocks)),
        }
    }
    rename_reused_tool_ids(&mut merged);
    let messages: Vec<Value> = merged
        .into_iter()
        .map(|(role, mut blocks)| {
            crate::util::sort::sort_by_key(&mut blocks, |b| rank(b, &role));
            let content = match blocks.as_slice() {
                [only]
                    if only.get("type").and_then(Value::as_str) == Some("text")
                        && only.as_object().is_some_and(|o| o.len() == 2) =>
                {
                    only.get("text").cloned().unwrap_or_default()
                }
                _ => Value::Array(blocks),
            };
            message::json_object([("role", role.into()), ("content", content)])
        })
        .collect();
    let mut out = Map::new();
    if let Some(system) = request.remove("system") {
        let system = match system {
            Value::Array(blocks) => {
                let blocks: Vec<Value> = blocks.into_iter().filter(|b| !is_blank_text(b)).map(sanitize_block).collect();
                if blocks.is_empty() {
                    None
                } else {
                    Some(Value::Array(blocks))
                }
            }
            Value::String(text) if text.trim().is_empty() => None,
            other => Some(other),
        };
        if let Some(system) = system {
            out.insert("system".into(), system);
        }
    }
    out.insert("messages".into(), Value::Array(messages));
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn request_mode_strips_response_fields_and_merges() {
        let messages = message::parse(
            json!([
                {"role": "user", "content": "hi"},
                {"role": "assistant", "id": "msg_1", "model": "claude", "type": "message", "usage": {}, "stop_reason": null, "stop_sequence": null,
                 "content": [{"type": "text", "text": "\n\n"}]},
                {"role": "assistant", "id": "msg_1", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Read", "input": {}, "caller": {"type": "direct"}}]},
                {"role": "user", "content": [{"type": "text", "text": "note"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}]}
            ]),
            Format::Anthropic,
        )
        .unwrap();
        let out = emit_request(&messages, Format::Anthropic).unwrap();
        assert_eq!(
            out,
            json!({"messages": [
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}, {"type": "tool_use", "id": "a", "name": "Read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "x"}, {"type": "text", "text": "note"}]}
            ]})
        );
        assert_eq!(validate(&out, Format::Anthropic), Ok(()));
        // The raw emission breaks the rules the validator knows.
        let raw = message::emit(&messages, Format::Anthropic);
        let rules: Vec<&str> = validate(&raw, Format::Anthropic).unwrap_err().iter().map(|v| v.rule).collect();
        for rule in ["requestFields", "alternation", "content", "toolResultFollowsCall"] {
            assert!(rules.contains(&rule), "{rule} in {rules:?}");
        }
    }
}
