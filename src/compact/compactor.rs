//! The compactor: what lives beside a history between builds. The summary state and its
//! lifecycle (a request proposed by a build, begun, completed or cancelled), the reductions of
//! earlier builds, the request forms of the last context (so that a warm build emits only the
//! messages that changed, for a native caller as for JS), and the last receipt.

use serde_json::Value;

use std::sync::Arc;

use super::forms::Ctx;
use super::frame::{self, Frame, FrameState, Limits};
use super::receipt::{CacheUse, Change, EventReason, Fate, Section};
use super::{
    pipeline, Assembled, BuildCache, BuildOptions, BuildOutcome, CompactedContext, ContextMessage, EmitCache, Item,
    ReceiptEntry, StateNote, SummaryRecord, SummaryRequest, SummarySource, SummaryState, TurnNote,
};
use crate::error::{Error, ErrorKind, Result};
use crate::history::{ConversationHistory, TokenReport};
use crate::message::{Format, Role};
use crate::tokens::anchor::{anchoring_output, Anchor, AnchorEnd, AnchoredCount, CountBasis, UsageReport};
use crate::tokens::calibration::{Calibration, Factor, Observation, ReportedUsage};
use crate::tokens::claude;
use crate::tokens::{ChatCount, Encoding};

#[derive(Clone, Debug, Default)]
pub struct Compactor {
    summary: SummaryState,
    reduce: BuildCache,
    forms: EmitCache,
    /// The last summary request a compaction event proposed (what `begin_summary` can start):
    /// proposed again by the builds after it until it is completed or another event replaces it,
    /// so that a summariser that failed (or a caller that only looked) gets it again.
    proposed: Option<SummaryRequest>,
    /// What the last build sent (its fates, the receipt's entries, are kept with the reductions:
    /// a second reference would have the next build copy them).
    last_build: Option<BuildMark>,
    /// Where the last build's cache breakpoints ended (token offsets of its request): a provider
    /// that caches at breakpoints reads back only up to one of them.
    written_before: Vec<usize>,
    /// Reported usage against our counts of whole requests, per model.
    calibration: Calibration,
    /// The last recorded usage, while later counts can start from it (not exported: a restored
    /// session waits for its next response).
    anchor: AnchorState,
    /// The history's `rebases` when `reduce` was filled: the cache is by message id, and a
    /// truncated history gives the dropped messages' ids to new ones.
    rebases: u64,
    /// The context as the last build made it, which the next build appends to between events.
    frame: Frame,
    /// The frames of builds with other options that shape messages (another format, say): a
    /// history built in two ways keeps each one's prefix. The most recent first, a few.
    parked: Vec<Frame>,
    /// The last build's fates, one per stored message (its receipt's entries).
    last_fates: Option<Arc<Vec<Fate>>>,
    /// Frame revisions given so far (`frame_revision`): a number is never given twice, whatever
    /// frame holds it (one made again after a truncate, another shape's, one restored).
    revisions: u64,
}

/// What a build sent, for the usage recorded after it.
#[derive(Clone, Debug)]
struct BuildMark {
    tokens: usize,
    /// The history's length at the build, and its last message's id.
    messages: usize,
    last_id: Option<String>,
    /// The context was the history whole and verbatim: nothing dropped, reduced or summarised.
    whole_history: bool,
    /// The `request_fingerprint` of the parts sent beside the messages (system prompt, tools,
    /// tool choice), when the build was given them: its count is then the whole request's, and
    /// usage paired with it calibrates. The build option that gives them sets this; builds that
    /// see only messages leave it `None`.
    request: Option<u64>,
    /// What the build's receipt predicted the request would bill (`recordUsage` compares).
    cost: Option<super::cost::CostEstimate>,
}

/// The last recorded usage, or why later counts cannot start from it.
#[derive(Clone, Debug)]
enum AnchorState {
    Holding(Anchor),
    Ended(AnchorEnd),
}

impl Default for AnchorState {
    fn default() -> Self {
        AnchorState::Ended(AnchorEnd::NoUsage)
    }
}

