//! The extractive summary: a handoff written from what the log says, without a model. Compaction's
//! built-in summariser (and its bridge while a model's summary is awaited) renders it as JSON with
//! the sections of the summaries coding agents write for themselves, in this order:
//!
//! * `primaryRequest`: the task (the request pinned explicitly, else the first user text that is
//!   not harness text), and the latest request when a later one changes it;
//! * `userMessages`: every user message, harness text (`injected`) left out;
//! * `files`: each path with what was done to it (`"edited ×3, read"`), changed files first;
//! * `errors`: each error with the call that produced it, `[fixed]` once the same kind of call
//!   succeeded later;
//! * `pendingTasks`: the latest todo list's open items, unchecked plan items, TODO notes;
//! * `currentWork`: the last calls before the cut, with their files and outcome;
//! * `nextStep`: the assistant's last statement of intent, else the first pending task;
//! * `toolsUsed`: how often each tool was called.
//!
//! It is deterministic and fits its token budget by dropping the least important entries first
//! (scratch files, fixed errors, read-only files, old user messages but the first, …), never the
//! primary request entirely. A previous summary of this shape is folded in (files merged by path,
//! messages appended, pending tasks replaced by the newest todo state); any other is carried as
//! `earlier`. The memory's built-in turn summaries read the same extract.

mod files;
mod injected;
mod render;

use render::fold_previous;
pub use render::{extractive, extractive_with_todos, PinnedTask};

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use files::{clean_path, is_temporary, looks_like_file, mentions_file, read_path, FileOp};
pub use injected::{is_injected, strip_injected};

use crate::message::{Content, Message, Part, Role, ToolCall};
use crate::tokens::Encoding;

pub(crate) use files::call_files;

/// The sections' keys, in the order they are rendered.
const KEYS: [&str; 9] = [
    "earlier",
    "primaryRequest",
    "userMessages",
    "files",
    "errors",
    "pendingTasks",
    "currentWork",
    "nextStep",
    "toolsUsed",
];

/// Characters kept of the task, of the latest request, of each user message, of an error line.
const TASK_CHARS: usize = 2000;
const LATEST_CHARS: usize = 600;
const MESSAGE_CHARS: usize = 400;
const ERROR_CHARS: usize = 200;
/// Calls listed under `currentWork`.
const CURRENT_WORK: usize = 8;

/// One file and what was done to it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct FileEntry {
    pub(crate) path: String,
    /// Counts per operation, in `FileOp::ALL` order.
    pub(crate) ops: [u32; 7],
    /// When it was last touched (for the order: most recent first).
    last: u64,
}

impl FileEntry {
    /// 0: changed, 1: read or run, 2: only searched or mentioned, 3: a scratch file.
    fn class(&self) -> u8 {
        if is_temporary(&self.path) {
            3
        } else if FileOp::ALL.iter().zip(self.ops).any(|(op, n)| n > 0 && op.changes()) {
            0
        } else if self.ops[3] + self.ops[4] > 0 {
            1
        } else {
            2
        }
    }

    /// `edited ×3, read`.
    pub(crate) fn ops_text(&self) -> String {
        let parts: Vec<String> = FileOp::ALL
            .iter()
            .zip(self.ops)
            .filter(|(_, n)| *n > 0)
            .map(|(op, n)| if n > 1 { format!("{} ×{n}", op.as_str()) } else { op.as_str().to_string() })
            .collect();
        parts.join(", ")
    }
}

/// One error and the call that produced it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ErrorEntry {
    /// `Bash: mix compile`, `Read: lib/x.ex`.
    pub(crate) call: String,
    pub(crate) error: String,
    pub(crate) fixed: bool,
}

impl ErrorEntry {
    pub(crate) fn text(&self) -> String {
        let fixed = if self.fixed { " [fixed]" } else { "" };
        format!("{} → {}{fixed}", self.call, self.error)
    }
}

