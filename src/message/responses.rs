//! OpenAI Responses input items, one message per item: `message` items (and the short
//! `{ role, content }` form), `function_call` / `custom_tool_call` and their outputs, hosted tool
//! calls that pair by `call_id` (computer, local shell, …) and their outputs, and opaque items:
//! `reasoning` (with `encrypted_content`), `compaction`, self-contained hosted calls
//! (`web_search_call`, `mcp_call`, …) travel byte for byte as one `Part::Other`.

use serde_json::{Map, Value};

use super::json::{in_order, merge_fields, type_name, with_extra, Base, Extra, Fields};
use super::{Content, ContentForm, Format, ImageSource, Message, Part, Role, ToolCall, ToolInput, ToolResult};
use crate::error::{Error, Result};

/// The item type of a provider compaction: everything before it is covered by it.
pub const COMPACTION_TYPE: &str = "compaction";

/// Parses an array of Responses input items.
pub fn parse_responses(value: Value) -> Result<Vec<Message>> {
    match value {
        Value::Array(items) => {
            items.into_iter().enumerate().map(|(index, item)| parse_responses_item(item, index)).collect()
        }
        other => Err(Error::invalid_argument(format!(
            "expected an array of OpenAI Responses input items, got {}",
            type_name(&other)
        ))),
    }
}

const LOCAL_SHELL_OUTPUT: &str = "local_shell_call_output";

/// Whether `kind` is a hosted tool call answered by a `<kind>_output` item with the same `call_id`.
fn is_paired_call(kind: &str) -> bool {
    kind.ends_with("_call") && kind != "function_call" && kind != "custom_tool_call"
}

pub fn parse_responses_item(value: Value, index: usize) -> Result<Message> {
    let original = value.clone();
    let mut fields = Fields::new(value, index, Base::Message, "an item")?;
    let kind = match fields.take("type") {
        None => None,
        Some(Value::String(kind)) => Some(kind),
        Some(other) => return Err(fields.error("type", format!("`type` must be a string, got {}", type_name(&other)))),
    };
    let item = |role: Role, part: Part| {
        Message::new(role, Content { form: ContentForm::Absent, parts: vec![part] }, Format::Responses)
    };
    let opaque = |role: Role| Ok(item(role, Part::Other(original.clone())));
    match kind.as_deref() {
        None | Some("message") => {
            if let Some(kind) = kind {
                fields.keep("type", Value::from(kind));
            }
            parse_message(fields)
        }
        Some("function_call") | Some("custom_tool_call") => {
            let custom = kind.as_deref() == Some("custom_tool_call");
            let id = fields.required_str("call_id")?;
            if id.is_empty() {
                return Err(fields.error("call_id", "a tool call has an empty call_id"));
            }
            let name = fields.required_str("name")?;
            let input = fields.required_str(if custom { "input" } else { "arguments" })?;
            fields.keep("type", Value::from(kind.unwrap_or_default()));
            let call = ToolCall {
                id,
                name,
                input: ToolInput::Text(input),
                extra: fields.rest_in(&["type", "call_id", "name", if custom { "input" } else { "arguments" }]),
                function_extra: Extra::new(),
            };
            Ok(item(Role::Assistant, Part::ToolCall(Box::new(call))))
        }
        Some(kind) if is_paired_call(kind) && fields.has("call_id") => {
            let id = fields.required_str("call_id")?;
            fields.keep("type", Value::from(kind));
            // The item's other fields are its input; its key order travels with the call's type.
            let mut rest = fields.rest_in(&["type", "call_id"]);
            let order = rest.order().map(<[Box<str>]>::to_vec).map(Vec::into_boxed_slice);
            rest.remove("type");
            let mut extra = Extra::new().with_order(order);
            extra.insert("type".into(), Value::from(kind));
            let call = ToolCall {
                id,
                name: kind.to_string(),
                input: ToolInput::Json(Value::Object(rest.into_map())),
                extra,
                function_extra: Extra::new(),
            };
            Ok(item(Role::Assistant, Part::ToolCall(Box::new(call))))
        }
        Some(kind) if kind.ends_with("_call_output") => {
            // A local shell's output names its call by `id` (the call's `call_id`), and has no `call_id`.
            let call_id = match fields.peek("id").and_then(Value::as_str) {
                Some(id) if kind == LOCAL_SHELL_OUTPUT && !fields.has("call_id") => id.to_string(),
                _ => fields.required_str("call_id")?,
            };
            let output = fields.take("output").unwrap_or(Value::Null);
            let content = match output {
                Value::String(text) => Content::text(text),
                Value::Array(parts) => {
                    let mut out = Vec::with_capacity(parts.len());
                    for (i, part) in parts.into_iter().enumerate() {
                        out.push(parse_part(part, index, Base::Item("output", i))?);
                    }
                    Content::parts(out)
                }
                // A screenshot and other structured outputs: opaque, as they arrived.
                other => Content { form: ContentForm::Absent, parts: vec![Part::Other(other)] },
            };
            fields.keep("type", Value::from(kind));
            let result =
                ToolResult { call_id, content, is_error: None, extra: fields.rest_in(&["type", "call_id", "output"]) };
            Ok(item(Role::Tool, Part::ToolResult(result)))
        }
        // The compaction stands for all that came before it, as instructions do.
        Some(COMPACTION_TYPE) => opaque(Role::System),
        Some("mcp_approval_response") | Some("item_reference") => opaque(Role::User),
        // Reasoning, hosted calls with their results inside, MCP tool lists and approval requests.
        Some(_) => opaque(Role::Assistant),
    }
}

