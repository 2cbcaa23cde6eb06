//! The extractive summary: a handoff written from what the log says, without a model. Compaction's
//! built-in summariser (and its bridge while a model's summary is awaited) renders it as JSON with
//! the sections of the summaries coding agents write for themselves, in this order:
//!
//! * `primaryRequest`: the task (the first user text that is not harness text), and the latest
//!   request when a later one changes it;
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

use std::collections::BTreeMap;

use serde_json::{Map, Value};

pub use files::{clean_path, is_temporary, looks_like_file, mentions_file, read_path, FileOp};
pub use injected::{is_injected, strip_injected};

use crate::message::{Content, Message, Part, Role, ToolCall};
use crate::tokens::Encoding;

pub(crate) use files::call_ops;

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
    pub(crate) user_messages: Vec<String>,
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
/// how much was left out (seed 004's `[... N chars omitted ...]`).
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
    let head: String = text.trim_start().chars().take(200).collect::<String>().to_lowercase();
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
    let is_status = |l: &str| l.to_lowercase().starts_with("exit code");
    let line = lines
        .iter()
        .find(|l| !is_status(l) && MARKS.iter().any(|m| l.to_lowercase().contains(m)))
        .or_else(|| lines.iter().find(|l| !is_status(l)))
        .or_else(|| lines.first())
        .copied()
        .unwrap_or("error");
    squash(line, ERROR_CHARS)
}

