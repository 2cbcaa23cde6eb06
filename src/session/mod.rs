//! A session: an id, the conversation history, the optional memory (per-turn snapshots),
//! a loop counter, and metadata. A sub-agent (`spawn_subagent`) is a child session with
//! an isolated history that hands its parent one compact result. A session exports to one
//! versioned JSON document and imports from it.

mod artifacts_state;
mod export;
pub mod records;
mod turn_memory;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::compact::{BuildOptions, BuildOutcome, Compactor, ReceiptEntry, SummaryRecord, SummaryState, TurnNote};
use crate::error::{Error, Result};
use crate::history::{ConversationHistory, TokenReport};
use crate::memory::MemoryStore;
use crate::message::{Content, Format, Message, Role};
use crate::tokens::anchor::UsageReport;
use crate::tokens::ChatCount;
use crate::tokens::Encoding;
use crate::util::ids::fnv1a;

pub use export::{HistoryExport, SessionExport, EXPORT_FORMAT, EXPORT_VERSION};
pub use turn_memory::{
    TurnInput, TurnSummaryRequest, CUMULATIVE_SUMMARY_MAX_TOKENS, RECALL_MAX_TOKENS, TURN_SUMMARY_MAX_TOKENS,
    TURN_SUMMARY_MAX_TOKENS_LIMIT,
};

pub const MAIN_CONTEXT_ID: &str = "main";
pub const DEFAULT_MAX_LOOPS: u32 = 10;

#[derive(Clone, Debug)]
pub struct Session {
    id: String,
    parent_id: Option<String>,
    pub history: ConversationHistory,
    /// The summary state and the caches of the history's builds.
    pub compactor: Compactor,
    memory: Option<MemoryStore>,
    /// The format appends and reads use when none is given.
    pub format: Format,
    loops: u32,
    max_loops: u32,
    subagents_spawned: u32,
    /// How many logged messages the memory's search index holds.
    indexed: usize,
    pub metadata: Map<String, Value>,
    /// The artifacts and the agent state (`state`).
    artifacts: crate::state::ArtifactStore,
    agent: crate::state::AgentState,
    /// Title, creation time and what storage holds (`records`).
    persist: records::Persisted,
}

/// The options of a session (`new Session(options)`), read as given: every field optional.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct SessionOptions {
    /// Letters, digits, '-', '_', '.' or ':' (default "main").
    pub id: Option<String>,
    /// Agent loops allowed (default 10).
    pub max_loops: Option<u32>,
    /// Switches the memory module on (it is off unless configured).
    pub memory: Option<MemoryChoice>,
    #[cfg_attr(test, ts(optional, type = "EncodingName"))]
    pub encoding: Option<Encoding>,
    /// The format appends and reads use when none is given (default OpenAI's).
    pub format: Option<Format>,
}

/// The options of a plain history (`new ConversationHistory(options)`): a session's own two.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct HistoryOptions {
    #[cfg_attr(test, ts(optional, type = "EncodingName"))]
    pub encoding: Option<Encoding>,
    pub format: Option<Format>,
}

/// `memory`: `true`, `false`, or the memory's settings.
#[derive(Clone, Debug, PartialEq)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(untagged))]
pub enum MemoryChoice {
    On(bool),
    With(MemorySettings),
}

// By hand rather than `untagged`, whose error ("data did not match any variant of untagged enum")
// says nothing a JS user can act on.
impl<'de> Deserialize<'de> for MemoryChoice {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        struct Choice;
        impl<'de> serde::de::Visitor<'de> for Choice {
            type Value = MemoryChoice;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true, false or an object of the memory's settings")
            }
            fn visit_bool<E: serde::de::Error>(self, on: bool) -> std::result::Result<MemoryChoice, E> {
                Ok(MemoryChoice::On(on))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> std::result::Result<MemoryChoice, A::Error> {
                MemorySettings::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(MemoryChoice::With)
            }
        }
        deserializer.deserialize_any(Choice)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct MemorySettings {
    /// Refuse snapshots longer than this many characters (default 1,048,576).
    pub max_snapshot_chars: Option<usize>,
}

/// The encoding of a session or history whose options name none.
pub const DEFAULT_ENCODING: Encoding = Encoding::O200kBase;

/// Ids travel into storage keys and file names: keep them to a safe alphabet.
pub fn validate_session_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "session id {id:?} must be 1 to 128 characters of letters, digits, '-', '_', '.' or ':'"
        )))
    }
}

