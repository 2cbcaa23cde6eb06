//! Loading: a session from its records (one call, everything checked before anything is built),
//! the migration of version 0 (a whole `Session::export` document), and the meta records that
//! list sessions.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use super::save::{unpack_tokens, Part, SavePoint};
use super::{
    counting_tag, data_key, meta_key, open, parse_key, read_body, read_mark, read_message, read_messages_body, show,
    Body, Chunk, FrameBody, Kind, Meta, Opened, Place, Settings, StoredRecord, SummaryBody, TailMark, Turn, CHUNK,
};
use crate::compact::{FrameState, SummaryState};
use crate::error::{Error, Result};
use crate::history::LoggedMessage;
use crate::memory::{MemoryExport, EXPORT_FORMAT as MEMORY_FORMAT, EXPORT_VERSION as MEMORY_VERSION};
use crate::message::Format;
use crate::session::{HistoryExport, Session, SessionExport, EXPORT_FORMAT, EXPORT_VERSION};
use crate::state::{AgentState, Artifact};
use crate::tokens::calibration::{Calibration, CalibrationState};
use crate::tokens::{Encoding, MessageTokens, REPLY_PRIMING};

/// Past what a stored count or commit can be: JS numbers are exact below 2^53.
const MAX_SAVED: u64 = 1 << 53;

/// A token count as a chunk keeps it (`save::pack_tokens`).
pub(crate) type PackedTokens = Vec<u32>;

/// A session as a list of sessions shows it, from its meta record alone.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionInfo {
    pub id: String,
    pub parent_id: Option<String>,
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub updated_at: u64,
    pub messages: u64,
    pub tokens: u64,
    /// Saves so far (each writer's save adds one).
    pub commit: u64,
    /// What it counts its tokens with (its ranks must be loaded before it is opened, in the lite
    /// build): `None` when its settings record was not given (see `settings_key`).
    #[cfg_attr(test, ts(type = "EncodingName | null"))]
    pub encoding: Option<Encoding>,
}

/// Reads and checks a meta record: it, and the version of the record.
pub(super) fn read_meta(record: &StoredRecord) -> Result<(Meta, u64)> {
    match open(&record.key, &record.value, Kind::Meta)? {
        Opened::Current(body) => {
            let meta: Meta = read_body(&record.key, body.text)?;
            // Counts go to JS as numbers, exact below 2^53, and the next save adds to them.
            if [meta.messages, meta.commit, meta.chunked, meta.tokens, meta.turn_start].iter().any(|&n| n >= MAX_SAVED)
            {
                return Err(Error::corrupt(
                    &record.key,
                    format!("record {} holds a count past 2^53", show(&record.key)),
                ));
            }
            if record.key != meta_key(&meta.id) {
                return Err(Error::corrupt(
                    &record.key,
                    format!("record {} holds the meta record of {:?}", show(&record.key), meta.id),
                ));
            }
            Ok((meta, body.version))
        }
        Opened::Export => Err(Error::invalid_argument(format!(
            "record {} is a whole session export (version 0): load it with Session.load",
            show(&record.key)
        ))),
    }
}

/// The keys of the message records a tail after `meta` (a meta record) may hold, in order: what
/// to read, up to the first absent, for `SessionInfo::read`.
pub fn tail_keys(meta: &StoredRecord) -> Result<Vec<Vec<String>>> {
    let (meta, _) = read_meta(meta)?;
    let mut keys = Vec::new();
    for n in meta.messages + 1..=meta.tail_reach() {
        keys.push(data_key(&meta.id, Kind::Message, n));
    }
    Ok(keys)
}

/// The key of the settings record `meta` (a meta record) names, if it names one: what to read
/// for `SessionInfo::read` to give the session's encoding.
pub fn settings_key(meta: &StoredRecord) -> Result<Option<Vec<String>>> {
    let (meta, _) = read_meta(meta)?;
    Ok((meta.settings > 0).then(|| data_key(&meta.id, Kind::Settings, meta.settings)))
}

