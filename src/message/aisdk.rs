//! Vercel AI SDK `ModelMessage`s: system (string content), user, assistant and tool messages;
//! `text`, `image`, `reasoning`, `tool-call` and `tool-result` parts in the model, every other
//! part (`file`, `custom`, `reasoning-file`, tool approvals, provider-executed tool traffic)
//! verbatim. `providerOptions` travel with their message or part as unknown fields do.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::json::{in_order, merge_fields, type_name, with_extra, Base, Extra, Fields};
use super::{Content, ContentForm, Format, ImageSource, Message, Part, Role, ToolCall, ToolInput, ToolResult};
use crate::error::{Error, Result};

/// Parses an array of AI SDK `ModelMessage`s.
pub fn parse_ai_sdk(value: Value) -> Result<Vec<Message>> {
    match value {
        Value::Array(items) => {
            items.into_iter().enumerate().map(|(index, item)| parse_ai_sdk_message(item, index)).collect()
        }
        other => Err(Error::invalid_argument(format!(
            "expected an array of AI SDK ModelMessages, got {}",
            type_name(&other)
        ))),
    }
}

pub fn parse_ai_sdk_message(value: Value, index: usize) -> Result<Message> {
    let mut fields = Fields::new(value, index, Base::Message, "a message")?;
    let role = match fields.required_str("role")?.as_str() {
        "system" => Role::System,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        other => {
            return Err(
                fields.error("role", format!("unknown role {other:?}: expected system, user, assistant or tool"))
            )
        }
    };
    let content = match fields.take("content") {
        Some(Value::String(text)) if role != Role::Tool => Content::text(text),
        Some(Value::Array(parts)) if role != Role::System => {
            let mut out = Vec::with_capacity(parts.len());
            for (i, part) in parts.into_iter().enumerate() {
                out.push(parse_part(part, index, Base::Item("content", i), role)?);
            }
            Content::parts(out)
        }
        Some(other) => {
            let expected = match role {
                Role::System => "a string",
                Role::Tool => "an array of tool-result parts",
                _ => "a string or an array of parts",
            };
            return Err(fields.error(
                "content",
                format!("{} message content must be {expected}, got {}", role.as_str(), type_name(&other)),
            ));
        }
        None => return Err(fields.error("content", format!("{} message has no content", role.as_str()))),
    };
    Ok(Message { role, content, name: None, extra: fields.rest_in(&["role", "content"]), source: Format::AiSdk })
}

