//! Assemble: the kept units in history order, with the summary section before the first recent
//! message, a placeholder user message where the provider needs one, the tokens by part and the
//! receipt. The output types of a build live here too.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::fates::{self, FateCache};
use super::fill::{memory_section, present};
use super::forms::{made_up_tokens, Ctx, Forms, Plan, TextCounts};
use super::pass::Pass;
use super::receipt::{Action, PinUse, Receipt, Section, SummaryUse, TokensByPart};
use super::repair::StructureCache;
use super::request::emitted::{self, Assembled, EmitCache};
use super::request::hints::{self, CacheOptions};
use super::request::{self, placeholder};
use super::summary_state::SummaryPlacement;
use super::summary_state::{SummaryRecord, SummaryRequest};
use crate::error::{Error, Result};
use crate::message::{self, Format, Message, Part, Role};
use crate::tokens::REPLY_PRIMING;

#[derive(Clone, Debug, PartialEq)]
pub struct ContextMessage {
    /// Shared with the history when kept whole.
    pub message: Arc<Message>,
    /// The stored messages it comes from (empty for the summary and the placeholder).
    pub sources: Vec<String>,
    pub section: Section,
    pub action: Action,
    /// Its tokens as counted for the budget (what a provider caches of it, with the messages before).
    pub tokens: u32,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CompactedContext {
    pub format: Format,
    pub messages: Vec<ContextMessage>,
    pub tokens: TokensByPart,
    pub receipt: Receipt,
    /// Where the request's provider cache hints go (`None`: it carries none).
    pub marks: Option<CacheMarks>,
}

/// What places a request's cache hints (`request::hints`).
#[derive(Clone, Debug, PartialEq)]
pub struct CacheMarks {
    pub options: CacheOptions,
    /// The last context message of the part that survives compaction events (the pinned task,
    /// the summary section).
    pub stable_end: Option<usize>,
    /// The last context message the previous build sent, when this one extends it.
    pub previous_end: Option<usize>,
}

impl CompactedContext {
    /// The messages as a provider request takes them, checked against the provider's rules.
    pub fn to_request(&self) -> Result<Value> {
        self.request_value(&mut EmitCache::default())
    }

    /// `to_request` in pieces, the forms of messages met before taken from `cache`.
    pub fn request(&self, cache: &mut EmitCache) -> Result<Assembled> {
        let messages: Vec<&Arc<Message>> = self.messages.iter().map(|m| &m.message).collect();
        let assembled = cache.assemble(&messages, self.format)?;
        cache.validate(&assembled).map_err(|violations| emitted::invalid_context(&violations))?;
        Ok(assembled)
    }

    /// The request as a provider takes it, with its cache hints (`marks`).
    pub fn request_value(&self, cache: &mut EmitCache) -> Result<Value> {
        let assembled = self.request(cache)?;
        let mut value = cache.to_value(&assembled);
        let points = self.breakpoints(cache, &assembled);
        if let (false, Some(marks)) = (points.is_empty(), &self.marks) {
            let ttl = marks.options.ttl.unwrap_or_default();
            match &mut value {
                Value::Array(messages) => hints::apply(&points, self.format, ttl, None, messages),
                Value::Object(request) => {
                    // `messages` comes last in the request: taken out and put back, it stays last.
                    if let Some(Value::Array(mut messages)) = request.shift_remove("messages") {
                        hints::apply(&points, self.format, ttl, request.get_mut("system"), &mut messages);
                        request.insert("messages".into(), Value::Array(messages));
                    }
                }
                _ => {}
            }
        }
        Ok(value)
    }