impl SessionInfo {
    /// What a list of sessions shows of a stored session: from its meta record, the records of
    /// its tail (`tail_keys`) and, when given, its settings record (`settings_key`), checked.
    pub fn read(records: &[StoredRecord]) -> Result<SessionInfo> {
        let (id, sorted) = Sorted::new(records)?;
        let (meta, _) = read_meta(sorted.meta.ok_or_else(|| Error::invalid_argument("no meta record was given"))?)?;
        let tail = sorted.tail(&meta, None)?;
        let encoding = match sorted.get(Kind::Settings, meta.settings) {
            Some(_) if meta.settings > 0 => Some(sorted.body::<Settings>(&id, Kind::Settings, meta.settings)?.encoding),
            _ => None,
        };
        let meta = meta.with_tail(tail);
        Ok(SessionInfo {
            id: meta.id,
            parent_id: meta.parent_id,
            title: meta.title,
            created_at: meta.created_at,
            updated_at: meta.updated_at,
            messages: meta.messages,
            tokens: meta.tokens,
            commit: meta.commit,
            encoding,
        })
    }
}

/// A session's records sorted by what they are (the meta record apart).
#[derive(Default)]
pub(super) struct Sorted<'a> {
    pub meta: Option<&'a StoredRecord>,
    pub data: BTreeMap<(u8, u64), &'a StoredRecord>,
}

fn slot(kind: Kind) -> u8 {
    kind as u8
}

impl<'a> Sorted<'a> {
    /// Sorts `records` by key; all must belong to one session.
    pub fn new(records: &'a [StoredRecord]) -> Result<(String, Sorted<'a>)> {
        let mut sorted = Sorted::default();
        let mut session: Option<String> = None;
        for record in records {
            let place = parse_key(&record.key)?;
            match &session {
                Some(id) if id != place.id() => {
                    return Err(Error::invalid_argument(format!(
                        "records of two sessions ({id:?} and {:?}) were given: load one session at a time",
                        place.id()
                    )))
                }
                Some(_) => {}
                None => session = Some(place.id().to_string()),
            }
            let duplicate = match place {
                Place::Meta { .. } => sorted.meta.replace(record).is_some(),
                Place::Data { kind, n, .. } => sorted.data.insert((slot(kind), n), record).is_some(),
            };
            if duplicate {
                return Err(Error::invalid_argument(format!("record {} was given twice", show(&record.key))));
            }
        }
        let id = session.ok_or_else(|| Error::invalid_argument("no records were given"))?;
        Ok((id, sorted))
    }

