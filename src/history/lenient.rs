//! The lenient append (`ConversationHistory::append_repaired`): a list the strict append refuses
//! (a log cut at its head, whose first records answer calls made before the cut; a result given
//! twice; a call id reused while its call is open) is repaired the way a build repairs a context,
//! and every change is reported. What is valid is kept as it is.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use super::ToolCallIndex;
use crate::message::{Content, ContentForm, Message, Part, Role};

/// What repair did to a message: at a build (the receipt's `repairs`, on the fly, the log
/// untouched) or at a lenient append (to the list given, before it is stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum RepairKind {
    /// An assistant tool call that no later message answers: the call is left out.
    UnansweredCall,
    /// A tool result that answers no earlier call: left out of a build; turned into plain text
    /// by a lenient append.
    OrphanResult,
    /// A second result for a call that already has one: left out of a build; turned into plain
    /// text by a lenient append.
    DuplicateResult,
    /// A tool call or result in a message whose role cannot carry it.
    MisplacedPart,
    /// A system message identical to an earlier one: kept once, where it first appears.
    DuplicateSystem,
    /// A message left with nothing to say once its unanswered calls were removed.
    EmptyAfterRepair,
    /// A late tool result (logged after messages that followed its call) sent next to its call,
    /// ahead of those messages: the only order the providers take.
    MovedResult,
    /// A lenient append: a tool call reusing the id of a stored call not answered yet is left
    /// out (a result with that id answers the stored call).
    ReusedCallId,
}

/// One change a lenient append made to the list it was given.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AppendRepair {
    /// The message's position in the list given.
    pub index: usize,
    pub kind: RepairKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub call_id: Option<String>,
    /// What was done, in words.
    pub what: String,
}

impl AppendRepair {
    fn call_left_out(index: usize, kind: RepairKind, id: &str, why: &str) -> AppendRepair {
        AppendRepair { index, kind, call_id: Some(id.to_string()), what: format!("tool call {id:?} left out: {why}") }
    }
}

/// What a lenient append stored: the ids of the messages appended (a message repair left empty
/// is not), and the repairs, in list order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RepairedAppend {
    pub ids: Vec<String>,
    pub repairs: Vec<AppendRepair>,
}

/// Where the call an id names now was made: stored, or at (message, part) of the list.
#[derive(Clone, Copy, PartialEq)]
enum Made {
    Stored,
    Listed(usize, usize),
}

