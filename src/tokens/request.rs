//! One call for a whole request, counted as the provider bills it: system, messages, tool
//! definitions, forcing and reply priming, with the parts broken down and every estimate said.
//!
//! Counting accepts more than a history stores: OpenAI's legacy role `function` (a function's
//! result: `<|start|>{name}<|message|>{content}<|end|>`, the name in the role's place; 3 tokens,
//! the name and the content, as the API reported it) is counted here, while appending it to a
//! history is refused (it has no call id to pair with).

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{Map, Value};

use super::anchor::CountBasis;
use super::chat::{
    count_message_with, count_messages, count_part, saturate, ChatCount, CountNote, Estimated, ImageCounting,
    REPLY_PRIMING, TOKENS_PER_MESSAGE,
};
use super::images::ImageRule;
use super::tools::{anthropic_tool_prompt, anthropic_tool_tokens, openai_choice_tokens, openai_tool_tokens, ToolList};
use super::Encoding;
use crate::error::{Error, Result};
use crate::message::json::type_name;
use crate::message::{self, Format, Message, PartKind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestOptions {
    pub format: Format,
    /// The model the request is for (else the request's own `model`): picks the image rule and
    /// Anthropic's tool-use prompt.
    pub model: Option<String>,
    /// Pixel sizes (width, height) of images given by URL.
    pub image_sizes: HashMap<String, (u32, u32)>,
    /// Image data that cannot be read is an error rather than an estimate.
    pub strict_images: bool,
}

impl Default for RequestOptions {
    fn default() -> Self {
        RequestOptions { format: Format::OpenAi, model: None, image_sizes: HashMap::new(), strict_images: false }
    }
}

impl RequestOptions {
    /// Reads `{ format?, model?, imageSizes?: { [url]: { width, height } }, strictImages? }`.
    pub fn read(options: Value) -> Result<RequestOptions> {
        let mut map = match options {
            Value::Null => return Ok(RequestOptions::default()),
            Value::Object(map) => map,
            other => {
                return Err(Error::invalid_argument(format!("options must be an object, got {}", type_name(&other))))
            }
        };
        let mut take = |key: &str| map.remove(key).filter(|v| !v.is_null());
        let mut options = RequestOptions::default();
        match take("format") {
            Some(Value::String(name)) => options.format = Format::parse(&name)?,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "options.format must be a string, got {}",
                    type_name(&other)
                )))
            }
            None => {}
        }
        match take("model") {
            Some(Value::String(model)) => options.model = Some(model),
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "options.model must be a string, got {}",
                    type_name(&other)
                )))
            }
            None => {}
        }
        match take("strictImages") {
            Some(Value::Bool(strict)) => options.strict_images = strict,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "options.strictImages must be a boolean, got {}",
                    type_name(&other)
                )))
            }
            None => {}
        }
        match take("imageSizes") {
            Some(Value::Object(sizes)) => {
                for (url, size) in sizes {
                    let side = |key: &str| {
                        size.get(key)
                            .and_then(Value::as_u64)
                            .and_then(|n| u32::try_from(n).ok())
                            .filter(|n| *n > 0)
                            .ok_or_else(|| {
                                let got = size.get(key).map_or_else(|| "nothing".into(), crate::util::json_de::shown);
                                Error::invalid_argument(format!(
                                    "options.imageSizes[{url:?}].{key} must be a positive whole number of pixels, got {got}"
                                ))
                            })
                    };
                    let dimensions = (side("width")?, side("height")?);
                    options.image_sizes.insert(url, dimensions);
                }
            }
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "options.imageSizes must map image URLs to {{ width, height }}, got {}",
                    type_name(&other)
                )))
            }
            None => {}
        }
        match map.keys().next() {
            Some(key) => Err(Error::invalid_argument(format!("options has an unknown option `{key}`"))),
            None => Ok(options),
        }
    }
}

/// A request's tokens. `total = system + messages + tools + tool_choice + reply_priming`;
/// `per_message` follows the request's `messages` (its system and developer messages included,
/// which `system` counts, with a top-level `system`); `images` is the share of images in them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "RequestTokenCount"))]
pub struct RequestCount {
    pub total: usize,
    pub system: usize,
    pub messages: usize,
    pub per_message: Vec<u32>,
    pub tools: usize,
    pub tool_choice: usize,
    pub reply_priming: usize,
    pub images: usize,
    /// Some part is not exact; `estimates` says which and why.
    pub estimate: bool,
    pub estimates: Vec<String>,
    /// `exact` (every part by the provider's published rule) or `estimated`.
    pub basis: CountBasis,
}

