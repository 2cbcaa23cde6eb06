//! A provider request assembled from each context message's own request form.
//!
//! Consecutive contexts share most of their messages, and a message's request form, emitted on
//! its own, does not change while it stays in the context. So the form is kept by message
//! identity (the `Arc` the history and the reducers hand out), and a request is assembled from
//! those forms instead of emitted anew. Where neighbours change each other's form (OpenAI: an
//! assistant message continuing a tool-calling one; Anthropic: same-role messages merged, or one
//! with nothing to send between them) that run of messages is emitted together, as
//! `emit_request` emits it. An Anthropic tool_use id used twice (renamed across messages) sends the
//! whole request through `emit_request`. `tests::assembled_equals_emitted` holds the two equal.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use super::{emit_request, lists, validate_parts, Violation};
use crate::error::{Error, Result};
use crate::message::{Format, Message};
use crate::util::fasthash::FastMap;

/// Runs of at most this many context messages are attributed exactly (`EmitCache::spread`).
const SHORT_RUN: usize = 16;

/// One stretch of the request's messages.
#[derive(Clone, Debug)]
pub enum Piece {
    /// A context message's own request form (`EmitCache::own`): zero or more request messages.
    Own(Arc<Message>),
    /// Request messages emitted from several context messages (the second field) together.
    Joined(Vec<Value>, Vec<Arc<Message>>),
}

/// A request in pieces: Anthropic's `system`, and the messages.
#[derive(Clone, Debug)]
pub struct Assembled {
    pub format: Format,
    pub system: Option<Value>,
    pub pieces: Vec<Piece>,
}

type Forms = FastMap<usize, (Arc<Message>, Vec<Value>)>;

/// Request forms of the messages of the last context assembled, by message identity. Holding
/// the `Arc` keeps the address from being reused by another message while the entry lives.
#[derive(Clone, Debug, Default)]
pub struct EmitCache {
    format: Option<Format>,
    forms: Forms,
    /// Forms emitted (not found in the cache), for tests and benchmarks.
    pub emitted: u64,
}

fn identity(message: &Arc<Message>) -> usize {
    Arc::as_ptr(message) as usize
}

/// The request messages of `messages` emitted together, without Anthropic's `system`.
fn emit_messages<'a>(messages: impl IntoIterator<Item = &'a Message>, format: Format) -> Result<Vec<Value>> {
    Ok(match emit_request(messages, format)? {
        Value::Array(list) => list,
        Value::Object(mut request) => match request.remove("messages") {
            Some(Value::Array(list)) => list,
            _ => Vec::new(),
        },
        _ => Vec::new(),
    })
}

fn role(message: &Value) -> Option<&str> {
    message.get("role").and_then(Value::as_str)
}

/// Whether emitting `before` and `after` apart gives what emitting them together gives.
fn independent(before: Option<&Value>, after: Option<&Value>, format: Format) -> bool {
    let (Some(before), Some(after)) = (before, after) else { return false };
    match format {
        Format::OpenAi => {
            let continues_calls = role(after) == Some("assistant")
                && matches!(before.get("tool_calls"), Some(Value::Array(calls)) if !calls.is_empty());
            !continues_calls
        }
        Format::Anthropic => role(before) != role(after),
        // A reasoning item goes out only with the item it was produced with.
        Format::Responses => before.get("type").and_then(Value::as_str) != Some("reasoning"),
        // A converted tool result takes its toolName from the call before it.
        // and an assistant message continuing a tool-calling one merges into it.
        Format::AiSdk => {
            role(after) != Some("tool") && !(role(after) == Some("assistant") && lists::calls_tools(before))
        }
    }
}

/// Whether a tool call id occurs twice (each call is one Anthropic tool_use block). Checked on
/// the messages, not on their forms: a form emitted alone has its own repeats renamed already.
fn reuses_tool_call_ids(messages: &[&Arc<Message>]) -> bool {
    let mut seen: HashSet<&str> = HashSet::new();
    messages.iter().flat_map(|m| m.tool_calls()).any(|call| !seen.insert(call.id.as_str()))
}

