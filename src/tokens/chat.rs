//! OpenAI's published chat rules (openai-cookbook, "How to count tokens with tiktoken"):
//! 3 tokens a message, the encoded value of each field, 1 more for a `name`, 3 to prime the
//! reply; a legacy `function_call` as the API reported it billed. Where OpenAI publishes nothing
//! (how a tool call is framed), the rule used is stated next to the code.

use std::collections::HashMap;

use serde_json::Value;

use super::anchor::{AnchoredCount, CountBasis};
use super::images::{base64_image_size, ImageError, ImageRule};
use super::tools::{openai_tool_tokens, ToolList};
use super::Encoding;
use crate::error::Result;
use crate::message::{Format, ImageSource, Message, Part, PartKind, Role, ToolResult};

pub const TOKENS_PER_MESSAGE: usize = 3;
pub const TOKENS_PER_NAME: usize = 1;
pub const REPLY_PRIMING: usize = 3;
/// Not published: the framing around one tool call, besides its name and arguments.
pub const TOKENS_PER_TOOL_CALL: usize = 3;
/// A legacy `function_call` on an assistant message: its name, its arguments and 3 tokens
/// (API-reported, hmarr/openai-chat-tokens: 26 and 25 prompt tokens for its two examples).
pub const TOKENS_PER_FUNCTION_CALL: usize = 3;

/// A message's tokens, broken down: `overhead` is the framing, role, name and any legacy
/// `function_call` (message-level fields).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MessageTokens {
    pub total: u32,
    pub overhead: u32,
    pub by_part: [u32; PartKind::ALL.len()],
    /// Some part was counted by an estimate: an image of unknown size (a URL) or unreadable data
    /// at the stated default, or a part with no text of its own as its JSON.
    pub estimated: bool,
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
    /// Some part of the count is an estimate (see `RequestCount::estimates` for why).
    pub estimate: bool,
    /// What `total` is: exact, estimated, or (a history's count after usage was recorded)
    /// anchored to the bill, when `total` is `anchored.tokens` rather than the sum of `messages`.
    pub basis: CountBasis,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub anchored: Option<AnchoredCount>,
}

/// How images are counted: the rule (by default, per message: gpt-4o's for OpenAI messages,
/// Anthropic's for Anthropic ones) and the pixel sizes of URL images, when the caller knows them.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageCounting<'a> {
    pub rule: Option<ImageRule>,
    pub sizes: Option<&'a HashMap<String, (u32, u32)>>,
}

/// A part counted by an estimate: where it is, relative to its message, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CountNote {
    pub path: String,
    pub why: Estimated,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Estimated {
    /// An image given by a URL whose pixel size the caller did not give: at the default size.
    ImageSize,
    /// An image whose data cannot be read: at the default size.
    Unreadable(ImageError),
    /// A part with no text of its own (audio, a file, a hosted tool's call) is billed by the
    /// provider's own rule, which it does not reveal: counted as its JSON.
    AsJson,
    /// A text holding an unbroken run the tokenizer could not split exactly (see
    /// `bpe::merge::Windows`): counted at an upper bound.
    UpperBound,
}

pub fn count_message(encoding: Encoding, message: &Message) -> MessageTokens {
    count_message_with(encoding, message, ImageCounting::default(), &mut Vec::new())
}

/// `count_message` with the image rule and sizes given, noting every image counted at a default.
pub fn count_message_with(
    encoding: Encoding,
    message: &Message,
    images: ImageCounting,
    notes: &mut Vec<CountNote>,
) -> MessageTokens {
    let mut tokens =
        MessageTokens { overhead: saturate(message_overhead(encoding, message)), ..MessageTokens::default() };
    let noted = notes.len();
    for (i, part) in message.content.parts.iter().enumerate() {
        let path = || format!("content[{i}]");
        let count = saturate(part_tokens(
            encoding,
            part,
            message.source,
            images,
            &mut Located { notes: &mut *notes, path: &path },
        ));
        let slot = &mut tokens.by_part[part.kind() as usize];
        *slot = slot.saturating_add(count);
    }
    tokens.total = tokens.by_part.iter().fold(tokens.overhead, |sum, n| sum.saturating_add(*n));
    tokens.estimated = notes.len() > noted;
    tokens
}

