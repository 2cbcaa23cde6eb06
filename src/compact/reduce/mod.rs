//! Reduce: the stage that makes older units cheaper without dropping them. History thinning
//! (`thin`), file-read digests (`digest`) and tool-output compression (`compress`), each reduction
//! computed once per message and kept in the `ReduceCache` between builds.

pub mod cache;
pub mod compress;
pub mod digest;
pub(crate) mod thin;

use serde::{Deserialize, Serialize};

pub use cache::ReduceCache;

use super::plan::{part_indices, Ctx, MemberPlan, Pass, Plan};
use super::receipt::{Action, DropReason};
use super::repair::{Structure, UnitKind};
use crate::error::{Error, Result};
use crate::message::{Content, Part, Role, ToolResult};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DigestOptions {
    /// Names of the tools that read files (compared without case).
    pub tools: Vec<String>,
}

impl Default for DigestOptions {
    fn default() -> Self {
        DigestOptions { tools: digest::DEFAULT_FILE_READ_TOOLS.iter().map(|s| s.to_string()).collect() }
    }
}

impl DigestOptions {
    pub fn validate(&self) -> Result<()> {
        if self.tools.iter().any(|t| t.trim().is_empty()) {
            return Err(Error::invalid_argument("digest.tools must not contain empty names"));
        }
        Ok(())
    }
}

/// The stage: one plan per active unit, thinned where thinning applies (older turns), and, for
/// tool steps, the reductions they may get (digests in later turns, compression but for the
/// newest), applied now or, when `pass.lazy`, left for the selection to apply to what it keeps.
pub(crate) fn plan_active(ctx: &Ctx, cache: &mut ReduceCache, pass: &mut Pass) -> Result<()> {
    let thinning = if ctx.options.thin && pass.optimise { thin::decide(ctx, pass)? } else { Default::default() };
    let structure = std::sync::Arc::clone(&pass.structure);
    let last_ordinal = pass.active.len().saturating_sub(1);
    let mut plans: Vec<Plan> = Vec::with_capacity(pass.active.len());
    for (o, &u) in pass.active.iter().enumerate() {
        let Some(unit) = structure.units.get(u) else { continue };
        let mut plan = Plan::of(u, unit);
        if let Some(decision) = thinning.get(&u) {
            match decision {
                Some(member) => plan.members = vec![member.clone()],
                None => plan.dropped = Some(DropReason::Thinning),
            }
        }
        if pass.optimise && unit.kind == UnitKind::Step && plan.dropped.is_none() && !thinning.contains_key(&u) {
            // Seed 002: a file read becomes a digest in a later turn; seed 004: never within
            // the last N steps.
            let older = o < pass.tail_start && unit.turn < structure.last_turn;
            let fresh = o == last_ordinal;
            plan.pending = Some((older, !fresh));
            if !pass.lazy {
                apply_reductions(ctx, cache, &structure, &mut plan)?;
            }
        }
        // Lazily, a unit is counted when the selection reaches it (most never are).
        if !pass.lazy {
            ctx.plan_tokens(cache, &mut plan)?;
        }
        plans.push(plan);
    }
    pass.plans = plans;
    Ok(())
}

impl Ctx<'_, '_> {
    /// Computes (once) the reduced form of result part `j` of message `msg`; says if there is one.
    pub(crate) fn ensure_reduced(
        &self,
        cache: &mut ReduceCache,
        msg: usize,
        j: usize,
        action: Action,
        call: Option<&crate::message::ToolCall>,
    ) -> Result<bool> {
        let item = *self.item(msg)?;
        let len = item.message.content.parts.len();
        let slot = cache.part(item.id, j, len);
        let cached = match action {
            Action::Compressed => slot.compressed.as_ref().map(Option::is_some),
            _ => slot.digested.as_ref().map(Option::is_some),
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
            match action {
                Action::Compressed => self.options.compress.as_ref().and_then(|o| compress::compress_text(&text, o)),
                _ => {
                    let path = call.and_then(digest::call_path);
                    let line = digest::digest(path.as_deref(), &text);
                    (line.len() < text.len()).then_some(line)
                }
            }
        };
        let part = reduced_text.map(|t| {
            Part::ToolResult(ToolResult {
                call_id: result.call_id.clone(),
                content: Content::text(t),
                is_error: result.is_error,
                extra: result.extra.clone(),
            })
        });
        let found = part.is_some();
        cache.computed += 1;
        let slot = cache.part(item.id, j, len);
        match action {
            Action::Compressed => slot.compressed = Some(part),
            _ => slot.digested = Some(part),
        }
        Ok(found)
    }

