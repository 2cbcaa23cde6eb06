//! Repair: the first stage, and structure: which parts of which messages survive (unanswered
//! calls, orphan results, empty messages and what a provider rejects), and how the survivors
//! group into the units the rest of the pipeline keeps or drops whole.
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

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::util::fasthash::{FastMap, FastSet, FxHasher};

use crate::message::{Message, Part, Role};

/// One message of the history as the pipeline sees it.
#[derive(Clone, Copy, Debug)]
pub struct Item<'a> {
    pub id: &'a str,
    /// Shared, so that a context keeps it whole without a copy.
    pub message: &'a Arc<Message>,
    /// The message's tokens (from the history's cache).
    pub tokens: u32,
    /// Pinned explicitly (`ConversationHistory::pin`): every context keeps it (`pins`).
    pub pinned: bool,
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

#[derive(Clone, Debug, PartialEq)]
pub struct Unit {
    pub kind: UnitKind,
    /// Members in order: the assistant messages first, then the results in history order.
    pub members: Vec<Member>,
    /// Turn number: 0 before the first user request.
    pub turn: usize,
    /// Index of the unit's first message (units are ordered by it): its first member's, the
    /// others' are later.
    pub first: usize,
    /// Index of its last message, kept so that a pass over every unit (a build's fates) need not
    /// follow each unit's members to their heap block.
    last: usize,
}

impl Unit {
    fn new(kind: UnitKind, member: Member, turn: usize) -> Unit {
        let msg = member.msg;
        Unit { kind, members: vec![member], turn, first: msg, last: msg }
    }

    fn push(&mut self, member: Member) {
        self.last = self.last.max(member.msg);
        self.members.push(member);
    }

    pub fn is_step_like(&self) -> bool {
        matches!(self.kind, UnitKind::Assistant | UnitKind::Step)
    }

    /// The last message index of the unit.
    pub fn last(&self) -> usize {
        self.last
    }
}

