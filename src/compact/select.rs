//! Select: what the context has room for, within the split `allot` made: units newest first
//! within a room, each reduced or cut as far as it must be to go in (`select`); with a section that
//! depends on what is selected (the bridge, the memory's turn summaries), a few rounds
//! (`select_with`); and the plans made what a selection took (`apply`). The summary and fill
//! stages select with these.

use super::forms::{part_indices, Ctx, Plan, Reduction};
use super::pass::Pass;
use super::receipt::DropReason;
use super::reduce::stages::{deepest_cut, fully_reduced};
use super::reduce::Reductions;
use crate::error::Result;
use crate::message::Part;

/// What a selection took: the plans it keeps (by ordinal in `active`), where it stopped (a suffix
/// starts there), what it used, and the units it left out on the way (without a summary).
pub(crate) struct Selection {
    pub(crate) taken: Vec<(usize, Plan)>,
    pub(crate) stop: usize,
    pub(crate) used: usize,
    pub(crate) skipped: Vec<(usize, DropReason)>,
}

/// The tokens left for the recent messages: the budget less everything else (with the reserve for
/// a placeholder user message); unbounded without a budget.
pub(crate) fn base_room(pass: &Pass) -> usize {
    match pass.budget.max {
        Some(max) => max.saturating_sub(pass.fixed_tokens(true)),
        None => usize::MAX,
    }
}

/// Units newest first within `room` tokens. A unit that does not fit whole is taken with every
/// reduction it can have (the newest step excepted); the one where the room runs out may go in
/// cut to its head and tail if more than 5% of the budget is left. `contiguous` (a summary covers
/// what is before): the first unit that does not fit ends the selection; otherwise it is skipped
/// and older units may still be taken. The count window ends it too.
pub(crate) fn select(
    ctx: &Ctx,
    reductions: &mut Reductions,
    pass: &Pass,
    room: usize,
    contiguous: bool,
) -> Result<Selection> {
    let cutoff = pass.units.window_cutoff(ctx);
    let len = pass.plans.len();
    let newest = len.saturating_sub(1);
    let cut_floor = pass.budget.max.map_or(usize::MAX, |m| m / 20);
    let mut remaining = room;
    let mut selection = Selection { taken: Vec::new(), stop: len, used: 0, skipped: Vec::new() };
    for o in (0..len).rev() {
        let Some(plan) = pass.plans.plan_at(&pass.units, o) else { continue };
        if let Some(reason) = plan.dropped {
            selection.skipped.push((o, reason));
            continue;
        }
        let outside = cutoff.is_some_and(|c| plan.members.iter().all(|m| m.msg < c));
        if outside {
            if contiguous {
                break;
            }
            selection.skipped.push((o, DropReason::Window));
            continue;
        }
        if !contiguous && remaining <= room / 20 && !selection.taken.is_empty() {
            selection.skipped.push((o, DropReason::Budget));
            if cutoff.is_none() && o <= pass.plans.first() {
                // The room is spent: every older unit is left out for the budget, as `apply`
                // leaves out whatever is before the selection, without being looked at.
                break;
            }
            continue;
        }
        let mut form = plan.into_owned();
        if !form.counted {
            ctx.plan_tokens(reductions.forms, &mut form)?;
        }
        if form.tokens > remaining && o != newest {
            form = reduced_for(ctx, reductions, pass, &form, remaining)?;
        }
        if form.tokens > remaining {
            // With a summary, the unit where the room runs out is the suffix's boundary: cut to
            // fit, or the end. Without, it is skipped (and cut to fill what is left at the end).
            let cut = match contiguous && remaining > cut_floor {
                true => cut_to_fit(ctx, reductions, &form, remaining, true)?,
                false => None,
            };
            match cut {
                Some(cut) => form = cut,
                None if contiguous => break,
                None => {
                    selection.skipped.push((o, DropReason::Budget));
                    continue;
                }
            }
        }
        remaining -= form.tokens;
        selection.used += form.tokens;
        selection.stop = o;
        selection.taken.push((o, form));
        if contiguous && remaining == 0 {
            break;
        }
    }
    if !contiguous && remaining > cut_floor {
        // What is left goes to the newest unit skipped for the budget, cut to fit.
        let newest_skipped = selection.skipped.iter().position(|(_, r)| *r == DropReason::Budget);
        if let Some(at) = newest_skipped {
            let (o, _) = selection.skipped[at];
            if let Some(plan) = pass.plans.plan_at(&pass.units, o) {
                let mut form = reduced_for(ctx, reductions, pass, &plan, remaining)?;
                if form.tokens > remaining {
                    form = match cut_to_fit(ctx, reductions, &form, remaining, true)? {
                        Some(cut) => cut,
                        None => form,
                    };
                }
                if form.tokens <= remaining {
                    selection.skipped.remove(at);
                    selection.used += form.tokens;
                    selection.stop = selection.stop.min(o);
                    selection.taken.push((o, form));
                }
            }
        }
    }
    if contiguous {
        // Everything older than the suffix is covered by the summary.
        selection.skipped.clear();
    }
    Ok(selection)
}

/// `plan` with every reduction it can have; when that leaves part of `room` unused, its results
/// cut only as deep as the room needs instead (more of them is kept). May still exceed `room`.
fn reduced_for(ctx: &Ctx, reductions: &mut Reductions, pass: &Pass, plan: &Plan, room: usize) -> Result<Plan> {
    let form = fully_reduced(ctx, reductions.forms, reductions.files, pass, plan)?;
    if form.tokens >= room {
        return Ok(form);
    }
    Ok(match cut_to_fit(ctx, reductions, &form, room, false)? {
        Some(cut) if cut.tokens > form.tokens => cut,
        _ => form,
    })
}

