//! The reductions in order, least lossy first, each only while the context does not fit, never in
//! the last `keepRecentSteps` steps:
//!
//! 1. file reads that a later call made stale (a read, edit, write or patch of the same path)
//!    become their digest, within a turn too (a coding agent's session is one turn);
//! 2. the other file reads before the recent steps become their digest;
//! 3. long outputs before the recent steps are compressed;
//! 4. without a summary (and with `thin`), complete earlier turns are thinned.
//!
//! Oldest first within each; the reduction that makes the context fit is only as deep as needed
//! (the head and tail that leave it just within the goal), so a history a little over its budget
//! stays a little under it.

use std::sync::Arc;

use super::index::FileIndex;
use super::{parts, thin};
use crate::compact::forms::{Ctx, Forms, MemberPlan, Plan, Reduction};
use crate::compact::pass::Pass;
use crate::compact::receipt::DropReason;
use crate::compact::repair::UnitKind;
use crate::compact::sums::{self, End, UnitSums};
use crate::error::{Error, Result};
use crate::message::Part;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
    StaleReads,
    Reads,
    LongOutputs,
}

/// Counts every planned unit in its current form.
pub(crate) fn count_all(ctx: &Ctx, forms: &mut Forms, pass: &mut Pass) -> Result<()> {
    for plan in pass.plans.iter_mut().filter(|p| !p.counted) {
        ctx.plan_tokens(forms, plan)?;
    }
    Ok(())
}

/// Reduces until the context (with `fixed` tokens besides the active units) is at most `goal`;
/// says whether it is. When no reduction could make it fit, none is made (nor any unit planned)
/// and the selection reduces what it keeps (`pass.lazy`). Called on the active units as stored,
/// none planned yet.
pub(crate) fn until_fits(
    ctx: &Ctx,
    forms: &mut Forms,
    files: &mut FileIndex,
    unit_sums: &mut UnitSums,
    pass: &mut Pass,
    fixed: usize,
    goal: usize,
) -> Result<bool> {
    let mut view = fixed + pass.measured.unreduced;
    if view <= goal {
        return Ok(true);
    }
    let thinning = ctx.options.thin && ctx.options.summary.is_none();
    if view.saturating_sub(most_saved(ctx, forms, unit_sums, pass, thinning)?) > goal {
        pass.lazy = true;
        return Ok(false);
    }
    pass.plans.plan_all(&pass.units);
    count_all(ctx, forms, pass)?;
    parts::index(ctx, files);
    let structure = Arc::clone(&pass.units.structure);
    for stage in [Stage::StaleReads, Stage::Reads, Stage::LongOutputs] {
        let wanted = match stage {
            // No call of the history reads a file (most agents' tools): no unit has a read to
            // digest, and its candidates need not be listed.
            Stage::StaleReads | Stage::Reads => ctx.options.digest.is_some() && files.has_reads(),
            Stage::LongOutputs => ctx.options.compress.is_some(),
        };
        if !wanted {
            continue;
        }
        for o in 0..pass.measured.tail_start.min(pass.plans.len()) {
            let Some(plan) = pass.plans.get_mut(o) else { continue };
            if plan.dropped.is_some() || structure.units.get(plan.unit).is_none_or(|u| u.kind != UnitKind::Step) {
                continue;
            }
            for c in parts::candidates(ctx, forms, files, &structure, &plan.members)? {
                let (reduction, applies) = match stage {
                    Stage::StaleReads => (Reduction::Digest, c.read.is_some() && c.superseded),
                    Stage::Reads => (Reduction::Digest, c.read.is_some()),
                    Stage::LongOutputs => (Reduction::Compress, c.long),
                };
                let member = plan.members.get(c.member).ok_or_else(|| Error::internal("member out of range"))?;
                if !applies
                    || member.replace.iter().any(|(k, _)| *k == c.part)
                    || !parts::ensure_reduced(ctx, forms, member.msg, c.part, reduction, c.read.as_deref())?
                {
                    continue;
                }
                let before = ctx.member_tokens(forms, member)? as usize;
                let mut reduced = member.clone();
                reduced.replace.push((c.part, reduction));
                let after = ctx.member_tokens(forms, &reduced)? as usize;
                if after >= before {
                    continue;
                }
                let need = view - goal;
                if stage == Stage::LongOutputs && before - after > need {
                    // This one is enough: cut only as deep as the goal needs, if that keeps more
                    // (a file read becomes its digest whole: half a file misleads).
                    if let Some(cut) = cut_to_save(ctx, forms, member, c.part, need)? {
                        reduced = cut;
                    }
                }
                let after = ctx.member_tokens(forms, &reduced)? as usize;
                if let Some(slot) = plan.members.get_mut(c.member) {
                    *slot = reduced;
                }
                ctx.plan_tokens(forms, plan)?;
                view = view - before + after;
                if view <= goal {
                    return Ok(true);
                }
            }
        }
    }
    if thinning {
        thin_until(ctx, pass, forms, &mut view, goal)?;
    }
    Ok(view <= goal)
}

