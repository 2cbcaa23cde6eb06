//! Summarise: past the trigger (seed 001) the older units are summarised and the recent steps
//! stay (seed 004). With an external summariser the build hands back a `SummaryRequest` and works
//! without the summary meanwhile; with the extractive one the summary is made here and the build
//! runs again on it.

use std::sync::Arc;

use super::assemble::placeholder;
use super::plan::{base_members, Ctx, MemberPlan, Pass};
use super::reduce::ReduceCache;
use super::repair::UnitKind;
use super::request::emit_request;
use super::summary::{
    self, Summarizer, SummaryOptions, SummaryPlacement, SummaryRecord, SummaryRequest, SummarySource, SummaryState,
};
use super::BuildOptions;
use crate::error::{Error, Result};
use crate::message::{Content, Format, Message, Role};
use crate::tokens::{self, REPLY_PRIMING};

/// Whether this pass may end in a compaction: it is allowed, none is under way, and the view
/// before any reduction is past the trigger or over the recent budget. (When not, and with a
/// budget, reductions can wait for the selection.)
pub(crate) fn could_summarise(ctx: &Ctx, pass: &Pass, state: &SummaryState, allowed: bool) -> bool {
    let options = ctx.options;
    allowed
        && state.in_progress.is_none()
        && options.summary.as_ref().is_some_and(|s| {
            pass.system_tokens + pass.summary_tokens + pass.unreduced + REPLY_PRIMING > s.trigger_tokens as usize
                || (options.budget.is_some() && pass.unreduced > pass.recent_cap)
        })
}

/// The stage. When compaction is due (past the trigger or over the budget, with enough new
/// messages since the last summary) it finds the cut: the last N steps whole and further back
/// while the tail and the summary stay below the target. An external summariser gets
/// `pass.summary_request`; the extractive summary is returned, for the build to run again on it.
pub(crate) fn summarise(
    ctx: &Ctx,
    cache: &mut ReduceCache,
    pass: &mut Pass,
    state: &SummaryState,
    allowed: bool,
) -> Result<Option<SummaryRecord>> {
    let options = ctx.options;
    let (Some(summary_options), true, None) = (&options.summary, allowed, &state.in_progress) else {
        if state.in_progress.is_some() {
            pass.notes.push("a compaction is in progress; no new summary was requested".to_string());
        }
        return Ok(None);
    };
    let kept_tokens: usize = pass.plans.iter().filter(|p| p.dropped.is_none()).map(|p| p.tokens).sum();
    let view_tokens = pass.system_tokens + pass.summary_tokens + kept_tokens + REPLY_PRIMING;
    let over_trigger = view_tokens > summary_options.trigger_tokens as usize;
    let overflow = options.budget.is_some() && kept_tokens > pass.recent_cap;
    let new_tokens: u64 = pass.unreduced as u64;
    let gate = match pass.summary {
        None => pass.active_messages >= summary_options.min_messages,
        Some(s) => {
            pass.active_messages >= summary_options.min_new_messages
                && new_tokens as f64 > summary_options.new_token_ratio * f64::from(s.tokens)
        }
    };
    if !((over_trigger || overflow) && gate) {
        return Ok(None);
    }
    // The tail that stays: the last N steps whole (seed 004, N constant), and further back while
    // the tail plus the summary stay below the target (seed 001).
    let max_summary = match &pass.budget {
        Some(b) => (summary_options.max_tokens as usize)
            .min(b.summary_budget.saturating_sub(summary_overhead(ctx, summary_options))),
        None => summary_options.max_tokens as usize,
    };
    let cut = cut(ctx, pass, summary_options, max_summary);
    if cut == 0 || max_summary < 16 {
        return Ok(None);
    }
    let request = request_for(ctx, cache, pass, cut, summary_options, state, max_summary as u32)?;
    match summary_options.summarizer {
        Summarizer::External => {
            pass.summary_request = Some(request);
            Ok(None)
        }
        Summarizer::Extractive => {
            let encoding = ctx.encoding;
            let covered_messages = covered_originals(ctx, pass, pass.active.get(..cut).unwrap_or(&[]))?;
            let text = crate::extract::extractive(
                &covered_messages,
                pass.summary.map(|s| s.text.as_str()),
                encoding,
                request.max_tokens,
            );
            let tokens = summary::validate_summary(&text, encoding, request.max_tokens, &[])?;
            let created_at = options.now.clone().unwrap_or_else(|| format!("seq:{}", state.generation + 1));
            Ok(Some(summary::record(&request.pending(), text, tokens, created_at, SummarySource::Extractive)))
        }
    }
}

