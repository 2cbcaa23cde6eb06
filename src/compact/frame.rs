//! Cache-stable contexts. Providers cache prompt prefixes and bill cached input at a fraction of
//! the price, so what a session costs depends on how much of each call's context is the previous
//! call's, byte for byte. The frame is the context as the last build made it: between compaction
//! events a build appends what was logged since and changes nothing before it. An event happens
//! only when the next context would pass the budget (or the count window), or when what the
//! frame was made from changed (the options that shape messages, the summary in force, the
//! history under it); an event compacts down to the low-water mark, so that many calls can append
//! before the next one.

use std::sync::Arc;

use serde::Serialize;

use super::assemble::ContextMessage;
use super::forms::{Ctx, MemberPlan};
use super::receipt::{self, Action, DropReason, EventReason, Fate, ReceiptRun, Section};
use super::repair::{Item, Structure, UnitKind};
use super::BuildCache;
use super::{BuildOptions, CompactedContext};
use crate::error::Result;
use crate::message::{Format, Part, Role};
use crate::tokens::REPLY_PRIMING;

/// The frozen context: what the last build sent, up to the last unit that cannot change any more.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// What the frame was made with: the options that shape messages, and the summary in force.
    pub(crate) shape: String,
    pub(crate) summary_generation: u64,
    /// The context messages, in order.
    pub(crate) messages: Vec<ContextMessage>,
    /// Their tokens, with the reply priming.
    pub(crate) tokens: usize,
    /// Stored messages accounted for: every message before this index is in `messages` or was
    /// left out for good.
    pub(crate) settled: usize,
    /// The id of the last of them, which tells a history appended to from one truncated or
    /// replaced.
    pub(crate) settled_id: Option<String>,
    /// What became of each settled message.
    pub(crate) fates: Arc<Vec<Fate>>,
    /// The receipt runs of the last build, with how many fates they were made from.
    pub(crate) runs: Option<(usize, Arc<Vec<ReceiptRun>>)>,
    /// The receipt of the event that made this frame (what the appended builds report besides
    /// their own messages).
    pub(crate) event_receipt: Option<receipt::Receipt>,
    /// Compaction events so far.
    pub(crate) events: u64,
    /// The messages the last build sent (the frame, then the open tail), for the next receipt.
    pub(crate) last_sent: Vec<ContextMessage>,
    /// Read back from storage: the fates' tokens as stored are taken from the history at the
    /// next build (counted by then).
    pub(crate) restored: bool,
    /// The session's state as the context last showed it, section by section (its text): a state
    /// that changed between events is shown again after the last message, not rewritten in place.
    pub(crate) state_shown: Option<Vec<String>>,
    /// Changes to what storage must keep of the frame: an event, a state shown again, a message
    /// taken in a form the history alone does not give (made up, reduced, or left out by repair).
    /// Between them the frame takes stored messages whole, which a frame restored from an earlier
    /// state takes again from the history. Unique within a compactor, so that a save can tell
    /// any change by it.
    pub(crate) revision: u64,
    /// The receipt's pins as the messages taken since the revision leave them (the latest
    /// request among them), when they changed: the event receipt's once the frame is revised.
    pub(crate) pins_taken: Option<Vec<receipt::PinUse>>,
    /// Claude's billed size of the first messages of the frame: (how many, their sum).
    pub(crate) billed: (usize, usize),
    /// The budget's maximum as the caller gave it to the event that made the frame (`None`: no
    /// budget, or a frame stored before this was kept).
    pub(crate) given_max: Option<usize>,
}

/// Why a build cannot append to the frame.
pub(crate) type Refusal = EventReason;

/// The messages logged since the frame was made, as the next context sends them.
pub(crate) struct Appended {
    pub(crate) messages: Vec<ContextMessage>,
    /// How many of `messages` belong to closed units (the frame takes them).
    pub(crate) closed: usize,
    pub(crate) tokens: usize,
    /// The new settled point.
    pub(crate) settled: usize,
    pub(crate) fates: Vec<Fate>,
}

