//! The extractive summary: what a run of messages asked, concluded, touched, used, failed on and
//! left open, without a model. Compaction's built-in summariser folds it into a JSON summary;
//! the memory's built-in turn summaries read the same extract.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::message::{Message, Part, Role, ToolInput};
use crate::tokens::Encoding;

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
}