/// What the extractive summariser takes from messages (the memory's turn summaries use it too).
#[derive(Clone, Debug, Default)]
pub(crate) struct Extract {
    earlier: Option<String>,
    /// The task, and the latest request when it differs.
    pub(crate) task: Option<String>,
    pub(crate) latest: Option<String>,
    /// A deque: fitting a long history's summary drops them from the second on, one at a time.
    pub(crate) user_messages: std::collections::VecDeque<String>,
    pub(crate) files: Vec<FileEntry>,
    pub(crate) errors: Vec<ErrorEntry>,
    pub(crate) pending: Vec<String>,
    pub(crate) current: Vec<String>,
    pub(crate) next_step: Option<String>,
    pub(crate) tools: BTreeMap<String, u64>,
    /// The assistant's last text (the memory's "answered").
    pub(crate) last_text: Option<String>,
    clock: u64,
}

/// Whitespace runs collapsed, cut to `max_chars` with an ellipsis.
pub(crate) fn squash(text: &str, max_chars: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if collapsed.chars().count() <= max_chars {
        collapsed
    } else {
        let cut: String = collapsed.chars().take(max_chars).collect();
        format!("{cut}…")
    }
}

/// `text` if it has at most `max_chars` characters, else its head and tail around a marker saying
/// how much was left out (`[... N chars omitted ...]`).
pub fn cut_middle(text: &str, max_chars: usize) -> String {
    let total = text.chars().count();
    if total <= max_chars {
        return text.to_string();
    }
    let head = max_chars / 2;
    let tail = max_chars - head;
    head_tail(text, head, tail)
}

/// The first `head` and last `tail` characters of `text` around the omission marker (the text
/// itself when it is not longer than the two).
pub fn head_tail(text: &str, head: usize, tail: usize) -> String {
    let total = text.chars().count();
    if total <= head + tail {
        return text.to_string();
    }
    let start: String = text.chars().take(head).collect();
    let end: String = text.chars().skip(total - tail).collect();
    format!("{start}\n\n[... {} chars omitted ...]\n\n{end}", total - head - tail)
}

fn content_text(content: &Content) -> String {
    let mut out = String::new();
    for part in &content.parts {
        if let Part::Text { text, .. } = part {
            if !out.is_empty() {
                out.push('\n');
            }
            out.push_str(text);
        }
    }
    out
}

/// Whether a tool's output reads as a failure (when the call does not say so itself).
fn looks_like_error(text: &str) -> bool {
    let head: String = text.trim_start().chars().take(200).collect::<String>().to_ascii_lowercase();
    head.starts_with("error")
        || head.starts_with("exception")
        || head.contains("traceback (most recent call last)")
        || head.starts_with("failed")
        || head.contains("command failed")
        || head.starts_with("fatal:")
        || head.starts_with("panic")
        || head.contains("\"error\":")
        || head.starts_with("** (")
        || head.strip_prefix("exit code ").is_some_and(|rest| !rest.starts_with('0'))
}

/// The line of a failed output that says what went wrong: the first that reads as an error, else
/// the first that is not just an exit status.
fn error_line(text: &str) -> String {
    const MARKS: [&str; 14] = [
        "error",
        "exception",
        "traceback",
        "failed",
        "failure",
        "fatal",
        "panic",
        "undefined",
        "cannot",
        "can't",
        "not found",
        "no such file",
        "denied",
        "** (",
    ];
    let lines: Vec<&str> = text.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    let is_status = |l: &str| l.to_ascii_lowercase().starts_with("exit code");
    let line = lines
        .iter()
        .find(|l| !is_status(l) && MARKS.iter().any(|m| l.to_ascii_lowercase().contains(m)))
        .or_else(|| lines.iter().find(|l| !is_status(l)))
        .or_else(|| lines.first())
        .copied()
        .unwrap_or("error");
    squash(line, ERROR_CHARS)
}

