//! How Claude bills messages, as far as billed usage shows it. Claude's tokenizer is not public,
//! so an Anthropic message is counted with the history's encoding and this rule on top: its text
//! scaled, and fixed tokens per message, per tool-use block and per tool-result block (the
//! framing Claude's prompt template puts around them, which no message shows).
//!
//! Where the constants came from: the prompt growth between consecutive billed calls of real
//! Claude Code sessions (Claude Opus 4.6, its Claude Haiku 4.5 sub-agent), which is exactly the
//! appended messages (the system prompt and the tools cancel out). `bench/claude-fit.mjs`
//! refits them from the shared logs and prints every step's residual: the fit used the 10 steps
//! of one session's main conversation; on the 6 steps of two other conversations (one of them
//! Haiku's) the rule was off by a median of 3.3% per step (90th percentile 23%, on a step of 206
//! tokens) and by −2.4% on their sum. `docs/counting.md` says what the logs can and cannot
//! tell. To refit: `node bench/claude-fit.mjs` and copy the constants it prints here.
//!
//! What the logs cannot separate is fixed from outside them, and said so: every step appends
//! two messages, so the per-message framing cannot be told from the rest and is set to the 3
//! tokens of OpenAI's; every tool call in the logs is answered in the next message, so only the
//! sum of a tool-use block's and a tool-result block's framing is fitted, and a result is given
//! 30 of it (a larger measurement, on five sessions, put a result's framing at 20 to 40 tokens);
//! the logs' thinking blocks are too few and short to fit a constant for them, so they cost their
//! scaled text.

use serde_json::Value;

use super::chat::{count_part, MessageTokens, TOKENS_PER_TOOL_CALL};
use super::Encoding;
use crate::message::{Content, Format, Message, Part, PartKind, Role};

/// The constants of the rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClaudeRule {
    /// Billed tokens per token of text counted with o200k_base.
    pub text_scale: f64,
    pub per_message: usize,
    pub per_tool_use: usize,
    pub per_tool_result: usize,
    pub per_thinking: usize,
}

/// Fitted by `bench/claude-fit.mjs` (see the module's comment).
pub const CLAUDE_RULE: ClaudeRule =
    ClaudeRule { text_scale: 1.153, per_message: 3, per_tool_use: 48, per_tool_result: 30, per_thinking: 0 };

impl ClaudeRule {
    /// `tokens` of text as Claude bills them.
    pub fn text(&self, tokens: usize) -> usize {
        (tokens as f64 * self.text_scale).round() as usize
    }
}

/// `message` as Claude bills it, from `counted`, its count with `encoding` (`count_message`):
/// no text is tokenized again. Images (in the message or in its tool results) keep Anthropic's
/// published rule; the rest of the count is text, scaled, plus the rule's framing.
pub fn billed(encoding: Encoding, message: &Message, counted: &MessageTokens) -> u32 {
    let rule = &CLAUDE_RULE;
    let (mut calls, mut results, mut thinking) = (0usize, 0usize, 0usize);
    let mut images = counted.part(PartKind::Image) as usize;
    let image = |part: &Part| match part {
        Part::Image { .. } => true,
        Part::Other(value) => value.get("type").and_then(Value::as_str) == Some("image"),
        _ => false,
    };
    for part in &message.content.parts {
        match part {
            Part::ToolCall(_) => calls += 1,
            Part::ToolResult(result) => {
                results += 1;
                images += result
                    .content
                    .parts
                    .iter()
                    .filter(|inner| image(inner))
                    .map(|inner| count_part(encoding, inner, Format::Anthropic))
                    .sum::<usize>();
            }
            Part::Thinking { .. } | Part::RedactedThinking { .. } => thinking += 1,
            Part::Other(_) if image(part) => images += count_part(encoding, part, Format::Anthropic),
            _ => {}
        }
    }
    let text = (counted.total as usize)
        .saturating_sub(counted.overhead as usize)
        .saturating_sub(images)
        .saturating_sub(TOKENS_PER_TOOL_CALL * calls);
    let tokens = rule.per_message
        + rule.text(text)
        + rule.per_tool_use * calls
        + rule.per_tool_result * results
        + rule.per_thinking * thinking
        + images;
    u32::try_from(tokens).unwrap_or(u32::MAX)
}

