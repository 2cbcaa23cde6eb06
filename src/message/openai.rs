//! OpenAI Chat Completions messages: system/developer/user/assistant (with `tool_calls`) and
//! tool (with `tool_call_id`); content as a string, null, or an array of parts.

use serde_json::{Map, Value};

use super::json::{type_name, with_extra, Base, Extra, Fields};
use super::{Content, ContentForm, Format, ImageSource, Message, Part, Role, ToolCall, ToolInput, ToolResult};
use crate::error::{Error, Result};

/// Parses an array of OpenAI messages.
pub fn parse_openai(value: Value) -> Result<Vec<Message>> {
    match value {
        Value::Array(items) => {
            items.into_iter().enumerate().map(|(index, item)| parse_openai_message(item, index)).collect()
        }
        other => {
            Err(Error::invalid_argument(format!("expected an array of OpenAI messages, got {}", type_name(&other))))
        }
    }
}

pub fn parse_openai_message(value: Value, index: usize) -> Result<Message> {
    let mut fields = Fields::new(value, index, Base::Message, "a message")?;
    let role = match fields.required_str("role")?.as_str() {
        "system" => Role::System,
        "developer" => Role::Developer,
        "user" => Role::User,
        "assistant" => Role::Assistant,
        "tool" => Role::Tool,
        "function" => {
            return Err(fields.error(
                "role",
                "the legacy role \"function\" is not supported: send tool results as role \"tool\" with a tool_call_id",
            ))
        }
        other => {
            return Err(fields
                .error("role", format!("unknown role {other:?}: expected system, developer, user, assistant or tool")))
        }
    };
    let name = fields.optional_str("name")?;
    let content = if role == Role::Tool {
        let call_id = match fields.take("tool_call_id") {
            Some(Value::String(id)) if !id.is_empty() => id,
            Some(Value::String(_)) => {
                return Err(fields.error("tool_call_id", "tool message has an empty tool_call_id"))
            }
            Some(other) => {
                return Err(
                    fields.error("tool_call_id", format!("`tool_call_id` must be a string, got {}", type_name(&other)))
                )
            }
            None => return Err(fields.error("tool_call_id", "tool message has no tool_call_id")),
        };
        let result_content = parse_content(&mut fields)?;
        if matches!(result_content.form, ContentForm::Absent | ContentForm::Null) {
            return Err(fields.error("content", "tool message has no content"));
        }
        Content::parts(vec![Part::ToolResult(ToolResult {
            call_id,
            content: result_content,
            is_error: None,
            extra: Extra::new(),
        })])
    } else {
        let mut content = parse_content(&mut fields)?;
        match fields.take("tool_calls") {
            Some(Value::Array(calls)) if !calls.is_empty() => {
                if role != Role::Assistant {
                    return Err(fields.error(
                        "tool_calls",
                        format!("only assistant messages may have tool_calls, not {}", role.as_str()),
                    ));
                }
                for (i, call) in calls.into_iter().enumerate() {
                    content.parts.push(Part::ToolCall(Box::new(parse_tool_call(call, &fields, i)?)));
                }
            }
            // An empty list calls nothing: keep it verbatim as an unknown field.
            Some(Value::Array(empty)) => fields.keep("tool_calls", Value::Array(empty)),
            Some(Value::Null) => fields.keep("tool_calls", Value::Null),
            Some(other) => {
                return Err(
                    fields.error("tool_calls", format!("`tool_calls` must be an array, got {}", type_name(&other)))
                )
            }
            None => {}
        }
        if matches!(content.form, ContentForm::Absent | ContentForm::Null) && content.parts.is_empty() {
            let answered_otherwise = ["function_call", "audio", "refusal"].iter().any(|key| fields.has(key));
            if role != Role::Assistant || !answered_otherwise {
                return Err(fields.error(
                    "content",
                    if role == Role::Assistant {
                        "assistant message has neither content nor tool_calls".to_string()
                    } else {
                        format!("{} message has no content", role.as_str())
                    },
                ));
            }
        }
        content
    };
    let written: &[&str] = if role == Role::Tool { TOOL_MESSAGE_KEYS } else { MESSAGE_KEYS };
    Ok(Message { role, content, name, extra: fields.rest_in(written), source: Format::OpenAi })
}

fn parse_content(fields: &mut Fields) -> Result<Content> {
    match fields.take("content") {
        None => Ok(Content { form: ContentForm::Absent, parts: Vec::new() }),
        Some(Value::Null) => Ok(Content { form: ContentForm::Null, parts: Vec::new() }),
        Some(Value::String(text)) => Ok(Content::text(text)),
        Some(Value::Array(items)) => {
            let mut parts = Vec::with_capacity(items.len());
            for (i, item) in items.into_iter().enumerate() {
                parts.push(parse_part(item, fields.index(), Base::Item("content", i))?);
            }
            Ok(Content::parts(parts))
        }
        Some(other) => Err(fields.error(
            "content",
            format!("`content` must be a string, null or an array of parts, got {}", type_name(&other)),
        )),
    }
}