/// Counts `request`: `{ messages, system?, tools?, tool_choice?, functions?, function_call?, model? }`
/// (other request fields are ignored), or a bare message list.
pub fn count_request(encoding: Encoding, request: Value, options: &RequestOptions) -> Result<RequestCount> {
    let mut request = match request {
        Value::Object(map) => map,
        Value::Array(messages) => Map::from_iter([("messages".to_string(), Value::Array(messages))]),
        other => {
            return Err(Error::invalid_argument(format!(
                "the request must be an object with `messages` (or a list of messages), got {}",
                type_name(&other)
            )))
        }
    };
    let model = options.model.clone().or_else(|| request.get("model").and_then(Value::as_str).map(str::to_string));
    let mut count = RequestCount { reply_priming: REPLY_PRIMING, ..RequestCount::default() };
    if options.format == Format::Responses {
        Counting { encoding, options, model: model.as_deref() }.responses(&mut request, &mut count)?;
        count.total = count.system + count.messages + count.tools + count.tool_choice + count.reply_priming;
        count.estimate = !count.estimates.is_empty();
        count.basis = CountBasis::of(count.estimate);
        return Ok(count);
    }
    let messages = match request.remove("messages") {
        Some(Value::Array(messages)) => messages,
        Some(other) => {
            return Err(Error::invalid_argument(format!("`messages` must be an array, got {}", type_name(&other))))
        }
        None => return Err(Error::invalid_argument("the request has no `messages`")),
    };
    let counting = Counting { encoding, options, model: model.as_deref() };
    match options.format {
        Format::OpenAi => counting.openai(&mut request, messages, &mut count)?,
        Format::Anthropic => counting.anthropic(&mut request, messages, &mut count)?,
        Format::Responses | Format::AiSdk => {
            return Err(Error::invalid_argument(format!(
                "countRequest reads Chat Completions, Anthropic and Responses request bodies; count {} lists with countMessages",
                options.format.as_str()
            )))
        }
    }
    count.total = count.system + count.messages + count.tools + count.tool_choice + count.reply_priming;
    count.estimate = !count.estimates.is_empty();
    count.basis = CountBasis::of(count.estimate);
    Ok(count)
}

/// `Tokenizer.countMessages`: a message list (OpenAI, legacy `function` messages included; or
/// Anthropic, an array or `{ system, messages }`) with optional tools, counted as one prompt.
pub fn count_message_list(
    encoding: Encoding,
    messages: Value,
    format: Format,
    tools: Option<Value>,
) -> Result<ChatCount> {
    match format {
        Format::OpenAi => {
            if !messages.is_array() {
                return Err(Error::invalid_argument(format!(
                    "expected an array of OpenAI messages, got {}",
                    type_name(&messages)
                )));
            }
            let mut request = Map::from_iter([("messages".to_string(), messages)]);
            if let Some(tools) = tools {
                request.insert("tools".into(), tools);
            }
            let count = count_request(encoding, Value::Object(request), &RequestOptions::default())?;
            Ok(ChatCount {
                total: count.total,
                messages: count.per_message,
                tools: count.tools,
                reply_priming: count.reply_priming,
                estimate: count.estimate,
                basis: count.basis,
                anchored: None,
            })
        }
        Format::Anthropic | Format::Responses | Format::AiSdk => {
            count_messages(encoding, &message::parse(messages, format)?, tools.as_ref())
        }
    }
}

/// A Responses tool definition in Chat's shape (function tools nest under `function`).
fn chat_tool(tool: &Value) -> Value {
    match tool.as_object() {
        Some(object)
            if object.get("type").and_then(Value::as_str) == Some("function") && !object.contains_key("function") =>
        {
            let mut function = object.clone();
            function.remove("type");
            function.remove("strict");
            crate::message::json_object([("type", "function".into()), ("function", Value::Object(function))])
        }
        _ => tool.clone(),
    }
}

