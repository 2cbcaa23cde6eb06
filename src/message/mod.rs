//! The neutral message model: one representation for OpenAI Chat Completions, Anthropic
//! Messages, OpenAI Responses input items and AI SDK `ModelMessage`s. Every field the model does not understand is kept verbatim in `extra`, and the
//! shape the content arrived in is remembered, so parse-then-emit in the source format gives
//! back the same JSON.

mod aisdk;
mod anthropic;
pub(crate) mod json;
pub use json::Extra;
mod openai;
mod responses;

pub use aisdk::{emit_ai_sdk, emit_ai_sdk_naming, parse_ai_sdk, parse_ai_sdk_message};
pub use anthropic::{emit_anthropic, parse_anthropic, parse_anthropic_message};
pub use openai::{emit_openai, emit_openai_message, parse_openai, parse_openai_message};
pub use responses::{emit_responses, parse_responses, parse_responses_item, COMPACTION_TYPE};

use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The wire formats the package reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Format {
    #[serde(rename = "openai")]
    OpenAi,
    #[serde(rename = "anthropic")]
    Anthropic,
    /// OpenAI Responses input items (what the Agents SDK keeps as history).
    #[serde(rename = "openai-responses")]
    Responses,
    /// Vercel AI SDK `ModelMessage`s.
    #[serde(rename = "ai-sdk")]
    AiSdk,
}

impl Format {
    pub fn parse(name: &str) -> Result<Format> {
        match name {
            "openai" => Ok(Format::OpenAi),
            "anthropic" => Ok(Format::Anthropic),
            "openai-responses" => Ok(Format::Responses),
            "ai-sdk" => Ok(Format::AiSdk),
            other => Err(Error::invalid_argument(format!(
                "unknown format {other:?}: expected \"openai\", \"anthropic\", \"openai-responses\" or \"ai-sdk\""
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::OpenAi => "openai",
            Format::Anthropic => "anthropic",
            Format::Responses => "openai-responses",
            Format::AiSdk => "ai-sdk",
        }
    }

    /// Whether the format's request is a plain list (all but Anthropic's `{ system, messages }`).
    pub fn is_list(self) -> bool {
        self != Format::Anthropic
    }
}

/// Parses a message list in `format` (OpenAI: an array; Anthropic: an array or `{ system, messages }`).
pub fn parse(value: Value, format: Format) -> Result<Vec<Message>> {
    match format {
        Format::OpenAi => parse_openai(value),
        Format::Anthropic => parse_anthropic(value),
        Format::Responses => parse_responses(value),
        Format::AiSdk => parse_ai_sdk(value),
    }
}

/// Parses one message (one item, for Responses) at position `index` of its list.
pub fn parse_one(value: Value, format: Format, index: usize) -> Result<Message> {
    match format {
        Format::OpenAi => parse_openai_message(value, index),
        Format::Anthropic => parse_anthropic_message(value, index),
        Format::Responses => parse_responses_item(value, index),
        Format::AiSdk => parse_ai_sdk_message(value, index),
    }
}

/// Emits messages in `format` (OpenAI: an array; Anthropic: `{ system?, messages }`).
pub fn emit<'a>(messages: impl IntoIterator<Item = &'a Message>, format: Format) -> Value {
    emit_each(&mut messages.into_iter(), format)
}

/// `emit`'s work, compiled once for its callers' kinds of message list (each format's emitter
/// was compiled again for each of them).
pub(crate) fn emit_each(messages: &mut dyn Iterator<Item = &Message>, format: Format) -> Value {
    // A message holding only another format's opaque parts (reasoning items, encrypted thinking,
    // compaction items) has nothing the target can carry: it is left out, not emptied.
    let messages = messages.filter(move |m| m.source == format || !m.is_opaque());
    match format {
        Format::OpenAi => Value::Array(emit_openai(messages)),
        Format::Anthropic => emit_anthropic(messages),
        Format::Responses => Value::Array(emit_responses(messages)),
        Format::AiSdk => Value::Array(emit_ai_sdk(messages)),
    }
}

/// Emits one message on its own: an OpenAI message object, or an Anthropic one (a system message
/// as `{role: "system", content}`, since Anthropic keeps it in the request's top-level `system`).
pub fn emit_one(message: &Message, format: Format) -> Option<Value> {
    match (format, emit([message], format)) {
        (Format::OpenAi | Format::Responses | Format::AiSdk, Value::Array(mut list)) => list.pop(),
        (Format::Anthropic, Value::Object(mut request)) => match request.shift_remove("messages") {
            Some(Value::Array(mut list)) if !list.is_empty() => list.pop(),
            _ => request
                .shift_remove("system")
                .map(|content| json_object([("role", "system".into()), ("content", content)])),
        },
        _ => None,
    }
}

/// A JSON object of `entries`, in order. (Not `json!` around a `Value`: that copies the value
/// through serde's `Value` serializer, compiled into the wasm for that alone.)
pub(crate) fn json_object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(entries.into_iter().map(|(key, value)| (key.to_owned(), value)).collect())
}

/// Converts a message list between formats, for what both can express.
/// A tool's definition in `format`'s `tools` shape: OpenAI Chat Completions (nested under
/// `function`), Anthropic (`input_schema`), OpenAI Responses (flat), or the AI SDK's (wrap the
/// schema with `jsonSchema()`).
pub fn tool_definition(format: Format, name: &str, description: &str, parameters: Value) -> Value {
    let (name, description) = (Value::from(name), Value::from(description));
    match format {
        Format::OpenAi => json_object([
            ("type", "function".into()),
            ("function", json_object([("name", name), ("description", description), ("parameters", parameters)])),
        ]),
        Format::Anthropic => json_object([("name", name), ("description", description), ("input_schema", parameters)]),
        Format::Responses => json_object([
            ("type", "function".into()),
            ("name", name),
            ("description", description),
            ("parameters", parameters),
        ]),
        Format::AiSdk => json_object([("name", name), ("description", description), ("inputSchema", parameters)]),
    }
}

/// A model's call of `tool` as the agent hands it over (OpenAI's tool call, or Anthropic's
/// `tool_use` block): its input (OpenAI's `arguments` text, Anthropic's `input` object; `Null`
/// when absent), its provider, and its id. A call of the wrong shape is the caller's mistake.
pub fn tool_call_input<'a>(call: &'a Value, tool: &str) -> Result<(&'a Value, Format, &'a str)> {
    let (input, format) = match call.get("function") {
        Some(function) if function.is_object() => (function.get("arguments"), Format::OpenAi),
        Some(_) => {
            return Err(Error::invalid_argument(format!(
                "a {tool} call's `function` must be an object (OpenAI's {{ name, arguments }})"
            )))
        }
        None => (call.get("input"), Format::Anthropic),
    };
    let id = call
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::invalid_argument(format!("a {tool} call needs an `id` string")))?;
    Ok((input.unwrap_or(&Value::Null), format, id))
}

