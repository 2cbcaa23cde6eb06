//! Repair and structure: which parts of which messages survive (seed 000's
//! `clean_message_history`, and what it misses), and how the survivors group into the units
//! the rest of the pipeline keeps or drops whole.
//!
//! * A **step** is a run of consecutive assistant messages (one API response may be logged as
//!   several, as Claude Code does) together with every tool result that answers one of their
//!   calls, wherever those results sit: in several OpenAI tool messages, in one Anthropic user
//!   message, or split over several.
//! * A **user unit** is the non-result content of a user message.
//! * A **system unit** is one system or developer message.
//! * A **turn** runs from one user unit to the next.
//!
//! Repair is done on the fly, never on the stored messages: a call without a result and a result
//! without a call are left out of every unit and reported.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::message::{Message, Part, Role};

/// One message of the history as the pipeline sees it.
#[derive(Clone, Copy, Debug)]
pub struct Item<'a> {
    pub id: &'a str,
    pub message: &'a Message,
    /// The message's tokens (from the history's cache).
    pub tokens: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum UnitKind {
    System,
    User,
    /// Assistant messages that call no tool.
    Assistant,
    /// Assistant messages that call tools, with all their results.
    Step,
}

/// One message, or some of its parts, inside a unit.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// Index of the message in the items.
    pub msg: usize,
    /// The part indices that belong to this member; `None` for every part.
    pub parts: Option<Vec<usize>>,
}

#[derive(Clone, Debug)]
pub struct Unit {
    pub kind: UnitKind,
    /// Members in order: the assistant messages first, then the results in history order.
    pub members: Vec<Member>,
    /// Turn number: 0 before the first user request.
    pub turn: usize,
    /// Index of the unit's first message (units are ordered by it).
    pub first: usize,
}

impl Unit {
    pub fn is_step_like(&self) -> bool {
        matches!(self.kind, UnitKind::Assistant | UnitKind::Step)
    }

