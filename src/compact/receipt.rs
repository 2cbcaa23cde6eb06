//! The receipt: what happened to every stored message in a build (kept, reduced, summarised or
//! dropped, and why), the tokens by part, the budget, the repairs, the summary and the memory.

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::memory::MemoryUse;
use super::plan::Plans;
use super::repair::{Item, Repair, Structure};
use super::TurnNote;

/// Which part of the context a message belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Section {
    System,
    /// A session's state after the system prompt (skill, todos, artifacts, uploads).
    State,
    /// A pinned request (the task, the latest request), before the summary or among the recent messages.
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
    /// The first and last ids of the run (the same for a run of one): shared, so that a build
    /// reuses the runs of the last one without copying their ids (`runs`).
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
    /// All of the above plus the reply priming.
    pub total: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BudgetReport {
    /// The most tokens the context may have (`budget.maxTokens`, or the window × the ratio).
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
}

/// A pinned request in the receipt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PinUse {
    pub id: String,
    pub role: super::plan::PinRole,
    /// Cut to its head and tail to fit half of what the system prompt leaves.
    pub truncated: bool,
    pub tokens_before: usize,
    pub tokens_after: usize,
}

/// The bridge in the receipt: an extractive summary of messages the summary in force does not
/// cover yet (not stored; a new summary replaces it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BridgeUse {
    /// The first and last messages it covers.
    pub from: String,
    pub until: String,
    pub messages: usize,
    pub tokens: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
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
    #[cfg_attr(test, ts(type = "Array<Readonly<ReceiptRun>>"))]
    pub runs: Vec<ReceiptRun>,
    /// The same per message, in history order (ids by position: `Receipt::entries`); shared
    /// with the `Compactor`, which keeps the last build's.
    #[serde(skip)]
    pub fates: Arc<Vec<Fate>>,
    /// What the repair stage left out or moved: one list shared (not copied) by the builds while
    /// the history's repairs stay the same; in JS a frozen array, shared as `runs`' entries are.
    #[serde(serialize_with = "shared_list")]
    #[cfg_attr(test, ts(type = "Array<Repair>"))]
    pub repairs: Arc<Vec<Repair>>,
    /// The pinned requests: the task and the latest request, always in the context.
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

/// Groups per-message fates into runs; ids only at run ends. `last` is an earlier build's fates
/// with their runs: its runs are reused (ids and all) up to the first fate that differs, so that
/// a build after an append makes only the runs near the end (a long history has tens of
/// thousands, one per stretch between repaired messages).
pub(crate) fn runs(items: &[Item], fates: &[Fate], last: Option<(&[Fate], &[ReceiptRun])>) -> Vec<ReceiptRun> {
    let mut out = Vec::new();
    let mut start = 0usize;
    if let Some((last_fates, last_runs)) = last {
        let same = last_fates.iter().zip(fates).take_while(|(a, b)| a == b).count();
        for run in last_runs {
            let end = start + run.count;
            // A run ends where it did if the fate after it is the same too (or none follows).
            let ends_alike = end < same || (end == fates.len() && same == fates.len());
            let ids_alike = items.get(start).is_some_and(|i| i.id == &*run.from)
                && items.get(end.wrapping_sub(1)).is_some_and(|i| i.id == &*run.to);
            if !(ends_alike && ids_alike) {
                break;
            }
            out.push(run.clone());
            start = end;
        }
    }
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
    out
}

/// An earlier build's fates with their runs, for `runs` to reuse.
pub(crate) type KeptRuns = Option<(Arc<Vec<Fate>>, Vec<ReceiptRun>)>;

/// `runs`, reusing those in `kept`, where it keeps these (shared, not copied) for the next build.
pub(crate) fn runs_kept(items: &[Item], fates: &Arc<Vec<Fate>>, kept: &mut KeptRuns) -> Vec<ReceiptRun> {
    let runs = runs(items, fates, kept.as_ref().map(|(f, r)| (f.as_slice(), r.as_slice())));
    *kept = Some((Arc::clone(fates), runs.clone()));
    runs
}

/// Each stored message's fate: summarised (by the summary in force, the bridge, or its turn's
/// memory summary), dropped (by repair, thinning, the window or the budget), or what its members
/// in the context (`after`: the action and the tokens of each message in the context) became.
/// With a summary, what repair left out before `summarised_until` counts as summarised too.
#[allow(clippy::too_many_arguments)]
pub(crate) fn fates(
    items: &[Item],
    structure: &Structure,
    covered: &[usize],
    active: &[usize],
    plans: &Plans,
    after: &HashMap<usize, (Action, u32)>,
    summarised_until: Option<usize>,
    turns: &[TurnNote],
    memory_turns: &[u32],
) -> Vec<Fate> {
    // Every message starts as left out by repair (summarised, before `summarised_until`); what a
    // later stage decided overwrites that.
    let until = summarised_until.unwrap_or(0);
    let mut fates: Vec<Fate> = items
        .iter()
        .enumerate()
        .map(|(msg, item)| {
            let (action, reason) =
                if msg < until { (Action::Summarised, None) } else { (Action::Dropped, Some(DropReason::Repair)) };
            Fate { action, reason, tokens_before: item.tokens, tokens_after: 0 }
        })
        .collect();
    let set = |fates: &mut [Fate], msg: usize, action: Action, reason: Option<DropReason>| {
        if let Some(fate) = fates.get_mut(msg) {
            fate.action = action;
            fate.reason = reason;
        }
    };
    for &u in covered {
        if let Some(unit) = structure.units.get(u) {
            // A unit that ends before `until` is summarised already (most of a long history's
            // covered units), without reading its members.
            if unit.last() < until {
                continue;
            }
            for m in &unit.members {
                set(&mut fates, m.msg, Action::Summarised, None);
            }
        }
    }
    // The ranges of the turns whose summaries are in the context: a handful, looked up once per
    // message left out (of a long history, most messages).
    let summarised: Vec<(usize, usize)> =
        turns.iter().filter(|t| memory_turns.contains(&t.turn)).map(|t| (t.first, t.last)).collect();
    let memory = |msg: usize| summarised.iter().any(|&(first, last)| (first..=last).contains(&msg));
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
        for &u in active.iter().take(plans.first()) {
            left_out(&mut fates, structure.units.get(u).map_or(&[][..], |u| u.members.as_slice()), reason);
        }
    }
    for plan in plans.iter() {
        let unit_members = structure.units.get(plan.unit).map_or(&[][..], |u| u.members.as_slice());
        if let Some(reason) = plan.dropped {
            left_out(&mut fates, unit_members, reason);
        } else {
            // Members of a kept unit that thinning left out.
            for m in unit_members {
                if !plan.members.iter().any(|p| p.msg == m.msg) {
                    match memory(m.msg) {
                        true => set(&mut fates, m.msg, Action::Summarised, Some(DropReason::Memory)),
                        false => set(&mut fates, m.msg, Action::Dropped, Some(DropReason::Thinning)),
                    }
                }
            }
        }
    }
    // The messages in the context (its size, not the history's).
    for (&msg, &(action, tokens)) in after {
        if let Some(fate) = fates.get_mut(msg) {
            *fate = Fate { action, reason: None, tokens_before: fate.tokens_before, tokens_after: tokens };
        }
    }
    fates
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::plan::testing::Log;
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
            runs,
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
        };
        let entries = receipt.entries(items.iter().map(|i| i.id));
        assert_eq!(entries.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), ["m1", "m2", "m3", "m4"]);
        assert_eq!(entries[1].reason, Some(DropReason::Budget));
    }
}
