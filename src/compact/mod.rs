//! The compaction pipeline: a history in, the context for the next LLM call out, with a receipt.
//!
//! ```text
//! repair + structure   drop unanswered calls and orphan results (reported); group into units
//! reduce               thin older turns; digest file reads of older turns; compress long output
//! summarise            past the trigger: a SummaryRequest (or the extractive summary, applied)
//! select               count window, then token budget; units whole or not at all
//! assemble             [system] + [summary] + [recent], a placeholder user message only if needed
//! ```
//!
//! The stored messages never change: the context is a view. Reductions are cached by record id.

pub(crate) mod fasthash;
pub mod emitted;
pub mod memory;
pub mod profile;
pub mod reduce;
pub mod request;
pub mod structure;
pub mod summary;

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::message::{Content, ContentForm, Format, Message, Part, Role, ToolResult};
use crate::tokens::{self, Encoding, REPLY_PRIMING};

pub use memory::{MemoryOptions, MemoryUse, TurnNote};
pub use reduce::compress::{CompressOptions, TextMode};
pub use reduce::{DigestOptions, ReduceCache};
pub use emitted::{Assembled, EmitCache, Piece};
pub use request::{emit_request, validate, Violation, PLACEHOLDER_TEXT};
pub use structure::{Item, Repair, RepairKind, UnitKind};
pub use summary::{
    PendingSummary, SummaryOptions, SummaryPlacement, SummaryRecord, SummaryRequest, SummarySource, SummaryState,
    Summariser,
};

/// Seed 001's token budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BudgetOptions {
    /// The model's context window, in tokens.
    pub context_window: u32,
    /// Share of the window the context may use (seed 001: 0.6).
    pub target_ratio: f64,
    /// Share of what the system prompt leaves, for the summary (0.26)…
    pub summary_ratio: f64,
    /// …and for the recent messages (0.65); the rest is a buffer.
    pub recent_ratio: f64,
    /// Up to this many messages, nothing is optimised if they fit (seed 001: 10).
    pub min_messages: usize,
}

impl Default for BudgetOptions {
    fn default() -> Self {
        BudgetOptions { context_window: 128_000, target_ratio: 0.6, summary_ratio: 0.26, recent_ratio: 0.65, min_messages: 10 }
    }
}

fn check_ratio(name: &str, value: f64) -> Result<()> {
    if value > 0.0 && value <= 1.0 {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!("{name} must be in (0, 1], got {value}")))
    }
}

impl BudgetOptions {
    pub fn validate(&self) -> Result<()> {
        if self.context_window == 0 {
            return Err(Error::invalid_argument("budget.contextWindow must be positive"));
        }
        check_ratio("budget.targetRatio", self.target_ratio)?;
        check_ratio("budget.summaryRatio", self.summary_ratio)?;
        check_ratio("budget.recentRatio", self.recent_ratio)?;
        if self.summary_ratio + self.recent_ratio > 1.0 + 1e-9 {
            return Err(Error::invalid_argument(format!(
                "budget.summaryRatio + budget.recentRatio must not exceed 1, got {}",
                self.summary_ratio + self.recent_ratio
            )));
        }
        Ok(())
    }

    /// The most tokens the whole context may have.
    pub fn max_tokens(&self) -> usize {
        (f64::from(self.context_window) * self.target_ratio).floor() as usize
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct BuildOptions {
    /// The format of the context (and of a summary request's messages).
    pub format: Format,
    /// Seed 000's count window: the last N messages (10 to 100), tool chains whole.
    pub max_messages: Option<usize>,
    /// Seed 001's token budget.
    pub budget: Option<BudgetOptions>,
    /// Seed 004: the last N steps stay whole (no thinning, no digests) and are never summarised.
    pub keep_recent_steps: usize,
    /// Identical system messages are kept once.
    pub dedupe_system: bool,
    pub compress: Option<CompressOptions>,
    pub digest: Option<DigestOptions>,
    /// Seed 004's history thinning of older turns.
    pub thin: bool,
    pub summary: Option<SummaryOptions>,
    /// A session's memory: summaries of recorded turns not wholly in the context (`None`: left out).
    pub memory: Option<MemoryOptions>,
    /// Timestamp recorded on a summary made during this build (the core has no clock).
    pub now: Option<String>,
}

impl Default for BuildOptions {
    fn default() -> Self {
        BuildOptions {
            format: Format::OpenAi,
            max_messages: None,
            budget: None,
            keep_recent_steps: 3,
            dedupe_system: true,
            compress: Some(CompressOptions::default()),
            digest: Some(DigestOptions::default()),
            thin: false,
            summary: Some(SummaryOptions::default()),
            memory: Some(MemoryOptions::default()),
            now: None,
        }
    }
}

impl BuildOptions {
    pub fn validate(&self) -> Result<()> {
        if let Some(n) = self.max_messages {
            if !(10..=100).contains(&n) {
                return Err(Error::invalid_argument(format!("maxMessages must be between 10 and 100, got {n}")));
            }
        }
        if let Some(budget) = &self.budget {
            budget.validate()?;
        }
        if let Some(compress) = &self.compress {
            compress.validate()?;
        }
        if let Some(digest) = &self.digest {
            digest.validate()?;
        }
        if let Some(summary) = &self.summary {
            summary.validate()?;
        }
        Ok(())
    }

    /// Parses camelCase JSON options, refusing unknown keys.
    pub fn from_value(value: Value) -> Result<BuildOptions> {
        let options: BuildOptions =
            serde_json::from_value(value).map_err(|e| Error::invalid_argument(format!("invalid build options: {e}")))?;
        options.validate()?;
        Ok(options)
    }

    fn fingerprint(&self, encoding: Encoding) -> String {
        format!("{encoding:?}|{:?}|{:?}", self.compress, self.digest)
    }
}

/// Which part of the context a message belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "camelCase")]
pub enum Section {
    System,
    Summary,
    Recent,
}

/// What happened to a stored message in this build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, Hash)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Dropped,
    Summarised,
    /// Kept, with its tool calls and thinking removed (history thinning).
    Thinned,
    Digested,
    Compressed,
    Kept,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Hash)]
