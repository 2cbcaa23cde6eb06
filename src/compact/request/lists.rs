//! The rules for the two list formats: OpenAI Responses input items and AI SDK `ModelMessage`s.

use std::collections::HashSet;

use serde_json::Value;

use super::violation::{violation, Violation};
use crate::message::Format;

/// Leaves out reasoning items whose output item is not in the request (its call was left
/// unanswered, or compaction kept the item's text alone): the API refuses such an item, and it
/// means nothing without what it reasoned towards. Every other item goes out as it is.
pub(super) fn drop_detached_reasoning(value: Value) -> Value {
    let Value::Array(items) = value else { return value };
    let mut keep = vec![true; items.len()];
    for (i, item) in items.iter().enumerate() {
        if kind(item) == "reasoning" {
            let next = items.iter().skip(i + 1).find(|item| kind(item) != "reasoning");
            // At the end of the list it stays: its item may follow in a later message of a run.
            keep[i] = next.is_none_or(is_output);
        }
    }
    Value::Array(items.into_iter().zip(keep).filter_map(|(item, keep)| keep.then_some(item)).collect())
}

/// Whether an AI SDK message calls tools.
pub(crate) fn calls_tools(message: &Value) -> bool {
    message.get("content").and_then(Value::as_array).is_some_and(|parts| {
        parts.iter().any(|p| kind(p) == "tool-call" && p.get("providerExecuted") != Some(&Value::Bool(true)))
    })
}

/// One response logged as several assistant messages must reach the provider as one, or its tool
/// calls would not be followed by their results (as for OpenAI Chat).
pub(super) fn merge_ai_sdk_continuations(value: Value) -> Value {
    let Value::Array(list) = value else { return value };
    let as_parts = |content: Option<&Value>| match content {
        Some(Value::String(text)) if text.is_empty() => Vec::new(),
        Some(Value::String(text)) => vec![serde_json::json!({"type": "text", "text": text})],
        Some(Value::Array(parts)) => parts.clone(),
        _ => Vec::new(),
    };
    let mut out: Vec<Value> = Vec::with_capacity(list.len());
    for message in list {
        let continues = string(&message, "role") == "assistant"
            && out.last().is_some_and(|previous| string(previous, "role") == "assistant" && calls_tools(previous));
        match out.last_mut() {
            Some(Value::Object(previous)) if continues => {
                let mut parts = as_parts(previous.get("content"));
                parts.extend(as_parts(message.get("content")));
                previous.insert("content".into(), Value::Array(parts));
            }
            _ => out.push(message),
        }
    }
    Value::Array(out)
}

pub(super) fn validate_list(list: &[&Value], format: Format) -> Vec<Violation> {
    let mut v = Vec::new();
    if list.is_empty() {
        v.push(violation(None, "nonEmpty", "at least one item is required"));
    }
    match format {
        Format::Responses => validate_responses(list, &mut v),
        _ => validate_ai_sdk(list, &mut v),
    }
    v
}

fn kind(value: &Value) -> &str {
    value.get("type").and_then(Value::as_str).unwrap_or("")
}

fn string<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// An item a model produced (what a reasoning item must be followed by).
pub(crate) fn is_output(item: &Value) -> bool {
    match kind(item) {
        "" | "message" => string(item, "role") == "assistant",
        "reasoning"
        | "function_call_output"
        | "custom_tool_call_output"
        | "compaction"
        | "item_reference"
        | "mcp_approval_response" => false,
        other => !other.ends_with("_output"),
    }
}

