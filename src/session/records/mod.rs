//! A session as stored records: what changed since the last save comes out as small
//! versioned records, and a session loads back from its records in one call.
//!
//! Every record is `{ key: string[], value: string }`, the value a JSON envelope
//! `{"v":3,"sum":…,"body":{…}}` whose `sum` is the XXH64 of the key, the version and the body's
//! exact text (versions 1 and 2 summed with FNV-1a 64, and version 1 also named the kind,
//! `"kind":"message"`, which the key says; their records load as they are). Keys:
//!
//! | key | body | |
//! |---|---|---|
//! | `["s", id]` | `Meta` | the commit record: counts, title, times, and which records hold the session |
//! | `["r", id, "m", n]` | `MessageBody` | message `m<n>`, written once when it is first saved |
//! | `["r", id, "c", n]` | `Chunk` | messages `n - 999 ..= n` in one record, with their token counts |
//! | `["r", id, "settings", g]` | `Settings` | encoding, format, loop limit, memory settings, metadata |
//! | `["r", id, "summary", g]` | `SummaryBody` | the summary state (current summary, compaction under way), and who counted its summary |
//! | `["r", id, "calibration", g]` | `CalibrationState` | the observations of reported usage, per model |
//! | `["r", id, "t", k]` | `Turn` | the k-th recorded memory turn: its snapshot and summary |
//! | `["r", id, "a", k]` | `Artifact` | the k-th saved artifact (written once: artifacts do not change) |
//! | `["r", id, "state", g]` | `AgentState` | the agent state (todos, tools, skill, uploads, …) |
//! | `["r", id, "frame", g]` | `FrameBody` | the context the last build sent, as its next build appends to it |
//!
//! Numbers are 12 digits, so that the lexical order of keys is the numeric one. Records are never
//! rewritten in place: a changed part gets the next generation `g`, and the meta record, written
//! last, names the generation (and the message count, chunk frontier and turn count) that holds.
//! A batch interrupted before its meta record is therefore not part of the session, whatever the
//! storage did with the records before it; records the meta record no longer names are garbage,
//! removed on the next save.
//!
//! Tail saves. A save whose only change is new messages, short of the next chunk and leaving
//! fewer than `TAIL_LIMIT` messages past the meta record's count, writes their message records
//! alone (an append: one record), each with the mark `[commit, end, tokens, updatedAt]`: the
//! save's commit, its last message's number, and what the meta record would then say. After the
//! meta record's messages, the session holds the run of whole batches (every record from the one
//! after the previous batch to `end` carrying the same mark) whose commits increase past the meta
//! record's; the commit of the last one is the session's. Writes land in order (a storage that
//! writes one key at a time leaves a prefix of the batch), so a batch cut short lacks its last
//! record and is not accepted; records of batches that were not accepted (an older commit, a
//! mark of another attempt) end the run, are never read as the session's, and are written over
//! by the next saves. The next save that is not a tail save writes the meta record again, which
//! then counts the tail's messages. After a meta record of an earlier version the first save
//! writes the meta record: a tab still running version 1 reads no tails (it would write over
//! them), and a tab of an earlier version stops at the meta record as newer than it reads.
//! Listing sessions reads the `["s"]` records, and after each
//! the records of its tail up to the first absent one (`tail_keys`: at most `TAIL_LIMIT - 1`).
//!
//! A message record's id is `m<n>`, from its key, and its format the session's (which does not
//! change) unless it arrived in another.
//!
//! The frame (a build's context, which the next build extends so that the provider's cached
//! prefix holds) is written when what storage keeps of it changed: at a compaction event, when
//! the session's state is shown again, when a message is sent in a form of its own. Between
//! those, the messages it took are stored messages whole, which the reopened frame takes again
//! from the history; so an append still writes one record. It is ids and short forms (a reduced
//! message, the summary), not the messages. A frame record that does not fit the history it is
//! read with (a rebase, another library version, a damaged body) is dropped, and the next build
//! says so in its receipt's notes: the session opens as before, its next build a compaction event.
//! The summary request the frame's event proposed travels with it until its summary comes.
//!
//! Sub-agents are sessions of their own, with their parent's id in their meta record.

mod load;
mod pull;
mod save;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::history::LoggedMessage;
use crate::memory::{ContextSnapshot, MemorySummary};
use crate::message::Format;
use crate::tokens::Encoding;
use crate::util::ids::fnv1a64;

