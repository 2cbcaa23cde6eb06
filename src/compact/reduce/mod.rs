//! Reduce: the stage that makes units cheaper without dropping them, least lossy first and only
//! while the context does not fit (`stages`): file reads a later call made stale become digests,
//! then older file reads, then long outputs are compressed, the last one only as much as needed;
//! without a summary, complete earlier turns are then thinned (`thin`). The recent steps stay
//! whole. Each reduction is computed once per message part and kept between builds (`Forms`).
//! Without a budget and without a summary, the older turns' reads and long outputs are reduced
//! as they always were (`plan_active`).

pub mod compress;
pub mod digest;
pub(crate) mod index;
pub(crate) mod parts;
pub(crate) mod stages;
pub(crate) mod thin;

use index::FileIndex;

pub use digest::DigestOptions;

use super::forms::{Ctx, Forms, Plan};
use super::pass::{Mode, Pass, Plans};
use super::pins::Pins;
use super::repair::UnitKind;
use super::sums::UnitSums;
use crate::error::Result;

/// What reducing a plan reads and keeps between builds: the forms and their counts by record id,
/// and which results are file contents (a digest needs the index). The selection and the summary
/// stage reduce with these too.
pub(crate) struct Reductions<'c> {
    pub(crate) forms: &'c mut Forms,
    pub(crate) files: &'c mut FileIndex,
}

/// The plans of the active units. With a budget or a summary none is made here: the later stages
/// plan a unit when they reach it (`Pass::plan_at`, `Pass::plan_from`), so a long history's
/// build plans what its context holds. In `Mode::Unlimited` (no budget, no summary) the context
/// holds every unit: each is planned, with the digests of file reads in older turns and
/// the compression of long outputs but the newest, as they always were.
pub(crate) fn plan_active(ctx: &Ctx, forms: &mut Forms, files: &mut FileIndex, pass: &mut Pass) -> Result<()> {
    if pass.mode != Mode::Unlimited {
        pass.plans = Plans::unplanned(pass.units.active.len());
        return Ok(());
    }
    let structure = std::sync::Arc::clone(&pass.units.structure);
    let last_ordinal = pass.units.active.len().saturating_sub(1);
    parts::index(ctx, files);
    let mut plans: Vec<Plan> = Vec::with_capacity(pass.units.active.len());
    for (o, &u) in pass.units.active.iter().enumerate() {
        let Some(unit) = structure.units.get(u) else { continue };
        let mut plan = Plan::of(u, unit);
        if unit.kind == UnitKind::Step {
            let older = o < pass.measured.tail_start && unit.turn < structure.last_turn;
            parts::reduce_members(ctx, forms, files, &structure, &mut plan.members, older, o != last_ordinal)?;
            ctx.plan_tokens(forms, &mut plan)?;
        }
        plans.push(plan);
    }
    pass.plans = Plans::all(plans);
    Ok(())
}

/// How the recent messages will be made: the history as it is when it fits (`Mode::Verbatim`), or
/// reduced until it fits (`Mode::Reduced`, the `stages`), or else a selection (`Mode::Selected`).
/// The goal is the budget; without one, a summary's trigger (past which, without a budget,
/// nothing is dropped: the summary stage decides). The count window forces a selection.
pub(crate) fn fit(
    ctx: &Ctx,
    forms: &mut Forms,
    files: &mut FileIndex,
    unit_sums: &mut UnitSums,
    pass: &mut Pass,
) -> Result<()> {
    let window = pass.units.window_cutoff(ctx).is_some();
    if pass.mode == Mode::Unlimited {
        if window {
            pass.mode = Mode::Selected;
        }
        return Ok(());
    }
    let goal = match (pass.budget.max, &ctx.options.summary) {
        (Some(max), _) => max,
        (None, Some(summary)) => summary.trigger(None),
        (None, None) => usize::MAX,
    };
    let pins_whole: usize = pass.budget.pins.list.iter().map(|p| p.whole).sum();
    let fixed = pass.units.system_tokens
        + pass.budget.state.tokens
        + pins_whole
        + pass.budget.summary.tokens
        + crate::tokens::REPLY_PRIMING;
    let placeholder = if pass.measured.verbatim_placeholder { pass.budget.placeholder_tokens } else { 0 };
    if !window && fixed + placeholder + pass.measured.unreduced <= goal {
        // The context holds every unit.
        pass.mode = Mode::Verbatim;
        pass.plans.plan_all(&pass.units);
        stages::count_all(ctx, forms, pass)?;
        whole_pins(pass);
        return Ok(());
    }
    let fits = stages::until_fits(ctx, forms, files, unit_sums, pass, fixed + pass.budget.placeholder_tokens, goal)?;
    let fixed_all = fixed + pass.budget.placeholder_tokens;
    if fits && !window && pass.budget.max.is_some_and(|max| leaves_unused(pass, fixed_all, max)) {
        stages::give_back(ctx, forms, pass, fixed_all, goal)?;
    }
    if fits && !window && pass.budget.max.is_some_and(|max| leaves_unused(pass, fixed_all, max)) {
        // Still short (a thinned unit too large to give back whole): the selection (newest
        // units first, the boundary unit cut to fit) uses the budget, so the reductions are
        // undone and left to it.
        plan_active(ctx, forms, files, pass)?;
        pass.lazy = true;
        pass.mode = Mode::Selected;
        return Ok(());
    }
    if !window && (fits || pass.budget.max.is_none()) {
        // Fits reduced, or nothing is dropped without a budget: the context holds every unit.
        pass.mode = Mode::Reduced;
        pass.plans.plan_all(&pass.units);
        stages::count_all(ctx, forms, pass)?;
        whole_pins(pass);
        return Ok(());
    }
    pass.mode = Mode::Selected;
    Ok(())
}

/// Whether the reduced history (with `fixed` tokens besides it) uses less than 90% of `max`.
/// Every unit is planned: `until_fits` planned them all to make the history fit.
fn leaves_unused(pass: &Pass, fixed: usize, max: usize) -> bool {
    let view = fixed + pass.plans.kept_tokens();
    view * 10 < max * 9
}

/// The pins as stored: nothing leaves the context, so nothing needs cutting.
fn whole_pins(pass: &mut Pass) {
    pass.budget.pins = Pins::whole(&pass.units.pins);
}

#[cfg(test)]
mod tests;