fn parse_part(value: Value, index: usize, base: Base, role: Role) -> Result<Part> {
    let original = value.clone();
    let mut fields = Fields::new(value, index, base, "a content part")?;
    let kind = fields.required_str("type")?;
    match (kind.as_str(), role) {
        ("text", _) => {
            let text = fields.required_str("text")?;
            Ok(Part::Text { text, extra: fields.rest_in(&["type", "text"]) })
        }
        ("image", _) => {
            let Some(Value::String(image)) = fields.take("image") else { return Ok(Part::Other(original)) };
            let inline = if image.starts_with("data:") { super::data_url_base64(&image) } else { None };
            if let Some(payload) = inline.or((!image.contains("://")).then_some(image.as_str())) {
                super::check_image_data(payload).map_err(|why| fields.error("image", why))?;
            }
            let source = if image.starts_with("data:") || image.contains("://") {
                ImageSource::Url(image)
            } else {
                let media_type = match fields.take("mediaType") {
                    Some(Value::String(media_type)) => {
                        fields.keep("mediaType", Value::from(media_type.clone()));
                        media_type
                    }
                    _ => sniff_image_type(&image).to_string(),
                };
                ImageSource::Base64 { media_type, data: image }
            };
            Ok(Part::Image {
                source,
                detail: None,
                extra: fields.rest_in(&["type", "image"]),
                source_extra: Extra::new(),
            })
        }
        ("reasoning", Role::Assistant) => {
            let thinking = fields.required_str("text")?;
            Ok(Part::Thinking { thinking, signature: None, extra: fields.rest_in(&["type", "text"]) })
        }
        ("tool-call", Role::Assistant) if original.get("providerExecuted") != Some(&Value::Bool(true)) => {
            let id = fields.required_str("toolCallId")?;
            if id.is_empty() {
                return Err(fields.error("toolCallId", "a tool-call part has an empty toolCallId"));
            }
            let name = fields.required_str("toolName")?;
            let Some(input) = fields.take("input") else {
                return Err(fields.error("input", "a tool-call part has no `input`"));
            };
            Ok(Part::ToolCall(Box::new(ToolCall {
                id,
                name,
                input: ToolInput::Json(input),
                extra: fields.rest_in(&["type", "toolCallId", "toolName", "input"]),
                function_extra: Extra::new(),
            })))
        }
        ("tool-result", Role::Tool) => {
            let call_id = fields.required_str("toolCallId")?;
            if call_id.is_empty() {
                return Err(fields.error("toolCallId", "a tool-result part has an empty toolCallId"));
            }
            let Some(output) = fields.take("output") else {
                return Err(fields.error("output", "a tool-result part has no `output`"));
            };
            let (content, is_error, shape) = parse_output(output, &fields)?;
            fields.keep("output", shape);
            let extra = fields.rest_in(&["type", "toolCallId", "toolName", "output"]);
            Ok(Part::ToolResult(ToolResult { call_id, content, is_error, extra }))
        }
        ("tool-call" | "tool-result", _) if role != Role::Assistant && role != Role::Tool => {
            Err(fields.error("type", format!("{kind} parts do not belong in {} messages", role.as_str())))
        }
        // Files, custom parts, tool approvals, provider-executed calls and their results.
        _ => Ok(Part::Other(original)),
    }
}

/// A tool output as content the model can read, whether it is an error, and its shape (the
/// output without its value), which emission fills in again.
fn parse_output(output: Value, at: &Fields) -> Result<(Content, Option<bool>, Value)> {
    let Value::Object(mut output) = output else {
        return Err(at.error("output", format!("`output` must be an object, got {}", type_name(&output))));
    };
    let kind = output.get("type").and_then(Value::as_str).unwrap_or("").to_string();
    let is_error = kind.starts_with("error-").then_some(true);
    // Taken out of its place (left null there), so that the shape keeps its key order.
    let content = match (kind.as_str(), output.get_mut("value").map(std::mem::take)) {
        ("text" | "error-text", Some(Value::String(text))) => Content::text(text),
        ("json" | "error-json", Some(value)) => Content::text(crate::util::json_text::value_text(&value)),
        ("content", Some(Value::Array(items))) => {
            let parts = items.into_iter().map(content_item).collect();
            Content::parts(parts)
        }
        ("execution-denied", None) => {
            let reason = output.get("reason").and_then(Value::as_str).unwrap_or("the tool call was denied");
            Content::text(reason)
        }
        (_, value) => {
            if let Some(value) = value {
                output.insert("value".into(), value);
            }
            return Err(at.error(
                "output",
                format!("unknown tool output {:?}", crate::util::json_text::value_text(&Value::Object(output))),
            ));
        }
    };
    Ok((content, is_error, Value::Object(output)))
}

fn content_item(item: Value) -> Part {
    let kind = item.get("type").and_then(Value::as_str);
    match (kind, item.get("text"), item.as_object().map(Map::len)) {
        (Some("text"), Some(Value::String(text)), Some(2)) => Part::text(text.clone()),
        _ => Part::Other(item),
    }
}

/// The image type base64 data starts with, as the AI SDK detects it when no `mediaType` is given.
fn sniff_image_type(data: &str) -> &'static str {
    const SIGNATURES: [(&str, &str); 4] =
        [("/9j/", "image/jpeg"), ("iVBORw", "image/png"), ("R0lGOD", "image/gif"), ("UklGR", "image/webp")];
    SIGNATURES.iter().find(|(prefix, _)| data.starts_with(prefix)).map_or("image/png", |(_, media)| media)
}

