//! Summary compaction (seeds 001 and 004): the state kept beside the history, the request handed
//! to whatever model the caller plugs in, the checks a returned summary must pass, and the
//! default extractive summariser that needs no model at all.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::{Error, Result};
use crate::message::{Message, Part, Role, ToolInput};
use crate::tokens::Encoding;

/// Seed 004's compact instruction, sent as a user message after the messages to summarise.
pub const DEFAULT_COMPACT_PROMPT: &str = "Summarise the work so far, keeping the key information needed to continue:\n\
- the user's requests and constraints, in order\n\
- the conclusions reached and the problems identified\n\
- the progress made and what was done\n\
- the pending to-do list\n\
- key paths, identifiers and values (files, directories, ids)\n\
\n\
Write the summary as JSON, complete but concise.";

/// Where the summary goes in the context.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SummaryPlacement {
    /// OpenAI: a system message (seed 001); Anthropic: the compact prompt and the summary as a
    /// user/assistant exchange (seed 004).
    Auto,
    System,
    Exchange,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Summariser {
    /// The built-in extractive summary, applied during the build.
    Extractive,
    /// A model the caller plugs in: the build returns a `SummaryRequest`.
    External,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct SummaryOptions {
    pub summariser: Summariser,
    /// Compaction is due past this many tokens (seed 001's upper threshold, 50k).
    pub trigger_tokens: u32,
    /// After compaction the recent messages plus the summary aim below this (seed 001: 30k).
    pub target_tokens: u32,
    /// The first summary needs at least this many messages (seed 001: 20).
    pub min_messages: usize,
    /// A new summary needs at least this many new messages (seed 001: 10)…
    pub min_new_messages: usize,
    /// …whose tokens exceed this fraction of the current summary's (seed 001: 0.5).
    pub new_token_ratio: f64,
    /// The most tokens a summary may have (seed 004 asks the model for 4,000).
    pub max_tokens: u32,
    /// The compact instruction; seed 004's by default.
    pub prompt: Option<String>,
    /// Words a summary must contain, as seed 004's validation checks (case-insensitive).
    pub required_keys: Vec<String>,
    pub placement: SummaryPlacement,
}

impl Default for SummaryOptions {
    fn default() -> Self {
        SummaryOptions {
            summariser: Summariser::Extractive,
            trigger_tokens: 50_000,
            target_tokens: 30_000,
            min_messages: 20,
            min_new_messages: 10,
            new_token_ratio: 0.5,
            max_tokens: 4000,
            prompt: None,
            required_keys: Vec::new(),
            placement: SummaryPlacement::Auto,
        }
    }
}

impl SummaryOptions {
    pub fn validate(&self) -> Result<()> {
        if self.trigger_tokens == 0 {
            return Err(Error::invalid_argument("summary.triggerTokens must be positive"));
        }
        if self.target_tokens >= self.trigger_tokens {
            return Err(Error::invalid_argument(format!(
                "summary.targetTokens ({}) must be below summary.triggerTokens ({})",
                self.target_tokens, self.trigger_tokens
            )));
        }
        if !(self.new_token_ratio > 0.0 && self.new_token_ratio.is_finite()) {
            return Err(Error::invalid_argument("summary.newTokenRatio must be a positive number"));
        }
        if self.max_tokens < 16 {
            return Err(Error::invalid_argument("summary.maxTokens must be at least 16"));
        }
        if self.prompt.as_deref().is_some_and(|p| p.trim().is_empty()) {
            return Err(Error::invalid_argument("summary.prompt must not be empty"));
        }
        Ok(())
    }

    pub fn prompt(&self) -> &str {
        self.prompt.as_deref().unwrap_or(DEFAULT_COMPACT_PROMPT)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SummarySource {
    Extractive,
    External,
}

/// A summary in force: seed 001's `summary_metadata`, plus where it came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRecord {
    /// The request that produced it.
    pub request_id: String,
    /// The id of the last message it covers.
    pub summarised_until: String,
    /// That message's position in the history.
    pub until_index: usize,
    pub text: String,
    pub tokens: u32,
    /// Tokens of everything it stands for (all summarised messages, across compactions).
    pub original_tokens: u64,
    /// 1 − tokens / original tokens.
    pub compression_rate: f64,
    /// Messages it stands for, across compactions.
    pub message_count: usize,
    /// Caller-supplied timestamp, or `seq:N` (the core has no clock).
    pub created_at: String,
    pub source: SummarySource,
}

/// What a request asked for, remembered while it is being answered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSummary {
    pub request_id: String,
    pub until: String,
    pub until_index: usize,
    pub original_tokens: u64,
    pub message_count: usize,
    pub max_tokens: u32,
    pub required_keys: Vec<String>,
}

/// The summary state that lives with a history (persisted by storage adapters).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryState {
    pub current: Option<SummaryRecord>,
    /// The compaction under way, if any: while set, no second one starts.
    pub in_progress: Option<PendingSummary>,
    /// Summaries made so far (numbers request ids and `seq:` timestamps).
    pub generation: u64,
}

