//! The receipt: what happened to every stored message in a build (kept, reduced, summarised or
//! dropped, and why), the tokens by part, the budget, the repairs, the summary and the memory.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::memory::MemoryUse;
use super::plan::Plans;
use super::repair::{Item, Repair, Structure, Unit};
use super::TurnNote;

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
    pub state: Option<super::state::StateUse>,
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
fn runs_reusing(items: &[Item], fates: &[Fate], last: Option<(usize, &[ReceiptRun])>) -> (Vec<ReceiptRun>, usize) {
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

/// What a build's fates were made from besides the stored messages, their structure and the
/// plans: two builds of one history that agree on `before` and `covered` have the same fates up
/// to the first planned unit, the first message summarised by one and not the other, and the
/// first of a turn whose memory summary one has and the other not, but for the messages the
/// context holds there (`Kept::fixed`).
#[derive(Clone, Debug, PartialEq)]
struct Background {
    summarised_until: Option<usize>,
    /// The messages of the turns whose memory summaries are in the context.
    memory: Vec<(usize, usize)>,
    before: Option<DropReason>,
    /// How many units the summary in force covers, and the last.
    covered: (usize, Option<usize>),
}

impl Background {
    /// The first message whose fate may differ between this build and `other` on this account.
    fn differs_from(&self, other: &Background) -> usize {
        if (self.before, self.covered) != (other.before, other.covered) {
            return 0;
        }
        // Before both ends of the summarised stretch, messages are summarised in both.
        let until = match (self.summarised_until, other.summarised_until) {
            (a, b) if a == b => usize::MAX,
            (a, b) => a.unwrap_or(0).min(b.unwrap_or(0)),
        };
        let memory = self
            .memory
            .iter()
            .filter(|r| !other.memory.contains(r))
            .chain(other.memory.iter().filter(|r| !self.memory.contains(r)))
            .map(|&(first, _)| first)
            .min()
            .unwrap_or(usize::MAX);
        until.min(memory)
    }
}

/// The last build's fates and receipt runs, which the next build starts from: a build after an
/// append changes the fates of the messages near the end only, and remakes only those (and the
/// runs from the first that changed).
#[derive(Clone, Debug)]
struct Kept {
    /// Shared with the receipt (and unshared by the time the next build starts: it is then
    /// changed in place).
    fates: Arc<Vec<Fate>>,
    runs: Arc<Vec<ReceiptRun>>,
    background: Background,
    /// The first message of the first planned unit (the history's length when none is).
    planned_from: usize,
    /// The messages before `planned_from` the context held (system prompts, pinned requests),
    /// in order, with what became of them.
    fixed: Vec<(usize, Action, u32)>,
    /// Made with images replaced (`images_sent_once`): kept for the receipt's entries only.
    reusable: bool,
}

impl Kept {
    /// Fates a build patched after `fates_and_runs` made them: kept for the entries, not reused.
    fn patched(fates: Arc<Vec<Fate>>) -> Kept {
        Kept {
            fates,
            runs: Arc::default(),
            background: Background { summarised_until: None, memory: Vec::new(), before: None, covered: (0, None) },
            planned_from: 0,
            fixed: Vec::new(),
            reusable: false,
        }
    }
}

/// What the fates of the last build leave to the next one, kept with the structure they were
/// made on (`repair::StructureCache::epoch`).
#[derive(Clone, Debug, Default)]
pub(crate) struct FateCache {
    epoch: u64,
    /// The last build's fates and receipt runs, which the next build's start from.
    kept: Option<Kept>,
    /// How far the units of the structure reach.
    reach: Reach,
    /// How many stored messages' fates builds made (not kept from the build before), and how
    /// many receipt runs: for tests and benchmarks.
    pub(crate) made: u64,
    pub(crate) runs_made: u64,
}

impl FateCache {
    /// Starts afresh unless what it keeps is of the structure of `epoch`.
    pub(crate) fn sync(&mut self, epoch: u64) {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.kept = None;
            self.reach = Reach::default();
        }
    }

    /// Forgets the last build's fates: the next build makes all of them.
    pub(crate) fn forget(&mut self) {
        self.kept = None;
    }

    /// Keeps `fates`, patched after `fates_and_runs` made them, for the entries only: the next
    /// build makes its own.
    pub(crate) fn keep_patched(&mut self, fates: Arc<Vec<Fate>>) {
        self.kept = Some(Kept::patched(fates));
    }
}

/// Units per block of `Reach`.
const REACH_BLOCK: usize = 64;