impl Frame {
    /// Whether this frame was made from the same history, options and summary.
    pub(crate) fn check(
        &self,
        items: &[Item],
        shape: &str,
        summary_generation: u64,
    ) -> std::result::Result<(), Refusal> {
        if self.shape.is_empty() {
            return Err(EventReason::First);
        }
        if self.shape != shape {
            return Err(EventReason::Options);
        }
        if self.summary_generation != summary_generation {
            return Err(EventReason::Summary);
        }
        let same_history = match (self.settled.checked_sub(1), &self.settled_id) {
            (None, None) => true,
            (Some(last), Some(id)) => items.get(last).is_some_and(|item| item.id == id),
            _ => false,
        };
        if !same_history || items.len() < self.settled {
            return Err(EventReason::History);
        }
        Ok(())
    }

    /// The messages logged since the frame was made, in the order a build sends them, each unit
    /// whole as repair formed it: refused when the structure of what the frame sent changed
    /// (a late result joining an earlier unit), or a system message was logged.
    pub(crate) fn appended(
        &self,
        ctx: &Ctx,
        cache: &mut BuildCache,
        structure: &Structure,
    ) -> std::result::Result<Result<Appended>, Refusal> {
        let settled = self.settled;
        let items = ctx.items;
        // Units reaching past the settled point: every unit after it, and at most the last unit
        // before it, which new messages may only extend at its end. (Units are in the order of
        // their first messages, not their last: a late result joins an earlier unit, so every
        // unit is looked at, by a field of its own.)
        let begun_after = structure.units.partition_point(|unit| unit.first < settled);
        let mut members: Vec<(usize, Option<Vec<usize>>, Section)> = Vec::new();
        for (u, unit) in structure.units.iter().enumerate().filter(|(_, unit)| unit.last() >= settled) {
            if unit.first < settled {
                let extends_last = u + 1 == begun_after;
                let old_then_new = unit.members.iter().skip_while(|m| m.msg < settled).all(|m| m.msg >= settled);
                if !(extends_last && old_then_new) {
                    return Err(EventReason::Repair);
                }
            } else if unit.kind == UnitKind::System && ctx.options.format == Format::Anthropic {
                // Anthropic takes instructions apart, before every message: the prefix breaks.
                return Err(EventReason::System);
            }
            let section = if unit.kind == UnitKind::System { Section::System } else { Section::Recent };
            members.extend(unit.members.iter().filter(|m| m.msg >= settled).map(|m| (m.msg, m.parts.clone(), section)));
        }
        let open_from = open_from(items, structure).max(settled);
        Ok(self.render(ctx, cache, &members, open_from))
    }

    fn render(
        &self,
        ctx: &Ctx,
        cache: &mut BuildCache,
        members: &[(usize, Option<Vec<usize>>, Section)],
        open_from: usize,
    ) -> Result<Appended> {
        let items = ctx.items;
        let mut messages = Vec::with_capacity(members.len());
        let mut closed = 0usize;
        let mut tokens = 0usize;
        let mut after: Vec<Option<u32>> = vec![None; items.len().saturating_sub(self.settled)];
        for (msg, parts, section) in members {
            let member = MemberPlan::of(*msg, parts.clone());
            let message = ctx.materialize(&mut cache.forms, &member)?;
            let n = ctx.member_tokens(&mut cache.forms, &member)?;
            let item = ctx.item(*msg)?;
            if *msg < open_from {
                closed += 1;
            }
            tokens += n as usize;
            if let Some(slot) = after.get_mut(msg - self.settled) {
                *slot = Some(slot.unwrap_or(0) + n);
            }
            messages.push(ContextMessage {
                message,
                sources: vec![item.id.to_string()],
                section: *section,
                action: Action::Kept,
                tokens: n,
            });
        }
        let settled = open_from.max(self.settled);
        let fates = (self.settled..items.len())
            .map(|i| {
                let before = items.get(i).map_or(0, |item| item.tokens);
                match after.get(i - self.settled).copied().flatten() {
                    Some(n) => Fate { action: Action::Kept, reason: None, tokens_before: before, tokens_after: n },
                    None => Fate {
                        action: Action::Dropped,
                        reason: Some(DropReason::Repair),
                        tokens_before: before,
                        tokens_after: 0,
                    },
                }
            })
            .collect();
        Ok(Appended { messages, closed, tokens, settled, fates })
    }