/// What the caller's summariser needs: the messages to summarise, ready to send (request-mode
/// JSON in the build's format, the compact prompt last), and what the answer must satisfy.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SummaryRequest {
    pub id: String,
    /// First and last history ids covered by this compaction (after the previous summary).
    pub from: String,
    pub until: String,
    pub message_ids: Vec<String>,
    /// Ready to send: OpenAI an array, Anthropic `{system?, messages}`; ends with the prompt.
    pub messages: Value,
    /// The compact prompt with the previous summary folded in.
    pub prompt: String,
    pub previous_summary: Option<String>,
    pub max_tokens: u32,
    pub required_keys: Vec<String>,
    /// Tokens of what the new summary will stand for, previous summary's originals included.
    pub original_tokens: u64,
    pub message_count: usize,
    #[serde(skip)]
    pub until_index: usize,
}

impl SummaryRequest {
    pub fn pending(&self) -> PendingSummary {
        PendingSummary {
            request_id: self.id.clone(),
            until: self.until.clone(),
            until_index: self.until_index,
            original_tokens: self.original_tokens,
            message_count: self.message_count,
            max_tokens: self.max_tokens,
            required_keys: self.required_keys.clone(),
        }
    }
}

/// The prompt with the previous summary folded in, so that a new summary builds on it.
pub fn fold_prompt(prompt: &str, previous: Option<&str>) -> String {
    match previous {
        Some(previous) => format!(
            "{prompt}\n\nThis conversation was compacted before. Build on the previous summary below: keep what still holds, update what changed, and add what is new.\n<previous_summary>\n{previous}\n</previous_summary>"
        ),
        None => prompt.to_string(),
    }
}

/// Seed 004's validation, made strict: not empty, within the token budget, and every required key.
pub fn validate_summary(text: &str, encoding: Encoding, max_tokens: u32, required_keys: &[String]) -> Result<u32> {
    if text.trim().is_empty() {
        return Err(Error::invalid_argument("the summary is empty"));
    }
    let tokens = u32::try_from(encoding.count(text)).unwrap_or(u32::MAX);
    if tokens > max_tokens {
        return Err(Error::invalid_argument(format!(
            "the summary has {tokens} tokens, over its budget of {max_tokens}"
        )));
    }
    let lower = text.to_lowercase();
    let missing: Vec<&str> =
        required_keys.iter().filter(|key| !lower.contains(&key.to_lowercase())).map(String::as_str).collect();
    if !missing.is_empty() {
        return Err(Error::invalid_argument(format!("the summary lacks the required keys: {}", missing.join(", "))));
    }
    Ok(tokens)
}

/// Makes the record for an accepted summary.
pub fn record(
    pending: &PendingSummary,
    text: String,
    tokens: u32,
    created_at: String,
    source: SummarySource,
) -> SummaryRecord {
    let compression_rate =
        if pending.original_tokens == 0 { 0.0 } else { 1.0 - f64::from(tokens) / pending.original_tokens as f64 };
    SummaryRecord {
        request_id: pending.request_id.clone(),
        summarised_until: pending.until.clone(),
        until_index: pending.until_index,
        text,
        tokens,
        original_tokens: pending.original_tokens,
        compression_rate,
        message_count: pending.message_count,
        created_at,
        source,
    }
}

// ---------------------------------------------------------------------------------------------
// The extractive summariser.

const KEYS: [&str; 7] = ["userRequests", "conclusions", "filesAndPaths", "toolsUsed", "errors", "openTodos", "earlier"];