impl Compactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the context for the next call from `history` (see `compact::build`); `turns` are a
    /// session's recorded turns. The stored messages never change; a summary made by the
    /// extractive summariser during the build is kept.
    ///
    /// Between compaction events the context is the previous build's plus what was logged since
    /// (`frame`); an event compacts down to the low-water mark.
    pub fn build(
        &mut self,
        history: &mut ConversationHistory,
        options: &BuildOptions,
        turns: &[TurnNote],
        state: &[StateNote],
    ) -> Result<BuildOutcome> {
        options.validate()?;
        history.count_all();
        if history.rebases() != self.rebases {
            self.reduce = BuildCache::default();
            self.frame = Frame::default();
            self.parked.clear();
            self.rebases = history.rebases();
        }
        let items = items_of(history);
        self.frame.recount(&items);
        // Claude's count is an estimate: where the last bill still stands for the context (no
        // event since, the same model and request), the next request's size starts from it, in
        // the budget's own (billed) units.
        let asked = Limits::of(options);
        let billed_trigger = asked.trigger;
        let anchored = match options.format {
            crate::message::Format::Anthropic => {
                let parts = options.request.as_ref();
                let request = parts.map(request_fingerprint);
                let model = parts.and_then(|p| p.model.as_deref());
                self.anchored_total(history, model, request).ok().map(|count| count.tokens)
            }
            _ => None,
        };
        // Calibrated, a budget is in counted tokens: the billed budget over the top of the band.
        // Claude's before any calibration: over what its rule makes of this history's messages.
        let factor = self.calibration.latest();
        let rule = match (&factor, options.format) {
            (None, crate::message::Format::Anthropic) => claude_ratio(history),
            _ => None,
        };
        let calibrated;
        let options = match (&factor, &options.budget) {
            (None, Some(budget)) if rule.is_some() => {
                let ratio = rule.unwrap_or(1.0);
                calibrated =
                    in_counted_tokens(options, budget, |billed| ((f64::from(billed) / ratio).floor() as u32).max(1));
                &calibrated
            }
            (Some(factor), Some(budget)) => {
                calibrated = in_counted_tokens(options, budget, |billed| {
                    factor.counted_budget(billed as usize).clamp(1, u32::MAX as usize) as u32
                });
                &calibrated
            }
            _ => options,
        };
        // A budget too small for what must be sent says which budget: the one given, and what
        // the conversion made of it.
        let converted = match (options.budget.as_ref().map(super::BudgetOptions::max_tokens), asked.max) {
            (Some(counted), Some(given)) if counted != given => Some(match &factor {
                Some(factor) => format!(
                    "the budget given, {given} billed tokens, is {counted} counted tokens by the calibration \
                     recorded for {} (bills up to ×{:.2} the count)",
                    factor.model, factor.high
                ),
                None => format!(
                    "the budget given, {given} billed tokens, is {counted} counted tokens by Claude's rule for \
                     this history (×{:.2})",
                    rule.unwrap_or(1.0)
                ),
            }),
            _ => None,
        };
        let explain = |mut error: Error| {
            if let (Some(how), ErrorKind::InvalidArgument) = (&converted, error.kind) {
                error.message = format!("{}; {how}", error.message);
            }
            error
        };
        let encoding = history.encoding();
        // The request's other parts take their share of the budget first.
        let request_tokens = match &options.request {
            Some(parts) => request_tokens(encoding, parts, options.format, first_system(history).as_deref())?,
            None => 0,
        };
        let beside;
        let options = match (&options.budget, request_tokens) {
            (Some(budget), n) if n > 0 => {
                let max = budget.max_tokens();
                if n >= max {
                    return Err(explain(Error::invalid_argument(format!(
                        "the budget of {max} tokens ({}) is too small for the request's system prompt and tools alone ({n} tokens)",
                        budget.describe()
                    ))));
                }
                let less = |tokens: usize| u32::try_from(tokens.saturating_sub(n)).unwrap_or(u32::MAX).max(1);
                beside = BuildOptions {
                    budget: Some(super::BudgetOptions { max_tokens: Some(less(max)), ..budget.clone() }),
                    summary: options.summary.clone().map(|summary| super::SummaryOptions {
                        trigger_tokens: summary.trigger_tokens.map(|t| less(t as usize)),
                        target_tokens: summary.target_tokens.map(|t| less(t as usize)),
                        ..summary
                    }),
                    ..options.clone()
                };
                &beside
            }
            _ => options,
        };
        // What the trigger is checked against: the bill (anchored), Claude's rule on the messages
        // (billed units), or the count.
        let billed_trigger = billed_trigger.map(|trigger| trigger.saturating_sub(request_tokens));
        // Calibrated, the receipt's budget is in counted tokens (`receipt.calibration` says the bill).
        let billed_units = factor.is_none() && (anchored.is_some() || rule.is_some());
        let measure = match (anchored, rule) {
            (Some(billed), _) => Measure::Anchored {
                billed: billed + request_tokens,
                trigger: billed_trigger.map(|t| t + request_tokens),
            },
            (None, Some(_)) => Measure::Rule { history, trigger: billed_trigger },
            (None, None) => Measure::Counted,
        };
        let shape = frame::shape(options, encoding, history.pinned_positions());
        let mut limits = Limits::of(options);
        limits.given_max = asked.max;
        // The reductions' cache is for one set of reducer options (the pipeline would empty it
        // under a structure this build already holds).
        self.reduce.prepare(options.fingerprint(encoding));
        self.switch_frame(&shape);
        let check = match options.compact_now {
            true => Err(EventReason::Requested),
            false => self.frame.check(&items, &shape, self.summary.generation).and_then(|()| {
                if self.frame.outgrown(limits.given_max) {
                    Err(EventReason::Grown)
                } else {
                    Ok(())
                }
            }),
        };
        let mut outcome = match check {
            Ok(()) => match self.append(&items, encoding, options, &limits, &measure, turns, state).map_err(explain)? {
                Ok(outcome) => outcome,
                Err((reason, seen)) => self
                    .event(&items, encoding, options, &limits, turns, state, reason, seen, shape.clone())
                    .map_err(explain)?,
            },
            Err(reason) => self
                .event(&items, encoding, options, &limits, turns, state, reason, None, shape.clone())
                .map_err(explain)?,
        };
        if request_tokens > 0 {
            let context = &mut outcome.context;
            context.tokens.request = request_tokens;
            context.tokens.total += request_tokens;
            context.receipt.by_part = context.tokens;
            context.receipt.tokens_after = context.tokens.total;
            context.receipt.tokens_before += request_tokens;
            if let Some(budget) = context.receipt.budget.as_mut() {
                budget.max_tokens += request_tokens;
                budget.trigger_tokens += request_tokens;
                budget.low_water_tokens += request_tokens;
                budget.request_tokens = request_tokens;
                context.receipt.within_budget = context.tokens.total <= budget.max_tokens;
            }
        }
        if billed_units {
            // Claude's budget is in billed units: the receipt says the budget as given and the
            // context's estimated bill beside it, and "within budget" compares those.
            let context = &mut outcome.context;
            let billed = match context.receipt.budget.as_ref().and_then(|b| b.billed_tokens) {
                Some(billed) if anchored.is_some() => billed,
                Some(billed) => billed + request_tokens,
                None => {
                    context.messages.iter().map(|m| claude_billed(history, encoding, m)).sum::<usize>()
                        + crate::tokens::REPLY_PRIMING
                        + request_tokens
                }
            };
            let ratio = rule.unwrap_or(1.0);
            if let Some(budget) = context.receipt.budget.as_mut() {
                budget.max_tokens = asked.max.unwrap_or(budget.max_tokens);
                budget.trigger_tokens = asked.trigger.unwrap_or(budget.trigger_tokens);
                budget.low_water_tokens = ((budget.low_water_tokens.saturating_sub(request_tokens)) as f64 * ratio)
                    .round() as usize
                    + request_tokens;
                budget.billed_tokens = Some(billed);
                context.receipt.within_budget = billed <= budget.max_tokens;
            }
        }
        outcome.context.receipt.calibration = factor.map(|f| f.apply(outcome.context.tokens.total));
        outcome.context.marks = options.cache.clone().map(|options| marks(&outcome.context, options));
        let same_request =
            self.last_build.as_ref().map(|last| last.request == options.request.as_ref().map(request_fingerprint));
        let written = self.estimate_cost(&mut outcome.context, options, request_tokens, same_request == Some(true));
        self.written_before = written;
        let cost = outcome.context.receipt.cost.clone();
        if let Some(note) = parts_left_out(&outcome.context.messages, options.format) {
            outcome.context.receipt.notes.push(note);
        }
        let receipt = &outcome.context.receipt;
        let whole_history = receipt.fates.iter().all(|f| f.action == super::Action::Kept)
            && receipt.summary.is_none()
            && receipt.bridge.is_none()
            && receipt.memory.is_none()
            && receipt.state.is_none()
            && receipt.images.is_none()
            && receipt.repairs.is_empty()
            && !receipt.placeholder;
        let request = options.request.as_ref().map(request_fingerprint);
        self.last_build = Some(BuildMark {
            tokens: receipt.tokens_after,
            messages: history.len(),
            last_id: history.records().last().map(|r| r.id.clone()),
            whole_history,
            request,
            cost,
        });
        self.last_fates = Some(Arc::clone(&receipt.fates));
        Ok(outcome)
    }

    /// A build between events: the frame, then what was logged since. `Err` with the reason
    /// when it must be an event instead (and the context the model would have seen, for a
    /// summariser's request that rides the cache).
    #[allow(clippy::type_complexity, clippy::too_many_arguments)]
    fn append(
        &mut self,
        items: &[Item],
        encoding: Encoding,
        options: &BuildOptions,
        limits: &Limits,
        measure: &Measure,
        turns: &[TurnNote],
        state: &[StateNote],
    ) -> Result<std::result::Result<BuildOutcome, (EventReason, Option<Vec<ContextMessage>>)>> {
        let ctx = Ctx { items, encoding, options, turns, state };
        let structure = super::repair::structure_for(items, options.dedupe_system, &mut self.reduce.structure);
        let mut appended = match self.frame.appended(&ctx, &mut self.reduce, &structure) {
            Ok(appended) => appended?,
            Err(reason) => return Ok(Err((reason, None))),
        };
        // A state that changed since it was shown is shown again at the end (not while a unit
        // is open there: the next build shows it).
        let fixed = frame::system_tokens(items, &structure);
        let room = limits.max.map_or(usize::MAX, |max| max.saturating_sub(fixed) / 4);
        let mut state = None;
        if appended.closed == appended.messages.len() {
            if let Some((update, texts, used)) = self.frame.state_update(&ctx, &mut self.reduce, room) {
                if let Some(update) = update {
                    appended.tokens += update.tokens as usize;
                    appended.messages.push(update);
                    appended.closed += 1;
                }
                state = Some((texts, used));
            }
        }
        let mut messages: Vec<ContextMessage> = self.frame.messages.clone();
        messages.extend(appended.messages.iter().cloned());
        let total = self.frame.tokens + appended.tokens;
        let (over, billed) = match measure {
            Measure::Anchored { billed, trigger } => (trigger.is_some_and(|trigger| *billed > trigger), Some(*billed)),
            Measure::Rule { history, trigger } => {
                // The frame's part is counted once (it only grows between events).
                let frozen = self.frame.billed_frozen(|m| claude_billed(history, encoding, m));
                let billed = frozen
                    + appended.messages.iter().map(|m| claude_billed(history, encoding, m)).sum::<usize>()
                    + crate::tokens::REPLY_PRIMING;
                (trigger.is_some_and(|trigger| billed > trigger), Some(billed))
            }
            Measure::Counted => (limits.trigger.is_some_and(|trigger| total > trigger), None),
        };
        if over {
            return Ok(Err((EventReason::Budget, Some(messages))));
        }
        if let Some(window) = options.max_messages {
            let held = messages.iter().filter(|m| !m.sources.is_empty() && m.section != Section::System).count();
            if held > window {
                return Ok(Err((EventReason::Window, Some(messages))));
            }
        }
        let previous = std::mem::take(&mut self.frame.last_sent);
        let context =
            self.frame.context(items, &structure, &mut self.reduce, messages, &appended, limits, options.format)?;
        // A list that fails the provider's rules (a frame that ended where the next message
        // cannot follow) is rebuilt by an event, which always makes a valid one.
        if context.request(&mut self.forms).is_err() {
            self.frame.last_sent = previous;
            return Ok(Err((EventReason::Repair, None)));
        }
        let (prefix_messages, prefix_tokens) = frame::shared_prefix(&previous, &context.messages);
        let unchanged = prefix_messages == previous.len() && previous.len() == context.messages.len();
        let mut context = context;
        // The budget as it is now (a calibration or another budget since the event).
        if let Some(budget) = context.receipt.budget.as_mut() {
            budget.max_tokens = limits.max.unwrap_or(budget.max_tokens);
            budget.trigger_tokens = limits.trigger.unwrap_or(budget.trigger_tokens);
            budget.billed_tokens = billed;
        }
        context.receipt.cache = Some(CacheUse {
            event: false,
            reason: None,
            change: if unchanged { Change::Unchanged } else { Change::Appended },
            prefix_messages,
            prefix_tokens,
            first_changed: (!unchanged).then_some(prefix_messages),
            events: self.frame.events,
        });
        let mut revised = false;
        if let Some((texts, mut used)) = state {
            used.tokens = context.tokens.state;
            context.receipt.state = Some(used);
            if let Some(budget) = context.receipt.budget.as_mut() {
                budget.state_tokens = context.tokens.state;
            }
            revised |= self.frame.state_shown.as_ref() != Some(&texts);
            self.frame.state_shown = Some(texts);
        }
        revised |= self.frame.take(&appended, items);
        if revised {
            self.revise_frame();
        }
        self.frame.last_sent = context.messages.clone();
        // The event's request stands until its summary comes (not while one is being made).
        let summary_request = self.proposed.clone().filter(|_| self.summary.in_progress.is_none());
        Ok(Ok(BuildOutcome { context, summary_request, new_summary: None }))
    }

    /// A compaction event: the pipeline down to the low-water mark, frozen for the builds after.
    /// A first build that fits is sent whole and is no event.
    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        items: &[Item],
        encoding: Encoding,
        options: &BuildOptions,
        limits: &Limits,
        turns: &[TurnNote],
        state: &[StateNote],
        reason: EventReason,
        seen: Option<Vec<ContextMessage>>,
        shape: String,
    ) -> Result<BuildOutcome> {
        let previous = std::mem::take(&mut self.frame.last_sent);
        let fresh = matches!(reason, EventReason::First | EventReason::Options | EventReason::History);
        let structure = super::repair::structure_for(items, options.dedupe_system, &mut self.reduce.structure);
        let fixed = frame::system_tokens(items, &structure);
        // The pipeline fills at least 90% of what it aims at: aimed a little above the low-water
        // mark, an event leaves the context at the mark or above it.
        let low_water = limits.low_water(fixed);
        let aim =
            limits.trigger.zip(low_water).map(|(trigger, mark)| ((mark as f64 / 0.9).ceil() as usize).min(trigger));
        let low_water = limits.trigger.zip(low_water).map(|(trigger, mark)| mark.min(trigger / 10 * 9));
        let (mut outcome, event) = match (limits.trigger, &options.budget) {
            // Neither a budget nor a summary: nothing to compact to.
            (None, _) => (pipeline(items, encoding, options, &self.summary, &mut self.reduce, turns, state)?, false),
            // A summary's trigger and target without a budget: the pipeline compacts past the one
            // down to the other itself.
            (Some(_), None) => {
                let outcome = pipeline(items, encoding, options, &self.summary, &mut self.reduce, turns, state)?;
                let event = !(fresh && frame::reduced_nothing(&outcome, &self.summary));
                (outcome, event)
            }
            (Some(trigger), Some(_)) => {
                let mut whole = None;
                // Whole only if the history itself is within the trigger (with a summary in force
                // or sections of its own, the pipeline may still reduce it: an event then).
                let fits = items.iter().map(|item| item.tokens as usize).sum::<usize>() + crate::tokens::REPLY_PRIMING
                    <= trigger;
                if fresh && fits {
                    // Whole if it fits: what a first call sends is no compaction.
                    let at = limits.at(options, Some(trigger), None);
                    let outcome = pipeline(items, encoding, &at, &self.summary, &mut self.reduce, turns, state)?;
                    if frame::reduced_nothing(&outcome, &self.summary) {
                        whole = Some(outcome);
                    }
                }
                match whole {
                    Some(outcome) => (outcome, false),
                    None => {
                        // The count window keeps the same share of its messages as the budget
                        // of its tokens.
                        let share = match (low_water, trigger) {
                            (Some(mark), trigger) if trigger > 0 => mark as f64 / trigger as f64,
                            _ => 1.0,
                        };
                        let window = options.max_messages.map(|n| ((n as f64 * share).floor() as usize).max(1));
                        let mut at = limits.at(options, aim, window);
                        if let Some(budget) = at.budget.as_mut() {
                            // The lower the mark, the more of what an event drops the summary
                            // stands for: it may take up to half of the context the event leaves.
                            budget.summary_ratio = budget.summary_ratio.max(EVENT_SUMMARY_SHARE);
                            budget.recent_ratio = budget.recent_ratio.min(1.0 - budget.summary_ratio);
                        }
                        match pipeline(items, encoding, &at, &self.summary, &mut self.reduce, turns, state) {
                            Ok(outcome) => (outcome, true),
                            // A mark too low for the system prompt and the pinned requests: down
                            // to the trigger instead.
                            Err(error) if error.kind == ErrorKind::InvalidArgument => {
                                let at = limits.at(options, Some(trigger), window);
                                (pipeline(items, encoding, &at, &self.summary, &mut self.reduce, turns, state)?, true)
                            }
                            Err(error) => return Err(error),
                        }
                    }
                }
            }
        };
        if let Some(record) = &outcome.new_summary {
            let state = SummaryState {
                current: Some(record.clone()),
                generation: self.summary.generation + 1,
                in_progress: self.summary.in_progress.clone(),
            };
            self.replace_summary(state);
        }
        if let (Some(request), Some(seen)) = (outcome.summary_request.as_mut(), seen.as_ref()) {
            // What the model saw, and of what was logged since only what the summary must cover
            // (the newest messages stay in the context whole: the summariser need not read them).
            let covered = |m: &ContextMessage| {
                m.sources
                    .iter()
                    .all(|id| items.iter().position(|item| item.id == id).is_some_and(|i| i <= request.until_index))
            };
            let sent = self.frame.messages.len().min(seen.len());
            let mut shown: Vec<ContextMessage> = seen[..sent].to_vec();
            shown.extend(seen[sent..].iter().take_while(|m| covered(m)).cloned());
            let seen: Vec<&crate::message::Message> = shown.iter().map(|m| &*m.message).collect();
            super::summarise::ride_the_cache(request, &seen, options.format, options.cache.as_ref())?;
        }
        self.proposed = outcome.summary_request.clone();
        let receipt = &mut outcome.context.receipt;
        if let Some(budget) = receipt.budget.as_mut() {
            budget.max_tokens = limits.max.unwrap_or(budget.max_tokens);
            budget.trigger_tokens = limits.trigger.unwrap_or(budget.trigger_tokens);
            budget.low_water_tokens = low_water.unwrap_or(budget.low_water_tokens);
        }
        receipt.within_budget = limits.max.is_none_or(|max| outcome.context.tokens.total <= max);
        let (prefix_messages, prefix_tokens) = frame::shared_prefix(&previous, &outcome.context.messages);
        let events = self.frame.events + u64::from(event);
        receipt.cache = Some(CacheUse {
            event,
            reason: event.then_some(reason),
            change: if previous.is_empty() { Change::New } else { Change::Event },
            prefix_messages,
            prefix_tokens,
            first_changed: Some(prefix_messages),
            events,
        });
        // An empty history's context is a placeholder alone: nothing a later build may extend.
        self.frame = match items.is_empty() {
            true => Frame::default(),
            false => Frame {
                given_max: limits.given_max,
                ..Frame::freeze(&outcome.context, items, &structure, shape, self.summary.generation, events)
            },
        };
        self.revise_frame();
        if event {
            // The next request is not the billed one plus appends.
            self.end_anchor();
        }
        Ok(outcome)
    }

    /// The context's request in pieces, checked against the provider's rules: the forms of the
    /// messages the last context had are reused, the others emitted (and kept for the next).
    pub fn request(&mut self, context: &CompactedContext) -> Result<Assembled> {
        context.request(&mut self.forms)
    }

    /// `request` as one value: OpenAI's message array, or Anthropic's `{ system?, messages }`.
    pub fn request_value(&mut self, context: &CompactedContext) -> Result<Value> {
        context.request_value(&mut self.forms)
    }

    /// The request forms of the last context (`Piece::Own` pieces point into them).
    pub fn forms(&self) -> &EmitCache {
        &self.forms
    }

    /// The last build's receipt message by message; empty before the first build.
    pub fn last_receipt_entries(&self, history: &ConversationHistory) -> Vec<ReceiptEntry> {
        self.last_fates
            .as_ref()
            .filter(|_| self.last_build.is_some())
            .map(|fates| super::receipt::entries(fates, history.records().iter().map(|r| r.id.as_str())))
            .unwrap_or_default()
    }

    pub fn summary_state(&self) -> &SummaryState {
        &self.summary
    }

    /// Restores a summary state (from storage), checked as the live calls check what they
    /// store (`summary_state::check_record`, `check_pending`), and against `history`: refused if it
    /// names messages the history lacks. On error nothing changes.
    pub fn set_summary_state(&mut self, state: SummaryState, history: &ConversationHistory) -> Result<()> {
        self.restore_summary_state(state, history, false)
    }

    /// `set_summary_state`, for a state whose summary's tokens were counted by this library for
    /// the history's encoding (`counted`: a stored record's counting tag says so): they are not
    /// counted again (`summary_state::check_record`).
    pub fn restore_summary_state(
        &mut self,
        state: SummaryState,
        history: &ConversationHistory,
        counted: bool,
    ) -> Result<()> {
        if let Some(current) = &state.current {
            super::summary_state::check_record(current, history.encoding(), counted)
                .map_err(|e| Error::invalid_argument(format!("the summary in force: {}", e.message)))?;
            if state.generation == 0 {
                return Err(Error::invalid_argument("a summary is in force, but the state says none was ever made"));
            }
        }
        if let Some(pending) = &state.in_progress {
            super::summary_state::check_pending(pending)?;
        }
        for (what, until, index) in state
            .current
            .iter()
            .map(|c| ("summary", &c.summarised_until, c.until_index))
            .chain(state.in_progress.iter().map(|p| ("compaction in progress", &p.until, p.until_index)))
        {
            if history.records().get(index).map(|r| &r.id) != Some(until) {
                return Err(Error::invalid_argument(format!(
                    "the {what} covers up to message {until:?} at position {index}, which this history does not have"
                )));
            }
        }
        self.replace_summary(state);
        self.proposed = None;
        Ok(())
    }

    /// A number that changes whenever what storage keeps of the frame (`frame_state`) changed:
    /// a save writes the frame again only then.
    pub fn frame_revision(&self) -> (u64, &str) {
        (self.frame.revision, &self.frame.shape)
    }

    /// Gives the frame the next revision: what storage keeps of it changed.
    fn revise_frame(&mut self) {
        self.revisions += 1;
        self.frame.revise(self.revisions);
    }

    /// Makes the frame of `shape` the current one (a new one if there is none), parking the other.
    fn switch_frame(&mut self, shape: &str) {
        if self.frame.shape == shape || self.frame.shape.is_empty() {
            return;
        }
        let found = self.parked.iter().position(|frame| frame.shape == shape);
        let next = found.map_or_else(Frame::default, |at| self.parked.remove(at));
        let current = std::mem::replace(&mut self.frame, next);
        self.parked.insert(0, current);
        self.parked.truncate(PARKED_FRAMES);
    }

    /// The frame the next build appends to, as storage keeps it (`None` before the first build).
    /// Storage writes it when `frame_revision` changed: a frame restored from an earlier state of
    /// the same revision takes the messages taken since (stored messages whole) from the history.
    pub fn frame_state(&self, history: &ConversationHistory) -> Option<FrameState> {
        // A history truncated since is another history: the next build starts afresh.
        if history.rebases() != self.rebases {
            return None;
        }
        let items = items_of(history);
        let mut state = self.frame.state(&items)?;
        // Only while the summary it asks for is still to come (`complete_summary` leaves the
        // frame's revision as it was).
        state.summary_request =
            self.proposed.clone().filter(|_| self.summary.generation == self.frame.summary_generation);
        Some(state)
    }

    /// Restores a stored frame, checked against `history` (refused if it names messages the
    /// history lacks there); on error nothing changes.
    pub fn set_frame_state(&mut self, mut state: FrameState, history: &ConversationHistory) -> Result<()> {
        let items = items_of(history);
        let request = state.summary_request.take();
        let frame = Frame::restore(state, &items)?;
        if history.rebases() != self.rebases {
            self.reduce = BuildCache::default();
            self.rebases = history.rebases();
        }
        // The frame's request stands if no summary came since and the history still holds what
        // it covers; otherwise the next build proposes afresh.
        let standing =
            request.filter(|_| frame.summary_generation == self.summary.generation).and_then(|mut request| {
                request.until_index = items.iter().position(|item| item.id == request.until)?;
                Some(request)
            });
        drop(std::mem::replace(&mut self.proposed, standing));
        drop(std::mem::replace(&mut self.frame, frame));
        self.revise_frame();
        Ok(())
    }

    /// Puts `state` in force with one move (the old state is dropped after), so that a wasm
    /// trap leaves either state whole.
    fn replace_summary(&mut self, state: SummaryState) {
        drop(std::mem::replace(&mut self.summary, state));
    }

    /// After a wasm trap interrupted a call on this compactor (see `Session::recover_after_trap`):
    /// its caches may have been caught mid-update, so they are leaked (never dropped: their
    /// memory may be inconsistent) and start empty; the summary state and the calibration are
    /// only ever replaced whole.
    pub fn recover_after_trap(&mut self) {
        std::mem::forget(std::mem::take(&mut self.reduce));
        std::mem::forget(std::mem::take(&mut self.forms));
        std::mem::forget(self.proposed.take());
        std::mem::forget(std::mem::take(&mut self.frame));
        std::mem::forget(std::mem::take(&mut self.parked));
        std::mem::forget(self.last_fates.take());
        self.last_build = None;
        self.anchor = AnchorState::default();
    }

    /// Marks the compaction of `request_id` (proposed by the last build) as under way. A second
    /// one while the first is under way is a `Conflict` error.
    pub fn begin_summary(&mut self, request_id: &str) -> Result<()> {
        if let Some(pending) = &self.summary.in_progress {
            return Err(Error::conflict(format!(
                "compaction {} is already in progress; complete or cancel it first",
                pending.request_id
            )));
        }
        match self.proposed.as_ref().map(SummaryRequest::pending) {
            Some(pending) if pending.request_id == request_id => {
                let state = SummaryState { in_progress: Some(pending.clone()), ..self.summary.clone() };
                self.replace_summary(state);
                Ok(())
            }
            _ => Err(Error::not_found(format!("no summary request {request_id:?}: build again for a current one"))),
        }
    }

    /// Accepts the summary for `request_id` once it passes the request's checks (not empty,
    /// within its budget counted with `encoding`, the required keys). On any error nothing changes.
    pub fn complete_summary(
        &mut self,
        request_id: &str,
        text: &str,
        created_at: Option<String>,
        encoding: Encoding,
    ) -> Result<SummaryRecord> {
        let proposed = self.proposed.as_ref().map(SummaryRequest::pending);
        let pending = match (&self.summary.in_progress, &proposed) {
            (Some(pending), _) if pending.request_id == request_id => pending.clone(),
            (Some(pending), _) => {
                return Err(Error::conflict(format!(
                    "compaction {} is in progress, not {request_id}",
                    pending.request_id
                )))
            }
            (None, Some(pending)) if pending.request_id == request_id => pending.clone(),
            _ => return Err(Error::not_found(format!("no summary request {request_id:?}"))),
        };
        let tokens =
            super::summary_state::validate_summary(text, encoding, pending.max_tokens, &pending.required_keys)?;
        if let Some(created_at) = &created_at {
            super::summary_state::check_created_at(created_at, "createdAt")?;
        }
        let created_at = created_at.unwrap_or_else(|| format!("seq:{}", self.summary.generation + 1));
        let record =
            super::summary_state::record(&pending, text.to_string(), tokens, created_at, SummarySource::External);
        let state =
            SummaryState { current: Some(record.clone()), generation: self.summary.generation + 1, in_progress: None };
        self.replace_summary(state);
        self.proposed = None;
        Ok(record)
    }

    /// Abandons the compaction under way (e.g. the summariser failed).
    pub fn cancel_summary(&mut self, request_id: &str) -> Result<()> {
        match &self.summary.in_progress {
            Some(pending) if pending.request_id == request_id => {
                let state = SummaryState { in_progress: None, ..self.summary.clone() };
                self.replace_summary(state);
                Ok(())
            }
            _ => Err(Error::not_found(format!("no compaction {request_id:?} in progress"))),
        }
    }

    /// Records what the provider reported for a request (a usage object, or the whole response
    /// with its `model`), paired with what was counted for it: `counted`, the caller's count of
    /// the whole request (system prompt and tools included), else the last build's context, else
    /// the whole history.
    ///
    /// The bill anchors later counts (`anchored_total`): the request it paid for is taken to be
    /// the last build's context (or, with no build, the history, less a last assistant message:
    /// the response, appended before its usage). The ratio bill/count is learnt only when the
    /// count covered the whole request; a count of the messages alone would learn the system
    /// prompt and tools as a factor on every later count, so it is left out, with a note.
    pub fn record_usage(
        &mut self,
        history: &mut ConversationHistory,
        usage: &Value,
        model: Option<&str>,
        counted: Option<usize>,
    ) -> Result<UsageReport> {
        let reported = ReportedUsage::read(usage)?;
        let model = model.or(reported.model.as_deref()).ok_or_else(|| {
            Error::invalid_argument("usage must name its model: pass `model`, or the whole response (it has `model`)")
        })?;
        if model.is_empty() {
            return Err(Error::invalid_argument("usage must name its model (pass `model`, or the whole response)"));
        }
        let (counted, whole_request) = match (counted, &self.last_build) {
            (Some(counted), _) => (counted, true),
            (None, Some(build)) => (build.tokens, build.request.is_some()),
            (None, None) => (history.token_count().total, false),
        };
        let mut report = UsageReport::new(&reported, model, counted, whole_request);
        let observed = Observation { counted: counted as u64, reported: reported.prompt };
        if let Some(unseen) = observed.unseen_tokens().filter(|_| whole_request) {
            report.notes.push(format!(
                "not calibrated: the bill ({} tokens) is {:.1}× this request's count ({counted}), more than \
                 any counting error: {unseen} tokens were sent that the count did not see (a response_format \
                 schema, tools or a system prompt not given to build's `request`); budgets do not leave room for them",
                reported.prompt,
                observed.ratio()
            ));
            report.calibration = self.calibration.factor(model);
        } else if whole_request {
            // Recorded into a copy put in place whole (a few numbers per model): a wasm trap
            // leaves the calibration as it was or as it is now.
            let mut calibration = self.calibration.clone();
            let factor = calibration.record(model, counted, reported.prompt)?;
            drop(std::mem::replace(&mut self.calibration, calibration));
            report.calibrated = true;
            report.calibration = Some(factor);
        } else {
            report.notes.push(format!(
                "not calibrated: the bill ({} tokens) is paired with a count of the messages alone ({counted}), \
                 without the system prompt and tools sent beside them; pass {{ counted }} with a count of the \
                 whole request (countRequest) to calibrate",
                reported.prompt
            ));
            report.calibration = self.calibration.factor(model);
        }
        let (covered, last_id, whole_history, request) = match &self.last_build {
            Some(build) => (build.messages, build.last_id.clone(), build.whole_history, build.request),
            None => {
                let response = history.records().last().is_some_and(|r| r.message.role == Role::Assistant);
                let covered = history.len() - usize::from(response);
                let last_id = covered.checked_sub(1).and_then(|i| history.records().get(i)).map(|r| r.id.clone());
                (covered, last_id, true, None)
            }
        };
        let output = anchoring_output(&reported);
        if reported.reasoning > 0 && output.is_none() {
            report.notes.push(
                "the response's output tokens include reasoning the next prompt does not hold: \
                 anchored counts estimate the response instead"
                    .into(),
            );
        }
        let anchor = Anchor {
            model: model.to_string(),
            prompt: reported.prompt,
            output,
            covered,
            last_id,
            rebases: history.rebases(),
            whole_history,
            request,
        };
        self.anchor = AnchorState::Holding(anchor);
        report.anchored = true;
        if let Some(predicted) = self.last_build.as_ref().and_then(|build| build.cost.clone()) {
            let off = reported.cache_read.abs_diff(predicted.cached_tokens as u64);
            // Counts are estimates for Claude: only a gap past a tenth of the prompt is news.
            if off * 10 > reported.prompt.max(1) {
                report.notes.push(format!(
                    "the provider read {} tokens from its cache where the receipt predicted {}: {}",
                    reported.cache_read,
                    predicted.cached_tokens,
                    if reported.cache_read < predicted.cached_tokens as u64 {
                        "the cache entry may have expired, been evicted, or been written under another key (promptCacheKey)"
                    } else {
                        "the provider cached more than the request's breakpoints promised"
                    }
                ));
            }
            report.predicted = Some(predicted);
        }
        Ok(report)
    }

    /// The next context's billed size, anchored to the last recorded usage: the billed prompt,
    /// the response's output tokens (once the response is in the history: the first assistant
    /// message appended after the billed request), and the estimate of the other messages
    /// appended since. `model` and `request` (a `request_fingerprint` of the system prompt, tools
    /// and tool choice) describe the next request where the caller knows them: another model or
    /// other tools end the anchor. It holds between compaction events: the compaction layer calls
    /// `end_anchor` at an event. Otherwise it says why not.
    pub fn anchored_total(
        &self,
        history: &ConversationHistory,
        model: Option<&str>,
        request: Option<u64>,
    ) -> std::result::Result<AnchoredCount, AnchorEnd> {
        let anchor = match &self.anchor {
            AnchorState::Holding(anchor) => anchor,
            AnchorState::Ended(why) => return Err(why.clone()),
        };
        let records = history.records();
        let same_history = history.rebases() == anchor.rebases
            && records.len() >= anchor.covered
            && anchor.covered.checked_sub(1).and_then(|i| records.get(i)).map(|r| &r.id) == anchor.last_id.as_ref();
        if !same_history {
            return Err(AnchorEnd::HistoryRewritten);
        }
        if let Some(next) = model.filter(|next| *next != anchor.model) {
            return Err(AnchorEnd::OtherModel { anchored: anchor.model.clone(), next: next.to_string() });
        }
        if let (Some(anchored), Some(next)) = (anchor.request, request) {
            if anchored != next {
                return Err(AnchorEnd::OtherRequest);
            }
        }
        let appended = &records[anchor.covered..];
        let response = appended.iter().position(|r| r.message.role == Role::Assistant);
        let output = anchor.output.filter(|_| response.is_some());
        let encoding = history.encoding();
        let estimate: usize = appended
            .iter()
            .enumerate()
            .filter(|(i, _)| output.is_none() || Some(*i) != response)
            .map(|(_, r)| {
                let counted = r.tokens().unwrap_or_else(|| crate::tokens::count_message(encoding, &r.message));
                match r.message.source {
                    Format::Anthropic => claude::billed(encoding, &r.message, &counted) as usize,
                    _ => counted.total as usize,
                }
            })
            .sum();
        let output = output.map(|n| usize::try_from(n).unwrap_or(usize::MAX));
        let prompt = usize::try_from(anchor.prompt).unwrap_or(usize::MAX);
        Ok(AnchoredCount {
            tokens: prompt.saturating_add(output.unwrap_or(0)).saturating_add(estimate),
            model: anchor.model.clone(),
            prompt,
            output,
            appended: estimate,
            appended_messages: appended.len(),
        })
    }

    /// The history's own count anchored to the bill: `anchored_total` when the billed request
    /// held the history whole and verbatim (no compaction), with the next request's model unknown.
    pub fn anchored_history_total(
        &self,
        history: &ConversationHistory,
    ) -> std::result::Result<AnchoredCount, AnchorEnd> {
        match &self.anchor {
            AnchorState::Holding(anchor) if !anchor.whole_history => Err(AnchorEnd::NotWholeHistory),
            _ => self.anchored_total(history, None, None),
        }
    }

    /// Ends the anchor: a compaction event rebuilt the context, so the next request is not the
    /// billed one plus appends. Later counts are estimates until the next usage is recorded.
    pub fn end_anchor(&mut self) {
        if matches!(self.anchor, AnchorState::Holding(_)) {
            self.anchor = AnchorState::Ended(AnchorEnd::Compacted);
        }
    }

    /// `history`'s count (`ConversationHistory::token_count`), anchored to the bill when the last
    /// recorded usage still stands for the history (`anchored_history_total`): `total` is then
    /// the anchored figure, and `messages` the estimate of each message as before.
    pub fn token_count(&self, history: &mut ConversationHistory) -> ChatCount {
        let mut count = history.token_count();
        if let Ok(anchored) = self.anchored_history_total(history) {
            count.total = anchored.tokens;
            count.basis = CountBasis::Anchored;
            count.anchored = Some(anchored);
        }
        count
    }

    /// The calibration budgets use: that of the model usage was last recorded for.
    pub fn calibration(&self) -> Option<Factor> {
        self.calibration.latest()
    }

    /// Every model's calibration (what storage keeps).
    pub fn calibration_state(&self) -> &Calibration {
        &self.calibration
    }

    /// Restores a calibration read back from storage.
    pub fn set_calibration(&mut self, calibration: Calibration) {
        self.calibration = calibration;
    }

    /// `history`'s token report, with what the provider will likely bill once usage was recorded:
    /// anchored to the bill while the last usage stands for the history (`total` is then the
    /// anchored figure, `counted` the package's own count), else calibrated if a calibration was
    /// learnt.
    pub fn token_report(&self, history: &mut ConversationHistory) -> TokenReport {
        let mut report = history.token_report();
        report.calibration = self.calibration.latest().map(|f| f.apply(report.total));
        match self.anchored_history_total(history) {
            Ok(anchored) => {
                report.total = anchored.tokens;
                report.basis = CountBasis::Anchored;
                report.anchored = Some(anchored);
            }
            Err(AnchorEnd::NoUsage) => {}
            Err(why) => report.unanchored = Some(why.describe()),
        }
        report
    }

    /// Reductions computed (not served from the cache) so far.
    pub fn reductions_computed(&self) -> u64 {
        self.reduce.reductions_computed()
    }

    /// Unit plans made so far: a build plans the units its context may hold, not the history's.
    pub fn units_planned(&self) -> u64 {
        self.reduce.units_planned()
    }

    /// Stored messages' fates made (not kept from the build before) so far: a warm build makes
    /// those of the messages near the end, not the history's.
    pub fn fates_made(&self) -> u64 {
        self.reduce.fates_made()
    }

    /// Receipt runs made (not kept from the build before) so far.
    pub fn runs_made(&self) -> u64 {
        self.reduce.runs_made()
    }

    /// Request forms emitted (not served from the cache) so far.
    pub fn forms_emitted(&self) -> u64 {
        self.forms.emitted
    }
}

