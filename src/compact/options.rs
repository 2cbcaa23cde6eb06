//! The options of a build, as the core takes them (`BuildOptions`, every field set), validated.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::memory::MemoryOptions;
use super::reduce::compress::CompressOptions;
use super::reduce::DigestOptions;
use super::summary::SummaryOptions;
use crate::error::{Error, Result};
use crate::message::Format;
use crate::tokens::Encoding;

/// Seed 001's token budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BudgetOptions {
    /// The model's context window, in tokens.
    pub context_window: u32,
    /// Share of the window the context may use (seed 001: 0.6).
    pub target_ratio: f64,
    /// Share of what the system prompt leaves, for the summary (0.26)…
    pub summary_ratio: f64,
    /// …and for the recent messages (0.65); the rest is a buffer.
    pub recent_ratio: f64,
    /// Up to this many messages, nothing is optimised if they fit (seed 001: 10).
    pub min_messages: usize,
}

impl Default for BudgetOptions {
    fn default() -> Self {
        BudgetOptions {
            context_window: 128_000,
            target_ratio: 0.6,
            summary_ratio: 0.26,
            recent_ratio: 0.65,
            min_messages: 10,
        }
    }
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
        check_ratio("budget.summaryRatio", self.summary_ratio)?;
        check_ratio("budget.recentRatio", self.recent_ratio)?;
        if self.summary_ratio + self.recent_ratio > 1.0 + 1e-9 {
            return Err(Error::invalid_argument(format!(
                "budget.summaryRatio + budget.recentRatio must not exceed 1, got {}",
                self.summary_ratio + self.recent_ratio
            )));
        }
        Ok(())
    }

    /// The most tokens the whole context may have.
    pub fn max_tokens(&self) -> usize {
        (f64::from(self.context_window) * self.target_ratio).floor() as usize
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BuildOptions {
    /// The format of the context (and of a summary request's messages).
    pub format: Format,
    /// Seed 000's count window: the last N messages (10 to 100), tool chains whole.
    pub max_messages: Option<usize>,
    /// Seed 001's token budget.
    pub budget: Option<BudgetOptions>,
    /// Seed 004: the last N steps stay whole (no thinning, no digests) and are never summarised.
    pub keep_recent_steps: usize,
    /// Identical system messages are kept once.
    pub dedupe_system: bool,
    pub compress: Option<CompressOptions>,
    pub digest: Option<DigestOptions>,
    /// Seed 004's history thinning of older turns.
    pub thin: bool,
    pub summary: Option<SummaryOptions>,
    /// A session's memory: summaries of recorded turns not wholly in the context (`None`: left out).
    pub memory: Option<MemoryOptions>,
    /// Timestamp recorded on a summary made during this build (the core has no clock).
    pub now: Option<String>,
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
            now: None,
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
        Ok(())
    }

    /// Parses camelCase JSON options, refusing unknown keys.
    pub fn from_value(value: Value) -> Result<BuildOptions> {
        let options: BuildOptions = serde_json::from_value(value)
            .map_err(|e| Error::invalid_argument(format!("invalid build options: {e}")))?;
        options.validate()?;
        Ok(options)
    }

    pub(crate) fn fingerprint(&self, encoding: Encoding) -> String {
        format!("{encoding:?}|{:?}|{:?}", self.compress, self.digest)
    }
}