pub(crate) fn memory_off() -> Error {
    Error::invalid_argument("this session has no memory: create it with the `memory` option")
}

impl Session {
    pub fn new(id: &str, encoding: Encoding, max_loops: u32) -> Result<Session> {
        validate_session_id(id)?;
        if max_loops == 0 {
            return Err(Error::invalid_argument("maxLoops must be at least 1"));
        }
        Ok(Session::unchecked(id, encoding, max_loops))
    }

    /// The main session of a history counted with `encoding`: id "main", the default loop limit.
    pub fn with_encoding(encoding: Encoding) -> Session {
        Session::unchecked(MAIN_CONTEXT_ID, encoding, DEFAULT_MAX_LOOPS)
    }

    fn unchecked(id: &str, encoding: Encoding, max_loops: u32) -> Session {
        Session {
            id: id.to_string(),
            parent_id: None,
            history: ConversationHistory::new(encoding),
            compactor: Compactor::new(),
            memory: None,
            format: Format::OpenAi,
            loops: 0,
            max_loops,
            subagents_spawned: 0,
            indexed: 0,
            metadata: Map::new(),
            artifacts: crate::state::ArtifactStore::default(),
            agent: crate::state::AgentState::default(),
            persist: records::Persisted::default(),
        }
    }

    /// A session as its options describe it.
    pub fn from_options(options: SessionOptions) -> Result<Session> {
        let encoding = match options.encoding {
            Some(encoding) => encoding,
            None => {
                // Checked, not assumed: the lite build refuses an encoding whose ranks are not loaded.
                DEFAULT_ENCODING.ready()?;
                DEFAULT_ENCODING
            }
        };
        let id = options.id.as_deref().unwrap_or(MAIN_CONTEXT_ID);
        let mut session = Session::new(id, encoding, options.max_loops.unwrap_or(DEFAULT_MAX_LOOPS))?;
        if let Some(format) = options.format {
            session.format = format;
        }
        match options.memory {
            None | Some(MemoryChoice::On(false)) => {}
            Some(MemoryChoice::On(true)) => session.enable_memory(crate::memory::DEFAULT_MAX_SNAPSHOT_CHARS)?,
            Some(MemoryChoice::With(settings)) => session
                .enable_memory(settings.max_snapshot_chars.unwrap_or(crate::memory::DEFAULT_MAX_SNAPSHOT_CHARS))?,
        }
        Ok(session)
    }

    /// Switches the memory module on (it is off unless configured).
    pub fn enable_memory(&mut self, max_snapshot_chars: usize) -> Result<()> {
        if max_snapshot_chars == 0 {
            return Err(Error::invalid_argument("memory.maxSnapshotChars must be at least 1"));
        }
        if self.memory.is_none() {
            self.memory = Some(MemoryStore::new(max_snapshot_chars));
            self.indexed = 0;
        }
        Ok(())
    }

    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn parent_id(&self) -> Option<&str> {
        self.parent_id.as_deref()
    }

    pub fn loops(&self) -> u32 {
        self.loops
    }

    pub fn max_loops(&self) -> u32 {
        self.max_loops
    }

    pub fn memory(&self) -> Option<&MemoryStore> {
        self.memory.as_ref()
    }