/// The plan cut to the longest head and tail of its results (and texts, with `texts`; calls,
/// thinking and digests whole) that fits `room`; if that leaves more than 5% of the room (or does
/// not fit at all), the same with its file reads cut instead of digested, when that uses more of
/// it (the unit stays whole and valid: only its calls are never cut). `None` if nothing fits.
fn cut_to_fit(ctx: &Ctx, reductions: &mut Reductions, plan: &Plan, room: usize, texts: bool) -> Result<Option<Plan>> {
    let kept = cut_to_fit_with(ctx, reductions, plan, room, texts, false)?;
    // Within 5% of the room already: the digests stay.
    if kept.as_ref().is_some_and(|cut| cut.tokens * 20 >= room * 19) {
        return Ok(kept);
    }
    let cut = cut_to_fit_with(ctx, reductions, plan, room, texts, true)?;
    Ok(match (kept, cut) {
        (Some(kept), Some(cut)) if cut.tokens <= kept.tokens => Some(kept),
        (kept, None) => kept,
        (_, cut) => cut,
    })
}

fn cut_to_fit_with(
    ctx: &Ctx,
    reductions: &mut Reductions,
    plan: &Plan,
    room: usize,
    texts: bool,
    digests: bool,
) -> Result<Option<Plan>> {
    let mut longest = 0usize;
    for member in &plan.members {
        let message = ctx.item(member.msg)?.message;
        for j in part_indices(message, member) {
            longest = longest.max(match message.content.parts.get(j) {
                Some(Part::Text { text, .. }) => text.chars().count(),
                Some(Part::ToolResult(result)) => result.content.joined_text().chars().count(),
                _ => 0,
            });
        }
    }
    let at = |chars: u32, reductions: &mut Reductions| -> Result<Plan> {
        let mut cut = plan.clone();
        for member in cut.members.iter_mut() {
            let message = ctx.item(member.msg)?.message;
            if texts {
                member.cut_text = Some(chars);
            }
            for j in part_indices(message, member) {
                if !matches!(message.content.parts.get(j), Some(Part::ToolResult(_))) {
                    continue;
                }
                match member.replace.iter_mut().find(|(k, _)| *k == j) {
                    Some((_, Reduction::Digest)) if !digests => {}
                    Some((_, reduction)) => *reduction = Reduction::Cut(chars),
                    None => member.replace.push((j, Reduction::Cut(chars))),
                }
            }
        }
        ctx.plan_tokens(reductions.forms, &mut cut)?;
        Ok(cut)
    };
    deepest_cut(longest / 2, |k| {
        let cut = at(k, reductions)?;
        Ok((cut.tokens <= room).then_some(cut))
    })
}

/// A selection with a section that depends on it (the bridge, the memory's turn summaries): the
/// room less `reserve` first; if the section then takes less, once more with the room less what it
/// took, and while that does not fit, again with the room less what the section took then (a few
/// times at most: what the section takes depends on what the selection keeps). The fitting one
/// that uses the most is kept.
pub(crate) fn select_with<X>(
    ctx: &Ctx,
    reductions: &mut Reductions,
    pass: &mut Pass,
    room: usize,
    reserve: usize,
    contiguous: bool,
    mut section: impl FnMut(&Ctx, &mut Reductions, &mut Pass, &Selection) -> Result<(X, usize)>,
) -> Result<(Selection, X)> {
    let first = select(ctx, reductions, pass, room.saturating_sub(reserve), contiguous)?;
    let (x, used) = section(ctx, reductions, pass, &first)?;
    if used >= reserve || room == usize::MAX {
        return Ok((first, x));
    }
    let mut best_total = first.used + used;
    let mut best = (first, x);
    let mut left = used;
    let mut tried = vec![reserve];
    while !tried.contains(&left) && tried.len() < 4 {
        tried.push(left);
        let next = select(ctx, reductions, pass, room.saturating_sub(left), contiguous)?;
        if next.used <= best.0.used && next.stop >= best.0.stop {
            break;
        }
        let (y, took) = section(ctx, reductions, pass, &next)?;
        let fits = next.used + took <= room;
        if fits && next.used + took > best_total {
            best_total = next.used + took;
            best = (next, y);
        }
        if fits {
            break;
        }
        left = took;
    }
    Ok(best)
}

/// Makes the plans what `selection` took; the others are covered (a suffix: by the summary and the
/// bridge) or dropped for the reason the selection gives.
pub(crate) fn apply(pass: &mut Pass, selection: Selection, contiguous: bool) {
    let Selection { taken, stop, skipped, .. } = selection;
    // What the selection looked at one by one is planned; what is before it, all left out, not.
    let oldest = taken.iter().map(|(o, _)| *o).chain(skipped.iter().map(|(o, _)| *o)).min();
    if let Some(oldest) = oldest {
        pass.plans.plan_from(&pass.units, oldest);
    }
    for (o, reason) in skipped {
        if let Some(plan) = pass.plans.get_mut(o) {
            plan.dropped = Some(reason);
        }
    }
    for (o, plan) in taken {
        if let Some(slot) = pass.plans.get_mut(o) {
            *slot = plan;
        }
    }
    let left_out = if contiguous { DropReason::Bridge } else { DropReason::Budget };
    for (_, plan) in pass.plans.enumerate_mut().take_while(|(o, _)| *o < stop) {
        if plan.dropped.is_none() {
            plan.dropped = Some(left_out);
        }
    }
    // The units not planned are before `stop` (every unit taken is planned).
    if pass.plans.first() > 0 {
        pass.plans.before = Some(left_out);
    }
    if contiguous {
        pass.suffix_start = Some(stop);
    }
}

#[cfg(test)]
mod tests;
