//! The compaction pipeline: a history in, the context for the next LLM call out, with a receipt.
//! One file per stage, in the order `build_once` runs them:
//!
//! ```text
//! repair      drop unanswered calls and orphan results, report moved results; group into units
//! plan        the summary in force; the pinned requests (`pins`); system, summarised and active units
//! select      the budget split (`allot`): pins, the summary section's share; the recent steps (`measure`)
//! reduce      fits as it is? verbatim. Else digests, compression (and thinning) while it does not fit
//! summarise   does not fit (or past an explicit trigger): a summary of what the recent messages
//!             leave out (extractive: made here, and a second pass; external: a SummaryRequest)
//! select      the recent messages newest first (a suffix when a summary covers the rest), the
//!             bridge between the summary in force and them
//! assemble    [system] + [pins] + [summary section] + [recent], a placeholder only if needed
//! ```
//!
//! The stored messages never change: the context is a view. Reductions are cached by record id
//! (`reduce::ReduceCache`); `Compactor` keeps that cache, the summary state and the request forms
//! of the last context between builds.

pub mod assemble;
pub mod compactor;
pub mod frame;
pub mod images;
pub(crate) mod lines;
pub mod memory;
pub mod options;
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
pub mod state;
pub(crate) mod summarise;
pub mod summary;
pub(crate) mod sums;

use crate::error::{Error, Result};
use crate::tokens::Encoding;
use plan::{Ctx, Pass};

pub use assemble::{BuildOutcome, CacheMarks, CompactedContext, ContextMessage};
pub use compactor::Compactor;
pub use frame::{FrameState, FrozenFates, FrozenMessage, FrozenReceipt};
pub use images::{ImagePlaceholder, ImagesUse};
pub use memory::{MemoryOptions, MemoryUse, TurnNote};
pub use options::{BudgetOptions, BuildOptions};
pub use receipt::{
    Action, BridgeUse, BudgetReport, Change, DropReason, EventReason, Fate, PinRole, PinUse, Receipt, ReceiptEntry,
    ReceiptRun, Section, SummaryUse, TokensByPart,
};
pub use reduce::compress::{CompressOptions, TextMode};
pub use reduce::{DigestOptions, ReduceCache};
pub use repair::{Item, Repair, RepairKind, UnitKind};
pub use request::emitted::{Assembled, EmitCache, Piece};
pub use request::{emit_request, validate, Violation, PLACEHOLDER_TEXT};
pub use spec::{BuildSpec, Patch, ProfileRef};
pub use state::{StateNote, StateOptions, StatePart, StateSectionUse, StateUse};
pub use summary::{
    PendingSummary, Summarizer, SummaryOptions, SummaryPlacement, SummaryRecord, SummaryRequest, SummarySource,
    SummaryState,
};

/// Builds the context. `items` are the stored messages with their cached tokens; `state` the
/// summary state; `cache` the reductions of earlier builds (any cache works: it only saves time).
pub fn build(
    items: &[Item],
    encoding: Encoding,
    options: &BuildOptions,
    state: &SummaryState,
    cache: &mut ReduceCache,
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
    cache: &mut ReduceCache,
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
    cache: &mut ReduceCache,
    turns: &[TurnNote<'b>],
    state_notes: &[StateNote],
) -> Result<BuildOutcome> {
    cache.prepare(options.fingerprint(encoding));
    cache.builds += 1;
    // Images sent once: the stored messages of earlier turns that hold images go in with
    // placeholders, as if stored so (a message's counts and reductions are cached by id: a
    // message whose form changed is forgotten).
    let (substitutes, images) = match options.images_sent_once {
        true => {
            let (substitutes, used) = images::sent_once(items, encoding, &mut cache.images_shown);
            (substitutes, Some(used))
        }
        false => (Vec::new(), None),
    };
    cache.images_replaced(substitutes.iter().filter_map(|s| items.get(s.index).map(|i| i.id)));
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
        cache.sums = Default::default();
        cache.runs = None;
    }
    let ctx = Ctx { items: shown, encoding, options, turns, state: state_notes };
    let mut outcome = build_twice_if_summarised(&ctx, state, cache);
    // Reduced messages no build used this time are forgotten (they are rebuilt if needed).
    let builds = cache.builds;
    cache.materialized.retain(|_, (used, _)| *used == builds);
    if !substitutes.is_empty() {
        cache.sums = Default::default();
        cache.runs = None;
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
            cache.runs = Some(receipt::Kept::patched(std::sync::Arc::clone(&receipt.fates)));
        }
        receipt.tokens_before += images.tokens_saved;
        receipt.images = Some(images);
    }
    outcome
}

fn build_twice_if_summarised(ctx: &Ctx, state: &SummaryState, cache: &mut ReduceCache) -> Result<BuildOutcome> {
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
fn build_once(ctx: &Ctx, state: &SummaryState, cache: &mut ReduceCache, allow_summarise: bool) -> Result<Step> {
    let structure = repair::structure_for(ctx.items, ctx.options.dedupe_system, cache);
    let mut pass = Pass::new(ctx, cache, structure, state)?;
    select::allot(ctx, cache, &mut pass)?;
    select::measure(ctx, cache, &mut pass)?;
    reduce::plan_active(ctx, cache, &mut pass)?;
    reduce::fit(ctx, cache, &mut pass)?;
    if let Some(record) = summarise::summarise(ctx, cache, &mut pass, state, allow_summarise)? {
        cache.planned += pass.plans.planned() as u64;
        return Ok(Step::Summarise { record });
    }
    select::fill(ctx, cache, &mut pass)?;
    cache.planned += pass.plans.planned() as u64;
    Ok(Step::Done(Box::new(assemble::assemble(ctx, cache, pass)?)))
}
