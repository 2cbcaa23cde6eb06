//! Provider cache hints. Anthropic caches a request's prefix only where a `cache_control`
//! breakpoint marks it (at most 4 a request, tools → system → messages), and looks back only about
//! 20 content blocks from a breakpoint for an earlier entry. A build marks the end of the system
//! prompt and of the summary section (they survive compaction events), the last message (what
//! the next call reads back), and, when more blocks than the lookback were appended since the
//! last call, where that call ended. The AI SDK carries the same marks as Anthropic provider
//! options. OpenAI caches prefixes by itself; `prompt_cache_key` keeps a session's calls on one
//! cache. Hints never change what is sent, only how long the provider keeps it.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::message::Format;

/// Anthropic's lookback from a breakpoint, in content blocks, less a margin.
const LOOKBACK_BLOCKS: usize = 18;
/// Anthropic's limit of breakpoints in a request.
pub const MAX_BREAKPOINTS: u8 = 4;

/// How long the provider keeps an entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum CacheTtl {
    /// Five minutes, refreshed by every hit; written at 1.25× the input price.
    #[default]
    #[serde(rename = "5m")]
    FiveMinutes,
    /// An hour; written at 2×.
    #[serde(rename = "1h")]
    OneHour,
}

/// `build({ cache })`: the provider cache hints a build emits (on by default; `null`: none).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "CacheOptions", optional_fields))]
pub struct CacheOptions {
    /// How long Anthropic keeps the entries (`"5m"`, the default, or `"1h"`).
    pub ttl: Option<CacheTtl>,
    /// At most this many breakpoints (1 to 4; default 4): leave room for your own on tools.
    pub max_breakpoints: Option<u8>,
}

impl CacheOptions {
    pub fn validate(&self) -> Result<()> {
        match self.max_breakpoints {
            Some(n) if !(1..=MAX_BREAKPOINTS).contains(&n) => Err(Error::invalid_argument(format!(
                "cache.maxBreakpoints must be between 1 and {MAX_BREAKPOINTS}, got {n}"
            ))),
            _ => Ok(()),
        }
    }
}

/// Where a build puts its breakpoints: a content block of the system prompt, and of messages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Breakpoints {
    pub system: Option<usize>,
    /// (request message, content block), in request order.
    pub messages: Vec<(usize, usize)>,
}

impl Breakpoints {
    pub fn is_empty(&self) -> bool {
        self.system.is_none() && self.messages.is_empty()
    }
}

/// Where the marks go in a request of `messages` (with Anthropic's `system`): `stable_end` is the
/// last request message of the part that survives compaction events (pinned task, summary), and
/// `previous_end` the last one the previous build sent.
pub fn place(
    format: Format,
    system: Option<&Value>,
    messages: &[&Value],
    stable_end: Option<usize>,
    previous_end: Option<usize>,
    max: u8,
) -> Breakpoints {
    let mut marker =
        Marker { points: Breakpoints::default(), left: max.min(MAX_BREAKPOINTS) as usize, messages, format };
    if !matches!(format, Format::Anthropic | Format::AiSdk) {
        return marker.points;
    }
    // The last message first: without it the next call reads nothing back.
    if let Some(last) = messages.len().checked_sub(1) {
        marker.mark(last);
    }
    // The system prompt (Anthropic's top-level one; the AI SDK's leading system messages).
    match format {
        Format::Anthropic => {
            if let Some(block) = system.and_then(system_markable).filter(|_| marker.left > 0) {
                marker.points.system = Some(block);
                marker.left -= 1;
            }
        }
        _ => {
            let leading = messages.iter().take_while(|m| role(m) == Some("system")).count();
            if let Some(at) = leading.checked_sub(1) {
                marker.mark(at);
            }
        }
    }
    if let Some(at) = stable_end {
        marker.mark(at);
    }
    // Past the lookback: mark where the previous call ended, which the provider holds.
    if let Some(at) = previous_end {
        let after: usize = messages.iter().skip(at + 1).map(|m| blocks(m)).sum();
        if after > LOOKBACK_BLOCKS {
            marker.mark(at);
        }
    }
    let mut points = marker.points;
    points.messages.sort_unstable();
    points
}

