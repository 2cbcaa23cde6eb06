//! A session: an id, the conversation history, the optional memory (seed 003's MemoryModule),
//! a loop counter, and metadata. A sub-agent (seed 000's call_subagent) is a child session with
//! an isolated history that hands its parent one compact result. A session exports to one
//! versioned JSON document and imports from it.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::compact::{BuildOptions, BuildOutcome, TurnNote};
use crate::error::{Error, Result};
use crate::history::{ConversationHistory, HistoryExport, Record};
use crate::ids::fnv1a;
use crate::memory::recall::{self, Log, RecallRequest};
use crate::memory::{self, ContextSnapshot, MemoryExport, MemoryStore, MessageRange};
use crate::message::{Content, Format, Message, Part, Role};
use crate::tokens::Encoding;

pub const MAIN_CONTEXT_ID: &str = "main";
pub const DEFAULT_MAX_LOOPS: u32 = 10;
pub const EXPORT_FORMAT: &str = "context-compactor/session";
pub const EXPORT_VERSION: u32 = 1;

#[derive(Clone, Debug)]
pub struct Session {
    id: String,
    parent_id: Option<String>,
    pub history: ConversationHistory,
    memory: Option<MemoryStore>,
    /// The format appends and reads use when none is given.
    pub format: Format,
    loops: u32,
    max_loops: u32,
    subagents_spawned: u32,
    /// Where the messages of the turn under way begin (everything before belongs to recorded turns).
    turn_start: usize,
    /// How many logged messages the memory's search index holds.
    indexed: usize,
    pub metadata: Map<String, Value>,
}

/// What the agent hands the memory at the end of a turn.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TurnInput {
    /// Defaults to the turn after the last one recorded.
    pub turn_number: Option<u32>,
    /// The workspace the agent rendered this turn (seed 003's `fullContext`).
    pub workspace_context: String,
    /// The turn's summary; the built-in one when absent.
    pub summary: Option<String>,
    pub insights: Option<Vec<String>>,
    /// Refuse a given summary longer than this (what a summariser was asked for).
    pub max_summary_tokens: Option<u32>,
}

/// The versioned JSON form of a session: history (with summaries), memory, counters, metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionExport {
    pub format: String,
    pub version: u32,
    pub id: String,
    pub parent_id: Option<String>,
    pub message_format: Format,
    pub loops: u32,
    pub max_loops: u32,
    pub subagents_spawned: u32,
    pub turn_start: usize,
    pub metadata: Map<String, Value>,
    pub history: HistoryExport,
    pub memory: Option<MemoryExport>,
    pub max_snapshot_chars: Option<usize>,
}

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

fn memory_off() -> Error {
    Error::invalid_argument("this session has no memory: create it with the `memory` option")
}

impl Session {
    pub fn new(id: &str, encoding: Encoding, max_loops: u32) -> Result<Session> {
        validate_session_id(id)?;
        if max_loops == 0 {
            return Err(Error::invalid_argument("maxLoops must be at least 1"));
        }
        Ok(Session {
            id: id.to_string(),
            parent_id: None,
            history: ConversationHistory::new(encoding),
            memory: None,
            format: Format::OpenAi,
            loops: 0,
            max_loops,
            subagents_spawned: 0,
            turn_start: 0,
            indexed: 0,
            metadata: Map::new(),
        })
    }

    /// Switches the memory module on (seed 003: only when configured).
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

    /// Counts one more agent loop; refuses to go past the maximum.
    pub fn next_loop(&mut self) -> Result<u32> {
        if self.loops >= self.max_loops {
            return Err(Error::invalid_argument(format!("{} reached its limit of {} loops", self.id, self.max_loops)));
        }
        self.loops += 1;
        Ok(self.loops)
    }

    /// A child context with a fresh history that starts with `task` as the user's request.
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
    pub fn subagent_result(&self) -> Value {
        let last_text = self
            .history
            .records()
            .iter()
            .rev()
            .filter(|r| r.message.role == Role::Assistant)
            .map(|r| r.message.content.joined_text())
            .find(|text| !text.trim().is_empty());
        match last_text {
            Some(result) => json!({"ok": true, "result": result, "context_id": self.id, "loops": self.loops}),
            None => json!({
                "ok": false,
                "result": "the sub-agent ended without an answer",
                "context_id": self.id,
                "loops": self.loops,
            }),
        }
    }