    /// Where the request `assembled` (from this context, with `cache`) carries cache hints.
    pub fn breakpoints(&self, cache: &EmitCache, assembled: &Assembled) -> hints::Breakpoints {
        let Some(marks) = &self.marks else { return hints::Breakpoints::default() };
        let layout = self.layout(cache, assembled);
        let request_of = |c: usize| layout.iter().position(|carried| carried.contains(&c));
        let messages: Vec<&Value> = cache.messages(assembled).collect();
        hints::place(
            self.format,
            assembled.system.as_ref(),
            &messages,
            marks.stable_end.and_then(request_of),
            marks.previous_end.and_then(request_of),
            marks.options.max_breakpoints.unwrap_or(hints::MAX_BREAKPOINTS),
        )
    }

    /// The messages in the neutral model, in order.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().map(|m| &*m.message)
    }

    /// For each message of the request `assembled` (from this context, with `cache`), the
    /// context messages it carries, by index in `messages`: one entry per request message.
    pub fn layout(&self, cache: &EmitCache, assembled: &Assembled) -> Vec<Vec<usize>> {
        let at: HashMap<*const Message, usize> =
            self.messages.iter().enumerate().map(|(i, m)| (Arc::as_ptr(&m.message), i)).collect();
        cache
            .carried(assembled)
            .iter()
            .map(|carried| carried.iter().filter_map(|m| at.get(&Arc::as_ptr(m)).copied()).collect())
            .collect()
    }

