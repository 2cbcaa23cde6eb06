//! Plan: the second stage. The summary in force, the pinned requests, and the units the repair
//! stage formed split into system, covered and active units (`Units`); and the plans of the
//! active units (`Plans`), which the later stages make as they reach each unit.

use std::borrow::Cow;
use std::sync::Arc;

use super::allot::Allotment;
use super::forms::{Ctx, Forms, Plan};
use super::pins::{self, Pin};
use super::receipt::{BridgeUse, DropReason};
use super::repair::{system_units, Structure, StructureCache, Unit, UnitKind};
use super::summary::{SummaryRecord, SummaryRequest, SummaryState};
use crate::error::Result;
use crate::message::Message;
use crate::tokens;

/// The plan stage's output: the summary in force, the pinned requests, and the units the
/// repair stage formed, split into system units (planned whole and counted: they are always
/// kept), the units the summary in force covers, and the active ones the later stages decide on.
pub(crate) struct Units<'s> {
    /// The units and what repair left out.
    pub(crate) structure: Arc<Structure>,
    /// The summary in force, if it still matches the history.
    pub(crate) summary: Option<&'s SummaryRecord>,
    /// The system units, whole, in history order, and their tokens.
    pub(crate) system: Vec<Plan>,
    pub(crate) system_tokens: usize,
    /// Units the summary in force stands for (pinned units aside).
    pub(crate) covered: Vec<usize>,
    /// The other units (not system, not covered, not pinned), in order: what the later stages
    /// decide on.
    pub(crate) active: Vec<usize>,
    /// The pinned requests (`pins`), in history order, whole.
    pub(crate) pins: Vec<Pin>,
    pub(crate) notes: Vec<String>,
}

impl Units<'_> {
    pub(crate) fn unit(&self, u: usize) -> Option<&Unit> {
        self.structure.units.get(u)
    }

    /// The count window's first message, when `maxMessages` leaves active messages out.
    pub(crate) fn window_cutoff(&self, ctx: &Ctx) -> Option<usize> {
        let n = ctx.options.max_messages?;
        // The pinned requests count too: they are messages of the history like the others.
        let units = self.active.iter().copied().chain(self.pins.iter().map(|p| p.plan.unit));
        let mut msgs: Vec<usize> =
            units.filter_map(|u| self.unit(u)).flat_map(|unit| unit.members.iter().map(|m| m.msg)).collect();
        crate::sort::sort(&mut msgs);
        msgs.dedup();
        (msgs.len() > n).then(|| msgs.get(msgs.len() - n).copied().unwrap_or(0))
    }
}