struct Counting<'a> {
    encoding: Encoding,
    options: &'a RequestOptions,
    model: Option<&'a str>,
}

impl Counting<'_> {
    fn openai(&self, request: &mut Map<String, Value>, messages: Vec<Value>, count: &mut RequestCount) -> Result<()> {
        let (rule, known) = ImageRule::openai(self.model);
        let images = ImageCounting { rule: Some(rule), sizes: Some(&self.options.image_sizes) };
        let mut first_system: Option<String> = None;
        if let Some(system) = request.remove("system").filter(|s| !s.is_null()) {
            let message = message::parse_openai_message(
                Value::Object(Map::from_iter([
                    ("role".to_string(), Value::from("system")),
                    ("content".to_string(), system),
                ])),
                0,
            )
            .map_err(|e| Error::invalid_argument(format!("`system`: {}", e.message)))?;
            first_system = Some(message.content.joined_text());
            count.system += self.message(&message, None, images, count)?;
        }
        for (i, value) in messages.into_iter().enumerate() {
            if value.get("role").and_then(Value::as_str) == Some("function") {
                let tokens = self.function_result(&value, i)?;
                count.per_message.push(saturate(tokens));
                count.messages += tokens;
                continue;
            }
            let message = message::parse_openai_message(value, i)?;
            let tokens = self.message(&message, Some(i), images, count)?;
            count.per_message.push(saturate(tokens));
            if message.role.is_instruction() {
                if first_system.is_none() && message.role == message::Role::System {
                    first_system = Some(message.content.joined_text());
                }
                count.system += tokens;
            } else {
                count.messages += tokens;
            }
        }
        if count.images > 0 && !known {
            count.estimates.push(format!(
                "images: model {:?} has no published image rule; counted by gpt-4o's",
                self.model.unwrap_or_default()
            ));
        }
        let mut tools = ToolList::default();
        if let Some(functions) = request.get("functions").filter(|f| !f.is_null()) {
            ToolList::read(functions, "functions", &mut tools)?;
        }
        if let Some(list) = request.get("tools").filter(|t| !t.is_null()) {
            ToolList::read(list, "tools", &mut tools)?;
        }
        let counted = openai_tool_tokens(self.encoding, &tools, first_system.as_deref());
        count.tools = counted.tokens;
        if counted.estimated {
            count.estimates.push("tools: tools other than functions are counted as their JSON".into());
        }
        count.tool_choice = openai_choice_tokens(
            self.encoding,
            request.get("tool_choice").filter(|c| !c.is_null()),
            request.get("function_call").filter(|c| !c.is_null()),
        )?;
        Ok(())
    }

    /// A Responses request: `instructions`, `input` (a string or items) and `tools`. OpenAI
    /// publishes no rule for it: items are counted by Chat's rules (a message item as a
    /// message; calls and outputs as Chat's tool calls and results), function tools as Chat
    /// renders them, and the count says it is an estimate.
    fn responses(&self, request: &mut Map<String, Value>, count: &mut RequestCount) -> Result<()> {
        count.estimates.push(
            "Responses: OpenAI publishes no counting rule for input items; counted by Chat Completions' rules".into(),
        );
        let (rule, _) = ImageRule::openai(self.model);
        let images = ImageCounting { rule: Some(rule), sizes: Some(&self.options.image_sizes) };
        let mut first_system: Option<String> = None;
        if let Some(instructions) = request.remove("instructions").filter(|s| !s.is_null()) {
            let Value::String(text) = instructions else {
                return Err(Error::invalid_argument(format!(
                    "`instructions` must be a string, got {}",
                    type_name(&instructions)
                )));
            };
            // As Chat's system message (its tools join it, as they join Chat's).
            let message = Message::new(message::Role::System, message::Content::text(text), Format::Responses);
            first_system = Some(message.content.joined_text());
            count.system += self.message(&message, None, images, count)?;
        }
        let items = match request.remove("input") {
            Some(Value::String(text)) => {
                vec![Message::new(message::Role::User, message::Content::text(text), Format::Responses)]
            }
            Some(list @ Value::Array(_)) => message::parse_responses(list)?,
            Some(other) => {
                return Err(Error::invalid_argument(format!(
                    "`input` must be a string or an array of items, got {}",
                    type_name(&other)
                )))
            }
            None => return Err(Error::invalid_argument("the Responses request has no `input`")),
        };
        let mut opaque = 0usize;
        for (i, item) in items.iter().enumerate() {
            let tokens = self.message(item, Some(i), images, count)?;
            count.per_message.push(saturate(tokens));
            opaque += usize::from(item.is_opaque());
            if item.role.is_instruction() && !item.is_compaction() {
                if first_system.is_none() && item.role == message::Role::System {
                    first_system = Some(item.content.joined_text());
                }
                count.system += tokens;
            } else {
                count.messages += tokens;
            }
        }
        if opaque > 0 {
            count.estimates.push(format!(
                "input: {opaque} opaque item(s) (reasoning, compaction, hosted tool calls) are billed for what they stand for, which they do not reveal; counted as their JSON"
            ));
        }
        // Responses' function tools are flat ({ type, name, description, parameters }): read as
        // Chat's ({ type, function: {…} }); other tools (hosted) as their JSON.
        if let Some(list) = request.get("tools").filter(|t| !t.is_null()) {
            let Value::Array(list) = list else {
                return Err(Error::invalid_argument(format!(
                    "`tools` must be an array of tool definitions, got {}",
                    type_name(list)
                )));
            };
            let nested: Vec<Value> = list.iter().map(chat_tool).collect();
            let nested = Value::Array(nested);
            let mut tools = ToolList::default();
            ToolList::read(&nested, "tools", &mut tools)?;
            let counted = openai_tool_tokens(self.encoding, &tools, first_system.as_deref());
            count.tools = counted.tokens;
            count
                .estimates
                .push("tools: rendered as Chat Completions renders function tools (not measured for Responses)".into());
            if counted.estimated {
                count.estimates.push("tools: tools other than functions are counted as their JSON".into());
            }
        }
        let choice = request.get("tool_choice").filter(|c| !c.is_null()).map(|choice| match choice {
            Value::Object(object) if object.get("type").and_then(Value::as_str) == Some("function") => {
                let name = object.get("name").cloned().unwrap_or_default();
                crate::message::json_object([
                    ("type", "function".into()),
                    ("function", crate::message::json_object([("name", name)])),
                ])
            }
            other => other.clone(),
        });
        count.tool_choice = openai_choice_tokens(self.encoding, choice.as_ref(), None)?;
        Ok(())
    }

    fn anthropic(
        &self,
        request: &mut Map<String, Value>,
        messages: Vec<Value>,
        count: &mut RequestCount,
    ) -> Result<()> {
        count.estimates.push(super::claude::estimate_note(self.model));
        let images = ImageCounting { rule: Some(ImageRule::Anthropic), sizes: Some(&self.options.image_sizes) };
        let mut input = Map::new();
        let has_system = request.get("system").is_some_and(|s| !s.is_null());
        if has_system {
            input.insert("system".into(), request.remove("system").unwrap_or_default());
        }
        input.insert("messages".into(), Value::Array(messages));
        let parsed = message::parse_anthropic(Value::Object(input))?;
        let family = self.model.and_then(super::claude::family);
        let unseen = family.map(|family| super::claude::earlier_thinking(&parsed, family)).unwrap_or_default();
        let mut unseen_thinking = 0;
        for (i, message) in parsed.iter().enumerate() {
            let index = if has_system { i.checked_sub(1) } else { Some(i) };
            let mut tokens = self.message(message, index, images, count)?;
            if unseen.get(i) == Some(&true) {
                let thinking: usize = message
                    .content
                    .parts
                    .iter()
                    .filter(|part| super::claude::is_thinking(part))
                    .map(|part| {
                        let rule = &super::claude::CLAUDE_RULE;
                        rule.per_thinking + rule.text(count_part(self.encoding, part, Format::Anthropic))
                    })
                    .sum();
                tokens -= thinking.min(tokens);
                unseen_thinking += thinking;
            }
            if index.is_some() {
                count.per_message.push(saturate(tokens));
            }
            if message.role.is_instruction() {
                count.system += tokens;
            } else {
                count.messages += tokens;
            }
        }
        if let (true, Some(family)) = (unseen_thinking > 0, family) {
            count.estimates.push(format!(
                "thinking: {unseen_thinking} tokens of thinking before the last user message are not counted \
                 ({} keeps only the current turn's thinking)",
                family.name
            ));
        }
        let choice = request.get("tool_choice").filter(|c| !c.is_null());
        if let Some(tools) = request.get("tools").filter(|t| !t.is_null()) {
            count.tools = anthropic_tool_tokens(self.encoding, tools, self.model, choice)?;
            if count.tools > 0 && !anthropic_tool_prompt(self.model, choice).1 {
                count.estimates.push(format!(
                    "tools: no published tool-use prompt size for model {:?}; counted Claude Sonnet 4.6's",
                    self.model.unwrap_or_default()
                ));
            }
        }
        Ok(())
    }

    /// One parsed message; its images' estimates go to `count.estimates` (or fail, if strict).
    fn message(
        &self,
        message: &Message,
        index: Option<usize>,
        images: ImageCounting,
        count: &mut RequestCount,
    ) -> Result<usize> {
        let mut notes = Vec::new();
        let tokens = count_message_with(self.encoding, message, images, &mut notes);
        count.images += tokens.part(PartKind::Image) as usize;
        for note in notes {
            self.note(note, index, count)?;
        }
        Ok(match message.source {
            Format::Anthropic => super::claude::billed(self.encoding, message, &tokens) as usize,
            _ => tokens.total as usize,
        })
    }

    fn note(&self, note: CountNote, index: Option<usize>, count: &mut RequestCount) -> Result<()> {
        let place = match index {
            Some(i) => format!("messages[{i}].{}", note.path),
            None => format!("system.{}", note.path),
        };
        match note.why {
            Estimated::Unreadable(problem) if self.options.strict_images => Err(match index {
                Some(i) => Error::invalid_message(i, &note.path, format!("image: {}", problem.describe())),
                None => Error::invalid_argument(format!("{place}: image: {}", problem.describe())),
            }),
            Estimated::Unreadable(problem) => {
                count.estimates.push(format!("{place}: image counted at the default size: {}", problem.describe()));
                Ok(())
            }
            Estimated::ImageSize => {
                count.estimates.push(format!(
                    "{place}: image counted at the default size: its pixel size is unknown (pass it in imageSizes)"
                ));
                Ok(())
            }
            Estimated::AsJson => {
                count.estimates.push(format!(
                    "{place}: a part with no text of its own (audio, a file, a hosted call) is billed by the provider's own rule; counted as its JSON"
                ));
                Ok(())
            }
            Estimated::UpperBound => {
                count.estimates.push(format!(
                    "{place}: an unbroken run the tokenizer could not split exactly is counted at an upper bound (a token a byte)"
                ));
                Ok(())
            }
        }
    }

    /// A legacy `{role: "function", name, content}` message: 3, the name (in the role's place) and the content.
    fn function_result(&self, value: &Value, index: usize) -> Result<usize> {
        let name = match value.get("name") {
            Some(Value::String(name)) if !name.is_empty() => name,
            _ => {
                return Err(Error::invalid_message(
                    index,
                    "name",
                    "a message of the legacy role \"function\" needs the function's `name`",
                ))
            }
        };
        let content = match value.get("content") {
            None | Some(Value::Null) => 0,
            Some(Value::String(text)) => self.encoding.count(text),
            Some(Value::Array(parts)) => parts
                .iter()
                .map(|part| match part.get("text") {
                    Some(Value::String(text)) => self.encoding.count(text),
                    _ => self.encoding.count(&crate::util::json_text::value_text(part)),
                })
                .sum(),
            Some(other) => {
                return Err(Error::invalid_message(
                    index,
                    "content",
                    format!("`content` must be a string, null or an array of parts, got {}", type_name(other)),
                ))
            }
        };
        Ok(TOKENS_PER_MESSAGE + self.encoding.count(name) + content)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn openai(request: Value) -> RequestCount {
        count_request(Encoding::Cl100kBase, request, &RequestOptions::default()).unwrap()
    }

    #[test]
    fn the_parts_add_up() {
        let count = openai(json!({
            "model": "gpt-3.5-turbo",
            "temperature": 0,
            "messages": [
                {"role": "system", "content": "Hello:"},
                {"role": "system", "content": "Hello"},
                {"role": "user", "content": "Hi there"}
            ],
            "functions": [{"name": "do_stuff", "parameters": {"type": "object", "properties": {}}},
                          {"name": "do_other_stuff", "parameters": {"type": "object", "properties": {}}}],
            "function_call": {"name": "do_stuff"}
        }));
        // hmarr/openai-chat-tokens, API-reported for gpt-3.5-turbo.
        assert_eq!(count.total, 55);
        assert_eq!(count.total, count.system + count.messages + count.tools + count.tool_choice + count.reply_priming);
        assert_eq!(count.per_message.iter().map(|n| *n as usize).sum::<usize>(), count.system + count.messages);
        assert!(!count.estimate, "{:?}", count.estimates);
        assert_eq!(count.basis, CountBasis::Exact);
    }

    #[test]
    fn function_messages_are_counted_and_need_a_name() {
        let count = openai(
            json!([{"role": "user", "content": "hello world"}, {"role": "function", "name": "do_stuff", "content": "{}"}]),
        );
        assert_eq!(count.total, 15);
        let error = count_request(
            Encoding::O200kBase,
            json!([{"role": "function", "content": "{}"}]),
            &RequestOptions::default(),
        )
        .unwrap_err();
        assert_eq!(error.index, Some(0));
        assert!(error.message.contains("name"), "{error}");
    }

    #[test]
    fn a_top_level_system_counts_as_the_first_system_message() {
        let with_key = openai(json!({"system": "Be brief.", "messages": [{"role": "user", "content": "hi"}]}));
        let in_list = openai(json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]));
        assert_eq!(with_key.total, in_list.total);
        assert_eq!(with_key.system, in_list.system);
        assert_eq!(with_key.per_message.len(), 1);
    }

    #[test]
    fn images_are_estimates_unless_sized_and_strict_mode_refuses_bad_data() {
        let request = json!({"model": "gpt-4o", "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
        ]}]});
        let loose = count_request(Encoding::O200kBase, request.clone(), &RequestOptions::default()).unwrap();
        assert_eq!(loose.images, 765 * 2);
        assert!(loose.estimate);
        assert_eq!(loose.estimates.len(), 2, "{:?}", loose.estimates);
        assert!(loose.estimates[0].starts_with("messages[0].content[0]"), "{:?}", loose.estimates);
        let mut options = RequestOptions { strict_images: true, ..RequestOptions::default() };
        options.image_sizes.insert("https://example.com/cat.png".into(), (512, 512));
        let error = count_request(Encoding::O200kBase, request, &options).unwrap_err();
        assert_eq!(error.path.as_deref(), Some("messages[0].content[1]"));
    }

    #[test]
    fn anthropic_requests_are_estimates_with_the_tool_prompt() {
        let request = json!({
            "model": "claude-3-5-sonnet-20241022",
            "system": "You are a scientist",
            "tools": [{"name": "get_weather", "description": "Get the weather", "input_schema": {"type": "object", "properties": {}}}],
            "messages": [{"role": "user", "content": "Hello, Claude"}]
        });
        let options = RequestOptions { format: Format::Anthropic, ..RequestOptions::default() };
        let count = count_request(Encoding::O200kBase, request, &options).unwrap();
        assert!(count.estimate);
        assert!(count.tools > 346);
        assert_eq!(count.per_message.len(), 1);
        assert!(count.system > 0);
        assert_eq!(count.total, count.system + count.messages + count.tools + count.reply_priming);
    }

    #[test]
    fn earlier_thinking_is_left_out_for_models_that_drop_it() {
        let request = json!({"messages": [
            {"role": "user", "content": "Are there infinitely many primes p with p mod 4 == 3?"},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "A nice number theory question; think step by step about Euclid's argument.", "signature": "c2ln"},
                {"type": "text", "text": "Yes, there are infinitely many."}
            ]},
            {"role": "user", "content": "Can you write a formal proof?"}
        ]});
        let count = |model: &str| {
            let options =
                RequestOptions { format: Format::Anthropic, model: Some(model.into()), ..RequestOptions::default() };
            count_request(Encoding::O200kBase, request.clone(), &options).unwrap()
        };
        let (opus, haiku) = (count("claude-opus-4-6"), count("claude-haiku-4-5"));
        let thinking = super::super::claude::CLAUDE_RULE.text(
            Encoding::O200kBase.count("A nice number theory question; think step by step about Euclid's argument."),
        );
        assert_eq!(opus.total - haiku.total, thinking);
        assert!(haiku.estimates.iter().any(|e| e.contains("current turn's thinking")), "{:?}", haiku.estimates);
        assert!(!opus.estimates.iter().any(|e| e.starts_with("thinking")), "{:?}", opus.estimates);
        assert_eq!(opus.basis, CountBasis::Estimated);
    }

    #[test]
    fn a_responses_request_counts_as_its_chat_twin_and_says_it_is_an_estimate() {
        let weather = json!({"type": "object", "properties": {"city": {"type": "string"}}});
        let responses = json!({
            "model": "gpt-4o",
            "instructions": "Be brief.",
            "input": [
                {"role": "user", "content": "Weather in Paris?"},
                {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "18C"}
            ],
            "tools": [{"type": "function", "name": "get_weather", "description": "Weather", "parameters": weather, "strict": true}],
            "tool_choice": {"type": "function", "name": "get_weather"}
        });
        let chat = json!({
            "model": "gpt-4o",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "18C"}
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": weather}}],
            "tool_choice": {"type": "function", "function": {"name": "get_weather"}}
        });
        let options = RequestOptions { format: Format::Responses, ..RequestOptions::default() };
        let r = count_request(Encoding::O200kBase, responses, &options).unwrap();
        let c = count_request(Encoding::O200kBase, chat, &RequestOptions::default()).unwrap();
        assert_eq!((r.system, r.tools, r.tool_choice), (c.system, c.tools, c.tool_choice));
        assert_eq!(r.total, c.total, "{r:?}\n{c:?}");
        assert!(r.estimate && !c.estimate);
        assert!(r.estimates.iter().any(|e| e.contains("no counting rule")), "{:?}", r.estimates);
        // A string input is one user message; a reasoning item is counted and said to be opaque.
        let short = count_request(Encoding::O200kBase, json!({"input": "hi"}), &options).unwrap();
        assert!(short.messages > 0 && short.per_message.len() == 1);
        let reasoning = json!({"input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}, {"role": "user", "content": "go"}]});
        let counted = count_request(Encoding::O200kBase, reasoning, &options).unwrap();
        assert!(counted.estimates.iter().any(|e| e.contains("opaque")), "{:?}", counted.estimates);
        assert!(count_request(Encoding::O200kBase, json!({"messages": []}), &options).is_err(), "no input");
    }

    #[test]
    fn options_are_read_and_typos_refused() {
        let options = RequestOptions::read(json!({
            "format": "anthropic", "model": "claude-sonnet-4-5", "strictImages": true,
            "imageSizes": {"https://x/a.png": {"width": 640, "height": 480}}
        }))
        .unwrap();
        assert_eq!(options.format, Format::Anthropic);
        assert_eq!(options.image_sizes["https://x/a.png"], (640, 480));
        assert!(options.strict_images);
        assert_eq!(RequestOptions::read(Value::Null).unwrap(), RequestOptions::default());
        for (bad, says) in [
            (json!({"fromat": "openai"}), "unknown option `fromat`"),
            (json!({"format": "gemini"}), "unknown format"),
            (json!({"imageSizes": {"u": {"width": 0, "height": 3}}}), "positive whole number"),
            (json!({"imageSizes": []}), "must map image URLs"),
            (json!({"strictImages": "yes"}), "must be a boolean"),
            (json!(3), "must be an object"),
        ] {
            let error = RequestOptions::read(bad).unwrap_err();
            assert!(error.message.contains(says), "{says}: {error}");
        }
    }

    #[test]
    fn bad_requests_are_typed_errors() {
        for (request, says) in [
            (json!("hello"), "must be an object"),
            (json!({"messages": {}}), "`messages` must be an array"),
            (json!({}), "no `messages`"),
            (json!({"messages": [], "tools": "x"}), "`tools` must be an array"),
            (json!({"messages": [], "tool_choice": "sometimes"}), "tool_choice"),
            (json!({"messages": [{"role": "robot", "content": "x"}]}), "unknown role"),
        ] {
            let error = count_request(Encoding::O200kBase, request, &RequestOptions::default()).unwrap_err();
            assert!(error.message.contains(says), "{says}: {error}");
        }
    }
}
