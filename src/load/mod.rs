//! Reading the conversation files people have: a message list (OpenAI Chat Completions, or
//! Anthropic Messages as an array or `{ system, messages }`, or a saved request body holding
//! one), a Claude Code session log (`.jsonl`), a SWE-agent trajectory (`.traj`), and tau-bench's
//! list of runs. The shape is recognised from the content; a file name is only a hint.
//!
//! The result is ready for `ConversationHistory::append_values` in its format: every message was
//! parsed on its own (so that an error names its line or record and field) and appended to a
//! scratch history, which checks the tool-call pairing the real one will. What was left out
//! (records that are not messages, sub-agent sidechains, rewound branches) is listed with the
//! reason, never dropped silently. A plain message list comes back as it was given.

mod claude_code;
mod lists;
mod swe_agent;
#[cfg(test)]
mod tests;

use lists::{message_list, request_body, tau_bench};
use swe_agent::swe_agent;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{Error, ErrorDetails, ErrorKind, Result};
use crate::history::ConversationHistory;
use crate::message::json::type_name;
use crate::message::{self, Format};
use crate::tokens::Encoding;

/// What produced the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "ConversationSource"))]
pub enum Source {
    #[serde(rename = "openai")]
    OpenAi,
    #[serde(rename = "anthropic")]
    Anthropic,
    #[serde(rename = "openai-responses")]
    Responses,
    #[serde(rename = "ai-sdk")]
    AiSdk,
    #[serde(rename = "claude-code")]
    ClaudeCode,
    #[serde(rename = "swe-agent")]
    SweAgent,
    #[serde(rename = "tau-bench")]
    TauBench,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct LoadOptions {
    /// The file's name, as a hint (`session.jsonl`, `run.traj`) and for messages.
    pub name: Option<String>,
    /// Which run of a tau-bench run list (default 0).
    pub run: Option<usize>,
    /// Leave the tool pairing unchecked (a log cut at its head): for `appendMany(list, { repair: true })`.
    pub repair: Option<bool>,
}

/// Where something is in the file: a line of JSON Lines (1-based), or a JSON path (`history[3]`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Locator {
    Line(usize),
    Path(String),
}

impl Locator {
    fn label(&self) -> String {
        match self {
            Locator::Line(line) => format!("line {line}"),
            Locator::Path(path) => path.clone(),
        }
    }

    /// The path of `field` inside this line or record (`line 12.message`, `history[3].content`).
    fn join(&self, field: &str) -> String {
        let base = self.label();
        match (field.is_empty(), field.starts_with('[')) {
            (true, _) => base,
            (false, true) => format!("{base}{field}"),
            (false, false) => format!("{base}.{field}"),
        }
    }

    /// An error about this line or record: `line 12: record has no "message" (at line 12.message)`.
    fn error(&self, kind: ErrorKind, field: &str, message: impl std::fmt::Display) -> Error {
        ErrorDetails {
            kind,
            message: format!("{}: {message}", self.label()),
            index: None,
            path: Some(self.join(field)),
        }
        .into()
    }

    fn origin(&self) -> Origin {
        match self {
            Locator::Line(line) => Origin { line: Some(*line), lines: None, record: None },
            Locator::Path(path) => Origin { line: None, lines: None, record: Some(path.clone()) },
        }
    }

    fn skipped(&self, reason: impl Into<String>) -> Skipped {
        let Origin { line, record, .. } = self.origin();
        Skipped { line, record, reason: reason.into() }
    }
}

/// Where a loaded message came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "LoadOrigin", optional_fields))]
pub struct Origin {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// Every line, when the message was merged from several (one API response split over records).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<usize>>,
    /// The JSON path of the message in the file (`history[3]`, `[0].traj[5]`, `system`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
}

impl Origin {
    fn locator(&self) -> Locator {
        match (&self.line, &self.record) {
            (Some(line), _) => Locator::Line(*line),
            (None, Some(record)) => Locator::Path(record.clone()),
            (None, None) => Locator::Path("the conversation".into()),
        }
    }
}

