//! Anthropic Messages: a top-level `system`, then user/assistant messages whose content is a
//! string or an array of blocks (`text`, `image`, `tool_use`, `tool_result`, `thinking`,
//! `redacted_thinking`; any other block type travels verbatim).

use serde_json::{Map, Value};

use super::json::{type_name, with_extra, Base, Extra, Fields};
use super::{Content, ContentForm, Format, ImageSource, Message, Part, Role, ToolCall, ToolInput, ToolResult};
use crate::error::{Error, ErrorDetails, ErrorKind, Result};

/// Parses Anthropic input: an array of messages, or `{ system?, messages }`.
/// A `system` becomes a leading system message; `role: "system"` messages are accepted in the
/// array too, as a convenience, and are emitted into the top-level `system`.
pub fn parse_anthropic(value: Value) -> Result<Vec<Message>> {
    match value {
        Value::Array(items) => parse_list(items, 0, Vec::new()),
        Value::Object(mut request) => {
            if let Some(key) = request.keys().find(|key| *key != "system" && *key != "messages") {
                return Err(Error::invalid_argument(format!(
                    "unexpected key `{key}`: pass an array of Anthropic messages or {{ system, messages }}"
                )));
            }
            let mut out = Vec::new();
            if let Some(system) = request.shift_remove("system") {
                out.push(parse_system(system)?);
            }
            match request.shift_remove("messages") {
                Some(Value::Array(items)) => parse_list(items, 0, out),
                Some(other) => {
                    Err(Error::invalid_argument(format!("`messages` must be an array, got {}", type_name(&other))))
                }
                None => Err(Error::invalid_argument("missing `messages`: pass { system, messages }")),
            }
        }
        other => Err(Error::invalid_argument(format!(
            "expected an array of Anthropic messages or {{ system, messages }}, got {}",
            type_name(&other)
        ))),
    }
}

fn parse_list(items: Vec<Value>, first_index: usize, mut out: Vec<Message>) -> Result<Vec<Message>> {
    out.reserve(items.len());
    for (i, item) in items.into_iter().enumerate() {
        out.push(parse_anthropic_message(item, first_index + i)?);
    }
    Ok(out)
}

fn parse_system(system: Value) -> Result<Message> {
    let system_error = |message: String| -> Error {
        ErrorDetails { kind: ErrorKind::InvalidMessage, message, index: None, path: Some("system".into()) }.into()
    };
    let content = match system {
        Value::String(text) => Content::text(text),
        Value::Array(blocks) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.into_iter().enumerate() {
                match parse_block(block, 0, Base::Item("content", i), Role::System) {
                    Ok(part @ Part::Text { .. }) => parts.push(part),
                    Ok(_) => return Err(system_error(format!("system block {i} must be a text block"))),
                    Err(error) => return Err(system_error(format!("system block {i}: {}", error.message))),
                }
            }
            Content::parts(parts)
        }
        other => {
            return Err(system_error(format!(
                "`system` must be a string or an array of text blocks, got {}",
                type_name(&other)
            )))
        }
    };
    Ok(Message::new(Role::System, content, Format::Anthropic))
}

pub fn parse_anthropic_message(value: Value, index: usize) -> Result<Message> {
    let mut fields = Fields::new(value, index, Base::Message, "a message")?;
    let role = match fields.required_str("role")?.as_str() {
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "system" => Role::System,
        "tool" => {
            return Err(fields.error(
                "role",
                "Anthropic messages have no role \"tool\": tool results are tool_result blocks in a user message",
            ))
        }
        other => return Err(fields.error("role", format!("unknown role {other:?}: expected user or assistant"))),
    };
    let content = match fields.take("content") {
        Some(Value::String(text)) => Content::text(text),
        Some(Value::Array(blocks)) => {
            let mut parts = Vec::with_capacity(blocks.len());
            for (i, block) in blocks.into_iter().enumerate() {
                parts.push(parse_block(block, index, Base::Item("content", i), role)?);
            }
            Content::parts(parts)
        }
        Some(other) => {
            return Err(fields.error(
                "content",
                format!("`content` must be a string or an array of blocks, got {}", type_name(&other)),
            ))
        }
        None => return Err(fields.error("content", format!("{} message has no content", role.as_str()))),
    };
    Ok(Message { role, content, name: None, extra: fields.rest_in(&["role", "content"]), source: Format::Anthropic })
}