/// A tool call's arguments (OpenAI's JSON text, or Anthropic's object) as an object whose keys
/// are all among `keys`; the errors name the tool, for a model to correct its call.
pub fn tool_arguments(input: &Value, tool: &str, keys: &[&str]) -> Result<Map<String, Value>> {
    let parsed = match input {
        Value::String(text) => serde_json::from_str::<Value>(text)
            .map_err(|e| Error::invalid_argument(format!("{tool} arguments are not valid JSON: {e}")))?,
        other => other.clone(),
    };
    let Value::Object(fields) = parsed else {
        return Err(Error::invalid_argument(format!(
            "{tool} input must be an object, got {}",
            json::type_name(&parsed)
        )));
    };
    if let Some(key) = fields.keys().find(|k| !keys.contains(&k.as_str())) {
        return Err(Error::invalid_argument(format!("{tool} has no parameter `{key}`")));
    }
    Ok(fields)
}

pub fn convert(value: Value, from: Format, to: Format) -> Result<Value> {
    Ok(emit(&parse(value, from)?, to))
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Role {
    System,
    Developer,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::Developer => "developer",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }

    /// System and developer messages both carry instructions rather than conversation.
    pub fn is_instruction(self) -> bool {
        matches!(self, Role::System | Role::Developer)
    }
}

/// How a `content` field arrived, so that it leaves the same way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentForm {
    /// No `content` key at all.
    Absent,
    /// `"content": null` (OpenAI assistant messages that only call tools).
    Null,
    /// A plain string.
    Text,
    /// An array of parts or blocks.
    Parts,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Content {
    pub form: ContentForm,
    pub parts: Vec<Part>,
}

impl Content {
    pub fn text(text: impl Into<String>) -> Self {
        Content { form: ContentForm::Text, parts: vec![Part::text(text)] }
    }

    pub fn parts(parts: Vec<Part>) -> Self {
        Content { form: ContentForm::Parts, parts }
    }

    /// The concatenated text parts, in order.
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for part in &self.parts {
            if let Part::Text { text, .. } = part {
                out.push_str(text);
            }
        }
        out
    }
}