fn parse_message(mut fields: Fields) -> Result<Message> {
    let role = match fields.required_str("role")?.as_str() {
        "system" => Role::System,
        "developer" => Role::Developer,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        other => {
            return Err(
                fields.error("role", format!("unknown role {other:?}: expected system, developer, user or assistant"))
            )
        }
    };
    let content = match fields.take("content") {
        Some(Value::String(text)) => Content::text(text),
        Some(Value::Array(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for (i, part) in parts.into_iter().enumerate() {
                out.push(parse_part(part, fields.index(), Base::Item("content", i))?);
            }
            Content::parts(out)
        }
        Some(other) => {
            return Err(fields.error(
                "content",
                format!("`content` must be a string or an array of parts, got {}", type_name(&other)),
            ))
        }
        None => return Err(fields.error("content", format!("{} message has no content", role.as_str()))),
    };
    Ok(Message {
        role,
        content,
        name: None,
        extra: fields.rest_in(&["type", "role", "content"]),
        source: Format::Responses,
    })
}

fn parse_part(value: Value, index: usize, base: Base) -> Result<Part> {
    let original = value.clone();
    let mut fields = Fields::new(value, index, base, "a content part")?;
    let kind = fields.required_str("type")?;
    match kind.as_str() {
        "input_text" | "output_text" => {
            let text = fields.required_str("text")?;
            fields.keep("type", Value::from(kind));
            Ok(Part::Text { text, extra: fields.rest_in(&["type", "text"]) })
        }
        "input_image" if fields_peek_str(&original, "image_url").is_some() => {
            let url = fields.required_str("image_url")?;
            if let Some(payload) = super::data_url_base64(&url) {
                super::check_image_data(payload).map_err(|why| fields.error("image_url", why))?;
            }
            let detail = fields.optional_str("detail")?;
            fields.keep("type", Value::from(kind));
            let extra = fields.rest_in(&["type", "image_url", "detail"]);
            Ok(Part::Image { source: ImageSource::Url(url), detail, extra, source_extra: Extra::new() })
        }
        // Files, refusals, audio, images by file id: verbatim.
        _ => Ok(Part::Other(original)),
    }
}

fn fields_peek_str<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// Emits messages as Responses input items. Items parsed from Responses come back exactly as
/// they arrived; converted messages become `message`, `function_call` and `function_call_output`
/// items (foreign thinking and opaque parts have no Responses form and are left out).
pub fn emit_responses<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        emit_responses_message(message, &mut out);
    }
    out
}

pub fn emit_responses_message(message: &Message, out: &mut Vec<Value>) {
    let native = message.source == Format::Responses;
    // An item that is not a message (a call, an output, an opaque item) has no `content`.
    if native && message.content.form == ContentForm::Absent {
        for part in &message.content.parts {
            match part {
                Part::ToolCall(call) => out.push(call_item(call, native)),
                Part::ToolResult(result) => out.push(output_item(result, native)),
                Part::Other(value) => out.push(value.clone()),
                _ => {}
            }
        }
        return;
    }
    let mut text_parts: Vec<&Part> = Vec::new();
    // Items keep the order of the parts: text before a call goes out before it.
    let flush = |parts: &mut Vec<&Part>, out: &mut Vec<Value>| {
        if !parts.is_empty() {
            if let Some(item) = message_item(message, parts, native) {
                out.push(item);
            }
            parts.clear();
        }
    };
    for part in &message.content.parts {
        match part {
            Part::ToolCall(call) => {
                flush(&mut text_parts, out);
                out.push(call_item(call, native));
            }
            Part::ToolResult(result) => {
                flush(&mut text_parts, out);
                out.push(output_item(result, native));
            }
            other => text_parts.push(other),
        }
    }
    if native && message.content.parts.is_empty() {
        if let Some(item) = message_item(message, &text_parts, native) {
            out.push(item);
        }
    }
    flush(&mut text_parts, out);
}