#[serde(rename_all = "camelCase")]
pub enum DropReason {
    /// Left out by repair (see the receipt's `repairs`).
    Repair,
    /// An older turn's tool traffic (history thinning).
    Thinning,
    /// Outside the count window.
    Window,
    /// Did not fit the token budget.
    Budget,
}

/// What happened to one stored message; `Receipt::fates` has one per stored message, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fate {
    pub action: Action,
    pub reason: Option<DropReason>,
    pub tokens_before: u32,
    pub tokens_after: u32,
}

/// Consecutive stored messages that fared alike: the receipt by id, at the size of its changes
/// rather than of the history (a long conversation is mostly one run of dropped messages).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptRun {
    /// The first and last ids of the run (the same for a run of one).
    pub from: String,
    pub to: String,
    pub count: usize,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<DropReason>,
    pub tokens_before: u64,
    pub tokens_after: u64,
}

/// One stored message's line of the receipt, with its id (`Receipt::entries`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReceiptEntry {
    pub id: String,
    pub action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<DropReason>,
    pub tokens_before: u32,
    pub tokens_after: u32,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokensByPart {
    pub system: usize,
    pub summary: usize,
    pub recent: usize,
    /// All of the above plus the reply priming.
    pub total: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetReport {
    pub max_tokens: usize,
    pub system_tokens: usize,
    pub summary_budget: usize,
    pub recent_budget: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryUse {
    pub request_id: String,
    pub summarised_until: String,
    pub tokens: u32,
    /// Made during this build (the extractive summariser).
    pub fresh: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Receipt {
    /// The whole stored history as one prompt.
    pub tokens_before: usize,
    pub tokens_after: usize,
    pub messages_before: usize,
    pub messages_after: usize,
    pub by_part: TokensByPart,
    pub budget: Option<BudgetReport>,
    pub within_budget: bool,
    /// What happened to every stored message, as runs of alike messages in history order.
    pub runs: Vec<ReceiptRun>,
    /// The same per message, in history order (ids by position: `Receipt::entries`).
    #[serde(skip)]
    pub fates: Vec<Fate>,
    pub repairs: Vec<Repair>,
    pub summary: Option<SummaryUse>,
    /// The memory's turn summaries the context holds (a session with memory).
    pub memory: Option<MemoryUse>,
    /// A placeholder user message was put first (Anthropic needs one and none was left).
    pub placeholder: bool,
    pub notes: Vec<String>,
    /// The history's calibration against reported usage, when there is one: the budget above is
    /// then in counted tokens (the billed budget over the top of the band).
    pub calibration: Option<crate::tokens::calibration::Calibrated>,
}

impl Receipt {
    /// One entry per stored message: `ids` are the stored messages' ids, in history order.
    pub fn entries<'a>(&self, ids: impl IntoIterator<Item = &'a str>) -> Vec<ReceiptEntry> {
        self.fates
            .iter()
            .zip(ids)
            .map(|(f, id)| ReceiptEntry { id: id.to_string(), action: f.action, reason: f.reason, tokens_before: f.tokens_before, tokens_after: f.tokens_after })
            .collect()
    }
}

/// Groups per-message fates into runs; ids only at run ends.
fn receipt_runs(items: &[Item], fates: &[Fate]) -> Vec<ReceiptRun> {
    let mut runs: Vec<ReceiptRun> = Vec::new();
    let mut start = 0usize;
    for (i, fate) in fates.iter().enumerate() {
        let same = fates.get(start).is_some_and(|s| (s.action, s.reason) == (fate.action, fate.reason));
        if i > start && same {
            continue;
        }
        if i > start {
            runs.push(receipt_run(items, fates, start, i));
        }
        start = i;
    }
    if start < fates.len() {
        runs.push(receipt_run(items, fates, start, fates.len()));
    }
    runs
}

fn receipt_run(items: &[Item], fates: &[Fate], start: usize, end: usize) -> ReceiptRun {
    let slice = fates.get(start..end).unwrap_or(&[]);
    let id = |i: usize| items.get(i).map_or_else(String::new, |item| item.id.to_string());
    let (action, reason) = slice.first().map_or((Action::Dropped, None), |f| (f.action, f.reason));
    ReceiptRun {
        from: id(start),
        to: id(end.saturating_sub(1)),
        count: slice.len(),
        action,
        reason,
        tokens_before: slice.iter().map(|f| u64::from(f.tokens_before)).sum(),
        tokens_after: slice.iter().map(|f| u64::from(f.tokens_after)).sum(),
    }
}

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

// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq)]
struct MemberPlan {
    msg: usize,
    parts: Option<Vec<usize>>,
    /// Part indices replaced by their compressed or digested form.
    replace: Vec<(usize, Action)>,
    /// Only the text parts (history thinning).
    text_only: bool,
}

impl MemberPlan {
    fn whole(&self) -> bool {
        self.parts.is_none() && self.replace.is_empty() && !self.text_only
    }

    fn action(&self) -> Action {
        if self.text_only {
            Action::Thinned
        } else if self.replace.iter().any(|(_, a)| *a == Action::Compressed) {
            Action::Compressed
        } else if !self.replace.is_empty() {
            Action::Digested
        } else {
            Action::Kept
        }
    }
}

#[derive(Clone, Debug)]
struct Plan {
    unit: usize,
    members: Vec<MemberPlan>,
    member_tokens: Vec<u32>,
    tokens: usize,
    dropped: Option<DropReason>,
    /// Reductions still to apply: (digest allowed, compression allowed).
    pending: Option<(bool, bool)>,
}

fn apply_reductions(ctx: &Ctx, cache: &mut ReduceCache, structure: &structure::Structure, plan: &mut Plan) -> Result<()> {
    if let Some((digest, compress)) = plan.pending.take() {
        ctx.reduce_members(cache, structure, &mut plan.members, digest, compress)?;
    }
    Ok(())
}

struct Ctx<'a, 'b> {
    items: &'a [Item<'b>],
    encoding: Encoding,
    options: &'a BuildOptions,
    notes: &'a [TurnNote<'b>],
}

