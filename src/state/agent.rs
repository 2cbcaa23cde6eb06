//! The agent's state beside the messages: todos, tool permissions, the active skill, mentions,
//! the model preference, the workspace and the uploaded files. The loop counter and its maximum,
//! the context id, parent and thread id are the session's own (`Session::app_state`).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The most items any list of the state holds, and the longest text of any of its strings.
pub const MAX_STATE_ITEMS: usize = 1_000;
pub const MAX_STATE_TEXT: usize = 4_000;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum TodoStatus {
    #[default]
    Pending,
    InProgress,
    Completed,
    Cancelled,
}

/// One task of the list (`todos`, as TodoWrite keeps it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Todo {
    pub content: String,
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<TodoStatus>", optional))]
    pub status: TodoStatus,
}

impl Todo {
    pub fn is_open(&self) -> bool {
        matches!(self.status, TodoStatus::Pending | TodoStatus::InProgress)
    }

    /// The line the prompt and the summary's pending work show.
    pub fn line(&self) -> String {
        match self.status {
            TodoStatus::InProgress => format!("{} (in progress)", self.content),
            _ => self.content.clone(),
        }
    }
}

/// A file the user uploaded (listed in the context's uploaded-files section).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct UploadedFile {
    pub name: String,
    /// Where the agent finds it (a workspace path or URL).
    pub path: Option<String>,
    pub media_type: Option<String>,
    /// In bytes.
    pub size: Option<u64>,
    pub description: Option<String>,
}

/// The agent's state beside its messages. Every field optional on input.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AgentState {
    #[cfg_attr(test, ts(as = "Option<Vec<Todo>>", optional))]
    pub todos: Vec<Todo>,
    /// The tools the agent may use now.
    #[cfg_attr(test, ts(as = "Option<Vec<String>>", optional))]
    pub allowed_tools: Vec<String>,
    /// Tools that stay allowed for the whole session.
    #[cfg_attr(test, ts(as = "Option<Vec<String>>", optional))]
    pub persistent_tools: Vec<String>,
    #[cfg_attr(test, ts(optional))]
    pub active_skill: Option<String>,
    /// The agents, skills or tools the user @-mentioned.
    #[cfg_attr(test, ts(as = "Option<Vec<String>>", optional))]
    pub mentioned_agents: Vec<String>,
    /// The model the user prefers (vision, code, …).
    #[cfg_attr(test, ts(optional))]
    pub model_pref: Option<String>,
    #[cfg_attr(test, ts(optional))]
    pub workspace_path: Option<String>,
    #[cfg_attr(test, ts(optional))]
    pub user_id: Option<String>,
    #[cfg_attr(test, ts(as = "Option<Vec<UploadedFile>>", optional))]
    pub uploaded_files: Vec<UploadedFile>,
}

fn check_text(what: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::invalid_argument(format!("state.{what} is empty")));
    }
    if text.chars().count() > MAX_STATE_TEXT {
        return Err(Error::invalid_argument(format!("state.{what} is over {MAX_STATE_TEXT} characters")));
    }
    Ok(())
}

fn check_list<T>(what: &str, list: &[T], each: impl Fn(&str, &T) -> Result<()>) -> Result<()> {
    if list.len() > MAX_STATE_ITEMS {
        return Err(Error::invalid_argument(format!("state.{what} has {} items, over {MAX_STATE_ITEMS}", list.len())));
    }
    list.iter().enumerate().try_for_each(|(i, item)| each(&format!("{what}[{i}]"), item))
}

fn check_names(what: &str, names: &[String]) -> Result<()> {
    check_list(what, names, |at, name| {
        check_text(at, name)?;
        if name.contains(['\n', '\r']) {
            return Err(Error::invalid_argument(format!("state.{at} must be one line")));
        }
        Ok(())
    })?;
    for (i, name) in names.iter().enumerate() {
        if names[..i].contains(name) {
            return Err(Error::invalid_argument(format!("state.{what} names {name:?} twice")));
        }
    }
    Ok(())
}

impl AgentState {
    /// The checks `setState` and an import make alike.
    pub fn validate(&self) -> Result<()> {
        check_list("todos", &self.todos, |at, todo| check_text(&format!("{at}.content"), &todo.content))?;
        check_names("allowedTools", &self.allowed_tools)?;
        check_names("persistentTools", &self.persistent_tools)?;
        check_names("mentionedAgents", &self.mentioned_agents)?;
        for (what, value) in [
            ("activeSkill", &self.active_skill),
            ("modelPref", &self.model_pref),
            ("workspacePath", &self.workspace_path),
            ("userId", &self.user_id),
        ] {
            if let Some(value) = value {
                check_text(what, value)?;
            }
        }
        check_list("uploadedFiles", &self.uploaded_files, |at, file| {
            check_text(&format!("{at}.name"), &file.name)?;
            for (what, value) in
                [("path", &file.path), ("mediaType", &file.media_type), ("description", &file.description)]
            {
                if let Some(value) = value {
                    check_text(&format!("{at}.{what}"), value)?;
                }
            }
            Ok(())
        })
    }

    pub fn open_todos(&self) -> impl Iterator<Item = &Todo> {
        self.todos.iter().filter(|t| t.is_open())
    }
}

/// The agent state whole: the state above and the session's own fields.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AppState {
    #[serde(flatten)]
    pub state: AgentState,
    /// "main", or "subagent-xxxxxxxx".
    pub context_id: String,
    pub parent_context: Option<String>,
    /// The session id that persists it (a sub-agent's is its context id: it is isolated).
    pub thread_id: String,
    pub loops: u32,
    pub max_loops: u32,
}