fn validate_responses(list: &[&Value], v: &mut Vec<Violation>) {
    let mut open: Vec<&str> = Vec::new();
    let mut called: HashSet<&str> = HashSet::new();
    for (i, item) in list.iter().enumerate() {
        if !item.is_object() {
            v.push(violation(Some(i), "shape", "an item is an object"));
            continue;
        }
        let kind = kind(item);
        match kind {
            "" | "message" => {
                let role = string(item, "role");
                if !matches!(role, "system" | "developer" | "user" | "assistant") {
                    v.push(violation(Some(i), "role", format!("unknown role {role:?}")));
                }
                if !matches!(item.get("content"), Some(Value::String(_) | Value::Array(_))) {
                    v.push(violation(Some(i), "content", "a message needs content: a string or an array of parts"));
                }
            }
            "reasoning" => {
                let next = list.iter().skip(i + 1).find(|item| self::kind(item) != "reasoning");
                if !next.is_some_and(|next| is_output(next)) {
                    v.push(violation(
                        Some(i),
                        "reasoningFollowed",
                        "a reasoning item must be followed by the item it was produced with",
                    ));
                }
            }
            _ if kind.ends_with("_output") => {
                // A local shell's output names its call by `id`.
                let id = match item.get("call_id") {
                    None if kind == "local_shell_call_output" => string(item, "id"),
                    _ => string(item, "call_id"),
                };
                match open.iter().position(|open| *open == id) {
                    Some(at) => {
                        open.remove(at);
                    }
                    None if called.contains(id) => {
                        v.push(violation(Some(i), "toolResultFollowsCall", format!("call {id:?} is answered twice")))
                    }
                    None => v.push(violation(
                        Some(i),
                        "toolResultFollowsCall",
                        format!("{kind} answers {id:?}, which no earlier item calls"),
                    )),
                }
            }
            _ if item.get("call_id").is_some() => {
                let id = string(item, "call_id");
                if id.is_empty() {
                    v.push(violation(Some(i), "toolCalls", "a call needs a call_id"));
                }
                if kind == "function_call" && !item.get("arguments").is_some_and(Value::is_string) {
                    v.push(violation(Some(i), "toolCalls", "a function_call needs its arguments as a string"));
                }
                // An id may come back once answered (as in Chat Completions logs), not while open.
                if open.contains(&id) {
                    v.push(violation(Some(i), "uniqueCallIds", format!("call_id {id:?} is still open")));
                }
                called.insert(id);
                open.push(id);
            }
            _ => {}
        }
    }
    if !open.is_empty() {
        v.push(violation(None, "toolCallsAnswered", format!("calls {open:?} are never answered")));
    }
}

fn validate_ai_sdk(list: &[&Value], v: &mut Vec<Violation>) {
    let mut pending: Vec<&str> = Vec::new();
    let mut awaiting_approval: HashSet<&str> = HashSet::new();
    let mut pending_from = 0;
    for (i, message) in list.iter().enumerate() {
        let role = string(message, "role");
        let parts: &[Value] = match (role, message.get("content")) {
            ("system", Some(Value::String(_))) => &[],
            ("user" | "assistant", Some(Value::String(_))) => &[],
            ("user" | "assistant" | "tool", Some(Value::Array(parts))) => parts,
            ("system" | "user" | "assistant" | "tool", _) => {
                v.push(violation(Some(i), "content", format!("{role} message content has the wrong shape")));
                &[]
            }
            _ => {
                v.push(violation(Some(i), "role", format!("unknown role {role:?}")));
                continue;
            }
        };
        if role != "tool" && !pending.is_empty() {
            let unanswered: Vec<&&str> = pending.iter().filter(|id| !awaiting_approval.contains(**id)).collect();
            if !unanswered.is_empty() {
                v.push(violation(
                    Some(pending_from),
                    "toolCallsAnswered",
                    format!("tool calls {unanswered:?} are not answered by the tool messages that follow"),
                ));
            }
            pending.clear();
        }
        let allowed: &[&str] = match role {
            "user" => &["text", "image", "file"],
            "assistant" => &[
                "text",
                "file",
                "reasoning",
                "reasoning-file",
                "custom",
                "tool-call",
                "tool-result",
                "tool-approval-request",
            ],
            _ => &["tool-result", "tool-approval-response"],
        };
        for part in parts {
            let kind = kind(part);
            if !allowed.contains(&kind) {
                v.push(violation(Some(i), "content", format!("a {kind:?} part does not belong in a {role} message")));
                continue;
            }
            let provider_executed = part.get("providerExecuted") == Some(&Value::Bool(true));
            match (kind, role) {
                ("tool-call", _) if !provider_executed => {
                    let id = string(part, "toolCallId");
                    if id.is_empty() || pending.contains(&id) {
                        v.push(violation(Some(i), "toolCalls", format!("tool call id {id:?} is empty or used twice")));
                    }
                    pending.push(id);
                    pending_from = i;
                }
                ("tool-approval-request", _) => {
                    awaiting_approval.insert(string(part, "toolCallId"));
                }
                ("tool-result", "tool") => {
                    let id = string(part, "toolCallId");
                    match pending.iter().position(|p| *p == id) {
                        Some(at) => {
                            pending.remove(at);
                        }
                        None => v.push(violation(
                            Some(i),
                            "toolResultFollowsCall",
                            format!("tool result answers {id:?}, which the preceding assistant message did not call"),
                        )),
                    }
                }
                _ => {}
            }
        }
    }
    let unanswered: Vec<&&str> = pending.iter().filter(|id| !awaiting_approval.contains(**id)).collect();
    if !unanswered.is_empty() {
        v.push(violation(
            Some(pending_from),
            "toolCallsAnswered",
            format!("tool calls {unanswered:?} are never answered"),
        ));
    }
}
