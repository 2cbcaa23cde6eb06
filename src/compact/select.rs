//! Select: what the context has room for. `allot` splits the budget (seed 001) between the system
//! prompt, the summary and the recent messages; `measure` finds the recent steps kept whole and
//! whether anything needs optimising; `window` is seed 000's count window; `fill_budget` keeps
//! units newest first while they fit, whole or not at all.

use super::assemble::placeholder;
use super::plan::{made_up_tokens, Ctx, MemberPlan, Pass};
use super::receipt::{BudgetReport, DropReason};
use super::reduce::{apply_reductions, ReduceCache};
use super::summarise::summary_messages;
use crate::error::{Error, Result};
use crate::tokens::REPLY_PRIMING;

/// The budget arithmetic: the summary in force and its tokens, and with a budget the report and
/// what the recent messages may use (`recent_cap`). A budget too small for the system prompt
/// is an error.
pub(crate) fn allot(ctx: &Ctx, cache: &mut ReduceCache, pass: &mut Pass) -> Result<()> {
    let options = ctx.options;
    pass.summary_messages = pass.summary.map(|s| summary_messages(options, s)).unwrap_or_default();
    pass.summary_tokens = pass.summary_messages.iter().map(|m| made_up_tokens(ctx, cache, m)).sum();
    // Reserved always: Anthropic needs a user message first, and no provider takes an empty list.
    let placeholder_tokens = made_up_tokens(ctx, cache, &placeholder(options.format));
    if let Some(budget) = &options.budget {
        let max = budget.max_tokens();
        let system_tokens = pass.system_tokens;
        let floor = system_tokens + REPLY_PRIMING + placeholder_tokens;
        if floor > max {
            return Err(Error::invalid_argument(format!(
                "the budget of {max} tokens ({} × {}) is too small for the system prompt alone ({system_tokens} tokens)",
                budget.context_window, budget.target_ratio
            )));
        }
        let avail = max - floor;
        let summary_budget = (avail as f64 * budget.summary_ratio).floor() as usize;
        let recent_budget = (avail as f64 * budget.recent_ratio).floor() as usize;
        if pass.summary_tokens > avail {
            pass.notes
                .push(format!("the summary ({} tokens) does not fit the budget and was left out", pass.summary_tokens));
            pass.summary_tokens = 0;
        }
        pass.recent_cap = recent_budget.min(avail - pass.summary_tokens);
        pass.budget = Some(BudgetReport { max_tokens: max, system_tokens, summary_budget, recent_budget });
    }
    pass.summary_in_context = pass.summary.is_some() && (pass.summary_tokens > 0 || pass.summary_messages.is_empty());
    Ok(())
}

/// The recent steps kept whole (seed 004), the active messages and their tokens unreduced, and
/// whether to optimise at all: seed 001 leaves up to `min_messages` messages alone if they fit.
pub(crate) fn measure(ctx: &Ctx, cache: &mut ReduceCache, pass: &mut Pass) -> Result<()> {
    let options = ctx.options;
    // The ordinal (in `active`) where the last N steps begin.
    let keep = options.keep_recent_steps.max(1);
    let mut tail_start = 0usize;
    let mut steps_seen = 0usize;
    for (o, &u) in pass.active.iter().enumerate().rev() {
        if pass.unit(u).is_some_and(|unit| unit.is_step_like()) {
            steps_seen += 1;
            if steps_seen >= keep {
                tail_start = o;
                break;
            }
        }
    }
    pass.tail_start = if steps_seen < keep { 0 } else { tail_start };

    let mut msgs: Vec<usize> =
        pass.active.iter().filter_map(|u| pass.unit(*u)).flat_map(|unit| unit.members.iter().map(|m| m.msg)).collect();
    msgs.sort_unstable();
    msgs.dedup();
    pass.active_messages = msgs.len();

    let mut unreduced = 0usize;
    for &u in &pass.active {
        let Some(unit) = pass.structure.units.get(u) else { continue };
        for member in &unit.members {
            unreduced += match member.parts {
                None => ctx.item(member.msg)?.tokens as usize,
                Some(_) => {
                    let plan = MemberPlan {
                        msg: member.msg,
                        parts: member.parts.clone(),
                        replace: Vec::new(),
                        text_only: false,
                    };
                    ctx.member_tokens(cache, &plan)? as usize
                }
            };
        }
    }
    pass.unreduced = unreduced;
    pass.optimise = match &options.budget {
        Some(budget) => !(pass.active_messages <= budget.min_messages && unreduced <= pass.recent_cap),
        None => true,
    };
    Ok(())
}

