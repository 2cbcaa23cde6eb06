//! OpenAI's published chat rules (openai-cookbook, "How to count tokens with tiktoken"):
//! 3 tokens a message, the encoded value of each field, 1 more for a `name`, 3 to prime the
//! reply; and the cookbook's rules for tool definitions. Where OpenAI publishes nothing (how a
//! tool call or an image is framed), the rule used is stated next to the code.

use serde_json::Value;

use super::Encoding;
use crate::error::{Error, Result};
use crate::message::{Format, Message, Part, PartKind, ToolResult};

pub const TOKENS_PER_MESSAGE: usize = 3;
pub const TOKENS_PER_NAME: usize = 1;
pub const REPLY_PRIMING: usize = 3;
/// Not published: the framing around one tool call, besides its name and arguments.
pub const TOKENS_PER_TOOL_CALL: usize = 3;
/// OpenAI: a low-detail image costs 85 tokens; at high or auto detail, without its pixel size,
/// we count a 1024×1024 image (85 + 4 tiles × 170).
pub const OPENAI_IMAGE_LOW: usize = 85;
pub const OPENAI_IMAGE_DEFAULT: usize = 765;
/// Anthropic: about width × height / 750, and images are scaled to at most ~1.15 megapixels.
pub const ANTHROPIC_IMAGE_DEFAULT: usize = 1600;

/// A message's tokens, broken down: `overhead` is the framing, role and name.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageTokens {
    pub total: u32,
    pub overhead: u32,
    pub by_part: [u32; PartKind::ALL.len()],
}

impl MessageTokens {
    pub fn part(&self, kind: PartKind) -> u32 {
        self.by_part[kind as usize]
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "ChatTokenCount"))]
pub struct ChatCount {
    pub total: usize,
    pub messages: Vec<u32>,
    pub tools: usize,
    pub reply_priming: usize,
}

pub fn count_message(encoding: Encoding, message: &Message) -> MessageTokens {
    let mut tokens =
        MessageTokens { overhead: saturate(message_overhead(encoding, message)), ..MessageTokens::default() };
    for part in &message.content.parts {
        let count = saturate(count_part(encoding, part, message.source));
        let slot = &mut tokens.by_part[part.kind() as usize];
        *slot = slot.saturating_add(count);
    }
    tokens.total = tokens.by_part.iter().fold(tokens.overhead, |sum, n| sum.saturating_add(*n));
    tokens
}

/// The framing of a message: 3 tokens, its role, and its name (1 more) if it has one.
pub fn message_overhead(encoding: Encoding, message: &Message) -> usize {
    let mut overhead = TOKENS_PER_MESSAGE + encoding.count(message.role.as_str());
    if let Some(name) = &message.name {
        overhead += encoding.count(name) + TOKENS_PER_NAME;
    }
    overhead
}

/// The tokens of one part, as `count_message` counts it.
pub fn count_part(encoding: Encoding, part: &Part, source: Format) -> usize {
    match part {
        Part::Text { text, .. } => encoding.count(text),
        Part::Image { detail, .. } => match (source, detail.as_deref()) {
            (_, Some("low")) => OPENAI_IMAGE_LOW,
            (Format::Anthropic, _) => ANTHROPIC_IMAGE_DEFAULT,
            (Format::OpenAi, _) => OPENAI_IMAGE_DEFAULT,
        },
        // Call ids are not shown to the model; the name and the arguments are.
        Part::ToolCall(call) => {
            TOKENS_PER_TOOL_CALL + encoding.count(&call.name) + encoding.count(&call.input.to_text())
        }
        Part::ToolResult(ToolResult { content, .. }) => {
            content.parts.iter().map(|inner| count_part(encoding, inner, source)).sum()
        }
        Part::Thinking { thinking, .. } => encoding.count(thinking),
        Part::RedactedThinking { data, .. } => encoding.count(data),
        Part::Other(value) => other_part_tokens(encoding, value),
    }
}

