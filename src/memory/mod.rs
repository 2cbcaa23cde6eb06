//! The optional memory module: a store of per-turn snapshots of the workspace the
//! agent rendered (`fullContext`) with their summaries and insights, the cumulative summary
//! (`[Turn 1] …`) for the prompt, keyword search, and `recall_context`.

pub mod recall;
pub mod search;

use std::borrow::Borrow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::extract::{extract, squash};
use crate::message::Message;
use crate::tokens::Encoding;
use crate::util::ids::fnv1a;
use search::{Document, DocumentKind, SearchIndex};

pub const EXPORT_FORMAT: &str = "context-compactor/memory";
pub const EXPORT_VERSION: u32 = 1;
/// Snapshots above this size are refused unless the limit is raised: a workspace rendering
/// that large belongs in an artifact store, not in every export.
pub const DEFAULT_MAX_SNAPSHOT_CHARS: usize = 1 << 20;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ContextSnapshot {
    pub id: String,
    pub turn_number: u32,
    pub full_context: String,
    pub summary: String,
    /// The conversation messages of this turn (first and last id), if it had any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub messages: Option<MessageRange>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MessageRange {
    pub from: String,
    pub until: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MemorySummary {
    pub id: String,
    pub context_id: String,
    pub turn_number: u32,
    pub summary: String,
    #[serde(default)]
    pub insights: Vec<String>,
}

/// The versioned JSON form of a memory store.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MemoryExport {
    #[cfg_attr(test, ts(type = "\"context-compactor/memory\""))]
    pub format: String,
    #[cfg_attr(test, ts(type = "1"))]
    pub version: u32,
    pub contexts: Vec<ContextSnapshot>,
    pub summaries: Vec<MemorySummary>,
}

#[derive(Clone, Debug)]
pub struct MemoryStore {
    /// The recorded turns, in increasing order: a turn is recorded by one push (see
    /// `record_turn`), so a wasm trap never leaves half of one.
    turns: Vec<Turn>,
    /// Derived from the turns and the messages the session hands it.
    index: SearchIndex,
    max_snapshot_chars: usize,
}

/// One recorded turn: its snapshot and its summary.
#[derive(Clone, Debug)]
struct Turn {
    snapshot: ContextSnapshot,
    summary: MemorySummary,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_SNAPSHOT_CHARS)
    }
}

/// The id a snapshot of `full_context` gets at turn `turn_number`.
fn snapshot_id(turn_number: u32, full_context: &str) -> String {
    format!("ctx_{turn_number}_{:08x}", fnv1a(&[full_context]))
}

impl MemoryStore {
    pub fn new(max_snapshot_chars: usize) -> Self {
        MemoryStore { turns: Vec::new(), index: SearchIndex::default(), max_snapshot_chars }
    }