/// A note naming the content parts of `messages` that `format` has no form for (another
/// provider's, or unknown to this library): the emitters leave them out, which the runs (whole
/// messages) would not say.
fn parts_left_out(messages: &[ContextMessage], format: Format) -> Option<String> {
    use crate::message::Part;
    let mut kinds: Vec<&str> = Vec::new();
    let mut ids: Vec<&str> = Vec::new();
    for m in messages.iter().filter(|m| m.message.source != format) {
        for part in &m.message.content.parts {
            let Part::Other(value) = part else { continue };
            let kind = value.get("type").and_then(serde_json::Value::as_str).unwrap_or("(untyped)");
            // A refusal is sent as its text.
            if kind == "refusal"
                && value.get("refusal").and_then(serde_json::Value::as_str).is_some_and(|t| !t.is_empty())
            {
                continue;
            }
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
            if let Some(id) = m.sources.first().filter(|id| !ids.contains(&id.as_str())) {
                ids.push(id);
            }
        }
    }
    (!kinds.is_empty()).then(|| {
        format!(
            "content parts of type {} in {} have no {} form and are not sent",
            kinds.join(", "),
            ids.join(", "),
            format.as_str()
        )
    })
}

/// The text of the history's first system message: OpenAI renders tool definitions into it,
/// which costs fewer tokens than the system message they make when there is none.
fn first_system(history: &ConversationHistory) -> Option<String> {
    history.records().iter().find(|r| r.message.role == Role::System).map(|r| r.message.content.joined_text())
}

