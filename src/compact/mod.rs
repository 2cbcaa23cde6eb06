//! The compaction pipeline: a history in, the context for the next LLM call out, with a receipt.
//! One file per stage, in the order `build_once` runs them:
//!
//! ```text
//! repair      drop unanswered calls and orphan results, report moved results; group into units
//! plan        the summary in force; the pinned requests (`pins`); system, summarised and active units
//! allot       the budget split: pins, the summary section's share
//! measure     the recent steps kept whole; what the active units cost as stored
//! reduce      fits as it is? verbatim. Else digests, compression (and thinning) while it does not fit
//! summarise   does not fit (or past an explicit trigger): a summary of what the recent messages
//!             leave out (extractive: made here, and a second pass; external: a SummaryRequest)
//! select      the recent messages newest first (a suffix when a summary covers the rest), the
//!             bridge between the summary in force and them
//! assemble    [system] + [pins] + [summary section] + [recent], a placeholder only if needed
//! ```
//!
//! The stored messages never change: the context is a view. What a build computes is kept for the
//! next one (`BuildCache`), each cache with the stage that uses it; `Compactor` keeps them, the
//! summary state and the request forms of the last context between builds.

pub(crate) mod allot;
pub mod assemble;
pub mod compactor;
pub mod cost;
pub(crate) mod fates;
pub(crate) mod fill;
pub(crate) mod forms;
pub mod frame;
pub mod images;
pub(crate) mod lines;
pub(crate) mod measure;
pub mod options;
pub(crate) mod pass;
pub(crate) mod pins;
pub(crate) mod plan;
pub mod profile;
pub mod receipt;
pub mod reduce;
pub mod repair;
pub mod request;
pub(crate) mod section;
pub(crate) mod select;
pub mod spec;
pub mod state_sections;
pub(crate) mod summarise;
pub mod summary_state;
pub(crate) mod sums;
#[cfg(test)]
pub(crate) mod testing;
pub mod turn_summaries;

use crate::error::{Error, Result};
use crate::tokens::Encoding;
use forms::{Ctx, Forms, TextCounts};
use pass::Pass;

pub use assemble::{BuildOutcome, CacheMarks, CompactedContext, ContextMessage};
pub use compactor::Compactor;
pub use cost::{CostEstimate, PricingOptions};
pub use frame::{FrameState, FrozenFates, FrozenMessage, FrozenReceipt};
pub use images::{ImagePlaceholder, ImagesUse};
pub use options::{BudgetOptions, BuildOptions};
pub use receipt::{
    Action, BridgeUse, BudgetReport, Change, DropReason, EventReason, Fate, PinRole, PinUse, Receipt, ReceiptEntry,
    ReceiptRun, Section, SummaryUse, TokensByPart,
};
pub use reduce::compress::{CompressOptions, TextMode};
pub use reduce::DigestOptions;
pub use repair::{Item, Repair, RepairKind, UnitKind};
pub use request::emitted::{Assembled, EmitCache, Piece};
pub use request::{emit_request, validate, Violation, PLACEHOLDER_TEXT};
pub use spec::{BuildSpec, Patch, ProfileRef};
pub use state_sections::{StateNote, StateOptions, StatePart, StateSectionUse, StateUse};
pub use summary_state::{
    PendingSummary, Summarizer, SummaryOptions, SummaryPlacement, SummaryRecord, SummaryRequest, SummarySource,
    SummaryState,
};
pub use turn_summaries::{MemoryOptions, MemoryUse, TurnNote};

/// What earlier builds computed, kept so that a warm build computes only what is new: each cache
/// holds one kind of result and is handed only to the stages that use it. Valid for one set of
/// options that shape the messages (reducer options, encoding): a build with others starts it
/// afresh.
#[derive(Clone, Debug, Default)]
pub struct BuildCache {
    fingerprint: String,
    /// The structure of the last history (repair), extended on append.
    pub(crate) structure: repair::StructureCache,
    /// The forms of the stored records and their counts, by record id.
    pub(crate) forms: Forms,
    /// The counts of the texts a build makes up, by text.
    pub(crate) texts: TextCounts,
    /// Which results are file contents and which files later calls touch (reduce).
    pub(crate) files: reduce::index::FileIndex,
    /// Running sums of the active units' stored tokens (measure, reduce).
    pub(crate) sums: sums::UnitSums,
    /// The last build's fates and receipt runs (assemble).
    pub(crate) fates: fates::FateCache,
    /// The bridges made, by what they cover (summarise).
    pub(crate) bridges: summarise::Bridges,
    /// What images sent once made of the messages holding images.
    pub(crate) images: images::ImagesShown,
    /// How many unit plans builds made (`pass::Plans`): for tests and benchmarks.
    planned: u64,
}