    pub fn turns(&self) -> impl DoubleEndedIterator<Item = u32> + '_ {
        self.turns.iter().map(|t| t.snapshot.turn_number)
    }

    pub fn last_turn(&self) -> Option<u32> {
        self.turns.last().map(|t| t.snapshot.turn_number)
    }

    pub fn contexts(&self) -> impl DoubleEndedIterator<Item = &ContextSnapshot> {
        self.turns.iter().map(|t| &t.snapshot)
    }

    pub fn summaries(&self) -> impl DoubleEndedIterator<Item = &MemorySummary> {
        self.turns.iter().map(|t| &t.summary)
    }

    pub fn max_snapshot_chars(&self) -> usize {
        self.max_snapshot_chars
    }

    fn turn(&self, turn_number: u32) -> Option<&Turn> {
        let at = self.turns.binary_search_by_key(&turn_number, |t| t.snapshot.turn_number).ok()?;
        self.turns.get(at)
    }

    pub fn context(&self, turn_number: u32) -> Option<&ContextSnapshot> {
        self.turn(turn_number).map(|t| &t.snapshot)
    }

    pub fn summary(&self, turn_number: u32) -> Option<&MemorySummary> {
        self.turn(turn_number).map(|t| &t.summary)
    }

    /// Stores one turn: the workspace the agent rendered, its summary and insights.
    /// Turns are recorded once each, in increasing order.
    pub fn record_turn(
        &mut self,
        turn_number: u32,
        full_context: String,
        summary: String,
        insights: Vec<String>,
        messages: Option<MessageRange>,
    ) -> Result<&ContextSnapshot> {
        let id = snapshot_id(turn_number, &full_context);
        let snapshot =
            ContextSnapshot { id: id.clone(), turn_number, full_context, summary: summary.clone(), messages };
        let summary = MemorySummary { id: format!("sum_{id}"), context_id: id, turn_number, summary, insights };
        let turn = Turn { snapshot, summary };
        self.check(self.last_turn(), &turn)?;
        self.turns
            .try_reserve(1)
            .map_err(|_| Error::out_of_memory("the memory's turns", self.turns.len() * std::mem::size_of::<Turn>()))?;
        self.turns.push(turn);
        let at = self.turns.len() - 1;
        self.index_turn(at);
        self.turns.get(at).map(|t| &t.snapshot).ok_or_else(|| Error::internal("a recorded turn vanished"))
    }

    /// Everything a turn must be, checked the same for a turn recorded now and one restored
    /// from an export (`after`: the turn before it, if any): numbered after the last, from 1;
    /// a snapshot within the limit; a summary that is not empty; the ids and copies that
    /// `record_turn` derives, as it derives them.
    fn check(&self, after: Option<u32>, turn: &Turn) -> Result<()> {
        let Turn { snapshot, summary } = turn;
        let n = snapshot.turn_number;
        if n == 0 {
            return Err(Error::invalid_argument("turn numbers start at 1"));
        }
        if let Some(last) = after.filter(|last| n <= *last) {
            return Err(Error::invalid_argument(format!(
                "turn {n} is not after the last recorded turn ({last}): turns are recorded once, in order"
            )));
        }
        let size = snapshot.full_context.chars().count();
        if size > self.max_snapshot_chars {
            return Err(Error::invalid_argument(format!(
                "the snapshot of turn {n} has {size} characters, over the limit of {}",
                self.max_snapshot_chars
            )));
        }
        if summary.summary.trim().is_empty() {
            return Err(Error::invalid_argument(format!("the summary of turn {n} is empty")));
        }
        let id = snapshot_id(n, &snapshot.full_context);
        if snapshot.id != id {
            return Err(Error::invalid_argument(format!(
                "the snapshot of turn {n} is called {:?}, not {id:?} as its text makes it",
                snapshot.id
            )));
        }
        if summary.turn_number != n || summary.context_id != id || summary.id != format!("sum_{id}") {
            return Err(Error::invalid_argument(format!(
                "summary {} (turn {}) points at {}, not at {id} of turn {n}",
                summary.id, summary.turn_number, summary.context_id
            )));
        }
        if snapshot.summary != summary.summary {
            return Err(Error::invalid_argument(format!("the snapshot and the summary of turn {n} differ")));
        }
        if let Some(range) = &snapshot.messages {
            if range.from.is_empty() || range.until.is_empty() {
                return Err(Error::invalid_argument(format!("turn {n} covers a message range without ids")));
            }
        }
        Ok(())
    }

    /// Adds turn `at`'s snapshot and summary to the search index.
    fn index_turn(&mut self, at: usize) {
        let Some(Turn { snapshot, summary }) = self.turns.get(at) else { return };
        let turn = Some(snapshot.turn_number);
        self.index.add(
            Document { kind: DocumentKind::Snapshot, id: snapshot.id.clone(), turn_number: turn },
            &snapshot.full_context,
        );
        let summary_text = std::iter::once(summary.summary.as_str())
            .chain(summary.insights.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join("\n");
        self.index
            .add(Document { kind: DocumentKind::Summary, id: summary.id.clone(), turn_number: turn }, &summary_text);
    }

    /// After a wasm trap interrupted a call on this store's session: the search index may have
    /// been caught mid-update, so it is made again from the turns (the old one is leaked, never
    /// dropped); the session indexes its messages again (`Session::sync_index`).
    pub fn recover_after_trap(&mut self) {
        let mut fresh = MemoryStore { turns: Vec::new(), index: SearchIndex::default(), max_snapshot_chars: 0 };
        std::mem::swap(&mut fresh.turns, &mut self.turns);
        for at in 0..fresh.turns.len() {
            fresh.index_turn(at);
        }
        std::mem::swap(&mut fresh.turns, &mut self.turns);
        std::mem::forget(std::mem::replace(&mut self.index, fresh.index));
    }

    /// Makes a message of the conversation log findable (dropped ones included).
    /// The turn of a message is not stored with it: recall asks the log (see `recall::Log`).
    pub fn index_message(&mut self, id: &str, text: &str) {
        self.index.add(Document { kind: DocumentKind::Message, id: id.to_string(), turn_number: None }, text);
    }

    pub fn index(&self) -> &SearchIndex {
        &self.index
    }

    /// `[Turn 1] …` lines, the newest first when they do not all fit: at most `max_tokens`,
    /// counted exactly, with a line naming the omitted turns.
    pub fn cumulative_summary(&self, encoding: Encoding, max_tokens: usize) -> String {
        let lines: Vec<(u32, String)> =
            self.summaries().map(|s| (s.turn_number, turn_line(s.turn_number, &s.summary))).collect();
        let compose = |kept: usize| {
            let (omitted, kept) = lines.split_at(lines.len() - kept);
            let mut out = String::new();
            if let (Some((first, _)), Some((last, _))) = (omitted.first(), omitted.last()) {
                let turns = if first == last { format!("Turn {first}") } else { format!("Turns {first}–{last}") };
                out.push_str(&format!("[{turns} omitted for space: recall_context brings them back]\n"));
            }
            out.push_str(&kept.iter().map(|(_, line)| line.as_str()).collect::<Vec<_>>().join("\n"));
            out
        };
        // Chosen by each line's own count, then trimmed until the whole text fits.
        let mut kept = 0;
        let mut used = 0;
        for (_, line) in lines.iter().rev() {
            used += encoding.count(line) + 1;
            if used > max_tokens {
                break;
            }
            kept += 1;
        }
        loop {
            let out = compose(kept);
            if encoding.count(&out) <= max_tokens {
                return out;
            }
            if kept == 0 {
                return String::new();
            }
            kept -= 1;
        }
    }

    pub fn export(&self) -> MemoryExport {
        MemoryExport {
            format: EXPORT_FORMAT.to_string(),
            version: EXPORT_VERSION,
            contexts: self.contexts().cloned().collect(),
            summaries: self.summaries().cloned().collect(),
        }
    }

    /// Replaces the store with an export; on any error the store is left as it was.
    /// Message documents are not part of a memory export: the session re-indexes its log.
    pub fn import(&mut self, value: Value) -> Result<()> {
        crate::util::versioned::check_header(&value, EXPORT_FORMAT, EXPORT_VERSION, "memory")?;
        let export: MemoryExport = crate::error::from_json(value, "corrupt memory export")?;
        self.restore(export)
    }

    /// Replaces the store with an export already read; on any error the
    /// store is left as it was.
    pub fn restore(&mut self, export: MemoryExport) -> Result<()> {
        crate::util::versioned::check(
            Some(&export.format),
            Some(u64::from(export.version)),
            EXPORT_FORMAT,
            EXPORT_VERSION,
            "memory",
        )?;
        let mut fresh = MemoryStore::new(self.max_snapshot_chars);
        let mut summaries: crate::util::fasthash::FastMap<u32, MemorySummary> = Default::default();
        for summary in export.summaries {
            if let Some(twin) = summaries.insert(summary.turn_number, summary) {
                return Err(Error::invalid_argument(format!(
                    "corrupt memory export: turn {} has more than one summary",
                    twin.turn_number
                )));
            }
        }
        for snapshot in export.contexts {
            let n = snapshot.turn_number;
            let summary = summaries
                .remove(&n)
                .ok_or_else(|| Error::invalid_argument(format!("corrupt memory export: turn {n} has no summary")))?;
            let turn = Turn { snapshot, summary };
            fresh.check(fresh.last_turn(), &turn).map_err(corrupt_memory)?;
            fresh.turns.push(turn);
            fresh.index_turn(fresh.turns.len() - 1);
        }
        if let Some(orphan) = summaries.values().min_by_key(|s| s.turn_number) {
            return Err(Error::invalid_argument(format!(
                "corrupt memory export: summary {} belongs to no snapshot",
                orphan.id
            )));
        }
        // One replace: the old store is dropped only once the new one is in place.
        drop(std::mem::replace(self, fresh));
        Ok(())
    }
}

