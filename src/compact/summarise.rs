//! Summarise: the summary section. A summary is due when the context does not fit its budget, or
//! when it is past an explicit trigger below the budget (then with the gates: enough
//! messages, enough new tokens since the last summary). It covers everything before the recent
//! messages, which then fill what it leaves. With a summary in force and little new since it, or
//! while the caller's summariser is at work, an extractive *bridge* covers what lies between the
//! summary and the recent messages instead: nothing leaves the context uncovered. The extractive
//! summary is made here and the build runs again on it; an external summariser gets a
//! `SummaryRequest` (the bridge stands in until the summary comes back).

use std::sync::Arc;

use super::forms::{base_members, made_up_tokens, member_key, Ctx, Forms, MemberPlan, TextCounts};
use super::pass::{Mode, Pass};
use super::receipt::{BridgeUse, PinRole};
use super::reduce::parts;
use super::reduce::Reductions;
use super::repair::{Unit, UnitKind};
use super::request::{emit_request, placeholder};
use super::section::{section_message, summary_messages};
use super::select::{base_room, select, select_with};
use super::summary_state::{
    self, Summarizer, SummaryOptions, SummaryRecord, SummaryRequest, SummarySource, SummaryState,
};
use crate::error::{Error, Result};
use crate::message::{Content, Format, Message, Role};
use crate::util::fasthash::FastMap;

/// The bridges made, kept between builds by what they cover: the previous summary's request
/// id, which messages (by id and form), and the budget.
#[derive(Clone, Debug, Default)]
pub(crate) struct Bridges {
    pub(crate) texts: FastMap<(String, u64, u32), String>,
}

/// A bridge or summary shorter than this says too little: a new summary is made instead.
const MIN_SUMMARY_TOKENS: usize = 48;

/// The stage. Returns the extractive summary when one was made (the build runs again on it); an
/// external summariser's request goes to `pass.summary_request`.
pub(crate) fn summarise(
    ctx: &Ctx,
    reductions: &mut Reductions,
    texts: &mut TextCounts,
    pass: &mut Pass,
    state: &SummaryState,
    allowed: bool,
) -> Result<Option<SummaryRecord>> {
    let Some(options) = &ctx.options.summary else { return Ok(None) };
    let busy = state.in_progress.is_some();
    let due = match pass.mode {
        Mode::Unlimited => false,
        Mode::Verbatim | Mode::Reduced => {
            let over = pass.view(pass.mode != Mode::Verbatim || pass.measured.verbatim_placeholder)
                > options.trigger(pass.budget.max);
            over && gates(ctx, pass, options, pass.plans.len())?
        }
        Mode::Selected => {
            let reaches = select(ctx, reductions, pass, base_room(pass), true)?;
            let gap = reaches.stop;
            gap > 0
                && (pass.units.summary.is_none()
                    || gates(ctx, pass, options, gap)?
                    || bridge_cap(ctx, texts, pass) < MIN_SUMMARY_TOKENS)
        }
    };
    if !due {
        return Ok(None);
    }
    if !allowed {
        return Ok(None);
    }
    if busy {
        pass.notes.push("a compaction is in progress; no new summary was requested".to_string());
        return Ok(None);
    }
    // The room the recent messages have beside a new summary (which replaces the one in force),
    // and the summary's own cap: its share of the budget, at most `maxTokens`.
    let fixed =
        pass.fixed_tokens(true) - pass.budget.summary.tokens - pass.bridge.as_ref().map_or(0, |(_, b)| b.tokens);
    let goal = options.target(pass.budget.max);
    let room = goal.saturating_sub(fixed);
    let room = pass.budget.max.map_or(room, |max| room.min(max.saturating_sub(fixed)));
    let framing = framing_tokens(ctx, texts);
    let share = pass.budget.share;
    let cap = (options.max_tokens as usize).min(share.saturating_sub(framing));
    if cap < 16 {
        pass.notes.push(format!("no room for a summary ({share} tokens for the summary section)"));
        return Ok(None);
    }
    if cap < options.max_tokens as usize {
        pass.notes.push(format!("the summary is limited to {cap} tokens: the summary section's share of the budget"));
    }
    match options.summarizer {
        Summarizer::External => {
            let selection = select(ctx, reductions, pass, room.saturating_sub(cap + framing), true)?;
            if selection.stop > 0 {
                pass.summary_request =
                    Some(request_for(ctx, reductions, pass, selection.stop, options, state, cap as u32)?);
            }
            Ok(None)
        }
        Summarizer::Extractive => {
            let (_, record) =
                select_with(ctx, reductions, pass, room, cap + framing, true, |ctx, reductions, pass, selection| {
                    if selection.stop == 0 {
                        return Ok((None, 0));
                    }
                    let record = extractive_record(ctx, reductions, pass, selection.stop, state, cap)?;
                    let shown = summary_messages(ctx.options, &record.text, &record.summarised_until);
                    let tokens = shown.iter().map(|m| made_up_tokens(ctx, texts, m)).sum();
                    Ok((Some(record), tokens))
                })?;
            Ok(record)
        }
    }
}