fn part_indices(message: &Message, member: &MemberPlan) -> Vec<usize> {
    match &member.parts {
        Some(list) => list.clone(),
        None => (0..message.content.parts.len()).collect(),
    }
}

impl Ctx<'_, '_> {
    fn item(&self, msg: usize) -> Result<&Item<'_>> {
        self.items.get(msg).ok_or_else(|| Error::internal(format!("message index {msg} out of range")))
    }

    fn overhead(&self, cache: &mut ReduceCache, msg: usize) -> Result<u32> {
        let item = self.item(msg)?;
        if let Some(n) = cache.overheads.get(item.id) {
            return Ok(*n);
        }
        let n = u32::try_from(tokens::message_overhead(self.encoding, item.message)).unwrap_or(u32::MAX);
        cache.overheads.insert(item.id.to_string(), n);
        Ok(n)
    }

    fn part_tokens(&self, cache: &mut ReduceCache, msg: usize, j: usize) -> Result<u32> {
        let item = *self.item(msg)?;
        let len = item.message.content.parts.len();
        if let Some(n) = cache.part(item.id, j, len).tokens {
            return Ok(n);
        }
        let n = if len == 1 {
            item.tokens.saturating_sub(self.overhead(cache, msg)?)
        } else {
            let part = item.message.content.parts.get(j).ok_or_else(|| Error::internal("part index out of range"))?;
            u32::try_from(tokens::count_part(self.encoding, part, item.message.source)).unwrap_or(u32::MAX)
        };
        cache.part(item.id, j, len).tokens = Some(n);
        Ok(n)
    }

    /// Computes (once) the reduced form of result part `j` of message `msg`; says if there is one.
    fn ensure_reduced(&self, cache: &mut ReduceCache, msg: usize, j: usize, action: Action, call: Option<&crate::message::ToolCall>) -> Result<bool> {
        let item = *self.item(msg)?;
        let len = item.message.content.parts.len();
        let slot = cache.part(item.id, j, len);
        let cached = match action {
            Action::Compressed => slot.compressed.as_ref().map(Option::is_some),
            _ => slot.digested.as_ref().map(Option::is_some),
        };
        if let Some(done) = cached {
            return Ok(done);
        }
        let Some(Part::ToolResult(result)) = item.message.content.parts.get(j) else {
            return Ok(false);
        };
        let text_only = result.content.parts.iter().all(|p| matches!(p, Part::Text { .. }));
        let text = result.content.joined_text();
        let reduced_text = if !text_only || text.is_empty() {
            None
        } else {
            match action {
                Action::Compressed => self.options.compress.as_ref().and_then(|o| reduce::compress::compress_text(&text, o)),
                _ => {
                    let path = call.and_then(reduce::digest::call_path);
                    let line = reduce::digest::digest(path.as_deref(), &text);
                    (line.len() < text.len()).then_some(line)
                }
            }
        };
        let part = reduced_text.map(|t| {
            Part::ToolResult(ToolResult { call_id: result.call_id.clone(), content: Content::text(t), is_error: result.is_error, extra: result.extra.clone() })
        });
        let found = part.is_some();
        cache.computed += 1;
        let slot = cache.part(item.id, j, len);
        match action {
            Action::Compressed => slot.compressed = Some(part),
            _ => slot.digested = Some(part),
        }
        Ok(found)
    }

    /// The reduced part computed by `ensure_reduced`.
    fn reduced(&self, cache: &mut ReduceCache, msg: usize, j: usize, action: Action) -> Result<Option<Part>> {
        let item = *self.item(msg)?;
        let slot = cache.part(item.id, j, item.message.content.parts.len());
        Ok(match action {
            Action::Compressed => slot.compressed.clone().flatten(),
            _ => slot.digested.clone().flatten(),
        })
    }

    fn materialize(&self, cache: &mut ReduceCache, member: &MemberPlan) -> Result<Arc<Message>> {
        let item = *self.item(member.msg)?;
        if member.whole() {
            return Ok(Arc::clone(item.message));
        }
        // The same variant is the same `Arc` build after build: its request form is kept by
        // identity (`EmitCache`).
        let key = member_key(item.id, member);
        let builds = cache.builds;
        if let Some((used, message)) = cache.materialized.get_mut(&key) {
            *used = builds;
            return Ok(Arc::clone(message));
        }
        let source = item.message;
        let mut parts = Vec::new();
        for j in part_indices(source, member) {
            let Some(original) = source.content.parts.get(j) else { continue };
            if member.text_only && !matches!(original, Part::Text { .. }) {
                continue;
            }
            let replaced = match member.replace.iter().find(|(k, _)| *k == j) {
                Some((_, action)) => self.reduced(cache, member.msg, j, *action)?,
                None => None,
            };
            parts.push(replaced.unwrap_or_else(|| original.clone()));
        }
        let form = if member.parts.is_none() && !member.text_only {
            source.content.form
        } else if source.content.form == ContentForm::Text && parts.iter().all(|p| matches!(p, Part::Text { .. })) {
            ContentForm::Text
        } else if parts.is_empty() && matches!(source.content.form, ContentForm::Null | ContentForm::Absent) {
            source.content.form
        } else {
            ContentForm::Parts
        };
        let message = Arc::new(Message { role: source.role, content: Content { form, parts }, name: source.name.clone(), extra: source.extra.clone(), source: source.source });
        cache.materialized.insert(key, (builds, Arc::clone(&message)));
        Ok(message)
    }

    fn member_tokens(&self, cache: &mut ReduceCache, member: &MemberPlan) -> Result<u32> {
        let item = *self.item(member.msg)?;
        if member.whole() {
            return Ok(item.tokens);
        }
        let key = member_key(item.id, member);
        if let Some(n) = cache.members.get(&key) {
            return Ok(*n);
        }
        let message = self.materialize(cache, member)?;
        let n = tokens::count_message(self.encoding, &message).total;
        cache.members.insert(key, n);
        Ok(n)
    }

    fn find_call(&self, structure: &structure::Structure, call_id: &str) -> Option<&crate::message::ToolCall> {
        let (msg, j) = structure.calls.get(call_id)?;
        let message: &Message = self.items.get(*msg)?.message;
        match message.content.parts.get(*j)? {
            Part::ToolCall(call) => Some(call),
            _ => None,
        }
    }

    /// Adds digest and compression replacements to a step's result members.
    fn reduce_members(
        &self,
        cache: &mut ReduceCache,
        structure: &structure::Structure,
        members: &mut [MemberPlan],
        digest: bool,
        compress: bool,
    ) -> Result<()> {
        for member in members.iter_mut() {
            let item = *self.item(member.msg)?;
            if item.message.role == Role::Assistant || member.text_only {
                continue;
            }
            for j in part_indices(item.message, member) {
                let Some(Part::ToolResult(result)) = item.message.content.parts.get(j) else { continue };
                let call = self.find_call(structure, &result.call_id);
                if let (true, Some(options), Some(call)) = (digest, self.options.digest.as_ref(), call) {
                    if result.is_error != Some(true) && reduce::digest::is_file_read(call, &options.tools) {
                        // Compute with the call so the digest can name the file; cached after.
                        if self.ensure_reduced(cache, member.msg, j, Action::Digested, Some(call))? {
                            member.replace.push((j, Action::Digested));
                            continue;
                        }
                    }
                }
                if let (true, Some(options)) = (compress, self.options.compress.as_ref()) {
                    if self.part_tokens(cache, member.msg, j)? > options.max_tokens
                        && self.ensure_reduced(cache, member.msg, j, Action::Compressed, None)?
                    {
                        member.replace.push((j, Action::Compressed));
                    }
                }
            }
        }
        Ok(())
    }

    fn plan_tokens(&self, cache: &mut ReduceCache, plan: &mut Plan) -> Result<()> {
        plan.member_tokens.clear();
        let mut total = 0usize;
        for member in &plan.members {
            let n = self.member_tokens(cache, member)?;
            plan.member_tokens.push(n);
            total += n as usize;
        }
        plan.tokens = total;
        Ok(())
    }
}