/// Repairs `messages` (to be appended after what `index` covers) so that the strict check takes
/// them; returns the messages to append and the repairs, in list order.
pub(super) fn repair(index: &ToolCallIndex, mut messages: Vec<Message>) -> (Vec<Message>, Vec<AppendRepair>) {
    let mut repairs = Vec::new();
    // Per call id: the call it names now, and whether that call is answered.
    let mut calls: HashMap<String, (Made, bool)> = HashMap::new();
    let lookup = |calls: &HashMap<String, (Made, bool)>, id: &str| -> Option<(Made, bool)> {
        calls
            .get(id)
            .copied()
            .or_else(|| index.made_by.get(id).map(|_| (Made::Stored, index.answered_by.contains_key(id))))
    };
    let mut removed: HashSet<(usize, usize)> = HashSet::new();
    let mut to_text: Vec<(usize, usize, RepairKind)> = Vec::new();
    for i in 0..messages.len() {
        let Some(message) = messages.get(i) else { continue };
        let mut listed_calls = Vec::new();
        let mut results = Vec::new();
        for (j, part) in message.content.parts.iter().enumerate() {
            match part {
                Part::ToolCall(call) => listed_calls.push((j, call.id.clone())),
                Part::ToolResult(result) => results.push((j, result.call_id.clone())),
                _ => {}
            }
        }
        for (j, id) in listed_calls {
            match lookup(&calls, &id) {
                Some((Made::Listed(k, jj), false)) => {
                    removed.insert((k, jj));
                    let what = format!("message {i} made a call with the same id before it was answered");
                    repairs.push(AppendRepair::call_left_out(k, RepairKind::UnansweredCall, &id, &what));
                }
                Some((Made::Stored, false)) => {
                    removed.insert((i, j));
                    let what = "a stored call with this id is not answered yet";
                    repairs.push(AppendRepair::call_left_out(i, RepairKind::ReusedCallId, &id, what));
                    continue;
                }
                _ => {}
            }
            calls.insert(id, (Made::Listed(i, j), false));
        }
        for (j, id) in results {
            match lookup(&calls, &id) {
                Some((made, false)) => {
                    calls.insert(id, (made, true));
                }
                Some((_, true)) => to_text.push((i, j, RepairKind::DuplicateResult)),
                None => to_text.push((i, j, RepairKind::OrphanResult)),
            }
        }
    }
    // A call still open once the list has gone on to a user or system message is one the agent
    // never answered (left out, as a build leaves it out); one the list ends on, with nothing after
    // it but assistant messages and results, may be answered by the next append (a log cut mid-step).
    let moved_on = |from: usize| {
        messages.iter().skip(from + 1).any(|m| match m.role {
            Role::Assistant | Role::Tool => false,
            _ => m.content.parts.iter().any(|p| !matches!(p, Part::ToolResult(_))) || m.content.parts.is_empty(),
        })
    };
    let mut open: Vec<(usize, usize, String)> = calls
        .iter()
        .filter_map(|(id, (made, answered))| match made {
            Made::Listed(i, j) if !answered => Some((*i, *j, id.clone())),
            _ => None,
        })
        .collect();
    crate::util::sort::sort(&mut open);
    for (i, j, id) in open {
        if moved_on(i) {
            removed.insert((i, j));
            repairs.push(AppendRepair::call_left_out(
                i,
                RepairKind::UnansweredCall,
                &id,
                "no later message answers it",
            ));
        }
    }
    for (i, j, kind) in to_text {
        let Some(Part::ToolResult(result)) = messages.get(i).and_then(|m| m.content.parts.get(j)) else { continue };
        let id = result.call_id.clone();
        let what = match kind {
            RepairKind::DuplicateResult => "turned into text: its call already has a result",
            _ => "turned into text: no earlier message made its call (a log cut at its head)",
        };
        repairs.push(AppendRepair { index: i, kind, call_id: Some(id), what: format!("tool result {what}") });
        if let Some(message) = messages.get_mut(i) {
            as_text(message, j);
        }
    }
    // Drop the calls left out; a message left with nothing is dropped whole.
    let mut out = Vec::with_capacity(messages.len());
    for (i, mut message) in messages.into_iter().enumerate() {
        let before = message.content.parts.len();
        let mut j = 0;
        message.content.parts.retain(|_| {
            j += 1;
            !removed.contains(&(i, j - 1))
        });
        let emptied = before > 0 && message.content.parts.is_empty();
        if emptied || (before != message.content.parts.len() && !says_something(&message)) {
            repairs.push(AppendRepair {
                index: i,
                kind: RepairKind::EmptyAfterRepair,
                call_id: None,
                what: "message left out: nothing was left in it once its calls were".to_string(),
            });
            continue;
        }
        out.push(message);
    }
    crate::util::sort::sort_by_key(&mut repairs, |r| r.index);
    (out, repairs)
}

fn says_something(message: &Message) -> bool {
    message.content.parts.iter().any(|p| match p {
        Part::Text { text, .. } => !text.trim().is_empty(),
        _ => true,
    })
}

