//! What the stages after the budget split decide (`Pass`), and the plans of the active units
//! (`Plans`), which those stages make as they reach each unit. Kept out of the plan stage's
//! module: the split is made from the plan stage's output, and the stages after it read both.

use std::borrow::Cow;

use super::allot::Allotment;
use super::forms::Plan;
use super::measure::Measured;
use super::options::BuildOptions;
use super::plan::Units;
use super::receipt::{BridgeUse, DropReason};
use super::summary_state::SummaryRequest;
use crate::message::Message;
use crate::tokens;

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
    /// Measure: where the recent steps begin, what the active units cost as stored.
    pub(crate) measured: Measured,
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
    pub(crate) fn of(units: Units<'s>, budget: Allotment, measured: Measured, options: &BuildOptions) -> Pass<'s> {
        // Neither a budget nor a summary: nothing is ever dropped.
        let mode = match options.budget.is_none() && options.summary.is_none() {
            true => Mode::Unlimited,
            false => Mode::Verbatim,
        };
        Pass {
            units,
            budget,
            measured,
            plans: Plans::default(),
            mode,
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
