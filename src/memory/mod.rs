//! The optional MemoryModule of seed 003: a store of per-turn snapshots of the workspace the
//! agent rendered (`fullContext`) with their summaries and insights, the cumulative summary
//! (`[Turn 1] …`) for the prompt, keyword search, and `recall_context`.

pub mod recall;
pub mod search;

use std::borrow::Borrow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::extract::{extract, squash};
use crate::ids::fnv1a;
use crate::message::Message;
use crate::tokens::Encoding;
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
    contexts: BTreeMap<u32, ContextSnapshot>,
    summaries: BTreeMap<u32, MemorySummary>,
    index: SearchIndex,
    max_snapshot_chars: usize,
}

impl Default for MemoryStore {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_SNAPSHOT_CHARS)
    }
}

impl MemoryStore {
    pub fn new(max_snapshot_chars: usize) -> Self {
        MemoryStore {
            contexts: BTreeMap::new(),
            summaries: BTreeMap::new(),
            index: SearchIndex::default(),
            max_snapshot_chars,
        }
    }

    pub fn turns(&self) -> impl Iterator<Item = u32> + '_ {
        self.contexts.keys().copied()
    }

    pub fn last_turn(&self) -> Option<u32> {
        self.contexts.keys().next_back().copied()
    }

    pub fn contexts(&self) -> impl Iterator<Item = &ContextSnapshot> {
        self.contexts.values()
    }

    pub fn summaries(&self) -> impl Iterator<Item = &MemorySummary> {
        self.summaries.values()
    }

    pub fn max_snapshot_chars(&self) -> usize {
        self.max_snapshot_chars
    }

    pub fn context(&self, turn_number: u32) -> Option<&ContextSnapshot> {
        self.contexts.get(&turn_number)
    }

    pub fn summary(&self, turn_number: u32) -> Option<&MemorySummary> {
        self.summaries.get(&turn_number)
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
        if turn_number == 0 {
            return Err(Error::invalid_argument("turn numbers start at 1"));
        }
        if let Some(last) = self.contexts.keys().next_back() {
            if turn_number <= *last {
                return Err(Error::invalid_argument(format!(
                    "turn {turn_number} is not after the last recorded turn ({last}): turns are recorded once, in order"
                )));
            }
        }
        let size = full_context.chars().count();
        if size > self.max_snapshot_chars {
            return Err(Error::invalid_argument(format!(
                "the snapshot of turn {turn_number} has {size} characters, over the limit of {}",
                self.max_snapshot_chars
            )));
        }
        if summary.trim().is_empty() {
            return Err(Error::invalid_argument(format!("the summary of turn {turn_number} is empty")));
        }
        let id = format!("ctx_{turn_number}_{:08x}", fnv1a(&[&full_context]));
        let snapshot =
            ContextSnapshot { id: id.clone(), turn_number, full_context, summary: summary.clone(), messages };
        let memory_summary = MemorySummary { id: format!("sum_{id}"), context_id: id, turn_number, summary, insights };
        self.insert(snapshot, memory_summary);
        self.contexts.get(&turn_number).ok_or_else(|| Error::internal("a recorded turn vanished"))
    }

    fn insert(&mut self, snapshot: ContextSnapshot, summary: MemorySummary) {
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
        self.summaries.insert(snapshot.turn_number, summary);
        self.contexts.insert(snapshot.turn_number, snapshot);
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
            self.summaries.values().map(|s| (s.turn_number, turn_line(s.turn_number, &s.summary))).collect();
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
            contexts: self.contexts.values().cloned().collect(),
            summaries: self.summaries.values().cloned().collect(),
        }
    }

    /// Replaces the store with an export; on any error the store is left as it was.
    /// Message documents are not part of a memory export: the session re-indexes its log.
    pub fn import(&mut self, value: Value) -> Result<()> {
        crate::versioned::check_header(&value, EXPORT_FORMAT, EXPORT_VERSION, "memory")?;
        let export: MemoryExport = crate::error::from_json(value, "corrupt memory export")?;
        self.restore(export)
    }

    /// Replaces the store with an export already read; on any error the
    /// store is left as it was.
    pub fn restore(&mut self, export: MemoryExport) -> Result<()> {
        crate::versioned::check(
            Some(&export.format),
            Some(u64::from(export.version)),
            EXPORT_FORMAT,
            EXPORT_VERSION,
            "memory",
        )?;
        let mut fresh = MemoryStore::new(self.max_snapshot_chars);
        let mut summaries: BTreeMap<u32, MemorySummary> =
            export.summaries.into_iter().map(|s| (s.turn_number, s)).collect();
        let mut previous = 0;
        for snapshot in export.contexts {
            if snapshot.turn_number <= previous {
                return Err(Error::invalid_argument(format!(
                    "corrupt memory export: turn {} is out of order or repeated",
                    snapshot.turn_number
                )));
            }
            previous = snapshot.turn_number;
            let summary = summaries.remove(&snapshot.turn_number).ok_or_else(|| {
                Error::invalid_argument(format!("corrupt memory export: turn {} has no summary", snapshot.turn_number))
            })?;
            if summary.context_id != snapshot.id {
                return Err(Error::invalid_argument(format!(
                    "corrupt memory export: summary {} points at {}, not at {}",
                    summary.id, summary.context_id, snapshot.id
                )));
            }
            fresh.insert(snapshot, summary);
        }
        if let Some(orphan) = summaries.values().next() {
            return Err(Error::invalid_argument(format!(
                "corrupt memory export: summary {} belongs to no snapshot",
                orphan.id
            )));
        }
        *self = fresh;
        Ok(())
    }
}

/// Seed 003's line for a turn in the cumulative summary.
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
        parts.push(format!("asked: {}", squash(&found.user_messages.join(" / "), 240)));
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
        assert!(other.import(serde_json::json!({"format": "something-else"})).is_err());
        assert!(other.import(serde_json::json!("{not json")).is_err());
        assert_eq!(serde_json::to_value(other.export()).unwrap(), exported, "failed imports changed nothing");
    }
}