    pub fn get(&self, kind: Kind, n: u64) -> Option<&'a StoredRecord> {
        self.data.get(&(slot(kind), n)).copied()
    }

    /// The committed record of `kind` number `n`: present and sound, or an error naming its key.
    pub fn body<T: serde::de::DeserializeOwned>(&self, id: &str, kind: Kind, n: u64) -> Result<T> {
        let (key, body) = self.checked(id, kind, n)?;
        read_body(key, body.text)
    }

    /// The summary state of generation `n` (0: the empty state), with the counting tag of its
    /// summary's tokens when the record has one (version 3 on).
    pub fn summary(&self, id: &str, n: u64) -> Result<(SummaryState, Option<String>)> {
        if n == 0 {
            return Ok((SummaryState::default(), None));
        }
        let (key, body) = self.checked(id, Kind::Summary, n)?;
        if body.version < 3 {
            return Ok((read_body(key, body.text)?, None));
        }
        let stored: SummaryBody<SummaryState> = read_body(key, body.text)?;
        Ok((stored.state, Some(stored.counted)))
    }

    /// The frame of generation `n`, when it can be restored by this library for a history counted
    /// with `tag`: `Err` with why not when its body does not read or another version counted it.
    /// A record that is missing or fails its checksum is an error, as for every kind.
    pub fn frame(&self, id: &str, n: u64, tag: &str) -> Result<std::result::Result<FrameState, String>> {
        let (key, body) = self.checked(id, Kind::Frame, n)?;
        Ok(match read_body::<FrameBody<FrameState>>(key, body.text) {
            Ok(stored) if stored.counted == tag => Ok(stored.frame),
            Ok(stored) => Err(format!("its tokens were counted by {}, not by this library ({tag})", stored.counted)),
            Err(error) => Err(error.into_details().message),
        })
    }

    /// The committed record of `kind` number `n`, its envelope and checksum checked: its key and body.
    fn checked(&self, id: &str, kind: Kind, n: u64) -> Result<(&'a [String], Body<'a>)> {
        let record = self.get(kind, n).ok_or_else(|| {
            let key = data_key(id, kind, n);
            Error::corrupt(&key, format!("record {} is missing: the meta record names it", show(&key)))
        })?;
        match open(&record.key, &record.value, kind)? {
            Opened::Current(body) => Ok((&record.key, body)),
            Opened::Export => {
                Err(Error::corrupt(&record.key, format!("record {} holds a whole session export", show(&record.key))))
            }
        }
    }

    /// The tail committed after `meta`, the meta record: past `from`, the tail already accepted
    /// (`None`: from the meta record's count on), the run of whole batches whose commits
    /// increase past the meta record's (or `from`'s). A batch is whole when each of its records,
    /// from the one after the last accepted to the end its mark names, carries the same mark:
    /// one cut short, or records of another batch, end the run. The mark of the last batch
    /// accepted; `from` when there is none.
    pub fn tail(&self, meta: &Meta, from: Option<TailMark>) -> Result<Option<TailMark>> {
        let reach = meta.tail_reach();
        let (mut at, mut commit) = from.map_or((meta.messages, meta.commit), |t| (t.end(), t.commit()));
        let mut accepted = from;
        while let Some(mark) = self.mark(&meta.id, at + 1)? {
            if mark.commit() <= commit || mark.commit() >= MAX_SAVED || mark.end() <= at || mark.end() > reach {
                break;
            }
            for seq in at + 2..=mark.end() {
                if self.mark(&meta.id, seq)? != Some(mark) {
                    return Ok(accepted);
                }
            }
            accepted = Some(mark);
            (at, commit) = (mark.end(), mark.commit());
        }
        Ok(accepted)
    }

    /// The tail mark of message record `seq`, when it is stored and has one.
    fn mark(&self, id: &str, seq: u64) -> Result<Option<TailMark>> {
        if self.get(Kind::Message, seq).is_none() {
            return Ok(None);
        }
        let (key, body) = self.checked(id, Kind::Message, seq)?;
        read_mark(key, body)
    }

    /// A chunk record, checked and read.
    fn chunk(&self, id: &str, n: u64) -> Result<Chunk> {
        let (key, body) = self.checked(id, Kind::Chunk, n)?;
        read_messages_body(key, body.text)
    }

    /// Messages `from ..= until` (1-based), from chunks up to `chunked` and single records after,
    /// with the counts the chunks and records kept when `tag` matches theirs; `format` is the session's.
    pub fn messages(
        &self,
        id: &str,
        (from, until): (u64, u64),
        chunked: u64,
        tag: &str,
        format: Format,
    ) -> Result<(Vec<LoggedMessage>, Vec<Option<PackedTokens>>)> {
        // The meta record's count is the file's word (an imported one): room for what the
        // records given can hold, at most, else a count of 2^31 would abort the wasm.
        let room = until.saturating_sub(from).saturating_add(1).min(self.data.len() as u64 * CHUNK as u64);
        let mut messages = Vec::with_capacity(room as usize);
        let mut counts = Vec::with_capacity(messages.capacity());
        let mut seq = from;
        while seq <= until {
            if seq <= chunked {
                let end = seq.div_ceil(CHUNK as u64) * CHUNK as u64;
                let chunk = self.chunk(id, end)?;
                let key = data_key(id, Kind::Chunk, end);
                if chunk.messages.len() != CHUNK || (!chunk.tokens.is_empty() && chunk.tokens.len() != CHUNK) {
                    return Err(Error::corrupt(
                        &key,
                        format!("record {} holds {} messages, not {CHUNK}", show(&key), chunk.messages.len()),
                    ));
                }
                let reuse = chunk.counted == tag && !chunk.tokens.is_empty();
                let skip = (seq - (end - CHUNK as u64) - 1) as usize;
                let mut tokens = chunk.tokens.into_iter();
                for (i, message) in chunk.messages.into_iter().enumerate() {
                    let count = if reuse { tokens.next() } else { None };
                    if i >= skip && seq <= until {
                        check_id(&key, &message, seq)?;
                        messages.push(message);
                        counts.push(count);
                        seq += 1;
                    }
                }
            } else {
                let (key, body) = self.checked(id, Kind::Message, seq)?;
                let (message, count) = read_message(key, body, seq, format, tag)?;
                messages.push(message);
                counts.push(count);
                seq += 1;
            }
        }
        Ok((messages, counts))
    }
}