impl BuildCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Empties the caches unless they were made with the options of `fingerprint`; the counts
    /// of work done stay.
    pub(crate) fn prepare(&mut self, fingerprint: String) {
        if self.fingerprint != fingerprint {
            let mut fresh = BuildCache { fingerprint, planned: self.planned, ..BuildCache::default() };
            fresh.forms.computed = self.forms.computed;
            fresh.fates.made = self.fates.made;
            fresh.fates.runs_made = self.fates.runs_made;
            *self = fresh;
        }
    }

    /// How many reductions were computed (not served from the cache).
    pub fn reductions_computed(&self) -> u64 {
        self.forms.computed
    }

    /// How many unit plans builds made: a build plans the units its context may hold.
    pub fn units_planned(&self) -> u64 {
        self.planned
    }

    /// How many stored messages' fates builds made (not kept from the build before).
    pub fn fates_made(&self) -> u64 {
        self.fates.made
    }

    /// How many receipt runs builds made (not kept from the build before).
    pub fn runs_made(&self) -> u64 {
        self.fates.runs_made
    }
}

/// Builds the context. `items` are the stored messages with their cached tokens; `state` the
/// summary state; `cache` what earlier builds computed (any cache works: it only saves time).
pub fn build(
    items: &[Item],
    encoding: Encoding,
    options: &BuildOptions,
    state: &SummaryState,
    cache: &mut BuildCache,
) -> Result<BuildOutcome> {
    build_with_notes(items, encoding, options, state, cache, &[], &[])
}