/// The tool result at part `j` as plain text. An orphan result at the head of a log (a resumed
/// session) is the output of a call made before the cut: a file read or a command's output the
/// next steps rely on. Dropping it would lose what the log holds (and the log is lossless); as
/// text in a user message it is valid in every format, and still there to read and summarise.
fn as_text(message: &mut Message, j: usize) {
    let Some(Part::ToolResult(result)) = message.content.parts.get(j) else { return };
    let header = format!("[output of tool call {}, whose call is not in this log]", result.call_id);
    let mut parts = vec![Part::text(header)];
    parts.extend(result.content.parts.iter().cloned());
    if message.role == Role::Tool {
        // An OpenAI tool message: a user message with the output's text (and images).
        message.role = Role::User;
        let text_only = parts.iter().all(|p| matches!(p, Part::Text { .. }));
        message.content = if text_only {
            let texts: Vec<String> = parts
                .iter()
                .filter_map(|p| match p {
                    Part::Text { text, .. } => Some(text.clone()),
                    _ => None,
                })
                .collect();
            Content::text(texts.join("\n"))
        } else {
            Content::parts(parts)
        };
        return;
    }
    message.content.form = ContentForm::Parts;
    message.content.parts.splice(j..=j, parts);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::ConversationHistory;
    use crate::message::Format;
    use crate::tokens::Encoding;
    use serde_json::json;

    fn call(id: &str) -> serde_json::Value {
        json!({"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}})
    }

    #[test]
    fn a_log_cut_at_its_head_is_imported_with_its_orphans_as_text() {
        let list = json!([
            {"role": "tool", "tool_call_id": "before_the_cut", "content": "file contents"},
            {"role": "user", "content": "go on"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "A"},
            {"role": "tool", "tool_call_id": "a", "content": "A again"},
            {"role": "user", "content": "and?"},
            {"role": "assistant", "content": null, "tool_calls": [call("c")]}
        ]);
        let mut strict = ConversationHistory::new(Encoding::O200kBase);
        assert!(strict.append_values(list.clone(), Format::OpenAi).is_err(), "strict stays the default");
        assert_eq!(strict.len(), 0);
        let mut h = ConversationHistory::new(Encoding::O200kBase);
        let out = h.append_repaired(list, Format::OpenAi).unwrap();
        assert_eq!(out.ids.len(), 7);
        let kinds: Vec<(usize, RepairKind)> = out.repairs.iter().map(|r| (r.index, r.kind)).collect();
        assert_eq!(
            kinds,
            [(0, RepairKind::OrphanResult), (2, RepairKind::UnansweredCall), (4, RepairKind::DuplicateResult)]
        );
        assert_eq!(
            h.get_value("m1"),
            Some(
                json!({"role": "user", "content": "[output of tool call before_the_cut, whose call is not in this log]\nfile contents"})
            )
        );
        // b is never answered and the log went on: left out. c ends the log: the next append
        // may answer it.
        assert_eq!(h.get_value("m3").unwrap()["tool_calls"], json!([call("a")]));
        h.append_value(json!({"role": "tool", "tool_call_id": "c", "content": "C"}), Format::OpenAi).unwrap();
    }

    #[test]
    fn reused_ids_and_emptied_messages_are_reported() {
        let mut h = ConversationHistory::new(Encoding::O200kBase);
        h.append_value(json!({"role": "assistant", "content": null, "tool_calls": [call("x")]}), Format::OpenAi)
            .unwrap();
        let out = h
            .append_repaired(
                json!([
                    {"role": "assistant", "content": null, "tool_calls": [call("x")]},
                    {"role": "assistant", "content": null, "tool_calls": [call("y")]},
                    {"role": "assistant", "content": null, "tool_calls": [call("y")]},
                    {"role": "tool", "tool_call_id": "y", "content": "Y"},
                    {"role": "tool", "tool_call_id": "x", "content": "X"}
                ]),
                Format::OpenAi,
            )
            .unwrap();
        let kinds: Vec<(usize, RepairKind)> = out.repairs.iter().map(|r| (r.index, r.kind)).collect();
        assert_eq!(
            kinds,
            [
                (0, RepairKind::ReusedCallId),
                (0, RepairKind::EmptyAfterRepair),
                (1, RepairKind::UnansweredCall),
                (1, RepairKind::EmptyAfterRepair)
            ]
        );
        assert_eq!(out.ids, ["m2", "m3", "m4"], "the stored call x is answered by the last result");
    }
}