/// The stage: the summary in force (if it still matches the history), the pinned requests, and
/// the units of `structure` split into system (counted now: they are always kept), covered by
/// that summary, and active.
pub(crate) fn split<'s>(
    ctx: &Ctx,
    structure: Arc<Structure>,
    state: &'s SummaryState,
    structures: &mut StructureCache,
    forms: &mut Forms,
) -> Result<Units<'s>> {
    let items = ctx.items;
    let mut notes = Vec::new();
    // With the summary section off (`summary: null`), a summary stored earlier is left out too.
    let stored = state.current.as_ref().filter(|_| ctx.options.summary.is_some());
    let summary = stored.filter(|s| items.get(s.until_index).is_some_and(|item| item.id == s.summarised_until));
    if stored.is_some() && summary.is_none() {
        notes.push("the stored summary does not match this history and was ignored".to_string());
    }
    // A provider's compaction item (OpenAI Responses) stands for everything before it, as a
    // summary does; it stays, and so do the instructions, wherever they are.
    let is_compaction = |unit: &Unit| {
        unit.kind == UnitKind::System
            && unit.members.first().and_then(|m| items.get(m.msg)).is_some_and(|item| item.message.is_compaction())
    };
    let systems = system_units(&structure, structures).to_vec();
    let unit_at = |u: usize| structure.units.get(u);
    let compaction =
        systems.iter().rev().filter_map(|&u| unit_at(u)).find(|unit| is_compaction(unit)).map_or(0, |u| u.first);
    let boundary = summary.map_or(0, |s| s.until_index + 1).max(compaction);
    // Pins are requests the context still answers: none from before a compaction item.
    let pinned = pins::find(ctx, &structure, compaction);

    // Units are in order of their first message: those before `covered_end` start before the
    // boundary. A long history's covered units are most of its units, and are not read here.
    let covered_end = structure.units.partition_point(|unit| unit.first < boundary);
    let mut system: Vec<Plan> = Vec::new();
    let mut covered: Vec<usize> = Vec::with_capacity(covered_end);
    let mut active: Vec<usize> = Vec::with_capacity(structure.units.len() - covered_end);
    let mut pins: Vec<Pin> = Vec::new();
    // The kept system units and the pinned requests are planned now; the units between them
    // go in by ranges, covered before `covered_end` and active after (a long history's units
    // are mostly these, and none is read).
    let kept_system = |u: usize| unit_at(u).is_some_and(|unit| !(u < covered_end && is_compaction(unit)));
    let mut planned: Vec<usize> =
        systems.iter().copied().filter(|&u| kept_system(u)).chain(pinned.iter().map(|(p, _)| *p)).collect();
    planned.sort_unstable();
    planned.dedup();
    let mut next = 0usize;
    for u in planned.into_iter().chain(std::iter::once(structure.units.len())) {
        covered.extend(next..u.min(covered_end));
        active.extend(next.max(covered_end)..u);
        next = u + 1;
        let Some(unit) = unit_at(u) else { continue };
        let mut plan = Plan::of(u, unit);
        ctx.plan_tokens(forms, &mut plan)?;
        match pinned.iter().find(|(p, _)| *p == u).filter(|_| !systems.contains(&u)) {
            Some((_, roles)) => pins.push(Pin { roles: roles.clone(), whole: plan.tokens, plan }),
            None => system.push(plan),
        }
    }
    let system_tokens: usize = system.iter().map(|p| p.tokens).sum();
    Ok(Units { structure, summary, system, system_tokens, covered, active, pins, notes })
}

/// How the recent messages were chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Everything fits: the history as it is (only repairs).
    Verbatim,
    /// Neither a budget nor a summary: the reductions of older turns, nothing dropped.
    Unlimited,
    /// Reductions (and, without a summary, thinning) made the history fit.
    Reduced,
    /// Units had to leave: the recent section is a selection (a suffix when a summary covers the rest).
    Selected,
}

/// What one pass of the pipeline over the history knows, stage by stage: each stage reads what
/// the stages before it set and adds its own (see `super::build_once` for the order).
pub(crate) struct Pass<'s> {
    /// Plan: the units split into system, covered and active, and the pins found.
    pub(crate) units: Units<'s>,
    /// Allot: how the budget is split.
    pub(crate) budget: Allotment,
    /// Select (`measure`): the ordinal in `active` where the recent steps kept whole begin, the
    /// active units' tokens as stored, and whether the history as it is needs a placeholder user
    /// message first.
    pub(crate) tail_start: usize,
    pub(crate) unreduced: usize,
    pub(crate) verbatim_placeholder: bool,
    /// The plans of the active units, by ordinal, and how they were decided: only those a stage
    /// looked at one by one (`Plans`).
    pub(crate) plans: Plans,
    pub(crate) mode: Mode,
    /// Reductions wait for the selection: none can make the history fit.
    pub(crate) lazy: bool,
    /// With a summary: the ordinal in `active` where the recent messages begin; the active units
    /// before it are covered by the summary or the bridge.
    pub(crate) suffix_start: Option<usize>,
    /// The bridge: an extractive summary of the active units before the recent messages, while
    /// the summary in force does not reach them.
    pub(crate) bridge: Option<(Message, BridgeUse)>,
    /// Summarise: the request for the caller's summariser, when compaction is due.
    pub(crate) summary_request: Option<SummaryRequest>,
    pub(crate) notes: Vec<String>,
}

