//! A session: an id, the conversation history, the optional memory, a loop counter, and
//! metadata. A sub-agent (seed 000's call_subagent) is a child session with an isolated history
//! that hands its parent one compact result.

use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::history::ConversationHistory;
use crate::ids::fnv1a;
use crate::memory::MemoryStore;
use crate::message::{Content, Format, Message, Part, Role};
use crate::tokens::Encoding;

pub const MAIN_CONTEXT_ID: &str = "main";
pub const DEFAULT_MAX_LOOPS: u32 = 10;

#[derive(Clone, Debug)]
pub struct Session {
    id: String,
    parent_id: Option<String>,
    pub history: ConversationHistory,
    pub memory: Option<MemoryStore>,
    loops: u32,
    max_loops: u32,
    subagents_spawned: u32,
    pub metadata: Map<String, Value>,
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

impl Session {
    pub fn new(id: &str, encoding: Encoding, max_loops: u32) -> Result<Session> {
        validate_session_id(id)?;
        if max_loops == 0 {
            return Err(Error::invalid_argument("max_loops must be at least 1"));
        }
        Ok(Session {
            id: id.to_string(),
            parent_id: None,
            history: ConversationHistory::new(encoding),
            memory: None,
            loops: 0,
            max_loops,
            subagents_spawned: 0,
            metadata: Map::new(),
        })
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

    /// Counts one more agent loop; refuses to go past the maximum.
    pub fn next_loop(&mut self) -> Result<u32> {
        if self.loops >= self.max_loops {
            return Err(Error::invalid_argument(format!(
                "{} reached its limit of {} loops",
                self.id, self.max_loops
            )));
        }
        self.loops += 1;
        Ok(self.loops)
    }

    /// A child context with a fresh history that starts with `task` as the user's request.
    pub fn spawn_subagent(&mut self, task: &str, max_loops: u32) -> Result<Session> {
        if task.trim().is_empty() {
            return Err(Error::invalid_argument("a sub-agent needs a task"));
        }
        self.subagents_spawned += 1;
        let tag = fnv1a(&[&self.id, &self.subagents_spawned.to_string(), task]);
        let mut child = Session::new(&format!("subagent-{tag:08x}"), self.history.encoding(), max_loops)?;
        child.parent_id = Some(self.id.clone());
        child
            .history
            .append_all(vec![Message::new(Role::User, Content::text(task), Format::OpenAi)])?;
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
}
