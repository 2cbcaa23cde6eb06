//! The options of a build as the core takes them (`BuildOptions`, every field set, validated);
//! `spec` has them as a caller gives them.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::reduce::compress::CompressOptions;
use super::reduce::digest::DigestOptions;
use super::state_sections::StateOptions;
use super::summary_state::SummaryOptions;
use super::turn_summaries::MemoryOptions;
use crate::error::{Error, Result};
use crate::message::Format;
use crate::tokens::Encoding;

/// The token budget: the window, the share of it the context may use, and its split between
/// the summary and the recent messages.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BudgetOptions {
    /// The model's context window, in tokens.
    pub context_window: u32,
    /// Share of the window the context may use (default 0.6).
    pub target_ratio: f64,
    /// The most tokens the context may have, given directly (instead of the window × the ratio).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_tokens: Option<u32>,
    /// At most this share of what the system prompt and the pinned requests leave goes to the
    /// summary section (0.26); what it does not use goes to the recent messages…
    pub summary_ratio: f64,
    /// …which are guaranteed this share at least (0.65).
    pub recent_ratio: f64,
    /// Kept for compatibility: a history that fits the budget is never optimised, whatever its length.
    pub min_messages: usize,
    /// What a compaction event compacts down to: the system prompt and this share of the rest
    /// of the budget (default: `default_low_water`). Between events the context only grows, up
    /// to the budget.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub low_water_ratio: Option<f64>,
}

/// The default low-water mark, in tokens past the system prompt, of a budget leaving `room` tokens
/// beside it: a quarter of the room, but at most 1,500 tokens, and at least a tenth of it. What a
/// session costs is mostly the cached prefix read back on every call, so the lower an event goes
/// the cheaper the calls after it; measured with bench/cache-cost.mjs (docs/benchmarks.md) on
/// long coding and chat sessions, this meets the cost targets at 6,000 and 30,000 tokens while the
/// files the agent goes on to use stay named in the context as often as with a threshold
/// compaction. A small budget keeps its quarter; a large one a tenth.
pub fn default_low_water(room: usize) -> usize {
    let room = room as f64;
    (room * 0.1).max((room * 0.25).min(1_500.0)).floor() as usize
}

impl Default for BudgetOptions {
    fn default() -> Self {
        BudgetOptions {
            context_window: 128_000,
            target_ratio: 0.6,
            max_tokens: None,
            summary_ratio: 0.26,
            recent_ratio: 0.65,
            min_messages: 10,
            low_water_ratio: None,
        }
    }
}

pub(crate) fn window_share(window: u32, ratio: f64) -> usize {
    (f64::from(window) * ratio).floor() as usize
}

fn check_ratio(name: &str, value: f64) -> Result<()> {
    if value > 0.0 && value <= 1.0 {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!("{name} must be in (0, 1], got {value}")))
    }
}

impl BudgetOptions {
    pub fn validate(&self) -> Result<()> {
        if self.context_window == 0 {
            return Err(Error::invalid_argument("budget.contextWindow must be positive"));
        }
        check_ratio("budget.targetRatio", self.target_ratio)?;
        if self.max_tokens == Some(0) {
            return Err(Error::invalid_argument("budget.maxTokens must be positive"));
        }
        check_ratio("budget.summaryRatio", self.summary_ratio)?;
        check_ratio("budget.recentRatio", self.recent_ratio)?;
        if let Some(ratio) = self.low_water_ratio {
            check_ratio("budget.lowWaterRatio", ratio)?;
        }
        if self.summary_ratio + self.recent_ratio > 1.0 + 1e-9 {
            return Err(Error::invalid_argument(format!(
                "budget.summaryRatio + budget.recentRatio must not exceed 1, got {}",
                self.summary_ratio + self.recent_ratio
            )));
        }
        Ok(())
    }

    /// The most tokens the whole context may have: `maxTokens`, else the window × the ratio.
    pub fn max_tokens(&self) -> usize {
        match self.max_tokens {
            Some(max) => max as usize,
            None => window_share(self.context_window, self.target_ratio),
        }
    }

