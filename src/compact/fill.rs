//! Fill: the stage after summarise. The recent section when not everything fits: with a summary,
//! the suffix that fits and the bridge before it; without one, the units that fit within what the
//! memory's turn summaries leave. And which stored messages a context holds, for the memory's turn
//! summaries (here and in assemble).

use super::forms::{Ctx, Plan, TextCounts};
use super::pass::{Mode, Pass};
use super::reduce::stages::count_all;
use super::reduce::Reductions;
use super::select::{apply, base_room, select, select_with, Selection};
use super::summarise::{self, Bridges};
use super::turn_summaries::{self, MemoryUse};
use crate::error::Result;
use crate::message::Message;

/// The recent section when not everything fits (`Mode::Selected`): with a summary, the suffix
/// that fits, the bridge covering what lies between the summary in force and it; without one,
/// the units that fit, within what the memory's turn summaries leave.
pub(crate) fn fill(
    ctx: &Ctx,
    reductions: &mut Reductions,
    texts: &mut TextCounts,
    bridges: &mut Bridges,
    pass: &mut Pass,
) -> Result<()> {
    if pass.mode != Mode::Selected {
        // The context holds every unit: each is planned (`reduce::fit`).
        return count_all(ctx, reductions.forms, pass);
    }
    let room = base_room(pass);
    if ctx.options.summary.is_some() {
        let selection = select(ctx, reductions, pass, room, true)?;
        if selection.stop == 0 {
            apply(pass, selection, true);
            return Ok(());
        }
        let cap = summarise::bridge_cap(ctx, texts, pass);
        let (selection, bridge) =
            select_with(ctx, reductions, pass, room, cap, true, |ctx, reductions, pass, selection| {
                let bridge = summarise::bridge(ctx, reductions, texts, bridges, pass, selection.stop, cap)?;
                let tokens = bridge.as_ref().map_or(0, |(_, b)| b.tokens);
                Ok((bridge, tokens))
            })?;
        pass.bridge = bridge;
        apply(pass, selection, true);
    } else if ctx.options.memory.is_some() && !ctx.turns.is_empty() {
        let reserve = ctx
            .options
            .memory
            .as_ref()
            .and_then(|m| m.max_tokens)
            .map_or(pass.budget.share, |m| pass.budget.share.min(m as usize));
        let (selection, _) = select_with(ctx, reductions, pass, room, reserve, false, |ctx, _, pass, selection| {
            let used = memory_tokens_for(ctx, texts, pass, selection, reserve);
            Ok(((), used))
        })?;
        apply(pass, selection, false);
    } else {
        let selection = select(ctx, reductions, pass, room, false)?;
        apply(pass, selection, false);
    }
    Ok(())
}

/// Which stored messages a context holds whole enough to count as there (thinned ones do not).
pub(crate) fn present(len: usize, plans: impl IntoIterator<Item = impl std::borrow::Borrow<Plan>>) -> Vec<bool> {
    let mut present = vec![false; len];
    for plan in plans {
        for member in plan.borrow().members.iter().filter(|m| !m.text_only) {
            if let Some(slot) = present.get_mut(member.msg) {
                *slot = true;
            }
        }
    }
    present
}

/// The memory's turn summaries for the turns a context does not wholly hold (`present`), within
/// `room` tokens and the memory's own cap.
pub(crate) fn memory_section(
    ctx: &Ctx,
    texts: &mut TextCounts,
    present: &[bool],
    room: usize,
) -> Option<(Option<Message>, MemoryUse)> {
    let options = ctx.options.memory.as_ref()?;
    if ctx.turns.is_empty() {
        return None;
    }
    let room = options.max_tokens.map_or(room, |m| room.min(m as usize));
    let in_context = |i: usize| present.get(i).copied().unwrap_or(false);
    turn_summaries::turn_summaries(ctx.turns, in_context, room, ctx.encoding, ctx.options.format, &mut texts.lines)
}

/// The tokens the memory's turn summaries take beside `selection` (for `fill`).
pub(crate) fn memory_tokens_for(
    ctx: &Ctx,
    texts: &mut TextCounts,
    pass: &Pass,
    selection: &Selection,
    room: usize,
) -> usize {
    let kept = pass
        .units
        .system
        .iter()
        .chain(pass.budget.pins.list.iter().map(|p| &p.plan))
        .chain(selection.taken.iter().map(|(_, p)| p));
    let present = present(ctx.items.len(), kept);
    memory_section(ctx, texts, &present, room).map_or(0, |(_, used)| used.tokens)
}