/// A line or record that is not in the result, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "LoadSkipped", optional_fields))]
pub struct Skipped {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    pub reason: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "LoadMarkKind"))]
pub enum MarkKind {
    /// Text the agent injected as a user message (Claude Code's `isMeta`): not the user's words.
    Meta,
    /// The summary an agent wrote when it compacted its context (Claude Code's `isCompactSummary`).
    CompactSummary,
    /// A slash command the user ran in the agent, or its output (Claude Code's `<command-name>`,
    /// `<local-command-stdout>`): logged as user messages the model is told not to answer.
    LocalCommand,
    /// The agent compacted its context here: the messages before `index` were out of its context
    /// from then on (Claude Code's `compact_boundary` record).
    CompactBoundary,
}

/// Something to know about the message at `index` (in the order `appendMany` appends them: an
/// Anthropic `system` first).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "LoadMark", optional_fields))]
pub struct Mark {
    pub index: usize,
    pub kind: MarkKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<String>,
    /// A compaction's trigger (`manual`, `auto`), as the agent logged it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trigger: Option<String>,
    /// The tokens the agent counted before the compaction, as it logged them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre_tokens: Option<u64>,
}

impl Mark {
    fn at(index: usize, kind: MarkKind, at: &Locator) -> Mark {
        let Origin { line, record, .. } = at.origin();
        Mark { index, kind, line, record, trigger: None, pre_tokens: None }
    }
}

/// Which run of a tau-bench list was loaded.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "LoadRun", optional_fields))]
pub struct RunInfo {
    pub index: usize,
    pub count: usize,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(type = "unknown", optional))]
    pub task_id: Option<Value>,
}

/// A conversation read from a file.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "LoadedConversationBase"))]
pub struct Loaded {
    /// The format of `messages`.
    pub format: Format,
    pub source: Source,
    /// Ready to append: an OpenAI array, or Anthropic's `{ system?, messages }`.
    #[cfg_attr(test, ts(type = "OpenAIMessage[] | AnthropicRequest"))]
    pub messages: Value,
    /// Per message, in the order `appendMany` appends them, where it came from.
    pub origins: Vec<Origin>,
    pub skipped: Vec<Skipped>,
    pub marks: Vec<Mark>,
    /// The positions (in the order `appendMany` appends them) of the requests to pin, for
    /// `appendMany(loaded.messages, { pin: loaded.pinned })`: a SWE-agent instance's own issue,
    /// which comes after the worked demonstrations its harness puts first.
    pub pinned: Vec<usize>,
    pub notes: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub run: Option<RunInfo>,
}

impl Loaded {
    /// Messages with nothing skipped or marked (yet).
    fn new(format: Format, source: Source, messages: Value, origins: Vec<Origin>, notes: Vec<String>) -> Loaded {
        Loaded {
            format,
            source,
            messages,
            origins,
            skipped: Vec::new(),
            marks: Vec::new(),
            pinned: Vec::new(),
            notes,
            run: None,
        }
    }
}

/// Anthropic's `{ system?, messages }`.
fn anthropic_request(system: Option<Value>, messages: Vec<Value>) -> Value {
    let mut request = Map::new();
    if let Some(system) = system {
        request.insert("system".into(), system);
    }
    request.insert("messages".into(), Value::Array(messages));
    Value::Object(request)
}

/// Reads a conversation file (see the module's documentation): every message checked as
/// `append_values` checks it (with `repair`, all but the tool pairing, which a lenient append
/// repairs).
pub fn load(text: &str, options: &LoadOptions) -> Result<Loaded> {
    let loaded = read(text, options)?;
    if options.repair != Some(true) {
        let parsed = message::parse(loaded.messages.clone(), loaded.format)?;
        check_pairing(parsed, &loaded.origins)?;
    }
    Ok(loaded)
}

