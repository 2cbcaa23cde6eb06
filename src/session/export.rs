//! A session as one versioned JSON document, and back.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{validate_session_id, Session};
use crate::compact::SummaryState;
use crate::error::{Error, Result};
use crate::history::{corrupt, ConversationHistory, LoggedMessage};
use crate::memory::{self, MemoryExport, MemoryStore};
use crate::message::Format;
use crate::tokens::Encoding;

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
    pub turn_start: usize,
    #[cfg_attr(test, ts(type = "Record<string, unknown>"))]
    pub metadata: Map<String, Value>,
    pub history: HistoryExport,
    pub memory: Option<MemoryExport>,
    pub max_snapshot_chars: Option<usize>,
}

/// A history as JSON: every message in the format it arrived in, with its id, and the summary
/// state. It travels inside a session export, which carries the version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct HistoryExport {
    #[cfg_attr(test, ts(type = "EncodingName"))]
    pub encoding: Encoding,
    pub messages: Vec<LoggedMessage>,
    pub summary: SummaryState,
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
            turn_start: self.turn_start,
            metadata: self.metadata.clone(),
            history: HistoryExport {
                encoding: self.history.encoding(),
                messages: self.history.logged()?,
                summary: self.compactor.summary_state().clone(),
            },
            memory: self.memory.as_ref().map(MemoryStore::export),
            max_snapshot_chars: self.memory.as_ref().map(MemoryStore::max_snapshot_chars),
        })
    }

    /// A session from its export, checked whole before anything is built: a corrupt, truncated
    /// or newer export is an error that names what is wrong.
    pub fn import(value: Value) -> Result<Session> {
        crate::versioned::check_header(&value, EXPORT_FORMAT, EXPORT_VERSION, "session")?;
        let export: SessionExport = crate::error::from_json(value, "corrupt session export")?;
        Session::from_export(export)
    }

    /// A session from an export already read (or assembled from stored records), with every
    /// check `import` makes.
    pub fn from_export(export: SessionExport) -> Result<Session> {
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
        let HistoryExport { encoding, messages, summary } = export.history;
        session.history = ConversationHistory::from_logged(encoding, messages)?;
        session.compactor.set_summary_state(summary, &session.history).map_err(|e| corrupt("its summary state", e))?;
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
    use crate::session::memory::tests::agent_with_two_turns;
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