    /// The context messages Anthropic's top-level `system` carries (none in other formats).
    pub fn hoisted(&self) -> Vec<usize> {
        match self.format {
            Format::Anthropic => self
                .messages
                .iter()
                .enumerate()
                .filter(|(_, m)| m.message.role.is_instruction())
                .map(|(i, _)| i)
                .collect(),
            _ => Vec::new(),
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct BuildOutcome {
    pub context: CompactedContext,
    /// Compaction is due and the summariser is external: summarise these messages, then hand the
    /// text back (`ConversationHistory::complete_summary`). The context above works meanwhile.
    pub summary_request: Option<SummaryRequest>,
    /// A summary made during this build (the extractive summariser); the history stores it.
    pub new_summary: Option<SummaryRecord>,
}

/// A Responses item without the id the model gave it (a message's, or a call's), if it has one.
fn without_item_id(message: &Message) -> Option<Message> {
    let has_id = message.extra.contains_key("id") || message.tool_calls().any(|call| call.extra.contains_key("id"));
    if message.source != Format::Responses || !has_id {
        return None;
    }
    let mut anonymous = message.clone();
    anonymous.extra.remove("id");
    for part in anonymous.content.parts.iter_mut() {
        if let Part::ToolCall(call) = part {
            call.extra.remove("id");
        }
    }
    Some(anonymous)
}

/// The positions (last first) of the reasoning items not followed by a model output.
fn detached_reasoning(messages: &[ContextMessage], stored: &HashMap<&str, &Message>, format: Format) -> Vec<usize> {
    // Judged by the stored item: cut short, a reasoning message has lost its part.
    let reasoning =
        |m: &ContextMessage| m.sources.iter().any(|s| stored.get(s.as_str()).is_some_and(|m| is_reasoning(m)));
    let mut out = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        if !reasoning(m) {
            continue;
        }
        let next = messages[i + 1..].iter().find(|n| !reasoning(n));
        // At the end of the list it stays: its item may follow in a later message of a run.
        let attached = next.is_none_or(|n| match message::emit([n.message.as_ref()], format) {
            Value::Array(items) => items.first().is_some_and(request::is_output),
            _ => false,
        });
        if !attached || m.message.content.parts.is_empty() {
            out.push(i);
        }
    }
    out.reverse();
    out
}

/// Whether `message` is a Responses reasoning item.
fn is_reasoning(message: &Message) -> bool {
    message.source == Format::Responses
        && matches!(message.content.parts.as_slice(), [Part::Other(value)] if value.get("type").and_then(Value::as_str) == Some("reasoning"))
}

/// A message the build made up (summary, state, placeholder), counted once by its text.
fn context_message(ctx: &Ctx, texts: &mut TextCounts, message: Message, section: Section) -> ContextMessage {
    let tokens = u32::try_from(made_up_tokens(ctx, texts, &message)).unwrap_or(u32::MAX);
    ContextMessage { message: Arc::new(message), sources: Vec::new(), section, action: Action::Kept, tokens }
}

/// The stage: the context and its receipt from what the earlier stages decided. System messages
/// and pinned requests where they were, then the summary section (the summary in force, the
/// bridge, the memory's turn summaries), then the recent messages; a pinned request among the
/// recent messages stays in its place.
pub(crate) fn assemble(
    ctx: &Ctx,
    forms: &mut Forms,
    texts: &mut TextCounts,
    fate_cache: &mut FateCache,
    structures: &mut StructureCache,
    mut pass: Pass,
) -> Result<BuildOutcome> {
    let items = ctx.items;
    let format = ctx.options.format;
    let pins: Vec<Plan> = pass.budget.pins.list.iter().map(|p| p.plan.clone()).collect();
    let mut kept: Vec<(&Plan, Section)> = pass.units.system.iter().map(|p| (p, Section::System)).collect();
    kept.extend(pins.iter().map(|p| (p, Section::Pinned)));
    if !pass.plans.settled() {
        return Err(Error::internal("the context's units were not all planned"));
    }
    kept.extend(pass.plans.iter().filter(|p| p.dropped.is_none()).map(|p| (p, Section::Recent)));
    crate::util::sort::sort_by_key(&mut kept, |(p, _)| pass.units.unit(p.unit).map_or(usize::MAX, |u| u.first));

    let mut tokens = TokensByPart::default();
    let mut summary_section: Vec<Message> = std::mem::take(&mut pass.budget.summary.messages);
    tokens.summary = pass.budget.summary.tokens;
    if let Some((message, _)) = &pass.bridge {
        summary_section.push(message.clone());
        tokens.summary += pass.bridge.as_ref().map_or(0, |(_, b)| b.tokens);
    }
    for (plan, section) in &kept {
        if plan.member_tokens.len() != plan.members.len() {
            return Err(Error::internal(format!("unit {} is in the context but was not counted", plan.unit)));
        }
        let n: usize = plan.tokens;
        match section {
            Section::System => tokens.system += n,
            _ => tokens.recent += n,
        }
    }
    // The memory's turn summaries: what the summary section's share leaves, within the budget.
    let present_now = present(items.len(), kept.iter().map(|(p, _)| *p));
    tokens.state = pass.budget.state.tokens;
    let used =
        tokens.system + tokens.state + tokens.summary + tokens.recent + REPLY_PRIMING + pass.budget.placeholder_tokens;
    let room = pass
        .budget
        .max
        .map_or(usize::MAX, |max| max.saturating_sub(used).min(pass.budget.share.saturating_sub(tokens.summary)));
    let memory_use = match memory_section(ctx, texts, &present_now, room) {
        Some((message, used)) => {
            summary_section.extend(message);
            tokens.summary += used.tokens;
            Some(used)
        }
        None => None,
    };

    let mut messages: Vec<ContextMessage> = Vec::new();
    let mut section = Some(summary_section);
    let mut after: HashMap<usize, (Action, u32)> = HashMap::new();
    let exchange = ctx.options.summary.as_ref().is_some_and(|s| s.placement == SummaryPlacement::Exchange);
    let mut placeholder_used = false;
    for (plan, kind) in &kept {
        if *kind == Section::Recent {
            if let Some(list) = section.take() {
                let ends_with_assistant = list.last().is_some_and(|m| m.role == Role::Assistant);
                messages.extend(list.into_iter().map(|m| context_message(ctx, texts, m, Section::Summary)));
                // The exchange placement ends with the summary as an assistant message: a recent
                // assistant message must not merge into it.
                let next_assistant = plan
                    .members
                    .first()
                    .and_then(|m| items.get(m.msg))
                    .is_some_and(|i| i.message.role == Role::Assistant);
                if exchange && ends_with_assistant && next_assistant {
                    messages.push(context_message(ctx, texts, placeholder(format), Section::Recent));
                    tokens.recent += pass.budget.placeholder_tokens;
                    placeholder_used = true;
                }
            }
        }
        for (member, n) in plan.members.iter().zip(plan.member_tokens.iter()) {
            let mut message = ctx.materialize(forms, member)?;
            let id = ctx.item(member.msg)?.id.to_string();
            // A Responses item the model produced after reasoning names itself by its id
            // (`msg_…`, `fc_…`); sent without that reasoning right before it, the API refuses
            // it, so it goes out as a new item, without its id.
            let reasoning_before =
                member.msg.checked_sub(1).and_then(|i| items.get(i)).filter(|i| is_reasoning(i.message));
            if let Some(reasoning) = reasoning_before {
                // (Cut short, a reasoning message has lost its item: it is there but empty.)
                let follows = messages.last().is_some_and(|m| {
                    m.sources.iter().any(|s| s.as_str() == reasoning.id) && !m.message.content.parts.is_empty()
                });
                if !follows {
                    if let Some(anonymous) = without_item_id(&message) {
                        message = Arc::new(anonymous);
                    }
                }
            }
            let action = member.action();
            let entry = after.entry(member.msg).or_insert((action, 0));
            // The most reduced of its members says what became of the message.
            entry.0 = entry.0.min(action);
            entry.1 += n;
            messages.push(ContextMessage { message, sources: vec![id], section: *kind, action, tokens: *n });
        }
    }
    if let Some(list) = section.take() {
        messages.extend(list.into_iter().map(|m| context_message(ctx, texts, m, Section::Summary)));
    }

    // A reasoning item goes out only before the item it was produced with: one whose call was
    // left unanswered, or whose item was cut to its text, is left out here, where the receipt
    // sees it (the request's own fix, request::lists, remains for lists emitted elsewhere).
    if format == Format::Responses {
        // The stored messages in the context, by id (the context's size, not the history's).
        let index: HashMap<&str, usize> =
            after.keys().filter_map(|&msg| items.get(msg).map(|item| (item.id, msg))).collect();
        let stored: HashMap<&str, &Message> =
            index.iter().filter_map(|(&id, &msg)| items.get(msg).map(|item| (id, item.message.as_ref()))).collect();
        for i in detached_reasoning(&messages, &stored, format) {
            let removed = messages.remove(i);
            for source in &removed.sources {
                let Some(&msg) = index.get(source.as_str()) else { continue };
                if let Some((_, n)) = after.remove(&msg) {
                    tokens.recent = tokens.recent.saturating_sub(n as usize);
                }
            }
        }
    }

    // The state's sections right after the system prompt, in their fixed order.
    let at = messages.iter().take_while(|m| m.section == Section::System).count();
    let state_messages = std::mem::take(&mut pass.budget.state.messages);
    let state_messages: Vec<ContextMessage> =
        state_messages.into_iter().map(|m| context_message(ctx, texts, m, Section::State)).collect();
    messages.splice(at..at, state_messages);

    // Anthropic: the first message must come from the user (an assistant message, thinking
    // first, is never moved), and there must be one; no provider takes an empty list, and a
    // converted message with nothing the format can carry (an empty text) is left out.
    let emits_nothing = || messages.iter().all(|m| message::emit_one(&m.message, format).is_none());
    if !placeholder_used && (format == Format::Anthropic || emits_nothing()) {
        let first = messages.iter().position(|m| !m.message.role.is_instruction());
        let needs = match first.and_then(|i| messages.get(i)) {
            None => format == Format::Anthropic || messages.is_empty(),
            Some(_) if format != Format::Anthropic => true,
            Some(m) => m.message.role == Role::Assistant && format == Format::Anthropic,
        };
        if needs {
            let at = first.unwrap_or(messages.len());
            tokens.recent += pass.budget.placeholder_tokens;
            let message = context_message(ctx, texts, placeholder(format), Section::Recent);
            messages.insert(at, message);
            placeholder_used = true;
            pass.notes.push("a placeholder user message was put first: the provider needs one".to_string());
        }
    }
    tokens.total = tokens.system + tokens.state + tokens.summary + tokens.recent + REPLY_PRIMING;

    let summarised_until = summarised_until(ctx, &pass);
    let inputs = fates::FateInputs {
        items,
        structure: &pass.units.structure,
        covered: &pass.units.covered,
        active: &pass.units.active,
        plans: &pass.plans,
        after: &after,
        summarised_until,
        turns: ctx.turns,
        memory_turns: memory_use.as_ref().map_or(&[][..], |m| m.turns.as_slice()),
    };
    let (fates, runs) = fates::fates_and_runs(&inputs, fate_cache);
    // Every stored message is in one run: their tokens are the history's, without another pass.
    let tokens_before = runs.iter().map(|r| r.tokens_before as usize).sum::<usize>() + REPLY_PRIMING;
    let within_budget = pass.budget.max.is_none_or(|max| tokens.total <= max);
    if let Some(budget) = pass.budget.report.as_mut() {
        budget.pinned_tokens = pass.budget.pins.list.iter().map(|p| p.plan.tokens).sum();
        budget.recent_budget = budget
            .max_tokens
            .saturating_sub(tokens.system + tokens.state + tokens.summary + budget.pinned_tokens + REPLY_PRIMING);
    }
    let pinned = pass
        .budget
        .pins
        .list
        .iter()
        .flat_map(|pin| {
            let id =
                pin.plan.members.first().and_then(|m| items.get(m.msg)).map_or_else(String::new, |i| i.id.to_string());
            let truncated = pin.plan.members.iter().any(|m| m.cut_text.is_some());
            pin.roles.iter().map(move |role| PinUse {
                id: id.clone(),
                role: *role,
                truncated,
                tokens_before: pin.whole,
                tokens_after: pin.plan.tokens,
            })
        })
        .collect();
    let receipt = Receipt {
        tokens_before,
        tokens_after: tokens.total,
        messages_before: items.len(),
        messages_after: messages.len(),
        by_part: tokens,
        budget: pass.budget.report,
        within_budget,
        runs,
        fates,
        repairs: super::repair::reported(&pass.units.structure, structures),
        pinned,
        summary: pass.units.summary.filter(|_| !pass.budget.summary.truncated || tokens.summary > 0).map(|s| {
            SummaryUse {
                request_id: s.request_id.clone(),
                summarised_until: s.summarised_until.clone(),
                tokens: s.tokens,
                fresh: false,
                truncated: pass.budget.summary.truncated,
            }
        }),
        bridge: pass.bridge.take().map(|(_, b)| b),
        memory: memory_use,
        state: pass.budget.state.used.take(),
        images: None,
        placeholder: placeholder_used,
        notes: std::mem::take(&mut pass.units.notes)
            .into_iter()
            .chain(std::mem::take(&mut pass.budget.notes))
            .chain(std::mem::take(&mut pass.notes))
            .collect(),
        calibration: None,
        cache: None,
        cost: None,
    };
    let context = CompactedContext { format, messages, tokens, receipt, marks: None };
    Ok(BuildOutcome { context, summary_request: pass.summary_request.take(), new_summary: None })
}

/// The first stored message the summary section does not stand for (with a summary configured):
/// the recent messages start there, and what repair left out before it was summarised too.
fn summarised_until(ctx: &Ctx, pass: &Pass) -> Option<usize> {
    ctx.options.summary.as_ref()?;
    let covered = pass.units.summary.map(|s| s.until_index + 1);
    let suffix = pass
        .suffix_start
        .filter(|s| *s > 0 || pass.bridge.is_some())
        .map(|o| pass.units.active.get(o).and_then(|&u| pass.units.unit(u)).map_or(ctx.items.len(), |u| u.first));
    match (covered, suffix) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

#[cfg(test)]
mod tests;
