//! Claude Code session logs: one JSON record a line. Records of `type` `user` and `assistant`
//! carry an Anthropic message in `.message`; the rest (`progress`, `system`, `summary`,
//! `file-history-snapshot`, `queue-operation`, …) are the agent's own bookkeeping. Claude Code
//! writes one API response as several `assistant` records sharing `message.id`, one content block
//! each, sometimes with the first calls' tool results logged in between: they are merged back
//! into the one message the model produced. Sub-agents' records (`isSidechain`) belong to other
//! conversations, and records on a branch the user rewound away from are not part of this one.

use std::collections::HashMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::{anthropic_request, line_error, relocate, Loaded, Locator, Mark, MarkKind, Origin, Skipped, Source};
use crate::error::{Error, ErrorKind, Result};
use crate::message::json::type_name;
use crate::message::{self, Format};

/// The fields of a record the loader reads. The rest (tool results' copies of files, snapshots,
/// usage, hook output: most of a long log) is read past without being kept. A key that is there
/// is `Some`, `null` included.
pub(super) struct Fields {
    kind: Option<Value>,
    subtype: Option<Value>,
    uuid: Option<Value>,
    parent_uuid: Option<Value>,
    logical_parent_uuid: Option<Value>,
    is_sidechain: Option<Value>,
    is_meta: Option<Value>,
    is_compact_summary: Option<Value>,
    compact_metadata: Option<Value>,
    message: Option<Value>,
}

/// The keys of `Fields`, in its order.
const KEYS: [&str; 10] = [
    "type",
    "subtype",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "isSidechain",
    "isMeta",
    "isCompactSummary",
    "compactMetadata",
    "message",
];

// By hand rather than derived: serde's derive handles each of the ten keys in code of its own
// (6.6 KB of the lite wasm); here one slot array and one read serve them all, with the derive's
// behaviour (a key twice is an error, other keys are read past).
impl<'de> Deserialize<'de> for Fields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserializer.deserialize_map(FieldsVisitor)
    }
}

struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Fields;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct Fields")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Fields, A::Error> {
        let mut slots: [Option<Value>; 10] = Default::default();
        while let Some(key) = map.next_key_seed(Key)? {
            match key.and_then(|i| Some((KEYS.get(i)?, slots.get_mut(i)?))) {
                Some((name, Some(_))) => return Err(de::Error::duplicate_field(name)),
                Some((_, slot)) => *slot = Some(map.next_value()?),
                None => {
                    map.next_value::<de::IgnoredAny>()?;
                }
            }
        }
        let [kind, subtype, uuid, parent_uuid, logical_parent_uuid, is_sidechain, is_meta, is_compact_summary, compact_metadata, message] =
            slots;
        Ok(Fields {
            kind,
            subtype,
            uuid,
            parent_uuid,
            logical_parent_uuid,
            is_sidechain,
            is_meta,
            is_compact_summary,
            compact_metadata,
            message,
        })
    }
}

/// A record's key: its place in `KEYS`, `None` for a key the loader does not read.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> std::result::Result<Option<usize>, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("field identifier")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> std::result::Result<Option<usize>, E> {
        Ok(KEYS.iter().position(|name| *name == key))
    }
}

fn not_an_object(at: &Locator, value: &Value) -> Error {
    at.error(ErrorKind::InvalidArgument, "", format!("a record must be a JSON object, got {}", type_name(value)))
}

/// One line of a log.
pub(super) fn parse_line(at: Locator, line: &str) -> Result<Fields> {
    // Not only for the message: serde would read `[1, 2]` as a record's first two fields.
    if !line.trim_start().starts_with('{') {
        return Err(match serde_json::from_str::<Value>(line) {
            Ok(value) => not_an_object(&at, &value),
            Err(error) => at.error(ErrorKind::InvalidArgument, "", line_error(&error)),
        });
    }
    serde_json::from_str::<Fields>(line).map_err(|error| {
        let message = if error.is_data() {
            format!("not a valid record: {error}").replace(" at line 1 column", " at column")
        } else {
            line_error(&error)
        };
        at.error(ErrorKind::InvalidArgument, "", message)
    })
}