/// The value of a standard or URL-safe base64 digit; `None` for any other byte.
pub(crate) fn base64_digit(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    }
}

/// The payload of a `data:…;base64,` URL.
pub fn data_url_base64(url: &str) -> Option<&str> {
    let rest = url.strip_prefix("data:")?;
    let (header, payload) = rest.split_once(',')?;
    header.ends_with(";base64").then_some(payload)
}

/// Checks inline image data (Anthropic's and the AI SDK's base64, a `data:…;base64,` URL's
/// payload): a provider refuses a request whose image does not decode, and a build could not read
/// its size, so broken data is refused where it comes in rather than sent on. Standard or URL-safe
/// base64, whitespace allowed, `=` padding only at the end.
pub(crate) fn check_image_data(data: &str) -> std::result::Result<(), String> {
    let mut padding = 0usize;
    let mut digits = 0usize;
    for (at, byte) in data.bytes().enumerate() {
        match byte {
            _ if padding == 0 && base64_digit(byte).is_some() => digits += 1,
            b'=' if padding < 2 => padding += 1,
            b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => {
                let shown = data[at..].chars().next().unwrap_or('?');
                return Err(format!("image data is not base64: {shown:?} at offset {at}"));
            }
        }
    }
    if digits == 0 {
        return Err("image data is empty".to_string());
    }
    if digits % 4 == 1 || (padding > 0 && (digits + padding) % 4 != 0) {
        return Err(format!("image data is not base64: {digits} digits cannot end a base64 text"));
    }
    Ok(())
}

#[derive(Clone, Debug, PartialEq)]
pub enum ImageSource {
    /// A URL (OpenAI `image_url.url`, which may be a `data:` URL; Anthropic `source.type = "url"`).
    Url(String),
    /// Inline base64 data (Anthropic `source.type = "base64"`).
    Base64 { media_type: String, data: String },
}

impl ImageSource {
    /// The image's base64 data when it travels inline (Base64 data, or a `data:…;base64,` URL).
    pub fn inline_data(&self) -> Option<&str> {
        match self {
            ImageSource::Base64 { data, .. } => Some(data),
            ImageSource::Url(url) => data_url_base64(url),
        }
    }
}

/// The arguments of a tool call as the provider gave them.
#[derive(Clone, Debug, PartialEq)]
pub enum ToolInput {
    /// OpenAI: a JSON document serialised as a string, kept byte for byte.
    Text(String),
    /// Anthropic: a JSON object.
    Json(Value),
}