/// The tokens of the request's parts sent beside the messages, by `countRequest`'s rules for
/// `format` (AI SDK lists as OpenAI Chat). `first_system` is the context's first system message,
/// counted with the messages: only what the parts add beside it is theirs.
fn request_tokens(
    encoding: Encoding,
    parts: &super::options::RequestParts,
    format: crate::message::Format,
    first_system: Option<&str>,
) -> Result<usize> {
    use crate::message::Format;
    use serde_json::{json, Map, Value};
    let format = if format == Format::AiSdk { Format::OpenAi } else { format };
    let mut request = Map::new();
    // Where the parts carry no system prompt, the context's own is what tools join.
    let system_message = match (format, &parts.system, first_system) {
        (Format::OpenAi | Format::Responses, None, Some(text)) => vec![json!({"role": "system", "content": text})],
        _ => Vec::new(),
    };
    let beside_the_parts = system_message.len();
    match format {
        Format::Responses => {
            request.insert("input".into(), Value::Array(system_message));
            if let Some(system) = &parts.system {
                request.insert("instructions".into(), system.clone());
            }
        }
        _ => {
            request.insert("messages".into(), Value::Array(system_message));
            if let Some(system) = &parts.system {
                request.insert("system".into(), system.clone());
            }
        }
    }
    if let Some(tools) = &parts.tools {
        request.insert("tools".into(), Value::Array(tools.clone()));
    }
    if let Some(choice) = &parts.tool_choice {
        request.insert("tool_choice".into(), choice.clone());
    }
    let options = crate::tokens::RequestOptions { format, model: parts.model.clone(), ..Default::default() };
    let count = crate::tokens::count_request(encoding, Value::Object(request), &options)
        .map_err(|e| Error::invalid_argument(format!("build option `request`: {}", e.message)))?;
    let context_system: usize = count.per_message.iter().take(beside_the_parts).map(|&n| n as usize).sum();
    Ok(count.total.saturating_sub(count.reply_priming + context_system))
}