impl EmitCache {
    /// The request form of `message` emitted on its own (empty if it is not in the cache).
    pub fn own(&self, message: &Arc<Message>) -> &[Value] {
        self.forms.get(&identity(message)).map_or(&[], |(_, form)| form.as_slice())
    }

    /// The request for `messages`, equal to `emit_request(messages, format)`; the cache keeps
    /// the forms of these messages and forgets the others.
    pub fn assemble(&mut self, messages: &[&Arc<Message>], format: Format) -> Result<Assembled> {
        if self.format != Some(format) {
            self.forms.clear();
            self.format = Some(format);
        }
        let mut previous = std::mem::take(&mut self.forms);
        let mut instructions: Vec<&Message> = Vec::new();
        let mut body: Vec<&Arc<Message>> = Vec::with_capacity(messages.len());
        for &message in messages {
            if format == Format::Anthropic && message.role.is_instruction() {
                instructions.push(message);
                continue;
            }
            let key = identity(message);
            if !self.forms.contains_key(&key) {
                let entry = match previous.remove(&key) {
                    Some(entry) => entry,
                    None => {
                        self.emitted += 1;
                        (Arc::clone(message), emit_messages([&**message], format)?)
                    }
                };
                self.forms.insert(key, entry);
            }
            body.push(message);
        }
        drop(previous);
        let system = match instructions.is_empty() {
            true => None,
            false => match emit_request(instructions, format)? {
                Value::Object(mut request) => request.remove("system"),
                _ => None,
            },
        };
        if format == Format::Anthropic && reuses_tool_call_ids(&body) {
            let list = emit_messages(messages.iter().map(|m| &***m), format)?;
            let members = body.into_iter().map(Arc::clone).collect();
            return Ok(Assembled { format, system, pieces: vec![Piece::Joined(list, members)] });
        }

        let mut pieces = Vec::new();
        let mut run: Vec<&Arc<Message>> = Vec::new();
        // The run emitted together, once it holds more than one message and is asked about.
        let mut joined: Option<Vec<Value>> = None;
        for message in body {
            let separate = match run.as_slice() {
                [] => None,
                [only] => Some(independent(self.own(only).last(), self.own(message).first(), format)),
                // A run's last request message has the role of its last member with a form
                // (Anthropic merges blocks; blank ones are dropped): no need to emit the run.
                _ if format == Format::Anthropic => Some(independent(
                    run.iter().rev().find_map(|m| self.own(m).last()),
                    self.own(message).first(),
                    format,
                )),
                _ => {
                    if joined.is_none() {
                        joined = Some(emit_messages(run.iter().map(|m| &***m), format)?);
                    }
                    Some(independent(joined.as_ref().and_then(|j| j.last()), self.own(message).first(), format))
                }
            };
            if separate == Some(true) {
                pieces.push(self.close(std::mem::take(&mut run), joined.take(), format)?);
            }
            joined = None;
            run.push(message);
        }
        if !run.is_empty() {
            pieces.push(self.close(run, joined, format)?);
        }
        Ok(Assembled { format, system, pieces })
    }

    fn close(&self, run: Vec<&Arc<Message>>, joined: Option<Vec<Value>>, format: Format) -> Result<Piece> {
        Ok(match (run.as_slice(), joined) {
            ([only], _) => Piece::Own(Arc::clone(only)),
            (_, Some(list)) => Piece::Joined(list, run.into_iter().map(Arc::clone).collect()),
            (_, None) => {
                let list = emit_messages(run.iter().map(|m| &***m), format)?;
                Piece::Joined(list, run.into_iter().map(Arc::clone).collect())
            }
        })
    }

