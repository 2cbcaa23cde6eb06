//! The compactor: what lives beside a history between builds. The summary state and its
//! lifecycle (a request proposed by a build, begun, completed or cancelled), the reductions of
//! earlier builds, the request forms of the last context (so that a warm build emits only the
//! messages that changed, for a native caller as for JS), and the last receipt.

use serde_json::Value;

use super::{
    build_with_notes, Assembled, BuildOptions, BuildOutcome, CompactedContext, EmitCache, Item, PendingSummary,
    ReceiptEntry, ReduceCache, StateNote, SummaryRecord, SummarySource, SummaryState, TurnNote,
};
use crate::error::{Error, Result};
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
}

impl Compactor {
    pub fn new() -> Self {
        Self::default()
    }

    /// Builds the context for the next call from `history` (see `compact::build`); `turns` are a
    /// session's recorded turns. The stored messages never change; a summary made by the
    /// extractive summariser during the build is kept.
    pub fn build(
        &mut self,
        history: &mut ConversationHistory,
        options: &BuildOptions,
        turns: &[TurnNote],
        state: &[StateNote],
    ) -> Result<BuildOutcome> {
        history.count_all();
        if history.rebases() != self.rebases {
            self.reduce = ReduceCache::default();
            self.rebases = history.rebases();
        }
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
        let mut outcome =
            build_with_notes(&items, history.encoding(), options, &self.summary, &mut self.reduce, turns, state)?;
        outcome.context.receipt.calibration = factor.map(|f| f.apply(outcome.context.tokens.total));
        if let Some(record) = &outcome.new_summary {
            let state = SummaryState {
                current: Some(record.clone()),
                generation: self.summary.generation + 1,
                in_progress: self.summary.in_progress.clone(),
            };
            self.replace_summary(state);
        }
        self.proposed = outcome.summary_request.as_ref().map(|r| r.pending());
        let receipt = &outcome.context.receipt;
        self.last_build = Some(receipt.tokens_after);
        Ok(outcome)
    }

    /// The context's request in pieces, checked against the provider's rules: the forms of the
    /// messages the last context had are reused, the others emitted (and kept for the next).
    pub fn request(&mut self, context: &CompactedContext) -> Result<Assembled> {
        context.request(&mut self.forms)
    }

    /// `request` as one value: OpenAI's message array, or Anthropic's `{ system?, messages }`.
    pub fn request_value(&mut self, context: &CompactedContext) -> Result<Value> {
        let assembled = self.request(context)?;
        Ok(self.forms.to_value(&assembled))
    }

    /// The request forms of the last context (`Piece::Own` pieces point into them).
    pub fn forms(&self) -> &EmitCache {
        &self.forms
    }

    /// The last build's receipt message by message; empty before the first build.
    pub fn last_receipt_entries(&self, history: &ConversationHistory) -> Vec<ReceiptEntry> {
        super::receipt::kept_fates(&self.reduce.runs)
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