fn read(text: &str, options: &LoadOptions) -> Result<Loaded> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some((start, first)) = text.char_indices().find(|(_, c)| !c.is_whitespace()) else {
        return Err(Error::invalid_argument(if text.is_empty() {
            "the file is empty".to_string()
        } else {
            "the file holds only whitespace".to_string()
        }));
    };
    if first != '{' && first != '[' {
        let line = line_of(text, start);
        let looks_binary =
            text.chars().take(512).any(|c| c == '\0' || c == '\u{fffd}' || (c.is_control() && !c.is_whitespace()));
        let what = if looks_binary {
            "binary data".to_string()
        } else {
            format!("{:?}", text[start..].chars().take(20).collect::<String>())
        };
        return Err(Locator::Line(line).error(
            ErrorKind::InvalidArgument,
            "",
            format!("not JSON or JSON Lines: the file starts with {what}"),
        ));
    }
    let hint = Hint::of(options.name.as_deref());
    match serde_json::from_str::<Value>(text) {
        Ok(value) => Reader { options, hint, first_line: line_of(text, start) }.value(value),
        Err(error) => {
            let lines = json_lines(text);
            let first_line_alone =
                lines.first().is_some_and(|(_, line)| serde_json::from_str::<Value>(line).is_ok_and(|v| v.is_object()));
            if (first_line_alone && lines.len() > 1) || hint == Hint::JsonLines {
                Reader { options, hint, first_line: line_of(text, start) }.lines(text, lines)
            } else {
                Err(json_error(&error, "the file"))
            }
        }
    }
}

/// What the file's name suggests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Hint {
    None,
    JsonLines,
    Trajectory,
}

impl Hint {
    fn of(name: Option<&str>) -> Hint {
        let extension = name.and_then(|n| n.rsplit_once('.')).map(|(_, ext)| ext.to_ascii_lowercase());
        match extension.as_deref() {
            Some("jsonl") | Some("ndjson") => Hint::JsonLines,
            Some("traj") => Hint::Trajectory,
            _ => Hint::None,
        }
    }
}

fn line_of(text: &str, byte: usize) -> usize {
    text.as_bytes().iter().take(byte).filter(|b| **b == b'\n').count() + 1
}

/// The non-blank lines, numbered from 1.
fn json_lines(text: &str) -> Vec<(usize, &str)> {
    text.split('\n')
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim_end_matches('\r')))
        .filter(|(_, line)| !line.trim().is_empty())
        .collect()
}

fn json_error(error: &serde_json::Error, what: &str) -> Error {
    if error.to_string().contains("recursion limit") {
        Error::invalid_argument(format!("{what} is nested more than 128 levels deep (line {})", error.line()))
    } else {
        Error::invalid_argument(format!("{what} is not valid JSON: {error}"))
    }
}

fn keys_of(map: &Map<String, Value>) -> String {
    let keys: Vec<String> = map.keys().take(8).map(|k| format!("`{k}`")).collect();
    if keys.is_empty() {
        "no keys".into()
    } else {
        format!("keys {}", keys.join(", "))
    }
}

struct Reader<'a> {
    options: &'a LoadOptions,
    hint: Hint,
    /// The line the JSON starts on (a single Claude Code record is that line of a log).
    first_line: usize,
}