/// How much more than its count Claude bills this history's messages, by the Claude rule
/// (`tokens::claude`), with a margin for a context whose share of tool calls is higher than the
/// history's; `None` when the rule bills no more than the count.
fn claude_ratio(history: &ConversationHistory) -> Option<f64> {
    let encoding = history.encoding();
    let (billed, counted) =
        history.records().iter().fold((0u64, 0u64), |(billed, counted), record| match record.tokens() {
            Some(tokens) => (
                billed + u64::from(crate::tokens::claude::billed(encoding, &record.message, &tokens)),
                counted + u64::from(tokens.total),
            ),
            None => (billed, counted),
        });
    let ratio = billed as f64 / counted.max(1) as f64 * CLAUDE_MARGIN;
    (ratio > 1.0).then_some(ratio)
}

/// The margin on Claude's ratio: a context holds the history's later messages, whose mix of text
/// and tool blocks differs from the whole's.
const CLAUDE_MARGIN: f64 = 1.03;

/// What a build checks the trigger against.
enum Measure<'h> {
    /// The context's count.
    Counted,
    /// The last bill, the response and the estimate of what was appended since (billed units).
    Anchored { billed: usize, trigger: Option<usize> },
    /// Claude's rule on each message the context sends (billed units).
    Rule { history: &'h ConversationHistory, trigger: Option<usize> },
}