fn corrupt_memory(error: Error) -> Error {
    Error::invalid_argument(format!("corrupt memory export: {}", error.message))
}

/// The line for a turn in the cumulative summary (`[Turn N] summary`).
pub fn turn_line(turn: u32, summary: &str) -> String {
    format!("[Turn {turn}] {summary}")
}

/// The built-in summary of a turn, from its messages: what was asked, what the assistant
/// answered, which tools it used; the insights are the files touched and the errors met. A turn
/// without messages is summarised by the first line of its workspace.
pub fn turn_summary<M: Borrow<Message>>(messages: &[M], workspace_context: &str) -> (String, Vec<String>) {
    let found = extract(messages, None);
    let mut parts = Vec::new();
    if !found.user_messages.is_empty() {
        parts.push(format!(
            "asked: {}",
            squash(&found.user_messages.iter().map(String::as_str).collect::<Vec<_>>().join(" / "), 240)
        ));
    }
    if let Some(answer) = &found.last_text {
        parts.push(format!("answered: {}", squash(answer, 240)));
    }
    if !found.tools.is_empty() {
        let tools: Vec<String> =
            found.tools.iter().map(|(name, n)| if *n > 1 { format!("{name}×{n}") } else { name.clone() }).collect();
        parts.push(format!("tools: {}", tools.join(", ")));
    }
    if parts.is_empty() {
        let first_line = workspace_context.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("nothing recorded");
        parts.push(format!("workspace: {}", squash(first_line, 200)));
    }
    let insights = found
        .files
        .iter()
        .map(|f| format!("file: {} ({})", f.path, f.ops_text()))
        .chain(found.errors.iter().map(|e| format!("error: {}", e.text())))
        .chain(found.pending.iter().map(|t| format!("todo: {t}")))
        .take(12)
        .collect();
    (parts.join("; "), insights)
}