    /// For each request message of `assembled`, in order, the context messages it carries (one
    /// context message may give several request messages, several may merge into one).
    pub fn carried(&self, assembled: &Assembled) -> Vec<Vec<Arc<Message>>> {
        let mut out = Vec::new();
        for piece in &assembled.pieces {
            match piece {
                Piece::Own(message) => out.extend(self.own(message).iter().map(|_| vec![Arc::clone(message)])),
                Piece::Joined(list, members) => out.extend(self.spread(list, members, assembled.format)),
            }
        }
        out
    }

    /// Which of `members` each message of `list` (emitted from them together) carries. A short
    /// run is emitted prefix by prefix: each member carries the messages its arrival added or
    /// changed (or the last one, when it changed nothing). A long one (a whole request sent through `emit_request`) is read from the members'
    /// own forms, a form's message merged into the one before where the emitter merges them
    /// (Anthropic: same role; OpenAI and the AI SDK: an assistant message continuing a
    /// tool-calling one; AI SDK tool messages in a row); should that not account for `list`,
    /// every message is said to carry the whole run.
    fn spread(&self, list: &[Value], members: &[Arc<Message>], format: Format) -> Vec<Vec<Arc<Message>>> {
        if members.len() <= SHORT_RUN {
            let mut out: Vec<Vec<Arc<Message>>> = vec![Vec::new(); list.len()];
            let mut before: Vec<Value> = Vec::new();
            for (i, message) in members.iter().enumerate() {
                let now = match i + 1 == members.len() {
                    true => list.to_vec(),
                    false => emit_messages(members.iter().take(i + 1).map(|m| &**m), format).unwrap_or_default(),
                };
                // What its arrival added or changed; nothing at all: it merged into the last
                // message without a trace (an empty continuation).
                let same = before.iter().zip(&now).take_while(|(a, b)| a == b).count().min(now.len().saturating_sub(1));
                for slot in out.iter_mut().take(now.len()).skip(same) {
                    slot.push(Arc::clone(message));
                }
                before = now;
            }
            return out;
        }
        let merges = |before: &Value, after: &Value| match format {
            Format::Anthropic => role(before) == role(after),
            Format::OpenAi => {
                role(after) == Some("assistant")
                    && matches!(before.get("tool_calls"), Some(Value::Array(calls)) if !calls.is_empty())
            }
            Format::AiSdk => {
                (role(after) == Some("tool") && role(before) == Some("tool"))
                    || (role(after) == Some("assistant") && lists::calls_tools(before))
            }
            Format::Responses => false,
        };
        let mut out: Vec<Vec<Arc<Message>>> = Vec::with_capacity(list.len());
        let mut previous: Option<&Value> = None;
        // Members that send nothing on their own (a call whose result is elsewhere in the run):
        // carried by the message of their role they fall in.
        let mut waiting: Vec<Arc<Message>> = Vec::new();
        for message in members {
            let own = self.own(message);
            if own.is_empty() {
                match out.last_mut() {
                    Some(last) if previous.and_then(role) == Some(message.role.as_str()) => {
                        last.push(Arc::clone(message))
                    }
                    _ => waiting.push(Arc::clone(message)),
                }
                continue;
            }
            for value in own {
                match out.last_mut() {
                    Some(last) if previous.is_some_and(|p| merges(p, value)) => {
                        if !last.iter().any(|m| Arc::ptr_eq(m, message)) {
                            last.push(Arc::clone(message));
                        }
                    }
                    _ => {
                        let mut carried = std::mem::take(&mut waiting);
                        carried.push(Arc::clone(message));
                        out.push(carried);
                    }
                }
                previous = Some(value);
            }
        }
        if out.len() == list.len() {
            out
        } else {
            list.iter().map(|_| members.to_vec()).collect()
        }
    }

    /// The request messages of `assembled`, in order.
    pub fn messages<'a>(&'a self, assembled: &'a Assembled) -> impl Iterator<Item = &'a Value> {
        assembled.pieces.iter().flat_map(move |piece| match piece {
            Piece::Own(message) => self.own(message).iter(),
            Piece::Joined(list, _) => list.iter(),
        })
    }