/// `Bash: mix compile --force`, `Edit: lib/x.ex`, `lookup: {"id":3}`: the call in a few words.
fn describe_call(call: &ToolCall, input: Option<&Value>, paths: &[(String, FileOp)]) -> String {
    let command = input.and_then(|i| {
        ["command", "cmd", "script"].iter().find_map(|k| match i.get(*k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(words)) => Some(words.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")),
            _ => None,
        })
    });
    let todo = input.is_some_and(is_todo_list);
    let detail = match (command, paths.first()) {
        _ if todo => "updated the todo list".to_string(),
        (Some(command), _) => squash(&command, 100),
        (None, Some((path, _))) => path.clone(),
        (None, None) => match input {
            Some(Value::Object(map)) if map.is_empty() => String::new(),
            Some(value) => squash(&crate::util::json_text::value_text(value), 80),
            None => String::new(),
        },
    };
    if detail.is_empty() {
        call.name.clone()
    } else {
        format!("{}: {detail}", call.name)
    }
}

/// A call's arguments that hold a todo list (`todos`, or a plan's steps).
fn is_todo_list(input: &Value) -> bool {
    input.get("todos").is_some_and(Value::is_array) || input.get("plan").is_some_and(Value::is_array)
}

/// What makes two calls "the same kind" for `fixed`: the tool and its first two words of detail
/// (`Bash: mix test …` and `Bash: mix test --failed`).
fn kind_key(call_text: &str) -> String {
    let (name, detail) = call_text.split_once(": ").unwrap_or((call_text, ""));
    let words: Vec<&str> = detail.split_whitespace().take(2).collect();
    format!("{name}|{}", words.join(" "))
}

/// Sentences that say what the assistant will do next.
fn intent(text: &str) -> Option<String> {
    const OPENERS: [&str; 15] = [
        "let me ",
        "let's ",
        "i'll ",
        "i will ",
        "i'm going to ",
        "i am going to ",
        "next, ",
        "next i",
        "now i'll",
        "now let me",
        "now let's",
        "now i need",
        "i need to ",
        "the next step",
        "then i'll",
    ];
    const IDLE: [&str; 7] = ["wait", "still ", "sleep", "monitor", "check on", "check the status", "keep an eye"];
    let mut found = None;
    // Sentences end at a stop followed by a space or the end, or at a line's end (`app.ex` does not end one).
    let mut sentences = Vec::new();
    let mut start = 0;
    let bytes = text.as_bytes();
    for (i, c) in text.char_indices() {
        let next = bytes.get(i + 1).copied();
        if c == '\n' || matches!(c, '.' | '!' | '?') && next.is_none_or(|b| b.is_ascii_whitespace()) {
            sentences.push(text.get(start..=i).unwrap_or(""));
            start = i + 1;
        }
    }
    sentences.push(text.get(start..).unwrap_or(""));
    for sentence in sentences {
        let s = sentence.trim();
        let lower = s.to_ascii_lowercase();
        if OPENERS.iter().any(|o| lower.starts_with(o)) && !IDLE.iter().any(|i| lower.contains(i)) && s.len() > 12 {
            found = Some(squash(s, 300));
        }
    }
    found
}

impl Extract {
    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn touch(&mut self, path: String, op: FileOp) {
        let tail = |long: &str, short: &str| {
            long.len() > short.len() && long.ends_with(short) && long[..long.len() - short.len()].ends_with('/')
        };
        if op == FileOp::Mentioned && self.files.iter().any(|f| f.path == path || tail(&f.path, &path)) {
            return;
        }
        if op != FileOp::Mentioned {
            // A mention of `lib/x.ex` is this `/app/lib/x.ex`.
            self.files.retain(|f| !(tail(&path, &f.path) && f.ops.iter().enumerate().all(|(i, n)| *n == 0 || i == 6)));
        }
        let now = self.tick();
        let index = FileOp::ALL.iter().position(|o| *o == op).unwrap_or(6);
        match self.files.iter_mut().find(|f| f.path == path) {
            Some(entry) => {
                // Writing a file read or edited before edits it.
                let index = if op == FileOp::Created && entry.ops.iter().any(|n| *n > 0) { 1 } else { index };
                if let Some(n) = entry.ops.get_mut(index) {
                    *n += 1;
                }
                entry.last = now;
            }
            None => {
                let mut ops = [0; 7];
                if let Some(n) = ops.get_mut(index) {
                    *n = 1;
                }
                self.files.push(FileEntry { path, ops, last: now });
            }
        }
    }