/// Emits messages as AI SDK `ModelMessage`s. Messages parsed from the AI SDK come back exactly
/// as they arrived; converted ones get the SDK's shapes (a tool result takes its `toolName`
/// from the call it answers; OpenAI tool messages each become a tool message).
pub fn emit_ai_sdk<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<Value> {
    emit_ai_sdk_naming(messages, HashMap::new())
}

/// As `emit_ai_sdk`, with the names of calls made before these messages (a tool result emitted
/// without its call takes its `toolName` from them).
pub fn emit_ai_sdk_naming<'a>(
    messages: impl IntoIterator<Item = &'a Message>,
    mut names: HashMap<String, String>,
) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        for call in message.tool_calls() {
            names.insert(call.id.clone(), call.name.clone());
        }
        emit_ai_sdk_message(message, &names, &mut out);
    }
    out
}

pub fn emit_ai_sdk_message(message: &Message, names: &HashMap<String, String>, out: &mut Vec<Value>) {
    let native = message.source == Format::AiSdk;
    let no_extra = Extra::new();
    if message.role != Role::Tool && message.has_tool_results() {
        // A foreign user message holding tool results (Anthropic): the results go first, as tool.
        let (results, rest): (Vec<Part>, Vec<Part>) =
            message.content.parts.iter().cloned().partition(|p| matches!(p, Part::ToolResult(_)));
        let mut tool = Message::new(Role::Tool, Content::parts(results), message.source);
        tool.extra = message.extra.clone();
        emit_ai_sdk_message(&tool, names, out);
        if !rest.is_empty() {
            let mut user = Message::new(message.role, Content::parts(rest), message.source);
            user.extra = message.extra.clone();
            emit_ai_sdk_message(&user, names, out);
        }
        return;
    }
    let mut object = Map::new();
    object.insert(
        "role".into(),
        Value::from(if message.role == Role::Developer { "system" } else { message.role.as_str() }),
    );
    let content = if message.role.is_instruction()
        || (message.content.form == ContentForm::Text
            && (native || message.content.parts.iter().all(|p| matches!(p, Part::Text { .. }))))
    {
        Value::from(message.content.joined_text())
    } else {
        let parts: Vec<Value> =
            message.content.parts.iter().filter_map(|part| part_value(part, native, message.role, names)).collect();
        if !native && parts.is_empty() {
            return;
        }
        Value::Array(parts)
    };
    if !native && content.as_str() == Some("") {
        return;
    }
    object.insert("content".into(), content);
    out.push(with_extra(object, if native { &message.extra } else { &no_extra }));
}

fn part_value(part: &Part, native: bool, role: Role, names: &HashMap<String, String>) -> Option<Value> {
    let no_extra = Extra::new();
    let extra_of = |extra| if native { extra } else { &no_extra };
    let mut object = Map::new();
    match part {
        Part::Text { text, extra } => {
            if !native && text.is_empty() {
                return None;
            }
            object.insert("type".into(), Value::from("text"));
            object.insert("text".into(), Value::from(text.clone()));
            Some(with_extra(object, extra_of(extra)))
        }
        Part::Image { .. } if role != Role::User => None,
        Part::Image { source, extra, .. } => {
            object.insert("type".into(), Value::from("image"));
            match source {
                ImageSource::Url(url) => {
                    object.insert("image".into(), Value::from(url.clone()));
                }
                ImageSource::Base64 { media_type, data } => {
                    object.insert("image".into(), Value::from(data.clone()));
                    if !native {
                        object.insert("mediaType".into(), Value::from(media_type.clone()));
                    }
                }
            }
            Some(with_extra(object, extra_of(extra)))
        }
        Part::Thinking { thinking, extra, .. } if native => {
            object.insert("type".into(), Value::from("reasoning"));
            object.insert("text".into(), Value::from(thinking.clone()));
            Some(with_extra(object, extra))
        }
        Part::ToolCall(call) => {
            object.insert("type".into(), Value::from("tool-call"));
            object.insert("toolCallId".into(), Value::from(call.id.clone()));
            object.insert("toolName".into(), Value::from(call.name.clone()));
            let input = match &call.input {
                ToolInput::Json(value) => value.clone(),
                ToolInput::Text(text) if text.trim().is_empty() => Value::Object(Map::new()),
                ToolInput::Text(text) => serde_json::from_str(text).unwrap_or_else(|_| Value::from(text.clone())),
            };
            object.insert("input".into(), input);
            Some(with_extra(object, extra_of(&call.extra)))
        }
        Part::ToolResult(result) => {
            object.insert("type".into(), Value::from("tool-result"));
            object.insert("toolCallId".into(), Value::from(result.call_id.clone()));
            let own = result.extra.get("toolName").and_then(Value::as_str).filter(|_| native);
            let name = own.or_else(|| names.get(&result.call_id).map(String::as_str)).unwrap_or_default();
            object.insert("toolName".into(), Value::from(name));
            object.insert("output".into(), output_value(result, native));
            Some(with_extra(object, extra_of(&result.extra)))
        }
        Part::Other(value) if native => Some(value.clone()),
        Part::Other(value) => match (value.get("type").and_then(Value::as_str), value.get("refusal")) {
            (Some("refusal"), Some(Value::String(text))) => Some(serde_json::json!({"type": "text", "text": text})),
            _ => None,
        },
        // Another provider's thinking cannot be replayed through the AI SDK.
        Part::Thinking { .. } | Part::RedactedThinking { .. } => None,
    }
}

