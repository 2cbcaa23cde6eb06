//! Message lists: OpenAI Chat Completions, Anthropic Messages (an array or `{ system, messages }`),
//! a saved request body holding one, and tau-bench's list of runs.

use super::*;

/// Whether `object` is an OpenAI Responses item by its `type` (a call, an output, reasoning…);
/// a `message` item only with a `role` (an Anthropic response object is `type: "message"` too).
pub(super) fn is_responses_item(object: &Map<String, Value>) -> bool {
    match object.get("type").and_then(Value::as_str) {
        Some("message") => object.contains_key("role"),
        Some(kind) => {
            kind.ends_with("_call")
                || kind.ends_with("_call_output")
                || kind.starts_with("mcp_")
                || matches!(kind, "reasoning" | "item_reference" | message::COMPACTION_TYPE)
        }
        None => false,
    }
}

/// A message list's format, from what only one format has; `None` if nothing tells. Responses
/// items and AI SDK parts are told apart by their own names (`input_text`, `toolCallId`, …).
fn detect_format<'a>(messages: impl IntoIterator<Item = &'a Value>) -> Option<Format> {
    let (mut openai, mut anthropic, mut responses, mut ai_sdk) = (0usize, 0usize, 0usize, 0usize);
    for message in messages {
        let Some(object) = message.as_object() else {
            continue;
        };
        if is_responses_item(object) && object.get("type").and_then(Value::as_str) != Some("message") {
            responses += 1;
        }
        ai_sdk += usize::from(object.contains_key("providerOptions"));
        if let Some("tool" | "developer" | "function") = object.get("role").and_then(Value::as_str) {
            openai += 1;
        }
        for key in ["tool_calls", "tool_call_id", "function_call", "refusal", "audio"] {
            if object.get(key).is_some_and(|v| !v.is_null()) {
                openai += 1;
            }
        }
        for part in object.get("content").and_then(Value::as_array).into_iter().flatten() {
            if ["toolCallId", "mediaType", "providerOptions"].iter().any(|key| part.get(key).is_some()) {
                ai_sdk += 1;
            }
            match part.get("type").and_then(Value::as_str) {
                Some("input_text" | "output_text" | "input_image" | "input_file") => responses += 1,
                Some("tool-call" | "tool-result") => ai_sdk += 1,
                Some("image_url" | "input_audio" | "file" | "refusal") => openai += 1,
                Some(
                    "tool_use"
                    | "tool_result"
                    | "thinking"
                    | "redacted_thinking"
                    | "image"
                    | "document"
                    | "server_tool_use"
                    | "web_search_tool_result",
                ) => anthropic += 1,
                _ => {}
            }
        }
    }
    if responses > 0 {
        return Some(Format::Responses);
    }
    if ai_sdk > 0 {
        return Some(Format::AiSdk);
    }
    match (openai > 0, anthropic > 0) {
        (true, false) => Some(Format::OpenAi),
        (false, true) => Some(Format::Anthropic),
        (true, true) if openai != anthropic => {
            Some(if openai > anthropic { Format::OpenAi } else { Format::Anthropic })
        }
        _ => None,
    }
}

/// A plain message list (an array, or the `messages` of a request), as it was given.
pub(super) fn message_list(items: Vec<Value>, locate: impl Fn(usize) -> Locator, notes: Vec<String>) -> Result<Loaded> {
    if items.is_empty() {
        return Err(Error::invalid_argument("the message list is empty: there are no messages"));
    }
    let origins: Vec<Origin> = (0..items.len()).map(|i| locate(i).origin()).collect();
    let (format, notes) = match detect_format(&items) {
        Some(format) => {
            check(format, None, &items, &origins)?;
            (format, notes)
        }
        // Plain text is valid in both formats; OpenAI's reading keeps `system` messages in place.
        None => match check(Format::OpenAi, None, &items, &origins) {
            Ok(()) => {
                let mut notes = notes;
                notes.push("the messages are plain text, valid in both formats: read as OpenAI".into());
                (Format::OpenAi, notes)
            }
            Err(openai) => {
                check(Format::Anthropic, None, &items, &origins).map_err(|_| openai)?;
                (Format::Anthropic, notes)
            }
        },
    };
    let source = match format {
        Format::Anthropic => Source::Anthropic,
        Format::OpenAi => Source::OpenAi,
        Format::Responses => Source::Responses,
        Format::AiSdk => Source::AiSdk,
    };
    let messages = match format {
        Format::Anthropic => anthropic_request(None, items),
        Format::OpenAi | Format::Responses | Format::AiSdk => Value::Array(items),
    };
    Ok(Loaded::new(format, source, messages, origins, notes))
}