/// The billed size of `message` by Claude's rule: a stored message sent whole from its stored
/// count, another form counted now.
fn claude_billed(history: &ConversationHistory, encoding: Encoding, message: &ContextMessage) -> usize {
    let records = history.records();
    let whole = message
        .sources
        .first()
        .and_then(|id| history.position(id))
        .and_then(|i| records.get(i))
        .filter(|record| Arc::ptr_eq(&record.message, &message.message))
        .and_then(|record| record.tokens());
    let counted = whole.unwrap_or_else(|| crate::tokens::count_message(encoding, &message.message));
    crate::tokens::claude::billed(encoding, &message.message, &counted) as usize
}

/// Frames kept for other shapes of build besides the current one.
const PARKED_FRAMES: usize = 3;

/// The share of what an event leaves beside the system prompt that the summary section may take.
const EVENT_SUMMARY_SHARE: f64 = 0.5;

/// What identifies the request's parts sent beside the messages, for the anchor to the bill.
fn request_fingerprint(parts: &super::options::RequestParts) -> u64 {
    let tools = parts.tools.as_ref().map(|tools| serde_json::Value::Array(tools.clone()));
    crate::tokens::anchor::request_fingerprint(parts.system.as_ref(), tools.as_ref(), parts.tool_choice.as_ref())
}