/// What the extractive summariser takes from messages (the memory's turn summaries use it too).
#[derive(Default)]
pub(crate) struct Extract {
    pub(crate) requests: Vec<String>,
    pub(crate) conclusions: Vec<String>,
    pub(crate) files: Vec<String>,
    pub(crate) tools: BTreeMap<String, u64>,
    pub(crate) errors: Vec<String>,
    pub(crate) todos: Vec<String>,
    earlier: Option<String>,
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

fn push_unique(list: &mut Vec<String>, value: String) {
    if !value.is_empty() && !list.contains(&value) {
        list.push(value);
    }
}

fn input_value(input: &ToolInput) -> Option<Value> {
    match input {
        ToolInput::Json(value) => Some(value.clone()),
        ToolInput::Text(text) => serde_json::from_str(text).ok(),
    }
}

fn looks_like_path(token: &str) -> bool {
    let token = token.trim_matches(|c: char| c == '"' || c == '\'' || c == ',' || c == ';' || c == ')' || c == '(');
    token.len() > 2
        && token.len() < 200
        && !token.contains("://")
        && (token.starts_with('/') || token.starts_with("./") || token.starts_with("~/") || token.starts_with("../"))
        && token.chars().filter(|c| *c == '/').count() >= 1
        && token.chars().any(|c| c.is_alphanumeric())
}

fn collect_paths(value: &Value, files: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                match (key.as_str(), inner) {
                    (
                        "file_path" | "path" | "filename" | "notebook_path" | "target_file" | "file" | "directory"
                        | "dir" | "cwd",
                        Value::String(s),
                    ) if !s.is_empty() && s.len() < 300 => {
                        push_unique(files, s.clone());
                    }
                    ("command" | "cmd" | "script", Value::String(s)) => {
                        for token in s.split_whitespace() {
                            if looks_like_path(token) {
                                push_unique(
                                    files,
                                    token
                                        .trim_matches(|c: char| {
                                            c == '"' || c == '\'' || c == ',' || c == ';' || c == ')' || c == '('
                                        })
                                        .to_string(),
                                );
                            }
                        }
                    }
                    _ => collect_paths(inner, files),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| collect_paths(item, files)),
        _ => {}
    }
}

fn result_text(content: &crate::message::Content) -> String {
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

fn looks_like_error(text: &str) -> bool {
    let head: String = text.trim_start().chars().take(200).collect::<String>().to_lowercase();
    head.starts_with("error")
        || head.starts_with("exception")
        || head.contains("traceback (most recent call last)")
        || head.starts_with("failed")
        || head.contains("command failed")
        || head.starts_with("fatal:")
        || head.contains("\"error\":")
}

/// A deterministic, structured summary of `messages`: the user's requests in order, the
/// assistant's conclusions (the last thing it said in each turn), files and paths touched, tools
/// used and how often, errors, and open to-dos; folded onto the previous summary if there is one.
/// Lists lose their oldest entries until the whole fits `max_tokens`.
pub fn extractive<M: std::borrow::Borrow<Message>>(
    messages: &[M],
    previous: Option<&str>,
    encoding: Encoding,
    max_tokens: u32,
) -> String {
    fit(extract(messages, previous), encoding, max_tokens)
}

pub(crate) fn extract<M: std::borrow::Borrow<Message>>(messages: &[M], previous: Option<&str>) -> Extract {
    let mut extract = Extract::default();
    if let Some(previous) = previous {
        fold_previous(&mut extract, previous);
    }
    let mut names: BTreeMap<String, String> = BTreeMap::new();
    let mut last_assistant_text: Option<String> = None;
    let mut latest_todos: Option<Vec<String>> = None;
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
                            let body = result_text(&result.content);
                            if result.is_error == Some(true) || looks_like_error(&body) {
                                let tool = names.get(&result.call_id).map(String::as_str).unwrap_or("tool");
                                let first = body.lines().find(|l| !l.trim().is_empty()).unwrap_or("error");
                                push_unique(&mut extract.errors, format!("{tool}: {}", squash(first, 200)));
                            }
                        }
                        _ => {}
                    }
                }
                if message.role == Role::User && !text.trim().is_empty() {
                    if let Some(conclusion) = last_assistant_text.take() {
                        push_unique(&mut extract.conclusions, conclusion);
                    }
                    push_unique(&mut extract.requests, squash(&text, 300));
                }
            }
            Role::Assistant => {
                let text = message.content.joined_text();
                if !text.trim().is_empty() {
                    for line in text.lines() {
                        let trimmed = line.trim_start();
                        let todo = trimmed
                            .strip_prefix("- [ ]")
                            .or_else(|| trimmed.find("TODO:").and_then(|at| trimmed.get(at + 5..)));
                        if let Some(rest) = todo {
                            push_unique(&mut extract.todos, squash(rest, 200));
                        }
                    }
                    last_assistant_text = Some(squash(&text, 400));
                }
                for call in message.tool_calls() {
                    names.insert(call.id.clone(), call.name.clone());
                    *extract.tools.entry(call.name.clone()).or_default() += 1;
                    if let Some(input) = input_value(&call.input) {
                        collect_paths(&input, &mut extract.files);
                        if call.name.eq_ignore_ascii_case("TodoWrite") || call.name.eq_ignore_ascii_case("todo_write") {
                            if let Some(Value::Array(todos)) = input.get("todos") {
                                let open: Vec<String> = todos
                                    .iter()
                                    .filter(|t| t.get("status").and_then(Value::as_str) != Some("completed"))
                                    .filter_map(|t| t.get("content").and_then(Value::as_str).map(|s| squash(s, 200)))
                                    .collect();
                                latest_todos = Some(open);
                            }
                        }
                    }
                }
            }
            Role::System | Role::Developer => {}
        }
    }
    if let Some(conclusion) = last_assistant_text {
        push_unique(&mut extract.conclusions, conclusion);
    }
    if let Some(todos) = latest_todos {
        for todo in todos {
            push_unique(&mut extract.todos, todo);
        }
    }
    extract
}