/// One record of a log held as JSON (a single record, or records saved as an array). Taken
/// apart by hand: a second serde path for `Fields` would cost more wasm than these lines.
pub(super) fn from_value(at: Locator, value: Value) -> Result<Fields> {
    let Value::Object(mut map) = value else {
        return Err(not_an_object(&at, &value));
    };
    let mut take = |key: &str| map.shift_remove(key);
    Ok(Fields {
        kind: take("type"),
        subtype: take("subtype"),
        uuid: take("uuid"),
        parent_uuid: take("parentUuid"),
        logical_parent_uuid: take("logicalParentUuid"),
        is_sidechain: take("isSidechain"),
        is_meta: take("isMeta"),
        is_compact_summary: take("isCompactSummary"),
        compact_metadata: take("compactMetadata"),
        message: take("message"),
    })
}

/// What one record is.
enum Kind {
    Message { assistant: bool },
    CompactBoundary,
    Other(String),
}

struct Record {
    at: Locator,
    fields: Fields,
    kind: Kind,
    sidechain: bool,
}

fn is_true(value: &Option<Value>) -> bool {
    *value == Some(Value::Bool(true))
}

fn as_str(value: &Option<Value>) -> Option<&str> {
    value.as_ref().and_then(Value::as_str)
}

impl Record {
    fn is_message(&self) -> bool {
        matches!(self.kind, Kind::Message { .. }) && !self.sidechain
    }

