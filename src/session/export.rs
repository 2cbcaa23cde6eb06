//! A session as one versioned JSON document, and back.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{validate_session_id, Session};
use crate::compact::{FrameState, SummaryState};
use crate::error::{Error, Result};
use crate::history::{corrupt, ConversationHistory, LoggedMessage};
use crate::memory::{self, MemoryExport, MemoryStore};
use crate::message::Format;
use crate::state::{AgentState, Artifact};
use crate::tokens::{Encoding, MessageTokens};

pub const EXPORT_FORMAT: &str = "context-compactor/session";
pub const EXPORT_VERSION: u32 = 1;

/// The versioned JSON form of a session: history (with summaries), memory, counters, metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionExport {
    #[cfg_attr(test, ts(type = "\"context-compactor/session\""))]
    pub format: String,
    #[cfg_attr(test, ts(type = "1"))]
    pub version: u32,
    pub id: String,
    pub parent_id: Option<String>,
    pub message_format: Format,
    pub loops: u32,
    pub max_loops: u32,
    pub subagents_spawned: u32,
    // u64, not usize: on wasm32 a stored count past 2^32 would wrap before it is checked.
    #[cfg_attr(test, ts(type = "number"))]
    pub turn_start: u64,
    #[cfg_attr(test, ts(type = "Record<string, unknown>"))]
    pub metadata: Map<String, Value>,
    pub history: HistoryExport,
    pub memory: Option<MemoryExport>,
    pub max_snapshot_chars: Option<usize>,
    /// The artifacts, in the order they were saved (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(test, ts(as = "Option<Vec<Artifact>>", optional))]
    pub artifacts: Vec<Artifact>,
    /// The agent state (absent: the empty state).
    #[serde(default, skip_serializing_if = "is_empty_state")]
    #[cfg_attr(test, ts(as = "Option<AgentState>", optional))]
    pub state: AgentState,
}

fn is_empty_state(state: &AgentState) -> bool {
    *state == AgentState::default()
}

