//! The receipt: what happened to every stored message in a build (kept, reduced, summarised or
//! dropped, and why), the tokens by part, the budget, the repairs, the summary and the memory.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::repair::{Item, Repair};
use super::turn_summaries::MemoryUse;

/// Which part of the context a message belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Section {
    System,
    /// A session's state after the system prompt (skill, todos, artifacts, uploads).
    State,
    /// A pinned request (the task, the latest request, one pinned explicitly), before the summary or
    /// among the recent messages.
    Pinned,
    Summary,
    Recent,
}

/// What happened to a stored message in this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Hash)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Action {
    Dropped,
    Summarised,
    /// Kept, with its tool calls and thinking removed (history thinning).
    Thinned,
    Digested,
    Compressed,
    Kept,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum DropReason {
    /// Left out by repair (see the receipt's `repairs`).
    Repair,
    /// An older turn's tool traffic (history thinning).
    Thinning,
    /// Outside the count window.
    Window,
    /// Did not fit the token budget.
    Budget,
    /// Summarised by the bridge: the extractive summary of what lies between the summary in force
    /// and the recent messages.
    Bridge,
    /// Summarised by the memory's turn summary of its turn.
    Memory,
}

/// What happened to one stored message; `Receipt::fates` has one per stored message, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fate {
    pub action: Action,
    pub reason: Option<DropReason>,
    pub tokens_before: u32,
    pub tokens_after: u32,
}

/// Consecutive stored messages that fared alike: the receipt by id, at the size of its changes
/// rather than of the history (a long conversation is mostly one run of dropped messages).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ReceiptRun {
    /// The first and last ids of the run (the same for a run of one).
    // Shared: a build reuses the runs of the last one without copying their ids (`runs`).
    #[serde(serialize_with = "shared_str")]
    #[cfg_attr(test, ts(type = "string"))]
    pub from: Arc<str>,
    #[serde(serialize_with = "shared_str")]
    #[cfg_attr(test, ts(type = "string"))]
    pub to: Arc<str>,
    pub count: usize,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<DropReason>,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// One stored message's line of the receipt, with its id (`Receipt::entries`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ReceiptEntry {
    pub id: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<DropReason>,
    pub tokens_before: u32,
    pub tokens_after: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TokensByPart {
    pub system: usize,
    /// The session's state sections (`receipt.state`).
    pub state: usize,
    pub summary: usize,
    pub recent: usize,
    /// The parts of the request given to the build to send beside the messages (`request`:
    /// system prompt, tool definitions, tool choice).
    pub request: usize,
    /// All of the above plus the reply priming.
    pub total: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BudgetReport {
    /// The most tokens the context may have (`budget.maxTokens`, or the window × the ratio).
    /// Claude: this, the trigger and the low-water mark are billed units, as the budget was
    /// given; `billedTokens` is the context's size in them.
    pub max_tokens: usize,
    pub system_tokens: usize,
    /// The session's state sections, as they went in.
    pub state_tokens: usize,
    /// The pinned requests, as they went in.
    pub pinned_tokens: usize,
    /// The summary section's share: at most this much for the summary, the bridge and the memory.
    pub summary_budget: usize,
    /// What the recent messages had: everything the other parts left.
    pub recent_budget: usize,
    /// A compaction event happens when the next context would pass this (`maxTokens`, or a
    /// lower trigger).
    pub trigger_tokens: usize,
    /// What an event compacts down to: the system prompt and `lowWaterRatio` of the rest.
    pub low_water_tokens: usize,
    /// What the request's parts sent beside the messages took (`request`).
    pub request_tokens: usize,
    /// Claude: the context's size as billed (the request's parts included), which the trigger
    /// and the budget were checked against: anchored to
    /// the last recorded usage (`recordUsage`) when it still stands, else Claude's rule on the
    /// messages (an estimate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub billed_tokens: Option<usize>,
}

/// Why a build was a compaction event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum EventReason {
    /// The first build over the budget: nothing was sent before.
    First,
    /// The next context would pass the budget (or the trigger).
    Budget,
    /// The next context would pass the count window (`maxMessages`).
    Window,
    /// Options that shape the messages changed (format, reductions, summary placement, …).
    Options,
    /// Another summary came into force (`completeSummary`, a restored state).
    Summary,
    /// The history is not the one the frame was made from (truncated, replaced).
    History,
    /// A message logged since changes how earlier ones must be sent (a late tool result).
    Repair,
    /// The caller asked for one (`compactNow`).
    Requested,
    /// A system message was logged since, in a format that sends instructions apart (Anthropic's
    /// `system`): the prefix breaks anyway.
    System,
    /// The budget grew by half or more (or was lifted) since the event that made the context,
    /// which left out or cut messages that may fit now.
    Grown,
}