/// The ordinal (in `pass.plans`) of the first unit that stays: the last N steps are forced in,
/// then older units while the kept tokens stay within the target less the summary and the
/// system prompt; moved back onto the user request that opens the tail, if any.
pub(crate) fn cut(ctx: &Ctx, pass: &Pass, summary_options: &SummaryOptions, max_summary: usize) -> usize {
    let target = (summary_options.target_tokens as usize).saturating_sub(max_summary + pass.system_tokens);
    let plans = &pass.plans;
    let mut cut = plans.len();
    let mut acc = 0usize;
    let mut steps = 0usize;
    for (o, plan) in plans.iter().enumerate().rev() {
        let step_like = pass.unit(plan.unit).is_some_and(|unit| unit.is_step_like());
        let tokens = if plan.dropped.is_some() { 0 } else { plan.tokens };
        let forced = steps < ctx.options.keep_recent_steps.max(1);
        if !forced && acc + tokens > target {
            break;
        }
        acc += tokens;
        if step_like {
            steps += 1;
        }
        cut = o;
    }
    // Start the tail at the user's request when it immediately precedes (seed 004 keeps
    // user/assistant pairs), so the summary is not merged into an assistant message.
    let starts_with_step = plans.get(cut).and_then(|p| pass.unit(p.unit)).is_some_and(|u| u.is_step_like());
    let user_before = cut
        .checked_sub(1)
        .and_then(|c| plans.get(c))
        .and_then(|p| pass.unit(p.unit))
        .is_some_and(|u| u.kind == UnitKind::User);
    if starts_with_step && user_before {
        cut -= 1;
    }
    cut
}

fn summary_overhead(ctx: &Ctx, options: &SummaryOptions) -> usize {
    // The framing around the summary text: the exchange's prompt, or the system message's header.
    let prompt = Message::new(Role::User, Content::text(options.prompt()), ctx.options.format);
    tokens::count_message(ctx.encoding, &prompt).total as usize + 40
}

/// The covered units' messages as stored (repaired, unreduced), for the extractive summariser.
fn covered_originals(ctx: &Ctx, pass: &Pass, units: &[usize]) -> Result<Vec<Arc<Message>>> {
    let mut members: Vec<MemberPlan> = Vec::new();
    for &u in units {
        if let Some(unit) = pass.unit(u) {
            members.extend(base_members(unit));
        }
    }
    members.sort_by_key(|m| m.msg);
    let mut cache = ReduceCache::default();
    members.iter().map(|m| ctx.materialize(&mut cache, m)).collect()
}