/// The gates for a new summary over the first `upto` active units: the first summary needs
/// `minMessages` messages; a later one `minNewMessages` new messages with more tokens than
/// `newTokenRatio` × the summary in force.
fn gates(ctx: &Ctx, pass: &Pass, options: &SummaryOptions, upto: usize) -> Result<bool> {
    let mut messages = 0usize;
    let mut tokens = 0u64;
    for &u in pass.units.active.iter().take(upto) {
        let Some(unit) = pass.units.unit(u) else { continue };
        messages += unit.members.len();
        for member in &unit.members {
            tokens += u64::from(ctx.item(member.msg)?.tokens);
        }
    }
    Ok(match pass.units.summary {
        None => messages >= options.min_messages,
        Some(s) => {
            messages >= options.min_new_messages && tokens as f64 > options.new_token_ratio * f64::from(s.tokens)
        }
    })
}

/// The tokens of the summary section's framing: its message with an empty text, and a little for
/// the joins.
fn framing_tokens(ctx: &Ctx, texts: &mut TextCounts) -> usize {
    summary_messages(ctx.options, "", "m0").iter().map(|m| made_up_tokens(ctx, texts, m)).sum::<usize>() + 4
}

/// What the bridge may take: what the summary in force leaves of the share, at most `maxTokens`.
pub(crate) fn bridge_cap(ctx: &Ctx, texts: &mut TextCounts, pass: &Pass) -> usize {
    let max = ctx.options.summary.as_ref().map_or(4000, |s| s.max_tokens as usize) + framing_tokens(ctx, texts);
    pass.budget.share.saturating_sub(pass.budget.summary.tokens).min(max)
}