    /// A user's own turn: not a tool result, not text the agent injected.
    fn is_prompt(&self) -> bool {
        let fields = &self.fields;
        if !matches!(self.kind, Kind::Message { assistant: false })
            || is_true(&fields.is_meta)
            || is_true(&fields.is_compact_summary)
        {
            return false;
        }
        match fields.message.as_ref().and_then(|m| m.get("content")) {
            Some(Value::Array(blocks)) => {
                !blocks.iter().any(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            }
            _ => true,
        }
    }

    /// The record this one follows: its parent, or for a compaction boundary (a new root) the
    /// last record before the compaction.
    fn parent(&self) -> Option<&str> {
        as_str(&self.fields.parent_uuid).or_else(|| match self.kind {
            Kind::CompactBoundary => as_str(&self.fields.logical_parent_uuid),
            _ => None,
        })
    }
}

fn classify(at: Locator, fields: Fields) -> Result<Record> {
    let kind = match &fields.kind {
        Some(Value::String(kind)) => kind.clone(),
        Some(other) => {
            return Err(at.error(
                ErrorKind::InvalidArgument,
                "type",
                format!("`type` must be a string, got {}", type_name(other)),
            ))
        }
        None => return Err(at.error(ErrorKind::InvalidArgument, "type", "record has no \"type\"")),
    };
    let sidechain = is_true(&fields.is_sidechain);
    let kind = match kind.as_str() {
        "user" | "assistant" => {
            match &fields.message {
                Some(Value::Object(_)) => {}
                Some(other) => {
                    return Err(at.error(
                        ErrorKind::InvalidMessage,
                        "message",
                        format!("\"message\" must be an object, got {}", type_name(other)),
                    ))
                }
                None if sidechain => {}
                None => return Err(at.error(ErrorKind::InvalidMessage, "message", "record has no \"message\"")),
            }
            Kind::Message { assistant: kind == "assistant" }
        }
        "system" if as_str(&fields.subtype) == Some("compact_boundary") => Kind::CompactBoundary,
        _ => Kind::Other(kind),
    };
    Ok(Record { at, fields, kind, sidechain })
}

/// Loads the records of a Claude Code log, each with its line (or its index in a JSON array).
pub(super) fn load(records: Vec<(Locator, Fields)>) -> Result<Loaded> {
    let total = records.len();
    let mut records = records.into_iter().map(|(at, fields)| classify(at, fields)).collect::<Result<Vec<_>>>()?;
    // A sub-agent's own transcript (`agent-<id>.jsonl`) is all side chain: it is the conversation.
    let sub_agent = !records.iter().any(Record::is_message)
        && records.iter().any(|r| r.sidechain && matches!(r.kind, Kind::Message { .. }) && r.fields.message.is_some());
    if sub_agent {
        for record in records.iter_mut().filter(|r| r.fields.message.is_some()) {
            record.sidechain = false;
        }
    }
    let mut left_out: Vec<Option<LeftOut>> = records
        .iter()
        .map(|record| match &record.kind {
            _ if record.sidechain => Some(LeftOut::Sidechain),
            Kind::Message { .. } => None,
            Kind::CompactBoundary => Some(LeftOut::CompactBoundary),
            Kind::Other(kind) => Some(LeftOut::NotAMessage(match (kind.as_str(), as_str(&record.fields.subtype)) {
                ("system", Some(subtype)) => format!("a system record ({subtype})"),
                (kind, _) => format!("a {kind} record"),
            })),
        })
        .collect();
    mark_duplicates(&records, &mut left_out);
    mark_abandoned_branches(&records, &mut left_out);

    let kinds = record_kinds(&records);
    let mut builder = Builder::default();
    for (record, reason) in records.into_iter().zip(&left_out) {
        if let Some(reason) = reason {
            if matches!(record.kind, Kind::CompactBoundary) && !record.sidechain {
                let mut mark = Mark::at(builder.values.len(), MarkKind::CompactBoundary, &record.at);
                let metadata = record.fields.compact_metadata.as_ref();
                mark.trigger = metadata.and_then(|m| m.get("trigger")).and_then(Value::as_str).map(str::to_string);
                mark.pre_tokens = metadata.and_then(|m| m.get("preTokens")).and_then(Value::as_u64);
                builder.marks.push(mark);
            }
            builder.skipped.push(record.at.skipped(reason.to_string()));
            continue;
        }
        builder.add(record)?;
    }
    if builder.values.is_empty() {
        return Err(Error::invalid_argument(format!(
            "no conversation in {total} record{}: none is a user or assistant message of the main conversation (record types: {})",
            if total == 1 { "" } else { "s" },
            kinds.join(", ")
        )));
    }
    let mut notes = Vec::new();
    if sub_agent {
        notes.push("every message is a sub-agent's (isSidechain): read as the sub-agent's conversation".into());
    }
    if builder.merged_records > 0 {
        notes.push(format!(
            "{} assistant records merged into the responses they were split from (same message.id)",
            builder.merged_records
        ));
    }
    for label in ["sub-agent (sidechain) records", "records of rewound branches", "repeated records"] {
        let n = left_out.iter().flatten().filter(|r| r.counted_as() == Some(label)).count();
        if n > 0 {
            notes.push(format!("{n} {label} left out"));
        }
    }
    let messages = anthropic_request(None, builder.values);
    let mut loaded = Loaded::new(Format::Anthropic, Source::ClaudeCode, messages, builder.origins, notes);
    loaded.skipped = builder.skipped;
    loaded.marks = builder.marks;
    Ok(loaded)
}

/// Why a record is not in the conversation.
enum LeftOut {
    NotAMessage(String),
    Sidechain,
    CompactBoundary,
    /// Written again: the line or record of the first.
    Repeat {
        first: String,
    },
    /// On an abandoned branch: where the conversation continues instead.
    Rewound {
        continues_at: String,
    },
}

impl LeftOut {
    /// What a note counts records left out for this reason as, where the count is worth a note.
    fn counted_as(&self) -> Option<&'static str> {
        match self {
            LeftOut::Sidechain => Some("sub-agent (sidechain) records"),
            LeftOut::Rewound { .. } => Some("records of rewound branches"),
            LeftOut::Repeat { .. } => Some("repeated records"),
            LeftOut::NotAMessage(_) | LeftOut::CompactBoundary => None,
        }
    }
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LeftOut::NotAMessage(what) => write!(f, "{what}, not a message"),
            LeftOut::Sidechain => f.write_str("a sub-agent's record (isSidechain)"),
            LeftOut::CompactBoundary => f.write_str("the agent compacted its context here (compact_boundary)"),
            LeftOut::Repeat { first } => write!(f, "a repeat of {first} (same uuid)"),
            LeftOut::Rewound { continues_at } => {
                write!(f, "on a branch the user rewound (the conversation continues at {continues_at})")
            }
        }
    }
}