    /// The sub-agent's result as the tool result that answers the parent's call.
    pub fn subagent_tool_result(&self, call_id: &str, format: Format) -> Message {
        let result = crate::message::ToolResult {
            call_id: call_id.to_string(),
            content: Content::text(self.subagent_result().to_string()),
            is_error: None,
            extra: Map::new(),
        };
        let role = if format == Format::OpenAi { Role::Tool } else { Role::User };
        Message::new(role, Content::parts(vec![Part::ToolResult(result)]), format)
    }
}

// ---------------------------------------------------------------------------------------------
// Memory: turns, the cumulative summary, search and recall_context.

impl Session {
    fn memory_mut(&mut self) -> Result<&mut MemoryStore> {
        self.memory.as_mut().ok_or_else(memory_off)
    }

    /// The number the next recorded turn gets by default, and the messages it will cover.
    pub fn pending_turn(&self) -> Result<(u32, &[Record])> {
        let memory = self.memory.as_ref().ok_or_else(memory_off)?;
        let next = memory.last_turn().map_or(1, |t| t.saturating_add(1));
        Ok((next, self.history.records().get(self.turn_start..).unwrap_or_default()))
    }

    /// Ends a turn: stores the workspace snapshot with its summary (the built-in one unless
    /// given) and the range of messages appended since the previous turn. On error nothing changes.
    pub fn record_turn(&mut self, input: TurnInput) -> Result<ContextSnapshot> {
        let (next, records) = self.pending_turn()?;
        let turn_number = input.turn_number.unwrap_or(next);
        let range = match (records.first(), records.last()) {
            (Some(first), Some(last)) => Some(MessageRange { from: first.id.clone(), until: last.id.clone() }),
            _ => None,
        };
        let (summary, insights) = match input.summary {
            Some(summary) => {
                if let Some(max) = input.max_summary_tokens {
                    crate::compact::summary::validate_summary(&summary, self.history.encoding(), max, &[])?;
                }
                (summary, input.insights.unwrap_or_default())
            }
            None => {
                let messages: Vec<&Message> = records.iter().map(|r| &*r.message).collect();
                let (summary, insights) = memory::turn_summary(&messages, &input.workspace_context);
                (summary, input.insights.unwrap_or(insights))
            }
        };
        let end = self.history.len();
        let snapshot =
            self.memory_mut()?.record_turn(turn_number, input.workspace_context, summary, insights, range)?.clone();
        self.turn_start = end;
        Ok(snapshot)
    }

    /// What a plugged-in summariser gets for the turn under way: its messages and workspace as
    /// one transcript in one user message (valid for either provider), and a token budget.
    pub fn turn_summary_request(&self, workspace_context: &str, format: Format, max_tokens: u32) -> Result<Value> {
        let (turn_number, records) = self.pending_turn()?;
        let ids: Vec<&str> = records.iter().map(|r| r.id.as_str()).collect();
        let messages: Vec<&Message> = records.iter().map(|r| &*r.message).collect();
        let prompt = memory::turn_prompt(turn_number, &messages, workspace_context);
        let message = Message::new(Role::User, Content::text(prompt.clone()), format);
        Ok(json!({
            "id": format!("turn-{turn_number}"),
            "turnNumber": turn_number,
            "messageIds": ids,
            "messages": crate::compact::request::emit_request(std::iter::once(&message), format)?,
            "prompt": prompt,
            "maxTokens": max_tokens,
            "requiredKeys": [],
        }))
    }