/// What became of the previous build's context, for the prompt cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Change {
    /// The previous context whole, then what was logged since.
    Appended,
    /// Nothing new: the same context.
    Unchanged,
    /// A compaction event rebuilt it from its first changed message on.
    Event,
    /// No previous context.
    New,
}

/// The context against the previous build's, for the provider's prompt cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CacheUse {
    /// This build was a compaction event: the context was rebuilt from `firstChanged` on.
    pub event: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<EventReason>,
    pub change: Change,
    /// The leading messages identical to the previous build's, and their tokens.
    pub prefix_messages: usize,
    pub prefix_tokens: usize,
    /// The first message that is not the previous build's (none: the context is unchanged).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub first_changed: Option<usize>,
    /// Compaction events of this history so far.
    pub events: u64,
}

/// Why a request is pinned (a unit can be both).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum PinRole {
    /// The first user message with text (and the first that is not harness text, if later),
    /// when no message is pinned explicitly.
    Task,
    /// The last user message with text (and the last that is not harness text, if earlier).
    Latest,
    /// Pinned explicitly (`ConversationHistory::pin`); then the task is not pinned besides.
    Pinned,
}

/// A pinned request in the receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PinUse {
    pub id: String,
    pub role: PinRole,
    /// Cut to fit half of what the system prompt leaves: its texts to their head and tail, a
    /// request of many parts to its first and last parts.
    pub truncated: bool,
    pub tokens_before: usize,
    pub tokens_after: usize,
}

/// The bridge in the receipt: an extractive summary of messages the summary in force does not
/// cover yet (not stored; a new summary replaces it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BridgeUse {
    /// The first and last messages it covers.
    pub from: String,
    pub until: String,
    pub messages: usize,
    pub tokens: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SummaryUse {
    pub request_id: String,
    pub summarised_until: String,
    pub tokens: u32,
    /// Made during this build (the extractive summariser).
    pub fresh: bool,
    /// Longer than the summary section's share: its head and tail are in the context.
    pub truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Receipt {
    /// The whole stored history as one prompt.
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub messages_before: usize,
    pub messages_after: usize,
    pub by_part: TokensByPart,
    pub budget: Option<BudgetReport>,
    pub within_budget: bool,
    /// What happened to every stored message, as runs of alike messages in history order.
    // Shared (not copied) with the compactor, which starts the next build's from them.
    #[serde(serialize_with = "shared_list")]
    #[cfg_attr(test, ts(type = "Array<Readonly<ReceiptRun>>"))]
    pub runs: Arc<Vec<ReceiptRun>>,
    /// The same per message, in history order (ids by position: `Receipt::entries`); shared
    /// with the `Compactor`, which keeps the last build's.
    #[serde(skip)]
    pub fates: Arc<Vec<Fate>>,
    /// What the repair stage left out or moved: one list shared (not copied) by the builds while
    /// the history's repairs stay the same; in JS a frozen array, shared as `runs`' entries are.
    #[serde(serialize_with = "shared_list")]
    #[cfg_attr(test, ts(type = "Array<Repair>"))]
    pub repairs: Arc<Vec<Repair>>,
    /// The pinned requests, always in the context: the task (or the messages pinned explicitly)
    /// and the latest request.
    pub pinned: Vec<PinUse>,
    pub summary: Option<SummaryUse>,
    /// The bridge, when one stands between the summary in force and the recent messages.
    pub bridge: Option<BridgeUse>,
    /// The memory's turn summaries the context holds (a session with memory).
    pub memory: Option<MemoryUse>,
    /// The session's state sections the context holds, part by part.
    pub state: Option<super::state_sections::StateUse>,
    /// The images of earlier turns the context shows as placeholders (`imagesSentOnce`).
    pub images: Option<super::images::ImagesUse>,
    /// A placeholder user message was put first (Anthropic needs one and none was left).
    pub placeholder: bool,
    pub notes: Vec<String>,
    /// The history's calibration against reported usage, when there is one: the budget above is
    /// then in counted tokens (the billed budget over the top of the band).
    pub calibration: Option<crate::tokens::calibration::Calibrated>,
    /// What this context shares with the previous build's (the prompt cache).
    pub cache: Option<CacheUse>,
    /// What the request's input is expected to bill with the provider's prompt cache.
    pub cost: Option<super::cost::CostEstimate>,
}

fn shared_list<S: serde::Serializer, T: Serialize>(list: &Arc<Vec<T>>, serializer: S) -> Result<S::Ok, S::Error> {
    list.as_slice().serialize(serializer)
}

fn shared_str<S: serde::Serializer>(text: &Arc<str>, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(text)
}

impl Receipt {
    /// One entry per stored message: `ids` are the stored messages' ids, in history order.
    pub fn entries<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Vec<ReceiptEntry> {
        entries(&self.fates, ids)
    }
}

/// One entry per stored message from its fate: `ids` are the stored messages' ids, in order.
pub(crate) fn entries<'a>(fates: &[Fate], ids: impl IntoIterator<Item = &'a str>) -> Vec<ReceiptEntry> {
    fates
        .iter()
        .zip(ids)
        .map(|(f, id)| ReceiptEntry {
            id: id.to_string(),
            action: f.action,
            reason: f.reason,
            tokens_before: f.tokens_before,
            tokens_after: f.tokens_after,
        })
        .collect()
}