    /// Freezes `context`, built from `items`: the messages of units that may still change (the
    /// open tail) are sent but not frozen.
    pub(crate) fn freeze(
        context: &CompactedContext,
        items: &[Item],
        structure: &Structure,
        shape: String,
        summary_generation: u64,
        events: u64,
    ) -> Frame {
        let open_from = open_from(items, structure);
        // The open tail is the end of the context: the messages from the first that carries an
        // open message on.
        let open: std::collections::HashSet<&str> = items.iter().skip(open_from).map(|item| item.id).collect();
        let frozen = context
            .messages
            .iter()
            .position(|m| m.sources.iter().any(|s| open.contains(s.as_str())))
            .unwrap_or(context.messages.len());
        let messages: Vec<ContextMessage> = context.messages.iter().take(frozen).cloned().collect();
        let tokens = messages.iter().map(|m| m.tokens as usize).sum::<usize>() + REPLY_PRIMING;
        // Shared with the receipt while nothing is open (a long history's fates are many).
        let fates = match open_from == context.receipt.fates.len() {
            true => Arc::clone(&context.receipt.fates),
            false => Arc::new(context.receipt.fates.iter().take(open_from).copied().collect()),
        };
        Frame {
            shape,
            summary_generation,
            messages,
            tokens,
            settled: open_from,
            settled_id: open_from.checked_sub(1).and_then(|i| items.get(i)).map(|item| item.id.to_string()),
            fates,
            runs: None,
            event_receipt: Some(context.receipt.clone()),
            events,
            last_sent: context.messages.clone(),
            restored: false,
            state_shown: shown_state(&context.messages),
            revision: 0,
            pins_taken: None,
            billed: (0, 0),
            given_max: None,
        }
    }

    /// The stored messages' tokens, counted now, in the fates of a frame read back from storage.
    pub(crate) fn recount(&mut self, items: &[Item]) {
        if !self.restored {
            return;
        }
        for (fate, item) in Arc::make_mut(&mut self.fates).iter_mut().zip(items) {
            fate.tokens_before = item.tokens;
        }
        self.restored = false;
    }

    /// The session's state, when it changed since the context last showed it: a message that
    /// shows it again, for the end of the context (with its sections' texts and what it holds).
    /// Instructions in the middle of a conversation are system messages where the provider takes
    /// them there (OpenAI), and a `<system-reminder>` in the user's turn where it does not
    /// (Anthropic, the AI SDK).
    pub(crate) fn state_update(
        &self,
        ctx: &Ctx,
        cache: &mut BuildCache,
        room: usize,
    ) -> Option<(Option<ContextMessage>, Vec<String>, super::StateUse)> {
        let options = ctx.options.state.as_ref()?;
        let cap = options.max_tokens.map_or(super::state_sections::STATE_MAX_TOKENS, |m| m as usize).min(room);
        let format = ctx.options.format;
        let (messages, used) =
            super::state_sections::state_sections(ctx.state, cap, ctx.encoding, format, &mut cache.texts.lines)?;
        let texts: Vec<String> = messages.iter().map(|m| m.content.joined_text()).collect();
        if texts.is_empty() || self.state_shown.as_ref() == Some(&texts) {
            return Some((None, texts, used));
        }
        let body = texts.join("\n\n");
        let message = match format {
            Format::Anthropic | Format::AiSdk => crate::message::Message::new(
                Role::User,
                crate::message::Content::text(format!(
                    "<system-reminder>\nThe state now:\n\n{body}\n</system-reminder>"
                )),
                format,
            ),
            _ => crate::message::Message::new(
                Role::System,
                crate::message::Content::text(format!("The state now:\n\n{body}")),
                format,
            ),
        };
        let tokens = u32::try_from(super::forms::made_up_tokens(ctx, &mut cache.texts, &message)).unwrap_or(u32::MAX);
        let update = ContextMessage {
            message: Arc::new(message),
            sources: Vec::new(),
            section: Section::State,
            action: Action::Kept,
            tokens,
        };
        Some((Some(update), texts, used))
    }

    /// The billed size of the frame's messages (by `billed`, each counted once).
    pub(crate) fn billed_frozen(&mut self, billed: impl Fn(&ContextMessage) -> usize) -> usize {
        let (counted, sum) = self.billed;
        let more: usize = self.messages.iter().skip(counted).map(billed).sum();
        self.billed = (self.messages.len(), sum + more);
        sum + more
    }