/// A cache key for a member's variant: the id, the parts, the replacements, text-only or not.
fn member_key(id: &str, member: &MemberPlan) -> String {
    use std::fmt::Write;
    let mut key = String::with_capacity(id.len() + 16);
    key.push_str(id);
    key.push('|');
    if let Some(parts) = &member.parts {
        for j in parts {
            let _ = write!(key, "{j},");
        }
    } else {
        key.push('*');
    }
    key.push('|');
    for (j, action) in &member.replace {
        let _ = write!(key, "{j}{}", if *action == Action::Compressed { 'c' } else { 'd' });
    }
    if member.text_only {
        key.push_str("|t");
    }
    key
}

fn base_members(unit: &structure::Unit) -> Vec<MemberPlan> {
    unit.members.iter().map(|m| MemberPlan { msg: m.msg, parts: m.parts.clone(), replace: Vec::new(), text_only: false }).collect()
}

fn has_text(message: &Message, member: &MemberPlan) -> bool {
    part_indices(message, member).iter().any(|j| matches!(message.content.parts.get(*j), Some(Part::Text { text, .. }) if !text.trim().is_empty()))
}

/// Builds the context. `items` are the stored messages with their cached tokens; `state` the
/// summary state; `cache` the reductions of earlier builds (any cache works: it only saves time).
pub fn build(items: &[Item], encoding: Encoding, options: &BuildOptions, state: &SummaryState, cache: &mut ReduceCache) -> Result<BuildOutcome> {
    build_with_notes(items, encoding, options, state, cache, &[])
}

/// `build` for a session with memory: `notes` are its recorded turns, whose summaries stand in for
/// the turns the context does not wholly hold (`BuildOptions::memory`).
pub fn build_with_notes<'b>(
    items: &[Item<'b>],
    encoding: Encoding,
    options: &BuildOptions,
    state: &SummaryState,
    cache: &mut ReduceCache,
    notes: &[TurnNote<'b>],
) -> Result<BuildOutcome> {
    options.validate()?;
    cache.prepare(options.fingerprint(encoding));
    cache.builds += 1;
    let ctx = Ctx { items, encoding, options, notes };
    let outcome = build_twice_if_summarised(&ctx, state, cache);
    // Reduced messages no build used this time are forgotten (they are rebuilt if needed).
    let builds = cache.builds;
    cache.materialized.retain(|_, (used, _)| *used == builds);
    outcome
}

fn build_twice_if_summarised(ctx: &Ctx, state: &SummaryState, cache: &mut ReduceCache) -> Result<BuildOutcome> {
    let first = build_once(ctx, state, cache, true)?;
    match first {
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
    Summarise { record: SummaryRecord },
}

fn summary_messages(options: &BuildOptions, summary: &SummaryRecord) -> Vec<Message> {
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
            Content::text(format!("Summary of the earlier conversation (up to message {}):\n{}", summary.summarised_until, summary.text)),
            source,
        )]
    }
}