pub use load::{settings_key, tail_keys, SessionInfo};
pub use pull::{PullPlan, PullReport, Renumbered};
pub use save::{Changes, Persisted};

/// The schema version every record this library writes carries. Version 0 is the whole-session
/// document of `Session::export` (format `context-compactor/session`, version 1) stored under one
/// key, as `localStorage.setItem(key, JSON.stringify(session.export()))` did: it loads, migrated.
/// Version 1 records (with a `kind` in the envelope, and an `id` and `format` in each message
/// record) and version 2 records (FNV-1a checksums; a summary record without the counting tag
/// of its summary's tokens, which are then counted on load) and version 3 records (message
/// records without their message's count: counted again by the first build) and version 4 records
/// (no frame record; a meta record without `frame`, which a version 4 reader would refuse as
/// damaged rather than newer) load as they are; the next save writes version 5.
pub const RECORD_VERSION: u64 = 5;

/// Messages per chunk: past each multiple, the messages are rewritten as one record (and their
/// single records removed), so that a session loads from a few large records and at most
/// `CHUNK - 1` small ones, while an append still writes one message.
pub const CHUNK: usize = 1000;

/// Messages a tail may hold past the meta record's count, plus one: a save that would make the
/// tail this long writes the meta record instead (and so every 16th append of a chat writes it:
/// what the appends between write is their message records alone).
pub const TAIL_LIMIT: u64 = 16;

/// The first segment of the keys of meta records (listing sessions reads only these).
pub const META_SPACE: &str = "s";
/// The first segment of the keys of everything else a session stores.
pub const DATA_SPACE: &str = "r";

/// A stored record: where it is, and its JSON text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StoredRecord {
    pub key: Vec<String>,
    pub value: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Meta,
    Message,
    Chunk,
    Settings,
    Summary,
    Calibration,
    Turn,
    Artifact,
    State,
    Frame,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Meta => "meta",
            Kind::Message => "message",
            Kind::Chunk => "chunk",
            Kind::Settings => "settings",
            Kind::Summary => "summary",
            Kind::Calibration => "calibration",
            Kind::Turn => "turn",
            Kind::Artifact => "artifact",
            Kind::State => "state",
            Kind::Frame => "frame",
        }
    }

    /// The key segment of a data record of this kind.
    fn segment(self) -> &'static str {
        match self {
            Kind::Meta => "meta",
            Kind::Message => "m",
            Kind::Chunk => "c",
            Kind::Settings => "settings",
            Kind::Summary => "summary",
            Kind::Calibration => "calibration",
            Kind::Turn => "t",
            Kind::Artifact => "a",
            Kind::State => "state",
            Kind::Frame => "frame",
        }
    }

    const DATA: [Kind; 9] = [
        Kind::Message,
        Kind::Chunk,
        Kind::Settings,
        Kind::Summary,
        Kind::Calibration,
        Kind::Turn,
        Kind::Artifact,
        Kind::State,
        Kind::Frame,
    ];
}

pub fn meta_key(id: &str) -> Vec<String> {
    vec![META_SPACE.to_string(), id.to_string()]
}

pub fn data_key(id: &str, kind: Kind, n: u64) -> Vec<String> {
    vec![DATA_SPACE.to_string(), id.to_string(), kind.segment().to_string(), format!("{n:012}")]
}

/// The prefix of every data record of session `id`.
pub fn data_prefix(id: &str) -> Vec<String> {
    vec![DATA_SPACE.to_string(), id.to_string()]
}

/// What a key names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Place {
    Meta { id: String },
    Data { id: String, kind: Kind, n: u64 },
}

impl Place {
    pub(crate) fn id(&self) -> &str {
        match self {
            Place::Meta { id } | Place::Data { id, .. } => id,
        }
    }
}

pub(crate) fn parse_key(key: &[String]) -> Result<Place> {
    let bad = || {
        let mut error = Error::invalid_argument(format!("{} is not the key of a stored session's record", show(key)));
        error.path = Some(key.join("/"));
        error
    };
    match key {
        [space, id] if space == META_SPACE => Ok(Place::Meta { id: id.clone() }),
        [space, id, segment, n] if space == DATA_SPACE => {
            let kind = Kind::DATA.into_iter().find(|k| k.segment() == segment).ok_or_else(bad)?;
            if n.len() != 12 || !n.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad());
            }
            Ok(Place::Data { id: id.clone(), kind, n: n.parse().map_err(|_| bad())? })
        }
        _ => Err(bad()),
    }
}

