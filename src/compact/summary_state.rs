//! Summary compaction: the state kept beside the history, the request handed
//! to whatever model the caller plugs in, and the checks a returned summary must pass. The
//! built-in summariser that needs no model is `crate::extract`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::tokens::Encoding;

/// The built-in compact instruction, sent as a user message after the messages to summarise.
pub const DEFAULT_COMPACT_PROMPT: &str = "Summarise the work so far, keeping the key information needed to continue:\n\
- the user's requests and constraints, in order\n\
- the conclusions reached and the problems identified\n\
- the progress made and what was done\n\
- the pending to-do list\n\
- key paths, identifiers and values (files, directories, ids)\n\
\n\
Write the summary as JSON, complete but concise.";

/// The fewest tokens a summary may be asked to fit in.
pub const MIN_SUMMARY_TOKENS: u32 = 16;

/// Where the summary goes in the context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum SummaryPlacement {
    /// OpenAI Chat: a system message; the other formats: a user message (never an assistant
    /// message, which a recent assistant message could merge into).
    Auto,
    System,
    Exchange,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Summarizer {
    /// The built-in extractive summary, applied during the build.
    Extractive,
    /// A model the caller plugs in: the build returns a `SummaryRequest`.
    External,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SummaryOptions {
    /// Who writes the summary. `summariser` is read too (deprecated: the API spells it `summarize`).
    #[serde(alias = "summariser")]
    pub summarizer: Summarizer,
    /// Compaction is due past this many tokens. Default: the budget's maximum (a context that
    /// fits is never compacted); without a budget, 50k.
    pub trigger_tokens: Option<u32>,
    /// After compaction the context aims below this. Default: the budget's maximum (the recent
    /// messages fill what the summary leaves); without a budget, 0.6 × the trigger (30k by default).
    pub target_tokens: Option<u32>,
    /// The first summary needs at least this many messages (default 20).
    pub min_messages: usize,
    /// A new summary needs at least this many new messages (default 10)…
    pub min_new_messages: usize,
    /// …whose tokens exceed this fraction of the current summary's (default 0.5).
    pub new_token_ratio: f64,
    /// The most tokens a summary may have (default 4,000).
    pub max_tokens: u32,
    /// The compact instruction; the built-in one by default.
    pub prompt: Option<String>,
    /// Words a summary must contain (case-insensitive); a summary without one is refused.
    pub required_keys: Vec<String>,
    pub placement: SummaryPlacement,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            summarizer: Summarizer::Extractive,
            trigger_tokens: None,
            target_tokens: None,
            min_messages: 20,
            min_new_messages: 10,
            new_token_ratio: 0.5,
            max_tokens: 4000,
            prompt: None,
            required_keys: Vec::new(),
            placement: SummaryPlacement::Auto,
        }
    }
}

impl SummaryOptions {
    pub fn validate(&self) -> Result<()> {
        if self.trigger_tokens == Some(0) {
            return Err(Error::invalid_argument("summary.triggerTokens must be positive"));
        }
        if self.target_tokens == Some(0) {
            return Err(Error::invalid_argument("summary.targetTokens must be positive"));
        }
        if let (Some(target), Some(trigger)) = (self.target_tokens, self.trigger_tokens) {
            if target > trigger {
                return Err(Error::invalid_argument(format!(
                    "summary.targetTokens ({target}) must not exceed summary.triggerTokens ({trigger})"
                )));
            }
        }
        if !(self.new_token_ratio > 0.0 && self.new_token_ratio.is_finite()) {
            return Err(Error::invalid_argument("summary.newTokenRatio must be a positive number"));
        }
        if self.max_tokens < MIN_SUMMARY_TOKENS {
            return Err(Error::invalid_argument(format!("summary.maxTokens must be at least {MIN_SUMMARY_TOKENS}")));
        }
        if self.prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(Error::invalid_argument("summary.prompt must not be empty"));
        }
        Ok(())
    }

    pub fn prompt(&self) -> &str {
        self.prompt.as_deref().unwrap_or(DEFAULT_COMPACT_PROMPT)
    }

    /// The trigger in force for a context of at most `max` tokens (`None`: no budget).
    pub fn trigger(&self, max: Option<usize>) -> usize {
        match (self.trigger_tokens, max) {
            (Some(trigger), _) => trigger as usize,
            (None, Some(max)) => max,
            (None, None) => DEFAULT_TRIGGER_TOKENS,
        }
    }

    /// The target in force for a context of at most `max` tokens: never above the trigger.
    pub fn target(&self, max: Option<usize>) -> usize {
        let trigger = self.trigger(max);
        match (self.target_tokens, max) {
            (Some(target), _) => (target as usize).min(trigger),
            (None, Some(max)) => max.min(trigger),
            (None, None) => trigger / 5 * 3,
        }
    }
}