/// The tokens of a message the build makes up (summary, placeholder, prompt), counted once.
fn made_up_tokens(ctx: &Ctx, cache: &mut ReduceCache, message: &Message) -> usize {
    let text = message.content.joined_text();
    let key = (message.role, message.source, text);
    if let Some(n) = cache.made_up.get(&key) {
        return *n as usize;
    }
    let n = tokens::count_message(ctx.encoding, message).total;
    // Summaries come and go; a few dozen texts is all a history ever needs at once.
    if cache.made_up.len() >= 64 {
        cache.made_up.clear();
    }
    cache.made_up.insert(key, n);
    n as usize
}

fn placeholder(format: Format) -> Message {
    Message::new(Role::User, Content::text(PLACEHOLDER_TEXT), format)
}

/// The structure of `items`, from the cache when it is the history built last time (append-only:
/// same length and same ends), else analysed afresh.
fn structure_for(items: &[Item], dedupe: bool, cache: &mut ReduceCache) -> Arc<structure::Structure> {
    let first = items.first().map_or("", |i| i.id);
    let last = items.last().map_or("", |i| i.id);
    if let Some((len, cached_first, cached_last, cached_dedupe, structure)) = cache.structure.as_mut() {
        if *len == items.len() && cached_first == first && cached_last == last && *cached_dedupe == dedupe {
            return Arc::clone(structure);
        }
        // Appended to since: extend in place when the new messages carry no tool traffic.
        let prefix = *len > 0 && *len < items.len() && items.get(*len - 1).is_some_and(|i| i.id == cached_last.as_str());
        if prefix && cached_first == first && *cached_dedupe == dedupe {
            let from = *len;
            // Unshared between builds, so this extends in place without copying.
            // `extend` changes nothing when it declines.
            if structure::extend(Arc::make_mut(structure), items, from, dedupe) {
                *len = items.len();
                *cached_last = last.to_string();
                return Arc::clone(structure);
            }
        }
    }
    let structure = Arc::new(structure::analyze(items, dedupe));
    cache.structure = Some((items.len(), first.to_string(), last.to_string(), dedupe, Arc::clone(&structure)));
    structure
}