impl Reader<'_> {
    /// A file that is one JSON value.
    fn value(&self, value: Value) -> Result<Loaded> {
        match value {
            Value::Array(items) => self.array(items),
            Value::Object(map) => {
                let has = |key: &str| map.contains_key(key);
                if has("history") || (has("trajectory") && !has("messages")) {
                    self.no_run_option("a SWE-agent trajectory")?;
                    swe_agent(map)
                } else if has("messages") {
                    self.no_run_option("a message list")?;
                    request_body(map)
                } else if has("traj") {
                    tau_bench(vec![Value::Object(map)], self.options.run, false)
                } else if has("type") && !has("role") {
                    self.no_run_option("a Claude Code log")?;
                    let at = Locator::Line(self.first_line);
                    claude_code::load(vec![(at.clone(), claude_code::from_value(at, Value::Object(map))?)])
                } else if has("role") {
                    self.no_run_option("a message")?;
                    message_list(vec![Value::Object(map)], |i| Locator::Path(format!("[{i}]")), Vec::new())
                } else {
                    let expected = match self.hint {
                        Hint::Trajectory => "a SWE-agent trajectory ({ history, trajectory, info })",
                        _ => "a message list, { system, messages }, { messages }, a SWE-agent trajectory ({ history }) or a tau-bench run ({ traj })",
                    };
                    Err(Error::invalid_argument(format!("expected {expected}, got an object with {}", keys_of(&map))))
                }
            }
            other => Err(Error::invalid_argument(format!(
                "expected a message list or a conversation object, got {}",
                type_name(&other)
            ))),
        }
    }

    fn array(&self, items: Vec<Value>) -> Result<Loaded> {
        let Some(first) = items.first() else {
            return Err(Error::invalid_argument("the file holds an empty list: there are no messages"));
        };
        let Some(object) = first.as_object() else {
            return Err(Locator::Path("[0]".into()).error(
                ErrorKind::InvalidMessage,
                "",
                format!("expected a message (an object), got {}", type_name(first)),
            ));
        };
        if object.contains_key("traj") {
            tau_bench(items, self.options.run, true)
        } else if object.contains_key("role") || lists::is_responses_item(object) {
            self.no_run_option("a message list")?;
            message_list(items, |i| Locator::Path(format!("[{i}]")), Vec::new())
        } else if object.get("type").is_some_and(Value::is_string) {
            self.no_run_option("a Claude Code log")?;
            let records = items
                .into_iter()
                .enumerate()
                .map(|(i, v)| {
                    let at = Locator::Path(format!("[{i}]"));
                    claude_code::from_value(at.clone(), v).map(|fields| (at, fields))
                })
                .collect::<Result<Vec<_>>>()?;
            claude_code::load(records)
        } else {
            Err(Locator::Path("[0]".into()).error(
                ErrorKind::InvalidMessage,
                "",
                format!(
                    "expected a message (with `role`), a tau-bench run (with `traj`) or a Claude Code record (with `type`), got an object with {}",
                    keys_of(object)
                ),
            ))
        }
    }

    /// JSON Lines: a Claude Code log, or one message a line (as the first line says).
    fn lines(&self, text: &str, lines: Vec<(usize, &str)>) -> Result<Loaded> {
        let ends_with_newline = text.trim_end_matches([' ', '\t']).ends_with('\n');
        let first = lines.first().and_then(|(_, line)| serde_json::from_str::<Value>(line).ok());
        let messages_a_line = first
            .as_ref()
            .and_then(Value::as_object)
            .is_some_and(|o| (o.contains_key("role") && !o.contains_key("type")) || lists::is_responses_item(o));
        if !messages_a_line {
            self.no_run_option("a Claude Code log")?;
            let (records, skipped) = parse_lines(lines, ends_with_newline, claude_code::parse_line)?;
            let mut loaded = claude_code::load(records)?;
            loaded.skipped.extend(skipped);
            return Ok(loaded);
        }
        self.no_run_option("a message list")?;
        let parse = |at: Locator, line: &str| {
            serde_json::from_str::<Value>(line).map_err(|e| at.error(ErrorKind::InvalidArgument, "", line_error(&e)))
        };
        let (records, skipped) = parse_lines(lines, ends_with_newline, parse)?;
        let locators: Vec<Locator> = records.iter().map(|(at, _)| at.clone()).collect();
        let items = records.into_iter().map(|(_, v)| v).collect();
        let mut loaded =
            message_list(items, |i| locators.get(i).cloned().unwrap_or(Locator::Path(format!("[{i}]"))), Vec::new())?;
        loaded.skipped.extend(skipped);
        Ok(loaded)
    }

    fn no_run_option(&self, what: &str) -> Result<()> {
        match self.options.run {
            Some(run) => Err(Error::invalid_argument(format!(
                "run {run} was asked for, but the file is {what}, not a tau-bench run list"
            ))),
            None => Ok(()),
        }
    }
}