    /// Takes the closed part of `appended` into the frame; `true` when storage must keep what it
    /// took: a message the history alone does not give (made up by the build, sent in another
    /// form than the stored message whole, or a stored message left out), which a frame made
    /// again from the history later (a late tool result joining its unit) would not match.
    pub(crate) fn take(&mut self, appended: &Appended, items: &[Item]) -> bool {
        let taken = &appended.messages[..appended.closed.min(appended.messages.len())];
        let whole = |m: &ContextMessage| {
            let stored = m.sources.first().and_then(|id| items.iter().rev().find(|item| item.id == id));
            stored.is_some_and(|item| Arc::ptr_eq(item.message, &m.message))
        };
        let newly_settled = appended.fates.iter().take(appended.settled.saturating_sub(self.settled));
        let keep = !taken.iter().all(whole) || newly_settled.into_iter().any(|f| f.action != Action::Kept);
        if taken.iter().any(is_request) {
            let pins = self.pins_taken.take().or_else(|| self.event_receipt.as_ref().map(|r| r.pinned.clone()));
            self.pins_taken = Some(latest_pinned(pins.unwrap_or_default(), taken));
        }
        self.messages.extend(taken.iter().cloned());
        self.tokens += appended.messages.iter().take(appended.closed).map(|m| m.tokens as usize).sum::<usize>();
        let settled = appended.settled;
        if settled > self.settled {
            let fates = Arc::make_mut(&mut self.fates);
            fates.extend(appended.fates.iter().take(settled - self.settled).copied());
            self.settled = settled;
            self.settled_id = items.get(settled - 1).map(|item| item.id.to_string());
        }
        keep
    }

    /// Whether the budget given now has outgrown the one this frame's event compacted to: by half
    /// or more (a budget that moves a little keeps the prefix), with something left out or cut.
    /// Compared as the caller gives it: converted to counted tokens it moves with Claude's rule
    /// and the calibration.
    pub(crate) fn outgrown(&self, given_max: Option<usize>) -> bool {
        let Some(then) = self.given_max else { return false };
        let grown = given_max.is_none_or(|now| now as f64 >= then as f64 * 1.5);
        grown && self.fates.iter().any(|fate| fate.action != Action::Kept)
    }

    /// Gives the frame `revision`: what storage keeps of it changed.
    pub(crate) fn revise(&mut self, revision: u64) {
        if let (Some(pins), Some(receipt)) = (self.pins_taken.take(), self.event_receipt.as_mut()) {
            receipt.pinned = pins;
        }
        self.revision = revision;
    }
}

/// The texts of the state sections an event's context shows, right after the system prompt.
fn shown_state(messages: &[ContextMessage]) -> Option<Vec<String>> {
    Some(messages.iter().filter(|m| m.section == Section::State).map(|m| m.message.content.joined_text()).collect())
}

/// Where the open tail of the history starts: the last run of assistant messages, when one of
/// its calls waits for a result (the result will change how the run is sent: a call no result
/// answers is left out). The history's length when nothing is open.
pub(crate) fn open_from(items: &[Item], structure: &Structure) -> usize {
    if structure.open_calls == 0 {
        return items.len();
    }
    let run = items.iter().rposition(|item| item.message.role != Role::Assistant).map_or(0, |i| i + 1);
    let waiting = items.iter().enumerate().skip(run).any(|(i, item)| {
        item.message.content.parts.iter().enumerate().any(|(j, part)| match part {
            Part::ToolCall(call) => structure.calls.get(&call.id) != Some(&(i, j)),
            _ => false,
        })
    });
    if !waiting {
        return items.len();
    }
    // A system message does not end a run: the run's unit may have begun before it.
    let unit = structure.units.iter().rev().find(|unit| unit.members.iter().any(|m| m.msg >= run));
    unit.map_or(run, |unit| unit.first.min(run))
}

/// How many of the leading messages two contexts share, and their tokens.
pub(crate) fn shared_prefix(before: &[ContextMessage], after: &[ContextMessage]) -> (usize, usize) {
    let mut tokens = 0usize;
    let mut n = 0usize;
    for (a, b) in before.iter().zip(after) {
        if !(Arc::ptr_eq(&a.message, &b.message) || a.message == b.message) {
            break;
        }
        tokens += a.tokens as usize;
        n += 1;
    }
    (n, tokens)
}