/// The `output` of a tool-result part: its parsed shape with the (possibly reduced) content as
/// the value. JSON that a reducer turned into prose goes out as text.
fn output_value(result: &ToolResult, native: bool) -> Value {
    let error = result.is_error == Some(true);
    let text = || result.content.joined_text();
    let shape = result.extra.get("output").and_then(Value::as_object).filter(|_| native);
    let kind = shape.and_then(|s| s.get("type")).and_then(Value::as_str).unwrap_or("");
    let (kind, value) = match kind {
        "json" | "error-json" => match serde_json::from_str::<Value>(&text()) {
            Ok(value) => (kind.to_string(), Some(value)),
            Err(_) => (if error { "error-text" } else { "text" }.to_string(), Some(Value::from(text()))),
        },
        "execution-denied" => (kind.to_string(), None),
        "content" => {
            let items = result
                .content
                .parts
                .iter()
                .filter_map(|part| match part {
                    Part::Text { text, .. } => Some(serde_json::json!({"type": "text", "text": text})),
                    Part::Other(value) => Some(value.clone()),
                    _ => None,
                })
                .collect();
            (kind.to_string(), Some(Value::Array(items)))
        }
        _ if native && !kind.is_empty() => (kind.to_string(), Some(Value::from(text()))),
        _ => foreign_output(result, error),
    };
    let mut object = Map::new();
    object.insert("type".into(), Value::from(kind));
    if let Some(value) = value {
        object.insert("value".into(), value);
    }
    // The shape as it came: its fields, in its order.
    match shape {
        Some(shape) => Value::Object(in_order(merge_fields(object, shape), shape.keys().map(String::as_str))),
        None => Value::Object(object),
    }
}

fn foreign_output(result: &ToolResult, error: bool) -> (String, Option<Value>) {
    let has_images =
        result.content.parts.iter().any(|p| matches!(p, Part::Image { source: ImageSource::Base64 { .. }, .. }));
    if !has_images || error {
        let kind = if error { "error-text" } else { "text" };
        let mut text = String::new();
        for part in &result.content.parts {
            match part {
                Part::Text { text: t, .. } => {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(t);
                }
                Part::Image { .. } => text.push_str("[image]"),
                _ => {}
            }
        }
        return (kind.to_string(), Some(Value::from(text)));
    }
    let items = result
        .content
        .parts
        .iter()
        .filter_map(|part| match part {
            Part::Text { text, .. } => Some(serde_json::json!({"type": "text", "text": text})),
            Part::Image { source: ImageSource::Base64 { media_type, data }, .. } => Some(serde_json::json!({
                "type": "file", "data": {"type": "data", "data": data}, "mediaType": media_type
            })),
            _ => None,
        })
        .collect();
    ("content".to_string(), Some(Value::Array(items)))
}