fn fold_previous(extract: &mut Extract, previous: &str) {
    let strings = |value: Option<&Value>| -> Vec<String> {
        value
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
            .unwrap_or_default()
    };
    match serde_json::from_str::<Value>(previous) {
        Ok(Value::Object(map)) if map.keys().all(|k| KEYS.contains(&k.as_str())) => {
            extract.requests = strings(map.get("userRequests"));
            extract.conclusions = strings(map.get("conclusions"));
            extract.files = strings(map.get("filesAndPaths"));
            extract.errors = strings(map.get("errors"));
            extract.todos = strings(map.get("openTodos"));
            if let Some(Value::Object(tools)) = map.get("toolsUsed") {
                for (name, count) in tools {
                    extract.tools.insert(name.clone(), count.as_u64().unwrap_or(0));
                }
            }
            extract.earlier = map.get("earlier").and_then(Value::as_str).map(String::from);
        }
        // Someone else's summary: carried as it is.
        _ => extract.earlier = Some(previous.to_string()),
    }
}

fn render(extract: &Extract) -> String {
    let mut map = Map::new();
    if let Some(earlier) = &extract.earlier {
        map.insert("earlier".into(), Value::from(earlier.clone()));
    }
    map.insert("userRequests".into(), json!(extract.requests));
    map.insert("conclusions".into(), json!(extract.conclusions));
    map.insert("filesAndPaths".into(), json!(extract.files));
    map.insert("toolsUsed".into(), json!(extract.tools));
    map.insert("errors".into(), json!(extract.errors));
    map.insert("openTodos".into(), json!(extract.todos));
    serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default()
}