/// Parsed lines, each with its line number; and the lines left out.
type ParsedLines<T> = (Vec<(Locator, T)>, Vec<Skipped>);

/// Parses each line with `parse`; a half-written last line (no newline after it) is skipped as
/// one, since a log being written looks like that.
fn parse_lines<T>(
    lines: Vec<(usize, &str)>,
    ends_with_newline: bool,
    parse: impl Fn(Locator, &str) -> Result<T>,
) -> Result<ParsedLines<T>> {
    let count = lines.len();
    let mut records = Vec::with_capacity(count);
    let mut skipped = Vec::new();
    for (i, (number, line)) in lines.into_iter().enumerate() {
        let at = Locator::Line(number);
        match parse(at.clone(), line) {
            Ok(value) => records.push((at, value)),
            Err(error)
                if i + 1 == count
                    && count > 1
                    && !ends_with_newline
                    && serde_json::from_str::<Value>(line).is_err_and(|e| e.is_eof()) =>
            {
                drop(error);
                skipped.push(at.skipped("an incomplete last line (the file was still being written?)"));
            }
            Err(error) => return Err(error),
        }
    }
    Ok((records, skipped))
}

/// A line that is not JSON, said without serde's "line 1".
pub(crate) fn line_error(error: &serde_json::Error) -> String {
    if error.to_string().contains("recursion limit") {
        "nested more than 128 levels deep".to_string()
    } else {
        format!("not valid JSON: {error}").replace(" at line 1 column", " at column")
    }
}

/// Parses every message on its own: an error names its line or record. (`load` then checks the
/// tool-call pairing as `appendMany` will.) `origins` is in append order: the Anthropic `system`
/// (when given) first.
pub(crate) fn check(format: Format, system: Option<&Value>, items: &[Value], origins: &[Origin]) -> Result<()> {
    let offset = usize::from(system.is_some());
    if let Some(system) = system {
        let mut request = Map::new();
        request.insert("system".into(), system.clone());
        request.insert("messages".into(), Value::Array(Vec::new()));
        message::parse_anthropic(Value::Object(request)).map_err(|e| relocate(e, &locate(origins, 0), ""))?;
    }
    for (i, item) in items.iter().enumerate() {
        message::parse_one(item.clone(), format, i).map_err(|e| relocate(e, &locate(origins, i + offset), ""))?;
    }
    Ok(())
}

/// Appends parsed messages to a scratch history: a tool result must answer an earlier call, once.
pub(crate) fn check_pairing(parsed: Vec<message::Message>, origins: &[Origin]) -> Result<()> {
    // The estimate needs no rank table, and appending counts nothing.
    let mut scratch = ConversationHistory::new(Encoding::Estimate);
    scratch.append_all(parsed).map(|_| ()).map_err(|e| match e.index {
        Some(i) => relocate(e, &locate(origins, i), ""),
        None => e,
    })
}

fn locate(origins: &[Origin], i: usize) -> Locator {
    origins.get(i).map(Origin::locator).unwrap_or(Locator::Path(format!("[{i}]")))
}

/// A codec or history error about `messages[i]` restated about the line or record it came from,
/// with `field` (the message's place in the record, e.g. `message`) before the codec's path.
pub(crate) fn relocate(error: Error, at: &Locator, field: &str) -> Error {
    let inner = match (&error.path, error.index) {
        (Some(path), Some(index)) => path.strip_prefix(&format!("messages[{index}]")).unwrap_or("").to_string(),
        // Anthropic's top-level system prompt: `at` is already `system`.
        (Some(path), None) => path.strip_prefix("system").unwrap_or("").to_string(),
        _ => String::new(),
    };
    let inner = inner.strip_prefix('.').unwrap_or(&inner);
    let field = match (field.is_empty(), inner.is_empty()) {
        (_, true) => field.to_string(),
        (true, false) => inner.to_string(),
        (false, false) if inner.starts_with('[') => format!("{field}{inner}"),
        (false, false) => format!("{field}.{inner}"),
    };
    let error = error.into_details();
    at.error(error.kind, &field, error.message)
}