impl ToolInput {
    /// The arguments as JSON text (what a model reads, and what OpenAI expects).
    pub fn to_text(&self) -> String {
        match self {
            ToolInput::Text(text) => text.clone(),
            ToolInput::Json(value) => crate::util::json_text::value_text(value),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub input: ToolInput,
    /// Unknown fields of the call object (OpenAI: the call; Anthropic: the `tool_use` block).
    pub extra: Extra,
    /// Unknown fields of OpenAI's nested `function` object.
    pub function_extra: Extra,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolResult {
    pub call_id: String,
    pub content: Content,
    pub is_error: Option<bool>,
    pub extra: Extra,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Part {
    Text {
        text: String,
        extra: Extra,
    },
    Image {
        source: ImageSource,
        detail: Option<String>,
        extra: Extra,
        source_extra: Extra,
    },
    /// Boxed: a call is the largest part by far, and most parts are text.
    ToolCall(Box<ToolCall>),
    ToolResult(ToolResult),
    Thinking {
        thinking: String,
        signature: Option<String>,
        extra: Extra,
    },
    RedactedThinking {
        data: String,
        extra: Extra,
    },
    /// A part type this model does not know, kept verbatim (audio, files, documents, server tools…).
    Other(Value),
}

impl Part {
    pub fn text(text: impl Into<String>) -> Part {
        Part::Text { text: text.into(), extra: Extra::new() }
    }

    /// Whether only its own provider can read it: a reasoning or compaction item, a hosted
    /// call, encrypted or signed thinking (an AI SDK reasoning part carries its signature in
    /// `providerOptions`). Such a part is passed on whole, or not at all.
    pub fn is_opaque(&self) -> bool {
        match self {
            Part::Other(value) => {
                !matches!(value.get("type").and_then(Value::as_str), Some("refusal" | "input_text" | "output_text"))
            }
            Part::RedactedThinking { .. } => true,
            Part::Thinking { signature, extra, .. } => signature.is_some() || extra.contains_key("providerOptions"),
            _ => false,
        }
    }

    pub fn kind(&self) -> PartKind {
        match self {
            Part::Text { .. } => PartKind::Text,
            Part::Image { .. } => PartKind::Image,
            Part::ToolCall(_) => PartKind::ToolCall,
            Part::ToolResult(_) => PartKind::ToolResult,
            Part::Thinking { .. } | Part::RedactedThinking { .. } => PartKind::Thinking,
            Part::Other(_) => PartKind::Other,
        }
    }
}

/// The part categories a token report is broken down by.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PartKind {
    Text,
    Image,
    ToolCall,
    ToolResult,
    Thinking,
    Other,
}

impl PartKind {
    pub const ALL: [PartKind; 6] = [
        PartKind::Text,
        PartKind::Image,
        PartKind::ToolCall,
        PartKind::ToolResult,
        PartKind::Thinking,
        PartKind::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PartKind::Text => "text",
            PartKind::Image => "image",
            PartKind::ToolCall => "toolCall",
            PartKind::ToolResult => "toolResult",
            PartKind::Thinking => "thinking",
            PartKind::Other => "other",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub role: Role,
    pub content: Content,
    /// OpenAI's optional participant name (also the deprecated `name` on tool messages).
    pub name: Option<String>,
    /// Unknown message-level fields, verbatim.
    pub extra: Extra,
    /// The format this message was parsed from: its `extra` fields belong to that format only.
    pub source: Format,
}

impl Message {
    pub fn new(role: Role, content: Content, source: Format) -> Self {
        Message { role, content, name: None, extra: Extra::new(), source }
    }

    /// The message that answers tool call `call_id` with `text`: OpenAI's tool message, or an
    /// Anthropic user message holding one `tool_result` block (marked as an error if it is one).
    /// The AI SDK's result names its tool (`toolName`), when the name is known.
    pub fn tool_result(call_id: &str, tool_name: Option<&str>, text: String, is_error: bool, format: Format) -> Self {
        let mut extra = Extra::new();
        if let (Format::AiSdk, Some(name)) = (format, tool_name) {
            extra.insert("toolName".into(), Value::from(name));
        }
        let result = ToolResult {
            call_id: call_id.to_string(),
            content: Content::text(text),
            is_error: is_error.then_some(true),
            extra,
        };
        let role = if format == Format::OpenAi { Role::Tool } else { Role::User };
        Message::new(role, Content::parts(vec![Part::ToolResult(result)]), format)
    }

    pub fn tool_calls(&self) -> impl Iterator<Item = &ToolCall> {
        self.content.parts.iter().filter_map(|part| match part {
            Part::ToolCall(call) => Some(&**call),
            _ => None,
        })
    }

    pub fn tool_results(&self) -> impl Iterator<Item = &ToolResult> {
        self.content.parts.iter().filter_map(|part| match part {
            Part::ToolResult(result) => Some(result),
            _ => None,
        })
    }

    /// Whether every part is one only its own provider can read (a reasoning item, encrypted or
    /// redacted thinking, a compaction item): such a message is kept whole or not at all.
    pub fn is_opaque(&self) -> bool {
        !self.content.parts.is_empty() && self.content.parts.iter().all(Part::is_opaque)
    }

    /// Whether this is a provider's compaction item: what came before it is covered by it.
    pub fn is_compaction(&self) -> bool {
        self.source == Format::Responses
            && matches!(self.content.parts.as_slice(),
                [Part::Other(value)] if value.get("type").and_then(Value::as_str) == Some(COMPACTION_TYPE))
    }

    pub fn has_tool_results(&self) -> bool {
        self.tool_results().next().is_some()
    }

    /// What a reader (a search index, a transcript) takes from the message: its text, each tool
    /// call as `name(arguments)`, each tool result's text; images as `[image]`, thinking left out.
    pub fn readable_text(&self) -> String {
        fn push(out: &mut String, text: &str) {
            if !text.is_empty() {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        fn walk(out: &mut String, parts: &[Part]) {
            for part in parts {
                match part {
                    Part::Text { text, .. } => push(out, text),
                    Part::Image { .. } => push(out, "[image]"),
                    Part::ToolCall(call) => push(out, &format!("{}({})", call.name, call.input.to_text())),
                    Part::ToolResult(result) => walk(out, &result.content.parts),
                    Part::Thinking { .. } | Part::RedactedThinking { .. } | Part::Other(_) => {}
                }
            }
        }
        let mut out = String::new();
        walk(&mut out, &self.content.parts);
        out
    }
}

#[cfg(test)]
mod formats_tests;