    /// After a wasm trap interrupted a call on this session (the JS layer's recovery, see
    /// `bindings`): an append caught half-way is undone, and what is derived (indexes, caches)
    /// and may have been caught mid-update is made again or dropped. Everything else a call
    /// changes is changed by one store, or one `mem::replace`, so it is either done or not.
    /// Returns whether a change was undone.
    pub fn recover_after_trap(&mut self) -> bool {
        let undone = self.history.recover_after_trap();
        self.compactor.recover_after_trap();
        if let Some(memory) = &mut self.memory {
            memory.recover_after_trap();
        }
        self.indexed = 0;
        undone
    }

    /// Counts one more agent loop; refuses to go past the maximum.
    pub fn next_loop(&mut self) -> Result<u32> {
        if self.loops >= self.max_loops {
            return Err(Error::invalid_argument(format!("{} reached its limit of {} loops", self.id, self.max_loops)));
        }
        self.loops += 1;
        Ok(self.loops)
    }

    /// A child context with a fresh history that starts with `task` as the user's request, and a
    /// fresh state (no todos, tools, skill or mentions; no artifacts; its own thread).
    pub fn spawn_subagent(&mut self, task: &str, max_loops: u32) -> Result<Session> {
        if task.trim().is_empty() {
            return Err(Error::invalid_argument("a sub-agent needs a task"));
        }
        let spawned = self.subagents_spawned + 1;
        let tag = fnv1a(&[&self.id, &spawned.to_string(), task]);
        let mut child = Session::new(&format!("subagent-{tag:08x}"), self.history.encoding(), max_loops)?;
        child.parent_id = Some(self.id.clone());
        child.format = self.format;
        child.history.append_all(vec![Message::new(Role::User, Content::text(task), self.format)])?;
        self.subagents_spawned = spawned;
        Ok(child)
    }

    /// What a sub-agent hands its parent: `{ ok, result, context_id, loops }`, where the
    /// result is its last assistant text.
    pub fn subagent_result(&self) -> SubagentResult {
        let last_text = self
            .history
            .records()
            .iter()
            .rev()
            .filter(|r| r.message.role == Role::Assistant)
            .map(|r| r.message.content.joined_text())
            .find(|text| !text.trim().is_empty());
        let (ok, result) = match last_text {
            Some(result) => (true, result),
            None => (false, "the sub-agent ended without an answer".to_string()),
        };
        SubagentResult { ok, result, context_id: self.id.clone(), loops: self.loops }
    }

    /// The sub-agent's result as the tool result that answers the parent's call (its JSON text,
    /// keys in order).
    pub fn subagent_tool_result(&self, call_id: &str, format: Format) -> Result<Message> {
        let text = crate::util::json_text::to_text(&self.subagent_result())
            .map_err(|e| Error::internal(format!("serialising a sub-agent result: {e}")))?;
        Ok(Message::tool_result(call_id, None, text, false, format))
    }
}

/// What a sub-agent hands its parent: one compact result, not its history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SubagentResult {
    pub ok: bool,
    pub result: String,
    pub context_id: String,
    pub loops: u32,
}

// ---------------------------------------------------------------------------------------------
// Builds and the summary lifecycle: the compactor, on this session's history and memory.

impl Session {
    /// Builds the next context (`Compactor::build`); with memory, the summaries of recorded
    /// turns that the context does not wholly hold go into its summary section.
    pub fn build(&mut self, options: &BuildOptions) -> Result<BuildOutcome> {
        let history = &self.history;
        let turns: Vec<TurnNote> = match &self.memory {
            Some(memory) if options.memory.is_some() => memory
                .contexts()
                .filter_map(|snapshot| {
                    let range = snapshot.messages.as_ref()?;
                    let summary =
                        memory.summary(snapshot.turn_number).map_or(snapshot.summary.as_str(), |s| s.summary.as_str());
                    Some(TurnNote {
                        turn: snapshot.turn_number,
                        first: history.position(&range.from)?,
                        last: history.position(&range.until)?,
                        summary,
                    })
                })
                .collect(),
            _ => Vec::new(),
        };
        let notes = match options.state {
            Some(_) => crate::state::notes(&self.agent, &self.artifacts),
            None => Vec::new(),
        };
        let mut outcome = self.compactor.build(&mut self.history, options, &turns, &notes)?;
        if let Some(note) = self.persist.frame_note.take() {
            outcome.context.receipt.notes.push(note);
        }
        Ok(outcome)
    }