/// Longest transcript a turn-summary request carries; longer turns keep a share per message.
const TRANSCRIPT_CHARS: usize = 24_000;

/// The request a plugged-in summariser answers for one turn: the workspace and the turn's
/// messages as a transcript, then the instruction.
pub fn turn_prompt<M: Borrow<Message>>(turn_number: u32, messages: &[M], workspace_context: &str) -> String {
    let per_message = (TRANSCRIPT_CHARS / messages.len().max(1)).max(200);
    let mut out = format!(
        "Workspace at turn {turn_number}:\n{}\n\nConversation of turn {turn_number}:\n",
        squash(workspace_context, 4_000)
    );
    for message in messages {
        let message: &Message = message.borrow();
        out.push_str(&format!("[{}] {}\n", message.role.as_str(), squash(&message.readable_text(), per_message)));
    }
    out.push_str(&format!(
        "\nSummarise turn {turn_number} of this agent's work in one or two sentences: what was asked, what was done, what was found. Reply with the summary only."
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_003_store() -> MemoryStore {
        let mut store = MemoryStore::default();
        store
            .record_turn(
                1,
                "Files: [main.ts, utils.ts, config.ts]\nState: { initialized: true }".into(),
                "分析了代码库结构".into(),
                vec!["3个模块".into(), "main.ts是入口".into()],
                None,
            )
            .unwrap();
        store
            .record_turn(
                2,
                "Files: [main.ts, utils.ts, config.ts, benchmark.ts]\nState: { benchmarked: true }".into(),
                "发现性能瓶颈".into(),
                vec![],
                None,
            )
            .unwrap();
        store
            .record_turn(
                3,
                "Content of utils.ts: ... (已优化)\nState: { optimized: true }".into(),
                "实施了优化".into(),
                vec![],
                None,
            )
            .unwrap();
        store
    }

    #[test]
    fn the_cumulative_summary_reads_like_seed_003() {
        let store = seed_003_store();
        assert_eq!(
            store.cumulative_summary(Encoding::O200kBase, 1000),
            "[Turn 1] 分析了代码库结构\n[Turn 2] 发现性能瓶颈\n[Turn 3] 实施了优化"
        );
        let mut seen_tight = false;
        for max in 0..60 {
            let text = store.cumulative_summary(Encoding::O200kBase, max);
            assert!(Encoding::O200kBase.count(&text) <= max, "{max}: {text}");
            seen_tight |= text == "[Turns 1–2 omitted for space: recall_context brings them back]\n[Turn 3] 实施了优化";
        }
        assert!(seen_tight);
    }

    #[test]
    fn turns_are_recorded_once_in_order_and_within_limits() {
        let mut store = seed_003_store();
        assert!(store.record_turn(3, "x".into(), "again".into(), vec![], None).is_err());
        assert!(store.record_turn(0, "x".into(), "zero".into(), vec![], None).is_err());
        assert!(store.record_turn(4, "x".into(), "  ".into(), vec![], None).is_err());
        let mut small = MemoryStore::new(10);
        let error = small.record_turn(1, "x".repeat(11), "big".into(), vec![], None).unwrap_err();
        assert!(error.message.contains("over the limit of 10"), "{error}");
        assert_eq!(store.turns().collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn export_then_import_is_lossless_and_bad_imports_change_nothing() {
        let store = seed_003_store();
        let exported = serde_json::to_value(store.export()).unwrap();
        let mut other = MemoryStore::default();
        other.import(exported.clone()).unwrap();
        assert_eq!(serde_json::to_value(other.export()).unwrap(), exported);
        assert_eq!(other.index().len(), store.index().len());

        let mut newer = exported.clone();
        newer["version"] = 2.into();
        assert!(other.import(newer).unwrap_err().message.contains("newer than this library"));
        let mut truncated = exported.clone();
        truncated["summaries"].as_array_mut().unwrap().pop();
        assert!(other.import(truncated).unwrap_err().message.contains("has no summary"));
        // Without the snapshots of turns 2 and 3, the error names the first summary left over.
        let mut orphans = exported.clone();
        orphans["contexts"].as_array_mut().unwrap().truncate(1);
        let first_orphan = exported["summaries"][1]["id"].as_str().unwrap().to_owned();
        let error = other.import(orphans).unwrap_err().into_details().message;
        assert!(error.contains(&format!("summary {first_orphan} belongs to no snapshot")), "{error}");
        assert!(other.import(serde_json::json!({"format": "something-else"})).is_err());
        assert!(other.import(serde_json::json!("{not json")).is_err());
        assert_eq!(serde_json::to_value(other.export()).unwrap(), exported, "failed imports changed nothing");
    }
}