/// Visits the members of the active units before `stop` and of the pins from `from` to before
/// `until`, unit by unit in history order, each unit's members in its own order (a result the
/// repair stage moved next to its call stays there). `compress`: long outputs of steps
/// compressed. One unit's members at a time: a first build summarises the whole history before
/// the recent turns, and a list of every member would be its largest allocation.
fn visit_members_before(
    ctx: &Ctx,
    reductions: &mut Reductions,
    pass: &Pass,
    stop: usize,
    (from, until): (usize, usize),
    compress: bool,
    visit: &mut dyn FnMut(&mut Forms, &MemberPlan) -> Result<()>,
) -> Result<()> {
    enum Source<'p> {
        Active(&'p Unit),
        Pin(&'p [MemberPlan]),
    }
    let active = pass
        .units
        .active
        .iter()
        .take(stop)
        .filter_map(|&u| pass.units.unit(u))
        .map(|unit| (unit.first, Source::Active(unit)));
    let pinned = pass.budget.pins.list.iter().filter_map(|pin| {
        let unit = pass.units.unit(pin.plan.unit).filter(|unit| unit.first >= from && unit.first < until)?;
        Some((unit.first, Source::Pin(&pin.plan.members)))
    });
    let mut order: Vec<(usize, Source)> = active.chain(pinned).collect();
    crate::util::sort::sort_by_key(&mut order, |(first, _)| *first);
    for (_, source) in order {
        match source {
            Source::Active(unit) => {
                let mut list = base_members(unit);
                if compress && unit.kind == UnitKind::Step {
                    parts::reduce_members(
                        ctx,
                        reductions.forms,
                        reductions.files,
                        &pass.units.structure,
                        &mut list,
                        false,
                        true,
                    )?;
                }
                for member in &list {
                    visit(reductions.forms, member)?;
                }
            }
            Source::Pin(members) => {
                for member in members {
                    visit(reductions.forms, &MemberPlan::of(member.msg, member.parts.clone()))?;
                }
            }
        }
    }
    Ok(())
}

/// Visits the members of the active units before `stop` (and of the pins among them), whole, in
/// order.
fn visit_originals(
    ctx: &Ctx,
    reductions: &mut Reductions,
    pass: &Pass,
    stop: usize,
    visit: &mut dyn FnMut(&mut Forms, &MemberPlan) -> Result<()>,
) -> Result<()> {
    let until =
        pass.units.active.get(stop).and_then(|u| pass.units.unit(*u)).map_or(ctx.items.len(), |unit| unit.first);
    let from = pass.units.summary.map_or(0, |s| s.until_index + 1);
    visit_members_before(ctx, reductions, pass, stop, (from, until), false, visit)
}

/// What a summary is made from: the messages it covers, and the request pinned as the task (if
/// one is) with where the messages after it begin.
struct Originals {
    messages: Vec<Arc<Message>>,
    task: Option<(String, usize)>,
}

impl Originals {
    fn task(&self) -> Option<crate::extract::PinnedTask<'_>> {
        self.task.as_ref().map(|(text, after)| crate::extract::PinnedTask { text, after: *after })
    }
}

/// The messages of the active units before `stop` (and of the pins among them), whole, in order.
fn original_messages(ctx: &Ctx, reductions: &mut Reductions, pass: &Pass, stop: usize) -> Result<Originals> {
    let task = pinned_task(ctx, pass);
    let mut messages = Vec::new();
    let mut after = 0;
    visit_originals(ctx, reductions, pass, stop, &mut |forms, member| {
        messages.push(ctx.materialize(forms, member)?);
        if task.as_ref().is_some_and(|(_, msg)| member.msg <= *msg) {
            after = messages.len();
        }
        Ok(())
    })?;
    Ok(Originals { messages, task: task.map(|(text, _)| (text, after)) })
}

/// The first request pinned explicitly, which stands for the task (the summary's primary
/// request): its text and its message.
fn pinned_task(ctx: &Ctx, pass: &Pass) -> Option<(String, usize)> {
    let pin = pass.budget.pins.list.iter().find(|pin| pin.roles.contains(&PinRole::Pinned))?;
    let unit = pass.units.unit(pin.plan.unit)?;
    let text: Vec<String> = unit
        .members
        .iter()
        .filter_map(|m| ctx.items.get(m.msg))
        .map(|item| item.message.content.joined_text())
        .collect();
    Some((text.join("\n"), unit.first))
}

