//! Reduce: the stage that makes units cheaper without dropping them, least lossy first and only
//! while the context does not fit (`stages`): file reads a later call made stale become digests,
//! then older file reads, then long outputs are compressed, the last one only as much as needed;
//! without a summary, complete earlier turns are then thinned (`thin`). The recent steps stay
//! whole. Each reduction is computed once per message part and kept in the `ReduceCache`.
//! Without a budget and without a summary, the older turns' reads and long outputs are reduced
//! as they always were (`plan_active`).

pub mod cache;
pub mod compress;
pub mod digest;
pub(crate) mod index;
pub(crate) mod stages;
pub(crate) mod thin;

pub use cache::ReduceCache;
pub use digest::DigestOptions;

use super::plan::{part_indices, Ctx, MemberPlan, Mode, Pass, Plan, Plans, Reduction};
use super::repair::{Structure, UnitKind};
use crate::error::{Error, Result};
use crate::message::{Content, Part, Role, ToolResult};

/// The plans of the active units. With a budget or a summary none is made here: the later stages
/// plan a unit when they reach it (`Pass::plan_at`, `Pass::plan_from`), so a long history's
/// build plans what its context holds. In `Mode::Unlimited` (no budget, no summary) the context
/// holds every unit: each is planned, with seed 002's digests of file reads in older turns and
/// the compression of long outputs but the newest, as they always were.
pub(crate) fn plan_active(ctx: &Ctx, cache: &mut ReduceCache, pass: &mut Pass) -> Result<()> {
    if pass.mode != Mode::Unlimited {
        pass.plans = Plans::unplanned(pass.active.len());
        return Ok(());
    }
    let structure = std::sync::Arc::clone(&pass.structure);
    let last_ordinal = pass.active.len().saturating_sub(1);
    index(ctx, cache);
    let mut plans: Vec<Plan> = Vec::with_capacity(pass.active.len());
    for (o, &u) in pass.active.iter().enumerate() {
        let Some(unit) = structure.units.get(u) else { continue };
        let mut plan = Plan::of(u, unit);
        if unit.kind == UnitKind::Step {
            let older = o < pass.tail_start && unit.turn < structure.last_turn;
            ctx.reduce_members(cache, &structure, &mut plan.members, older, o != last_ordinal)?;
            ctx.plan_tokens(cache, &mut plan)?;
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
pub(crate) fn fit(ctx: &Ctx, cache: &mut ReduceCache, pass: &mut Pass) -> Result<()> {
    let window = super::select::window_cutoff(ctx, pass).is_some();
    if pass.mode == Mode::Unlimited {
        if window {
            pass.mode = Mode::Selected;
        }
        return Ok(());
    }
    let goal = match (pass.max, &ctx.options.summary) {
        (Some(max), _) => max,
        (None, Some(summary)) => summary.trigger(None),
        (None, None) => usize::MAX,
    };
    let pins_whole: usize = pass.pins.iter().map(|p| p.whole).sum();
    let fixed =
        pass.system_tokens + pass.state_tokens + pins_whole + pass.summary_tokens + crate::tokens::REPLY_PRIMING;
    let placeholder = if pass.verbatim_placeholder { pass.placeholder_tokens } else { 0 };
    if !window && fixed + placeholder + pass.unreduced <= goal {
        // The context holds every unit.
        pass.mode = Mode::Verbatim;
        pass.plan_all();
        stages::count_all(ctx, cache, pass)?;
        return whole_pins(ctx, cache, pass);
    }
    let fits = stages::until_fits(ctx, cache, pass, fixed + pass.placeholder_tokens, goal)?;
    let fixed_all = fixed + pass.placeholder_tokens;
    if fits && !window && pass.max.is_some_and(|max| leaves_unused(pass, fixed_all, max)) {
        stages::give_back(ctx, cache, pass, fixed_all, goal)?;
    }
    if fits && !window && pass.max.is_some_and(|max| leaves_unused(pass, fixed_all, max)) {
        // Still short (a thinned unit too large to give back whole): the selection (newest
        // units first, the boundary unit cut to fit) uses the budget, so the reductions are
        // undone and left to it.
        plan_active(ctx, cache, pass)?;
        pass.lazy = true;
        pass.mode = Mode::Selected;
        return Ok(());
    }
    if !window && (fits || pass.max.is_none()) {
        // Fits reduced, or nothing is dropped without a budget: the context holds every unit.
        pass.mode = Mode::Reduced;
        pass.plan_all();
        stages::count_all(ctx, cache, pass)?;
        return whole_pins(ctx, cache, pass);
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
fn whole_pins(ctx: &Ctx, cache: &mut ReduceCache, pass: &mut Pass) -> Result<()> {
    let structure = std::sync::Arc::clone(&pass.structure);
    for pin in pass.pins.iter_mut() {
        super::pins::uncut(ctx, cache, &structure, pin)?;
    }
    pass.pins_tokens = pass.pins.iter().map(|p| p.plan.tokens).sum();
    Ok(())
}

/// The file index, up to date with the history.
pub(crate) fn index(ctx: &Ctx, cache: &mut ReduceCache) {
    let tools: &[String] = ctx.options.digest.as_ref().map_or(&[], |d| d.tools.as_slice());
    cache.files.update(ctx.items, tools);
}

impl Ctx<'_, '_> {
    /// Computes (once) the digested or compressed form of result part `j` of message `msg`;
    /// says if there is one (shorter than the part).
    pub(crate) fn ensure_reduced(
        &self,
        cache: &mut ReduceCache,
        msg: usize,
        j: usize,
        reduction: Reduction,
        path: Option<&str>,
    ) -> Result<bool> {
        let item = *self.item(msg)?;
        let len = item.message.content.parts.len();
        let slot = cache.part(item.id, j, len);
        let cached = match reduction {
            Reduction::Compress => slot.compressed.as_ref().map(Option::is_some),
            Reduction::Digest => slot.digested.as_ref().map(Option::is_some),
            Reduction::Cut(_) => return Ok(true),
        };
        if let Some(done) = cached {
            return Ok(done);
        }
        let Some(Part::ToolResult(result)) = item.message.content.parts.get(j) else {
            return Ok(false);
        };
        let text_only = result.content.parts.iter().all(|p| matches!(p, Part::Text { .. }));
        let text = result.content.joined_text();
        let reduced_text = if !text_only || text.is_empty() {
            None
        } else {
            match reduction {
                Reduction::Compress => self.options.compress.as_ref().and_then(|o| compress::compress_text(&text, o)),
                _ => {
                    let line = digest::digest(path.filter(|p| !p.is_empty()), &text);
                    (line.len() < text.len()).then_some(line)
                }
            }
        };
        let part = reduced_text.map(|t| result_with(result, t));
        let found = part.is_some();
        cache.computed += 1;
        let slot = cache.part(item.id, j, len);
        match reduction {
            Reduction::Compress => slot.compressed = Some(part),
            _ => slot.digested = Some(part),
        }
        Ok(found)
    }

    /// The reduced part: computed by `ensure_reduced`, or cut here.
    pub(crate) fn reduced(
        &self,
        cache: &mut ReduceCache,
        msg: usize,
        j: usize,
        reduction: Reduction,
    ) -> Result<Option<Part>> {
        let item = *self.item(msg)?;
        if let Reduction::Cut(chars) = reduction {
            return Ok(match item.message.content.parts.get(j) {
                Some(Part::ToolResult(result)) => {
                    let text = result.content.joined_text();
                    Some(result_with(result, crate::extract::head_tail(&text, chars as usize, chars as usize)))
                }
                _ => None,
            });
        }
        let slot = cache.part(item.id, j, item.message.content.parts.len());
        Ok(match reduction {
            Reduction::Compress => slot.compressed.clone().flatten(),
            _ => slot.digested.clone().flatten(),
        })
    }

    /// Adds digests (file reads, when `digest`) and compression (long outputs, when `compress`) to
    /// a step's result members: every reduction there is, the most a unit can be reduced.
    pub(crate) fn reduce_members(
        &self,
        cache: &mut ReduceCache,
        structure: &Structure,
        members: &mut [MemberPlan],
        digest: bool,
        compress: bool,
    ) -> Result<()> {
        for c in self.candidates(cache, structure, members)? {
            let member = members.get_mut(c.member).ok_or_else(|| Error::internal("member out of range"))?;
            if member.replace.iter().any(|(k, _)| *k == c.part) {
                continue;
            }
            if digest
                && c.read.is_some()
                && self.ensure_reduced(cache, member.msg, c.part, Reduction::Digest, c.read.as_deref())?
            {
                member.replace.push((c.part, Reduction::Digest));
            } else if compress && c.long && self.ensure_reduced(cache, member.msg, c.part, Reduction::Compress, None)? {
                member.replace.push((c.part, Reduction::Compress));
            }
        }
        Ok(())
    }

    /// The result parts of `members` that a reduction could apply to, in order.
    pub(crate) fn candidates(
        &self,
        cache: &mut ReduceCache,
        structure: &Structure,
        members: &[MemberPlan],
    ) -> Result<Vec<Candidate>> {
        let mut out = Vec::new();
        for (m, member) in members.iter().enumerate() {
            let item = *self.item(member.msg)?;
            if item.message.role == Role::Assistant || member.text_only {
                continue;
            }
            for j in part_indices(item.message, member) {
                let Some(Part::ToolResult(result)) = item.message.content.parts.get(j) else { continue };
                let call = structure.calls.get(&result.call_id).copied();
                let read = match (call, self.options.digest.is_some(), result.is_error) {
                    (Some((msg, part)), true, None | Some(false)) => cache.files.read(msg, part).map(String::from),
                    _ => None,
                };
                let superseded = match (&read, call) {
                    (Some(path), Some((msg, _))) => cache.files.superseded(msg, path),
                    _ => false,
                };
                let long = match &self.options.compress {
                    Some(options) => self.part_tokens(cache, member.msg, j)? > options.max_tokens,
                    None => false,
                };
                out.push(Candidate { member: m, part: j, read, superseded, long });
            }
        }
        Ok(out)
    }
}

/// A result part a reduction could apply to.
pub(crate) struct Candidate {
    pub(crate) member: usize,
    pub(crate) part: usize,
    /// The file it holds, if it is a file read (digests on).
    pub(crate) read: Option<String>,
    /// A later call touches that file.
    pub(crate) superseded: bool,
    /// Longer than `compress.maxTokens` (compression on).
    pub(crate) long: bool,
}

fn result_with(result: &ToolResult, text: String) -> Part {
    Part::ToolResult(ToolResult {
        call_id: result.call_id.clone(),
        content: Content::text(text),
        is_error: result.is_error,
        extra: result.extra.clone(),
    })
}

#[cfg(test)]
mod tests;