    /// The last message index of the unit.
    pub fn last(&self) -> usize {
        self.members.iter().map(|m| m.msg).max().unwrap_or(self.first)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum RepairKind {
    /// An assistant tool call that no later message answers: the call is left out.
    UnansweredCall,
    /// A tool result that answers no earlier call: left out.
    OrphanResult,
    /// A second result for a call that already has one: left out.
    DuplicateResult,
    /// A tool call or result in a message whose role cannot carry it.
    MisplacedPart,
    /// A system message identical to an earlier one: kept once, where it first appears.
    DuplicateSystem,
    /// A message left with nothing to say once its unanswered calls were removed.
    EmptyAfterRepair,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Repair {
    pub id: String,
    pub kind: RepairKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

#[derive(Clone, Debug, Default)]
pub struct Structure {
    pub units: Vec<Unit>,
    pub repairs: Vec<Repair>,
    /// Index of the last turn (the current one).
    pub last_turn: usize,
    /// For each tool call id kept: the message and part that made it.
    pub calls: HashMap<String, (usize, usize)>,
}

/// Does this part say anything once emitted? Whitespace-only text does not.
pub(crate) fn is_substantive(part: &Part) -> bool {
    match part {
        Part::Text { text, .. } => !text.trim().is_empty(),
        _ => true,
    }
}

pub fn analyze(items: &[Item], dedupe_system: bool) -> Structure {
    let mut repairs = Vec::new();
    // Pass 1: pair each result with the open call it answers, in history order.
    let mut open: HashMap<&str, (usize, usize)> = HashMap::new();
    let mut closed: HashSet<&str> = HashSet::new();
    // (assistant msg, part) -> answered
    let mut answered: HashSet<(usize, usize)> = HashSet::new();
    // (result msg, part) -> assistant msg
    let mut result_owner: HashMap<(usize, usize), usize> = HashMap::new();
    let mut dropped_parts: HashSet<(usize, usize)> = HashSet::new();
    for (i, item) in items.iter().enumerate() {
        let role = item.message.role;
        for (j, part) in item.message.content.parts.iter().enumerate() {
            match part {
                Part::ToolCall(call) => {
                    if role != Role::Assistant {
                        dropped_parts.insert((i, j));
                        repairs.push(Repair {
                            id: item.id.to_string(),
                            kind: RepairKind::MisplacedPart,
                            call_id: Some(call.id.clone()),
                        });
                        continue;
                    }
                    // A reused id: the earlier call, if still open, stays unanswered.
                    open.insert(call.id.as_str(), (i, j));
                    closed.remove(call.id.as_str());
                }
                Part::ToolResult(result) => {
                    if !matches!(role, Role::User | Role::Tool) {
                        dropped_parts.insert((i, j));
                        repairs.push(Repair {
                            id: item.id.to_string(),
                            kind: RepairKind::MisplacedPart,
                            call_id: Some(result.call_id.clone()),
                        });
                        continue;
                    }
                    match open.remove(result.call_id.as_str()) {
                        Some((a, k)) => {
                            answered.insert((a, k));
                            result_owner.insert((i, j), a);
                            closed.insert(result.call_id.as_str());
                        }
                        None => {
                            let kind = if closed.contains(result.call_id.as_str()) {
                                RepairKind::DuplicateResult
                            } else {
                                RepairKind::OrphanResult
                            };
                            dropped_parts.insert((i, j));
                            repairs.push(Repair { id: item.id.to_string(), kind, call_id: Some(result.call_id.clone()) });
                        }
                    }
                }
                _ => {}
            }
        }
    }
    // Unanswered calls, reported in history order.
    for (i, item) in items.iter().enumerate() {
        if item.message.role != Role::Assistant {
            continue;
        }
        for (j, part) in item.message.content.parts.iter().enumerate() {
            if let Part::ToolCall(call) = part {
                if !answered.contains(&(i, j)) {
                    dropped_parts.insert((i, j));
                    repairs.push(Repair {
                        id: item.id.to_string(),
                        kind: RepairKind::UnansweredCall,
                        call_id: Some(call.id.clone()),
                    });
                }
            }
        }
    }

    // Pass 2: units.
    let mut units: Vec<Unit> = Vec::new();
    let mut unit_of_assistant: HashMap<usize, usize> = HashMap::new();
    let mut open_step: Option<usize> = None; // unit index of the current run of assistant messages
    let mut seen_system: HashSet<(Role, String)> = HashSet::new();
    let mut turn = 0usize;
    let mut calls_at = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        let message = item.message;
        let parts = &message.content.parts;
        let had_drops = (0..parts.len()).any(|j| dropped_parts.contains(&(i, j)));
        match message.role {
            Role::System | Role::Developer => {
                if dedupe_system {
                    let key = (message.role, system_key(message));
                    if !seen_system.insert(key) {
                        repairs.push(Repair { id: item.id.to_string(), kind: RepairKind::DuplicateSystem, call_id: None });
                        continue;
                    }
                }
                let kept: Vec<usize> = (0..parts.len()).filter(|j| !dropped_parts.contains(&(i, *j))).collect();
                if had_drops && kept.is_empty() {
                    repairs.push(Repair { id: item.id.to_string(), kind: RepairKind::EmptyAfterRepair, call_id: None });
                    continue;
                }
                let member = Member { msg: i, parts: if had_drops { Some(kept) } else { None } };
                units.push(Unit { kind: UnitKind::System, members: vec![member], turn, first: i });
                // A system message does not break a run of assistant messages.
            }
            Role::Assistant => {
                let kept: Vec<usize> = (0..parts.len()).filter(|j| !dropped_parts.contains(&(i, *j))).collect();
                if had_drops && !kept.iter().any(|&j| parts.get(j).is_some_and(is_substantive)) {
                    repairs.push(Repair { id: item.id.to_string(), kind: RepairKind::EmptyAfterRepair, call_id: None });
                    continue;
                }
                let calls = kept.iter().any(|&j| matches!(parts.get(j), Some(Part::ToolCall(_))));
                for &j in &kept {
                    if let Some(Part::ToolCall(call)) = parts.get(j) {
                        calls_at.insert(call.id.clone(), (i, j));
                    }
                }
                let member = Member { msg: i, parts: if had_drops { Some(kept) } else { None } };
                let index = match open_step.and_then(|u| units.get_mut(u).map(|unit| (u, unit))) {
                    Some((u, unit)) => {
                        unit.members.push(member);
                        if calls {
                            unit.kind = UnitKind::Step;
                        }
                        u
                    }
                    None => {
                        let kind = if calls { UnitKind::Step } else { UnitKind::Assistant };
                        units.push(Unit { kind, members: vec![member], turn, first: i });
                        units.len() - 1
                    }
                };
                open_step = Some(index);
                unit_of_assistant.insert(i, index);
            }
            Role::User | Role::Tool => {
                // Results join their step, one member per step.
                let mut by_unit: Vec<(usize, Vec<usize>)> = Vec::new();
                let mut rest: Vec<usize> = Vec::new();
                for (j, part) in parts.iter().enumerate() {
                    if dropped_parts.contains(&(i, j)) {
                        continue;
                    }
                    match part {
                        Part::ToolResult(_) => {
                            let owner = result_owner.get(&(i, j)).and_then(|a| unit_of_assistant.get(a)).copied();
                            match owner {
                                Some(u) => match by_unit.iter_mut().find(|(unit, _)| *unit == u) {
                                    Some((_, list)) => list.push(j),
                                    None => by_unit.push((u, vec![j])),
                                },
                                // The assistant message was itself dropped by repair (cannot
                                // happen for an answered call, which keeps it non-empty).
                                None => {
                                    repairs.push(Repair {
                                        id: item.id.to_string(),
                                        kind: RepairKind::OrphanResult,
                                        call_id: None,
                                    });
                                }
                            }
                        }
                        _ => rest.push(j),
                    }
                }
                let whole = by_unit.len() == 1 && rest.is_empty() && !had_drops;
                for (u, list) in by_unit {
                    if let Some(unit) = units.get_mut(u) {
                        unit.members.push(Member { msg: i, parts: if whole { None } else { Some(list) } });
                    }
                }
                let has_results = parts.iter().any(|p| matches!(p, Part::ToolResult(_)));
                if message.role == Role::User && !rest.is_empty() {
                    turn += 1;
                    let member = Member { msg: i, parts: if has_results { Some(rest) } else { None } };
                    units.push(Unit { kind: UnitKind::User, members: vec![member], turn, first: i });
                    open_step = None;
                } else if message.role == Role::User && !has_results {
                    // A user message with no parts at all still starts a turn.
                    turn += 1;
                    units.push(Unit { kind: UnitKind::User, members: vec![Member { msg: i, parts: None }], turn, first: i });
                    open_step = None;
                } else if has_results {
                    open_step = None;
                }
            }
        }
    }
    Structure { units, repairs, last_turn: turn, calls: calls_at }
}

fn system_key(message: &Message) -> String {
    // Text parts decide identity; other parts (rare in system messages) by their debug form.
    let mut key = String::new();
    for part in &message.content.parts {
        match part {
            Part::Text { text, .. } => key.push_str(text),
            other => key.push_str(&format!("{other:?}")),
        }
        key.push('\u{1f}');
    }
    if let Some(name) = &message.name {
        key.push_str(name);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{parse, Format};
    use serde_json::json;

    fn items(messages: &[Message]) -> Vec<Item<'_>> {
        messages.iter().enumerate().map(|(i, m)| Item { id: ID[i], message: m, tokens: 1 }).collect()
    }
    const ID: [&str; 12] = ["m1", "m2", "m3", "m4", "m5", "m6", "m7", "m8", "m9", "m10", "m11", "m12"];

    #[test]
    fn seed_000_unanswered_call_is_dropped_and_reported() {
        let messages = parse(
            json!([
                {"role": "assistant", "content": "", "tool_calls": [{"id": "call_123", "type": "function", "function": {"name": "search", "arguments": "{}"}}]},
                {"role": "user", "content": "Actually, nevermind"}
            ]),
            Format::OpenAi,
        )
        .unwrap();
        let s = analyze(&items(&messages), true);
        assert_eq!(s.units.len(), 1);
        assert_eq!(s.units[0].kind, UnitKind::User);
        assert_eq!(s.repairs[0].kind, RepairKind::UnansweredCall);
        assert_eq!(s.repairs[0].call_id.as_deref(), Some("call_123"));
        assert_eq!(s.repairs[1].kind, RepairKind::EmptyAfterRepair);
    }

    #[test]
    fn split_assistant_messages_and_interleaved_results_form_one_step() {
        // Claude Code logs one response as several assistant messages.
        let messages = parse(
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Glob", "input": {}}]},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "Read", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "b", "content": "B"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "A"}, {"type": "text", "text": "and?"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "zz", "content": "?"}]}
            ]),
            Format::Anthropic,
        )
        .unwrap();
        let s = analyze(&items(&messages), true);
        let kinds: Vec<UnitKind> = s.units.iter().map(|u| u.kind).collect();
        assert_eq!(kinds, [UnitKind::User, UnitKind::Step, UnitKind::User]);
        let step = &s.units[1];
        let msgs: Vec<usize> = step.members.iter().map(|m| m.msg).collect();
        assert_eq!(msgs, [1, 2, 3, 4, 5]);
        assert_eq!(step.members[4].parts, Some(vec![0]));
        assert_eq!(s.units[2].members[0].parts, Some(vec![1]));
        assert_eq!(s.repairs, [Repair { id: "m7".into(), kind: RepairKind::OrphanResult, call_id: Some("zz".into()) }]);
        assert_eq!(s.last_turn, 2);
    }
}