pub use crate::history::RepairKind;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Repair {
    pub id: String,
    pub kind: RepairKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub call_id: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Structure {
    pub units: Vec<Unit>,
    pub repairs: Vec<Repair>,
    /// Late results sent next to their calls (reported after `repairs`, which `extend` appends to).
    pub moved: Vec<Repair>,
    /// Index of the last turn (the current one).
    pub last_turn: usize,
    /// For each tool call id kept: the message and part that made it.
    pub calls: FastMap<String, (usize, usize)>,
    /// The unit of the run of assistant messages still open at the end (for `extend`).
    pub(crate) open_step: Option<usize>,
    /// Calls left unanswered at the end (a later result may still answer them).
    pub(crate) open_calls: usize,
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
    let mut open: FastMap<&str, (usize, usize)> = FastMap::default();
    let mut closed: FastSet<&str> = FastSet::default();
    // What is known of each part, by its place in the history (`Places`), not hashed pairs.
    let places = Places::of(items);
    // (assistant msg, part) -> answered
    let mut answered = vec![false; places.len()];
    // (result msg, part) -> assistant msg
    let mut result_owner = vec![usize::MAX; places.len()];
    let mut dropped_parts = vec![false; places.len()];
    // Messages with a dropped part, so the common case skips the per-part lookups.
    let mut touched: Vec<bool> = vec![false; items.len()];
    for (i, item) in items.iter().enumerate() {
        let role = item.message.role;
        for (j, part) in item.message.content.parts.iter().enumerate() {
            match part {
                Part::ToolCall(call) => {
                    if role != Role::Assistant {
                        mark(&mut dropped_parts, places.at(i, j));
                        mark(&mut touched, i);
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
                        mark(&mut dropped_parts, places.at(i, j));
                        mark(&mut touched, i);
                        repairs.push(Repair {
                            id: item.id.to_string(),
                            kind: RepairKind::MisplacedPart,
                            call_id: Some(result.call_id.clone()),
                        });
                        continue;
                    }
                    match open.remove(result.call_id.as_str()) {
                        Some((a, k)) => {
                            mark(&mut answered, places.at(a, k));
                            if let Some(owner) = result_owner.get_mut(places.at(i, j)) {
                                *owner = a;
                            }
                            closed.insert(result.call_id.as_str());
                        }
                        None => {
                            let kind = if closed.contains(result.call_id.as_str()) {
                                RepairKind::DuplicateResult
                            } else {
                                RepairKind::OrphanResult
                            };
                            mark(&mut dropped_parts, places.at(i, j));
                            mark(&mut touched, i);
                            repairs.push(Repair {
                                id: item.id.to_string(),
                                kind,
                                call_id: Some(result.call_id.clone()),
                            });
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
                if !is(&answered, places.at(i, j)) {
                    mark(&mut dropped_parts, places.at(i, j));
                    mark(&mut touched, i);
                    repairs.push(Repair {
                        id: item.id.to_string(),
                        kind: RepairKind::UnansweredCall,
                        call_id: Some(call.id.clone()),
                    });
                }
            }
        }
    }

    // Opaque items go with what they were produced with: reasoning before calls that repair
    // left out goes too.
    for i in (1..items.len()).rev() {
        let parts = |k: usize| items.get(k).map_or(0, |item| item.message.content.parts.len());
        let emptied =
            touched.get(i).copied().unwrap_or(false) && (0..parts(i)).all(|j| is(&dropped_parts, places.at(i, j)));
        let before = items.get(i - 1).map(|item| item.message);
        if emptied && before.is_some_and(|m| m.role == Role::Assistant && m.is_opaque()) {
            for j in 0..parts(i - 1) {
                mark(&mut dropped_parts, places.at(i - 1, j));
            }
            mark(&mut touched, i - 1);
        }
    }

    // Pass 2: units.
    let mut units: Vec<Unit> = Vec::new();
    let mut unit_of_assistant = vec![usize::MAX; items.len()];
    let mut open_step: Option<usize> = None; // unit index of the current run of assistant messages
    let mut seen_system: FastMap<u64, Vec<usize>> = FastMap::default();
    let mut turn = 0usize;
    let mut calls_at = FastMap::default();
    for (i, item) in items.iter().enumerate() {
        let message = item.message;
        let parts = &message.content.parts;
        let had_drops = touched.get(i).copied().unwrap_or(false);
        match message.role {
            Role::System | Role::Developer => {
                if dedupe_system {
                    let key = system_key(message);
                    let earlier = seen_system.entry(key).or_default();
                    let duplicate =
                        earlier.iter().any(|&k| items.get(k).is_some_and(|e| same_instruction(e.message, message)));
                    if duplicate {
                        repairs.push(Repair {
                            id: item.id.to_string(),
                            kind: RepairKind::DuplicateSystem,
                            call_id: None,
                        });
                        continue;
                    }
                    earlier.push(i);
                }
                let kept: Vec<usize> = if had_drops {
                    (0..parts.len()).filter(|&j| !is(&dropped_parts, places.at(i, j))).collect()
                } else {
                    Vec::new()
                };
                if had_drops && kept.is_empty() {
                    repairs.push(Repair { id: item.id.to_string(), kind: RepairKind::EmptyAfterRepair, call_id: None });
                    continue;
                }
                let member = Member { msg: i, parts: if had_drops { Some(kept) } else { None } };
                units.push(Unit::new(UnitKind::System, member, turn));
                // A system message does not break a run of assistant messages.
            }
            Role::Assistant => {
                let kept: Vec<usize> = if had_drops {
                    (0..parts.len()).filter(|&j| !is(&dropped_parts, places.at(i, j))).collect()
                } else {
                    Vec::new()
                };
                // Reasoning left without the calls it led to is left out with them.
                let says = |p: &Part| is_substantive(p) && !p.is_opaque();
                if had_drops && !kept.iter().any(|&j| parts.get(j).is_some_and(says)) {
                    repairs.push(Repair { id: item.id.to_string(), kind: RepairKind::EmptyAfterRepair, call_id: None });
                    continue;
                }
                let mut calls = false;
                for (j, part) in parts.iter().enumerate() {
                    if let Part::ToolCall(call) = part {
                        if !had_drops || !is(&dropped_parts, places.at(i, j)) {
                            calls = true;
                            calls_at.insert(call.id.clone(), (i, j));
                        }
                    }
                }
                let member = Member { msg: i, parts: if had_drops { Some(kept) } else { None } };
                let index = match open_step.and_then(|u| units.get_mut(u).map(|unit| (u, unit))) {
                    Some((u, unit)) => {
                        unit.push(member);
                        if calls {
                            unit.kind = UnitKind::Step;
                        }
                        u
                    }
                    None => {
                        let kind = if calls { UnitKind::Step } else { UnitKind::Assistant };
                        units.push(Unit::new(kind, member, turn));
                        units.len() - 1
                    }
                };
                open_step = Some(index);
                if let Some(slot) = unit_of_assistant.get_mut(i) {
                    *slot = index;
                }
            }
            Role::User | Role::Tool => {
                // Results join their step, one member per step.
                let mut by_unit: Vec<(usize, Vec<usize>)> = Vec::new();
                let mut rest: Vec<usize> = Vec::new();
                for (j, part) in parts.iter().enumerate() {
                    if had_drops && is(&dropped_parts, places.at(i, j)) {
                        continue;
                    }
                    match part {
                        Part::ToolResult(_) => {
                            let owner = result_owner
                                .get(places.at(i, j))
                                .and_then(|&a| unit_of_assistant.get(a))
                                .copied()
                                .filter(|&u| u != usize::MAX);
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
                // A tool message's other parts (AI SDK tool approval responses) go with the
                // step whose results it holds, or else with the open step that asked for them.
                let tool_rest = message.role == Role::Tool && !rest.is_empty();
                if tool_rest {
                    match (by_unit.first_mut(), open_step) {
                        (Some((_, list)), _) => list.extend(rest.iter().copied()),
                        (None, Some(u)) => by_unit.push((u, rest.clone())),
                        (None, None) => {}
                    }
                }
                let whole = by_unit.len() == 1 && (rest.is_empty() || tool_rest) && !had_drops;
                for (u, mut list) in by_unit {
                    crate::util::sort::sort(&mut list);
                    if let Some(unit) = units.get_mut(u) {
                        unit.push(Member { msg: i, parts: if whole { None } else { Some(list) } });
                    }
                }
                let has_results = parts.iter().any(|p| matches!(p, Part::ToolResult(_)));
                if message.role == Role::User && !rest.is_empty() {
                    turn += 1;
                    let member = Member { msg: i, parts: if has_results { Some(rest) } else { None } };
                    units.push(Unit::new(UnitKind::User, member, turn));
                    open_step = None;
                } else if message.role == Role::User && !has_results {
                    // A user message with no parts at all still starts a turn.
                    turn += 1;
                    units.push(Unit::new(UnitKind::User, Member { msg: i, parts: None }, turn));
                    open_step = None;
                } else if has_results {
                    open_step = None;
                }
            }
        }
    }
    let moved = moved_results(&units, items);
    let open_calls = open.len();
    Structure { units, repairs, moved, last_turn: turn, calls: calls_at, open_step, open_calls }
}

/// Reports the results a context sends earlier than logged. A context sends units in the order of
/// their first message and each unit's members in order, so a result is moved when some message
/// logged before it is sent after it: walking that order backwards, a result member whose message
/// comes after the earliest message seen so far.
fn moved_results(units: &[Unit], items: &[Item]) -> Vec<Repair> {
    let mut earliest_after = usize::MAX;
    let mut moved: Vec<Repair> = Vec::new();
    for unit in units.iter().rev() {
        for member in unit.members.iter().rev() {
            if member.msg > earliest_after && unit.kind == UnitKind::Step {
                let Some(item) = items.get(member.msg) else { continue };
                let parts = &item.message.content.parts;
                let first_result = match &member.parts {
                    None => parts.iter().find_map(result_call_id),
                    Some(list) => list.iter().filter_map(|&j| parts.get(j)).find_map(result_call_id),
                };
                if let Some(call_id) = first_result {
                    if moved.last().is_none_or(|r| r.id != item.id) {
                        moved.push(Repair {
                            id: item.id.to_string(),
                            kind: RepairKind::MovedResult,
                            call_id: Some(call_id.to_string()),
                        });
                    }
                }
            }
            earliest_after = earliest_after.min(member.msg);
        }
    }
    moved.reverse();
    moved
}

fn result_call_id(part: &Part) -> Option<&str> {
    match part {
        Part::ToolResult(result) => Some(result.call_id.as_str()),
        _ => None,
    }
}

/// Extends the structure of `items[..from]` to all of `items`, when the new messages carry no
/// tool call or result and no call was left open: each is then a unit of its own or joins the
/// open run of assistant messages, exactly as `analyze` would place it. Returns false (and
/// changes nothing) when that does not hold.
pub(crate) fn extend(structure: &mut Structure, items: &[Item], from: usize, dedupe: bool) -> bool {
    if structure.open_calls > 0 || from > items.len() {
        return false;
    }
    let new = items.get(from..).unwrap_or(&[]);
    if new
        .iter()
        .any(|item| item.message.content.parts.iter().any(|p| matches!(p, Part::ToolCall(_) | Part::ToolResult(_))))
    {
        return false;
    }
    if new.iter().any(|item| item.message.role == Role::Tool) {
        return false;
    }
    for (offset, item) in new.iter().enumerate() {
        let i = from + offset;
        let message = item.message;
        match message.role {
            Role::System | Role::Developer => {
                if dedupe {
                    let duplicate = structure.units.iter().filter(|u| u.kind == UnitKind::System).any(|u| {
                        u.members
                            .first()
                            .and_then(|m| items.get(m.msg))
                            .is_some_and(|e| same_instruction(e.message, message))
                    });
                    if duplicate {
                        structure.repairs.push(Repair {
                            id: item.id.to_string(),
                            kind: RepairKind::DuplicateSystem,
                            call_id: None,
                        });
                        continue;
                    }
                }
                let turn = structure.last_turn;
                structure.units.push(Unit::new(UnitKind::System, Member { msg: i, parts: None }, turn));
            }
            Role::Assistant => {
                let member = Member { msg: i, parts: None };
                let joined = match structure.open_step.and_then(|u| structure.units.get_mut(u)) {
                    Some(unit) => {
                        unit.push(member);
                        true
                    }
                    None => false,
                };
                if !joined {
                    let turn = structure.last_turn;
                    structure.units.push(Unit::new(UnitKind::Assistant, Member { msg: i, parts: None }, turn));
                    structure.open_step = Some(structure.units.len() - 1);
                }
            }
            Role::User | Role::Tool => {
                structure.last_turn += 1;
                let turn = structure.last_turn;
                structure.units.push(Unit::new(UnitKind::User, Member { msg: i, parts: None }, turn));
                structure.open_step = None;
            }
        }
    }
    true
}

fn mark(flags: &mut [bool], i: usize) {
    if let Some(slot) = flags.get_mut(i) {
        *slot = true;
    }
}

fn is(flags: &[bool], i: usize) -> bool {
    flags.get(i).copied().unwrap_or(false)
}

/// Each part's place in the history: message `i`'s parts follow those of the messages before it.
struct Places {
    starts: Vec<usize>,
}

impl Places {
    fn of(items: &[Item]) -> Places {
        let mut starts = Vec::with_capacity(items.len() + 1);
        let mut next = 0;
        for item in items {
            starts.push(next);
            next += item.message.content.parts.len();
        }
        starts.push(next);
        Places { starts }
    }

    /// How many parts the history has.
    fn len(&self) -> usize {
        self.starts.last().copied().unwrap_or(0)
    }

    /// The place of part `j` of message `i` (past the end, where no flag is, for neither).
    fn at(&self, i: usize, j: usize) -> usize {
        self.starts.get(i).map_or(usize::MAX, |start| start + j)
    }
}

/// A hash of what a system message says (its role, name and text parts), without copying it.
/// Other parts add only their kind: `same_instruction` compares messages whose keys match, and
/// formatting a part with `Debug` to hash it pulled every message type's `Debug` into the wasm.
fn system_key(message: &Message) -> u64 {
    let mut hasher = FxHasher::default();
    message.role.hash(&mut hasher);
    message.name.hash(&mut hasher);
    for part in &message.content.parts {
        match part {
            Part::Text { text, .. } => text.hash(&mut hasher),
            other => std::mem::discriminant(other).hash(&mut hasher),
        }
    }
    hasher.finish()
}

fn same_instruction(a: &Message, b: &Message) -> bool {
    a.role == b.role && a.name == b.name && a.content.parts == b.content.parts
}

/// The structure of the last history built and what is derived of it as it grows, kept between
/// builds: a build after an append extends it instead of analysing the history again.
#[derive(Clone, Debug, Default)]
pub(crate) struct StructureCache {
    /// The structure with what identifies its history: its length, first and last ids, and the
    /// dedupe flag (an append-only history with the same length and ends is the same history).
    last: Option<(usize, String, String, bool, Arc<Structure>)>,
    /// How many structures were analysed afresh: what other caches keep of a structure (running
    /// sums, fates) they keep with this number, and start afresh when it changes.
    epoch: u64,
    /// The repairs of the structure as receipts report them, with how many of its `repairs` and
    /// `moved` they hold (`reported`).
    reported: Option<(usize, usize, Arc<Vec<Repair>>)>,
    /// How many of the structure's units were looked at, and which of them are system units
    /// (`system_units`).
    systems: (usize, Vec<usize>),
}

impl StructureCache {
    /// Which structure the cache holds: it changes when one is analysed afresh (an extended one
    /// keeps it).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch
    }
}

/// The structure of `items`, from the cache when it is the history built last time (append-only:
/// same length and same ends), else analysed afresh.
pub(crate) fn structure_for(items: &[Item], dedupe: bool, cache: &mut StructureCache) -> Arc<Structure> {
    let first = items.first().map_or("", |i| i.id);
    let last = items.last().map_or("", |i| i.id);
    if let Some((len, cached_first, cached_last, cached_dedupe, structure)) = cache.last.as_mut() {
        if *len == items.len() && cached_first == first && cached_last == last && *cached_dedupe == dedupe {
            return Arc::clone(structure);
        }
        // Appended to since: extend in place when the new messages carry no tool traffic.
        let prefix =
            *len > 0 && *len < items.len() && items.get(*len - 1).is_some_and(|i| i.id == cached_last.as_str());
        if prefix && cached_first == first && *cached_dedupe == dedupe {
            let from = *len;
            // Unshared between builds, so this extends in place without copying.
            // `extend` changes nothing when it declines.
            if extend(Arc::make_mut(structure), items, from, dedupe) {
                *len = items.len();
                *cached_last = last.to_string();
                return Arc::clone(structure);
            }
        }
    }
    let structure = Arc::new(analyze(items, dedupe));
    *cache = StructureCache {
        last: Some((items.len(), first.to_string(), last.to_string(), dedupe, Arc::clone(&structure))),
        epoch: cache.epoch + 1,
        ..StructureCache::default()
    };
    structure
}

/// The indices of the structure's system units, in order: kept with the structure and brought up
/// to date with the units appended since (`extend` appends units and changes no unit's kind).
pub(crate) fn system_units<'c>(structure: &Structure, cache: &'c mut StructureCache) -> &'c [usize] {
    let (seen, systems) = &mut cache.systems;
    if *seen > structure.units.len() {
        (*seen, *systems) = (0, Vec::new());
    }
    let new = structure.units.iter().enumerate().skip(*seen).filter(|(_, unit)| unit.kind == UnitKind::System);
    systems.extend(new.map(|(u, _)| u));
    *seen = structure.units.len();
    systems
}

/// The repairs a receipt reports (`repairs`, then `moved`): one list shared by the receipts of
/// builds on the same structure while it holds as many (`extend` only appends to `repairs`), not
/// a copy per build of a long history's thousands.
pub(crate) fn reported(structure: &Structure, cache: &mut StructureCache) -> Arc<Vec<Repair>> {
    let counts = (structure.repairs.len(), structure.moved.len());
    if let Some((repairs, moved, list)) = &cache.reported {
        if (*repairs, *moved) == counts {
            return Arc::clone(list);
        }
    }
    let list: Arc<Vec<Repair>> = Arc::new(structure.repairs.iter().chain(&structure.moved).cloned().collect());
    cache.reported = Some((counts.0, counts.1, Arc::clone(&list)));
    list
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{parse, Format};
    use serde_json::json;

    fn items(messages: &[Arc<Message>]) -> Vec<Item<'_>> {
        messages.iter().enumerate().map(|(i, m)| Item { id: ID[i], message: m, tokens: 1, pinned: false }).collect()
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
        let messages: Vec<Arc<Message>> = messages.into_iter().map(Arc::new).collect();
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
        let messages: Vec<Arc<Message>> = messages.into_iter().map(Arc::new).collect();
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

    #[test]
    fn a_late_result_moved_next_to_its_call_is_reported() {
        let messages = parse(
            json!([
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": null, "tool_calls": [
                    {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}},
                    {"id": "b", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "a", "content": "A"},
                {"role": "user", "content": "still there?"},
                {"role": "tool", "tool_call_id": "b", "content": "B"}
            ]),
            Format::OpenAi,
        )
        .unwrap();
        let messages: Vec<Arc<Message>> = messages.into_iter().map(Arc::new).collect();
        let s = analyze(&items(&messages), true);
        let sent: Vec<usize> = s.units.iter().flat_map(|u| u.members.iter().map(|m| m.msg)).collect();
        assert_eq!(sent, [0, 1, 2, 4, 3], "b's result goes before the user message logged ahead of it");
        let lasts: Vec<usize> = s.units.iter().map(Unit::last).collect();
        assert_eq!(lasts, [0, 4, 3], "the step ends with the late result");
        assert!(s.repairs.is_empty(), "{:?}", s.repairs);
        assert_eq!(s.moved, [Repair { id: "m5".into(), kind: RepairKind::MovedResult, call_id: Some("b".into()) }]);
        // Results in their logged order move nothing.
        let s = analyze(&items(&messages[..3]), true);
        assert!(s.moved.is_empty(), "{:?}", s.moved);
    }
}