fn parse_block(value: Value, index: usize, base: Base, role: Role) -> Result<Part> {
    let original = value.clone();
    let mut fields = Fields::new(value, index, base, "a content block")?;
    let kind = fields.required_str("type")?;
    match kind.as_str() {
        "text" => {
            let text = fields.required_str("text")?;
            Ok(Part::Text { text, extra: fields.rest_in(&["type", "text"]) })
        }
        "image" => {
            let Some(source) = fields.take("source") else {
                return Err(fields.error("source", "image block has no `source`"));
            };
            let mut source = Fields::new(source, index, fields.child("source"), "`source`")?;
            let (image, written): (ImageSource, &[&str]) = match source.required_str("type")?.as_str() {
                "base64" => {
                    let media_type = source.required_str("media_type")?;
                    let data = source.required_str("data")?;
                    super::check_image_data(&data).map_err(|why| source.error("data", why))?;
                    (ImageSource::Base64 { media_type, data }, &["type", "media_type", "data"])
                }
                "url" => (ImageSource::Url(source.required_str("url")?), &["type", "url"]),
                // Files API references and future sources travel verbatim.
                _ => return Ok(Part::Other(original)),
            };
            Ok(Part::Image {
                source: image,
                detail: None,
                extra: fields.rest_in(&["type", "source"]),
                source_extra: source.rest_in(written),
            })
        }
        "tool_use" => {
            if role != Role::Assistant {
                return Err(fields.error("type", "tool_use blocks belong in assistant messages"));
            }
            let id = fields.required_str("id")?;
            if id.is_empty() {
                return Err(fields.error("id", "tool_use block has an empty id"));
            }
            let name = fields.required_str("name")?;
            let input = match fields.take("input") {
                Some(input @ Value::Object(_)) => input,
                Some(other) => {
                    return Err(fields.error("input", format!("`input` must be an object, got {}", type_name(&other))))
                }
                None => return Err(fields.error("input", "tool_use block has no `input`")),
            };
            Ok(Part::ToolCall(Box::new(ToolCall {
                id,
                name,
                input: ToolInput::Json(input),
                extra: fields.rest_in(&["type", "id", "name", "input"]),
                function_extra: Extra::new(),
            })))
        }
        "tool_result" => {
            if role != Role::User {
                return Err(fields.error("type", "tool_result blocks belong in user messages"));
            }
            let call_id = fields.required_str("tool_use_id")?;
            if call_id.is_empty() {
                return Err(fields.error("tool_use_id", "tool_result block has an empty tool_use_id"));
            }
            let is_error = fields.optional_bool("is_error")?;
            let content = match fields.take("content") {
                None => Content { form: ContentForm::Absent, parts: Vec::new() },
                Some(Value::String(text)) => Content::text(text),
                Some(Value::Array(blocks)) => {
                    let mut parts = Vec::with_capacity(blocks.len());
                    for (i, block) in blocks.into_iter().enumerate() {
                        let part = parse_block(block, index, fields.item("content", i), role)?;
                        if matches!(part, Part::ToolResult(_)) {
                            return Err(fields.error("content", "a tool_result cannot contain another tool_result"));
                        }
                        parts.push(part);
                    }
                    Content::parts(parts)
                }
                Some(other) => {
                    return Err(fields.error(
                        "content",
                        format!("`content` must be a string or an array of blocks, got {}", type_name(&other)),
                    ))
                }
            };
            let extra = fields.rest_in(&["type", "tool_use_id", "content", "is_error"]);
            Ok(Part::ToolResult(ToolResult { call_id, content, is_error, extra }))
        }
        "thinking" => {
            let thinking = fields.required_str("thinking")?;
            let signature = fields.optional_str("signature")?;
            Ok(Part::Thinking { thinking, signature, extra: fields.rest_in(&["type", "thinking", "signature"]) })
        }
        "redacted_thinking" => {
            let data = fields.required_str("data")?;
            Ok(Part::RedactedThinking { data, extra: fields.rest_in(&["type", "data"]) })
        }
        _ => Ok(Part::Other(original)),
    }
}