    /// The reduced part computed by `ensure_reduced`.
    pub(crate) fn reduced(
        &self,
        cache: &mut ReduceCache,
        msg: usize,
        j: usize,
        action: Action,
    ) -> Result<Option<Part>> {
        let item = *self.item(msg)?;
        let slot = cache.part(item.id, j, item.message.content.parts.len());
        Ok(match action {
            Action::Compressed => slot.compressed.clone().flatten(),
            _ => slot.digested.clone().flatten(),
        })
    }

    pub(crate) fn find_call(&self, structure: &Structure, call_id: &str) -> Option<&crate::message::ToolCall> {
        let (msg, j) = structure.calls.get(call_id)?;
        let message: &crate::message::Message = self.items.get(*msg)?.message;
        match message.content.parts.get(*j)? {
            Part::ToolCall(call) => Some(call),
            _ => None,
        }
    }

    /// Adds digest and compression replacements to a step's result members.
    pub(crate) fn reduce_members(
        &self,
        cache: &mut ReduceCache,
        structure: &Structure,
        members: &mut [MemberPlan],
        digest: bool,
        compress: bool,
    ) -> Result<()> {
        for member in members.iter_mut() {
            let item = *self.item(member.msg)?;
            if item.message.role == Role::Assistant || member.text_only {
                continue;
            }
            for j in part_indices(item.message, member) {
                let Some(Part::ToolResult(result)) = item.message.content.parts.get(j) else { continue };
                let call = self.find_call(structure, &result.call_id);
                if let (true, Some(options), Some(call)) = (digest, self.options.digest.as_ref(), call) {
                    if result.is_error != Some(true) && digest::is_file_read(call, &options.tools) {
                        // Compute with the call so the digest can name the file; cached after.
                        if self.ensure_reduced(cache, member.msg, j, Action::Digested, Some(call))? {
                            member.replace.push((j, Action::Digested));
                            continue;
                        }
                    }
                }
                if let (true, Some(options)) = (compress, self.options.compress.as_ref()) {
                    if self.part_tokens(cache, member.msg, j)? > options.max_tokens
                        && self.ensure_reduced(cache, member.msg, j, Action::Compressed, None)?
                    {
                        member.replace.push((j, Action::Compressed));
                    }
                }
            }
        }
        Ok(())
    }
}

/// Applies the reductions a plan still has pending.
pub(crate) fn apply_reductions(
    ctx: &Ctx,
    cache: &mut ReduceCache,
    structure: &Structure,
    plan: &mut Plan,
) -> Result<()> {
    if let Some((digest, compress)) = plan.pending.take() {
        ctx.reduce_members(cache, structure, &mut plan.members, digest, compress)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::plan::testing::{through_reduce, turns, ENCODING};
    use crate::compact::summary::SummaryState;
    use crate::compact::BuildOptions;

    #[test]
    fn older_turns_are_thinned_to_their_request_and_last_answer() {
        let log = turns(3, 2, 5);
        let items = log.items();
        let options = BuildOptions { thin: true, keep_recent_steps: 3, summary: None, ..BuildOptions::default() };
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let pass = through_reduce(&ctx, &mut cache, &state);
        // Turn 1 (m2..m7): the request and the answer stay, the two tool steps are dropped.
        let turn1: Vec<&Plan> = pass.plans.iter().filter(|p| pass.unit(p.unit).unwrap().turn == 1).collect();
        let fates: Vec<Option<DropReason>> = turn1.iter().map(|p| p.dropped).collect();
        assert_eq!(fates, [None, Some(DropReason::Thinning), Some(DropReason::Thinning), None]);
        // The last turn's steps are recent: whole.
        assert!(pass
            .plans
            .iter()
            .rev()
            .take(2)
            .all(|p| p.dropped.is_none() && p.members.iter().all(|m| m.replace.is_empty())));
    }

    #[test]
    fn long_results_of_older_steps_are_digested_or_compressed() {
        let log = turns(3, 1, 400);
        let items = log.items();
        let options = BuildOptions { keep_recent_steps: 1, summary: None, ..BuildOptions::default() };
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let pass = through_reduce(&ctx, &mut cache, &state);
        assert!(!pass.lazy, "no budget: reductions are applied at once");
        let steps: Vec<&Plan> =
            pass.plans.iter().filter(|p| pass.unit(p.unit).unwrap().kind == UnitKind::Step).collect();
        let actions: Vec<Action> = steps.iter().map(|p| p.members[1].action()).collect();
        // Turns 1 and 2 read files in an earlier turn: digests; the current turn's read is not
        // digested (it may be compressed: it is not the newest unit).
        assert_eq!(actions[..2], [Action::Digested, Action::Digested]);
        assert_ne!(actions[2], Action::Digested);
        assert!(steps[0].tokens < items[3].tokens as usize, "a digest is cheaper than the read");
        let computed = cache.computed;
        through_reduce(&ctx, &mut cache, &state);
        assert_eq!(cache.computed, computed, "a second pass reuses the reductions");
    }
}