/// The request for the caller's summarizer: the units before the `cut`-th active one (with the
/// system messages first and the compact prompt last, the previous summary folded in), and
/// what the summary must satisfy.
pub(crate) fn request_for(
    ctx: &Ctx,
    cache: &mut ReduceCache,
    pass: &Pass,
    cut: usize,
    options: &SummaryOptions,
    state: &SummaryState,
    max_tokens: u32,
) -> Result<SummaryRequest> {
    let (structure, plans, summary) = (&*pass.structure, &pass.plans, pass.summary);
    let tail_first =
        plans.get(cut).and_then(|p| structure.units.get(p.unit)).map_or(ctx.items.len(), |unit| unit.first);
    let until_index =
        tail_first.checked_sub(1).ok_or_else(|| Error::internal("summary cut before the first message"))?;
    let until = ctx.item(until_index)?.id.to_string();
    // The messages to summarise: compressed where long, digests not applied (the summariser
    // should see what was read), in history order.
    let mut members: Vec<MemberPlan> = Vec::new();
    for &u in pass.active.iter().take(cut) {
        if let Some(unit) = structure.units.get(u) {
            let mut list = base_members(unit);
            if unit.kind == UnitKind::Step {
                ctx.reduce_members(cache, structure, &mut list, false, true)?;
            }
            members.extend(list);
        }
    }
    let mut ids: Vec<usize> = members.iter().map(|m| m.msg).collect();
    ids.sort_unstable();
    ids.dedup();
    let original: u64 = ids.iter().filter_map(|i| ctx.items.get(*i)).map(|item| u64::from(item.tokens)).sum();
    let message_ids: Vec<String> =
        ids.iter().filter_map(|i| ctx.items.get(*i)).map(|item| item.id.to_string()).collect();
    let mut messages: Vec<Arc<Message>> = Vec::new();
    for plan in &pass.system {
        for member in &plan.members {
            messages.push(ctx.materialize(cache, member)?);
        }
    }
    for member in &members {
        messages.push(ctx.materialize(cache, member)?);
    }
    let previous = summary.map(|s| s.text.clone());
    let prompt = summary::fold_prompt(options.prompt(), previous.as_deref());
    // The caller's model sees the messages and then the prompt: a valid list on its own.
    let mut to_send: Vec<Arc<Message>> = messages;
    let first_non_system = to_send.iter().position(|m| !m.role.is_instruction());
    if ctx.options.format == Format::Anthropic
        && first_non_system.is_some_and(|i| to_send.get(i).is_some_and(|m| m.role == Role::Assistant))
    {
        if let Some(i) = first_non_system {
            to_send.insert(i, Arc::new(placeholder(ctx.options.format)));
        }
    }
    to_send.push(Arc::new(Message::new(Role::User, Content::text(prompt.clone()), ctx.options.format)));
    let value = emit_request(to_send.iter().map(|m| &**m), ctx.options.format)?;
    Ok(SummaryRequest {
        id: format!("s{}", state.generation + 1),
        from: message_ids.first().cloned().unwrap_or_else(|| until.clone()),
        until,
        message_ids,
        messages: value,
        prompt,
        previous_summary: previous,
        max_tokens,
        required_keys: options.required_keys.clone(),
        original_tokens: summary.map_or(0, |s| s.original_tokens) + original,
        message_count: summary.map_or(0, |s| s.message_count) + ids.len(),
        until_index,
    })
}

