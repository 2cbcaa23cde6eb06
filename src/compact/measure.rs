//! Measure: the fourth stage. Where the recent steps kept whole begin, what the active units cost
//! as stored, and whether the history as it is would need a placeholder user message first: what
//! the reduce stage decides from (`Measured`).

use super::allot::Allotment;
use super::forms::{Ctx, Forms};
use super::plan::Units;
use super::repair::UnitKind;
use super::sums::{self, End, UnitSums};
use crate::error::Result;
use crate::message::{Format, Role};

/// The measure stage's output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Measured {
    /// The ordinal in `Units::active` where the recent steps kept whole begin.
    pub(crate) tail_start: usize,
    /// The active units' tokens as stored.
    pub(crate) unreduced: usize,
    /// The history as it is would need a placeholder user message first (Anthropic: a context
    /// starts with a user message).
    pub(crate) verbatim_placeholder: bool,
}

/// The recent steps kept whole, the active units' tokens as stored (a running sum kept between
/// builds, `sums`), and whether the history as it is would need a placeholder user message first.
pub(crate) fn measure(
    ctx: &Ctx,
    units: &Units,
    budget: &Allotment,
    forms: &mut Forms,
    unit_sums: &mut UnitSums,
) -> Result<Measured> {
    let options = ctx.options;
    let keep = options.keep_recent_steps.max(1);
    let mut tail_start = 0usize;
    let mut steps_seen = 0usize;
    for (o, &u) in units.active.iter().enumerate().rev() {
        if units.unit(u).is_some_and(|unit| unit.is_step_like()) {
            steps_seen += 1;
            if steps_seen >= keep {
                tail_start = o;
                break;
            }
        }
    }
    let tail_start = if steps_seen < keep { 0 } else { tail_start };

    let end = units.structure.units.len();
    let unreduced = sums::active_before(ctx, forms, unit_sums, units, &budget.pins.list, End::History, end)?.all;
    let first_is_user = budget
        .pins
        .list
        .first()
        .map(|p| p.plan.unit)
        .into_iter()
        .chain(units.active.first().copied())
        .min()
        .and_then(|u| units.unit(u))
        .is_some_and(|unit| unit.kind == UnitKind::User);
    let summary_leads =
        budget.summary.tokens > 0 && budget.summary.messages.first().is_some_and(|m| m.role == Role::User);
    let verbatim_placeholder = options.format == Format::Anthropic && !first_is_user && !summary_leads;
    Ok(Measured { tail_start, unreduced, verbatim_placeholder })
}