/// Groups per-message fates into runs; ids only at run ends. `last` is an earlier build's runs
/// with how many leading fates the two builds share: its runs are reused (ids and all) up to
/// there, so that a build after an append makes only the runs near the end (a long history has
/// tens of thousands, one per stretch between repaired messages).
pub(crate) fn runs(items: &[Item], fates: &[Fate], last: Option<(usize, &[ReceiptRun])>) -> Vec<ReceiptRun> {
    runs_reusing(items, fates, last).0
}

/// `runs`, with how many it reused.
pub(crate) fn runs_reusing(
    items: &[Item],
    fates: &[Fate],
    last: Option<(usize, &[ReceiptRun])>,
) -> (Vec<ReceiptRun>, usize) {
    let mut out = Vec::new();
    let mut start = 0usize;
    if let Some((same, last_runs)) = last {
        for run in last_runs {
            let end = start + run.count;
            // A run ends where it did if the fate after it is the same too (or none follows).
            if !(end < same || (end == fates.len() && same == fates.len())) {
                break;
            }
            out.push(run.clone());
            start = end;
        }
    }
    let reused = out.len();
    let id = |i: usize| -> Arc<str> { items.get(i).map_or_else(|| Arc::from(""), |item| Arc::from(item.id)) };
    out.extend(fates.get(start..).unwrap_or(&[]).chunk_by(|a, b| (a.action, a.reason) == (b.action, b.reason)).map(
        |slice| {
            let (action, reason) = slice.first().map_or((Action::Dropped, None), |f| (f.action, f.reason));
            let (tokens_before, tokens_after) = slice.iter().fold((0u64, 0u64), |(before, after), f| {
                (before + u64::from(f.tokens_before), after + u64::from(f.tokens_after))
            });
            let run = ReceiptRun {
                from: id(start),
                to: id(start + slice.len() - 1),
                count: slice.len(),
                action,
                reason,
                tokens_before,
                tokens_after,
            };
            start += slice.len();
            run
        },
    ));
    (out, reused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::Log;
    use serde_json::json;

    #[test]
    fn runs_group_alike_neighbours_and_expand_to_entries() {
        let log = Log::openai(json!([
            {"role": "user", "content": "a"}, {"role": "user", "content": "b"},
            {"role": "user", "content": "c"}, {"role": "user", "content": "d"}
        ]));
        let items = log.items();
        let fate = |action, reason, after| Fate { action, reason, tokens_before: 5, tokens_after: after };
        let fates = vec![
            fate(Action::Dropped, Some(DropReason::Budget), 0),
            fate(Action::Dropped, Some(DropReason::Budget), 0),
            fate(Action::Kept, None, 5),
            fate(Action::Kept, None, 5),
        ];
        let runs = runs(&items, &fates, None);
        assert_eq!(runs.len(), 2);
        assert_eq!((&*runs[0].from, &*runs[0].to, runs[0].count), ("m1", "m2", 2));
        assert_eq!((runs[1].tokens_before, runs[1].tokens_after), (10, 10));
        let receipt = Receipt {
            tokens_before: 23,
            tokens_after: 13,
            messages_before: 4,
            messages_after: 2,
            by_part: TokensByPart::default(),
            budget: None,
            within_budget: true,
            runs: Arc::new(runs),
            fates: Arc::new(fates),
            repairs: Arc::default(),
            pinned: Vec::new(),
            summary: None,
            bridge: None,
            memory: None,
            state: None,
            images: None,
            placeholder: false,
            notes: Vec::new(),
            calibration: None,
            cache: None,
            cost: None,
        };
        let entries = receipt.entries(items.iter().map(|i| i.id));
        assert_eq!(entries.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["m1", "m2", "m3", "m4"]);
        assert_eq!(entries[1].reason, Some(DropReason::Budget));
    }
}