fn build_once(ctx: &Ctx, state: &SummaryState, cache: &mut ReduceCache, allow_summarise: bool) -> Result<Step> {
    let items = ctx.items;
    let options = ctx.options;
    let encoding = ctx.encoding;
    let structure = structure_for(items, options.dedupe_system, cache);
    let mut notes = Vec::new();

    // The summary in force, if it still matches the history.
    let summary = state.current.as_ref().filter(|s| items.get(s.until_index).is_some_and(|item| item.id == s.summarised_until));
    if state.current.is_some() && summary.is_none() {
        notes.push("the stored summary does not match this history and was ignored".to_string());
    }
    let boundary = summary.map_or(0, |s| s.until_index + 1);

    let mut system_plans: Vec<Plan> = Vec::new();
    let mut covered: Vec<usize> = Vec::new();
    let mut active: Vec<usize> = Vec::new();
    for (u, unit) in structure.units.iter().enumerate() {
        if unit.kind == UnitKind::System {
            let mut plan = Plan { unit: u, members: base_members(unit), member_tokens: Vec::new(), tokens: 0, dropped: None, pending: None };
            ctx.plan_tokens(cache, &mut plan)?;
            system_plans.push(plan);
        } else if unit.first < boundary {
            covered.push(u);
        } else {
            active.push(u);
        }
    }
    let system_tokens: usize = system_plans.iter().map(|p| p.tokens).sum();

    // Budget arithmetic.
    let summary_msgs: Vec<Message> = summary.map(|s| summary_messages(options, s)).unwrap_or_default();
    let mut summary_tokens: usize = summary_msgs.iter().map(|m| made_up_tokens(ctx, cache, m)).sum();
    // Reserved always: Anthropic needs a user message first, and no provider takes an empty list.
    let placeholder_tokens = made_up_tokens(ctx, cache, &placeholder(options.format));
    let mut budget_report = None;
    let mut recent_cap = usize::MAX;
    if let Some(budget) = &options.budget {
        let max = budget.max_tokens();
        let floor = system_tokens + REPLY_PRIMING + placeholder_tokens;
        if floor > max {
            return Err(Error::invalid_argument(format!(
                "the budget of {max} tokens ({} × {}) is too small for the system prompt alone ({system_tokens} tokens)",
                budget.context_window, budget.target_ratio
            )));
        }
        let avail = max - floor;
        let summary_budget = (avail as f64 * budget.summary_ratio).floor() as usize;
        let recent_budget = (avail as f64 * budget.recent_ratio).floor() as usize;
        if summary_tokens > avail {
            notes.push(format!("the summary ({summary_tokens} tokens) does not fit the budget and was left out"));
            summary_tokens = 0;
        }
        recent_cap = recent_budget.min(avail - summary_tokens);
        budget_report = Some(BudgetReport { max_tokens: max, system_tokens, summary_budget, recent_budget });
    }
    let summary_in_context = summary.is_some() && (summary_tokens > 0 || summary_msgs.is_empty());

    // Recent steps kept whole: the ordinal (in `active`) where the last N steps begin.
    let mut tail_start = 0usize;
    let mut steps_seen = 0usize;
    for (o, &u) in active.iter().enumerate().rev() {
        if structure.units.get(u).is_some_and(|unit| unit.is_step_like()) {
            steps_seen += 1;
            if steps_seen >= options.keep_recent_steps.max(1) {
                tail_start = o;
                break;
            }
        }
    }
    if steps_seen < options.keep_recent_steps.max(1) {
        tail_start = 0;
    }

    // Seed 001: nothing is optimised up to `min_messages` messages, if they fit.
    let active_messages: usize = {
        let mut msgs: Vec<usize> = active.iter().filter_map(|u| structure.units.get(*u)).flat_map(|unit| unit.members.iter().map(|m| m.msg)).collect();
        msgs.sort_unstable();
        msgs.dedup();
        msgs.len()
    };
    let unreduced: usize = {
        let mut total = 0usize;
        for &u in &active {
            if let Some(unit) = structure.units.get(u) {
                for member in &unit.members {
                    total += match member.parts {
                        None => ctx.item(member.msg)?.tokens as usize,
                        Some(_) => {
                            let plan = MemberPlan { msg: member.msg, parts: member.parts.clone(), replace: Vec::new(), text_only: false };
                            ctx.member_tokens(cache, &plan)? as usize
                        }
                    };
                }
            }
        }
        total
    };
    let optimise = match &options.budget {
        Some(budget) => !(active_messages <= budget.min_messages && unreduced <= recent_cap),
        None => true,
    };

    // Thinning decisions (seed 004) for units before the recent steps.
    let mut thinning: HashMap<usize, Option<MemberPlan>> = HashMap::new(); // unit -> kept text-only member, or dropped
    if options.thin && optimise {
        let mut last_user: HashMap<usize, usize> = HashMap::new();
        let mut last_text: HashMap<usize, (usize, MemberPlan)> = HashMap::new();
        for &u in active.iter().take(tail_start) {
            let Some(unit) = structure.units.get(u) else { continue };
            match unit.kind {
                UnitKind::User => {
                    last_user.insert(unit.turn, u);
                }
                UnitKind::Assistant | UnitKind::Step => {
                    for member in base_members(unit).into_iter().rev() {
                        let message = ctx.item(member.msg)?.message;
                        if message.role == Role::Assistant && has_text(message, &member) {
                            let text_parts: Vec<usize> = part_indices(message, &member)
                                .into_iter()
                                .filter(|j| matches!(message.content.parts.get(*j), Some(Part::Text { .. })))
                                .collect();
                            let whole = unit.kind == UnitKind::Assistant && unit.members.len() == 1 && text_parts.len() == message.content.parts.len();
                            let plan = MemberPlan { msg: member.msg, parts: Some(text_parts), replace: Vec::new(), text_only: !whole };
                            let plan = if whole { MemberPlan { parts: None, text_only: false, ..plan } } else { plan };
                            last_text.insert(unit.turn, (u, plan));
                            break;
                        }
                    }
                }
                UnitKind::System => {}
            }
        }
        for &u in active.iter().take(tail_start) {
            let Some(unit) = structure.units.get(u) else { continue };
            let keep = match unit.kind {
                UnitKind::User => (last_user.get(&unit.turn) == Some(&u)).then(|| base_members(unit).into_iter().next()).flatten(),
                UnitKind::Assistant | UnitKind::Step => last_text.get(&unit.turn).filter(|(w, _)| *w == u).map(|(_, m)| m.clone()),
                UnitKind::System => continue,
            };
            thinning.insert(u, keep);
        }
    }

    // Plans for the active units, with reductions. With a budget and no compaction in sight,
    // reductions wait for the selection (newest first), which stops once the budget is full:
    // a warm build then costs what it keeps, not the whole history.
    let could_summarise = allow_summarise
        && state.in_progress.is_none()
        && options.summary.as_ref().is_some_and(|s| {
            system_tokens + summary_tokens + unreduced + REPLY_PRIMING > s.trigger_tokens as usize
                || (options.budget.is_some() && unreduced > recent_cap)
        });
    let lazy = options.budget.is_some() && optimise && !could_summarise;
    let last_ordinal = active.len().saturating_sub(1);
    let mut plans: Vec<Plan> = Vec::with_capacity(active.len());
    for (o, &u) in active.iter().enumerate() {
        let Some(unit) = structure.units.get(u) else { continue };
        let mut plan = Plan { unit: u, members: base_members(unit), member_tokens: Vec::new(), tokens: 0, dropped: None, pending: None };
        if let Some(decision) = thinning.get(&u) {
            match decision {
                Some(member) => plan.members = vec![member.clone()],
                None => plan.dropped = Some(DropReason::Thinning),
            }
        }
        if optimise && unit.kind == UnitKind::Step && plan.dropped.is_none() && !thinning.contains_key(&u) {
            // Seed 002: a file read becomes a digest in a later turn; seed 004: never within
            // the last N steps.
            let older = o < tail_start && unit.turn < structure.last_turn;
            let fresh = o == last_ordinal;
            plan.pending = Some((older, !fresh));
            if !lazy {
                apply_reductions(ctx, cache, &structure, &mut plan)?;
            }
        }
        // Lazily, a unit is counted when the selection reaches it (most never are).
        if !lazy {
            ctx.plan_tokens(cache, &mut plan)?;
        }
        plans.push(plan);
    }

    // Summary compaction.
    let mut summary_request = None;
    if let (Some(summary_options), true, None) = (&options.summary, allow_summarise, &state.in_progress) {
        let kept_tokens: usize = plans.iter().filter(|p| p.dropped.is_none()).map(|p| p.tokens).sum();
        let view_tokens = system_tokens + summary_tokens + kept_tokens + REPLY_PRIMING;
        let over_trigger = view_tokens > summary_options.trigger_tokens as usize;
        let overflow = options.budget.is_some() && kept_tokens > recent_cap;
        let new_tokens: u64 = unreduced as u64;
        let gate = match summary {
            None => active_messages >= summary_options.min_messages,
            Some(s) => {
                active_messages >= summary_options.min_new_messages
                    && new_tokens as f64 > summary_options.new_token_ratio * f64::from(s.tokens)
            }
        };
        if (over_trigger || overflow) && gate {
            // The tail that stays: the last N steps whole (seed 004, N constant), and further
            // back while the tail plus the summary stay below the target (seed 001).
            let max_summary = match &budget_report {
                Some(b) => (summary_options.max_tokens as usize).min(b.summary_budget.saturating_sub(summary_overhead(ctx, summary_options))),
                None => summary_options.max_tokens as usize,
            };
            let target = (summary_options.target_tokens as usize).saturating_sub(max_summary + system_tokens);
            let mut cut = plans.len();
            let mut acc = 0usize;
            let mut steps = 0usize;
            for (o, plan) in plans.iter().enumerate().rev() {
                let step_like = structure.units.get(plan.unit).is_some_and(|unit| unit.is_step_like());
                let tokens = if plan.dropped.is_some() { 0 } else { plan.tokens };
                let forced = steps < options.keep_recent_steps.max(1);
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
            let starts_with_step = plans.get(cut).and_then(|p| structure.units.get(p.unit)).is_some_and(|u| u.is_step_like());
            let user_before = cut.checked_sub(1).and_then(|c| plans.get(c)).and_then(|p| structure.units.get(p.unit)).is_some_and(|u| u.kind == UnitKind::User);
            if starts_with_step && user_before {
                cut -= 1;
            }
            if cut > 0 && max_summary >= 16 {
                let request = summary_request_for(ctx, cache, &structure, &active, &plans, cut, &system_plans, summary, summary_options, state, max_summary as u32)?;
                match summary_options.summariser {
                    Summariser::External => summary_request = Some(request),
                    Summariser::Extractive => {
                        let covered_messages = covered_originals(ctx, &structure, active.get(..cut).unwrap_or(&[]))?;
                        let text = summary::extractive(&covered_messages, summary.map(|s| s.text.as_str()), encoding, request.max_tokens);
                        let tokens = summary::validate_summary(&text, encoding, request.max_tokens, &[])?;
                        let created_at = options.now.clone().unwrap_or_else(|| format!("seq:{}", state.generation + 1));
                        let record = summary::record(&request.pending(), text, tokens, created_at, SummarySource::Extractive);
                        return Ok(Step::Summarise { record });
                    }
                }
            }
        }
    } else if state.in_progress.is_some() {
        notes.push("a compaction is in progress; no new summary was requested".to_string());
    }

    // Count window (seed 000): units with a message among the last N, chains whole.
    if let Some(n) = options.max_messages {
        let mut msgs: Vec<usize> = plans.iter().filter(|p| p.dropped.is_none()).flat_map(|p| p.members.iter().map(|m| m.msg)).collect();
        msgs.sort_unstable();
        msgs.dedup();
        if msgs.len() > n {
            let cutoff = msgs.get(msgs.len() - n).copied().unwrap_or(0);
            for plan in plans.iter_mut().filter(|p| p.dropped.is_none()) {
                if plan.members.iter().all(|m| m.msg < cutoff) {
                    plan.dropped = Some(DropReason::Window);
                }
            }
        }
    }

    // Token budget (seed 001): newest first, units whole or skipped.
    if options.budget.is_some() && optimise {
        let mut remaining = recent_cap;
        for plan in plans.iter_mut().rev().filter(|p| p.dropped.is_none()) {
            // Full to 95%: what is left would be scattered fragments of long ago.
            if remaining.saturating_mul(20) < recent_cap {
                plan.dropped = Some(DropReason::Budget);
                continue;
            }
            if plan.pending.is_some() || lazy {
                apply_reductions(ctx, cache, &structure, plan)?;
                ctx.plan_tokens(cache, plan)?;
            }
            if plan.tokens <= remaining {
                remaining -= plan.tokens;
            } else {
                plan.dropped = Some(DropReason::Budget);
            }
        }
        let newest_dropped = plans.last().is_some_and(|p| p.dropped == Some(DropReason::Budget));
        if newest_dropped {
            notes.push("the newest message does not fit the recent budget".to_string());
        }
    }

    assemble(ctx, cache, &structure, system_plans, plans, &covered, summary, summary_msgs, summary_in_context, summary_tokens, budget_report, notes, summary_request)
}

fn summary_overhead(ctx: &Ctx, options: &SummaryOptions) -> usize {
    // The framing around the summary text: the exchange's prompt, or the system message's header.
    let prompt = Message::new(Role::User, Content::text(options.prompt()), ctx.options.format);
    tokens::count_message(ctx.encoding, &prompt).total as usize + 40
}

/// The covered units' messages as stored (repaired, unreduced), for the extractive summariser.
fn covered_originals(ctx: &Ctx, structure: &structure::Structure, units: &[usize]) -> Result<Vec<Arc<Message>>> {
    let mut members: Vec<MemberPlan> = Vec::new();
    for &u in units {
        if let Some(unit) = structure.units.get(u) {
            members.extend(base_members(unit));
        }
    }
    members.sort_by_key(|m| m.msg);
    let mut cache = ReduceCache::default();
    members.iter().map(|m| ctx.materialize(&mut cache, m)).collect()
}

#[allow(clippy::too_many_arguments)]
fn summary_request_for(
    ctx: &Ctx,
    cache: &mut ReduceCache,
    structure: &structure::Structure,
    active: &[usize],
    plans: &[Plan],
    cut: usize,
    system_plans: &[Plan],
    summary: Option<&SummaryRecord>,
    options: &SummaryOptions,
    state: &SummaryState,
    max_tokens: u32,
) -> Result<SummaryRequest> {
    let tail_first = plans.get(cut).and_then(|p| structure.units.get(p.unit)).map_or(ctx.items.len(), |unit| unit.first);
    let until_index = tail_first.checked_sub(1).ok_or_else(|| Error::internal("summary cut before the first message"))?;
    let until = ctx.item(until_index)?.id.to_string();
    // The messages to summarise: compressed where long, digests not applied (the summariser
    // should see what was read), in history order.
    let mut members: Vec<MemberPlan> = Vec::new();
    for &u in active.iter().take(cut) {
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
    let message_ids: Vec<String> = ids.iter().filter_map(|i| ctx.items.get(*i)).map(|item| item.id.to_string()).collect();
    let mut messages: Vec<Arc<Message>> = Vec::new();
    for plan in system_plans {
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
    if ctx.options.format == Format::Anthropic && first_non_system.is_some_and(|i| to_send.get(i).is_some_and(|m| m.role == Role::Assistant)) {
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

#[allow(clippy::too_many_arguments)]
fn assemble(
    ctx: &Ctx,
    cache: &mut ReduceCache,
    structure: &structure::Structure,
    system_plans: Vec<Plan>,
    plans: Vec<Plan>,
    covered: &[usize],
    summary: Option<&SummaryRecord>,
    summary_msgs: Vec<Message>,
    summary_in_context: bool,
    summary_tokens: usize,
    budget_report: Option<BudgetReport>,
    mut notes: Vec<String>,
    summary_request: Option<SummaryRequest>,
) -> Result<Step> {
    let items = ctx.items;
    let format = ctx.options.format;
    // Kept units in history order, system units where they were.
    let mut kept: Vec<(&Plan, Section)> = system_plans.iter().map(|p| (p, Section::System)).collect();
    kept.extend(plans.iter().filter(|p| p.dropped.is_none()).map(|p| (p, Section::Recent)));
    kept.sort_by_key(|(p, _)| structure.units.get(p.unit).map_or(usize::MAX, |u| u.first));

    let mut summary_msgs = if summary_in_context { summary_msgs } else { Vec::new() };
    let mut tokens = TokensByPart::default();
    if summary_in_context {
        tokens.summary = summary_tokens;
    }
    let memory_use = match (&ctx.options.memory, ctx.notes.is_empty()) {
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
            let room = budget_report.map_or(usize::MAX, |b| b.summary_budget.saturating_sub(tokens.summary));
            let room = options.max_tokens.map_or(room, |m| room.min(m as usize));
            let in_context = |i: usize| present.get(i).copied().unwrap_or(false);
            memory::turn_summaries(ctx.notes, in_context, room, ctx.encoding, format, &mut cache.memory_lines).map(|(message, used)| {
                summary_msgs.extend(message);
                tokens.summary += used.tokens;
                used
            })
        }
        _ => None,
    };
    let mut messages: Vec<ContextMessage> = Vec::new();
    let mut summary_placed = summary_msgs.is_empty();
    let mut after: HashMap<usize, (Action, u32)> = HashMap::new();
    for (plan, section) in &kept {
        if *section == Section::Recent && !summary_placed {
            for m in &summary_msgs {
                messages.push(ContextMessage { message: Arc::new(m.clone()), sources: Vec::new(), section: Section::Summary, action: Action::Kept });
            }
            summary_placed = true;
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
    if !summary_placed {
        for m in &summary_msgs {
            messages.push(ContextMessage { message: Arc::new(m.clone()), sources: Vec::new(), section: Section::Summary, action: Action::Kept });
        }
    }

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
            messages.insert(at, ContextMessage { message: Arc::new(message), sources: Vec::new(), section: Section::Recent, action: Action::Kept });
            placeholder_used = true;
            notes.push("a placeholder user message was put first: the provider needs one".to_string());
        }
    }
    tokens.total = tokens.system + tokens.summary + tokens.recent + REPLY_PRIMING;

    // The receipt, one entry per stored message.
    let mut fate: Vec<(Action, Option<DropReason>)> = vec![(Action::Dropped, Some(DropReason::Repair)); items.len()];
    let covered_set: Vec<usize> = covered.to_vec();
    for &u in &covered_set {
        if let Some(unit) = structure.units.get(u) {
            for m in &unit.members {
                if let Some(slot) = fate.get_mut(m.msg) {
                    *slot = (Action::Summarised, None);
                }
            }
        }
    }
    for plan in &plans {
        if let Some(reason) = plan.dropped {
            let unit_members = structure.units.get(plan.unit).map_or(&[][..], |u| u.members.as_slice());
            for m in unit_members {
                if let Some(slot) = fate.get_mut(m.msg) {
                    if slot.0 == Action::Dropped {
                        *slot = (Action::Dropped, Some(reason));
                    }
                }
            }
        } else if let Some(unit) = structure.units.get(plan.unit) {
            // Members of a kept unit that thinning left out.
            for m in &unit.members {
                if !plan.members.iter().any(|p| p.msg == m.msg) {
                    if let Some(slot) = fate.get_mut(m.msg) {
                        if slot.0 == Action::Dropped {
                            *slot = (Action::Dropped, Some(DropReason::Thinning));
                        }
                    }
                }
            }
        }
    }
    for (msg, (action, _)) in &after {
        if let Some(slot) = fate.get_mut(*msg) {
            *slot = (*action, None);
        }
    }
    let fates: Vec<Fate> = items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let (action, reason) = fate.get(i).copied().unwrap_or((Action::Dropped, Some(DropReason::Repair)));
            Fate { action, reason, tokens_before: item.tokens, tokens_after: after.get(&i).map_or(0, |(_, n)| *n) }
        })
        .collect();
    let tokens_before = items.iter().map(|i| i.tokens as usize).sum::<usize>() + REPLY_PRIMING;
    let within_budget = budget_report.is_none_or(|b| tokens.total <= b.max_tokens);
    let receipt = Receipt {
        tokens_before,
        tokens_after: tokens.total,
        messages_before: items.len(),
        messages_after: messages.len(),
        by_part: tokens,
        budget: budget_report,
        within_budget,
        runs: receipt_runs(items, &fates),
        fates,
        repairs: structure.repairs.clone(),
        summary: summary.filter(|_| summary_in_context).map(|s| SummaryUse {
            request_id: s.request_id.clone(),
            summarised_until: s.summarised_until.clone(),
            tokens: s.tokens,
            fresh: false,
        }),
        memory: memory_use,
        placeholder: placeholder_used,
        notes,
        calibration: None,
    };
    let context = CompactedContext { format, messages, tokens, receipt };
    Ok(Step::Done(Box::new(BuildOutcome { context, summary_request, new_summary: None })))
}