/// The record types in the log, in order of appearance.
fn record_kinds(records: &[Record]) -> Vec<String> {
    let mut kinds: Vec<String> = Vec::new();
    for record in records {
        let name = match &record.kind {
            Kind::Message { assistant: true } => "assistant",
            Kind::Message { assistant: false } => "user",
            Kind::CompactBoundary => "system",
            Kind::Other(kind) => kind.as_str(),
        };
        if !kinds.iter().any(|k| k == name) {
            kinds.push(name.to_string());
        }
    }
    kinds
}

/// A record written twice (same `uuid`, e.g. by a resumed session) counts once.
fn mark_duplicates(records: &[Record], left_out: &mut [Option<LeftOut>]) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, record) in records.iter().enumerate() {
        if left_out[i].is_some() || !record.is_message() {
            continue;
        }
        if let Some(uuid) = as_str(&record.fields.uuid) {
            match seen.get(uuid) {
                Some(&first) => {
                    let first = records[first].at.label();
                    left_out[i] = Some(LeftOut::Repeat { first });
                }
                None => {
                    seen.insert(uuid, i);
                }
            }
        }
    }
}

/// Leaves out what a rewind abandoned. The conversation is the chain of parents from the last
/// message; a message off that chain is on an abandoned branch only when its branch starts with a
/// user's prompt where the chain also continues with one (the user went back and asked again).
/// Anything else off the chain (tool results of parallel calls, records whose parents are not in
/// the file) stays, in file order.
fn mark_abandoned_branches(records: &[Record], left_out: &mut [Option<LeftOut>]) {
    let by_uuid: HashMap<&str, usize> =
        records.iter().enumerate().filter_map(|(i, r)| as_str(&r.fields.uuid).map(|u| (u, i))).collect();
    let parent = |i: usize| records.get(i).and_then(Record::parent).and_then(|p| by_uuid.get(p).copied());
    let Some(leaf) = (0..records.len()).rev().find(|&i| left_out[i].is_none() && records[i].is_message()) else {
        return;
    };
    // The chain, and for each of its records the first message after it on the chain.
    let mut on_chain = vec![false; records.len()];
    let mut next_message: Vec<Option<usize>> = vec![None; records.len()];
    let mut below = None;
    let mut node = Some(leaf);
    while let Some(i) = node {
        if on_chain[i] {
            break; // a cycle
        }
        on_chain[i] = true;
        next_message[i] = below;
        if records[i].is_message() {
            below = Some(i);
        }
        node = parent(i);
    }
    // For each record off the chain, once (`Some`): where its branch meets the chain and the
    // branch's first message, or `None` if it does not meet the chain.
    type Meeting = Option<(usize, Option<usize>)>;
    let mut branch: Vec<Option<Meeting>> = vec![None; records.len()];
    // Which walk last passed a record, to see a cycle.
    let mut walked_by = vec![usize::MAX; records.len()];
    for start in 0..records.len() {
        if left_out[start].is_some() || !records[start].is_message() || on_chain[start] {
            continue;
        }
        let mut walk = Vec::new();
        let mut node = Some(start);
        let mut base = None;
        while let Some(i) = node {
            if let Some(known) = branch[i] {
                base = known;
                break;
            }
            if on_chain[i] {
                base = Some((i, None));
                break;
            }
            if walked_by[i] == start {
                break; // a cycle: not connected to the chain
            }
            walked_by[i] = start;
            walk.push(i);
            node = parent(i);
        }
        for &i in walk.iter().rev() {
            let message = records[i].is_message().then_some(i);
            base = base.map(|(meet, head)| (meet, head.or(message)));
            branch[i] = Some(base);
        }
        let Some(Some((meet, Some(head)))) = branch[start] else {
            continue;
        };
        let continues_with = next_message[meet];
        if records[head].is_prompt() && continues_with.is_some_and(|m| m != head && records[m].is_prompt()) {
            let continues_at = continues_with.map(|m| records[m].at.label()).unwrap_or_default();
            left_out[start] = Some(LeftOut::Rewound { continues_at });
        }
    }
}