/// What billed usage showed of a family of models.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evidence {
    /// The rule was fitted on this family's billed usage.
    Fitted,
    /// The rule was tested on this family's billed usage, not fitted on it.
    Tested,
    /// No billed usage of this family was measured: it is counted by the rule of the others.
    None,
}

/// A family of Claude models: the model ids it covers (by prefix), whether it keeps the thinking
/// of earlier turns in the prompt, and what billed usage showed of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaudeFamily {
    pub name: &'static str,
    prefixes: &'static [&'static str],
    /// Anthropic's documentation: Opus 4.5 and later, and Sonnet 4.6 and later, keep the thinking
    /// blocks of earlier assistant turns; older models and Haiku through 4.5 keep only the
    /// current turn's (those after the last user message), whatever the request sends back.
    pub keeps_earlier_thinking: bool,
    pub evidence: Evidence,
}

/// Every family has the same constants (`CLAUDE_RULE`): the data fitted one and tested another.
pub const CLAUDE_FAMILIES: &[ClaudeFamily] = &[
    ClaudeFamily {
        name: "Claude Opus 4.5 and later",
        prefixes: &["claude-opus-4-5", "claude-opus-4-6", "claude-opus-4-7", "claude-opus-5"],
        keeps_earlier_thinking: true,
        evidence: Evidence::Fitted,
    },
    ClaudeFamily {
        name: "Claude Haiku 4.5 and earlier",
        prefixes: &["claude-haiku-4", "claude-3-5-haiku", "claude-3-haiku"],
        keeps_earlier_thinking: false,
        evidence: Evidence::Tested,
    },
    ClaudeFamily {
        name: "Claude Sonnet 4.6 and later",
        prefixes: &["claude-sonnet-4-6", "claude-sonnet-4-7", "claude-sonnet-5"],
        keeps_earlier_thinking: true,
        evidence: Evidence::None,
    },
    ClaudeFamily {
        name: "Claude Sonnet 4.5, Opus 4.1 and earlier",
        prefixes: &["claude-sonnet-4", "claude-opus-4", "claude-3"],
        keeps_earlier_thinking: false,
        evidence: Evidence::None,
    },
];

/// The family of `model` (a model id, dated or not, with or without a provider's prefix such
/// as `anthropic.` or `anthropic/`), or `None` for a model no family covers.
pub fn family(model: &str) -> Option<&'static ClaudeFamily> {
    let id = model.find("claude").map(|start| model[start..].replace('.', "-"))?;
    // The first family whose prefix matches: the newer, more specific prefixes come first.
    CLAUDE_FAMILIES.iter().find(|f| f.prefixes.iter().any(|prefix| id.starts_with(prefix)))
}

/// Why a count by this rule is an estimate, for `model` (or no model): what `countRequest`
/// reports.
pub fn estimate_note(model: Option<&str>) -> String {
    let base = "Claude's tokenizer is not public: counted by the Claude rule fitted on billed usage (o200k_base text \
                × 1.153, plus the framing of messages, tool calls and results; about 3% per step, see docs/counting.md)";
    match model.map(|m| (m, family(m))) {
        None => base.to_string(),
        Some((_, Some(family))) if family.evidence != Evidence::None => base.to_string(),
        Some((model, Some(family))) => {
            format!("{base}; no billed usage of {} ({model:?}) was measured, counted by the same rule", family.name)
        }
        Some((model, None)) => format!("{base}; {model:?} is not a known Claude model, counted by the same rule"),
    }
}

