//! The compactor: what lives beside a history between builds. The summary state and its
//! lifecycle (a request proposed by a build, begun, completed or cancelled), the reductions of
//! earlier builds, the request forms of the last context (so that a warm build emits only the
//! messages that changed, for a native caller as for JS), and the last receipt.

use serde_json::Value;

use std::sync::Arc;

use super::frame::{self, Change, EventReason, Frame, FrameState, Limits};
use super::plan::Ctx;
use super::receipt::{CacheUse, Fate, Section};
use super::{
    pipeline, Assembled, BuildOptions, BuildOutcome, CompactedContext, ContextMessage, EmitCache, Item, PendingSummary,
    ReceiptEntry, ReduceCache, StateNote, SummaryRecord, SummarySource, SummaryState, TurnNote,
};
use crate::error::{Error, ErrorKind, Result};
use crate::history::{ConversationHistory, TokenReport};
use crate::tokens::calibration::{Calibration, Factor, ReportedUsage};
use crate::tokens::Encoding;

#[derive(Clone, Debug, Default)]
pub struct Compactor {
    summary: SummaryState,
    reduce: ReduceCache,
    forms: EmitCache,
    /// The last summary request a build proposed (what `begin_summary` can start).
    proposed: Option<PendingSummary>,
    /// The last build's tokens (its fates, the receipt's entries, are kept with the reductions:
    /// a second reference would have the next build copy them).
    last_build: Option<usize>,
    /// Reported usage against our counts, per model (not exported: it is learnt again).
    calibration: Calibration,
    /// The history's `rebases` when `reduce` was filled: the cache is by message id, and a
    /// truncated history gives the dropped messages' ids to new ones.
    rebases: u64,
    /// The context as the last build made it, which the next build appends to between events.
    frame: Frame,
    /// The last build's fates, one per stored message (its receipt's entries).
    last_fates: Option<Arc<Vec<Fate>>>,
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
            self.reduce = ReduceCache::default();
            self.frame = Frame::default();
            self.rebases = history.rebases();
        }
        let items = items_of(history);
        self.frame.recount(&items);
        // Calibrated, a budget is in counted tokens: the billed budget over the top of the band.
        let factor = self.calibration.latest();
        let calibrated;
        let options = match (&factor, &options.budget) {
            (Some(factor), Some(budget)) => {
                let counted = |billed: u32| factor.counted_budget(billed as usize).clamp(1, u32::MAX as usize) as u32;
                calibrated = BuildOptions {
                    budget: Some(super::BudgetOptions {
                        context_window: counted(budget.context_window),
                        max_tokens: budget.max_tokens.map(counted),
                        ..budget.clone()
                    }),
                    ..options.clone()
                };
                &calibrated
            }
            _ => options,
        };
        let encoding = history.encoding();
        // The request's other parts take their share of the budget first.
        let request_tokens = match &options.request {
            Some(parts) => request_tokens(encoding, parts, options.format)?,
            None => 0,
        };
        let beside;
        let options = match (&options.budget, request_tokens) {
            (Some(budget), n) if n > 0 => {
                let max = budget.max_tokens();
                if n >= max {
                    return Err(Error::invalid_argument(format!(
                        "the budget of {max} tokens ({}) is too small for the request's system prompt and tools alone ({n} tokens)",
                        budget.describe()
                    )));
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
        let shape = frame::shape(options, encoding, history.pinned_positions());
        let limits = Limits::of(options);
        // The reductions' cache is for one set of reducer options (the pipeline would empty it
        // under a structure this build already holds).
        self.reduce.prepare(options.fingerprint(encoding));
        let check = match options.compact_now {
            true => Err(EventReason::Requested),
            false => self.frame.check(&items, &shape, self.summary.generation),
        };
        let mut outcome = match check {
            Ok(()) => match self.append(&items, encoding, options, &limits, turns, state)? {
                Ok(outcome) => outcome,
                Err((reason, seen)) => {
                    self.event(&items, encoding, options, &limits, turns, state, reason, seen, shape.clone())?
                }
            },
            Err(reason) => self.event(&items, encoding, options, &limits, turns, state, reason, None, shape.clone())?,
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
        outcome.context.receipt.calibration = factor.map(|f| f.apply(outcome.context.tokens.total));
        outcome.context.marks = options.cache.clone().map(|options| marks(&outcome.context, options));
        let receipt = &outcome.context.receipt;
        self.last_build = Some(receipt.tokens_after);
        self.last_fates = Some(Arc::clone(&receipt.fates));
        Ok(outcome)
    }

    /// A build between events: the frame, then what was logged since. `Err` with the reason
    /// when it must be an event instead (and the context the model would have seen, for a
    /// summariser's request that rides the cache).
    #[allow(clippy::type_complexity)]
    fn append(
        &mut self,
        items: &[Item],
        encoding: Encoding,
        options: &BuildOptions,
        limits: &Limits,
        turns: &[TurnNote],
        state: &[StateNote],
    ) -> Result<std::result::Result<BuildOutcome, (EventReason, Option<Vec<ContextMessage>>)>> {
        let ctx = Ctx { items, encoding, options, turns, state };
        let structure = super::repair::structure_for(items, options.dedupe_system, &mut self.reduce);
        let appended = match self.frame.appended(&ctx, &mut self.reduce, &structure) {
            Ok(appended) => appended?,
            Err(reason) => return Ok(Err((reason, None))),
        };
        let mut messages: Vec<ContextMessage> = self.frame.messages.clone();
        messages.extend(appended.messages.iter().cloned());
        let total = self.frame.tokens + appended.tokens;
        if limits.trigger.is_some_and(|trigger| total > trigger) {
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
        self.frame.take(&appended, items);
        self.frame.last_sent = context.messages.clone();
        Ok(Ok(BuildOutcome { context, summary_request: None, new_summary: None }))
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
        let structure = super::repair::structure_for(items, options.dedupe_system, &mut self.reduce);
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
                        let window =
                            options.max_messages.map(|n| ((n as f64 * limits.low_water_ratio).floor() as usize).max(1));
                        let at = limits.at(options, aim, window);
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
            super::summarise::ride_the_cache(request, seen, options.format)?;
        }
        self.proposed = outcome.summary_request.as_ref().map(|r| r.pending());
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
        self.frame = Frame::freeze(&outcome.context, items, &structure, shape, self.summary.generation, events);
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
    /// store (`summary::check_record`, `check_pending`), and against `history`: refused if it
    /// names messages the history lacks. On error nothing changes.
    pub fn set_summary_state(&mut self, state: SummaryState, history: &ConversationHistory) -> Result<()> {
        self.restore_summary_state(state, history, false)
    }

    /// `set_summary_state`, for a state whose summary's tokens were counted by this library for
    /// the history's encoding (`counted`: a stored record's counting tag says so): they are not
    /// counted again (`summary::check_record`).
    pub fn restore_summary_state(
        &mut self,
        state: SummaryState,
        history: &ConversationHistory,
        counted: bool,
    ) -> Result<()> {
        if let Some(current) = &state.current {
            super::summary::check_record(current, history.encoding(), counted)
                .map_err(|e| Error::invalid_argument(format!("the summary in force: {}", e.message)))?;
            if state.generation == 0 {
                return Err(Error::invalid_argument("a summary is in force, but the state says none was ever made"));
            }
        }
        if let Some(pending) = &state.in_progress {
            super::summary::check_pending(pending)?;
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

    /// The frame the next build appends to, as storage keeps it (`None` before the first build).
    pub fn frame_state(&self, history: &ConversationHistory) -> Option<FrameState> {
        // A history truncated since is another history: the next build starts afresh.
        if history.rebases() != self.rebases {
            return None;
        }
        let items = items_of(history);
        self.frame.state(&items)
    }

    /// Restores a stored frame, checked against `history` (refused if it names messages the
    /// history lacks there); on error nothing changes.
    pub fn set_frame_state(&mut self, state: FrameState, history: &ConversationHistory) -> Result<()> {
        let items = items_of(history);
        let frame = Frame::restore(state, &items)?;
        if history.rebases() != self.rebases {
            self.reduce = ReduceCache::default();
            self.rebases = history.rebases();
        }
        drop(std::mem::replace(&mut self.frame, frame));
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
        std::mem::forget(self.last_fates.take());
        self.last_build = None;
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
        match &self.proposed {
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
        let pending = match (&self.summary.in_progress, &self.proposed) {
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
        let tokens = super::summary::validate_summary(text, encoding, pending.max_tokens, &pending.required_keys)?;
        if let Some(created_at) = &created_at {
            super::summary::check_created_at(created_at, "createdAt")?;
        }
        let created_at = created_at.unwrap_or_else(|| format!("seq:{}", self.summary.generation + 1));
        let record = super::summary::record(&pending, text.to_string(), tokens, created_at, SummarySource::External);
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
    /// with its `model`): `counted` is what we counted for it, by default the last build's
    /// context (else the whole history). Returns the model's calibration.
    pub fn record_usage(
        &mut self,
        history: &mut ConversationHistory,
        usage: &Value,
        model: Option<&str>,
        counted: Option<usize>,
    ) -> Result<Factor> {
        let reported = ReportedUsage::read(usage)?;
        let model = model.or(reported.model.as_deref()).ok_or_else(|| {
            Error::invalid_argument("usage must name its model: pass `model`, or the whole response (it has `model`)")
        })?;
        let counted = match (counted, &self.last_build) {
            (Some(counted), _) => counted,
            (None, Some(tokens_after)) => *tokens_after,
            (None, None) => history.token_count().total,
        };
        // Recorded into a copy put in place whole (a few numbers per model): a wasm trap leaves
        // the calibration as it was or as it is now.
        let mut calibration = self.calibration.clone();
        let factor = calibration.record(model, counted, reported.input_tokens)?;
        drop(std::mem::replace(&mut self.calibration, calibration));
        Ok(factor)
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

    /// `history`'s token report, with what the provider will likely bill once usage was recorded.
    pub fn token_report(&self, history: &mut ConversationHistory) -> TokenReport {
        let mut report = history.token_report();
        report.calibration = self.calibration.latest().map(|f| f.apply(report.total));
        report
    }

    /// Reductions computed (not served from the cache) so far.
    pub fn reductions_computed(&self) -> u64 {
        self.reduce.computed
    }

    /// Unit plans made so far: a build plans the units its context may hold, not the history's.
    pub fn units_planned(&self) -> u64 {
        self.reduce.planned
    }

    /// Stored messages' fates made (not kept from the build before) so far: a warm build makes
    /// those of the messages near the end, not the history's.
    pub fn fates_made(&self) -> u64 {
        self.reduce.fates_made
    }

    /// Receipt runs made (not kept from the build before) so far.
    pub fn runs_made(&self) -> u64 {
        self.reduce.runs_made
    }

    /// Request forms emitted (not served from the cache) so far.
    pub fn forms_emitted(&self) -> u64 {
        self.forms.emitted
    }
}

/// The tokens of the request's parts sent beside the messages, by `countRequest`'s rules for
/// `format` (AI SDK lists as OpenAI Chat).
fn request_tokens(
    encoding: Encoding,
    parts: &super::options::RequestParts,
    format: crate::message::Format,
) -> Result<usize> {
    use crate::message::Format;
    use serde_json::{Map, Value};
    let format = if format == Format::AiSdk { Format::OpenAi } else { format };
    let mut request = Map::new();
    match format {
        Format::Responses => {
            request.insert("input".into(), Value::Array(Vec::new()));
            if let Some(system) = &parts.system {
                request.insert("instructions".into(), system.clone());
            }
        }
        _ => {
            request.insert("messages".into(), Value::Array(Vec::new()));
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
    Ok(count.total.saturating_sub(count.reply_priming))
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