pub(super) fn check_id(key: &[String], message: &LoggedMessage, seq: u64) -> Result<()> {
    // `m{seq}`, read rather than written out for each of thousands of messages.
    if crate::history::message_number(&message.id) != Some(seq) {
        return Err(Error::corrupt(
            key,
            format!("record {} holds message {:?} where m{seq} belongs", show(key), message.id),
        ));
    }
    Ok(())
}

impl Session {
    /// A session from its stored records (`changes` wrote them), checked whole before anything
    /// is built, as `import` checks an export: a record that fails its checksum, is missing, is
    /// of a newer version (an `InvalidArgument` error) or does not fit the rest is an error naming
    /// its key, and nothing is loaded. Records the meta record does not name (left by a save that
    /// did not finish, or superseded) are not read; the next save removes the superseded ones.
    /// A single record holding a whole `export()` document (version 0) is migrated.
    pub fn load(records: &[StoredRecord]) -> Result<Session> {
        if let [record] = records {
            if let Ok(Opened::Export) = open(&record.key, &record.value, Kind::Meta) {
                return migrate_export(record);
            }
        }
        let (id, sorted) = Sorted::new(records)?;
        let meta_record = sorted.meta.ok_or_else(|| {
            let key = meta_key(&id);
            Error::corrupt(
                &key,
                format!("record {} is missing: a session without it was never saved whole", show(&key)),
            )
        })?;
        let (meta, version) = read_meta(meta_record)?;
        let settings: Settings = sorted.body(&id, Kind::Settings, meta.settings)?;
        settings.encoding.ready().map_err(|_| {
            let name = settings.encoding.as_str();
            Error::invalid_argument(format!(
                "session {id:?} counts its tokens with {name}, whose ranks are not loaded: pass them to \
                 loadRanks(\"{name}\", …) before opening it (SessionStore.list() gives each session's encoding)"
            ))
        })?;
        let (summary, summary_counted) = sorted.summary(&id, meta.summary)?;
        let calibration: Option<CalibrationState> =
            if meta.calibration == 0 { None } else { sorted.body(&id, Kind::Calibration, meta.calibration)? };
        let turns = (1..=meta.turns).map(|k| sorted.body::<Turn>(&id, Kind::Turn, k)).collect::<Result<Vec<_>>>()?;
        let artifacts = (1..=meta.artifacts)
            .map(|k| sorted.body::<Artifact>(&id, Kind::Artifact, k))
            .collect::<Result<Vec<_>>>()?;
        let state: AgentState =
            if meta.state == 0 { AgentState::default() } else { sorted.body(&id, Kind::State, meta.state)? };
        if meta.chunked % CHUNK as u64 != 0 || meta.chunked > meta.messages {
            return Err(Error::corrupt(
                &meta_record.key,
                format!(
                    "record {} says {} messages are chunked, of {}",
                    show(&meta_record.key),
                    meta.chunked,
                    meta.messages
                ),
            ));
        }
        let tag = counting_tag(settings.encoding);
        let frame = if meta.frame == 0 { None } else { Some(sorted.frame(&id, meta.frame, &tag)?) };
        let summary_counted = summary_counted.as_deref() == Some(tag.as_str());
        let tail = sorted.tail(&meta, None)?;
        let until = tail.map_or(meta.messages, TailMark::end);
        let (messages, counts) = sorted.messages(&id, (1, until), meta.chunked, &tag, settings.format)?;

        let memory = settings.max_snapshot_chars.map(|_| MemoryExport {
            format: MEMORY_FORMAT.to_string(),
            version: MEMORY_VERSION,
            contexts: turns.iter().map(|t| t.snapshot.clone()).collect(),
            summaries: turns.iter().map(|t| t.summary.clone()).collect(),
        });
        if memory.is_none() && !turns.is_empty() {
            return Err(Error::corrupt(
                &meta_record.key,
                format!("record {} names memory turns, but the session has no memory", show(&meta_record.key)),
            ));
        }
        let export = SessionExport {
            format: EXPORT_FORMAT.to_string(),
            version: EXPORT_VERSION,
            id: meta.id.clone(),
            parent_id: meta.parent_id.clone(),
            message_format: settings.format,
            loops: meta.loops,
            max_loops: settings.max_loops,
            subagents_spawned: meta.subagents_spawned,
            turn_start: meta.turn_start,
            metadata: settings.metadata.clone(),
            history: HistoryExport {
                encoding: settings.encoding,
                messages,
                summary: summary.clone(),
                pinned: settings.pinned.clone(),
                // Restored below: one that does not fit leaves a note, and fails nothing.
                frame: None,
            },
            memory,
            max_snapshot_chars: settings.max_snapshot_chars,
            artifacts,
            state: state.clone(),
        };
        let known: Vec<Option<MessageTokens>> =
            counts.iter().map(|count| count.as_deref().and_then(unpack_tokens)).collect();
        let all_counted = known.iter().all(Option::is_some);
        let mut session = Session::from_counted_export(export, known, summary_counted).map_err(|mut error| {
            error.message = format!("stored session {id:?} does not hold together: {}", error.message);
            error
        })?;
        let calibrated = match &calibration {
            Some(state) => Some(Calibration::from_state(state.clone()).map_err(|e| {
                let key = data_key(&id, Kind::Calibration, meta.calibration);
                Error::corrupt(&key, format!("record {}: {}", show(&key), e.message))
            })?),
            None => None,
        };
        if let Some(calibration) = calibrated {
            session.compactor.set_calibration(calibration);
        }
        match frame {
            Some(Ok(frame)) => session.restore_frame(frame, "the stored frame"),
            Some(Err(why)) => session.drop_frame("the stored frame", &why),
            None => {}
        }
        session.persist.title = meta.title.clone();
        session.persist.created_at = Some(meta.created_at);
        session.persist.garbage = garbage(&sorted, &meta);
        let tokens = meta.clone().with_tail(tail).tokens;
        session.persist.saved = SavePoint {
            message_tokens: all_counted.then(|| tokens.saturating_sub(REPLY_PRIMING as u64)),
            meta: Some(meta.clone()),
            meta_version: version,
            tail,
            settings: Some(settings),
            summary: Part { generation: meta.summary, value: summary },
            calibration: Part { generation: meta.calibration, value: calibration },
            state: Part { generation: meta.state, value: state },
            frame: Part { generation: meta.frame, value: session.frame_mark() },
        };
        Ok(session)
    }
}