    /// How the budget was given, for messages: `maxTokens` or the window × the ratio.
    pub(crate) fn describe(&self) -> String {
        match self.max_tokens {
            Some(max) => format!("budget.maxTokens {max}"),
            None => format!("{} × {}", self.context_window, self.target_ratio),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BuildOptions {
    /// The format of the context (and of a summary request's messages).
    pub format: Format,
    /// A count window: the last N messages (10 to 100), tool chains whole.
    pub max_messages: Option<usize>,
    /// The token budget.
    pub budget: Option<BudgetOptions>,
    /// The last N steps stay whole (no thinning, no digests) and are never summarised.
    pub keep_recent_steps: usize,
    /// Identical system messages are kept once.
    pub dedupe_system: bool,
    pub compress: Option<CompressOptions>,
    pub digest: Option<DigestOptions>,
    /// History thinning of older turns.
    pub thin: bool,
    pub summary: Option<SummaryOptions>,
    /// A session's memory: summaries of recorded turns not wholly in the context (`None`: left out).
    pub memory: Option<MemoryOptions>,
    /// A session's state (skill, todos, artifacts, uploads) after the system prompt (`None`: left out).
    pub state: Option<StateOptions>,
    /// Images of turns before the latest go in as a one-line placeholder.
    pub images_sent_once: bool,
    /// Timestamp recorded on a summary made during this build (the core has no clock).
    pub now: Option<String>,
    /// The parts of the request sent beside the messages: counted into the budget.
    pub request: Option<RequestParts>,
    /// A compaction event now, whatever the budget (a user's "/compact").
    pub compact_now: bool,
    /// The provider cache hints the request carries (`None`: none).
    pub cache: Option<super::request::hints::CacheOptions>,
    /// The input pricing `receipt.cost` uses (left out: the provider's for the model).
    pub pricing: super::cost::PricingOptions,
}

/// The parts of a request sent beside the messages, which the provider bills with them: the
/// budget covers them too, counted by the rules of `countRequest` for the build's format.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct RequestParts {
    /// Instructions sent apart from the history: the AI SDK's `system`, the Agents SDK's
    /// `instructions`, Anthropic's top-level `system` (a string, or Anthropic's text blocks).
    #[cfg_attr(test, ts(optional, type = "string | ReadonlyArray<{ type: \"text\"; text: string }>"))]
    pub system: Option<Value>,
    /// The tool definitions as sent: OpenAI Chat's `{ type: "function", function }`, Responses'
    /// flat function tools, or Anthropic's `{ name, input_schema }`.
    #[cfg_attr(test, ts(optional, type = "ReadonlyArray<ToolDefinition | object>"))]
    pub tools: Option<Vec<Value>>,
    #[cfg_attr(test, ts(optional, type = "ToolChoice"))]
    pub tool_choice: Option<Value>,
    /// The model (Anthropic's tool-use system prompt depends on it).
    pub model: Option<String>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            format: Format::OpenAi,
            max_messages: None,
            budget: None,
            keep_recent_steps: 3,
            dedupe_system: true,
            compress: Some(CompressOptions::default()),
            digest: Some(DigestOptions::default()),
            thin: false,
            summary: Some(SummaryOptions::default()),
            memory: Some(MemoryOptions::default()),
            state: Some(StateOptions::default()),
            images_sent_once: false,
            now: None,
            request: None,
            compact_now: false,
            cache: Some(super::request::hints::CacheOptions::default()),
            pricing: super::cost::PricingOptions::default(),
        }
    }
}

impl BuildOptions {
    pub fn validate(&self) -> Result<()> {
        if let Some(n) = self.max_messages {
            if !(10..=100).contains(&n) {
                return Err(Error::invalid_argument(format!("maxMessages must be between 10 and 100, got {n}")));
            }
        }
        if let Some(budget) = &self.budget {
            budget.validate()?;
        }
        if let Some(compress) = &self.compress {
            compress.validate()?;
        }
        if let Some(digest) = &self.digest {
            digest.validate()?;
        }
        if let Some(summary) = &self.summary {
            summary.validate()?;
        }
        if let Some(now) = &self.now {
            super::summary_state::check_created_at(now, "now")?;
        }
        self.pricing.validate()?;
        if let Some(cache) = &self.cache {
            cache.validate()?;
        }
        Ok(())
    }

    /// Parses camelCase JSON options, refusing unknown keys.
    pub fn from_value(value: Value) -> Result<BuildOptions> {
        let options: BuildOptions = crate::error::from_json(value, "invalid build options")?;
        options.validate()?;
        Ok(options)
    }

    pub(crate) fn fingerprint(&self, encoding: Encoding) -> String {
        format!("{encoding:?}|{:?}|{:?}|{}", self.compress, self.digest, self.images_sent_once)
    }
}