/// A key as the errors show it: `["r","main","m","000000000012"]`.
pub(crate) fn show(key: &[String]) -> String {
    crate::util::json_text::to_text(key).unwrap_or_else(|_| key.join("/"))
}

/// The checksum of a record: a hash of its key, its version and its body's exact text (and, in
/// version 1, its kind, which later versions leave to the key). XXH64 (seed 0) from version 3,
/// FNV-1a 64 before, which takes one byte a step and was ~6.5 ms of a 5,000-message load.
fn checksum(key: &[String], version: u64, kind: Kind, body: &str) -> u64 {
    let mut parts: Vec<&[u8]> = Vec::with_capacity(key.len() * 2 + 6);
    for segment in key {
        parts.push(segment.as_bytes());
        parts.push(b"\x1f");
    }
    let version_text = version.to_string();
    if version == 1 {
        parts.extend([b"\x1e".as_slice(), kind.as_str().as_bytes()]);
    }
    parts.extend([b"\x1e".as_slice(), version_text.as_bytes(), b"\x1e", body.as_bytes()]);
    if version < 3 {
        return fnv1a64(&parts);
    }
    let mut hasher = twox_hash::XxHash64::with_seed(0);
    for part in parts {
        std::hash::Hasher::write(&mut hasher, part);
    }
    std::hash::Hasher::finish(&hasher)
}

/// A record of `kind` at `key` holding `body`, sealed with its version and checksum.
pub(crate) fn seal<T: Serialize>(key: Vec<String>, kind: Kind, body: &T) -> Result<StoredRecord> {
    let unwritable = |e: &dyn std::fmt::Display| {
        Error::internal(format!("writing the {} record {}: {e}", kind.as_str(), show(&key)))
    };
    // Past ASCII escaped: a JS engine holds an ASCII string at one byte a character, but one
    // other character anywhere in it makes the whole string two bytes a character: a chunk of a
    // thousand messages then takes twice the bytes in IndexedDB's copies, and its conversion to
    // UTF-8 on its way into the wasm is twice as slow (in Chromium).
    let body =
        crate::util::json_text::ascii_escaped(crate::util::json_text::to_text(body).map_err(|e| unwritable(&e))?);
    let sum = checksum(&key, RECORD_VERSION, kind, &body);
    let value = format!(r#"{{"v":{RECORD_VERSION},"sum":"{sum:016x}","body":{body}}}"#);
    Ok(StoredRecord { key, value })
}

/// A record's envelope, read without reading its body.
#[derive(Deserialize)]
struct Envelope<'a> {
    v: Option<u64>,
    kind: Option<String>,
    sum: Option<String>,
    #[serde(borrow)]
    body: Option<&'a RawValue>,
    /// Set in a version 0 record (a whole `Session::export` document).
    format: Option<String>,
}

/// What a record holds once its envelope is checked.
pub(crate) enum Opened<'a> {
    /// A record of this version or an earlier one, its checksum verified.
    Current(Body<'a>),
    /// A version 0 record: a whole session export, to migrate.
    Export,
}

/// A record's body: its text, and the version of the record that holds it.
#[derive(Clone, Copy)]
pub(crate) struct Body<'a> {
    pub text: &'a str,
    pub version: u64,
}