impl<'s> Pass<'s> {
    pub(crate) fn of(units: Units<'s>, budget: Allotment) -> Pass<'s> {
        Pass {
            units,
            budget,
            tail_start: 0,
            unreduced: 0,
            verbatim_placeholder: false,
            plans: Plans::default(),
            mode: Mode::Verbatim,
            lazy: false,
            suffix_start: None,
            bridge: None,
            summary_request: None,
            notes: Vec::new(),
        }
    }

    /// The context's tokens with the active units as planned: system, pins, the summary section
    /// (the summary in force and the bridge), the kept plans, the reply priming and, when
    /// `placeholder`, a placeholder user message.
    /// The active units must all be planned (`Mode::Verbatim`, `Mode::Reduced`), or those not
    /// planned left out.
    pub(crate) fn view(&self, placeholder: bool) -> usize {
        self.fixed_tokens(placeholder) + self.plans.kept_tokens()
    }

    /// Everything but the recent messages: system, pins, summary section, priming, placeholder.
    pub(crate) fn fixed_tokens(&self, placeholder: bool) -> usize {
        self.units.system_tokens
            + self.budget.state.tokens
            + self.budget.pins.tokens
            + self.budget.summary.tokens
            + self.bridge.as_ref().map_or(0, |(_, b)| b.tokens)
            + tokens::REPLY_PRIMING
            + if placeholder { self.budget.placeholder_tokens } else { 0 }
    }
}

/// The plans of the active units, by ordinal in `Pass::active`. Only a suffix is planned: the
/// selection takes units newest first until the budget is full, so the plans of a long history
/// are as many as its context holds, not as many as it has units. A unit before that suffix is
/// whole and not counted, and fared `before`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Plans {
    /// The planned suffix, newest first (so that planning older units appends).
    newest_first: Vec<Plan>,
    /// How many active units there are.
    len: usize,
    /// What became of the units not planned: kept (`None`) until a selection leaves them out.
    pub(crate) before: Option<DropReason>,
}

impl Plans {
    /// `len` active units, none planned.
    pub(crate) fn unplanned(len: usize) -> Plans {
        Plans { newest_first: Vec::new(), len, before: None }
    }

    /// `plans`, one per active unit, in order.
    pub(crate) fn all(mut plans: Vec<Plan>) -> Plans {
        let len = plans.len();
        plans.reverse();
        Plans { newest_first: plans, len, before: None }
    }

    /// How many active units there are (planned or not).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// How many units are planned.
    pub(crate) fn planned(&self) -> usize {
        self.newest_first.len()
    }

    /// The ordinal of the oldest planned unit (`len` when none is).
    pub(crate) fn first(&self) -> usize {
        self.len - self.newest_first.len()
    }

    fn slot(&self, o: usize) -> Option<usize> {
        (o < self.len).then(|| self.len - 1 - o)
    }

    /// The plan at ordinal `o`, if it is planned.
    pub(crate) fn get(&self, o: usize) -> Option<&Plan> {
        self.newest_first.get(self.slot(o)?)
    }

    pub(crate) fn get_mut(&mut self, o: usize) -> Option<&mut Plan> {
        let slot = self.slot(o)?;
        self.newest_first.get_mut(slot)
    }

    /// The planned units, oldest first.
    pub(crate) fn iter(&self) -> impl DoubleEndedIterator<Item = &Plan> {
        self.newest_first.iter().rev()
    }

    pub(crate) fn iter_mut(&mut self) -> impl DoubleEndedIterator<Item = &mut Plan> {
        self.newest_first.iter_mut().rev()
    }

    /// The planned units with their ordinals, oldest first.
    pub(crate) fn enumerate_mut(&mut self) -> impl DoubleEndedIterator<Item = (usize, &mut Plan)> {
        let first = self.first();
        self.newest_first.iter_mut().rev().enumerate().map(move |(i, plan)| (first + i, plan))
    }

    /// The tokens of the planned units kept.
    pub(crate) fn kept_tokens(&self) -> usize {
        self.iter().filter(|p| p.dropped.is_none()).map(|p| p.tokens).sum()
    }

    /// Whether every active unit is planned, or those not planned were left out.
    pub(crate) fn settled(&self) -> bool {
        self.first() == 0 || self.before.is_some()
    }

