//! Assemble: the kept units in history order, with the summary section before the first recent
//! message, a placeholder user message where the provider needs one, the tokens by part and the
//! receipt. The output types of a build live here too.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::memory;
use super::plan::{made_up_tokens, Ctx, Pass, Plan};
use super::receipt::{self, Action, Receipt, Section, SummaryUse, TokensByPart};
use super::reduce::ReduceCache;
use super::request::emitted::{self, Assembled, EmitCache};
use super::request::PLACEHOLDER_TEXT;
use super::summary::{SummaryRecord, SummaryRequest};
use crate::error::{Error, Result};
use crate::message::{Content, Format, Message, Role};
use crate::tokens::REPLY_PRIMING;

#[derive(Clone, Debug, PartialEq)]
pub struct ContextMessage {
    /// Shared with the history when kept whole.
    pub message: Arc<Message>,
    /// The stored messages it comes from (empty for the summary and the placeholder).
    pub sources: Vec<String>,
    pub section: Section,
    pub action: Action,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CompactedContext {
    pub format: Format,
    pub messages: Vec<ContextMessage>,
    pub tokens: TokensByPart,
    pub receipt: Receipt,
}

impl CompactedContext {
    /// The messages as a provider request takes them, checked against the provider's rules.
    pub fn to_request(&self) -> Result<Value> {
        let mut cache = EmitCache::default();
        let assembled = self.request(&mut cache)?;
        Ok(cache.to_value(&assembled))
    }

    /// `to_request` in pieces, the forms of messages met before taken from `cache`.
    pub fn request(&self, cache: &mut EmitCache) -> Result<Assembled> {
        let messages: Vec<&Arc<Message>> = self.messages.iter().map(|m| &m.message).collect();
        let assembled = cache.assemble(&messages, self.format)?;
        cache.validate(&assembled).map_err(|violations| emitted::invalid_context(&violations))?;
        Ok(assembled)
    }

