//! Each provider's rules for a request's message list: what the API would reject.

use std::collections::HashSet;

use serde_json::Value;

use super::violation::{violation, Violation};
use super::{block_keys, is_blank_text, lists};
use crate::message::Format;

/// Checks a request-mode message list against the provider's rules.
pub fn validate(value: &Value, format: Format) -> std::result::Result<(), Vec<Violation>> {
    let violations = match format {
        Format::OpenAi => validate_openai(value),
        Format::Anthropic => validate_anthropic(value),
        Format::Responses | Format::AiSdk => match value.as_array() {
            Some(list) => lists::validate_list(&list.iter().collect::<Vec<_>>(), format),
            None => vec![violation(None, "shape", format!("a {} request's input is an array", format.as_str()))],
        },
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
        Format::Responses | Format::AiSdk => lists::validate_list(messages, format),
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
                        // A function's call, or a custom tool's (its free-text `custom.input`).
                        let (key, input) = match call.get("type").and_then(Value::as_str) {
                            Some("custom") => ("custom", "input"),
                            _ => ("function", "arguments"),
                        };
                        let body = |field: &str| call.get(key).and_then(|f| f.get(field)).and_then(Value::as_str);
                        let ok = !id.is_empty()
                            && call.get("type").and_then(Value::as_str) == Some(key)
                            && body("name").is_some()
                            && body(input).is_some();
                        if !ok {
                            v.push(violation(
                                Some(i),
                                "toolCalls",
                                "a tool call needs an id, type \"function\" (or \"custom\"), and its name and arguments (or input)",
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
    // A bare message list, as `appendMany` takes it: the messages of a request without a system.
    if let Some(list) = value.as_array() {
        validate_anthropic_messages(&list.iter().collect::<Vec<_>>(), &mut v);
        return v;
    }
    let Some(request) = value.as_object() else {
        return vec![violation(None, "shape", "an Anthropic request is { system?, messages } or a message array")];
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
    use super::super::sanitize_openai;
    use super::*;
    use serde_json::json;

    #[test]
    fn an_anthropic_message_array_is_checked_as_appendmany_takes_it() {
        let list = json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}
        ]);
        assert_eq!(validate(&list, Format::Anthropic), Ok(()));
        assert_eq!(validate(&json!({"messages": list}), Format::Anthropic), Ok(()));
        let unanswered = json!([{"role": "user", "content": "go"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}, {"role": "user", "content": "?"}]);
        assert!(validate(&unanswered, Format::Anthropic).is_err());
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