/// The framing of a message: 3 tokens, its role, its name (1 more) if it has one, and a legacy
/// `function_call` (name, arguments and 3) if it carries one.
pub fn message_overhead(encoding: Encoding, message: &Message) -> usize {
    let mut overhead = TOKENS_PER_MESSAGE + encoding.count(message.role.as_str());
    if let Some(name) = &message.name {
        overhead += encoding.count(name) + TOKENS_PER_NAME;
    }
    if message.source == Format::OpenAi {
        if let Some(call) = message.extra.get("function_call").filter(|c| !c.is_null()) {
            overhead += function_call_tokens(encoding, call);
        }
    }
    overhead
}

/// A legacy `{name, arguments}` call; anything else it holds is counted as its JSON, never ignored.
fn function_call_tokens(encoding: Encoding, call: &Value) -> usize {
    let text = |key: &str| match call.get(key) {
        Some(Value::String(text)) => encoding.count(text),
        None | Some(Value::Null) => 0,
        Some(other) => encoding.count(&crate::util::json_text::value_text(other)),
    };
    match call {
        Value::Object(fields) => {
            let rest: usize = fields
                .iter()
                .filter(|(k, _)| !matches!(k.as_str(), "name" | "arguments"))
                .map(|(_, v)| encoding.count(&crate::util::json_text::value_text(v)))
                .sum();
            TOKENS_PER_FUNCTION_CALL + text("name") + text("arguments") + rest
        }
        other => TOKENS_PER_FUNCTION_CALL + encoding.count(&crate::util::json_text::value_text(other)),
    }
}

/// The tokens of one part, as `count_message` counts it.
pub fn count_part(encoding: Encoding, part: &Part, source: Format) -> usize {
    let mut notes = Vec::new();
    part_tokens(
        encoding,
        part,
        source,
        ImageCounting::default(),
        &mut Located { notes: &mut notes, path: &|| String::new() },
    )
}

/// The notes of one message, and the path of the part being counted (built only when needed).
struct Located<'n, 'p> {
    notes: &'n mut Vec<CountNote>,
    path: &'p dyn Fn() -> String,
}

/// `text`'s tokens, noting an upper bound (a run the tokenizer could not split exactly).
fn text_tokens(encoding: Encoding, text: &str, at: &mut Located) -> usize {
    let (n, upper_bound) = encoding.count_bounded(text);
    if upper_bound {
        at.notes.push(CountNote { path: (at.path)(), why: Estimated::UpperBound });
    }
    n
}

fn part_tokens(encoding: Encoding, part: &Part, source: Format, images: ImageCounting, at: &mut Located) -> usize {
    match part {
        Part::Text { text, .. } => text_tokens(encoding, text, at),
        Part::Image { source: image, detail, .. } => image_tokens(image, detail.as_deref(), source, images, at),
        // Call ids are not shown to the model; the name and the arguments are.
        Part::ToolCall(call) => {
            TOKENS_PER_TOOL_CALL + encoding.count(&call.name) + text_tokens(encoding, &call.input.to_text(), at)
        }
        Part::ToolResult(ToolResult { content, .. }) => {
            let mut sum = 0;
            for (j, inner) in content.parts.iter().enumerate() {
                let path = || format!("{}.content[{j}]", (at.path)());
                sum += part_tokens(encoding, inner, source, images, &mut Located { notes: at.notes, path: &path });
            }
            sum
        }
        Part::Thinking { thinking, .. } => text_tokens(encoding, thinking, at),
        Part::RedactedThinking { data, .. } => text_tokens(encoding, data, at),
        // Anthropic images from the Files API: an image of unknown size.
        Part::Other(value) if value.get("type").and_then(Value::as_str) == Some("image") => {
            at.notes.push(CountNote { path: (at.path)(), why: Estimated::ImageSize });
            images.rule.unwrap_or(ImageRule::Anthropic).tokens(None, None)
        }
        Part::Other(value) => other_part_tokens(encoding, value).unwrap_or_else(|| {
            at.notes.push(CountNote { path: (at.path)(), why: Estimated::AsJson });
            encoding.count(&crate::util::json_text::value_text(value))
        }),
    }
}