/// The shape of the messages a build makes under `options` (and the history's explicit pins,
/// which every context holds): what must stay the same for a frame to be appended to. The budget
/// and the count window are not part of it (a frame that fits a new budget stays), nor is `now`.
pub(crate) fn shape(options: &BuildOptions, encoding: crate::tokens::Encoding, pins: &[usize]) -> String {
    let summary = options.summary.as_ref().map(|s| (s.summarizer, s.max_tokens, &s.prompt, s.placement));
    let format = options.format;
    format!(
        "{encoding:?}|{format:?}|{}|{}|{:?}|{:?}|{}|{summary:?}|{:?}|{:?}|{}|{pins:?}",
        options.keep_recent_steps,
        options.dedupe_system,
        options.compress,
        options.digest,
        options.thin,
        options.memory,
        options.state,
        options.images_sent_once,
    )
}

/// The budget's figures as compaction events use them.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Limits {
    /// The most tokens the context may have.
    pub(crate) max: Option<usize>,
    /// An event happens when the next context would pass this.
    pub(crate) trigger: Option<usize>,
    /// The share of the room beside the system prompt an event leaves (`None`: the default).
    pub(crate) low_water_ratio: Option<f64>,
    /// A low-water mark given in tokens (`summary.targetTokens`; without a budget, the summary's
    /// default target).
    target_tokens: Option<usize>,
    /// `max` as the caller gave it, before a conversion to counted tokens.
    pub(crate) given_max: Option<usize>,
}

impl Limits {
    pub(crate) fn of(options: &BuildOptions) -> Limits {
        let max = options.budget.as_ref().map(super::BudgetOptions::max_tokens);
        let trigger = match &options.summary {
            Some(summary) => Some(summary.trigger(max).min(max.unwrap_or(usize::MAX))),
            None => max,
        };
        let target_tokens = match (&options.summary, max) {
            (Some(summary), _) if summary.target_tokens.is_some() => Some(summary.target(max)),
            (Some(summary), None) => Some(summary.target(None)),
            _ => None,
        };
        let low_water_ratio = options.budget.as_ref().and_then(|budget| budget.low_water_ratio);
        Limits { max, trigger, low_water_ratio, target_tokens, given_max: max }
    }

    /// The low-water mark of a history whose system prompt takes `fixed` tokens: the system
    /// prompt and the low-water share of what the trigger leaves it.
    pub(crate) fn low_water(&self, fixed: usize) -> Option<usize> {
        let trigger = self.trigger?;
        let mark = match self.target_tokens {
            Some(tokens) => tokens,
            None => {
                let room = trigger.saturating_sub(fixed);
                fixed
                    + match self.low_water_ratio {
                        Some(ratio) => (room as f64 * ratio).floor() as usize,
                        None => super::options::default_low_water(room),
                    }
            }
        };
        Some(mark.min(trigger))
    }

    /// `options` for one pass of the pipeline: a budget of `max` tokens (the summary's own
    /// trigger and target folded into it) and the count window `window` (else the options').
    pub(crate) fn at(&self, options: &BuildOptions, max: Option<usize>, window: Option<usize>) -> BuildOptions {
        let mut at = options.clone();
        if let Some(max) = max {
            let mut budget = at.budget.clone().unwrap_or_default();
            budget.max_tokens = Some(u32::try_from(max).unwrap_or(u32::MAX).max(1));
            at.budget = Some(budget);
            if let Some(summary) = at.summary.as_mut() {
                summary.trigger_tokens = None;
                summary.target_tokens = None;
            }
        }
        if window.is_some() {
            at.max_messages = window;
        }
        at
    }
}

/// The tokens of the history's system messages (always sent whole).
pub(crate) fn system_tokens(items: &[Item], structure: &Structure) -> usize {
    structure
        .units
        .iter()
        .filter(|unit| unit.kind == UnitKind::System)
        .flat_map(|unit| unit.members.iter())
        .filter_map(|member| items.get(member.msg))
        .map(|item| item.tokens as usize)
        .sum()
}

/// Whether a build left every stored message as it is (but what the summary in force stands
/// for, and what repair left out): a first context that is no compaction.
pub(crate) fn reduced_nothing(outcome: &super::BuildOutcome, summary: &super::SummaryState) -> bool {
    if outcome.new_summary.is_some() || outcome.summary_request.is_some() || outcome.context.receipt.bridge.is_some() {
        return false;
    }
    let covered = summary.current.as_ref().map(|s| s.until_index);
    outcome.context.receipt.fates.iter().enumerate().all(|(i, fate)| match fate.action {
        Action::Kept => true,
        Action::Dropped => fate.reason == Some(DropReason::Repair),
        Action::Summarised => covered.is_some_and(|until| i <= until),
        _ => false,
    })
}