/// The thresholds for a build without a budget: compaction past 50k tokens, down to 30k.
pub const DEFAULT_TRIGGER_TOKENS: usize = 50_000;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum SummarySource {
    Extractive,
    External,
}

/// A summary in force: what it covers, its size and compression, and where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SummaryRecord {
    /// The request that produced it.
    pub request_id: String,
    /// The id of the last message it covers.
    pub summarised_until: String,
    /// That message's position in the history.
    pub until_index: usize,
    pub text: String,
    pub tokens: u32,
    /// Tokens of everything it stands for (all summarised messages, across compactions).
    pub original_tokens: u64,
    /// 1 − tokens / original tokens.
    pub compression_rate: f64,
    /// Messages it stands for, across compactions.
    pub message_count: usize,
    /// Caller-supplied timestamp, or `seq:N` (the core has no clock).
    pub created_at: String,
    pub source: SummarySource,
}

/// What a request asked for, remembered while it is being answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PendingSummary {
    pub request_id: String,
    pub until: String,
    pub until_index: usize,
    pub original_tokens: u64,
    pub message_count: usize,
    pub max_tokens: u32,
    pub required_keys: Vec<String>,
}

/// The summary state that lives with a history (persisted by storage adapters).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SummaryState {
    pub current: Option<SummaryRecord>,
    /// The compaction under way, if any: while set, no second one starts.
    pub in_progress: Option<PendingSummary>,
    /// Summaries made so far (numbers request ids and `seq:` timestamps).
    pub generation: u64,
}

/// What the caller's summariser needs: the messages to summarise, ready to send (request-mode
/// JSON in the build's format, the compact prompt last), and what the answer must satisfy.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SummaryRequest {
    pub id: String,
    /// First and last history ids covered by this compaction (after the previous summary).
    pub from: String,
    pub until: String,
    pub message_ids: Vec<String>,
    /// Ready to send: OpenAI an array, Anthropic `{system?, messages}`; ends with the prompt.
    #[cfg_attr(test, ts(type = "AnyMessages"))]
    pub messages: Value,
    /// The compact prompt with the previous summary folded in.
    pub prompt: String,
    pub previous_summary: Option<String>,
    pub max_tokens: u32,
    pub required_keys: Vec<String>,
    /// Tokens of what the new summary will stand for, previous summary's originals included.
    pub original_tokens: u64,
    pub message_count: usize,
    #[serde(skip)]
    pub until_index: usize,
}