/// A user message that is a slash command or its output, as Claude Code logs them.
fn is_local_command(message: &Map<String, Value>) -> bool {
    let text = match message.get("content") {
        Some(Value::String(text)) => text.as_str(),
        Some(Value::Array(blocks)) => match blocks.as_slice() {
            [only] => only.get("text").and_then(Value::as_str).unwrap_or(""),
            _ => "",
        },
        _ => "",
    };
    let text = text.trim_start();
    ["<command-name>", "<command-message>", "<local-command-stdout>", "<local-command-stderr>"]
        .iter()
        .any(|tag| text.starts_with(tag))
}

#[derive(Default)]
struct Builder {
    values: Vec<Value>,
    origins: Vec<Origin>,
    skipped: Vec<Skipped>,
    marks: Vec<Mark>,
    /// The last assistant message: its index and API message id.
    open: Option<(usize, String)>,
    merged_records: usize,
}

impl Builder {
    fn add(&mut self, record: Record) -> Result<()> {
        let Kind::Message { assistant } = record.kind else {
            return Ok(());
        };
        let at = &record.at;
        let Some(Value::Object(mut message)) = record.fields.message else {
            return Err(at.error(ErrorKind::InvalidMessage, "message", "record has no \"message\""));
        };
        let role = if assistant { "assistant" } else { "user" };
        match message.get("role") {
            None => {
                message.insert("role".into(), Value::from(role));
            }
            Some(Value::String(r)) if r == role => {}
            Some(other) => {
                return Err(at.error(
                    ErrorKind::InvalidMessage,
                    "message.role",
                    format!("a {role} record's message has role {}", crate::util::json_text::value_text(other)),
                ))
            }
        }
        // Parsed on its own, so that an error names this line.
        message::parse_anthropic_message(Value::Object(message.clone()), 0).map_err(|e| relocate(e, at, "message"))?;
        let id = message.get("id").and_then(Value::as_str).map(str::to_string);
        if assistant {
            if let (Some(id), Some((open, open_id))) = (&id, &self.open) {
                if id == open_id && self.only_tool_results_after(*open) {
                    let open = *open;
                    return self.merge(open, message, at);
                }
            }
        }
        let index = self.values.len();
        if !assistant {
            if is_true(&record.fields.is_meta) {
                self.marks.push(Mark::at(index, MarkKind::Meta, at));
            }
            if is_true(&record.fields.is_compact_summary) {
                self.marks.push(Mark::at(index, MarkKind::CompactSummary, at));
            } else if is_local_command(&message) {
                self.marks.push(Mark::at(index, MarkKind::LocalCommand, at));
            }
        }
        if assistant {
            self.open = id.map(|id| (index, id));
        }
        self.values.push(Value::Object(message));
        self.origins.push(at.origin());
        Ok(())
    }

