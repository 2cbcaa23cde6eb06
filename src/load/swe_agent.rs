//! SWE-agent trajectories (`.traj`): the function-calling `history`, or the older `trajectory`
//! of thought/action/observation steps.

use super::*;

/// A SWE-agent trajectory: `history` holds OpenAI-style messages whose tool messages name their
/// call in `tool_call_ids: [id]`; without a history, the `trajectory` steps are the conversation.
/// The instance's own issue is pinned: SWE-agent puts worked demonstrations of other issues
/// first (one user message of `message_type: "demonstration"`, or a demonstration's messages,
/// each `is_demo: true`), then the issue, the first user message that is not one of them.
pub(super) fn swe_agent(mut map: Map<String, Value>) -> Result<Loaded> {
    let history = match map.shift_remove("history") {
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(Locator::Path("history".into()).error(
                ErrorKind::InvalidArgument,
                "",
                format!("`history` must be an array of messages, got {}", type_name(&other)),
            ))
        }
        None => Vec::new(),
    };
    if history.is_empty() {
        return swe_agent_steps(map.shift_remove("trajectory"));
    }
    let mut messages = Vec::with_capacity(history.len());
    let mut origins = Vec::with_capacity(history.len());
    let mut issue = None;
    let (mut mapped, mut repeated) = (0, false);
    for (i, item) in history.into_iter().enumerate() {
        let at = Locator::Path(format!("history[{i}]"));
        let Value::Object(mut message) = item else {
            return Err(at.error(
                ErrorKind::InvalidMessage,
                "",
                format!("a message must be an object, got {}", type_name(&item)),
            ));
        };
        match message.shift_remove("tool_call_ids") {
            None => {
                if issue.is_none() && message.get("role").and_then(Value::as_str) == Some("user") && !is_demo(&message)
                {
                    issue = Some(messages.len());
                }
                messages.push(Value::Object(message));
                origins.push(at.origin());
            }
            Some(Value::Array(ids)) => {
                if message.contains_key("tool_call_id") {
                    return Err(at.error(
                        ErrorKind::InvalidMessage,
                        "tool_call_ids",
                        "has both `tool_call_id` and `tool_call_ids`",
                    ));
                }
                if ids.is_empty() {
                    return Err(at.error(ErrorKind::InvalidMessage, "tool_call_ids", "`tool_call_ids` is empty"));
                }
                // One observation answering several calls: each call gets it.
                repeated |= ids.len() > 1;
                for (k, id) in ids.iter().enumerate() {
                    if !id.is_string() {
                        return Err(at.error(
                            ErrorKind::InvalidMessage,
                            &format!("tool_call_ids[{k}]"),
                            format!("a tool call id must be a string, got {}", type_name(id)),
                        ));
                    }
                    let mut one = message.clone();
                    one.insert("tool_call_id".into(), id.clone());
                    messages.push(Value::Object(one));
                    origins.push(at.origin());
                }
                mapped += 1;
            }
            Some(other) => {
                return Err(at.error(
                    ErrorKind::InvalidMessage,
                    "tool_call_ids",
                    format!("`tool_call_ids` must be an array of ids, got {}", type_name(&other)),
                ))
            }
        }
    }
    let mut notes = Vec::new();
    if mapped > 0 {
        notes.push(format!("{mapped} tool messages: `tool_call_ids: [id]` read as `tool_call_id`"));
    }
    if repeated {
        notes.push("an observation answering several calls was repeated for each".into());
    }
    check(Format::OpenAi, None, &messages, &origins)?;
    let mut loaded = Loaded::new(Format::OpenAi, Source::SweAgent, Value::Array(messages), origins, notes);
    loaded.pinned.extend(issue);
    Ok(loaded)
}

/// Whether a history message is part of a demonstration SWE-agent showed before the instance.
fn is_demo(message: &Map<String, Value>) -> bool {
    message.get("is_demo").and_then(Value::as_bool) == Some(true)
        || message.get("message_type").and_then(Value::as_str) == Some("demonstration")
}

/// A trajectory without a `history`: each step's model response and the observation it got.
fn swe_agent_steps(trajectory: Option<Value>) -> Result<Loaded> {
    let steps = match trajectory {
        Some(Value::Array(steps)) if !steps.is_empty() => steps,
        Some(Value::Array(_)) | None => {
            return Err(Error::invalid_argument(
                "the SWE-agent trajectory has no messages: `history` and `trajectory` are empty",
            ))
        }
        Some(other) => {
            return Err(Locator::Path("trajectory".into()).error(
                ErrorKind::InvalidArgument,
                "",
                format!("`trajectory` must be an array of steps, got {}", type_name(&other)),
            ))
        }
    };
    let mut messages = Vec::with_capacity(steps.len() * 2);
    let mut origins = Vec::with_capacity(steps.len() * 2);
    for (i, step) in steps.iter().enumerate() {
        let at = Locator::Path(format!("trajectory[{i}]"));
        let text = |key: &str| -> Result<Option<String>> {
            match step.get(key) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(text)) => Ok(Some(text.clone())),
                Some(other) => Err(at.error(
                    ErrorKind::InvalidMessage,
                    key,
                    format!("`{key}` must be a string, got {}", type_name(other)),
                )),
            }
        };
        if !step.is_object() {
            return Err(at.error(
                ErrorKind::InvalidMessage,
                "",
                format!("a step must be an object, got {}", type_name(step)),
            ));
        }
        let response = match text("response")? {
            Some(response) => Some(response),
            None => match (text("thought")?, text("action")?) {
                (None, None) => None,
                (thought, action) => Some([thought, action].into_iter().flatten().collect::<Vec<_>>().join("\n")),
            },
        };
        if let Some(response) = response {
            messages.push(serde_json::json!({ "role": "assistant", "content": response }));
            origins.push(Locator::Path(format!("trajectory[{i}].response")).origin());
        }
        if let Some(observation) = text("observation")? {
            messages.push(serde_json::json!({ "role": "user", "content": observation }));
            origins.push(Locator::Path(format!("trajectory[{i}].observation")).origin());
        }
    }
    if messages.is_empty() {
        return Err(Error::invalid_argument("the SWE-agent trajectory's steps hold no response or observation"));
    }
    check(Format::OpenAi, None, &messages, &origins)?;
    let note = format!(
        "no `history`: the conversation is rebuilt from the {} trajectory steps (response, observation)",
        steps.len()
    );
    Ok(Loaded::new(Format::OpenAi, Source::SweAgent, Value::Array(messages), origins, vec![note]))
}