impl SummaryRequest {
    /// A request as its `Serialize` wrote it (in a stored frame), `None` if it is not one; its
    /// `until_index` is left for the reader to find. Read by hand: a derived reader, used only
    /// here, made the lite wasm 0.5 KB (gzipped) larger.
    pub(crate) fn from_stored(value: &Value) -> Option<SummaryRequest> {
        let text = |key: &str| value.get(key)?.as_str().map(str::to_string);
        let number = |key: &str| value.get(key)?.as_u64();
        let texts = |key: &str| {
            value.get(key)?.as_array()?.iter().map(|v| v.as_str().map(str::to_string)).collect::<Option<Vec<_>>>()
        };
        let previous_summary = match value.get("previousSummary") {
            None | Some(Value::Null) => None,
            Some(text) => Some(text.as_str()?.to_string()),
        };
        Some(SummaryRequest {
            id: text("id")?,
            from: text("from")?,
            until: text("until")?,
            message_ids: texts("messageIds")?,
            messages: value.get("messages")?.clone(),
            prompt: text("prompt")?,
            previous_summary,
            max_tokens: u32::try_from(number("maxTokens")?).ok()?,
            required_keys: texts("requiredKeys")?,
            original_tokens: number("originalTokens")?,
            message_count: usize::try_from(number("messageCount")?).ok()?,
            until_index: 0,
        })
    }

    pub fn pending(&self) -> PendingSummary {
        PendingSummary {
            request_id: self.id.clone(),
            until: self.until.clone(),
            until_index: self.until_index,
            original_tokens: self.original_tokens,
            message_count: self.message_count,
            max_tokens: self.max_tokens,
            required_keys: self.required_keys.clone(),
        }
    }
}

/// The prompt with the previous summary folded in, so that a new summary builds on it.
pub fn fold_prompt(prompt: &str, previous: Option<&str>) -> String {
    match previous {
        Some(previous) => format!(
            "{prompt}\n\nThis conversation was compacted before. Build on the previous summary below: keep what still holds, update what changed, and add what is new.\n<previous_summary>\n{previous}\n</previous_summary>"
        ),
        None => prompt.to_string(),
    }
}

/// A returned summary's checks: not empty, within the token budget, and every required key.
/// What it refuses is the summariser's failure (a `Summarizer` error), not the caller's.
pub fn validate_summary(text: &str, encoding: Encoding, max_tokens: u32, required_keys: &[String]) -> Result<u32> {
    if text.trim().is_empty() {
        return Err(Error::summarizer("the summary is empty"));
    }
    let tokens = u32::try_from(encoding.count(text)).unwrap_or(u32::MAX);
    if tokens > max_tokens {
        return Err(Error::summarizer(format!("the summary has {tokens} tokens, over its budget of {max_tokens}")));
    }
    let lower = lowercase(text);
    let missing: Vec<&str> =
        required_keys.iter().filter(|key| !lower.contains(&lowercase(key))).map(String::as_str).collect();
    if !missing.is_empty() {
        return Err(Error::summarizer(format!("the summary lacks the required keys: {}", missing.join(", "))));
    }
    Ok(tokens)
}