    /// A user message's text: the task if there is none yet, else the latest request (unless it
    /// comes before the pinned task, `after_task` false).
    fn user_text(&mut self, text: &str, after_task: bool) {
        let own = strip_injected(text);
        let own = own.trim();
        if own.is_empty() {
            return;
        }
        if self.task.is_none() {
            self.task = Some(cut_middle(own, TASK_CHARS));
        } else if after_task {
            self.latest = Some(cut_middle(own, LATEST_CHARS));
        }
        let line = squash(own, MESSAGE_CHARS);
        if self.user_messages.back() != Some(&line) {
            self.user_messages.push_back(line);
        }
        for token in own.split_whitespace() {
            if mentions_file(token) {
                if let Some(path) = clean_path(token) {
                    self.touch(path, FileOp::Mentioned);
                }
            }
        }
    }

    fn assistant_text(&mut self, text: &str) {
        if text.trim().is_empty() {
            return;
        }
        for line in text.lines() {
            let trimmed = line.trim_start();
            if let Some(rest) = trimmed.strip_prefix("- [ ]").or_else(|| trimmed.strip_prefix("* [ ]")) {
                let item = squash(rest, 200);
                if !item.is_empty() && !self.pending.contains(&item) {
                    self.pending.push(item);
                }
            } else if let Some(rest) = trimmed.strip_prefix("- [x]").or_else(|| trimmed.strip_prefix("- [X]")) {
                let item = squash(rest, 200);
                self.pending.retain(|p| *p != item);
            } else if let Some(at) = trimmed.find("TODO:") {
                let item = squash(trimmed.get(at + 5..).unwrap_or(""), 200);
                if !item.is_empty() && !self.pending.contains(&item) {
                    self.pending.push(item);
                }
            }
        }
        if let Some(next) = intent(text) {
            self.next_step = Some(next);
        }
        self.last_text = Some(squash(text, 400));
    }

    /// A todo tool's list (`TodoWrite`, `todo_write`, Codex's `update_plan`): its open items
    /// replace the pending tasks.
    fn todo_list(&mut self, input: &Value) {
        let (list, text_key) = match (input.get("todos"), input.get("plan")) {
            (Some(Value::Array(list)), _) => (list, "content"),
            (_, Some(Value::Array(list))) => (list, "step"),
            _ => return,
        };
        let open: Vec<String> = list
            .iter()
            .filter(|item| {
                !matches!(item.get("status").and_then(Value::as_str), Some("completed" | "cancelled" | "done"))
            })
            .filter_map(|item| {
                let text = item.get(text_key).or_else(|| item.get("content")).and_then(Value::as_str)?;
                let doing = item.get("status").and_then(Value::as_str) == Some("in_progress");
                Some(format!("{}{}", squash(text, 200), if doing { " (in progress)" } else { "" }))
            })
            .collect();
        self.pending = open;
    }
}

/// Reads what `messages` say, onto `previous` (a summary this module wrote, or any other text):
/// the first new user text is then a later request, files merge by path, new errors are appended
/// and older ones of a kind that now succeeds are fixed, a new todo list replaces the pending tasks,
/// the current work and next step are the new ones when there are any.
pub(crate) fn extract<M: std::borrow::Borrow<Message>>(messages: &[M], previous: Option<&str>) -> Extract {
    extract_pinned(messages, previous, None)
}