fn message_item(message: &Message, parts: &[&Part], native: bool) -> Option<Value> {
    let role = match message.role {
        Role::Tool => "user",
        role => role.as_str(),
    };
    let assistant = message.role == Role::Assistant;
    let mut object = Map::new();
    if native {
        if let Some(kind) = message.extra.get("type") {
            object.insert("type".into(), kind.clone());
        }
    }
    object.insert("role".into(), Value::from(role));
    let all_text = parts.iter().all(|part| matches!(part, Part::Text { .. }));
    let content = if all_text && (!native || message.content.form == ContentForm::Text) {
        let text: String = parts
            .iter()
            .filter_map(|p| if let Part::Text { text, .. } = p { Some(text.as_str()) } else { None })
            .collect();
        if !native && text.is_empty() {
            return None;
        }
        Value::from(text)
    } else {
        let values: Vec<Value> = parts.iter().filter_map(|part| part_value(part, native, assistant)).collect();
        if !native && values.is_empty() {
            return None;
        }
        Value::Array(values)
    };
    object.insert("content".into(), content);
    let no_extra = Extra::new();
    Some(with_extra(object, if native { &message.extra } else { &no_extra }))
}

fn part_value(part: &Part, native: bool, assistant: bool) -> Option<Value> {
    let no_extra = Extra::new();
    let default_text = if assistant { "output_text" } else { "input_text" };
    match part {
        Part::Text { text, extra } => {
            let mut object = Map::new();
            let kind = extra.get("type").filter(|_| native).cloned().unwrap_or_else(|| Value::from(default_text));
            object.insert("type".into(), kind);
            object.insert("text".into(), Value::from(text.clone()));
            Some(with_extra(object, if native { extra } else { &no_extra }))
        }
        Part::Image { .. } if assistant => None,
        Part::Image { source, detail, extra, .. } => {
            let url = match source {
                ImageSource::Url(url) => url.clone(),
                ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            };
            let mut object = Map::new();
            object.insert("type".into(), Value::from("input_image"));
            object.insert("image_url".into(), Value::from(url));
            object.insert("detail".into(), Value::from(detail.clone().unwrap_or_else(|| "auto".into())));
            if native && detail.is_none() {
                object.shift_remove("detail");
            }
            Some(with_extra(object, if native { extra } else { &no_extra }))
        }
        Part::Other(value) if native => Some(value.clone()),
        Part::Other(value) => match (value.get("type").and_then(Value::as_str), value.get("refusal")) {
            (Some("refusal"), Some(Value::String(text))) => {
                Some(serde_json::json!({ "type": default_text, "text": text }))
            }
            _ => None,
        },
        _ => None,
    }
}

fn call_item(call: &ToolCall, native: bool) -> Value {
    let kind = call.extra.get("type").and_then(Value::as_str).filter(|_| native).unwrap_or("function_call");
    let mut object = Map::new();
    object.insert("type".into(), Value::from(kind));
    if native && is_paired_call(kind) {
        object.insert("call_id".into(), Value::from(call.id.clone()));
        if let ToolInput::Json(Value::Object(rest)) = &call.input {
            object = merge_fields(object, rest);
        }
        return match call.extra.order() {
            Some(order) => Value::Object(in_order(object, order.iter().map(|k| &**k))),
            None => Value::Object(object),
        };
    }
    object.insert("call_id".into(), Value::from(call.id.clone()));
    object.insert("name".into(), Value::from(call.name.clone()));
    let key = if kind == "custom_tool_call" { "input" } else { "arguments" };
    object.insert(key.into(), Value::from(call.input.to_text()));
    let no_extra = Extra::new();
    with_extra(object, if native { &call.extra } else { &no_extra })
}

fn output_item(result: &ToolResult, native: bool) -> Value {
    let kind = result.extra.get("type").and_then(Value::as_str).filter(|_| native).unwrap_or("function_call_output");
    let mut object = Map::new();
    object.insert("type".into(), Value::from(kind));
    let by_id = kind == LOCAL_SHELL_OUTPUT && result.extra.get("id").and_then(Value::as_str) == Some(&result.call_id);
    if !by_id {
        object.insert("call_id".into(), Value::from(result.call_id.clone()));
    }
    let output = match (&result.content.form, result.content.parts.as_slice()) {
        (ContentForm::Absent, [Part::Other(raw)]) if native => raw.clone(),
        (ContentForm::Text, _) => Value::from(result.content.joined_text()),
        (_, parts) if !native && parts.iter().all(|p| matches!(p, Part::Text { .. })) => {
            Value::from(result.content.joined_text())
        }
        (_, parts) => {
            let values: Vec<Value> = parts.iter().filter_map(|p| part_value(p, native, false)).collect();
            if values.is_empty() {
                Value::from(result.content.joined_text())
            } else {
                Value::Array(values)
            }
        }
    };
    object.insert("output".into(), output);
    let mut extra = if native { result.extra.clone() } else { Extra::new() };
    if !native && result.is_error == Some(true) {
        if let Some(Value::String(text)) = object.get_mut("output") {
            text.insert_str(0, "Error: ");
        }
    }
    extra.remove("type");
    with_extra(object, &extra)
}