/// Seed 000's count window: only units with a message among the last N stay, tool chains whole.
pub(crate) fn window(ctx: &Ctx, pass: &mut Pass) {
    let Some(n) = ctx.options.max_messages else { return };
    let mut msgs: Vec<usize> =
        pass.plans.iter().filter(|p| p.dropped.is_none()).flat_map(|p| p.members.iter().map(|m| m.msg)).collect();
    msgs.sort_unstable();
    msgs.dedup();
    if msgs.len() > n {
        let cutoff = msgs.get(msgs.len() - n).copied().unwrap_or(0);
        for plan in pass.plans.iter_mut().filter(|p| p.dropped.is_none()) {
            if plan.members.iter().all(|m| m.msg < cutoff) {
                plan.dropped = Some(DropReason::Window);
            }
        }
    }
}

/// Seed 001's token budget: newest first, units whole or skipped, until the recent budget is
/// full. A unit whose reductions wait (`pass.lazy`) is reduced and counted when reached.
pub(crate) fn fill_budget(ctx: &Ctx, cache: &mut ReduceCache, pass: &mut Pass) -> Result<()> {
    if ctx.options.budget.is_none() || !pass.optimise {
        return Ok(());
    }
    let recent_cap = pass.recent_cap;
    let lazy = pass.lazy;
    let mut remaining = recent_cap;
    for plan in pass.plans.iter_mut().rev().filter(|p| p.dropped.is_none()) {
        // Full to 95%: what is left would be scattered fragments of long ago.
        if remaining.saturating_mul(20) < recent_cap {
            plan.dropped = Some(DropReason::Budget);
            continue;
        }
        if plan.pending.is_some() || lazy {
            apply_reductions(ctx, cache, &pass.structure, plan)?;
            ctx.plan_tokens(cache, plan)?;
        }
        if plan.tokens <= remaining {
            remaining -= plan.tokens;
        } else {
            plan.dropped = Some(DropReason::Budget);
        }
    }
    if pass.plans.last().is_some_and(|p| p.dropped == Some(DropReason::Budget)) {
        pass.notes.push("the newest message does not fit the recent budget".to_string());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::plan::testing::{through_reduce, turns, ENCODING};
    use crate::compact::plan::{Pass, Plan};
    use crate::compact::summary::SummaryState;
    use crate::compact::{BudgetOptions, BuildOptions};

    fn options(budget: Option<BudgetOptions>) -> BuildOptions {
        BuildOptions { budget, summary: None, compress: None, digest: None, ..BuildOptions::default() }
    }

    #[test]
    fn allot_splits_what_the_system_prompt_leaves() {
        let log = turns(2, 1, 5);
        let items = log.items();
        let options = options(Some(BudgetOptions { context_window: 10_000, ..BudgetOptions::default() }));
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let pass = through_reduce(&ctx, &mut cache, &state);
        let budget = pass.budget.unwrap();
        assert_eq!(budget.max_tokens, 6_000);
        let placeholder = made_up_tokens(&ctx, &mut cache, &placeholder(options.format));
        let avail = 6_000 - pass.system_tokens - REPLY_PRIMING - placeholder;
        assert_eq!(
            (budget.summary_budget, budget.recent_budget),
            ((avail as f64 * 0.26) as usize, (avail as f64 * 0.65) as usize)
        );
        assert_eq!(pass.recent_cap, budget.recent_budget);

        let tiny = self::options(Some(BudgetOptions { context_window: 10, ..BudgetOptions::default() }));
        let ctx = Ctx { options: &tiny, ..ctx };
        let structure = crate::compact::repair::structure_for(&items, true, &mut cache);
        let state = SummaryState::default();
        let mut pass = Pass::new(&ctx, &mut cache, structure, &state).unwrap();
        assert!(allot(&ctx, &mut cache, &mut pass).unwrap_err().message.contains("too small for the system prompt"));
    }

    #[test]
    fn measure_finds_the_recent_steps_and_leaves_small_histories_alone() {
        let log = turns(3, 2, 5);
        let items = log.items();
        let options = BuildOptions { keep_recent_steps: 2, ..options(None) };
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let pass = through_reduce(&ctx, &mut cache, &state);
        // Each turn is a user unit, two steps and an answer: the last two step-like units are
        // turn 3's second step and its answer.
        let tail: Vec<usize> = pass.active[pass.tail_start..].iter().map(|u| pass.unit(*u).unwrap().first).collect();
        assert_eq!(tail, [items.len() - 3, items.len() - 1]);
        assert_eq!(pass.active_messages, items.len() - 1);
        assert_eq!(pass.unreduced, items[1..].iter().map(|i| i.tokens as usize).sum::<usize>());
        assert!(pass.optimise, "no budget: always optimised");

        let roomy = self::options(Some(BudgetOptions { min_messages: 100, ..BudgetOptions::default() }));
        let ctx = Ctx { options: &roomy, ..ctx };
        let state = SummaryState::default();
        assert!(!through_reduce(&ctx, &mut cache, &state).optimise, "few messages that fit");
    }

    #[test]
    fn the_window_keeps_units_with_a_message_among_the_last_n() {
        let log = turns(4, 1, 5);
        let items = log.items();
        let options = BuildOptions { max_messages: Some(10), ..options(None) };
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let mut pass = through_reduce(&ctx, &mut cache, &state);
        window(&ctx, &mut pass);
        let kept: Vec<usize> =
            pass.plans.iter().filter(|p| p.dropped.is_none()).flat_map(|p| p.members.iter().map(|m| m.msg)).collect();
        // The last 10 messages, and the call whose result is the oldest of them: chains stay whole.
        assert_eq!(kept, (items.len() - 11..items.len()).collect::<Vec<_>>());
        assert!(pass.plans.iter().filter(|p| p.dropped.is_some()).all(|p| p.dropped == Some(DropReason::Window)));
    }

    #[test]
    fn the_budget_is_filled_newest_first_with_whole_units() {
        let log = turns(30, 1, 60);
        let items = log.items();
        let options =
            options(Some(BudgetOptions { context_window: 3_000, min_messages: 1, ..BudgetOptions::default() }));
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let mut pass = through_reduce(&ctx, &mut cache, &state);
        assert!(pass.lazy, "a budget and no summary: reductions wait for the selection");
        fill_budget(&ctx, &mut cache, &mut pass).unwrap();
        let kept: Vec<&Plan> = pass.plans.iter().filter(|p| p.dropped.is_none()).collect();
        let used: usize = kept.iter().map(|p| p.tokens).sum();
        assert!(used <= pass.recent_cap && !kept.is_empty(), "{used} of {}", pass.recent_cap);
        assert!(pass.plans.last().is_some_and(|p| p.dropped.is_none()), "the newest unit comes first");
        assert!(pass.plans.first().is_some_and(|p| p.dropped == Some(DropReason::Budget)), "the oldest do not fit");
        assert!(pass.plans.iter().all(|p| p.dropped.is_none() || p.dropped == Some(DropReason::Budget)));
    }
}