/// The version, checksum and body of a record in exactly the layout `seal` writes (or, for
/// `kind`, version 1 wrote); `None` for any other text, which `open` then reads as JSON. (A chunk
/// is megabytes: reading its envelope as JSON would scan the body once more before it is
/// parsed.) Taking the body as the text between the prefix and the last `}` is sound because the
/// body must then parse as one JSON value on its own, which makes the whole text that envelope.
fn sealed(value: &str, kind: Kind) -> Option<(u64, &str, &str)> {
    let rest = value.strip_prefix(r#"{"v":"#)?;
    let (version, rest) = if let Some(rest) = rest.strip_prefix(r#"5,"sum":""#) {
        (5, rest)
    } else if let Some(rest) = rest.strip_prefix(r#"4,"sum":""#) {
        (4, rest)
    } else if let Some(rest) = rest.strip_prefix(r#"3,"sum":""#) {
        (3, rest)
    } else if let Some(rest) = rest.strip_prefix(r#"2,"sum":""#) {
        (2, rest)
    } else {
        let rest = rest.strip_prefix(r#"1,"kind":""#)?.strip_prefix(kind.as_str())?;
        (1, rest.strip_prefix(r#"","sum":""#)?)
    };
    let (sum, rest) = (rest.get(..16)?, rest.get(16..)?);
    let body = rest.strip_prefix(r#"","body":"#)?.strip_suffix('}')?;
    Some((version, sum, body))
}

/// Checks a record's envelope: that it is JSON, of a version this library reads, of the kind its
/// key says, and that its checksum matches. Errors name the key.
pub(crate) fn open<'a>(key: &[String], value: &'a str, kind: Kind) -> Result<Opened<'a>> {
    if let Some((version, sum, body)) = sealed(value, kind) {
        return verify(key, version, kind, sum, body);
    }
    let envelope: Envelope<'a> = serde_json::from_str(value)
        .map_err(|e| Error::corrupt(key, format!("record {} is not a stored record: {e}", show(key))))?;
    let version = match envelope.v {
        Some(version) => version,
        None if envelope.format.as_deref() == Some(super::EXPORT_FORMAT) => return Ok(Opened::Export),
        None => return Err(Error::corrupt(key, format!("record {} has no version (`v`)", show(key)))),
    };
    if version > RECORD_VERSION {
        let mut error = Error::invalid_argument(format!(
            "record {} is version {version}, newer than this library reads ({RECORD_VERSION}): upgrade context-compactor",
            show(key)
        ));
        error.path = Some(key.join("/"));
        return Err(error);
    }
    if version == 0 {
        return Err(Error::corrupt(key, format!("record {} has an unknown version {version}", show(key))));
    }
    let (Some(sum), Some(body)) = (envelope.sum, envelope.body) else {
        return Err(Error::corrupt(key, format!("record {} lacks its checksum or body", show(key))));
    };
    // Version 1 named the kind in the envelope; version 2 leaves it to the key.
    match envelope.kind {
        Some(found) if version == 1 && found != kind.as_str() => {
            return Err(Error::corrupt(
                key,
                format!("record {} is a {found:?} record where a {:?} record belongs", show(key), kind.as_str()),
            ))
        }
        None if version == 1 => {
            return Err(Error::corrupt(key, format!("record {} (version 1) lacks its kind", show(key))))
        }
        Some(_) if version > 1 => {
            return Err(Error::corrupt(
                key,
                format!("record {} is not a stored record: unknown field `kind`", show(key)),
            ))
        }
        _ => {}
    }
    verify(key, version, kind, &sum, body.get())
}

fn verify<'a>(key: &[String], version: u64, kind: Kind, sum: &str, text: &'a str) -> Result<Opened<'a>> {
    if sum != format!("{:016x}", checksum(key, version, kind, text)) {
        return Err(Error::corrupt(key, format!("record {} fails its checksum: it was changed or damaged", show(key))));
    }
    Ok(Opened::Current(Body { text, version }))
}

/// A record's body, read as `T` once `open` has checked it.
/// (Through a `Value` and `from_json`, as exports and options are read: one deserializer per
/// type in the wasm, not one per source, and the error names the field at fault.)
pub(crate) fn read_body<T: DeserializeOwned>(key: &[String], body: &str) -> Result<T> {
    let unreadable =
        |e: &dyn std::fmt::Display| Error::corrupt(key, format!("record {} is not readable: {e}", show(key)));
    let value: serde_json::Value = serde_json::from_str(body).map_err(|e| unreadable(&e))?;
    crate::error::from_json(value, "its body").map_err(|e| unreadable(&e.message))
}

/// A body of messages (a chunk, a message record), read as `T` straight from its text: through a
/// `Value` first, as `read_body` goes, every message's tree would be built twice (the `Value`,
/// then the `Value` inside `LoggedMessage`), and a chunk holds a thousand of them.
pub(crate) fn read_messages_body<T: DeserializeOwned>(key: &[String], body: &str) -> Result<T> {
    let unreadable =
        |e: &dyn std::fmt::Display| Error::corrupt(key, format!("record {} is not readable: {e}", show(key)));
    // A checksummed body that does not read is the format's own bug, rare enough that serde's
    // line and column (rather than a field path) say where.
    serde_json::from_str(body).map_err(|e| unreadable(&e))
}

/// The commit record of a session: what `list` shows, and which records hold the session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Meta {
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch (the caller's clock: the core has none).
    pub created_at: u64,
    pub updated_at: u64,
    /// Messages in the history, and their tokens as `tokenCount().total` gives them.
    pub messages: u64,
    pub tokens: u64,
    /// Saves so far: a writer whose last save is not this one has another writer's to read first.
    pub commit: u64,
    /// Messages held by chunk records (a multiple of `CHUNK`); the rest are single records.
    pub chunked: u64,
    /// The generation of each replaceable part; 0: not stored (an empty summary state, no usage).
    pub settings: u64,
    pub summary: u64,
    pub calibration: u64,
    /// Memory turns recorded.
    pub turns: u64,
    pub loops: u32,
    pub subagents_spawned: u32,
    pub turn_start: u64,
    /// Artifacts saved, and the agent state's generation (0: never set). Absent in records
    /// written before they existed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub artifacts: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub state: u64,
    /// The frame's generation (0: none stored; absent in records written before frames were).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub frame: u64,
}

impl Meta {
    /// The meta record as it would read with `tail`, the last tail save after it, folded in.
    pub(crate) fn with_tail(self, tail: Option<TailMark>) -> Meta {
        match tail {
            Some(TailMark(commit, end, tokens, updated_at)) => {
                Meta { commit, messages: end, tokens, updated_at, ..self }
            }
            None => self,
        }
    }

    /// The last message a tail after this meta record may reach: `TAIL_LIMIT - 1` past its count,
    /// and short of the next chunk (a save that passes either writes the meta record).
    pub(crate) fn tail_reach(&self) -> u64 {
        (self.messages + TAIL_LIMIT - 1).min(self.chunked + CHUNK as u64 - 1)
    }
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The part of a session that changes rarely: how it counts and reads, its limits, metadata.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    #[serde(deserialize_with = "crate::tokens::deserialize_named")]
    pub encoding: Encoding,
    pub format: Format,
    pub max_loops: u32,
    /// The memory's snapshot limit; `None`: the session has no memory.
    pub max_snapshot_chars: Option<usize>,
    pub metadata: Map<String, Value>,
    /// The ids of the messages pinned explicitly (absent: none, as in records written before
    /// pins existed).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pinned: Vec<String>,
}

/// One recorded memory turn.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Turn {
    pub snapshot: ContextSnapshot,
    pub summary: MemorySummary,
}