/// Records behind the committed frontier, which no save will write again: single message records
/// a chunk holds, and earlier generations of the parts. (Records past the frontier, left by a save
/// that did not finish, are written over by the next save of the same keys.)
pub(super) fn garbage(sorted: &Sorted<'_>, meta: &Meta) -> Vec<Vec<String>> {
    let mut keys = Vec::new();
    for (&(kind_slot, n), record) in &sorted.data {
        let behind = match kind_slot {
            k if k == slot(Kind::Message) => n <= meta.chunked,
            k if k == slot(Kind::Settings) => n < meta.settings,
            k if k == slot(Kind::Summary) => n < meta.summary,
            k if k == slot(Kind::Calibration) => n < meta.calibration,
            k if k == slot(Kind::State) => n < meta.state,
            k if k == slot(Kind::Frame) => n < meta.frame,
            _ => false,
        };
        if behind {
            keys.push(record.key.clone());
        }
    }
    keys
}

/// Version 0: a whole `export()` document under one key. It is imported with every check
/// `Session::import` makes, and saved as records by the next save.
fn migrate_export(record: &StoredRecord) -> Result<Session> {
    let value: Value = serde_json::from_str(&record.value)
        .map_err(|e| Error::corrupt(&record.key, format!("record {} is not JSON: {e}", show(&record.key))))?;
    Session::import(value).map_err(|mut error| {
        error.message = format!("record {} (a session export): {}", show(&record.key), error.message);
        error.path.get_or_insert_with(|| record.key.join("/"));
        error
    })
}