/// The most every reduction together could save: the results before the recent steps (and, when
/// thinning, the older turns' units), an upper bound that needs no reduction computed: from
/// the units as stored, none planned.
fn most_saved(ctx: &Ctx, forms: &mut Forms, unit_sums: &mut UnitSums, pass: &Pass, thinning: bool) -> Result<usize> {
    let tail = pass.units.active.get(pass.measured.tail_start).copied().unwrap_or(pass.units.structure.units.len());
    let saved = sums::active_before(ctx, forms, unit_sums, &pass.units, &pass.budget.pins.list, End::Tail, tail)?;
    if !thinning {
        return Ok(saved.results);
    }
    // The older turns' units may go whole (thinning): all they hold, not only their results.
    // Units are in turn order: those of older turns come first.
    let structure = &pass.units.structure;
    let current = structure.units.partition_point(|u| u.turn < structure.last_turn).min(tail);
    let older = sums::active_before(ctx, forms, unit_sums, &pass.units, &pass.budget.pins.list, End::Turn, current)?;
    Ok(saved.results + older.all.saturating_sub(older.results))
}

/// `member` with result part `part` cut to the longest head and tail that still saves `need`
/// tokens; `None` when no cut does.
fn cut_to_save(
    ctx: &Ctx,
    forms: &mut Forms,
    member: &MemberPlan,
    part: usize,
    need: usize,
) -> Result<Option<MemberPlan>> {
    let before = ctx.member_tokens(forms, member)? as usize;
    let chars = match ctx.item(member.msg)?.message.content.parts.get(part) {
        Some(Part::ToolResult(result)) => result.content.joined_text().chars().count(),
        _ => return Ok(None),
    };
    let with = |k: u32| {
        let mut cut = member.clone();
        cut.replace.push((part, Reduction::Cut(k)));
        cut
    };
    deepest_cut(chars / 2, |k| {
        let candidate = with(k);
        let after = ctx.member_tokens(forms, &candidate)? as usize;
        Ok((before.saturating_sub(after) >= need).then_some(candidate))
    })
}

/// The cut `at(k)` gives for the largest head and tail `k` (characters each, `0..=most`) it
/// accepts, by bisection: a shorter cut is never larger, so it accepts every `k` below one it
/// accepts. `None` if it accepts none.
pub(crate) fn deepest_cut<T>(most: usize, mut at: impl FnMut(u32) -> Result<Option<T>>) -> Result<Option<T>> {
    let (mut low, mut high) = (0u32, u32::try_from(most).unwrap_or(u32::MAX));
    let mut best = None;
    while low <= high {
        let mid = low + (high - low) / 2;
        match at(mid)? {
            Some(cut) => {
                best = Some(cut);
                if mid == high {
                    break;
                }
                low = mid + 1;
            }
            None if mid == 0 => break,
            None => high = mid - 1,
        }
    }
    Ok(best)
}