    /// Checks `assembled` against its provider's rules.
    pub fn validate(&self, assembled: &Assembled) -> std::result::Result<(), Vec<Violation>> {
        let messages: Vec<&Value> = self.messages(assembled).collect();
        validate_parts(assembled.system.as_ref(), &messages, assembled.format)
    }

    /// `assembled` as one value: OpenAI's message array, or Anthropic's `{ system?, messages }`.
    pub fn to_value(&self, assembled: &Assembled) -> Value {
        let messages = Value::Array(self.messages(assembled).cloned().collect());
        match assembled.format {
            Format::OpenAi | Format::Responses | Format::AiSdk => messages,
            Format::Anthropic => {
                let mut request = Map::new();
                if let Some(system) = &assembled.system {
                    request.insert("system".into(), system.clone());
                }
                request.insert("messages".into(), messages);
                Value::Object(request)
            }
        }
    }
}

/// The error for a context that breaks its provider's rules (a bug: builds are valid by design).
pub(crate) fn invalid_context(violations: &[Violation]) -> Error {
    Error::internal(format!(
        "the built context breaks {} rule(s), first: {}",
        violations.len(),
        violations.first().map_or(String::new(), |v| format!("{} ({:?}): {}", v.rule, v.index, v.message))
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::parse;
    use serde_json::json;

    fn arcs(value: Value, format: Format) -> Vec<Arc<Message>> {
        parse(value, format).unwrap().into_iter().map(Arc::new).collect()
    }

    fn check(messages: &[Arc<Message>], format: Format, cache: &mut EmitCache) {
        let refs: Vec<&Arc<Message>> = messages.iter().collect();
        let assembled = cache.assemble(&refs, format).unwrap();
        let expected = emit_request(messages.iter().map(|m| &**m), format).unwrap();
        assert_eq!(cache.to_value(&assembled), expected);
    }

    #[test]
    fn assembled_equals_emitted() {
        let openai = arcs(
            json!([
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                {"role": "assistant", "content": "and also", "tool_calls": [{"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "assistant", "content": "third"},
                {"role": "tool", "tool_call_id": "a", "content": "A"},
                {"role": "tool", "tool_call_id": "b", "content": "B"},
                {"role": "assistant", "content": "done", "refusal": null},
                {"role": "user", "content": "thanks"},
            ]),
            Format::OpenAi,
        );
        let anthropic = arcs(
            json!([
                {"role": "user", "content": "one"},
                {"role": "user", "content": [{"type": "text", "text": "two"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "  "}]},
                {"role": "user", "content": "three"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "text", "text": "see"}, {"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "again"}]},
            ]),
            Format::Anthropic,
        );
        for format in [Format::OpenAi, Format::Anthropic] {
            let mut cache = EmitCache::default();
            for messages in [&openai, &anthropic] {
                for start in 0..messages.len() {
                    for end in start..=messages.len() {
                        check(&messages[start..end], format, &mut cache);
                    }
                }
            }
        }
    }

    #[test]
    fn an_id_repeated_within_one_message_is_renamed_in_the_next() {
        let messages = arcs(
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}, {"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "1"}, {"type": "tool_result", "tool_use_id": "t", "content": "2"}]},
            ]),
            Format::Anthropic,
        );
        check(&messages, Format::Anthropic, &mut EmitCache::default());
    }

    #[test]
    fn a_message_is_emitted_once_while_it_stays() {
        let messages = arcs(
            json!([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"}]),
            Format::OpenAi,
        );
        let mut cache = EmitCache::default();
        check(&messages[..2], Format::OpenAi, &mut cache);
        assert_eq!(cache.emitted, 2);
        check(&messages[1..], Format::OpenAi, &mut cache);
        assert_eq!(cache.emitted, 3, "only the new message is emitted");
        check(&messages[..1], Format::OpenAi, &mut cache);
        assert_eq!(cache.emitted, 4, "a message that left the context is forgotten");
    }
}