/// `CHUNK` messages in one record, with the token counts they had when it was written.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Chunk {
    pub messages: Vec<LoggedMessage>,
    /// Who counted `tokens`: `counting_tag` of the writer. Counts are reused only by the same tag.
    pub counted: String,
    /// Per message: total, framing, the parts in `PartKind::ALL` order, and 1 if estimated.
    pub tokens: Vec<Vec<u32>>,
}

/// A summary record's body from version 3: the summary state, and who counted its summary's
/// tokens (`counting_tag` of the writer). With the reader's tag they are not counted again: the
/// load then needs no encoder (whose table decode is ~15 ms of a warm open). Version 2 stored
/// the state alone, and its summary is counted on load.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SummaryBody<S> {
    pub state: S,
    pub counted: String,
}

/// A frame record's body: the frame, and who counted its messages' tokens (`counting_tag` of the
/// writer): a frame counted by another version of the library is not restored, since its counts
/// would not add up with this one's.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct FrameBody<F> {
    pub frame: F,
    pub counted: String,
}

/// What each message record of a tail save carries, as `"tail": [commit, end, tokens, updatedAt]`
/// (a few bytes): the save's commit and its last message's number, which tell a whole batch from
/// one cut short, and the session's token total (as `Meta::tokens`) and update time once the
/// batch is in, which `list` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TailMark(pub u64, pub u64, pub u64, pub u64);

impl TailMark {
    pub fn commit(self) -> u64 {
        self.0
    }
    pub fn end(self) -> u64 {
        self.1
    }
}