/// Thinking that the model does not see again: in a family that keeps only the current turn's
/// thinking, the thinking blocks of assistant messages before the last user message that is not
/// only tool results. Returns, per message, whether its thinking is left out.
pub fn earlier_thinking(messages: &[Message], family: &ClaudeFamily) -> Vec<bool> {
    if family.keeps_earlier_thinking {
        return vec![false; messages.len()];
    }
    let last_turn = messages.iter().rposition(|m| m.role == Role::User && !only_tool_results(&m.content));
    messages
        .iter()
        .enumerate()
        .map(|(i, m)| m.role == Role::Assistant && last_turn.is_some_and(|turn| i < turn))
        .collect()
}

fn only_tool_results(content: &Content) -> bool {
    !content.parts.is_empty() && content.parts.iter().all(|p| p.kind() == PartKind::ToolResult)
}

/// Whether `part` is one of the thinking blocks `earlier_thinking` is about.
pub fn is_thinking(part: &Part) -> bool {
    matches!(part, Part::Thinking { .. } | Part::RedactedThinking { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_find_their_family_with_or_without_dates_and_prefixes() {
        for (model, name) in [
            ("claude-opus-4-6", "Claude Opus 4.5 and later"),
            ("claude-opus-4-5-20251101", "Claude Opus 4.5 and later"),
            ("anthropic/claude-opus-4.6", "Claude Opus 4.5 and later"),
            ("claude-haiku-4-5-20251001", "Claude Haiku 4.5 and earlier"),
            ("claude-sonnet-4-6", "Claude Sonnet 4.6 and later"),
            ("claude-sonnet-4-5", "Claude Sonnet 4.5, Opus 4.1 and earlier"),
            ("claude-opus-4-1-20250805", "Claude Sonnet 4.5, Opus 4.1 and earlier"),
            ("us.anthropic.claude-3-7-sonnet-20250219-v1:0", "Claude Sonnet 4.5, Opus 4.1 and earlier"),
        ] {
            assert_eq!(family(model).map(|f| f.name), Some(name), "{model}");
        }
        assert!(family("gpt-4o").is_none());
        assert!(estimate_note(Some("gpt-4o")).contains("not a known Claude model"));
        assert!(estimate_note(Some("claude-sonnet-4-6")).contains("no billed usage"));
        assert!(!estimate_note(Some("claude-opus-4-6")).contains("no billed usage"));
    }

    #[test]
    fn a_message_is_billed_its_scaled_text_and_the_framing_of_its_blocks() {
        use crate::message::parse;
        use crate::tokens::count_message;
        use serde_json::json;
        let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";
        let messages = parse(
            json!([
                {"role": "user", "content": "Read the file"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "The user wants the file.", "signature": "c2ln"},
                    {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/a.txt"}},
                    {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/b.txt"}}
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "t1", "content": "hello world"},
                    {"type": "tool_result", "tool_use_id": "t2", "content": [
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": png}}
                    ]}
                ]}
            ]),
            Format::Anthropic,
        )
        .unwrap();
        let e = Encoding::O200kBase;
        let text = |t: &str| e.count(t);
        let bill = |m: &Message| billed(e, m, &count_message(e, m)) as usize;
        assert_eq!(bill(&messages[0]), 3 + CLAUDE_RULE.text(text("Read the file")));
        let calls = text("The user wants the file.")
            + 2 * text("Read")
            + text(r#"{"file_path":"/a.txt"}"#)
            + text(r#"{"file_path":"/b.txt"}"#);
        assert_eq!(bill(&messages[1]), 3 + CLAUDE_RULE.text(calls) + 2 * CLAUDE_RULE.per_tool_use);
        // The 1x1 image in the second result costs its 1 token, unscaled.
        assert_eq!(bill(&messages[2]), 3 + CLAUDE_RULE.text(text("hello world")) + 2 * CLAUDE_RULE.per_tool_result + 1);
    }

    #[test]
    fn text_scales_and_rounds() {
        assert_eq!(CLAUDE_RULE.text(0), 0);
        assert_eq!(CLAUDE_RULE.text(1000), 1153);
    }
}