/// `build` for a session with memory: `turns` are its recorded turns, whose summaries stand in for
/// the turns the context does not wholly hold (`BuildOptions::memory`).
pub fn build_with_notes<'b>(
    items: &[Item<'b>],
    encoding: Encoding,
    options: &BuildOptions,
    state: &SummaryState,
    cache: &mut BuildCache,
    turns: &[TurnNote<'b>],
    state_notes: &[StateNote],
) -> Result<BuildOutcome> {
    options.validate()?;
    pipeline(items, encoding, options, state, cache, turns, state_notes)
}

/// The pipeline, on options validated by the caller (a compaction event's may hold a count window
/// below the least a caller may ask for).
pub(crate) fn pipeline<'b>(
    items: &[Item<'b>],
    encoding: Encoding,
    options: &BuildOptions,
    state: &SummaryState,
    cache: &mut BuildCache,
    turns: &[TurnNote<'b>],
    state_notes: &[StateNote],
) -> Result<BuildOutcome> {
    cache.prepare(options.fingerprint(encoding));
    cache.forms.start_build();
    // Images sent once: the stored messages of earlier turns that hold images go in with
    // placeholders, as if stored so (a message's counts and reductions are cached by id: a
    // message whose form changed is forgotten).
    let (substitutes, images) = match options.images_sent_once {
        true => {
            let (substitutes, used) = images::sent_once(items, encoding, &mut cache.images);
            (substitutes, Some(used))
        }
        false => (Vec::new(), None),
    };
    let changed = cache.images.replaced_now(substitutes.iter().filter_map(|s| items.get(s.index).map(|i| i.id)));
    cache.forms.forget(&changed);
    // The history as shown: the stored items themselves unless an image was replaced.
    let mut shown: Vec<Item> = Vec::new();
    if !substitutes.is_empty() {
        shown = items.to_vec();
        for substitute in &substitutes {
            if let Some(item) = shown.get_mut(substitute.index) {
                item.message = &substitute.message;
                item.tokens = substitute.tokens;
            }
        }
    }
    let shown: &[Item] = if substitutes.is_empty() { items } else { &shown };
    // The running sums and the kept fates are of the stored tokens: a build that shows some
    // otherwise starts them afresh, and leaves none behind.
    if !substitutes.is_empty() {
        cache.sums.forget();
        cache.fates.forget();
    }
    let ctx = Ctx { items: shown, encoding, options, turns, state: state_notes };
    let mut outcome = build_twice_if_summarised(&ctx, state, cache);
    // Reduced messages no build used this time are forgotten (they are rebuilt if needed).
    cache.forms.end_build();
    if !substitutes.is_empty() {
        cache.sums.forget();
        cache.fates.forget();
    }
    // The receipt counts the stored messages as stored.
    if let (Ok(outcome), Some(images)) = (&mut outcome, images) {
        let receipt = &mut outcome.context.receipt;
        if !substitutes.is_empty() {
            // Unshared now, the fates are patched in place, and kept for the entries only.
            let fates = std::sync::Arc::make_mut(&mut receipt.fates);
            for substitute in &substitutes {
                if let (Some(fate), Some(item)) = (fates.get_mut(substitute.index), items.get(substitute.index)) {
                    fate.tokens_before = item.tokens;
                }
            }
            receipt.runs = std::sync::Arc::new(receipt::runs(items, &receipt.fates, None));
            cache.fates.keep_patched(std::sync::Arc::clone(&receipt.fates));
        }
        receipt.tokens_before += images.tokens_saved;
        receipt.images = Some(images);
    }
    outcome
}

fn build_twice_if_summarised(ctx: &Ctx, state: &SummaryState, cache: &mut BuildCache) -> Result<BuildOutcome> {
    match build_once(ctx, state, cache, true)? {
        Step::Done(outcome) => Ok(*outcome),
        Step::Summarise { record } => {
            let mut next = state.clone();
            next.generation += 1;
            next.current = Some(record.clone());
            match build_once(ctx, &next, cache, false)? {
                Step::Done(mut outcome) => {
                    outcome.new_summary = Some(record);
                    if let Some(used) = outcome.context.receipt.summary.as_mut() {
                        used.fresh = true;
                    }
                    Ok(*outcome)
                }
                Step::Summarise { .. } => Err(Error::internal("compaction asked for twice in one build")),
            }
        }
    }
}

enum Step {
    Done(Box<BuildOutcome>),
    /// The extractive summary was made: build again on it.
    Summarise {
        record: SummaryRecord,
    },
}

/// One pass through the stages.
fn build_once(ctx: &Ctx, state: &SummaryState, cache: &mut BuildCache, allow_summarise: bool) -> Result<Step> {
    let structure = repair::structure_for(ctx.items, ctx.options.dedupe_system, &mut cache.structure);
    // What other caches keep of a structure is of the one they were made on.
    let epoch = cache.structure.epoch();
    cache.sums.sync(epoch);
    cache.fates.sync(epoch);
    let units = plan::split(ctx, structure, state, &mut cache.structure, &mut cache.forms)?;
    let budget = allot::allot(ctx, &units, &mut cache.forms, &mut cache.texts)?;
    let measured = measure::measure(ctx, &units, &budget, &mut cache.forms, &mut cache.sums)?;
    let mut pass = Pass::of(units, budget, measured, ctx.options);
    reduce::plan_active(ctx, &mut cache.forms, &mut cache.files, &mut pass)?;
    reduce::fit(ctx, &mut cache.forms, &mut cache.files, &mut cache.sums, &mut pass)?;
    let mut reductions = reduce::Reductions { forms: &mut cache.forms, files: &mut cache.files };
    let summarised = summarise::summarise(ctx, &mut reductions, &mut cache.texts, &mut pass, state, allow_summarise)?;
    if let Some(record) = summarised {
        cache.planned += pass.plans.planned() as u64;
        return Ok(Step::Summarise { record });
    }
    let mut reductions = reduce::Reductions { forms: &mut cache.forms, files: &mut cache.files };
    fill::fill(ctx, &mut reductions, &mut cache.texts, &mut cache.bridges, &mut pass)?;
    cache.planned += pass.plans.planned() as u64;
    let outcome =
        assemble::assemble(ctx, &mut cache.forms, &mut cache.texts, &mut cache.fates, &mut cache.structure, pass)?;
    Ok(Step::Done(Box::new(outcome)))
}