/// `{ messages }` (OpenAI), `{ system, messages }` (Anthropic), or a whole saved request body.
pub(super) fn request_body(mut map: Map<String, Value>) -> Result<Loaded> {
    let messages = match map.shift_remove("messages") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(Locator::Path("messages".into()).error(
                ErrorKind::InvalidArgument,
                "",
                format!("`messages` must be an array, got {}", type_name(&other)),
            ))
        }
        None => Vec::new(),
    };
    let system = map.shift_remove("system").filter(|s| !s.is_null());
    let mut notes = Vec::new();
    let ignored: Vec<&String> = map.keys().collect();
    if !ignored.is_empty() {
        let names: Vec<String> = ignored.iter().map(|k| format!("`{k}`")).collect();
        notes.push(format!("only the messages were read; ignored the request's {}", names.join(", ")));
    }
    let Some(system) = system else {
        return message_list(messages, |i| Locator::Path(format!("messages[{i}]")), notes);
    };
    // Anthropic's top-level system prompt.
    if messages.is_empty() {
        return Err(Error::invalid_argument("the message list is empty: there is a `system` but no messages"));
    }
    let mut origins = vec![Locator::Path("system".into()).origin()];
    origins.extend((0..messages.len()).map(|i| Locator::Path(format!("messages[{i}]")).origin()));
    check(Format::Anthropic, Some(&system), &messages, &origins)?;
    let request = anthropic_request(Some(system), messages);
    Ok(Loaded::new(Format::Anthropic, Source::Anthropic, request, origins, notes))
}

/// tau-bench's results: `[{ task_id, reward, traj, ... }]`, one conversation per run.
pub(super) fn tau_bench(mut runs: Vec<Value>, run: Option<usize>, listed: bool) -> Result<Loaded> {
    let count = runs.len();
    let index = run.unwrap_or(0);
    if index >= count {
        return Err(Error::invalid_argument(format!(
            "run {index} does not exist: the file has {count} run{} (0 to {})",
            if count == 1 { "" } else { "s" },
            count.saturating_sub(1)
        )));
    }
    let prefix = if listed { format!("[{index}]") } else { String::new() };
    let at = Locator::Path(if listed { prefix.clone() } else { "the run".into() });
    let Some(Value::Object(mut chosen)) = runs.get_mut(index).map(Value::take) else {
        return Err(at.error(ErrorKind::InvalidArgument, "", "a run must be an object with a `traj` message list"));
    };
    let traj = match chosen.shift_remove("traj") {
        Some(Value::Array(traj)) => traj,
        Some(other) => {
            return Err(at.error(
                ErrorKind::InvalidArgument,
                "traj",
                format!("`traj` must be a message list, got {}", type_name(&other)),
            ))
        }
        None => return Err(at.error(ErrorKind::InvalidArgument, "traj", "the run has no `traj`")),
    };
    let task_id = chosen.shift_remove("task_id");
    let mut note = format!("run {index} of {count}");
    if let Some(task) = &task_id {
        note.push_str(&format!(", task {}", crate::util::json_text::value_text(task)));
    }
    if let Some(reward) = chosen.get("reward") {
        note.push_str(&format!(", reward {}", crate::util::json_text::value_text(reward)));
    }
    let base = if listed { format!("{prefix}.traj") } else { "traj".into() };
    let mut loaded = message_list(traj, |i| Locator::Path(format!("{base}[{i}]")), vec![note])?;
    loaded.source = Source::TauBench;
    loaded.run = Some(RunInfo { index, count, task_id });
    Ok(loaded)
}