/// Emits `{ system?, messages }`. Messages parsed from Anthropic come back exactly as they
/// arrived; converted ones lose the fields only their own format knows, OpenAI tool messages
/// become `tool_result` blocks, and a converted message merges into a neighbour of the same role
/// so that user and assistant alternate.
pub fn emit_anthropic<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Value {
    let mut system: Vec<&Message> = Vec::new();
    let mut out: Vec<(Value, bool)> = Vec::new();
    for message in messages {
        if message.role.is_instruction() {
            system.push(message);
            continue;
        }
        let native = message.source == Format::Anthropic;
        let Some(value) = emit_message(message) else { continue };
        match out.last_mut() {
            Some((previous, previous_native))
                if !(native && *previous_native) && previous.get("role") == value.get("role") =>
            {
                merge_into(previous, value);
                *previous_native = false;
            }
            _ => out.push((value, native)),
        }
    }
    let mut request = Map::new();
    if let Some(system) = system_value(&system) {
        request.insert("system".into(), system);
    }
    request.insert("messages".into(), Value::Array(out.into_iter().map(|(value, _)| value).collect()));
    Value::Object(request)
}

fn system_value(system: &[&Message]) -> Option<Value> {
    match system {
        [] => None,
        [only] if only.source == Format::Anthropic => Some(content_value(&only.content, true)),
        many => {
            let all_text = many.iter().all(|m| m.content.parts.iter().all(|p| matches!(p, Part::Text { .. })));
            if all_text {
                let texts: Vec<String> = many.iter().map(|m| m.content.joined_text()).collect();
                Some(Value::from(texts.join("\n\n")))
            } else {
                let mut blocks = Vec::new();
                for message in many {
                    for part in &message.content.parts {
                        if let Some(block) = block_value(part, message.source == Format::Anthropic) {
                            blocks.push(block);
                        }
                    }
                }
                Some(Value::Array(blocks))
            }
        }
    }
}

fn emit_message(message: &Message) -> Option<Value> {
    let native = message.source == Format::Anthropic;
    let role = if message.role == Role::Assistant { "assistant" } else { "user" };
    let content = if native {
        content_value(&message.content, true)
    } else {
        let mut blocks = Vec::new();
        for part in &message.content.parts {
            if let Some(block) = block_value(part, false) {
                blocks.push(block);
            }
        }
        match blocks.as_slice() {
            [] => return None,
            [only] if only.get("type").and_then(Value::as_str) == Some("text") && message.role != Role::Tool => {
                only.get("text").cloned().unwrap_or_default()
            }
            _ => Value::Array(blocks),
        }
    };
    let mut object = Map::new();
    object.insert("role".into(), Value::from(role));
    object.insert("content".into(), content);
    let no_extra = Extra::new();
    Some(with_extra(object, if native { &message.extra } else { &no_extra }))
}

fn content_value(content: &Content, native: bool) -> Value {
    if content.form == ContentForm::Text {
        return Value::from(content.joined_text());
    }
    let mut blocks = Vec::with_capacity(content.parts.len());
    for part in &content.parts {
        if let Some(block) = block_value(part, native) {
            blocks.push(block);
        }
    }
    Value::Array(blocks)
}

fn merge_into(previous: &mut Value, next: Value) {
    let as_blocks = |content: Value| match content {
        Value::String(text) if text.is_empty() => Vec::new(),
        Value::String(text) => vec![serde_json::json!({ "type": "text", "text": text })],
        Value::Array(blocks) => blocks,
        _ => Vec::new(),
    };
    if let (Some(slot), Some(next_content)) = (previous.get_mut("content"), next.get("content")) {
        let mut blocks = as_blocks(std::mem::take(slot));
        blocks.extend(as_blocks(next_content.clone()));
        *slot = Value::Array(blocks);
    }
}

