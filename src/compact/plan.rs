//! Plan: the second stage. The summary in force, the pinned requests, and the units the repair
//! stage formed split into system, covered and active units (`Units`).

use std::sync::Arc;

use super::forms::{Ctx, Forms, Plan};
use super::pins::{self, Pin};
use super::repair::{system_units, Structure, StructureCache, Unit, UnitKind};
use super::summary_state::{SummaryRecord, SummaryState};
use crate::error::Result;

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
        crate::util::sort::sort(&mut msgs);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::repair::structure_for;
    use crate::compact::summary_state::{SummarySource, SummaryState};
    use crate::compact::testing::{turns, ENCODING};
    use crate::compact::{BuildCache, BuildOptions};

    fn record(until: &str, until_index: usize) -> SummaryRecord {
        let pending = crate::compact::summary_state::PendingSummary {
            request_id: "s1".into(),
            until: until.into(),
            until_index,
            original_tokens: 100,
            message_count: until_index + 1,
            max_tokens: 100,
            required_keys: Vec::new(),
        };
        crate::compact::summary_state::record(&pending, "earlier".into(), 1, "t".into(), SummarySource::External)
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