/// History thinning, turn by turn from the oldest, while the context does not fit.
fn thin_until(ctx: &Ctx, pass: &mut Pass, forms: &mut Forms, view: &mut usize, goal: usize) -> Result<()> {
    let decisions = thin::decide(ctx, pass)?;
    let mut turns: Vec<usize> = decisions.keys().filter_map(|u| pass.units.unit(*u).map(|unit| unit.turn)).collect();
    crate::util::sort::sort(&mut turns);
    turns.dedup();
    for turn in turns {
        for plan in pass.plans.iter_mut() {
            let Some(decision) = decisions.get(&plan.unit) else { continue };
            if pass.units.structure.units.get(plan.unit).is_none_or(|u| u.turn != turn) || plan.dropped.is_some() {
                continue;
            }
            let before = plan.tokens;
            match decision {
                Some(member) => {
                    plan.members = smallvec::smallvec![member.clone()];
                    ctx.plan_tokens(forms, plan)?;
                }
                None => plan.dropped = Some(DropReason::Thinning),
            }
            let after = if plan.dropped.is_some() { 0 } else { plan.tokens };
            *view = *view - before + after;
        }
        if *view <= goal {
            break;
        }
    }
    Ok(())
}

/// Every reduction a unit can have (digests of all its reads, compression of its long outputs):
/// the form a unit takes when it does not fit whole.
pub(crate) fn fully_reduced(
    ctx: &Ctx,
    forms: &mut Forms,
    files: &mut FileIndex,
    pass: &Pass,
    plan: &Plan,
) -> Result<Plan> {
    let mut reduced = plan.clone();
    if pass.units.unit(plan.unit).is_some_and(|u| u.kind == UnitKind::Step) {
        parts::index(ctx, files);
        let digest = ctx.options.digest.is_some();
        let compress = ctx.options.compress.is_some();
        parts::reduce_members(ctx, forms, files, &pass.units.structure, &mut reduced.members, digest, compress)?;
    }
    ctx.plan_tokens(forms, &mut reduced)?;
    Ok(reduced)
}

/// After `until_fits`: a digest, a compression or a thinned turn goes whole, so the last ones
/// made may have saved far more than the goal needed (a history larger than its budget
/// must use at least 90% of it). Until it does, gives back, newest first, what still fits: a thinned
/// unit whole, a reduced result whole, or the one where the room runs out cut to its head and
/// tail as deep as the goal needs.
pub(crate) fn give_back(ctx: &Ctx, forms: &mut Forms, pass: &mut Pass, fixed: usize, goal: usize) -> Result<()> {
    let structure = Arc::clone(&pass.units.structure);
    let mut view = fixed + pass.plans.kept_tokens();
    for plan in pass.plans.iter_mut().rev() {
        if view * 10 >= goal * 9 {
            break;
        }
        let thinned = plan.dropped == Some(DropReason::Thinning) || plan.members.iter().any(|m| m.text_only);
        if thinned {
            let Some(unit) = structure.units.get(plan.unit) else { continue };
            let mut whole = Plan::of(plan.unit, unit);
            ctx.plan_tokens(forms, &mut whole)?;
            let now = if plan.dropped.is_some() { 0 } else { plan.tokens };
            if view - now + whole.tokens <= goal {
                view = view - now + whole.tokens;
                *plan = whole;
            }
            continue;
        }
        if plan.dropped.is_some() {
            continue;
        }
        let mut changed = false;
        for k in (0..plan.members.len()).rev() {
            let Some(member) = plan.members.get(k) else { continue };
            for r in (0..member.replace.len()).rev() {
                let Some(member) = plan.members.get(k) else { break };
                let Some(&(part, _)) = member.replace.get(r) else { continue };
                let before = ctx.member_tokens(forms, member)? as usize;
                let mut whole = member.clone();
                whole.replace.remove(r);
                let after = ctx.member_tokens(forms, &whole)? as usize;
                let given = if view - before + after <= goal {
                    Some(whole)
                } else {
                    // Cut only as deep as the goal needs, if that keeps more than the reduction.
                    cut_to_save(ctx, forms, &whole, part, view - before + after - goal)?
                        .filter(|cut| ctx.member_tokens(forms, cut).is_ok_and(|n| n as usize > before))
                };
                if let Some(given) = given {
                    let now = ctx.member_tokens(forms, &given)? as usize;
                    view = view - before + now;
                    if let Some(slot) = plan.members.get_mut(k) {
                        *slot = given;
                    }
                    changed = true;
                }
            }
        }
        if changed {
            ctx.plan_tokens(forms, plan)?;
        }
    }
    Ok(())
}