/// Breakpoints placed one by one, within the cap.
struct Marker<'a> {
    points: Breakpoints,
    left: usize,
    messages: &'a [&'a Value],
    format: Format,
}

impl Marker<'_> {
    fn mark(&mut self, at: usize) {
        if self.left == 0 || self.points.messages.iter().any(|(m, _)| *m == at) {
            return;
        }
        if let Some(block) = self.messages.get(at).and_then(|m| last_markable(m, self.format)) {
            self.points.messages.push((at, block));
            self.left -= 1;
        }
    }
}

/// Puts the marks on a request: `system` (Anthropic's, when given) and its messages.
pub fn apply(points: &Breakpoints, format: Format, ttl: CacheTtl, system: Option<&mut Value>, messages: &mut [Value]) {
    if let (Some(block), Some(system)) = (points.system, system) {
        mark_system(system, block, ttl);
    }
    for &(at, block) in &points.messages {
        if let Some(message) = messages.get_mut(at) {
            mark_message(message, block, format, ttl);
        }
    }
}

/// The mark on message `message` at `block`, as a copy (what a frozen request object gets).
pub fn marked(message: &Value, block: usize, format: Format, ttl: CacheTtl) -> Value {
    let mut message = message.clone();
    mark_message(&mut message, block, format, ttl);
    message
}

/// The system prompt with its mark, as a copy.
pub fn marked_system(system: &Value, block: usize, ttl: CacheTtl) -> Value {
    let mut system = system.clone();
    mark_system(&mut system, block, ttl);
    system
}