fn block_value(part: &Part, native: bool) -> Option<Value> {
    let no_extra = Extra::new();
    let extra_of = |extra: &'_ Extra| -> Extra {
        if native {
            extra.clone()
        } else {
            no_extra.clone()
        }
    };
    let mut object = Map::new();
    let extra = match part {
        Part::Text { text, extra } => {
            if !native && text.is_empty() {
                return None; // Anthropic rejects empty text blocks.
            }
            object.insert("type".into(), Value::from("text"));
            object.insert("text".into(), Value::from(text.clone()));
            extra_of(extra)
        }
        Part::Image { source, extra, source_extra, .. } => {
            object.insert("type".into(), Value::from("image"));
            let mut src = Map::new();
            match source {
                ImageSource::Base64 { media_type, data } => {
                    src.insert("type".into(), Value::from("base64"));
                    src.insert("media_type".into(), Value::from(media_type.clone()));
                    src.insert("data".into(), Value::from(data.clone()));
                }
                ImageSource::Url(url) => match parse_data_url(url) {
                    Some((media_type, data)) if !native => {
                        src.insert("type".into(), Value::from("base64"));
                        src.insert("media_type".into(), Value::from(media_type));
                        src.insert("data".into(), Value::from(data));
                    }
                    _ => {
                        src.insert("type".into(), Value::from("url"));
                        src.insert("url".into(), Value::from(url.clone()));
                    }
                },
            }
            object.insert("source".into(), with_extra(src, &extra_of(source_extra)));
            extra_of(extra)
        }
        Part::ToolCall(call) => {
            object.insert("type".into(), Value::from("tool_use"));
            object.insert("id".into(), Value::from(call.id.clone()));
            object.insert("name".into(), Value::from(call.name.clone()));
            object.insert("input".into(), tool_input(call));
            extra_of(&call.extra)
        }
        Part::ToolResult(result) => {
            object.insert("type".into(), Value::from("tool_result"));
            object.insert("tool_use_id".into(), Value::from(result.call_id.clone()));
            if result.content.form != ContentForm::Absent && result.content.form != ContentForm::Null {
                object.insert("content".into(), content_value(&result.content, native));
            }
            if let Some(is_error) = result.is_error {
                object.insert("is_error".into(), Value::from(is_error));
            }
            extra_of(&result.extra)
        }
        Part::Thinking { thinking, signature, extra } => {
            if !native {
                return None;
            }
            object.insert("type".into(), Value::from("thinking"));
            object.insert("thinking".into(), Value::from(thinking.clone()));
            if let Some(signature) = signature {
                object.insert("signature".into(), Value::from(signature.clone()));
            }
            extra_of(extra)
        }
        Part::RedactedThinking { data, extra } => {
            if !native {
                return None;
            }
            object.insert("type".into(), Value::from("redacted_thinking"));
            object.insert("data".into(), Value::from(data.clone()));
            extra_of(extra)
        }
        Part::Other(value) => {
            if native {
                return Some(value.clone());
            }
            // OpenAI's refusal is the one foreign part with a plain-text meaning.
            return match (value.get("type").and_then(Value::as_str), value.get("refusal")) {
                (Some("refusal"), Some(Value::String(text))) if !text.is_empty() => {
                    Some(serde_json::json!({ "type": "text", "text": text }))
                }
                _ => None,
            };
        }
    };
    Some(with_extra(object, &extra))
}

/// Anthropic wants the tool input as an object; OpenAI gives it as JSON text, which models
/// sometimes get wrong. Text that is not a JSON object travels as `{"arguments": text}`, so a
/// conversion never fails and loses nothing.
fn tool_input(call: &ToolCall) -> Value {
    match &call.input {
        ToolInput::Json(value) => value.clone(),
        ToolInput::Text(text) if text.trim().is_empty() => Value::Object(Map::new()),
        ToolInput::Text(text) => match serde_json::from_str::<Value>(text) {
            Ok(value @ Value::Object(_)) => value,
            _ => serde_json::json!({ "arguments": text }),
        },
    }
}

fn parse_data_url(url: &str) -> Option<(String, String)> {
    let rest = url.strip_prefix("data:")?;
    let (meta, data) = rest.split_once(',')?;
    let media_type = meta.strip_suffix(";base64")?;
    Some((media_type.to_string(), data.to_string()))
}