/// The greatest last message of the units up to the end of each block of `REACH_BLOCK` units,
/// kept with the structure (`FateCache`): units are in order of their first message,
/// and this finds the first that reaches a message, however late its last result came.
#[derive(Clone, Debug, Default)]
struct Reach {
    blocks: Vec<usize>,
}

impl Reach {
    /// The first unit with a member at `msg` or later (`units.len()` when none has).
    fn first_reaching(&mut self, structure: &Structure, msg: usize) -> usize {
        let units = &structure.units;
        // Blocks from the open run of assistant messages on may still grow (`repair::extend`).
        let settled = structure.open_step.unwrap_or(units.len()).min(units.len());
        self.blocks.truncate(settled / REACH_BLOCK);
        let mut reach = self.blocks.last().copied().unwrap_or(0);
        for block in units.chunks(REACH_BLOCK).skip(self.blocks.len()) {
            reach = block.iter().map(Unit::last).fold(reach, usize::max);
            self.blocks.push(reach);
        }
        let block = self.blocks.partition_point(|&reach| reach < msg);
        let from = block * REACH_BLOCK;
        units.get(from..).map_or(units.len(), |rest| from + rest.iter().take_while(|u| u.last() < msg).count())
    }
}

/// What `fates` reads of a build.
pub(crate) struct FateInputs<'a, 'b> {
    pub(crate) items: &'a [Item<'b>],
    pub(crate) structure: &'a Structure,
    pub(crate) covered: &'a [usize],
    pub(crate) active: &'a [usize],
    pub(crate) plans: &'a Plans,
    /// The action and the tokens of each message in the context.
    pub(crate) after: &'a HashMap<usize, (Action, u32)>,
    pub(crate) summarised_until: Option<usize>,
    pub(crate) turns: &'a [TurnNote<'a>],
    pub(crate) memory_turns: &'a [u32],
}

/// The fates and the runs of a build, those of the last build (`kept`, where these are kept in
/// turn) reused up to the first message whose fate may differ.
pub(crate) fn fates_and_runs(inputs: &FateInputs, cache: &mut FateCache) -> (Arc<Vec<Fate>>, Arc<Vec<ReceiptRun>>) {
    let kept = &mut cache.kept;
    let FateInputs { items, structure, active, plans, after, .. } = *inputs;
    // The ranges of the turns whose summaries are in the context: a handful, looked up once per
    // message left out (of a long history, most messages).
    let memory: Vec<(usize, usize)> =
        inputs.turns.iter().filter(|t| inputs.memory_turns.contains(&t.turn)).map(|t| (t.first, t.last)).collect();
    let background = Background {
        summarised_until: inputs.summarised_until,
        memory,
        before: plans.before,
        covered: (inputs.covered.len(), inputs.covered.last().copied()),
    };
    let planned_from = active.get(plans.first()).and_then(|&u| structure.units.get(u)).map_or(items.len(), |u| u.first);
    let mut fixed: Vec<(usize, Action, u32)> = after
        .iter()
        .filter(|(&msg, _)| msg < planned_from)
        .map(|(&msg, &(action, tokens))| (msg, action, tokens))
        .collect();
    fixed.sort_unstable_by_key(|f| f.0);
    // The first message whose fate may differ from the last build's: past its messages, from
    // the first planned unit of either build, or from the first held message they disagree on.
    let last = kept.take().filter(|k| k.reusable && k.fates.len() <= items.len());
    let from = last.as_ref().map_or(0, |k| {
        let planned = k.planned_from.min(planned_from);
        let below = |list: &[(usize, Action, u32)]| list.partition_point(|f| f.0 < planned);
        let (a, b) = (&k.fixed[..below(&k.fixed)], &fixed[..below(&fixed)]);
        let differs = a.iter().zip(b).find(|(x, y)| x != y).map(|(x, y)| x.0.min(y.0));
        let longer = match a.len().cmp(&b.len()) {
            std::cmp::Ordering::Less => b.get(a.len()).map(|f| f.0),
            std::cmp::Ordering::Greater => a.get(b.len()).map(|f| f.0),
            std::cmp::Ordering::Equal => None,
        };
        [
            k.fates.len(),
            planned,
            differs.unwrap_or(usize::MAX),
            longer.unwrap_or(usize::MAX),
            k.background.differs_from(&background),
        ]
        .into_iter()
        .min()
        .unwrap_or(0)
    });
    let (mut shared, last_runs) = match last {
        Some(k) => (k.fates, Some(k.runs)),
        None => (Arc::default(), None),
    };
    // Unshared by now (the last receipt was dropped), the last fates are changed in place.
    let fates = Arc::make_mut(&mut shared);
    fates.truncate(from);
    fill_fates(inputs, &background, fates, from, cache.reach.first_reaching(structure, from));
    let (runs, reused) = runs_reusing(items, fates, last_runs.as_deref().map(|r| (from, r.as_slice())));
    cache.made += (fates.len() - from) as u64;
    cache.runs_made += (runs.len() - reused) as u64;
    drop(last_runs);
    let runs = Arc::new(runs);
    cache.kept = Some(Kept {
        fates: Arc::clone(&shared),
        runs: Arc::clone(&runs),
        background,
        planned_from,
        fixed,
        reusable: true,
    });
    (shared, runs)
}