    /// Builds the next context (`ConversationHistory::build`); with memory, the summaries of
    /// recorded turns that the context does not wholly hold go into its summary section.
    pub fn build(&mut self, options: &BuildOptions) -> Result<BuildOutcome> {
        let history = &mut self.history;
        let notes: Vec<TurnNote> = match &self.memory {
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
        history.build_with_notes(options, &notes)
    }

    /// Seed 003's `[Turn 1] …` lines for the prompt, within `max_tokens`.
    pub fn memory_summary(&self, max_tokens: usize) -> Result<String> {
        let memory = self.memory.as_ref().ok_or_else(memory_off)?;
        Ok(memory.cumulative_summary(self.history.encoding(), max_tokens))
    }

    /// Brings the search index up to the end of the log.
    fn sync_index(&mut self) {
        let Some(memory) = self.memory.as_mut() else { return };
        for record in self.history.records().get(self.indexed..).unwrap_or_default() {
            memory.index_message(&record.id, &record.message.readable_text());
        }
        self.indexed = self.history.len();
    }

    /// Keyword search over snapshots, summaries and every logged message (dropped ones included).
    pub fn search(&mut self, query: &str, limit: usize) -> Result<Vec<Value>> {
        self.sync_index();
        let memory = self.memory.as_ref().ok_or_else(memory_off)?;
        let log = SessionLog { history: &self.history, memory };
        Ok(memory
            .index()
            .search(query, limit)
            .iter()
            .filter_map(|hit| recall::describe_hit(memory, &log, hit).map(Value::Object))
            .collect())
    }

    /// Executes a `recall_context` call (Anthropic's `input` object or OpenAI's `arguments` text).
    pub fn recall(&mut self, input: &Value, max_tokens: usize) -> Result<Value> {
        let request: RecallRequest = recall::parse_request(input)?;
        self.sync_index();
        let memory = self.memory.as_ref().ok_or_else(memory_off)?;
        recall::execute(
            memory,
            &request,
            &SessionLog { history: &self.history, memory },
            self.history.encoding(),
            max_tokens,
        )
    }
}

struct SessionLog<'a> {
    history: &'a ConversationHistory,
    memory: &'a MemoryStore,
}

impl Log for SessionLog<'_> {
    fn message(&self, id: &str) -> Option<(&'static str, String)> {
        self.history.get(id).map(|r| (r.message.role.as_str(), r.message.readable_text()))
    }

    fn ids_in(&self, range: &MessageRange) -> Vec<String> {
        match (self.history.position(&range.from), self.history.position(&range.until)) {
            (Some(from), Some(until)) => {
                self.history.records().get(from..=until).unwrap_or_default().iter().map(|r| r.id.clone()).collect()
            }
            _ => Vec::new(),
        }
    }

    fn turn_of(&self, id: &str) -> Option<u32> {
        let at = self.history.position(id)?;
        self.memory.contexts().find_map(|snapshot| {
            let range = snapshot.messages.as_ref()?;
            let (from, until) = (self.history.position(&range.from)?, self.history.position(&range.until)?);
            (from..=until).contains(&at).then_some(snapshot.turn_number)
        })
    }
}

// ---------------------------------------------------------------------------------------------
// Export and import.

impl Session {
    pub fn export(&self) -> Result<SessionExport> {
        Ok(SessionExport {
            format: EXPORT_FORMAT.to_string(),
            version: EXPORT_VERSION,
            id: self.id.clone(),
            parent_id: self.parent_id.clone(),
            message_format: self.format,
            loops: self.loops,
            max_loops: self.max_loops,
            subagents_spawned: self.subagents_spawned,
            turn_start: self.turn_start,
            metadata: self.metadata.clone(),
            history: self.history.export()?,
            memory: self.memory.as_ref().map(MemoryStore::export),
            max_snapshot_chars: self.memory.as_ref().map(MemoryStore::max_snapshot_chars),
        })
    }

    /// A session from its export, checked whole before anything is built: a corrupt, truncated
    /// or newer export is an error that names what is wrong.
    pub fn import(value: Value) -> Result<Session> {
        crate::versioned::check_header(&value, EXPORT_FORMAT, EXPORT_VERSION, "session")?;
        let export: SessionExport = serde_json::from_value(value)
            .map_err(|e| Error::invalid_argument(format!("corrupt session export: {e}")))?;
        let mut session = Session::new(&export.id, Encoding::parse(&export.history.encoding)?, export.max_loops)?;
        if let Some(parent) = &export.parent_id {
            validate_session_id(parent)?;
        }
        if export.loops > export.max_loops {
            return Err(Error::invalid_argument(format!(
                "corrupt session export: {} loops done, over its limit of {}",
                export.loops, export.max_loops
            )));
        }
        session.history = ConversationHistory::import(export.history)?;
        if export.turn_start > session.history.len() {
            return Err(Error::invalid_argument(format!(
                "corrupt session export: the turn under way starts at message {}, past the end of the history ({})",
                export.turn_start,
                session.history.len()
            )));
        }
        if let Some(memory) = export.memory {
            session.enable_memory(export.max_snapshot_chars.unwrap_or(memory::DEFAULT_MAX_SNAPSHOT_CHARS))?;
            for snapshot in &memory.contexts {
                if let Some(range) = &snapshot.messages {
                    for id in [&range.from, &range.until] {
                        if session.history.position(id).is_none() {
                            return Err(Error::invalid_argument(format!(
                                "corrupt session export: turn {} covers message {id:?}, which the history does not have",
                                snapshot.turn_number
                            )));
                        }
                    }
                }
            }
            session.memory_mut()?.restore(memory)?;
            session.sync_index();
        }
        session.parent_id = export.parent_id;
        session.format = export.message_format;
        session.loops = export.loops;
        session.subagents_spawned = export.subagents_spawned;
        session.turn_start = export.turn_start;
        session.metadata = export.metadata;
        Ok(session)
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

        let result = child.subagent_result();
        assert_eq!(result, json!({"ok": true, "result": "done: outputs/", "context_id": child.id(), "loops": 3}));
        main.history.append_all(vec![child.subagent_tool_result("call_sub", Format::OpenAi)]).unwrap();
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
        assert_eq!(silent.subagent_result()["ok"], false);
    }