impl Frame {
    /// The context of a build between events: `messages` (the frame and `appended`), with the
    /// receipt of the event that made the frame brought up to date.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn context(
        &mut self,
        items: &[Item],
        structure: &Structure,
        cache: &mut BuildCache,
        messages: Vec<ContextMessage>,
        appended: &Appended,
        limits: &Limits,
        format: Format,
    ) -> Result<CompactedContext> {
        let mut tokens = super::TokensByPart::default();
        for message in &messages {
            let n = message.tokens as usize;
            match message.section {
                Section::System => tokens.system += n,
                Section::State => tokens.state += n,
                Section::Summary => tokens.summary += n,
                Section::Pinned | Section::Recent => tokens.recent += n,
            }
        }
        tokens.total = tokens.system + tokens.state + tokens.summary + tokens.recent + REPLY_PRIMING;
        let mut fates: Vec<Fate> = Vec::with_capacity(items.len());
        fates.extend(self.fates.iter().copied());
        fates.extend(appended.fates.iter().copied());
        let base = self.event_receipt.as_ref();
        let last = self
            .runs
            .as_ref()
            .map(|(_, runs)| Arc::clone(runs))
            .or_else(|| base.map(|receipt| Arc::clone(&receipt.runs)));
        let runs = Arc::new(receipt::runs(items, &fates, last.as_deref().map(|runs| (self.settled, runs.as_slice()))));
        self.runs = Some((fates.len(), Arc::clone(&runs)));
        let tokens_before = fates.iter().map(|f| f.tokens_before as usize).sum::<usize>() + REPLY_PRIMING;
        let receipt = receipt::Receipt {
            tokens_before,
            tokens_after: tokens.total,
            messages_before: items.len(),
            messages_after: messages.len(),
            by_part: tokens,
            budget: base.and_then(|r| r.budget),
            within_budget: limits.max.is_none_or(|max| tokens.total <= max),
            runs,
            fates: Arc::new(fates),
            repairs: super::repair::reported(structure, &mut cache.structure),
            pinned: latest_pinned(
                self.pins_taken.clone().or_else(|| base.map(|r| r.pinned.clone())).unwrap_or_default(),
                &appended.messages,
            ),
            summary: base.and_then(|r| r.summary.clone()).map(|summary| super::SummaryUse { fresh: false, ..summary }),
            bridge: base.and_then(|r| r.bridge.clone()),
            memory: base.and_then(|r| r.memory.clone()),
            state: base.and_then(|r| r.state.clone()),
            images: base.and_then(|r| r.images.clone()),
            placeholder: base.is_some_and(|r| r.placeholder),
            notes: base.map(|r| r.notes.clone()).unwrap_or_default(),
            calibration: None,
            cache: None,
            cost: None,
        };
        Ok(CompactedContext { format, messages, tokens, receipt, marks: None })
    }
}

/// Whether a context message is a request the receipt pins as the latest.
fn is_request(m: &ContextMessage) -> bool {
    m.message.role == Role::User
        && m.message.content.parts.iter().any(|p| matches!(p, Part::Text { text, .. } if !text.trim().is_empty()))
}

/// `pinned`, with the latest request among `messages` (appended since) as the latest pin.
fn latest_pinned(mut pinned: Vec<receipt::PinUse>, messages: &[ContextMessage]) -> Vec<receipt::PinUse> {
    if let Some(latest) = messages.iter().rev().find(|m| is_request(m)) {
        let tokens = latest.tokens as usize;
        pinned.retain(|pin| pin.role != super::PinRole::Latest);
        pinned.push(receipt::PinUse {
            id: latest.sources.first().cloned().unwrap_or_default(),
            role: super::PinRole::Latest,
            truncated: false,
            tokens_before: tokens,
            tokens_after: tokens,
        });
    }
    pinned
}

// ---------------------------------------------------------------------------------------------
// The frame as storage keeps it.