/// The bridge over the active units before `stop`: an extractive summary within `cap` tokens
/// (with its framing), not stored.
pub(crate) fn bridge(
    ctx: &Ctx,
    reductions: &mut Reductions,
    texts: &mut TextCounts,
    bridges: &mut Bridges,
    pass: &Pass,
    stop: usize,
    cap: usize,
) -> Result<Option<(Message, BridgeUse)>> {
    if stop == 0 {
        return Ok(None);
    }
    let first = pass.units.active.first().and_then(|u| pass.units.unit(*u)).map(|u| u.first).unwrap_or(0);
    let last = pass.units.active.get(stop).and_then(|u| pass.units.unit(*u)).map_or(ctx.items.len(), |unit| unit.first);
    let (from, until) = (ctx.item(first)?.id.to_string(), ctx.item(last.saturating_sub(1))?.id.to_string());
    let budget = cap.saturating_sub(framing_tokens(ctx, texts)) as u32;
    if budget < 8 {
        return Ok(None);
    }
    // The same range can hold other messages as the history grows (a call answered later is no
    // longer dropped by the repair stage): the key says which messages, by id and variant.
    let mut hasher = std::hash::DefaultHasher::new();
    visit_originals(ctx, reductions, pass, stop, &mut |_, member| {
        std::hash::Hash::hash(&member_key(ctx.item(member.msg)?.id, member), &mut hasher);
        Ok(())
    })?;
    // The open todos stand in the bridge's pending work; the pinned task in its primary request.
    std::hash::Hash::hash(&ctx.open_todos(), &mut hasher);
    std::hash::Hash::hash(&pinned_task(ctx, pass).map(|(_, msg)| msg), &mut hasher);
    let signature = std::hash::Hasher::finish(&hasher);
    let key = (pass.units.summary.map_or_else(String::new, |s| s.request_id.clone()), signature, budget);
    let text = match bridges.texts.get(&key) {
        Some(text) => text.clone(),
        None => {
            let originals = original_messages(ctx, reductions, pass, stop)?;
            let todos = ctx.open_todos();
            let text = crate::extract::extractive_with_todos(
                &originals.messages,
                None,
                &todos,
                originals.task(),
                ctx.encoding,
                budget,
            );
            if bridges.texts.len() > 32 {
                bridges.texts.clear();
            }
            bridges.texts.insert(key, text.clone());
            text
        }
    };
    let header = match pass.units.summary {
        Some(_) => format!("Summary of messages {from} to {until}, which the summary above does not cover yet:\n"),
        None => format!("Summary of the earlier conversation (messages {from} to {until}):\n"),
    };
    let message = section_message(ctx.options, format!("{header}{text}"));
    let tokens = made_up_tokens(ctx, texts, &message);
    let messages = (first..last).count();
    Ok(Some((message, BridgeUse { from, until, messages, tokens })))
}

/// The extractive summary of the active units before `stop`, folded onto the summary in force.
fn extractive_record(
    ctx: &Ctx,
    reductions: &mut Reductions,
    pass: &Pass,
    stop: usize,
    state: &SummaryState,
    cap: usize,
) -> Result<SummaryRecord> {
    let request = request_meta(ctx, pass, stop, state, cap as u32)?;
    let originals = original_messages(ctx, reductions, pass, stop)?;
    let previous = pass.units.summary.map(|s| s.text.as_str());
    let text = crate::extract::extractive_with_todos(
        &originals.messages,
        previous,
        &ctx.open_todos(),
        originals.task(),
        ctx.encoding,
        cap as u32,
    );
    let tokens = summary_state::validate_summary(&text, ctx.encoding, cap as u32, &[])?;
    let created_at = ctx.options.now.clone().unwrap_or_else(|| format!("seq:{}", state.generation + 1));
    Ok(summary_state::record(&request, text, tokens, created_at, SummarySource::Extractive))
}

/// What a summary of the active units before `stop` stands for.
fn request_meta(
    ctx: &Ctx,
    pass: &Pass,
    stop: usize,
    state: &SummaryState,
    max_tokens: u32,
) -> Result<summary_state::PendingSummary> {
    let tail_first =
        pass.units.active.get(stop).and_then(|u| pass.units.unit(*u)).map_or(ctx.items.len(), |unit| unit.first);
    let until_index =
        tail_first.checked_sub(1).ok_or_else(|| Error::internal("summary cut before the first message"))?;
    // A message whose parts went to several units (parallel results in one message) is one
    // message; one the summary in force already stands for is not counted again, nor one after
    // the cut (a unit's late tool result) that the record's `until` does not reach.
    let after = pass.units.summary.map_or(0, |s| s.until_index + 1);
    let mut covered: Vec<usize> = pass
        .units
        .active
        .iter()
        .take(stop)
        .filter_map(|&u| pass.units.unit(u))
        .flat_map(|unit| unit.members.iter().map(|m| m.msg))
        .filter(|&msg| (after..=until_index).contains(&msg))
        .collect();
    crate::util::sort::sort(&mut covered);
    covered.dedup();
    let mut original = 0u64;
    for &msg in &covered {
        original += u64::from(ctx.item(msg)?.tokens);
    }
    let count = covered.len();
    Ok(summary_state::PendingSummary {
        request_id: format!("s{}", state.generation + 1),
        until: ctx.item(until_index)?.id.to_string(),
        until_index,
        original_tokens: pass.units.summary.map_or(0, |s| s.original_tokens) + original,
        message_count: pass.units.summary.map_or(0, |s| s.message_count) + count,
        max_tokens,
        required_keys: Vec::new(),
    })
}