    /// Whether everything after message `open` is a tool result (of calls it made so far).
    fn only_tool_results_after(&self, open: usize) -> bool {
        self.values.iter().skip(open + 1).all(|value| match value.get("content") {
            Some(Value::Array(blocks)) => {
                !blocks.is_empty()
                    && blocks.iter().all(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
            }
            _ => false,
        })
    }

    /// Adds a split record's blocks to the response it belongs to; its other fields (the final
    /// usage, the stop reason) replace the earlier ones.
    fn merge(&mut self, open: usize, mut message: Map<String, Value>, at: &Locator) -> Result<()> {
        let Some(Value::Object(target)) = self.values.get_mut(open) else {
            return Err(Error::internal("a merged response is not an object"));
        };
        let blocks = |content: Option<Value>| -> Vec<Value> {
            match content {
                Some(Value::Array(blocks)) => blocks,
                Some(Value::String(text)) if !text.is_empty() => {
                    vec![serde_json::json!({ "type": "text", "text": text })]
                }
                _ => Vec::new(),
            }
        };
        let mut merged = blocks(target.shift_remove("content"));
        let mut incoming = blocks(message.shift_remove("content"));
        // Some versions write every block so far again: keep only what is new.
        if incoming.len() >= merged.len() && incoming[..merged.len()] == merged[..] {
            incoming.drain(..merged.len());
        }
        for block in incoming {
            let repeated_call = block.get("type").and_then(Value::as_str) == Some("tool_use")
                && merged.iter().any(|b| b.get("type") == block.get("type") && b.get("id") == block.get("id"));
            if !repeated_call {
                merged.push(block);
            }
        }
        for (key, value) in message {
            target.insert(key, value);
        }
        target.insert("content".into(), Value::Array(merged));
        let whole = Value::Object(target.clone());
        message::parse_anthropic_message(whole, 0).map_err(|e| relocate(e, at, "message"))?;
        if let (Some(origin), Locator::Line(line)) = (self.origins.get_mut(open), at) {
            let lines = origin.lines.get_or_insert_with(|| origin.line.into_iter().collect());
            lines.push(*line);
        }
        self.merged_records += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Fields` as serde's derive read it, before it was written by hand.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Derived {
        #[serde(default, rename = "type", deserialize_with = "present")]
        kind: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        subtype: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        uuid: Option<Value>,
        #[serde(default, rename = "parentUuid", deserialize_with = "present")]
        parent_uuid: Option<Value>,
        #[serde(default, rename = "logicalParentUuid", deserialize_with = "present")]
        logical_parent_uuid: Option<Value>,
        #[serde(default, rename = "isSidechain", deserialize_with = "present")]
        is_sidechain: Option<Value>,
        #[serde(default, rename = "isMeta", deserialize_with = "present")]
        is_meta: Option<Value>,
        #[serde(default, rename = "isCompactSummary", deserialize_with = "present")]
        is_compact_summary: Option<Value>,
        #[serde(default, rename = "compactMetadata", deserialize_with = "present")]
        compact_metadata: Option<Value>,
        #[serde(default, deserialize_with = "present")]
        message: Option<Value>,
    }

    fn present<'de, D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Option<Value>, D::Error> {
        Value::deserialize(deserializer).map(Some)
    }

    fn read(line: &str) -> std::result::Result<Derived, String> {
        let f = serde_json::from_str::<Fields>(line).map_err(|e| e.to_string())?;
        Ok(Derived {
            kind: f.kind,
            subtype: f.subtype,
            uuid: f.uuid,
            parent_uuid: f.parent_uuid,
            logical_parent_uuid: f.logical_parent_uuid,
            is_sidechain: f.is_sidechain,
            is_meta: f.is_meta,
            is_compact_summary: f.is_compact_summary,
            compact_metadata: f.compact_metadata,
            message: f.message,
        })
    }

    #[test]
    fn records_read_as_the_derive_read_them() {
        let lines = [
            r#"{}"#,
            r#"{"type":"user","uuid":"u1","parentUuid":null,"isSidechain":false,"message":{"role":"user","content":"hi"}}"#,
            r#"{"type":"system","subtype":"compact_boundary","logicalParentUuid":"a","compactMetadata":{"trigger":"auto"},"isMeta":true,"isCompactSummary":true}"#,
            r#"{"toolUseResult":{"file":{"content":"x"}},"snapshot":[1,2,{"a":null}],"type":"user"}"#,
            r#"{"uuid":"a","uuid":"b"}"#,
            r#"{"\u0075uid":"a","uuid":"b"}"#,
            r#"{"extra":1,"extra":[2],"message":null}"#,
            r#"{"message":{"role":"user"},"message":1}"#,
            r#"{"type":"user","uuid":}"#,
            r#"{"type":"user""#,
            r#"{"type":"user"} x"#,
        ];
        for line in lines {
            let derived = serde_json::from_str::<Derived>(line).map_err(|e| e.to_string());
            assert_eq!(read(line), derived, "{line}");
        }
        assert_eq!(read(r#"{"uuid":"a","uuid":"b"}"#), Err("duplicate field `uuid` at line 1 column 18".into()));
    }
}