fn fit(mut extract: Extract, encoding: Encoding, max_tokens: u32) -> String {
    let max = max_tokens as usize;
    for _ in 0..200 {
        let text = render(&extract);
        // Cheap bound first: no encoding makes fewer tokens than a quarter of the bytes… but some
        // make more, so only the exact count decides.
        if encoding.count(&text) <= max {
            return text;
        }
        // Shrink the longest thing by a quarter, oldest entries first (the first request states
        // the goal and stays longest).
        let earlier_len = extract.earlier.as_ref().map_or(0, String::len);
        let lists: [(usize, usize); 5] = [
            (0, extract.requests.iter().map(String::len).sum()),
            (1, extract.conclusions.iter().map(String::len).sum()),
            (2, extract.files.iter().map(String::len).sum()),
            (3, extract.errors.iter().map(String::len).sum()),
            (4, extract.todos.iter().map(String::len).sum()),
        ];
        let (which, longest) =
            lists.iter().copied().max_by_key(|(i, len)| (*len, std::cmp::Reverse(*i))).unwrap_or((0, 0));
        if earlier_len > longest {
            if let Some(earlier) = extract.earlier.as_mut() {
                let keep = earlier.chars().count() * 3 / 4;
                *earlier = earlier.chars().take(keep).collect::<String>() + "…";
                if keep < 8 {
                    extract.earlier = None;
                }
            }
            continue;
        }
        if longest == 0 {
            if extract.tools.len() > 1 {
                let keep = extract.tools.len() * 3 / 4;
                let mut by_count: Vec<(String, u64)> = extract.tools.clone().into_iter().collect();
                by_count.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                extract.tools = by_count.into_iter().take(keep.max(1)).collect();
                continue;
            }
            break;
        }
        let list = match which {
            0 => &mut extract.requests,
            1 => &mut extract.conclusions,
            2 => &mut extract.files,
            3 => &mut extract.errors,
            _ => &mut extract.todos,
        };
        let remove = (list.len() / 4).max(1);
        if which == 0 && list.len() > 1 {
            let end = (1 + remove).min(list.len());
            list.drain(1..end);
        } else if list.len() == 1 {
            let only = list.remove(0);
            let keep = only.chars().count() / 2;
            if keep >= 16 {
                list.push(only.chars().take(keep).collect::<String>() + "…");
            }
        } else {
            list.drain(0..remove.min(list.len()));
        }
    }
    // Nothing left to cut: the smallest honest summary.
    let minimal = "{\"note\": \"earlier messages summarised; details dropped to fit the budget\"}".to_string();
    if encoding.count(&minimal) <= max {
        minimal
    } else {
        "summarised".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{parse, Format};

    #[test]
    fn extractive_summary_lists_requests_tools_errors_and_paths() {
        let messages = parse(
            json!([
                {"role": "user", "content": "Please fix the bug in src/app.py"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\": \"src/app.py\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "Error: file not found"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\": \"ls /srv/app/src\"}"}}]},
                {"role": "tool", "tool_call_id": "c2", "content": "app.py"},
                {"role": "assistant", "content": "The file lives in /srv/app/src. TODO: add a test"},
                {"role": "user", "content": "thanks"}
            ]),
            Format::OpenAi,
        )
        .unwrap();
        let text = extractive(&messages, None, Encoding::O200kBase, 4000);
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["userRequests"], json!(["Please fix the bug in src/app.py", "thanks"]));
        assert_eq!(value["toolsUsed"], json!({"bash": 1, "read_file": 1}));
        assert_eq!(value["errors"], json!(["read_file: Error: file not found"]));
        assert_eq!(value["filesAndPaths"], json!(["src/app.py", "/srv/app/src"]));
        assert_eq!(value["conclusions"], json!(["The file lives in /srv/app/src. TODO: add a test"]));
        assert_eq!(value["openTodos"], json!(["add a test"]));
        // Deterministic, and folding onto itself keeps and extends.
        assert_eq!(extractive(&messages, None, Encoding::O200kBase, 4000), text);
        let again: Value =
            serde_json::from_str(&extractive(&messages[6..], Some(&text), Encoding::O200kBase, 4000)).unwrap();
        assert_eq!(again["toolsUsed"], json!({"bash": 1, "read_file": 1}));
        assert_eq!(again["userRequests"], json!(["Please fix the bug in src/app.py", "thanks"]));
        // A tight budget is met.
        let small = extractive(&messages, None, Encoding::O200kBase, 60);
        assert!(Encoding::O200kBase.count(&small) <= 60, "{small}");
    }

    #[test]
    fn validation_refuses_empty_oversized_and_incomplete_summaries() {
        let e = Encoding::O200kBase;
        assert!(validate_summary("  ", e, 100, &[]).unwrap_err().message.contains("empty"));
        assert!(validate_summary(&"word ".repeat(500), e, 100, &[]).unwrap_err().message.contains("over its budget"));
        let keys = vec!["pending".to_string(), "execution_output_dir".to_string()];
        assert!(validate_summary("{\"pending\": []}", e, 100, &keys)
            .unwrap_err()
            .message
            .contains("execution_output_dir"));
        assert!(validate_summary("{\"Pending\": [], \"execution_output_dir\": \"x\"}", e, 100, &keys).is_ok());
    }

    #[test]
    fn the_prompt_folds_the_previous_summary_in() {
        assert_eq!(fold_prompt("P", None), "P");
        let folded = fold_prompt("P", Some("{\"a\":1}"));
        assert!(folded.starts_with("P\n\n") && folded.contains("<previous_summary>\n{\"a\":1}\n</previous_summary>"));
    }
}