fn parse_part(value: Value, index: usize, base: Base) -> Result<Part> {
    let original = value.clone();
    let mut fields = Fields::new(value, index, base, "a content part")?;
    let kind = fields.required_str("type")?;
    match kind.as_str() {
        "text" => {
            let text = fields.required_str("text")?;
            Ok(Part::Text { text, extra: fields.rest_in(&["type", "text"]) })
        }
        "image_url" => {
            let image = match fields.take("image_url") {
                Some(image) => image,
                None => return Err(fields.error("image_url", "image part has no `image_url`")),
            };
            let mut inner = Fields::new(image, index, fields.child("image_url"), "`image_url`")?;
            let url = inner.required_str("url")?;
            if let Some(payload) = super::data_url_base64(&url) {
                super::check_image_data(payload).map_err(|why| inner.error("url", why))?;
            }
            let detail = inner.optional_str("detail")?;
            Ok(Part::Image {
                source: ImageSource::Url(url),
                detail,
                extra: fields.rest_in(&["type", "image_url"]),
                source_extra: inner.rest_in(&["url", "detail"]),
            })
        }
        // Another format's part in a Chat message is a mistake the API would refuse.
        "tool_use" | "tool_result" | "thinking" | "redacted_thinking" | "image" | "document" => Err(fields.error(
            "type",
            format!(
                "{kind:?} is an Anthropic content block, not an OpenAI Chat content part (text, image_url, \
                 input_audio, file, refusal): append Anthropic messages with format \"anthropic\""
            ),
        )),
        // Refusals, audio, files and future part types travel verbatim.
        _ => Ok(Part::Other(original)),
    }
}

fn parse_tool_call(value: Value, message: &Fields, i: usize) -> Result<ToolCall> {
    let mut call = Fields::new(value, message.index(), message.item("tool_calls", i), "a tool call")?;
    let id = call.required_str("id")?;
    if id.is_empty() {
        return Err(call.error("id", "tool call has an empty id"));
    }
    // A custom tool's call (`type: "custom"`) carries free text as `custom.input`.
    let (key, input_key) = if is_custom(call.peek("type")) { CUSTOM } else { FUNCTION };
    let function = match call.take(key) {
        Some(function) => function,
        None => return Err(call.error(key, "tool call has no `function` (a custom tool's: `custom`)")),
    };
    let mut function = Fields::new(function, message.index(), call.child(key), "a tool call's body")?;
    let name = function.required_str("name")?;
    let arguments = match function.take(input_key) {
        Some(Value::String(arguments)) => arguments,
        Some(other) => return Err(function.error(input_key, format!("must be a string, got {}", type_name(&other)))),
        None => return Err(function.error(input_key, "tool call has no `arguments` (a custom tool's: `input`)")),
    };
    Ok(ToolCall {
        id,
        name,
        input: ToolInput::Text(arguments),
        extra: call.rest_in(&["id", "type", key]),
        function_extra: function.rest_in(&["name", input_key]),
    })
}

/// The keys an OpenAI message is written with, in order, before its other fields.
const MESSAGE_KEYS: &[&str] = &["role", "name", "content", "tool_calls"];
const TOOL_MESSAGE_KEYS: &[&str] = &["role", "name", "tool_call_id", "content"];

/// Emits messages as OpenAI messages. Messages parsed from OpenAI come back exactly as they
/// arrived; others are converted (an Anthropic user message with tool results becomes one tool
/// message per result, then a user message for whatever else it held).
pub fn emit_openai<'a>(messages: impl IntoIterator<Item = &'a Message>) -> Vec<Value> {
    let mut out = Vec::new();
    for message in messages {
        emit_openai_message(message, &mut out);
    }
    out
}

pub fn emit_openai_message(message: &Message, out: &mut Vec<Value>) {
    let native = message.source == Format::OpenAi;
    let no_extra = Extra::new();
    let extra = if native { &message.extra } else { &no_extra };

    if message.role == Role::Tool || message.has_tool_results() {
        let mut rest = Vec::new();
        for part in &message.content.parts {
            match part {
                Part::ToolResult(result) => {
                    let mut object = Map::new();
                    object.insert("role".into(), Value::from("tool"));
                    if let Some(name) = &message.name {
                        object.insert("name".into(), Value::from(name.clone()));
                    }
                    object.insert("tool_call_id".into(), Value::from(result.call_id.clone()));
                    object.insert("content".into(), tool_result_content(&result.content, native));
                    out.push(with_extra(object, extra));
                }
                other => rest.push(other.clone()),
            }
        }
        if !rest.is_empty() {
            let remainder = Message::new(Role::User, Content::parts(rest), message.source);
            emit_openai_message(&remainder, out);
        }
        return;
    }

    let mut object = Map::new();
    object.insert("role".into(), Value::from(message.role.as_str()));
    if let Some(name) = &message.name {
        object.insert("name".into(), Value::from(name.clone()));
    }
    let calls: Vec<Value> = message.tool_calls().map(|call| tool_call(call, native)).collect();
    let content_parts: Vec<&Part> =
        message.content.parts.iter().filter(|part| !matches!(part, Part::ToolCall(_))).collect();
    let form = if native { message.content.form } else { foreign_form(&content_parts, !calls.is_empty()) };
    if let Some(content) = content_value(form, &content_parts, native) {
        object.insert("content".into(), content);
    }
    if !calls.is_empty() {
        object.insert("tool_calls".into(), Value::Array(calls));
    }
    out.push(with_extra(object, extra));
}