/// `extract`, the task being `pinned` when a request is pinned: the user texts before it are
/// not later requests.
pub(crate) fn extract_pinned<M: std::borrow::Borrow<Message>>(
    messages: &[M],
    previous: Option<&str>,
    pinned: Option<PinnedTask>,
) -> Extract {
    extract_from(&mut messages.iter().map(std::borrow::Borrow::borrow), previous, pinned)
}

/// `extract_pinned`'s work, compiled once for the callers' kinds of message list.
fn extract_from(
    messages: &mut dyn Iterator<Item = &Message>,
    previous: Option<&str>,
    pinned: Option<PinnedTask>,
) -> Extract {
    let mut ex = Extract::default();
    if let Some(previous) = previous {
        fold_previous(&mut ex, previous);
    }
    if let Some(task) = pinned.as_ref().map(|p| strip_injected(p.text)).filter(|t| !t.trim().is_empty()) {
        let task = cut_middle(task.trim(), TASK_CHARS);
        if ex.latest.as_deref() == Some(task.as_str()) {
            ex.latest = None;
        }
        ex.task = Some(task);
    }
    let after = pinned.as_ref().map_or(0, |p| p.after);
    // Per call id: its description, and the index of its line under `currentWork`.
    let mut calls: crate::util::fasthash::FastMap<String, (String, usize)> = Default::default();
    let mut current: Vec<String> = Vec::new();
    let mut open_file: Option<String> = None;
    for (i, message) in messages.enumerate() {
        match message.role {
            Role::User | Role::Tool => {
                let mut text = String::new();
                for part in &message.content.parts {
                    match part {
                        Part::Text { text: t, .. } => {
                            if !text.is_empty() {
                                text.push('\n');
                            }
                            text.push_str(t);
                        }
                        Part::ToolResult(result) => {
                            let body = content_text(&result.content);
                            let (call_text, line) =
                                calls.get(&result.call_id).cloned().unwrap_or_else(|| ("tool".to_string(), usize::MAX));
                            if result.is_error == Some(true) || looks_like_error(&body) {
                                let error = error_line(&body);
                                let entry = ErrorEntry { call: call_text.clone(), error: error.clone(), fixed: false };
                                if !ex.errors.iter().any(|e| e.call == entry.call && e.error == entry.error) {
                                    ex.errors.push(entry);
                                }
                                if let Some(slot) = current.get_mut(line) {
                                    slot.push_str(&format!(" → failed: {}", squash(&error, 120)));
                                }
                            } else {
                                let key = kind_key(&call_text);
                                for error in ex.errors.iter_mut().filter(|e| kind_key(&e.call) == key) {
                                    error.fixed = true;
                                }
                            }
                        }
                        _ => {}
                    }
                }
                if message.role == Role::User {
                    ex.user_text(&text, i >= after);
                }
            }
            Role::Assistant => {
                ex.assistant_text(&message.content.joined_text());
                for call in message.tool_calls() {
                    *ex.tools.entry(call.name.clone()).or_default() += 1;
                    // Parsed once for the three readers of a call's arguments.
                    let input = files::input_value(&call.input);
                    let ops = input.as_deref().map_or_else(Vec::new, |i| files::ops_of(&call.name, i, &mut open_file));
                    let call_text = describe_call(call, input.as_deref(), &ops);
                    for (path, op) in ops {
                        ex.touch(path, op);
                    }
                    if let Some(input) = input.as_deref().filter(|i| is_todo_list(i)) {
                        ex.todo_list(input);
                    }
                    current.push(call_text.clone());
                    calls.insert(call.id.clone(), (call_text, current.len() - 1));
                }
            }
            Role::System | Role::Developer => {}
        }
    }
    if !current.is_empty() {
        let skip = current.len().saturating_sub(CURRENT_WORK);
        ex.current = current.into_iter().skip(skip).collect();
    }
    if ex.next_step.is_none() {
        ex.next_step = ex.pending.first().map(|p| format!("Continue with: {p}"));
    }
    ex
}

#[cfg(test)]
mod tests;