/// The history's messages as the pipeline reads them.
fn items_of(history: &ConversationHistory) -> Vec<Item<'_>> {
    let mut items: Vec<Item> = history
        .records()
        .iter()
        .map(|r| Item { id: &r.id, message: &r.message, tokens: r.tokens().map_or(0, |t| t.total), pinned: false })
        .collect();
    for &position in history.pinned_positions() {
        if let Some(item) = items.get_mut(position) {
            item.pinned = true;
        }
    }
    items
}

/// Where `context`'s cache hints go: after the part that survives events, and where the previous
/// build's context ended when this one extends it.
impl Compactor {
    /// `receipt.cost` from what this context shares with the last one; returns where this
    /// request's breakpoints end, for the next build's.
    fn estimate_cost(
        &self,
        context: &mut CompactedContext,
        options: &BuildOptions,
        request_tokens: usize,
        same_request: bool,
    ) -> Vec<usize> {
        let model = options.request.as_ref().and_then(|parts| parts.model.as_deref());
        let pricing = super::cost::Pricing::resolve(&options.pricing, options.format, model);
        let offsets: Vec<usize> = context
            .messages
            .iter()
            .scan(request_tokens, |sum, m| {
                *sum += m.tokens as usize;
                Some(*sum)
            })
            .collect();
        let mut ends = Vec::new();
        if let Some(marks) = &context.marks {
            let system_end = context.messages.iter().rposition(|m| m.section == Section::System);
            ends.push(system_end.map_or(request_tokens, |i| offsets[i]));
            ends.extend([marks.stable_end, marks.previous_end].into_iter().flatten().filter_map(|i| offsets.get(i)));
            ends.extend(offsets.last());
            ends.retain(|&end| end > 0);
        }
        let receipt = &context.receipt;
        let prefix = receipt.cache.as_ref().map_or(0, |cache| cache.prefix_tokens);
        let counted = context.tokens.total;
        // Claude's budget is in billed units: the cost is too.
        let billed = receipt.budget.as_ref().and_then(|budget| budget.billed_tokens).unwrap_or(counted);
        let scale = |tokens: usize| (tokens as f64 * billed as f64 / counted.max(1) as f64).round() as usize;
        let sent = super::cost::Sent {
            total: billed,
            shared: if same_request { scale(request_tokens + prefix).min(billed) } else { 0 },
            written_before: self.written_before.iter().map(|&end| scale(end)).collect(),
            hinted: context.marks.is_some(),
            ttl: options.cache.as_ref().and_then(|cache| cache.ttl).unwrap_or_default(),
        };
        context.receipt.cost = Some(super::cost::estimate(&pricing, &sent));
        ends
    }
}