/// Parts of unknown type count as what they say: their text fields, or their JSON.
fn other_part_tokens(encoding: Encoding, value: &Value) -> usize {
    for key in ["refusal", "text"] {
        if let Some(Value::String(text)) = value.get(key) {
            return encoding.count(text);
        }
    }
    encoding.count(&value.to_string())
}

fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A whole prompt: every message, the tool definitions, and the reply priming.
pub fn count_messages(encoding: Encoding, messages: &[Message], tools: Option<&Value>) -> Result<ChatCount> {
    let per_message: Vec<u32> = messages.iter().map(|m| count_message(encoding, m).total).collect();
    let tools = match tools {
        Some(tools) => count_tools(encoding, tools)?,
        None => 0,
    };
    let total = per_message.iter().map(|n| *n as usize).sum::<usize>() + tools + REPLY_PRIMING;
    Ok(ChatCount { total, messages: per_message, tools, reply_priming: REPLY_PRIMING })
}

struct ToolConstants {
    func_init: isize,
    prop_init: isize,
    prop_key: isize,
    enum_init: isize,
    enum_item: isize,
    func_end: isize,
}

fn tool_constants(encoding: Encoding) -> ToolConstants {
    match encoding {
        // gpt-3.5-turbo and gpt-4 open each function with 10 tokens; gpt-4o and later with 7.
        Encoding::Cl100kBase => {
            ToolConstants { func_init: 10, prop_init: 3, prop_key: 3, enum_init: -3, enum_item: 3, func_end: 12 }
        }
        Encoding::O200kBase | Encoding::Estimate => {
            ToolConstants { func_init: 7, prop_init: 3, prop_key: 3, enum_init: -3, enum_item: 3, func_end: 12 }
        }
    }
}

/// Tool definitions, by the cookbook's rules: each function costs `func_init` plus
/// `name:description`; each top-level property `prop_key` plus `name:type:description`; enums
/// their items. Accepts OpenAI's `{type: "function", function: {…}}` and Anthropic's
/// `{name, description, input_schema}`.
pub fn count_tools(encoding: Encoding, tools: &Value) -> Result<usize> {
    let Value::Array(tools) = tools else {
        return Err(Error::invalid_argument(format!(
            "`tools` must be an array of tool definitions, got {}",
            crate::message::json::type_name(tools)
        )));
    };
    if tools.is_empty() {
        return Ok(0);
    }
    let c = tool_constants(encoding);
    let count = |text: &str| encoding.count(text) as isize;
    let mut total: isize = 0;
    for (i, tool) in tools.iter().enumerate() {
        let (name, description, parameters) = match (tool.get("function"), tool.get("input_schema")) {
            (Some(function), _) => (function.get("name"), function.get("description"), function.get("parameters")),
            (None, Some(schema)) => (tool.get("name"), tool.get("description"), Some(schema)),
            (None, None) => (tool.get("name"), tool.get("description"), tool.get("parameters")),
        };
        let Some(Value::String(name)) = name else {
            return Err(Error::invalid_argument(format!("tools[{i}] has no function name")));
        };
        total += c.func_init;
        total += count(&format!("{name}:{}", trim_period(as_text(description))));
        let properties = parameters.and_then(|p| p.get("properties")).and_then(Value::as_object);
        if let Some(properties) = properties.filter(|p| !p.is_empty()) {
            total += c.prop_init;
            for (key, property) in properties {
                total += c.prop_key;
                if let Some(Value::Array(items)) = property.get("enum") {
                    total += c.enum_init;
                    for item in items {
                        total += c.enum_item;
                        total += count(&as_text(Some(item)));
                    }
                }
                let kind = as_text(property.get("type"));
                let description = as_text(property.get("description"));
                total += count(&format!("{key}:{kind}:{}", trim_period(description)));
            }
        }
    }
    total += c.func_end;
    Ok(total.max(0) as usize)
}

fn as_text(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn trim_period(text: String) -> String {
    match text.strip_suffix('.') {
        Some(trimmed) => trimmed.to_string(),
        None => text,
    }
}