/// A message's token count as a record keeps it: who counted it (`counting_tag` of the writer:
/// reused only by the same tag, as a chunk's counts are) and the count (`save::pack_tokens`).
pub(crate) type StoredCount = (String, load::PackedTokens);

/// A single message record's body (from version 2): `{"format"?, "message", "tail"?, "counted"?,
/// "tokens"?}`, its format when it is not the session's, the tail mark in a record a tail save
/// wrote, and (from version 4) the message's count, so that a session whose last messages are
/// not in a chunk yet also opens without counting them. (Built and read as a `Value`, whose code
/// the wasm has anyway, rather than by a serde derive of its own.)
pub(crate) fn message_body(
    message: Value,
    format: Option<Format>,
    tail: Option<TailMark>,
    count: Option<StoredCount>,
) -> Value {
    let mut body = Map::new();
    if let Some(format) = format {
        body.insert("format".into(), format.as_str().into());
    }
    body.insert("message".into(), message);
    if let Some(TailMark(commit, end, tokens, at)) = tail {
        body.insert("tail".into(), Value::from(vec![commit, end, tokens, at]));
    }
    if let Some((counted, tokens)) = count {
        body.insert("counted".into(), counted.into());
        body.insert("tokens".into(), Value::from(tokens));
    }
    Value::Object(body)
}

/// A message record's body, read.
struct MessageBody {
    message: Value,
    format: Option<Format>,
    tail: Option<TailMark>,
    count: Option<StoredCount>,
}

/// A message record's body (from version 2), read: its message, format, tail mark and count.
fn read_message_body(key: &[String], text: &str) -> Result<MessageBody> {
    let mut body: Value = read_messages_body(key, text)?;
    let mut field = |name: &str| body.as_object_mut().and_then(|fields| fields.remove(name));
    let format = field("format").map(|name| name.as_str().and_then(|name| Format::parse(name).ok()));
    let tail = field("tail").map(|mark| match mark.as_array().map(Vec::as_slice) {
        Some([commit, end, tokens, at]) => {
            Some(TailMark(commit.as_u64()?, end.as_u64()?, tokens.as_u64()?, at.as_u64()?))
        }
        _ => None,
    });
    let count = match (field("counted"), field("tokens")) {
        (None, None) => Some(None),
        (Some(Value::String(counted)), Some(Value::Array(tokens))) => tokens
            .iter()
            .map(|n| n.as_u64().and_then(|n| u32::try_from(n).ok()))
            .collect::<Option<Vec<u32>>>()
            .map(|tokens| Some((counted, tokens))),
        _ => None,
    };
    match (field("message"), format, tail, count) {
        (Some(message), None | Some(Some(_)), None | Some(Some(_)), Some(count))
            if body.as_object().is_some_and(Map::is_empty) =>
        {
            Ok(MessageBody { message, format: format.flatten(), tail: tail.flatten(), count })
        }
        _ => Err(Error::corrupt(key, format!("record {} is not readable: not a message record", show(key)))),
    }
}

/// Message `seq` of a single message record, read from its body in any version, with its stored
/// count when `tag` (the reader's `counting_tag`) made it.
pub(crate) fn read_message(
    key: &[String],
    body: Body<'_>,
    seq: u64,
    format: Format,
    tag: &str,
) -> Result<(LoggedMessage, Option<load::PackedTokens>)> {
    if body.version == 1 {
        let message: LoggedMessage = read_messages_body(key, body.text)?;
        load::check_id(key, &message, seq)?;
        return Ok((message, None));
    }
    let read = read_message_body(key, body.text)?;
    let count = read.count.filter(|(counted, _)| counted == tag).map(|(_, tokens)| tokens);
    Ok((LoggedMessage { id: format!("m{seq}"), format: read.format.unwrap_or(format), message: read.message }, count))
}

/// The tail mark of a message record, if it has one.
pub(crate) fn read_mark(key: &[String], body: Body<'_>) -> Result<Option<TailMark>> {
    if body.version == 1 {
        return Ok(None);
    }
    Ok(read_message_body(key, body.text)?.tail)
}

/// Counts are reused only by the library version that made them, for the same encoding: a newer
/// version may count differently, and then counts again.
pub fn counting_tag(encoding: Encoding) -> String {
    format!("{}/{}", env!("CARGO_PKG_VERSION"), encoding.as_str())
}

#[cfg(test)]
pub(crate) mod tests;