/// Each stored message's fate from `from` on (`fates` holds those before): summarised (by the
/// summary in force, the bridge, or its turn's memory summary), dropped (by repair, thinning,
/// the window or the budget), or what its members in the context became. With a summary, what
/// repair left out before `summarised_until` counts as summarised too. `first_unit` is the first
/// unit with a member at `from` or later.
fn fill_fates(inputs: &FateInputs, background: &Background, fates: &mut Vec<Fate>, from: usize, first_unit: usize) {
    let FateInputs { items, structure, covered, active, plans, after, .. } = *inputs;
    // Every message starts as left out by repair (summarised, before `summarised_until`); what a
    // later stage decided overwrites that.
    let until = background.summarised_until.unwrap_or(0);
    fates.extend(items.iter().enumerate().skip(from).map(|(msg, item)| {
        let (action, reason) =
            if msg < until { (Action::Summarised, None) } else { (Action::Dropped, Some(DropReason::Repair)) };
        Fate { action, reason, tokens_before: item.tokens, tokens_after: 0 }
    }));
    let set = |fates: &mut [Fate], msg: usize, action: Action, reason: Option<DropReason>| {
        if let Some(fate) = fates.get_mut(msg).filter(|_| msg >= from) {
            fate.action = action;
            fate.reason = reason;
        }
    };
    let from_unit = |units: &[usize]| units.partition_point(|&u| u < first_unit);
    for &u in &covered[from_unit(covered)..] {
        if let Some(unit) = structure.units.get(u) {
            // A unit that ends before `until` is summarised already (most of a long history's
            // covered units), without reading its members.
            if unit.last() < until {
                continue;
            }
            for m in &unit.members {
                set(fates, m.msg, Action::Summarised, None);
            }
        }
    }
    let memory = |msg: usize| background.memory.iter().any(|&(first, last)| (first..=last).contains(&msg));
    let left_out = |fates: &mut [Fate], unit_members: &[crate::compact::repair::Member], reason: DropReason| {
        for m in unit_members {
            match reason {
                DropReason::Bridge => set(fates, m.msg, Action::Summarised, Some(DropReason::Bridge)),
                _ if memory(m.msg) => set(fates, m.msg, Action::Summarised, Some(DropReason::Memory)),
                _ => set(fates, m.msg, Action::Dropped, Some(reason)),
            }
        }
    };
    // The units not planned, all left out alike.
    if let Some(reason) = plans.before {
        let not_planned = active.get(..plans.first()).unwrap_or(active);
        for &u in &not_planned[from_unit(not_planned)..] {
            left_out(fates, structure.units.get(u).map_or(&[][..], |u| u.members.as_slice()), reason);
        }
    }
    for plan in plans.iter() {
        let unit_members = structure.units.get(plan.unit).map_or(&[][..], |u| u.members.as_slice());
        if let Some(reason) = plan.dropped {
            left_out(fates, unit_members, reason);
        } else {
            // Members of a kept unit that thinning left out.
            for m in unit_members {
                if !plan.members.iter().any(|p| p.msg == m.msg) {
                    match memory(m.msg) {
                        true => set(fates, m.msg, Action::Summarised, Some(DropReason::Memory)),
                        false => set(fates, m.msg, Action::Dropped, Some(DropReason::Thinning)),
                    }
                }
            }
        }
    }
    // The messages in the context (its size, not the history's).
    for (&msg, &(action, tokens)) in after {
        if let Some(fate) = fates.get_mut(msg).filter(|_| msg >= from) {
            *fate = Fate { action, reason: None, tokens_before: fate.tokens_before, tokens_after: tokens };
        }
    }
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