/// `Bash: mix compile --force`, `Edit: lib/x.ex`, `lookup: {"id":3}`: the call in a few words.
fn describe_call(call: &ToolCall, paths: &[(String, FileOp)]) -> String {
    let input = files::input_value(&call.input);
    let command = input.as_ref().and_then(|i| {
        ["command", "cmd", "script"].iter().find_map(|k| match i.get(*k) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(words)) => Some(words.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" ")),
            _ => None,
        })
    });
    let todo = input
        .as_ref()
        .is_some_and(|i| i.get("todos").is_some_and(Value::is_array) || i.get("plan").is_some_and(Value::is_array));
    let detail = match (command, paths.first()) {
        _ if todo => "updated the todo list".to_string(),
        (Some(command), _) => squash(&command, 100),
        (None, Some((path, _))) => path.clone(),
        (None, None) => match &input {
            Some(Value::Object(map)) if map.is_empty() => String::new(),
            Some(value) => squash(&value.to_string(), 80),
            None => String::new(),
        },
    };
    if detail.is_empty() {
        call.name.clone()
    } else {
        format!("{}: {detail}", call.name)
    }
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
        let lower = s.to_lowercase();
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

    fn user_text(&mut self, text: &str) {
        let own = strip_injected(text);
        let own = own.trim();
        if own.is_empty() {
            return;
        }
        if self.task.is_none() {
            self.task = Some(cut_middle(own, TASK_CHARS));
        } else {
            self.latest = Some(cut_middle(own, LATEST_CHARS));
        }
        let line = squash(own, MESSAGE_CHARS);
        if self.user_messages.last() != Some(&line) {
            self.user_messages.push(line);
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
    let mut ex = Extract::default();
    if let Some(previous) = previous {
        fold_previous(&mut ex, previous);
    }
    // Per call id: its description, and the index of its line under `currentWork`.
    let mut calls: BTreeMap<String, (String, usize)> = BTreeMap::new();
    let mut current: Vec<String> = Vec::new();
    let mut open_file: Option<String> = None;
    for message in messages {
        let message: &Message = message.borrow();
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
                    ex.user_text(&text);
                }
            }
            Role::Assistant => {
                ex.assistant_text(&message.content.joined_text());
                for call in message.tool_calls() {
                    *ex.tools.entry(call.name.clone()).or_default() += 1;
                    let ops = call_ops(call, &mut open_file);
                    let call_text = describe_call(call, &ops);
                    for (path, op) in ops {
                        ex.touch(path, op);
                    }
                    if let Some(input) = files::input_value(&call.input) {
                        if input.get("todos").is_some_and(Value::is_array)
                            || input.get("plan").is_some_and(Value::is_array)
                        {
                            ex.todo_list(&input);
                        }
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

fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Folds a previous summary in: ours section by section, anyone else's as `earlier`.
fn fold_previous(ex: &mut Extract, previous: &str) {
    let ours = match serde_json::from_str::<Value>(previous) {
        Ok(Value::Object(map)) if !map.is_empty() && map.keys().all(|k| KEYS.contains(&k.as_str())) => map,
        // Someone else's summary (a model's): carried as it is.
        _ => {
            ex.earlier = Some(previous.to_string());
            return;
        }
    };
    ex.earlier = ours.get("earlier").and_then(Value::as_str).map(String::from);
    if let Some(primary) = ours.get("primaryRequest").and_then(Value::as_str) {
        match primary.split_once("\n\nLatest request: ") {
            Some((task, latest)) => {
                ex.task = Some(task.to_string());
                ex.latest = Some(latest.to_string());
            }
            None => ex.task = Some(primary.to_string()),
        }
    }
    ex.user_messages = strings(ours.get("userMessages"));
    if let Some(Value::Object(files)) = ours.get("files") {
        // Rendered most recent first within their class: older entries get older clocks.
        let count = files.len() as u64;
        for (i, (path, ops)) in files.iter().enumerate() {
            let mut counts = [0u32; 7];
            for op in ops.as_str().unwrap_or("").split(", ") {
                let (name, n) = match op.split_once(" ×") {
                    Some((name, n)) => (name, n.parse().unwrap_or(1)),
                    None => (op, 1),
                };
                if let Some(at) = FileOp::parse(name).and_then(|op| FileOp::ALL.iter().position(|o| *o == op)) {
                    if let Some(slot) = counts.get_mut(at) {
                        *slot += n;
                    }
                }
            }
            ex.files.push(FileEntry { path: path.clone(), ops: counts, last: count - i as u64 });
        }
        ex.clock = count + 1;
    }
    for text in strings(ours.get("errors")) {
        let (body, fixed) = match text.strip_suffix(" [fixed]") {
            Some(body) => (body.to_string(), true),
            None => (text.clone(), false),
        };
        let (call, error) =
            body.split_once(" → ").map_or(("tool".to_string(), body.clone()), |(c, e)| (c.to_string(), e.to_string()));
        ex.errors.push(ErrorEntry { call, error, fixed });
    }
    ex.pending = strings(ours.get("pendingTasks"));
    ex.current = strings(ours.get("currentWork"));
    ex.next_step = ours.get("nextStep").and_then(Value::as_str).map(String::from);
    if let Some(Value::Object(tools)) = ours.get("toolsUsed") {
        for (name, count) in tools {
            ex.tools.insert(name.clone(), count.as_u64().unwrap_or(0));
        }
    }
}

/// The files, most important first: changed, then read or run, then mentioned, then scratch files;
/// the most recently touched first within each.
fn ordered_files(files: &[FileEntry]) -> Vec<&FileEntry> {
    let mut list: Vec<&FileEntry> = files.iter().collect();
    list.sort_by(|a, b| a.class().cmp(&b.class()).then(b.last.cmp(&a.last)).then(a.path.cmp(&b.path)));
    list
}

fn primary_text(ex: &Extract) -> Option<String> {
    let task = ex.task.as_ref()?;
    Some(match &ex.latest {
        Some(latest) if latest != task => format!("{task}\n\nLatest request: {latest}"),
        _ => task.clone(),
    })
}

fn render(ex: &Extract) -> String {
    let mut map = Map::new();
    if let Some(earlier) = &ex.earlier {
        map.insert("earlier".into(), Value::from(earlier.clone()));
    }
    if let Some(primary) = primary_text(ex) {
        map.insert("primaryRequest".into(), Value::from(primary));
    }
    if !ex.user_messages.is_empty() {
        map.insert("userMessages".into(), Value::from(ex.user_messages.clone()));
    }
    if !ex.files.is_empty() {
        let files: Map<String, Value> =
            ordered_files(&ex.files).into_iter().map(|f| (f.path.clone(), Value::from(f.ops_text()))).collect();
        map.insert("files".into(), Value::Object(files));
    }
    if !ex.errors.is_empty() {
        map.insert("errors".into(), Value::from(ex.errors.iter().map(ErrorEntry::text).collect::<Vec<_>>()));
    }
    if !ex.pending.is_empty() {
        map.insert("pendingTasks".into(), Value::from(ex.pending.clone()));
    }
    if !ex.current.is_empty() {
        map.insert("currentWork".into(), Value::from(ex.current.clone()));
    }
    if let Some(next) = &ex.next_step {
        map.insert("nextStep".into(), Value::from(next.clone()));
    }
    if !ex.tools.is_empty() {
        let tools: Map<String, Value> = ex.tools.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
        map.insert("toolsUsed".into(), Value::Object(tools));
    }
    serde_json::to_string(&Value::Object(map)).unwrap_or_default()
}

/// A deterministic handoff summary of `messages`, folded onto `previous`, within `max_tokens`.
pub fn extractive<M: std::borrow::Borrow<Message>>(
    messages: &[M],
    previous: Option<&str>,
    encoding: Encoding,
    max_tokens: u32,
) -> String {
    fit(extract(messages, previous), encoding, max_tokens as usize)
}

/// Renders `ex` within `max` tokens, dropping the least important entries first.
fn fit(mut ex: Extract, encoding: Encoding, max: usize) -> String {
    for _ in 0..64 {
        let text = render(&ex);
        let n = encoding.count(&text);
        if n <= max {
            return text;
        }
        // Drop what the estimate says is enough, with a little to spare for the joins.
        let mut excess = (n - max) as i64 + 2 + (n - max) as i64 / 20;
        while excess > 0 {
            match trim_one(&mut ex, encoding) {
                Some(saved) => excess -= saved as i64,
                None => break,
            }
        }
        if excess > 0 {
            break;
        }
    }
    // Nothing left to cut: the shortest honest summary.
    let minimal = "{\"note\":\"earlier messages summarised; details left out to fit the budget\"}".to_string();
    if encoding.count(&minimal) <= max {
        minimal
    } else {
        "summarised".to_string()
    }
}

fn cost(encoding: Encoding, text: &str) -> usize {
    encoding.count(text) + 3
}

/// Removes (or shortens) the least important entry; returns about how many tokens that saved,
/// `None` when nothing is left but what must stay.
fn trim_one(ex: &mut Extract, encoding: Encoding) -> Option<usize> {
    let order = |ex: &Extract| -> Vec<(usize, u8, u64)> {
        // (index in ex.files, class, last) least important first
        let mut list: Vec<(usize, u8, u64)> =
            ex.files.iter().enumerate().map(|(i, f)| (i, f.class(), f.last)).collect();
        list.sort_by(|a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        list
    };
    let remove_file = |ex: &mut Extract, i: usize| -> usize {
        let f = ex.files.remove(i);
        cost(encoding, &f.path) + cost(encoding, &f.ops_text())
    };
    // 1. Scratch files and paths only mentioned or searched.
    if let Some(&(i, _, _)) = order(ex).iter().find(|(_, class, _)| *class >= 2) {
        return Some(remove_file(ex, i));
    }
    // 2. Errors fixed since, oldest first.
    if let Some(i) = ex.errors.iter().position(|e| e.fixed) {
        let e = ex.errors.remove(i);
        return Some(cost(encoding, &e.text()));
    }
    // 3. Files only read or run, least recently touched first.
    if let Some(&(i, _, _)) = order(ex).iter().find(|(_, class, _)| *class == 1) {
        return Some(remove_file(ex, i));
    }
    // 4. User messages but the first and the last, oldest first.
    if ex.user_messages.len() > 2 {
        let m = ex.user_messages.remove(1);
        return Some(cost(encoding, &m));
    }
    // 5. Older calls of the current work.
    if ex.current.len() > 3 {
        let c = ex.current.remove(0);
        return Some(cost(encoding, &c));
    }
    // 6. Rarely used tools.
    if ex.tools.len() > 6 {
        let least = ex.tools.iter().min_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(k, _)| k.clone())?;
        ex.tools.remove(&least);
        return Some(cost(encoding, &least) + 1);
    }
    // 7. Older open errors.
    if ex.errors.len() > 2 {
        let e = ex.errors.remove(0);
        return Some(cost(encoding, &e.text()));
    }
    // 8. Someone else's earlier summary, by halves.
    if let Some(earlier) = ex.earlier.take() {
        let chars = earlier.chars().count();
        if chars > 200 {
            let shorter = cut_middle(&earlier, chars / 2);
            let saved = encoding.count(&earlier).saturating_sub(encoding.count(&shorter));
            ex.earlier = Some(shorter);
            return Some(saved.max(1));
        }
        return Some(cost(encoding, &earlier));
    }
    // 9. Changed files beyond the six most recent.
    if ex.files.len() > 6 {
        let &(i, _, _) = order(ex).first()?;
        return Some(remove_file(ex, i));
    }
    // 10. Pending tasks beyond the first five.
    if ex.pending.len() > 5 {
        let p = ex.pending.pop()?;
        return Some(cost(encoding, &p));
    }
    // 11. The last user message, then the first shortened.
    if ex.user_messages.len() > 1 {
        let m = ex.user_messages.pop()?;
        return Some(cost(encoding, &m));
    }
    // 12. Whatever is left of the sections, least important first.
    if let Some(c) = (!ex.current.is_empty()).then(|| ex.current.remove(0)) {
        return Some(cost(encoding, &c));
    }
    if let Some(e) = (!ex.errors.is_empty()).then(|| ex.errors.remove(0)) {
        return Some(cost(encoding, &e.text()));
    }
    if let Some(m) = ex.user_messages.pop() {
        return Some(cost(encoding, &m));
    }
    if !ex.tools.is_empty() {
        let tools = std::mem::take(&mut ex.tools);
        return Some(tools.keys().map(|k| cost(encoding, k)).sum());
    }
    if ex.files.len() > 1 {
        let &(i, _, _) = order(ex).first()?;
        return Some(remove_file(ex, i));
    }
    if ex.pending.len() > 1 {
        let p = ex.pending.pop()?;
        return Some(cost(encoding, &p));
    }
    if let Some(latest) = ex.latest.take() {
        return Some(cost(encoding, &latest));
    }
    if let Some(next) = ex.next_step.take() {
        return Some(cost(encoding, &next));
    }
    // 13. The task itself, by halves, never below a sentence.
    if let Some(task) = ex.task.take() {
        let chars = task.chars().count();
        if chars > 120 {
            let shorter = cut_middle(&task, chars / 2);
            let saved = encoding.count(&task).saturating_sub(encoding.count(&shorter));
            ex.task = Some(shorter);
            return Some(saved.max(1));
        }
        ex.task = Some(task);
    }
    if let Some(f) = (!ex.files.is_empty()).then(|| ex.files.remove(0)) {
        return Some(cost(encoding, &f.path));
    }
    if let Some(p) = ex.pending.pop() {
        return Some(cost(encoding, &p));
    }
    None
}

#[cfg(test)]
mod tests;