/// A message of the frame as stored: a stored message by id (with the form it was sent in, when
/// that is not the message whole), or a message the build made up.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct FrozenMessage {
    /// The stored message it carries (none: made up by the build).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub id: Option<String>,
    pub section: Section,
    pub action: Action,
    pub tokens: u32,
    /// Its form as sent (in `format`), when it is not the stored message whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional, type = "unknown"))]
    pub form: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub format: Option<Format>,
}

/// Consecutive settled messages that fared alike: how many, and what became of them.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct FrozenFates {
    pub count: usize,
    pub action: Action,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub reason: Option<DropReason>,
}

/// What the receipt of the event that made a frame said beside the messages.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct FrozenReceipt {
    pub budget: Option<receipt::BudgetReport>,
    pub pinned: Vec<receipt::PinUse>,
    pub summary: Option<receipt::SummaryUse>,
    pub bridge: Option<receipt::BridgeUse>,
    pub memory: Option<super::MemoryUse>,
    pub state: Option<super::StateUse>,
    pub images: Option<super::ImagesUse>,
    pub placeholder: bool,
    pub notes: Vec<String>,
}

/// The frame as storage and an export keep it: what the next build appends to, so that a
/// session reopened (or served by another process) sends the same prefix.
#[derive(Clone, Debug, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct FrameState {
    /// What the frame was made with (the options that shape messages), opaque.
    pub shape: String,
    pub summary_generation: u64,
    /// Compaction events so far.
    pub events: u64,
    /// Stored messages accounted for, and the id of the last.
    pub settled: usize,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub settled_id: Option<String>,
    pub messages: Vec<FrozenMessage>,
    pub fates: Vec<FrozenFates>,
    pub receipt: FrozenReceipt,
    /// The session's state as the context last showed it, section by section.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub state_shown: Option<Vec<String>>,
    /// The summary request the frame's event proposed, while it waits for its summary: a
    /// reopened session asks for it again, as the live one does, rather than appending.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "stored_request")]
    #[cfg_attr(test, ts(optional))]
    pub summary_request: Option<super::SummaryRequest>,
    /// The budget's maximum as given to the event that made the frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub given_max: Option<u64>,
}

/// A stored summary request, or `None` when it does not read as one (the frame is kept; the next
/// event proposes afresh).
fn stored_request<'de, D: serde::Deserializer<'de>>(
    reader: D,
) -> std::result::Result<Option<super::SummaryRequest>, D::Error> {
    let stored = <Option<serde_json::Value> as serde::Deserialize>::deserialize(reader)?;
    Ok(stored.as_ref().and_then(super::SummaryRequest::from_stored))
}

impl Frame {
    /// The frame as storage keeps it, on the history `items` it was made from; `None` before the
    /// first build.
    pub(crate) fn state(&self, items: &[Item]) -> Option<FrameState> {
        if self.shape.is_empty() {
            return None;
        }
        let position: std::collections::HashMap<&str, usize> =
            items.iter().enumerate().map(|(i, item)| (item.id, i)).collect();
        let messages = self
            .messages
            .iter()
            .map(|m| {
                let id = m.sources.first().cloned();
                let stored = id.as_deref().and_then(|id| position.get(id)).and_then(|&i| items.get(i));
                let whole = stored.is_some_and(|item| Arc::ptr_eq(item.message, &m.message));
                let form = (!whole).then(|| crate::message::emit_one(&m.message, m.message.source)).flatten();
                FrozenMessage {
                    id,
                    section: m.section,
                    action: m.action,
                    tokens: m.tokens,
                    format: form.as_ref().map(|_| m.message.source),
                    form,
                }
            })
            .collect();
        let fates = self
            .fates
            .chunk_by(|a, b| (a.action, a.reason) == (b.action, b.reason))
            .map(|run| FrozenFates {
                count: run.len(),
                action: run.first().map_or(Action::Dropped, |f| f.action),
                reason: run.first().and_then(|f| f.reason),
            })
            .collect();
        let receipt = self.event_receipt.as_ref().map(|r| FrozenReceipt {
            budget: r.budget,
            pinned: self.pins_taken.clone().unwrap_or_else(|| r.pinned.clone()),
            summary: r.summary.clone(),
            bridge: r.bridge.clone(),
            memory: r.memory.clone(),
            state: r.state.clone(),
            images: r.images.clone(),
            placeholder: r.placeholder,
            notes: r.notes.clone(),
        });
        Some(FrameState {
            shape: self.shape.clone(),
            summary_generation: self.summary_generation,
            events: self.events,
            settled: self.settled,
            settled_id: self.settled_id.clone(),
            messages,
            fates,
            receipt: receipt.unwrap_or_default(),
            state_shown: self.state_shown.clone(),
            summary_request: None,
            given_max: self.given_max.map(|max| max as u64),
        })
    }

