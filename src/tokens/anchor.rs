//! Counts anchored to the bill. After a response, the provider has said exactly how big the
//! prompt was (`input + cache write + cache read`) and how big the response is (`output_tokens`);
//! the next request of the same conversation is that prompt, that response and whatever was
//! appended since. So the next count is the billed truth where it is known and an estimate only
//! for the difference, which is what a compaction trigger needs from a Claude count (whose
//! estimate of a whole prompt is off by the system prompt and tools the package may never see).
//!
//! An anchor holds while the conversation only grew by appends and the request around the
//! messages stayed the same: a compaction event, another model or other tools end it, and the
//! count falls back to the estimate and says why (`AnchorEnd`).

use serde::Serialize;
use serde_json::Value;

use super::calibration::{Factor, ReportedUsage, UsageShape};

/// What a count's total is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "CountBasis"))]
pub enum CountBasis {
    /// By the provider's published rule: what it will bill.
    Exact,
    /// The last billed prompt and response, plus an estimate of what was appended since.
    Anchored,
    /// By a rule that is not the provider's (Claude's), or with parts counted at a default.
    #[default]
    Estimated,
}

impl CountBasis {
    pub fn of(estimate: bool) -> CountBasis {
        if estimate {
            CountBasis::Estimated
        } else {
            CountBasis::Exact
        }
    }
}

/// The billed size of one request, and what of the history it covered.
#[derive(Clone, Debug, PartialEq)]
pub struct Anchor {
    pub model: String,
    /// Input + cache write + cache read.
    pub prompt: u64,
    /// The response's `output_tokens`, when they stand for the response as it is sent back
    /// (Anthropic's; OpenAI's include reasoning the next prompt does not hold).
    pub output: Option<u64>,
    /// The history's messages the request held (in whatever form the build gave them): its
    /// first `covered`, the last of them `last_id`, while the history's `rebases` were these.
    pub covered: usize,
    pub last_id: Option<String>,
    pub rebases: u64,
    /// The request held the history whole and verbatim (no compaction): then the history's own
    /// count is anchored too, not only the next context's.
    pub whole_history: bool,
    /// `request_fingerprint` of what was sent beside the messages, when the package saw it.
    pub request: Option<u64>,
}

/// Why a count is not anchored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "AnchorEnd"))]
pub enum AnchorEnd {
    /// No usage was recorded.
    NoUsage,
    /// The history was cut or replaced since the usage was recorded (not only appended to).
    HistoryRewritten,
    /// The next request goes to another model.
    OtherModel { anchored: String, next: String },
    /// The next request sends another system prompt, other tools or another tool choice.
    OtherRequest,
    /// A compaction event rebuilt the context since.
    Compacted,
    /// The billed request was a compacted context, not the whole history: the history's own
    /// count cannot be anchored to it.
    NotWholeHistory,
}

impl AnchorEnd {
    pub fn describe(&self) -> String {
        match self {
            AnchorEnd::NoUsage => "no usage recorded yet".into(),
            AnchorEnd::HistoryRewritten => "the history was cut or replaced since the usage was recorded".into(),
            AnchorEnd::OtherModel { anchored, next } => {
                format!("the usage was {anchored:?}'s; the next request goes to {next:?}")
            }
            AnchorEnd::OtherRequest => "the system prompt, tools or tool choice changed since the usage".into(),
            AnchorEnd::Compacted => "a compaction event rebuilt the context since the usage".into(),
            AnchorEnd::NotWholeHistory => "the billed request was a compacted context, not the whole history".into(),
        }
    }
}

/// A count anchored to the bill: `tokens = prompt + output + appended`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "AnchoredCount"))]
pub struct AnchoredCount {
    pub tokens: usize,
    pub model: String,
    /// The billed prompt it starts from.
    pub prompt: usize,
    /// The response's billed output tokens, once the response is in the history (null: not
    /// reported, or not yet appended; then its estimate is in `appended`).
    pub output: Option<usize>,
    /// The estimate of the messages appended since (the response among them when `output` is null).
    pub appended: usize,
    pub appended_messages: usize,
}

/// The request parts sent beside the messages, as one number: a change of system prompt, tools
/// or tool choice between two requests changes it.
pub fn request_fingerprint(system: Option<&Value>, tools: Option<&Value>, tool_choice: Option<&Value>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = crate::util::fasthash::FxHasher::default();
    for part in [system, tools, tool_choice] {
        match part {
            Some(value) => crate::util::json_text::value_text(value).hash(&mut hasher),
            None => 0u8.hash(&mut hasher),
        }
    }
    hasher.finish()
}

/// What `recordUsage` made of a provider's usage. One object for everything usage tells: the
/// bill's parts, the count it was paired with, and what the package did with it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "UsageReport"))]
pub struct UsageReport {
    pub model: String,
    /// Input tokens billed at the full price (neither read from nor written to the cache).
    pub billed_input: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The billed size of the prompt: `billedInput + cacheWrite + cacheRead`.
    pub prompt: u64,
    /// The response's tokens, when reported.
    pub output: Option<u64>,
    /// What the package counted for that request.
    pub counted: usize,
    /// `counted` covers the whole request (system prompt and tools too), not only the messages.
    pub counted_whole_request: bool,
    /// The ratio prompt/counted was learnt, and budgets use the model's calibration.
    pub calibrated: bool,
    /// The model's calibration after this usage (null until a whole request was recorded).
    pub calibration: Option<Factor>,
    /// Later counts of this conversation start from this bill (`AnchoredCount`).
    pub anchored: bool,
    /// What the last build's receipt predicted for this request (`receipt.cost`), to set beside
    /// `cacheRead` and `cacheWrite`.
    pub predicted: Option<crate::compact::CostEstimate>,
    pub notes: Vec<String>,
}

impl UsageReport {
    pub fn new(usage: &ReportedUsage, model: &str, counted: usize, counted_whole_request: bool) -> UsageReport {
        UsageReport {
            model: model.to_string(),
            billed_input: usage.uncached,
            cache_read: usage.cache_read,
            cache_write: usage.cache_write,
            prompt: usage.prompt,
            output: usage.output,
            counted,
            counted_whole_request,
            calibrated: false,
            calibration: None,
            anchored: false,
            predicted: None,
            notes: Vec::new(),
        }
    }
}

/// The output tokens an anchor can stand on for the response: Anthropic's (thinking, text and
/// tool calls, sent back as they were billed); not OpenAI's, whose reasoning tokens are billed
/// as output but are not in the next prompt.
pub fn anchoring_output(usage: &ReportedUsage) -> Option<u64> {
    match usage.provider {
        UsageShape::Anthropic => usage.output,
        UsageShape::OpenAi => None,
    }
}