    /// The last build's receipt message by message; empty before the first build.
    pub fn receipt_entries(&self) -> Vec<ReceiptEntry> {
        self.compactor.last_receipt_entries(&self.history)
    }

    /// Accepts the summary of a request (`Compactor::complete_summary`), counted with the
    /// history's encoding.
    pub fn complete_summary(
        &mut self,
        request_id: &str,
        text: &str,
        created_at: Option<String>,
    ) -> Result<SummaryRecord> {
        self.compactor.complete_summary(request_id, text, created_at, self.history.encoding())
    }

    /// Restores a summary state that fits this history.
    pub fn set_summary_state(&mut self, state: SummaryState) -> Result<()> {
        self.compactor.set_summary_state(state, &self.history)
    }

    /// Tokens by role and part, with the calibrated bill once usage was recorded.
    pub fn token_report(&mut self) -> TokenReport {
        self.compactor.token_report(&mut self.history)
    }

    /// Records a provider's reported usage: later counts are anchored to it, and a count of the
    /// whole request calibrates (`Compactor::record_usage`).
    pub fn record_usage(&mut self, usage: &Value, model: Option<&str>, counted: Option<usize>) -> Result<UsageReport> {
        self.compactor.record_usage(&mut self.history, usage, model, counted)
    }

    /// The history as one prompt, anchored to the last bill while it stands for the history.
    pub fn token_count(&mut self) -> ChatCount {
        self.compactor.token_count(&mut self.history)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_subagent_is_isolated_and_reports_back_compactly() {
        let mut main = Session::new(MAIN_CONTEXT_ID, Encoding::O200kBase, 50).unwrap();
        main.history
            .append_value(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_sub", "type": "function", "function": {"name": "call_subagent", "arguments": "{\"task\":\"convert the PDF\"}"}}]}),
                Format::OpenAi,
            )
            .unwrap();
        let mut child = main.spawn_subagent("convert the PDF", 3).unwrap();
        assert!(child.id().starts_with("subagent-") && child.id().len() == "subagent-".len() + 8);
        assert_eq!(child.parent_id(), Some("main"));
        assert_eq!(child.history.len(), 1);
        for n in 1..=3 {
            assert_eq!(child.next_loop().unwrap(), n);
        }
        assert!(child.next_loop().unwrap_err().message.contains("limit of 3 loops"));
        child.history.append_value(json!({"role": "assistant", "content": "done: outputs/"}), Format::OpenAi).unwrap();
        assert_eq!(main.history.len(), 1, "the parent's history is untouched");

        let result = serde_json::to_value(child.subagent_result()).unwrap();
        assert_eq!(result, json!({"ok": true, "result": "done: outputs/", "context_id": child.id(), "loops": 3}));
        main.history.append_all(vec![child.subagent_tool_result("call_sub", Format::OpenAi).unwrap()]).unwrap();
        assert_eq!(main.history.len(), 2);
        let second = main.spawn_subagent("convert the PDF", 3).unwrap();
        assert_ne!(second.id(), child.id(), "each spawn gets its own id");
    }

    #[test]
    fn ids_and_limits_are_validated() {
        assert!(Session::new("", Encoding::O200kBase, 10).is_err());
        assert!(Session::new("a/b", Encoding::O200kBase, 10).is_err());
        assert!(Session::new("main", Encoding::O200kBase, 0).is_err());
        let mut main = Session::new("main", Encoding::O200kBase, 10).unwrap();
        assert!(main.spawn_subagent("  ", 5).is_err());
        let silent = main.spawn_subagent("task", 5).unwrap();
        assert!(!silent.subagent_result().ok);
    }
}