    /// The plan of the unit at ordinal `o` of `units.active`: as planned, or else the unit whole,
    /// not yet counted, and left out as the units not planned were (`before`).
    pub(crate) fn plan_at(&self, units: &Units, o: usize) -> Option<Cow<'_, Plan>> {
        match self.get(o) {
            Some(plan) => Some(Cow::Borrowed(plan)),
            None => self.unplanned_at(units, o).map(Cow::Owned),
        }
    }

    /// The unit at ordinal `o` whole, not yet counted, and left out as the units not planned were.
    fn unplanned_at(&self, units: &Units, o: usize) -> Option<Plan> {
        let u = *units.active.get(o)?;
        let mut plan = Plan::of(u, units.unit(u)?);
        plan.dropped = self.before;
        Some(plan)
    }

    /// Plans the active units from ordinal `o` on (those already planned stay as they are).
    pub(crate) fn plan_from(&mut self, units: &Units, o: usize) {
        for at in (o..self.first()).rev() {
            if let Some(plan) = self.unplanned_at(units, at) {
                self.newest_first.push(plan);
            }
        }
    }

    /// Plans every active unit: a stage that may change any of them (the reductions before the
    /// selection), or a context that holds them all.
    pub(crate) fn plan_all(&mut self, units: &Units) {
        self.plan_from(units, 0);
    }

    /// Every active unit's plan, in order: as planned, or as `plan_at` makes it.
    #[cfg(test)]
    pub(crate) fn every_plan(&self, units: &Units) -> Vec<Plan> {
        (0..self.len()).filter_map(|o| self.plan_at(units, o).map(Cow::into_owned)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::repair::structure_for;
    use crate::compact::summary::{SummarySource, SummaryState};
    use crate::compact::testing::{turns, ENCODING};
    use crate::compact::{BuildCache, BuildOptions};

    fn record(until: &str, until_index: usize) -> SummaryRecord {
        let pending = crate::compact::summary::PendingSummary {
            request_id: "s1".into(),
            until: until.into(),
            until_index,
            original_tokens: 100,
            message_count: until_index + 1,
            max_tokens: 100,
            required_keys: Vec::new(),
        };
        crate::compact::summary::record(&pending, "earlier".into(), 1, "t".into(), SummarySource::External)
    }

    #[test]
    fn the_plan_stage_splits_the_units_into_system_covered_and_active() {
        let log = turns(3, 1, 5);
        let items = log.items();
        let options = BuildOptions::default();
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
        let mut cache = BuildCache::default();
        // The summary covers the first turn (m2..m5).
        let state = SummaryState { current: Some(record("m5", 4)), ..Default::default() };
        let structure = structure_for(&items, true, &mut cache.structure);
        let units = split(&ctx, structure, &state, &mut cache.structure, &mut cache.forms).unwrap();
        assert!(units.summary.is_some() && units.notes.is_empty());
        assert_eq!(units.system.len(), 1);
        assert_eq!(units.system_tokens, items[0].tokens as usize, "system units are counted at once");
        let first = |list: &[usize]| list.iter().map(|u| units.unit(*u).unwrap().first).collect::<Vec<_>>();
        // The task (m2) and the latest request (m10) are pinned: neither covered nor active.
        assert_eq!(first(&units.covered), [2, 4]);
        assert_eq!(first(&units.active), [5, 6, 8, 10, 12]);
        let pinned: Vec<usize> = units.pins.iter().map(|p| units.unit(p.plan.unit).unwrap().first).collect();
        assert_eq!(pinned, [1, 9]);

        // A summary of another history is ignored, and said so.
        let stale = SummaryState { current: Some(record("m9", 4)), ..Default::default() };
        let structure = structure_for(&items, true, &mut cache.structure);
        let units = split(&ctx, structure, &stale, &mut cache.structure, &mut cache.forms).unwrap();
        assert!(units.summary.is_none() && units.covered.is_empty());
        assert!(units.notes[0].contains("does not match"));
    }

    #[test]
    fn with_the_summary_section_off_a_stored_summary_is_left_out() {
        let log = turns(3, 1, 5);
        let items = log.items();
        let options = BuildOptions { summary: None, ..BuildOptions::default() };
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
        let mut cache = BuildCache::default();
        let state = SummaryState { current: Some(record("m5", 4)), ..Default::default() };
        let structure = structure_for(&items, true, &mut cache.structure);
        let units = split(&ctx, structure, &state, &mut cache.structure, &mut cache.forms).unwrap();
        assert!(units.summary.is_none() && units.covered.is_empty() && units.notes.is_empty());
    }
}