/// The content shape a converted message gets: a string where one text says it all.
fn foreign_form(parts: &[&Part], has_calls: bool) -> ContentForm {
    let visible: Vec<&&Part> = parts.iter().filter(|part| emits_in_openai(part)).collect();
    if visible.is_empty() {
        if has_calls {
            ContentForm::Null
        } else {
            ContentForm::Text
        }
    } else if visible.iter().all(|part| matches!(part, Part::Text { .. })) {
        ContentForm::Text
    } else {
        ContentForm::Parts
    }
}

fn emits_in_openai(part: &Part) -> bool {
    matches!(part, Part::Text { .. } | Part::Image { .. })
}

fn content_value(form: ContentForm, parts: &[&Part], native: bool) -> Option<Value> {
    match form {
        ContentForm::Absent => None,
        ContentForm::Null => Some(Value::Null),
        ContentForm::Text => {
            let mut text = String::new();
            for part in parts {
                if let Part::Text { text: t, .. } = part {
                    text.push_str(t);
                }
            }
            Some(Value::from(text))
        }
        ContentForm::Parts => Some(Value::Array(parts.iter().filter_map(|part| part_value(part, native)).collect())),
    }
}

fn tool_result_content(content: &Content, native: bool) -> Value {
    if native {
        let parts: Vec<&Part> = content.parts.iter().collect();
        return content_value(content.form, &parts, true).unwrap_or(Value::Null);
    }
    // Converted: OpenAI tool messages carry text only, so say where an image was.
    let mut text = String::new();
    for part in &content.parts {
        match part {
            Part::Text { text: t, .. } => {
                if !text.is_empty() {
                    text.push('\n');
                }
                text.push_str(t);
            }
            Part::Image { .. } => text.push_str("[image omitted: OpenAI tool messages carry text only]"),
            _ => {}
        }
    }
    Value::from(text)
}

fn part_value(part: &Part, native: bool) -> Option<Value> {
    let no_extra = Extra::new();
    match part {
        Part::Text { text, extra } => {
            let mut object = Map::new();
            object.insert("type".into(), Value::from("text"));
            object.insert("text".into(), Value::from(text.clone()));
            Some(with_extra(object, if native { extra } else { &no_extra }))
        }
        Part::Image { source, detail, extra, source_extra } => {
            let url = match source {
                ImageSource::Url(url) => url.clone(),
                ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
            };
            let mut image = Map::new();
            image.insert("url".into(), Value::from(url));
            if let Some(detail) = detail {
                image.insert("detail".into(), Value::from(detail.clone()));
            }
            let mut object = Map::new();
            object.insert("type".into(), Value::from("image_url"));
            object.insert("image_url".into(), with_extra(image, if native { source_extra } else { &no_extra }));
            Some(with_extra(object, if native { extra } else { &no_extra }))
        }
        Part::Other(value) if native => Some(value.clone()),
        // Thinking has no place in Chat Completions input; foreign parts have no OpenAI shape.
        _ => None,
    }
}

/// The keys of a call's body and of its input: a function's, or a custom tool's.
const FUNCTION: (&str, &str) = ("function", "arguments");
const CUSTOM: (&str, &str) = ("custom", "input");

fn is_custom(kind: Option<&Value>) -> bool {
    kind.and_then(Value::as_str) == Some("custom")
}

fn tool_call(call: &ToolCall, native: bool) -> Value {
    let no_extra = Extra::new();
    let (key, input_key) = if native && is_custom(call.extra.get("type")) { CUSTOM } else { FUNCTION };
    let mut function = Map::new();
    function.insert("name".into(), Value::from(call.name.clone()));
    function.insert(input_key.into(), Value::from(call.input.to_text()));
    let mut object = Map::new();
    object.insert("id".into(), Value::from(call.id.clone()));
    // Where the API writes it: `{ id, type, function }`.
    match call.extra.get("type").filter(|_| native) {
        Some(kind) => object.insert("type".into(), kind.clone()),
        None if native => None,
        None => object.insert("type".into(), Value::from("function")),
    };
    object.insert(key.into(), with_extra(function, if native { &call.function_extra } else { &no_extra }));
    with_extra(object, if native { &call.extra } else { &no_extra })
}
