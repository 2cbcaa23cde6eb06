//! What goes to a provider: request-mode emission and a validator of each provider's rules.
//!
//! Request mode strips what the APIs reject in a request (response-only fields such as
//! Anthropic's `id`, `model`, `usage`, `stop_reason`; OpenAI's `annotations`, `refusal: null`;
//! unknown block fields such as Claude Code's `caller`), and for Anthropic merges adjacent
//! same-role messages, puts tool results first in their user message and thinking first in its
//! assistant message, and drops whitespace-only text blocks.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::Result;
use crate::message::{self, Format, Message};

/// The text of the user message inserted when Anthropic needs one first and none is left.
pub const PLACEHOLDER_TEXT: &str = "(earlier conversation omitted)";

/// Emits `messages` in `format` as a provider request expects them.
pub fn emit_request<'a>(messages: impl IntoIterator<Item = &'a Message>, format: Format) -> Result<Value> {
    let value = message::emit(messages, format);
    Ok(match format {
        Format::OpenAi => sanitize_openai(value),
        Format::Anthropic => sanitize_anthropic(value),
    })
}

fn keep_keys(object: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    let mut out = Map::new();
    for key in keys {
        if let Some(value) = object.get(*key) {
            out.insert((*key).to_string(), value.clone());
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

fn sanitize_openai(value: Value) -> Value {
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
        let Value::Object(object) = message else { continue };
        let role = object.get("role").and_then(Value::as_str).unwrap_or("").to_string();
        let mut clean = match role.as_str() {
            "tool" => keep_keys(&object, &["role", "content", "tool_call_id"]),
            "assistant" => {
                let mut clean = keep_keys(&object, &["role", "content", "name", "tool_calls"]);
                if let Some(Value::String(refusal)) = object.get("refusal") {
                    clean.insert("refusal".into(), Value::from(refusal.clone()));
                }
                if let Some(Value::String(id)) = object.get("audio").and_then(|a| a.get("id")) {
                    clean.insert("audio".into(), serde_json::json!({ "id": id }));
                }
                if let Some(Value::Array(calls)) = clean.get_mut("tool_calls") {
                    for call in calls.iter_mut() {
                        if let Value::Object(call_object) = call {
                            let mut fixed = keep_keys(call_object, &["id", "type", "function"]);
                            fixed.entry("type").or_insert_with(|| Value::from("function"));
                            if let Some(Value::Object(function)) = fixed.get("function") {
                                let function = keep_keys(function, &["name", "arguments"]);
                                fixed.insert("function".into(), Value::Object(function));
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
            _ => keep_keys(&object, &["role", "content", "name"]),
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

fn block_keys(kind: &str) -> Option<&'static [&'static str]> {
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

fn is_blank_text(block: &Value) -> bool {
    block.get("type").and_then(Value::as_str) == Some("text")
        && block.get("text").and_then(Value::as_str).is_none_or(|t| t.trim().is_empty())
}

fn sanitize_block(block: Value) -> Value {
    let Value::Object(object) = block else { return block };
    let kind = object.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    let Some(keys) = block_keys(&kind) else { return Value::Object(object) };
    let mut clean = keep_keys(&object, keys);
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
            blocks.sort_by_key(|b| rank(b, &role));
            let content = match blocks.as_slice() {
                [only]
                    if only.get("type").and_then(Value::as_str) == Some("text")
                        && only.as_object().is_some_and(|o| o.len() == 2) =>
                {
                    only.get("text").cloned().unwrap_or_default()
                }
                _ => Value::Array(blocks),
            };
            serde_json::json!({"role": role, "content": content})
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

/// One broken rule in a message list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Violation {
    /// Index in the message list, when one message is at fault.
    pub index: Option<usize>,
    pub rule: &'static str,
    pub message: String,
}

fn violation(index: Option<usize>, rule: &'static str, message: impl Into<String>) -> Violation {
    Violation { index, rule, message: message.into() }
}

/// Checks a request-mode message list against the provider's rules.
pub fn validate(value: &Value, format: Format) -> std::result::Result<(), Vec<Violation>> {
    let violations = match format {
        Format::OpenAi => validate_openai(value),
        Format::Anthropic => validate_anthropic(value),
    };
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

/// Checks a request given as its parts: Anthropic's `system` (if any) and the messages.
pub(crate) fn validate_parts(
    system: Option<&Value>,
    messages: &[&Value],
    format: Format,
) -> std::result::Result<(), Vec<Violation>> {
    let violations = match format {
        Format::OpenAi => validate_openai_messages(messages),
        Format::Anthropic => {
            let mut v = Vec::new();
            validate_anthropic_system(system, &mut v);
            validate_anthropic_messages(messages, &mut v);
            v
        }
    };
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

fn validate_openai(value: &Value) -> Vec<Violation> {
    let Some(list) = value.as_array() else {
        return vec![violation(None, "shape", "an OpenAI request's messages are an array")];
    };
    validate_openai_messages(&list.iter().collect::<Vec<_>>())
}

fn validate_openai_messages(list: &[&Value]) -> Vec<Violation> {
    let mut v = Vec::new();
    if list.is_empty() {
        v.push(violation(None, "nonEmpty", "at least one message is required"));
    }
    let mut pending: Vec<&str> = Vec::new();
    let mut pending_from: usize = 0;
    for (i, message) in list.iter().enumerate() {
        let Some(object) = message.as_object() else {
            v.push(violation(Some(i), "shape", "a message is an object"));
            continue;
        };
        let role = object.get("role").and_then(Value::as_str).unwrap_or("");
        let allowed: &[&str] = match role {
            "system" | "developer" | "user" => &["role", "content", "name"],
            "assistant" => &["role", "content", "name", "tool_calls", "refusal", "audio"],
            "tool" => &["role", "content", "tool_call_id"],
            _ => {
                v.push(violation(Some(i), "role", format!("unknown role {role:?}")));
                continue;
            }
        };
        for key in object.keys() {
            if !allowed.contains(&key.as_str()) {
                v.push(violation(
                    Some(i),
                    "requestFields",
                    format!("field `{key}` is not accepted in a {role} message"),
                ));
            }
        }
        if !pending.is_empty() && role != "tool" {
            v.push(violation(
                Some(pending_from),
                "toolCallsAnswered",
                format!("tool calls {pending:?} are not answered by the tool messages that follow"),
            ));
            pending.clear();
        }
        match role {
            "tool" => {
                let id = object.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                match pending.iter().position(|p| *p == id) {
                    Some(at) => {
                        pending.remove(at);
                    }
                    None => v.push(violation(
                        Some(i),
                        "toolResultFollowsCall",
                        format!("tool message answers {id:?}, which the preceding assistant message did not call (or already answered)"),
                    )),
                }
                if !matches!(object.get("content"), Some(Value::String(_)) | Some(Value::Array(_))) {
                    v.push(violation(Some(i), "content", "a tool message needs content"));
                }
            }
            "assistant" => {
                let calls = object.get("tool_calls").and_then(Value::as_array);
                if let Some(calls) = calls {
                    if calls.is_empty() {
                        v.push(violation(Some(i), "toolCalls", "tool_calls must not be empty"));
                    }
                    for call in calls {
                        let id = call.get("id").and_then(Value::as_str).unwrap_or("");
                        let ok = !id.is_empty()
                            && call.get("type").and_then(Value::as_str) == Some("function")
                            && call.get("function").and_then(|f| f.get("name")).and_then(Value::as_str).is_some()
                            && call.get("function").and_then(|f| f.get("arguments")).and_then(Value::as_str).is_some();
                        if !ok {
                            v.push(violation(
                                Some(i),
                                "toolCalls",
                                "a tool call needs an id, type \"function\", and a function name and arguments",
                            ));
                        }
                        // Ids may repeat across the conversation (OpenAI pairs them locally, and
                        // real logs reuse them), but not within one message.
                        if pending.contains(&id) {
                            v.push(violation(
                                Some(i),
                                "uniqueCallIds",
                                format!("tool call id {id:?} is used twice in one message"),
                            ));
                        }
                        pending.push(id);
                    }
                    pending_from = i;
                } else if matches!(object.get("content"), None | Some(Value::Null))
                    && !object.contains_key("refusal")
                    && !object.contains_key("audio")
                {
                    v.push(violation(Some(i), "content", "an assistant message needs content or tool_calls"));
                }
            }
            _ => {
                if !matches!(object.get("content"), Some(Value::String(_)) | Some(Value::Array(_))) {
                    v.push(violation(Some(i), "content", format!("a {role} message needs content")));
                }
            }
        }
    }
    if !pending.is_empty() {
        v.push(violation(
            Some(pending_from),
            "toolCallsAnswered",
            format!("tool calls {pending:?} are never answered"),
        ));
    }
    v
}

fn validate_anthropic(value: &Value) -> Vec<Violation> {
    let mut v = Vec::new();
    let Some(request) = value.as_object() else {
        return vec![violation(None, "shape", "an Anthropic request is { system?, messages }")];
    };
    for key in request.keys() {
        if key != "system" && key != "messages" {
            v.push(violation(None, "shape", format!("unexpected key `{key}`")));
        }
    }
    validate_anthropic_system(request.get("system"), &mut v);
    let Some(list) = request.get("messages").and_then(Value::as_array) else {
        v.push(violation(None, "shape", "messages must be an array"));
        return v;
    };
    validate_anthropic_messages(&list.iter().collect::<Vec<_>>(), &mut v);
    v
}

fn validate_anthropic_system(system: Option<&Value>, v: &mut Vec<Violation>) {
    match system {
        None | Some(Value::String(_)) => {}
        Some(Value::Array(blocks)) => {
            if blocks.iter().any(|b| b.get("type").and_then(Value::as_str) != Some("text") || is_blank_text(b)) {
                v.push(violation(None, "system", "system blocks must be non-empty text blocks"));
            }
        }
        Some(_) => v.push(violation(None, "system", "system must be a string or text blocks")),
    }
}

fn validate_anthropic_messages(list: &[&Value], v: &mut Vec<Violation>) {
    if list.is_empty() {
        v.push(violation(None, "nonEmpty", "at least one message is required"));
    }
    let mut seen_uses: HashSet<String> = HashSet::new();
    let mut previous_uses: Vec<String> = Vec::new();
    let mut previous_role = "";
    for (i, message) in list.iter().enumerate() {
        let Some(object) = message.as_object() else {
            v.push(violation(Some(i), "shape", "a message is an object"));
            continue;
        };
        for key in object.keys() {
            if key != "role" && key != "content" {
                v.push(violation(
                    Some(i),
                    "requestFields",
                    format!("field `{key}` is not accepted in a request message"),
                ));
            }
        }
        let role = object.get("role").and_then(Value::as_str).unwrap_or("");
        if role != "user" && role != "assistant" {
            v.push(violation(Some(i), "role", format!("role must be user or assistant, not {role:?}")));
        }
        if i == 0 && role != "user" {
            v.push(violation(Some(i), "firstUser", "the first message must come from the user"));
        }
        if role == previous_role {
            v.push(violation(Some(i), "alternation", format!("two {role} messages in a row")));
        }
        let blocks: &[Value] = match object.get("content") {
            Some(Value::String(text)) => {
                if text.trim().is_empty() {
                    v.push(violation(Some(i), "content", "content must not be empty or whitespace"));
                }
                &[]
            }
            Some(Value::Array(blocks)) => {
                if blocks.is_empty() {
                    v.push(violation(Some(i), "content", "content must not be an empty array"));
                }
                blocks
            }
            _ => {
                v.push(violation(Some(i), "content", "content must be a string or an array of blocks"));
                &[]
            }
        };
        let mut uses = Vec::new();
        let mut results: Vec<String> = Vec::new();
        let mut other_seen = false;
        for block in blocks {
            let kind = block.get("type").and_then(Value::as_str).unwrap_or("");
            if let (Some(keys), Some(fields)) = (block_keys(kind), block.as_object()) {
                for key in fields.keys() {
                    if !keys.contains(&key.as_str()) {
                        v.push(violation(
                            Some(i),
                            "requestFields",
                            format!("field `{key}` is not accepted in a {kind} block"),
                        ));
                    }
                }
            }
            if is_blank_text(block) {
                v.push(violation(Some(i), "content", "text blocks must contain non-whitespace text"));
            }
            match kind {
                "tool_use" => {
                    if role != "assistant" {
                        v.push(violation(Some(i), "toolUseRole", "tool_use blocks belong in assistant messages"));
                    }
                    let id = block.get("id").and_then(Value::as_str).unwrap_or("").to_string();
                    if !seen_uses.insert(id.clone()) {
                        v.push(violation(Some(i), "uniqueCallIds", format!("tool_use id {id:?} is used twice")));
                    }
                    uses.push(id);
                }
                "tool_result" => {
                    if role != "user" {
                        v.push(violation(Some(i), "toolResultRole", "tool_result blocks belong in user messages"));
                    }
                    if other_seen {
                        v.push(violation(
                            Some(i),
                            "toolResultsFirst",
                            "tool_result blocks must come before any other block",
                        ));
                    }
                    results.push(block.get("tool_use_id").and_then(Value::as_str).unwrap_or("").to_string());
                }
                _ => other_seen = true,
            }
        }
        for id in &results {
            if !previous_uses.contains(id) {
                v.push(violation(
                    Some(i),
                    "toolResultFollowsCall",
                    format!("tool_result for {id:?} does not answer a tool_use of the previous message"),
                ));
            }
        }
        for id in &previous_uses {
            if !results.contains(id) {
                v.push(violation(
                    Some(i.saturating_sub(1)),
                    "toolCallsAnswered",
                    format!("tool_use {id:?} is not answered in the next message"),
                ));
            }
        }
        previous_uses = uses;
        previous_role = if role == "user" || role == "assistant" { role } else { "" };
    }
    if !previous_uses.is_empty() {
        v.push(violation(
            Some(list.len().saturating_sub(1)),
            "toolCallsAnswered",
            format!("tool_use {previous_uses:?} is never answered"),
        ));
    }
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

    #[test]
    fn openai_rules() {
        let ok = json!([
            {"role": "system", "content": "s"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "2"},
            {"role": "user", "content": "u"}
        ]);
        assert_eq!(validate(&ok, Format::OpenAi), Ok(()));
        let bad = json!([
            {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "user", "content": "u"},
            {"role": "tool", "tool_call_id": "a", "content": "2", "name": "f"},
            {"role": "assistant", "content": "x", "annotations": [], "refusal": null}
        ]);
        let rules: Vec<&str> = validate(&bad, Format::OpenAi).unwrap_err().iter().map(|v| v.rule).collect();
        // `refusal: null` is accepted in a request; `annotations` (response-only) is not.
        assert_eq!(rules, ["toolCallsAnswered", "requestFields", "toolResultFollowsCall", "requestFields"]);
        let cleaned = sanitize_openai(bad);
        assert_eq!(cleaned[3], json!({"role": "assistant", "content": "x"}));
        assert_eq!(cleaned[2], json!({"role": "tool", "tool_call_id": "a", "content": "2"}));
    }
}