fn image_tokens(
    image: &ImageSource,
    detail: Option<&str>,
    source: Format,
    images: ImageCounting,
    at: &mut Located,
) -> usize {
    let rule = images.rule.unwrap_or(match source {
        Format::Anthropic => ImageRule::Anthropic,
        // An AI SDK message may go to any provider: counted as OpenAI counts, like the rest.
        Format::OpenAi | Format::Responses | Format::AiSdk => ImageRule::openai(None).0,
    });
    if !rule.needs_size(detail) {
        return rule.tokens(None, detail);
    }
    let size = match (image.inline_data(), image) {
        (Some(data), _) => base64_image_size(data).map_err(Some),
        (None, ImageSource::Url(url)) => images.sizes.and_then(|sizes| sizes.get(url).copied()).ok_or(None),
        (None, ImageSource::Base64 { .. }) => Err(None),
    };
    match size {
        Ok(size) => rule.tokens(Some(size), detail),
        Err(unreadable) => {
            let why = unreadable.map_or(Estimated::ImageSize, Estimated::Unreadable);
            at.notes.push(CountNote { path: (at.path)(), why });
            rule.tokens(None, detail)
        }
    }
}

/// Parts of unknown type count as what they say: their text fields (`None` if they have none).
fn other_part_tokens(encoding: Encoding, value: &Value) -> Option<usize> {
    ["refusal", "text"].iter().find_map(|key| value.get(key).and_then(Value::as_str)).map(|text| encoding.count(text))
}