/// A history as JSON: every message in the format it arrived in, with its id, the summary state
/// and the frame. It travels inside a session export, which carries the version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HistoryExport {
    #[cfg_attr(test, ts(type = "EncodingName"))]
    pub encoding: Encoding,
    pub messages: Vec<LoggedMessage>,
    pub summary: SummaryState,
    /// The ids of the messages pinned explicitly (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[cfg_attr(test, ts(as = "Option<Vec<String>>", optional))]
    pub pinned: Vec<String>,
    /// The context the last build sent, which the next build extends (absent: none was made, or
    /// an export from before frames were kept). One that does not fit the messages is not
    /// restored: the next build then starts afresh, and its receipt's notes say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub frame: Option<FrameState>,
}

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
            turn_start: self.turn_start() as u64,
            metadata: self.metadata.clone(),
            history: HistoryExport {
                encoding: self.history.encoding(),
                messages: self.history.logged()?,
                summary: self.compactor.summary_state().clone(),
                pinned: self.history.pinned(),
                frame: self.compactor.frame_state(&self.history),
            },
            memory: self.memory.as_ref().map(MemoryStore::export),
            max_snapshot_chars: self.memory.as_ref().map(MemoryStore::max_snapshot_chars),
            artifacts: self.artifacts.list().to_vec(),
            state: self.agent.clone(),
        })
    }

    /// A session from its export, checked whole before anything is built: a corrupt, truncated
    /// or newer export is an error that names what is wrong.
    pub fn import(value: Value) -> Result<Session> {
        crate::util::versioned::check_header(&value, EXPORT_FORMAT, EXPORT_VERSION, "session")?;
        let export: SessionExport = crate::error::from_json(value, "corrupt session export")?;
        Session::from_export(export)
    }

    /// A session from an export already read (or assembled from stored records), with every
    /// check `import` makes.
    pub fn from_export(export: SessionExport) -> Result<Session> {
        Session::from_counted_export(export, Vec::new(), false)
    }

    /// `from_export` with the messages' counts kept in storage (`known[i]` for message `i`, made
    /// by this version of the library for the export's encoding), which are then not made again;
    /// alike the summary's when `summary_counted`.
    pub(crate) fn from_counted_export(
        export: SessionExport,
        known: Vec<Option<MessageTokens>>,
        summary_counted: bool,
    ) -> Result<Session> {
        let mut session = Session::new(&export.id, export.history.encoding, export.max_loops)?;
        if let Some(parent) = &export.parent_id {
            validate_session_id(parent)?;
        }
        if export.loops > export.max_loops {
            return Err(Error::invalid_argument(format!(
                "corrupt session export: {} loops done, over its limit of {}",
                export.loops, export.max_loops
            )));
        }
        let HistoryExport { encoding, messages, summary, pinned, frame } = export.history;
        session.history = ConversationHistory::from_counted(encoding, messages, known)?;
        session.history.set_pinned(&pinned).map_err(|e| corrupt("its pins", e))?;
        session
            .compactor
            .restore_summary_state(summary, &session.history, summary_counted)
            .map_err(|e| corrupt("its summary state", e))?;
        if let Some(frame) = frame {
            session.restore_frame(frame, "the exported frame");
        }
        match (export.memory, export.max_snapshot_chars) {
            (Some(memory), max_snapshot_chars) => {
                session.enable_memory(max_snapshot_chars.unwrap_or(memory::DEFAULT_MAX_SNAPSHOT_CHARS))?;
                session.memory_mut()?.restore(memory)?;
                session.check_turn_ranges().map_err(|e| corrupt("its memory", e))?;
                session.sync_index();
            }
            (None, Some(_)) => {
                return Err(Error::invalid_argument(
                    "corrupt session export: it has a maxSnapshotChars but no memory".to_string(),
                ))
            }
            (None, None) => {}
        }
        if export.turn_start != session.turn_start() as u64 {
            return Err(Error::invalid_argument(format!(
                "corrupt session export: the turn under way starts at message {}, but its recorded turns end at {}",
                export.turn_start,
                session.turn_start()
            )));
        }
        session.restore_state(export.artifacts, export.state).map_err(|e| corrupt("its artifacts or state", e))?;
        session.parent_id = export.parent_id;
        session.format = export.message_format;
        session.loops = export.loops;
        session.subagents_spawned = export.subagents_spawned;
        session.metadata = export.metadata;
        Ok(session)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::{BuildOptions, SummaryOptions};
    use crate::session::records::tests::built;
    use crate::session::turn_memory::tests::agent_with_two_turns;
    use serde_json::json;

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
            Session::import(value).unwrap_err().into_details().message
        };
        assert!(with(&|v| v["version"] = 2.into()).contains("newer than this library"));
        assert!(with(&|v| v["format"] = "x".into()).contains("not a session export"));
        assert!(with(&|v| {
            v.as_object_mut().unwrap().remove("history");
        })
        .contains("lacks the field \"history\""));
        assert!(with(&|v| {
            v["history"]["messages"].as_array_mut().unwrap().remove(1);
        })
        .contains("corrupt export"));
        assert!(with(&|v| v["history"]["messages"][0]["id"] = "m9".into()).contains("where \"m1\" belongs"));
        assert!(with(&|v| v["turnStart"] = 99.into()).contains("but its recorded turns end at 6"));
        assert!(with(&|v| v["loops"] = 11.into()).contains("over its limit"));
        assert!(with(&|v| {
            v["history"]["messages"].as_array_mut().unwrap().truncate(4);
            v["turnStart"] = 4.into();
        })
        .contains("which the history does not have"));
    }

    /// A session with memory and a summary in force (made by the extractive summariser).
    fn summarised() -> Session {
        let mut session = agent_with_two_turns();
        for i in 0..40 {
            let turn = json!([
                {"role": "user", "content": format!("Question {i}: what about the seat map for flight {i}? {}", "Please check. ".repeat(20))},
                {"role": "assistant", "content": format!("Answer {i}: seat {i}A is free. {}", "It is by the window. ".repeat(20))}
            ]);
            session.history.append_values(turn, Format::OpenAi).unwrap();
        }
        let summary = SummaryOptions {
            trigger_tokens: Some(2_000),
            target_tokens: Some(1_000),
            min_messages: 5,
            ..SummaryOptions::default()
        };
        let outcome = session.build(&BuildOptions { summary: Some(summary), ..BuildOptions::default() }).unwrap();
        assert!(outcome.new_summary.is_some(), "the build made a summary");
        session
    }

    /// Import checks what the live calls check, with the same functions: what `completeSummary`,
    /// `recordTurn` or a build would refuse is refused in an export, and in `setSummaryState`.
    #[test]
    fn an_import_refuses_what_the_live_calls_refuse() {
        let session = summarised();
        let exported = serde_json::to_value(session.export().unwrap()).unwrap();
        Session::import(exported.clone()).unwrap();
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut value = exported.clone();
            edit(&mut value);
            Session::import(value).unwrap_err().into_details().message
        };
        let current = |v: &mut Value| v["history"]["summary"]["current"].clone();
        assert!(with(&|v| v["history"]["summary"]["current"]["text"] = "".into()).contains("the summary is empty"));
        assert!(with(&|v| v["history"]["summary"]["current"]["text"] = " \n ".into()).contains("the summary is empty"));
        assert!(with(&|v| v["history"]["summary"]["current"]["text"] = "a different text".into())
            .contains("but its text has"));
        assert!(
            with(&|v| v["history"]["summary"]["current"]["createdAt"] = "yesterday".into()).contains("is not a date")
        );
        assert!(with(&|v| v["history"]["summary"]["current"]["createdAt"] = "2025-02-30T10:00:00Z".into())
            .contains("is not a date"));
        assert!(
            with(&|v| v["history"]["summary"]["current"]["messageCount"] = 0.into()).contains("stands for 0 messages")
        );
        assert!(
            with(&|v| v["history"]["summary"]["current"]["compressionRate"] = 0.5.into()).contains("compressionRate")
        );
        assert!(with(&|v| v["history"]["summary"]["generation"] = 0.into()).contains("none was ever made"));
        assert!(with(&|v| {
            let mut pending = current(v);
            let object = pending.as_object_mut().unwrap();
            object.insert("until".into(), object["summarisedUntil"].clone());
            object.insert("maxTokens".into(), 8.into());
            object.insert("requiredKeys".into(), json!([]));
            for key in ["summarisedUntil", "text", "tokens", "compressionRate", "createdAt", "source"] {
                object.remove(key);
            }
            v["history"]["summary"]["inProgress"] = pending;
        })
        .contains("under the least a summary may have"));
        // The memory: a turn whose range runs backwards, one that skips messages, an empty summary,
        // a snapshot whose id is not its text's.
        assert!(with(&|v| {
            v["memory"]["contexts"][0]["messages"] = json!({"from": "m4", "until": "m1"});
        })
        .contains("first to last"));
        assert!(with(&|v| {
            v["memory"]["contexts"][1]["messages"] = json!({"from": "m6", "until": "m6"});
        })
        .contains("from \"m5\" on"));
        assert!(with(&|v| {
            v["memory"]["contexts"][1]["summary"] = "".into();
            v["memory"]["summaries"][1]["summary"] = "".into();
        })
        .contains("the summary of turn 2 is empty"));
        assert!(with(&|v| v["memory"]["contexts"][0]["fullContext"] = "edited".into()).contains("as its text makes it"));
        assert!(with(&|v| v["memory"]["summaries"][0]["summary"] = "other".into()).contains("differ"));
        assert!(with(&|v| v["maxSnapshotChars"] = 4.into()).contains("over the limit of 4"));
        assert!(with(&|v| {
            v["memory"] = Value::Null;
        })
        .contains("maxSnapshotChars but no memory"));

        // The live calls refuse the same: an empty summary, a createdAt or `now` that is not a date.
        let mut live = summarised();
        let state = live.compactor.summary_state().clone();
        let mut empty = state.clone();
        if let Some(current) = empty.current.as_mut() {
            current.text = String::new();
        }
        let refused = live.set_summary_state(empty).unwrap_err();
        assert!(refused.message.contains("the summary is empty"), "{refused}");
        assert_eq!(live.compactor.summary_state(), &state, "a refused state changes nothing");
        let now = BuildOptions { now: Some("last tuesday".into()), ..BuildOptions::default() };
        assert!(live.build(&now).unwrap_err().message.contains("now \"last tuesday\" is not a date"));
    }

    #[test]
    fn timestamps_are_iso_dates_or_sequence_numbers() {
        use crate::compact::summary_state::check_created_at;
        for good in [
            "2025-11-23",
            "2025-11-23T17:05:00Z",
            "2025-11-23T17:05:00.123Z",
            "2025-11-23T17:05Z",
            "2025-11-23 17:05:00+01:00",
            "2024-02-29T00:00:00-05:30",
            "seq:12",
        ] {
            assert!(check_created_at(good, "createdAt").is_ok(), "{good}");
        }
        for bad in [
            "",
            "yesterday",
            "2025-13-01",
            "2023-02-29",
            "2025-11-23T24:00:00Z",
            "2025-11-23T17:05:00.Z",
            "2025-11-23T17:05:00+0100",
            "2025-11-23T17:05:00Zjunk",
            "seq:",
            "seq:x",
            "1700000000",
        ] {
            assert!(check_created_at(bad, "createdAt").is_err(), "{bad}");
        }
    }

    /// A session built within a budget its history passes: a compaction event, then appends.
    fn framed() -> (Session, BuildOptions) {
        let mut session = summarised();
        let options = BuildOptions {
            budget: Some(crate::compact::BudgetOptions { max_tokens: Some(1_500), ..Default::default() }),
            ..BuildOptions::default()
        };
        assert!(session.build(&options).unwrap().context.receipt.cache.unwrap().event);
        session.history.append_value(json!({"role": "user", "content": "and the return?"}), Format::OpenAi).unwrap();
        session.build(&options).unwrap();
        (session, options)
    }

    #[test]
    fn the_frame_travels_with_an_export_and_the_imported_session_extends_it() {
        let (mut session, options) = framed();
        let exported = serde_json::to_value(session.export().unwrap()).unwrap();
        assert!(exported["history"]["frame"]["messages"].as_array().is_some_and(|m| m.len() > 2), "{exported}");
        let mut imported = Session::import(exported.clone()).unwrap();
        assert_eq!(serde_json::to_value(imported.export().unwrap()).unwrap(), exported);
        for s in [&mut session, &mut imported] {
            s.history.append_value(json!({"role": "assistant", "content": "On Friday."}), Format::OpenAi).unwrap();
        }
        let live = built(&mut session, &options);
        let next = built(&mut imported, &options);
        assert_eq!(next, live);
        assert!(
            !next.1.context.receipt.notes.iter().any(|n| n.contains("frame")),
            "{:?}",
            next.1.context.receipt.notes
        );

        // An export from before frames were kept imports as before: its first build starts afresh.
        let mut older = exported.clone();
        older["history"].as_object_mut().unwrap().remove("frame");
        let mut without = Session::import(older).unwrap();
        assert!(without.compactor.frame_state(&without.history).is_none());
        let first = without.build(&options).unwrap();
        assert_eq!(first.context.receipt.cache.unwrap().reason, Some(crate::compact::EventReason::First));
        assert!(!first.context.receipt.notes.iter().any(|n| n.contains("frame")));
        // A frame that does not fit the messages imports without it, and the first build says so.
        let mut moved = exported.clone();
        moved["history"]["frame"]["settledId"] = json!("m2");
        let mut refitted = Session::import(moved).unwrap();
        let first = refitted.build(&options).unwrap();
        assert_eq!(first.context.receipt.cache.unwrap().reason, Some(crate::compact::EventReason::First));
        let note = first.context.receipt.notes.last().cloned().unwrap_or_default();
        assert!(note.contains("the exported frame") && note.contains("ends at another message"), "{note}");
        // One that is not a frame at all is a corrupt export, as any other field.
        let mut damaged = exported.clone();
        damaged["history"]["frame"]["messages"] = json!("none");
        assert!(Session::import(damaged).unwrap_err().message.contains("frame"));
        // A newer library's export is refused as before.
        let mut newer = exported;
        newer["version"] = 2.into();
        assert!(Session::import(newer).unwrap_err().message.contains("newer than this library"));
    }
}