    /// The messages in the neutral model, in order.
    pub fn messages(&self) -> impl Iterator<Item = &Message> {
        self.messages.iter().map(|m| &*m.message)
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

/// The user message put first when the provider needs one and none is left.
pub(crate) fn placeholder(format: Format) -> Message {
    Message::new(Role::User, Content::text(PLACEHOLDER_TEXT), format)
}

/// The stage: the context and its receipt from what the earlier stages decided.
pub(crate) fn assemble(ctx: &Ctx, cache: &mut ReduceCache, mut pass: Pass) -> Result<BuildOutcome> {
    let items = ctx.items;
    let format = ctx.options.format;
    // Kept units in history order, system units where they were.
    let mut kept: Vec<(&Plan, Section)> = pass.system.iter().map(|p| (p, Section::System)).collect();
    kept.extend(pass.plans.iter().filter(|p| p.dropped.is_none()).map(|p| (p, Section::Recent)));
    kept.sort_by_key(|(p, _)| pass.unit(p.unit).map_or(usize::MAX, |u| u.first));

    let summary_in_context = pass.summary_in_context;
    let mut summary_msgs = if summary_in_context { std::mem::take(&mut pass.summary_messages) } else { Vec::new() };
    let mut tokens = TokensByPart::default();
    if summary_in_context {
        tokens.summary = pass.summary_tokens;
    }
    let memory_use = match (&ctx.options.memory, ctx.turns.is_empty()) {
        (Some(options), false) => {
            // Thinned messages do not count as in the context: their turn's summary is wanted.
            let mut present = vec![false; items.len()];
            for (plan, _) in &kept {
                for member in plan.members.iter().filter(|m| !m.text_only) {
                    if let Some(slot) = present.get_mut(member.msg) {
                        *slot = true;
                    }
                }
            }
            // What the summary budget leaves: the recent budget was set without it, so the
            // context stays within the maximum.
            let room = pass.budget.map_or(usize::MAX, |b| b.summary_budget.saturating_sub(tokens.summary));
            let room = options.max_tokens.map_or(room, |m| room.min(m as usize));
            let in_context = |i: usize| present.get(i).copied().unwrap_or(false);
            memory::turn_summaries(ctx.turns, in_context, room, ctx.encoding, format, &mut cache.memory_lines).map(
                |(message, used)| {
                    summary_msgs.extend(message);
                    tokens.summary += used.tokens;
                    used
                },
            )
        }
        _ => None,
    };
    let mut messages: Vec<ContextMessage> = Vec::new();
    // The summary section goes before the first recent message (or last, if there is none).
    let mut summary_section = Some(summary_msgs);
    let place = |messages: &mut Vec<ContextMessage>, section: Option<Vec<Message>>| {
        messages.extend(section.into_iter().flatten().map(|message| ContextMessage {
            message: Arc::new(message),
            sources: Vec::new(),
            section: Section::Summary,
            action: Action::Kept,
        }));
    };
    let mut after: HashMap<usize, (Action, u32)> = HashMap::new();
    for (plan, section) in &kept {
        if *section == Section::Recent {
            place(&mut messages, summary_section.take());
        }
        if plan.member_tokens.len() != plan.members.len() {
            return Err(Error::internal(format!("unit {} is in the context but was not counted", plan.unit)));
        }
        for (member, n) in plan.members.iter().zip(plan.member_tokens.iter()) {
            let message = ctx.materialize(cache, member)?;
            let id = ctx.item(member.msg)?.id.to_string();
            let action = member.action();
            let entry = after.entry(member.msg).or_insert((action, 0));
            entry.0 = entry.0.max(action);
            entry.1 += n;
            match section {
                Section::System => tokens.system += *n as usize,
                _ => tokens.recent += *n as usize,
            }
            messages.push(ContextMessage { message, sources: vec![id], section: *section, action });
        }
    }
    place(&mut messages, summary_section.take());

    // Anthropic: the first message must come from the user, and there must be one; no provider
    // takes an empty list.
    let mut placeholder_used = false;
    if format == Format::Anthropic || messages.is_empty() {
        let first = messages.iter().position(|m| !m.message.role.is_instruction());
        let needs = match first.and_then(|i| messages.get(i)) {
            None => format == Format::Anthropic || messages.is_empty(),
            Some(m) => m.message.role == Role::Assistant && format == Format::Anthropic,
        };
        if needs {
            let at = first.unwrap_or(messages.len());
            let message = placeholder(format);
            tokens.recent += made_up_tokens(ctx, cache, &message);
            messages.insert(
                at,
                ContextMessage {
                    message: Arc::new(message),
                    sources: Vec::new(),
                    section: Section::Recent,
                    action: Action::Kept,
                },
            );
            placeholder_used = true;
            pass.notes.push("a placeholder user message was put first: the provider needs one".to_string());
        }
    }
    tokens.total = tokens.system + tokens.summary + tokens.recent + REPLY_PRIMING;

    let fates = receipt::fates(items, &pass.structure, &pass.covered, &pass.plans, &after);
    let tokens_before = items.iter().map(|i| i.tokens as usize).sum::<usize>() + REPLY_PRIMING;
    let within_budget = pass.budget.is_none_or(|b| tokens.total <= b.max_tokens);
    let receipt = Receipt {
        tokens_before,
        tokens_after: tokens.total,
        messages_before: items.len(),
        messages_after: messages.len(),
        by_part: tokens,
        budget: pass.budget,
        within_budget,
        runs: receipt::runs(items, &fates),
        fates,
        repairs: pass.structure.repairs.clone(),
        summary: pass.summary.filter(|_| summary_in_context).map(|s| SummaryUse {
            request_id: s.request_id.clone(),
            summarised_until: s.summarised_until.clone(),
            tokens: s.tokens,
            fresh: false,
        }),
        memory: memory_use,
        placeholder: placeholder_used,
        notes: std::mem::take(&mut pass.notes),
        calibration: None,
    };
    let context = CompactedContext { format, messages, tokens, receipt };
    Ok(BuildOutcome { context, summary_request: pass.summary_request.take(), new_summary: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::plan::testing::{through_reduce, turns, Log, ENCODING};
    use crate::compact::receipt::DropReason;
    use crate::compact::summary::SummaryState;
    use crate::compact::{select, BudgetOptions, BuildOptions};
    use serde_json::json;

    #[test]
    fn the_context_is_system_then_recent_with_a_receipt_for_every_message() {
        let log = turns(40, 1, 30);
        let items = log.items();
        let budget = BudgetOptions { context_window: 4_000, min_messages: 1, ..BudgetOptions::default() };
        let options = BuildOptions {
            budget: Some(budget),
            summary: None,
            digest: None,
            compress: None,
            ..BuildOptions::default()
        };
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let mut pass = through_reduce(&ctx, &mut cache, &state);
        select::fill_budget(&ctx, &mut cache, &mut pass).unwrap();
        let outcome = assemble(&ctx, &mut cache, pass).unwrap();
        let context = &outcome.context;
        assert_eq!(context.messages[0].section, Section::System);
        assert!(context.messages[1..].iter().all(|m| m.section == Section::Recent));
        assert_eq!(context.messages.last().unwrap().sources, [format!("m{}", items.len())]);
        let receipt = &context.receipt;
        assert_eq!(receipt.fates.len(), items.len());
        assert_eq!(receipt.runs.iter().map(|r| r.count).sum::<usize>(), items.len());
        assert_eq!(receipt.fates[1].reason, Some(DropReason::Budget));
        let kept: usize = receipt.fates.iter().map(|f| f.tokens_after as usize).sum();
        assert_eq!(kept + REPLY_PRIMING, context.tokens.total);
        assert_eq!(context.tokens.total, context.tokens.system + context.tokens.recent + REPLY_PRIMING);
        assert!(receipt.within_budget && !receipt.placeholder);
        assert!(context.request(&mut EmitCache::default()).is_ok(), "valid for the provider");
    }

    #[test]
    fn anthropic_gets_a_placeholder_when_no_user_message_leads() {
        let log = Log::openai(json!([{"role": "system", "content": "s"}, {"role": "assistant", "content": "hello"}]));
        let items = log.items();
        let options = BuildOptions { format: Format::Anthropic, summary: None, ..BuildOptions::default() };
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[] };
        let mut cache = ReduceCache::default();
        let state = SummaryState::default();
        let pass = through_reduce(&ctx, &mut cache, &state);
        let context = assemble(&ctx, &mut cache, pass).unwrap().context;
        let roles: Vec<Role> = context.messages().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant]);
        assert_eq!(context.messages().nth(1).unwrap().content.joined_text(), PLACEHOLDER_TEXT);
        assert!(context.receipt.placeholder);
        assert!(context.to_request().is_ok());
    }
}