/// `options` with the budget's window and maximum (billed tokens) restated as `counted` makes them.
fn in_counted_tokens(
    options: &BuildOptions,
    budget: &super::BudgetOptions,
    counted: impl Fn(u32) -> u32,
) -> BuildOptions {
    BuildOptions {
        budget: Some(super::BudgetOptions {
            context_window: counted(budget.context_window),
            max_tokens: budget.max_tokens.map(&counted),
            ..budget.clone()
        }),
        ..options.clone()
    }
}

fn marks(context: &CompactedContext, options: super::request::hints::CacheOptions) -> super::CacheMarks {
    let first_recent =
        context.messages.iter().position(|m| m.section == Section::Recent).unwrap_or(context.messages.len());
    let stable_end = context.messages[..first_recent]
        .iter()
        .rposition(|m| matches!(m.section, Section::Pinned | Section::Summary | Section::State));
    let previous_end = context
        .receipt
        .cache
        .as_ref()
        .filter(|cache| !cache.event)
        .and_then(|cache| cache.first_changed)
        .and_then(|first| first.checked_sub(1));
    super::CacheMarks { options, stable_end, previous_end }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_empty_historys_placeholder_is_not_extended() {
        let mut history = ConversationHistory::new(Encoding::O200kBase);
        let mut compactor = Compactor::new();
        let options = BuildOptions { format: crate::message::Format::Anthropic, ..BuildOptions::default() };
        let empty = compactor.build(&mut history, &options, &[], &[]).unwrap();
        assert!(empty.context.receipt.placeholder);
        history
            .append_value(json!({"role": "system", "content": "Be brief."}), crate::message::Format::OpenAi)
            .unwrap();
        history.append_value(json!({"role": "user", "content": "hi"}), crate::message::Format::OpenAi).unwrap();
        let next = compactor.build(&mut history, &options, &[], &[]).unwrap();
        assert!(!next.context.receipt.placeholder, "{:?}", next.context.messages);
        assert_eq!(next.context.messages.len(), 2);
    }

    #[test]
    fn other_tools_or_system_end_the_anchor() {
        let mut history = ConversationHistory::new(Encoding::O200kBase);
        history.append_value(json!({"role": "user", "content": "hi"}), crate::message::Format::Anthropic).unwrap();
        let mut compactor = Compactor::new();
        let tools = json!([{"name": "Read", "input_schema": {"type": "object"}}]);
        let sent = crate::tokens::anchor::request_fingerprint(Some(&json!("Be brief.")), Some(&tools), None);
        // A build given the request's system prompt and tools (the `request` build option).
        compactor.last_build = Some(BuildMark {
            tokens: 40,
            messages: 1,
            last_id: Some(history.ids()[0].clone()),
            whole_history: true,
            request: Some(sent),
            cost: None,
        });
        let report =
            compactor.record_usage(&mut history, &json!({"input_tokens": 60}), Some("claude-opus-4-6"), None).unwrap();
        assert!(report.counted_whole_request && report.calibrated && report.anchored, "{report:?}");
        assert_eq!(report.calibration.map(|f| f.factor), Some(1.5));
        assert_eq!(compactor.anchored_total(&history, None, Some(sent)).map(|a| a.tokens), Ok(60));
        let other = crate::tokens::anchor::request_fingerprint(Some(&json!("Be brief.")), Some(&json!([])), None);
        assert_eq!(compactor.anchored_total(&history, None, Some(other)), Err(AnchorEnd::OtherRequest));
        assert_eq!(compactor.anchored_total(&history, None, None).map(|a| a.tokens), Ok(60), "unknown: not checked");
    }
}