/// The summary in force as the context carries it: a system message, or (Anthropic by default)
/// the compact prompt and the summary as a user/assistant exchange.
pub(crate) fn summary_messages(options: &BuildOptions, summary: &SummaryRecord) -> Vec<Message> {
    let placement = options.summary.as_ref().map_or(SummaryPlacement::Auto, |s| s.placement);
    let exchange = match placement {
        SummaryPlacement::Auto => options.format == Format::Anthropic,
        SummaryPlacement::System => false,
        SummaryPlacement::Exchange => true,
    };
    let source = options.format;
    if exchange {
        let prompt = options.summary.as_ref().map_or(summary::DEFAULT_COMPACT_PROMPT, |s| s.prompt());
        vec![
            Message::new(Role::User, Content::text(prompt), source),
            Message::new(Role::Assistant, Content::text(summary.text.clone()), source),
        ]
    } else {
        vec![Message::new(
            Role::System,
            Content::text(format!(
                "Summary of the earlier conversation (up to message {}):\n{}",
                summary.summarised_until, summary.text
            )),
            source,
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::plan::testing::{through_reduce, turns, ENCODING};
    use crate::compact::summary::PendingSummary;

    fn options(summarizer: Summarizer) -> BuildOptions {
        let summary = SummaryOptions {
            summarizer,
            trigger_tokens: 2_000,
            target_tokens: 1_000,
            min_messages: 10,
            ..SummaryOptions::default()
        };
        // No digests or compression: the older reads keep their size.
        BuildOptions {
            summary: Some(summary),
            keep_recent_steps: 2,
            digest: None,
            compress: None,
            ..BuildOptions::default()
        }
    }

    #[test]
    fn past_the_trigger_an_external_summariser_gets_a_request_for_the_older_units() {
        let log = turns(12, 1, 40);
        let items = log.items();
        let options = options(Summarizer::External);
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let mut pass = through_reduce(&ctx, &mut cache, &state);
        assert!(!pass.lazy);
        assert_eq!(summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap(), None);
        let request = pass.summary_request.clone().expect("compaction is due");
        let summary_options = options.summary.as_ref().unwrap();
        let max = summary_options.max_tokens as usize;
        let cut = cut(&ctx, &pass, summary_options, max);
        let tail_first = pass.unit(pass.plans[cut].unit).unwrap();
        assert_eq!(tail_first.kind, UnitKind::User, "the tail starts at a user request");
        assert_eq!(request.until_index, tail_first.first - 1);
        assert_eq!(request.from, "m2");
        assert_eq!(
            request.message_ids.len(),
            request.until_index,
            "every message after the system prompt up to the cut"
        );
        assert_eq!(request.id, "s1");
        assert!(request.messages.as_array().unwrap().last().unwrap()["content"]
            .as_str()
            .unwrap()
            .starts_with("Summarise"));
        // Not allowed (the second pass), or a compaction already under way: nothing asked.
        let mut again = through_reduce(&ctx, &mut cache, &state);
        assert_eq!(summarise(&ctx, &mut cache, &mut again, &state, false).unwrap(), None);
        assert!(again.summary_request.is_none());
        let busy = SummaryState { in_progress: Some(PendingSummary { ..request.pending() }), ..Default::default() };
        let mut busy_pass = through_reduce(&ctx, &mut cache, &busy);
        assert_eq!(summarise(&ctx, &mut cache, &mut busy_pass, &busy, true).unwrap(), None);
        assert!(busy_pass.notes.iter().any(|n| n.contains("in progress")));
    }

    #[test]
    fn the_extractive_summary_is_made_here_and_below_the_trigger_nothing_happens() {
        let log = turns(12, 1, 40);
        let items = log.items();
        let options = options(Summarizer::Extractive);
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let mut pass = through_reduce(&ctx, &mut cache, &state);
        let record = summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap().expect("summarised");
        assert_eq!(record.source, SummarySource::Extractive);
        assert!(record.text.contains("request 1") && record.tokens <= 4_000);
        assert_eq!(record.created_at, "seq:1");

        let short = turns(2, 1, 5);
        let items = short.items();
        let ctx = Ctx { items: &items, ..ctx };
        let mut pass = through_reduce(&ctx, &mut cache, &state);
        assert_eq!(summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap(), None);
        assert!(pass.summary_request.is_none());
    }

    #[test]
    fn the_summary_is_a_system_message_or_an_exchange() {
        let record = crate::compact::summary::record(
            &PendingSummary {
                request_id: "s1".into(),
                until: "m4".into(),
                until_index: 3,
                original_tokens: 10,
                message_count: 4,
                max_tokens: 100,
                required_keys: Vec::new(),
            },
            "{\"done\": 1}".into(),
            5,
            "t".into(),
            SummarySource::External,
        );
        let openai = summary_messages(&BuildOptions::default(), &record);
        assert_eq!(openai.len(), 1);
        assert_eq!(openai[0].role, Role::System);
        assert!(openai[0].content.joined_text().contains("(up to message m4)"));
        let anthropic =
            summary_messages(&BuildOptions { format: Format::Anthropic, ..BuildOptions::default() }, &record);
        assert_eq!(anthropic.iter().map(|m| m.role).collect::<Vec<_>>(), [Role::User, Role::Assistant]);
        assert_eq!(anthropic[1].content.joined_text(), "{\"done\": 1}");
    }
}