/// A summary's `createdAt` (the caller's, or a build's `now`): an ISO 8601 date or date-time
/// (`2025-11-23`, `2025-11-23T17:05:00Z`, `2025-11-23T17:05:00.123+01:00`, what JS's
/// `toISOString()` writes), or the core's own `seq:N` when the caller gives none.
pub fn check_created_at(created_at: &str, what: &str) -> Result<()> {
    let refused = || {
        Err(Error::invalid_argument(format!(
            "{what} {created_at:?} is not a date: expected an ISO 8601 date or date-time such as \
             \"2025-11-23T17:05:00Z\" (JS: new Date().toISOString())"
        )))
    };
    if let Some(n) = created_at.strip_prefix("seq:") {
        return match !n.is_empty() && n.len() <= 20 && n.bytes().all(|b| b.is_ascii_digit()) {
            true => Ok(()),
            false => refused(),
        };
    }
    let b = created_at.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<u32> {
        let digits = b.get(range)?;
        digits.iter().all(u8::is_ascii_digit).then(|| digits.iter().fold(0, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else { return refused() };
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return refused(),
    };
    if b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || !(1..=days).contains(&day) {
        return refused();
    }
    if b.len() == 10 {
        return Ok(());
    }
    // The time: `T` (or a space) and hh:mm, then :ss, a fraction, and a zone, each optional.
    let (Some(hour), Some(minute)) = (number(11..13), number(14..16)) else { return refused() };
    if !matches!(b.get(10), Some(b'T' | b't' | b' ')) || b.get(13) != Some(&b':') || hour > 23 || minute > 59 {
        return refused();
    }
    let mut at = 16;
    if b.get(at) == Some(&b':') {
        match number(at + 1..at + 3) {
            Some(second) if second <= 60 => at += 3,
            _ => return refused(),
        }
        if b.get(at) == Some(&b'.') {
            let digits = b.get(at + 1..).unwrap_or_default().iter().take_while(|c| c.is_ascii_digit()).count();
            if digits == 0 {
                return refused();
            }
            at += 1 + digits;
        }
    }
    let zone_ok = match b.get(at..).unwrap_or_default() {
        [] | [b'Z' | b'z'] => true,
        [b'+' | b'-', ..] => {
            b.len() == at + 6
                && b.get(at + 3) == Some(&b':')
                && number(at + 1..at + 3).is_some_and(|h| h <= 23)
                && number(at + 4..at + 6).is_some_and(|m| m <= 59)
        }
        _ => false,
    };
    if zone_ok {
        Ok(())
    } else {
        refused()
    }
}

/// Everything a summary in force must be, checked alike for one just made and one restored
/// from storage (`Compactor::set_summary_state`, an import): text that passes
/// `validate_summary`, as many tokens as it says, a `createdAt` that is a date, and figures
/// that add up. (Where it sits in the history is checked against the history.) `counted`: its
/// `tokens` were counted by this library for `encoding` (a stored record's counting tag says
/// so), and are not counted again: counting would decode the encoder's table, which loading a
/// stored session otherwise never needs.
pub fn check_record(record: &SummaryRecord, encoding: Encoding, counted: bool) -> Result<()> {
    // A stored record that fails is the caller's data at fault, not a summariser's.
    if record.text.trim().is_empty() {
        return Err(Error::invalid_argument("the summary is empty"));
    }
    if !counted {
        let tokens = u32::try_from(encoding.count(&record.text)).unwrap_or(u32::MAX);
        if tokens != record.tokens {
            return Err(Error::invalid_argument(format!(
                "the summary says it has {} tokens, but its text has {tokens}",
                record.tokens
            )));
        }
    }
    check_created_at(&record.created_at, "createdAt")?;
    if record.request_id.is_empty() {
        return Err(Error::invalid_argument("the summary names no request"));
    }
    if record.message_count == 0 || record.message_count > record.until_index.saturating_add(1) {
        return Err(Error::invalid_argument(format!(
            "the summary stands for {} messages, but there are {} up to the last it covers",
            record.message_count,
            record.until_index.saturating_add(1)
        )));
    }
    let rate = compression_rate(record.tokens, record.original_tokens);
    // NaN (a value no record could have) is refused too.
    if (record.compression_rate - rate).abs().is_nan() || (record.compression_rate - rate).abs() > 1e-9 {
        return Err(Error::invalid_argument(format!(
            "the summary's compressionRate is {}, but its tokens make it {rate}",
            record.compression_rate
        )));
    }
    Ok(())
}

/// A compaction under way, as `begin_summary` starts it from a build's request.
pub fn check_pending(pending: &PendingSummary) -> Result<()> {
    if pending.request_id.is_empty() {
        return Err(Error::invalid_argument("the compaction in progress names no request"));
    }
    if pending.max_tokens < MIN_SUMMARY_TOKENS {
        return Err(Error::invalid_argument(format!(
            "the compaction in progress allows {} tokens, under the least a summary may have ({MIN_SUMMARY_TOKENS})",
            pending.max_tokens
        )));
    }
    if pending.message_count == 0 || pending.message_count > pending.until_index.saturating_add(1) {
        return Err(Error::invalid_argument(format!(
            "the compaction in progress stands for {} messages, but there are {} up to the last it covers",
            pending.message_count,
            pending.until_index.saturating_add(1)
        )));
    }
    Ok(())
}

/// `text` in lower case, character by character, with the final sigma as any sigma: the same
/// mapping for the summary and its keys, so a key matches wherever `str::to_lowercase` made it
/// match (whose word-final rule is all it adds, in 4 KB of the lite wasm).
fn lowercase(text: &str) -> String {
    text.chars().flat_map(crate::util::lowercase::of).map(|c| if c == 'ς' { 'σ' } else { c }).collect()
}

fn compression_rate(tokens: u32, original_tokens: u64) -> f64 {
    if original_tokens == 0 {
        0.0
    } else {
        1.0 - f64::from(tokens) / original_tokens as f64
    }
}

/// Makes the record for an accepted summary.
pub fn record(
    pending: &PendingSummary,
    text: String,
    tokens: u32,
    created_at: String,
    source: SummarySource,
) -> SummaryRecord {
    let compression_rate = compression_rate(tokens, pending.original_tokens);
    SummaryRecord {
        request_id: pending.request_id.clone(),
        summarised_until: pending.until.clone(),
        until_index: pending.until_index,
        text,
        tokens,
        original_tokens: pending.original_tokens,
        compression_rate,
        message_count: pending.message_count,
        created_at,
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_request_reads_back_as_it_was_written() {
        let mut request = SummaryRequest {
            id: "s2".into(),
            from: "m4".into(),
            until: "m9".into(),
            message_ids: vec!["m4".into(), "m9".into()],
            messages: serde_json::json!([{"role": "user", "content": "Summarise."}]),
            prompt: "Summarise.".into(),
            previous_summary: Some("{\"done\": []}".into()),
            max_tokens: 500,
            required_keys: vec!["done".into()],
            original_tokens: 1_234,
            message_count: 6,
            until_index: 0,
        };
        for _ in 0..2 {
            let stored = serde_json::to_value(&request).unwrap();
            assert_eq!(SummaryRequest::from_stored(&stored).as_ref(), Some(&request));
            request.previous_summary = None;
        }
        let mut damaged = serde_json::to_value(&request).unwrap();
        damaged["maxTokens"] = serde_json::json!("many");
        assert_eq!(SummaryRequest::from_stored(&damaged), None);
    }

    #[test]
    fn validation_refuses_empty_oversized_and_incomplete_summaries() {
        let e = Encoding::O200kBase;
        assert!(validate_summary("  ", e, 100, &[]).unwrap_err().message.contains("empty"));
        assert!(validate_summary(&"word ".repeat(500), e, 100, &[]).unwrap_err().message.contains("over its budget"));
        let keys = vec!["pending".to_string(), "execution_output_dir".to_string()];
        assert!(validate_summary("{\"pending\": []}", e, 100, &keys)
            .unwrap_err()
            .message
            .contains("execution_output_dir"));
        assert!(validate_summary("{\"Pending\": [], \"execution_output_dir\": \"x\"}", e, 100, &keys).is_ok());
        // Keys match in any case, beyond ASCII too.
        let keys = vec!["État".to_string(), "ΣΤΌΧΟΣ".to_string()];
        assert!(validate_summary("{\"ÉTAT\": 1, \"στόχος\": 2}", e, 100, &keys).is_ok());
        assert!(validate_summary("{\"etat\": 1, \"Στόχος\": 2}", e, 100, &keys).unwrap_err().message.contains("État"));
    }

    #[test]
    fn the_prompt_folds_the_previous_summary_in() {
        assert_eq!(fold_prompt("P", None), "P");
        let folded = fold_prompt("P", Some("{\"a\":1}"));
        assert!(folded.starts_with("P\n\n") && folded.contains("<previous_summary>\n{\"a\":1}\n</previous_summary>"));
    }
}