pub(crate) fn saturate(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// A whole prompt: every message (an Anthropic message by Claude's rule, `claude::billed`), the
/// tool definitions (OpenAI's rendering), the reply priming.
pub fn count_messages(encoding: Encoding, messages: &[Message], tools: Option<&Value>) -> Result<ChatCount> {
    let mut notes = Vec::new();
    let per_message: Vec<u32> = messages
        .iter()
        .map(|m| {
            let counted = count_message_with(encoding, m, ImageCounting::default(), &mut notes);
            match m.source {
                Format::Anthropic => super::claude::billed(encoding, m, &counted),
                _ => counted.total,
            }
        })
        .collect();
    let tools = match tools {
        Some(tools) => {
            let mut list = ToolList::default();
            ToolList::read(tools, "tools", &mut list)?;
            openai_tool_tokens(encoding, &list, first_system_text(messages).as_deref())
        }
        None => Default::default(),
    };
    let total = per_message.iter().map(|n| *n as usize).sum::<usize>() + tools.tokens + REPLY_PRIMING;
    let estimate = !notes.is_empty() || tools.estimated || messages.iter().any(|m| m.source == Format::Anthropic);
    Ok(ChatCount {
        total,
        messages: per_message,
        tools: tools.tokens,
        reply_priming: REPLY_PRIMING,
        estimate,
        basis: CountBasis::of(estimate),
        anchored: None,
    })
}

/// The text of the first system message: OpenAI appends the tool namespace to it.
pub(crate) fn first_system_text(messages: &[Message]) -> Option<String> {
    messages.iter().find(|m| m.role == Role::System).map(|m| m.content.joined_text())
}

/// Tool definitions as OpenAI bills them on their own (no system message in the request).
pub fn count_tools(encoding: Encoding, tools: &Value) -> Result<usize> {
    let mut list = ToolList::default();
    ToolList::read(tools, "tools", &mut list)?;
    Ok(openai_tool_tokens(encoding, &list, None).tokens)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::parse;
    use serde_json::json;

    #[test]
    fn a_legacy_function_call_is_counted_as_the_api_billed_it() {
        // hmarr/openai-chat-tokens: 26 prompt tokens (gpt-3.5-turbo, cl100k_base).
        let messages = parse(
            json!([{"role": "assistant", "content": "", "function_call": {"name": "do_stuff", "arguments": "{\"foo\": \"bar\", \"baz\": 1.5}"}}]),
            Format::OpenAi,
        )
        .unwrap();
        assert_eq!(count_messages(Encoding::Cl100kBase, &messages, None).unwrap().total, 26);
        let counted = count_message(Encoding::Cl100kBase, &messages[0]);
        assert_eq!(counted.overhead as usize, message_overhead(Encoding::Cl100kBase, &messages[0]));
        assert_eq!(counted.total, 23);
    }

    #[test]
    fn odd_function_calls_are_counted_not_ignored() {
        for call in [json!("do_stuff"), json!({"name": "f", "arguments": {"a": 1}}), json!({"name": "f", "extra": "x"})]
        {
            let message =
                parse(json!([{"role": "assistant", "content": null, "function_call": call}]), Format::OpenAi).unwrap();
            assert!(count_message(Encoding::O200kBase, &message[0]).total > 7);
        }
    }

    #[test]
    fn images_are_counted_by_their_size_or_noted() {
        // A 1x1 PNG: one tile on gpt-4o, 1 token on Claude.
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let openai = parse(
            json!([{"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{png}")}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "high"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/b.png", "detail": "low"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,QUJDRA=="}}
            ]}]),
            Format::OpenAi,
        )
        .unwrap();
        let mut notes = Vec::new();
        let sizes: HashMap<String, (u32, u32)> = [("https://example.com/a.png".to_string(), (2048, 4096))].into();
        let counted = count_message_with(
            Encoding::O200kBase,
            &openai[0],
            ImageCounting { rule: None, sizes: Some(&sizes) },
            &mut notes,
        );
        assert_eq!(counted.part(PartKind::Image), 255 + 1105 + 85 + 765);
        assert_eq!(
            notes,
            [CountNote { path: "content[3]".into(), why: Estimated::Unreadable(ImageError::Unrecognised) }]
        );
        assert!(counted.estimated);
        let without_sizes = count_message(Encoding::O200kBase, &openai[0]);
        assert_eq!(without_sizes.part(PartKind::Image), 255 + 765 + 85 + 765);

        let claude = parse(
            json!([{"role": "user", "content": [
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}},
                {"type": "image", "source": {"type": "file", "file_id": "file_1"}}
            ]}]),
            Format::Anthropic,
        )
        .unwrap();
        let mut notes = Vec::new();
        let counted = count_message_with(Encoding::O200kBase, &claude[0], ImageCounting::default(), &mut notes);
        assert_eq!(counted.part(PartKind::Image), 1);
        assert_eq!(counted.part(PartKind::Other), 1600);
        assert_eq!(notes, [CountNote { path: "content[1]".into(), why: Estimated::ImageSize }]);
    }

    #[test]
    fn a_count_adds_up_and_is_exact_without_images() {
        let messages = parse(json!([{"role": "user", "name": "ann", "content": "hello"}]), Format::OpenAi).unwrap();
        let counted = count_message(Encoding::O200kBase, &messages[0]);
        assert!(!counted.estimated);
        assert_eq!(counted.total, counted.overhead + counted.by_part.iter().sum::<u32>());
        let count = count_messages(Encoding::O200kBase, &messages, None).unwrap();
        assert!(!count.estimate);
    }
}