/// The request for the caller's summarizer: the active units before the `cut`-th (with the system
/// messages first and the compact prompt last, the previous summary folded in), and what the
/// summary must satisfy.
pub(crate) fn request_for(
    ctx: &Ctx,
    reductions: &mut Reductions,
    pass: &Pass,
    cut: usize,
    options: &SummaryOptions,
    state: &SummaryState,
    max_tokens: u32,
) -> Result<SummaryRequest> {
    let meta = request_meta(ctx, pass, cut, state, max_tokens)?;
    // The messages to summarise: compressed where long, digests not applied (the summariser
    // should see what was read), in history order.
    let from = pass.units.summary.map_or(0, |s| s.until_index + 1);
    let mut messages: Vec<Arc<Message>> = Vec::new();
    for plan in &pass.units.system {
        for member in &plan.members {
            messages.push(ctx.materialize(reductions.forms, member)?);
        }
    }
    let mut ids: Vec<usize> = Vec::new();
    visit_members_before(ctx, reductions, pass, cut, (from, meta.until_index + 1), true, &mut |forms, member| {
        ids.push(member.msg);
        messages.push(ctx.materialize(forms, member)?);
        Ok(())
    })?;
    crate::util::sort::sort(&mut ids);
    ids.dedup();
    let message_ids: Vec<String> =
        ids.iter().filter_map(|i| ctx.items.get(*i)).map(|item| item.id.to_string()).collect();
    let previous = pass.units.summary.map(|s| s.text.clone());
    let prompt = summary_state::fold_prompt(options.prompt(), previous.as_deref());
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
        id: meta.request_id.clone(),
        from: message_ids.first().cloned().unwrap_or_else(|| meta.until.clone()),
        until: meta.until.clone(),
        message_ids,
        messages: value,
        prompt,
        previous_summary: previous,
        max_tokens,
        required_keys: options.required_keys.clone(),
        original_tokens: meta.original_tokens,
        message_count: meta.message_count,
        until_index: meta.until_index,
    })
}

/// Hands the summariser the context as the model last saw it (with what was logged since), then
/// the instruction: the provider bills all but the instruction as a cache read, as for any call.
/// With the build's cache hints, the request marks the end of what the model saw (where the
/// provider's entry is), the system prompt and the instruction.
pub(crate) fn ride_the_cache(
    request: &mut SummaryRequest,
    seen: &[&Message],
    format: Format,
    cache: Option<&super::request::hints::CacheOptions>,
) -> Result<()> {
    use super::request::hints;
    let prompt = Message::new(Role::User, Content::text(request.prompt.clone()), format);
    let messages = seen.iter().copied().chain(std::iter::once(&prompt));
    let mut value = emit_request(messages, format)?;
    if let Some(cache) = cache {
        let ttl = cache.ttl.unwrap_or_default();
        let max = cache.max_breakpoints.unwrap_or(hints::MAX_BREAKPOINTS);
        match &mut value {
            serde_json::Value::Array(list) => {
                let refs: Vec<&serde_json::Value> = list.iter().collect();
                let points = hints::place(format, None, &refs, list.len().checked_sub(2), None, max);
                hints::apply(&points, format, ttl, None, list);
            }
            serde_json::Value::Object(body) => {
                if let Some(serde_json::Value::Array(mut list)) = body.shift_remove("messages") {
                    let refs: Vec<&serde_json::Value> = list.iter().collect();
                    let points = hints::place(format, body.get("system"), &refs, list.len().checked_sub(2), None, max);
                    hints::apply(&points, format, ttl, body.get_mut("system"), &mut list);
                    body.insert("messages".into(), serde_json::Value::Array(list));
                }
            }
            _ => {}
        }
    }
    request.messages = value;
    Ok(())
}

#[cfg(test)]
mod tests;