fn cache_control(ttl: CacheTtl) -> Value {
    let mut control = Map::new();
    control.insert("type".into(), "ephemeral".into());
    if ttl == CacheTtl::OneHour {
        control.insert("ttl".into(), "1h".into());
    }
    Value::Object(control)
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// Content blocks of a message (a string is one).
fn blocks(message: &Value) -> usize {
    match message.get("content") {
        Some(Value::Array(list)) => list.len(),
        Some(Value::String(_)) => 1,
        _ => 0,
    }
}

/// A block that may carry `cache_control`: not thinking, not an empty text.
fn markable(block: &Value) -> bool {
    match block.get("type").and_then(Value::as_str) {
        Some("thinking" | "redacted_thinking") => false,
        Some("text") => block.get("text").and_then(Value::as_str).is_some_and(|t| !t.is_empty()),
        _ => true,
    }
}

/// The last block of a message that may carry a mark.
fn last_markable(message: &Value, format: Format) -> Option<usize> {
    match (format, message.get("content")) {
        (Format::AiSdk, Some(Value::Array(parts))) => (!parts.is_empty()).then(|| parts.len() - 1),
        (Format::AiSdk, Some(Value::String(text))) => (!text.is_empty()).then_some(0),
        (_, Some(Value::Array(list))) => list.iter().rposition(markable),
        (_, Some(Value::String(text))) => (!text.is_empty()).then_some(0),
        _ => None,
    }
}

fn system_markable(system: &Value) -> Option<usize> {
    match system {
        Value::String(text) => (!text.is_empty()).then_some(0),
        Value::Array(list) => list.iter().rposition(markable),
        _ => None,
    }
}

fn mark_system(system: &mut Value, block: usize, ttl: CacheTtl) {
    if let Value::String(text) = system {
        let mut only = Map::new();
        only.insert("type".into(), "text".into());
        only.insert("text".into(), Value::String(std::mem::take(text)));
        *system = Value::Array(vec![Value::Object(only)]);
    }
    if let Some(Value::Object(target)) = system.as_array_mut().and_then(|list| list.get_mut(block)) {
        target.insert("cache_control".into(), cache_control(ttl));
    }
}

fn mark_message(message: &mut Value, block: usize, format: Format, ttl: CacheTtl) {
    let Value::Object(fields) = message else { return };
    if format == Format::AiSdk {
        // The AI SDK's Anthropic provider reads a message's mark from its provider options.
        let options = fields.entry("providerOptions").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(options) = options {
            let anthropic = options.entry("anthropic").or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(anthropic) = anthropic {
                anthropic.insert("cacheControl".into(), cache_control(ttl));
            }
        }
        return;
    }
    if let Some(Value::String(text)) = fields.get_mut("content") {
        let mut only = Map::new();
        only.insert("type".into(), "text".into());
        only.insert("text".into(), Value::String(std::mem::take(text)));
        fields.insert("content".into(), Value::Array(vec![Value::Object(only)]));
    }
    if let Some(Value::Object(target)) =
        fields.get_mut("content").and_then(Value::as_array_mut).and_then(|l| l.get_mut(block))
    {
        target.insert("cache_control".into(), cache_control(ttl));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn refs(list: &[Value]) -> Vec<&Value> {
        list.iter().collect()
    }

    #[test]
    fn anthropic_marks_the_system_the_stable_part_and_the_last_message() {
        let system = json!("Be brief.");
        let messages = vec![
            json!({"role": "user", "content": "the task"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "summary"}]}),
            json!({"role": "user", "content": [{"type": "text", "text": "next"}, {"type": "text", "text": ""}]}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "thinking", "thinking": "t", "signature": "s"}]}),
        ];
        let points = place(Format::Anthropic, Some(&system), &refs(&messages), Some(1), None, 4);
        assert_eq!(points.system, Some(0));
        // The last message's thinking block cannot carry a mark: the text before it does.
        assert_eq!(points.messages, vec![(1, 0), (3, 0)]);
        let mut system = system;
        let mut messages = messages;
        apply(&points, Format::Anthropic, CacheTtl::OneHour, Some(&mut system), &mut messages);
        assert_eq!(
            system,
            json!([{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral", "ttl": "1h"}}])
        );
        assert_eq!(messages[1]["content"][0]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
        assert_eq!(messages[3]["content"][0]["cache_control"], json!({"type": "ephemeral", "ttl": "1h"}));
        assert!(messages[3]["content"][1].get("cache_control").is_none());
    }

    #[test]
    fn a_wide_turn_past_the_lookback_marks_where_the_last_call_ended() {
        let results: Vec<Value> =
            (0..25).map(|i| json!({"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "x"})).collect();
        let messages = vec![
            json!({"role": "user", "content": "task"}),
            json!({"role": "assistant", "content": [{"type": "text", "text": "calling"}]}),
            json!({"role": "user", "content": results}),
        ];
        let points = place(Format::Anthropic, None, &refs(&messages), None, Some(1), 4);
        assert_eq!(points.messages, vec![(1, 0), (2, 24)]);
        // Within the lookback, no second mark.
        let points = place(Format::Anthropic, None, &refs(&messages[..2]), None, Some(0), 4);
        assert_eq!(points.messages, vec![(1, 0)]);
        // The cap holds.
        let points = place(Format::Anthropic, Some(&json!("s")), &refs(&messages), Some(0), Some(1), 2);
        assert_eq!((points.system, points.messages.len()), (Some(0), 1));
    }

    #[test]
    fn the_ai_sdk_carries_marks_as_anthropic_provider_options_and_openai_gets_none() {
        let messages = vec![
            json!({"role": "system", "content": "rules"}),
            json!({"role": "user", "content": [{"type": "text", "text": "hi"}], "providerOptions": {"openai": {"a": 1}}}),
        ];
        let points = place(Format::AiSdk, None, &refs(&messages), None, None, 4);
        assert_eq!(points.messages, vec![(0, 0), (1, 0)]);
        let mut messages = messages;
        apply(&points, Format::AiSdk, CacheTtl::FiveMinutes, None, &mut messages);
        assert_eq!(
            messages[1]["providerOptions"],
            json!({"openai": {"a": 1}, "anthropic": {"cacheControl": {"type": "ephemeral"}}})
        );
        assert!(place(Format::OpenAi, None, &refs(&messages), None, None, 4).is_empty());
    }
}