    /// The frame a stored state describes, on `items`: refused when it does not fit them.
    pub(crate) fn restore(state: FrameState, items: &[Item]) -> Result<Frame> {
        let bad = |what: String| crate::error::Error::invalid_argument(format!("the stored frame {what}"));
        let position: std::collections::HashMap<&str, usize> =
            items.iter().enumerate().map(|(i, item)| (item.id, i)).collect();
        if state.settled > items.len() {
            return Err(bad(format!("covers {} messages, but the history has {}", state.settled, items.len())));
        }
        let last = state.settled.checked_sub(1).and_then(|i| items.get(i)).map(|item| item.id);
        if last != state.settled_id.as_deref() {
            return Err(bad("ends at another message than this history's".to_string()));
        }
        let mut messages = Vec::with_capacity(state.messages.len());
        for (k, frozen) in state.messages.into_iter().enumerate() {
            let stored = match &frozen.id {
                Some(id) => match position.get(id.as_str()) {
                    Some(&i) if i < state.settled => items.get(i).map(|item| Arc::clone(item.message)),
                    _ => return Err(bad(format!("sends message {id:?}, which the history does not hold there"))),
                },
                None => None,
            };
            let message = match (frozen.form, frozen.format, &stored) {
                (Some(form), Some(format), _) => Arc::new(crate::message::parse_one(form, format, k)?),
                (None, _, Some(stored)) => Arc::clone(stored),
                _ => return Err(bad(format!("has a message ({k}) with neither an id nor a form"))),
            };
            messages.push(ContextMessage {
                message,
                sources: frozen.id.into_iter().collect(),
                section: frozen.section,
                action: frozen.action,
                tokens: frozen.tokens,
            });
        }
        // The fates: the runs, each message's tokens as stored and as the frame sends it.
        let mut after: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
        for m in &messages {
            if let Some(id) = m.sources.first() {
                *after.entry(id.as_str()).or_default() += m.tokens;
            }
        }
        let mut fates = Vec::with_capacity(state.settled);
        for run in &state.fates {
            for _ in 0..run.count {
                let Some(item) = items.get(fates.len()) else { break };
                let sent = matches!(run.action, Action::Kept | Action::Compressed | Action::Digested | Action::Thinned);
                fates.push(Fate {
                    action: run.action,
                    reason: run.reason,
                    tokens_before: item.tokens,
                    tokens_after: if sent { after.get(item.id).copied().unwrap_or(0) } else { 0 },
                });
            }
        }
        if fates.len() != state.settled {
            return Err(bad(format!("says what became of {} messages, not {}", fates.len(), state.settled)));
        }
        let tokens = messages.iter().map(|m| m.tokens as usize).sum::<usize>() + REPLY_PRIMING;
        let r = state.receipt;
        let event_receipt = receipt::Receipt {
            tokens_before: 0,
            tokens_after: tokens,
            messages_before: state.settled,
            messages_after: messages.len(),
            by_part: super::TokensByPart::default(),
            budget: r.budget,
            within_budget: true,
            runs: Arc::default(),
            fates: Arc::default(),
            repairs: Arc::default(),
            pinned: r.pinned,
            summary: r.summary,
            bridge: r.bridge,
            memory: r.memory,
            state: r.state,
            images: r.images,
            placeholder: r.placeholder,
            notes: r.notes,
            calibration: None,
            cache: None,
            cost: None,
        };
        Ok(Frame {
            shape: state.shape,
            summary_generation: state.summary_generation,
            tokens,
            settled: state.settled,
            settled_id: state.settled_id,
            fates: Arc::new(fates),
            runs: None,
            event_receipt: Some(event_receipt),
            events: state.events,
            last_sent: Vec::new(),
            messages,
            restored: true,
            state_shown: state.state_shown,
            revision: 0,
            pins_taken: None,
            billed: (0, 0),
            given_max: state.given_max.map(|max| max as usize),
        })
    }
}