    fn agent_with_two_turns() -> Session {
        let mut session = Session::new("main", Encoding::O200kBase, 10).unwrap();
        session.enable_memory(10_000).unwrap();
        session
            .history
            .append_values(
                json!([
                    {"role": "user", "content": "Find my reservation to Seattle"},
                    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_reservation", "arguments": "{\"id\":\"ABC123\"}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "{\"id\":\"ABC123\",\"destination\":\"SEA\"}"},
                    {"role": "assistant", "content": "Reservation ABC123 flies to Seattle."}
                ]),
                Format::OpenAi,
            )
            .unwrap();
        let first = session
            .record_turn(TurnInput { workspace_context: "reservations: [ABC123]".into(), ..Default::default() })
            .unwrap();
        assert_eq!(first.turn_number, 1);
        assert_eq!(first.messages, Some(MessageRange { from: "m1".into(), until: "m4".into() }));
        session
            .history
            .append_values(
                json!([{"role": "user", "content": "Cancel it"}, {"role": "assistant", "content": "Cancelled."}]),
                Format::OpenAi,
            )
            .unwrap();
        session
            .record_turn(TurnInput {
                workspace_context: "reservations: []".into(),
                summary: Some("cancelled ABC123".into()),
                ..Default::default()
            })
            .unwrap();
        session
    }

    #[test]
    fn the_context_carries_the_summaries_of_turns_it_does_not_hold() {
        let mut session = agent_with_two_turns();
        for turn in 3..=12 {
            let long = format!("Turn {turn}: {}", "please look at the seat map again. ".repeat(40));
            session
                .history
                .append_values(json!([{"role": "user", "content": long}, {"role": "assistant", "content": format!("Seat {turn}A is free.")}]), Format::OpenAi)
                .unwrap();
            session
                .record_turn(TurnInput { workspace_context: format!("seat {turn}A"), ..Default::default() })
                .unwrap();
        }
        let budget = crate::compact::BudgetOptions { context_window: 6_000, ..Default::default() };
        let options = BuildOptions { budget: Some(budget), summary: None, ..Default::default() };
        let context = session.build(&options).unwrap().context;
        let memory = context.receipt.memory.clone().expect("turn summaries in the context");
        let in_context: Vec<&str> =
            context.messages.iter().flat_map(|m| m.sources.iter().map(String::as_str)).collect();
        for snapshot in session.memory().unwrap().contexts() {
            let range = snapshot.messages.as_ref().unwrap();
            let (from, until) =
                (session.history.position(&range.from).unwrap(), session.history.position(&range.until).unwrap());
            let whole = session.history.records()[from..=until].iter().all(|r| in_context.contains(&r.id.as_str()));
            assert_eq!(
                !whole,
                memory.turns.contains(&snapshot.turn_number),
                "turn {}: {memory:?}",
                snapshot.turn_number
            );
        }
        assert!(memory.turns.len() >= 3 && memory.omitted.is_empty(), "{memory:?}");
        assert!(context.receipt.within_budget && context.tokens.summary == memory.tokens, "{:?}", context.receipt);
        let message = context.messages.iter().find(|m| m.section == crate::compact::Section::Summary).unwrap();
        assert!(message
            .message
            .content
            .joined_text()
            .contains(&format!("[Turn {0}] asked: Turn {0}: please look", memory.turns[0])));
        assert_eq!(memory.tokens, crate::tokens::count_message(Encoding::O200kBase, &message.message).total as usize);

        let without = session.build(&BuildOptions { memory: None, ..options.clone() }).unwrap().context;
        assert!(without.receipt.memory.is_none() && without.tokens.summary == 0);
        let tight = crate::compact::MemoryOptions { max_tokens: Some(40) };
        let capped =
            session.build(&BuildOptions { memory: Some(tight), ..options }).unwrap().context.receipt.memory.unwrap();
        assert!(
            capped.tokens <= 40 && !capped.omitted.is_empty() && capped.turns.len() < memory.turns.len(),
            "{capped:?}"
        );
    }

    #[test]
    fn turns_get_built_in_summaries_and_recall_brings_back_their_messages() {
        let mut session = agent_with_two_turns();
        let memory = session.memory().unwrap();
        let first = memory.summary(1).unwrap();
        assert!(
            first.summary.starts_with("asked: Find my reservation to Seattle; answered: Reservation ABC123"),
            "{}",
            first.summary
        );
        assert!(first.summary.contains("tools: get_reservation"), "{}", first.summary);
        assert_eq!(session.memory_summary(1000).unwrap().lines().nth(1), Some("[Turn 2] cancelled ABC123"));

        let recalled = session.recall(&json!({"turnNumbers": [1]}), 2000).unwrap();
        let ids: Vec<&str> =
            recalled["turns"][0]["messages"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["m1", "m2", "m3", "m4"]);
        assert!(recalled["turns"][0]["messages"][1]["text"].as_str().unwrap().starts_with("get_reservation("));

        let found = session.recall(&Value::from(r#"{"query": "cancel"}"#), 2000).unwrap();
        assert_eq!(found["results"][0]["id"], "m5");
        assert_eq!(found["results"][0]["turnNumber"], 2);
        assert!(session
            .recall(&json!({"turnNumbers": [3]}), 100)
            .unwrap_err()
            .message
            .contains("turn 3 is not in memory"));
        let no_memory = Session::new("plain", Encoding::O200kBase, 10).unwrap().memory_summary(10).unwrap_err();
        assert!(no_memory.message.contains("no memory"), "{no_memory}");
    }

    #[test]
    fn a_session_exports_and_imports_losslessly() {
        let mut session = agent_with_two_turns();
        session.history.append_value(json!({"role": "user", "content": "and now?"}), Format::OpenAi).unwrap();
        session.next_loop().unwrap();
        session.metadata.insert("title".into(), "trip".into());
        let exported = serde_json::to_value(session.export().unwrap()).unwrap();
        let mut restored = Session::import(exported.clone()).unwrap();
        assert_eq!(serde_json::to_value(restored.export().unwrap()).unwrap(), exported);
        assert_eq!(restored.history.ids(), session.history.ids());
        assert_eq!(
            restored.recall(&json!({"query": "Seattle"}), 500).unwrap(),
            session.recall(&json!({"query": "Seattle"}), 500).unwrap()
        );
        let (next, pending) = restored.pending_turn().unwrap();
        assert_eq!((next, pending.len()), (3, 1));
    }

    #[test]
    fn corrupt_truncated_or_newer_exports_are_refused_with_reasons() {
        let exported = serde_json::to_value(agent_with_two_turns().export().unwrap()).unwrap();
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut value = exported.clone();
            edit(&mut value);
            Session::import(value).unwrap_err().message
        };
        assert!(with(&|v| v["version"] = 2.into()).contains("newer than this library"));
        assert!(with(&|v| v["format"] = "x".into()).contains("not a session export"));
        assert!(with(&|v| {
            v.as_object_mut().unwrap().remove("history");
        })
        .contains("missing field `history`"));
        assert!(with(&|v| {
            v["history"]["messages"].as_array_mut().unwrap().remove(1);
        })
        .contains("corrupt export"));
        assert!(with(&|v| v["history"]["messages"][0]["id"] = "m9".into()).contains("where \"m1\" belongs"));
        assert!(with(&|v| v["turnStart"] = 99.into()).contains("past the end of the history"));
        assert!(with(&|v| v["loops"] = 11.into()).contains("over its limit"));
        assert!(with(&|v| {
            v["history"]["messages"].as_array_mut().unwrap().truncate(4);
            v["turnStart"] = 4.into();
        })
        .contains("which the history does not have"));
    }
}
