//! Saving: the records for what changed since the last save, and the save point they reach.

use serde::Serialize;

use super::{
    counting_tag, data_key, message_body, meta_key, seal, Chunk, FrameBody, Kind, Meta, Settings, StoredRecord,
    SummaryBody, TailMark, Turn, CHUNK, RECORD_VERSION, TAIL_LIMIT,
};
use crate::compact::SummaryState;
use crate::error::{Error, Result};
use crate::history::LoggedMessage;
use crate::message::PartKind;
use crate::session::Session;
use crate::state::AgentState;
use crate::tokens::calibration::CalibrationState;
use crate::tokens::{MessageTokens, REPLY_PRIMING};

/// What a session knows of its stored form.
#[derive(Clone, Debug, Default)]
pub struct Persisted {
    pub title: Option<String>,
    /// Milliseconds since the Unix epoch; set by the first save when not given.
    pub created_at: Option<u64>,
    /// What storage holds as of the last save (or load).
    pub(super) saved: SavePoint,
    /// What the last `changes` would reach, until `mark_saved` confirms it was written.
    pub(super) pending: Option<SavePoint>,
    /// Keys of records nothing names any more (found on load, or superseded by a save).
    pub(super) garbage: Vec<Vec<String>>,
    /// Why a stored frame was not restored (it did not fit the history), for the next build's
    /// receipt: that build starts afresh, and the provider's cached prefix is lost.
    pub(crate) frame_note: Option<String>,
}

/// A replaceable part as stored: its generation and what that generation holds.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Part<T> {
    pub generation: u64,
    pub value: T,
}

impl<T: Default> Default for Part<T> {
    fn default() -> Self {
        Part { generation: 0, value: T::default() }
    }
}

/// A state of the stored session: the meta record last committed, what it names, and the tail
/// committed after it.
#[derive(Clone, Debug, Default)]
pub(super) struct SavePoint {
    /// The committed meta record (`None`: nothing stored yet), and its record's version.
    pub meta: Option<Meta>,
    pub meta_version: u64,
    /// The mark of the last tail save committed after it (`None`: the meta record is the last).
    pub tail: Option<TailMark>,
    pub settings: Option<Settings>,
    pub summary: Part<SummaryState>,
    pub calibration: Part<Option<CalibrationState>>,
    pub state: Part<AgentState>,
    /// The frame's generation, and the revision of the frame it holds (`frame_mark`).
    pub frame: Part<Option<u64>>,
    /// The sum of the stored messages' token totals, when known (a load that could not reuse the
    /// counts leaves it to the next save, which counts them).
    pub message_tokens: Option<u64>,
}

impl SavePoint {
    /// The meta record as it would read with the tail in it: what the session stored is.
    pub fn effective(&self) -> Option<Meta> {
        Some(self.meta.clone()?.with_tail(self.tail))
    }

    pub fn commit(&self) -> u64 {
        self.tail.map_or_else(|| self.meta.as_ref().map_or(0, |m| m.commit), TailMark::commit)
    }

    pub fn messages(&self) -> usize {
        self.tail.map_or_else(|| self.meta.as_ref().map_or(0, |m| m.messages), TailMark::end) as usize
    }

    /// The commit of the meta record itself.
    pub fn meta_commit(&self) -> u64 {
        self.meta.as_ref().map_or(0, |m| m.commit)
    }

    pub fn chunked(&self) -> usize {
        self.meta.as_ref().map_or(0, |m| m.chunked as usize)
    }

    pub fn turns(&self) -> usize {
        self.meta.as_ref().map_or(0, |m| m.turns as usize)
    }

    pub fn artifacts(&self) -> usize {
        self.meta.as_ref().map_or(0, |m| m.artifacts as usize)
    }

    pub fn settings_generation(&self) -> u64 {
        self.meta.as_ref().map_or(0, |m| m.settings)
    }
}

/// What `Session::changes` hands the store: the records to write, in order (the meta record
/// last, or, in a tail save, message records alone), the keys to remove once they are written,
/// and the commit they make.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "SessionChanges"))]
pub struct Changes {
    pub records: Vec<super::StoredRecord>,
    pub remove: Vec<Vec<String>>,
    /// The commit these records make (the saved one when there are none).
    pub commit: u64,
}

/// A token count as a chunk stores it.
pub(super) fn pack_tokens(tokens: MessageTokens) -> Vec<u32> {
    let mut packed = Vec::with_capacity(PartKind::ALL.len() + 3);
    packed.push(tokens.total);
    packed.push(tokens.overhead);
    packed.extend(tokens.by_part);
    packed.push(u32::from(tokens.estimated));
    packed
}

pub(super) fn unpack_tokens(packed: &[u32]) -> Option<MessageTokens> {
    const PARTS: usize = PartKind::ALL.len();
    if packed.len() != PARTS + 3 {
        return None;
    }
    let mut by_part = [0; PARTS];
    by_part.copy_from_slice(&packed[2..2 + PARTS]);
    let estimated = match packed[PARTS + 2] {
        0 => false,
        1 => true,
        _ => return None,
    };
    Some(MessageTokens { total: packed[0], overhead: packed[1], by_part, estimated })
}

impl Session {
    pub fn title(&self) -> Option<&str> {
        self.persist.title.as_deref()
    }

    /// Titles are one line of at most 1,000 characters (what a list of sessions shows).
    pub fn set_title(&mut self, title: Option<String>) -> Result<()> {
        if let Some(title) = &title {
            if title.chars().count() > 1000 || title.contains(['\n', '\r']) {
                return Err(Error::invalid_argument("a title is one line of at most 1,000 characters"));
            }
        }
        self.persist.title = title;
        Ok(())
    }

    pub fn created_at(&self) -> Option<u64> {
        self.persist.created_at
    }

    pub fn set_created_at(&mut self, at: u64) {
        self.persist.created_at = Some(at);
    }

    /// The commit of the last save (or load); 0 before the first.
    pub fn saved_commit(&self) -> u64 {
        self.persist.saved.commit()
    }

    /// The frame's revision (`Compactor::frame_revision`: unique within this session's compactor),
    /// `None` before a build made one: a save writes the frame when this changed.
    pub(crate) fn frame_mark(&self) -> Option<u64> {
        let (revision, shape) = self.compactor.frame_revision();
        (!shape.is_empty()).then_some(revision)
    }

    /// Puts a stored frame in force if it fits this history; one that does not is dropped (the
    /// next build is then a compaction event), and the next build's receipt says why.
    pub(crate) fn restore_frame(&mut self, frame: crate::compact::FrameState, whose: &str) {
        if let Err(error) = self.compactor.set_frame_state(frame, &self.history) {
            self.drop_frame(whose, &error.message);
        }
    }

    /// Notes for the next build's receipt that `whose` frame was not restored, and why.
    pub(crate) fn drop_frame(&mut self, whose: &str, why: &str) {
        self.persist.frame_note = Some(format!(
            "{whose} (the context the last build sent) was not restored: {why}; this build starts afresh, \
             so the provider's cache of the earlier context is not reused"
        ));
    }

    /// The settings part as stored.
    pub(super) fn settings(&self) -> Settings {
        Settings {
            encoding: self.history.encoding(),
            format: self.format,
            max_loops: self.max_loops,
            max_snapshot_chars: self.memory.as_ref().map(|m| m.max_snapshot_chars()),
            metadata: self.metadata.clone(),
            pinned: self.history.pinned(),
        }
    }

    /// The records for what changed since the last save, at `now` (milliseconds since the Unix
    /// epoch): new messages (single records, or a chunk once a multiple of `CHUNK` is passed),
    /// the parts that changed under their next generation, new memory turns, and the meta record
    /// last; or, when only messages were added (see the module's tail saves), their records with
    /// the tail mark alone. Nothing is marked saved: `mark_saved(commit)` does that once the store
    /// has written them, so that after a failed write the next call returns the same records again.
    pub fn changes(&mut self, now: u64) -> Result<Changes> {
        self.history.count_all();
        let saved = &self.persist.saved;
        let id = self.id.as_str();
        let len = self.history.len();
        if len < saved.messages() {
            return Err(Error::internal(format!(
                "{id} holds {len} messages, fewer than the {} it saved",
                saved.messages()
            )));
        }
        let mut records = Vec::new();
        let mut remove = self.persist.garbage.clone();
        let mut next = saved.clone();

        // Messages: chunks for every multiple of CHUNK passed, single records for the rest
        // (written below, once it is known whether this save is a tail save).
        let chunked = len / CHUNK * CHUNK;
        let mut start = saved.chunked();
        while start + CHUNK <= chunked {
            records.push(self.chunk_record(start, start + CHUNK)?);
            start += CHUNK;
        }
        for seq in saved.chunked() + 1..=saved.messages().min(chunked) {
            remove.push(data_key(id, Kind::Message, seq as u64));
        }
        let new_tokens: u64 = self.history.records()[saved.messages()..]
            .iter()
            .map(|r| r.tokens().map_or(0, |t| u64::from(t.total)))
            .sum();
        next.message_tokens = match saved.message_tokens {
            Some(before) => Some(before + new_tokens),
            None => Some(self.history.records().iter().map(|r| r.tokens().map_or(0, |t| u64::from(t.total))).sum()),
        };

        // The replaceable parts: a new generation when the value changed.
        let mut generations = [saved.settings_generation(), saved.summary.generation, saved.calibration.generation];
        let settings = self.settings();
        if saved.settings.as_ref() != Some(&settings) {
            generations[0] += 1;
            records.push(seal(data_key(id, Kind::Settings, generations[0]), Kind::Settings, &settings)?);
            if generations[0] > 1 {
                remove.push(data_key(id, Kind::Settings, generations[0] - 1));
            }
            next.settings = Some(settings);
        }
        let summary = self.compactor.summary_state();
        if *summary != saved.summary.value {
            let generation = saved.summary.generation + 1;
            let body = SummaryBody { state: summary, counted: counting_tag(self.history.encoding()) };
            records.push(seal(data_key(id, Kind::Summary, generation), Kind::Summary, &body)?);
            if saved.summary.generation > 0 {
                remove.push(data_key(id, Kind::Summary, saved.summary.generation));
            }
            next.summary = super::save::Part { generation, value: summary.clone() };
            generations[1] = generation;
        }
        let calibration = self.compactor.calibration_state();
        let calibration = (!calibration.is_empty()).then(|| calibration.state());
        if calibration != saved.calibration.value {
            let generation = saved.calibration.generation + 1;
            records.push(seal(data_key(id, Kind::Calibration, generation), Kind::Calibration, &calibration)?);
            if saved.calibration.generation > 0 {
                remove.push(data_key(id, Kind::Calibration, saved.calibration.generation));
            }
            next.calibration = Part { generation, value: calibration };
            generations[2] = generation;
        }

        // Memory turns: recorded once each, in order.
        let mut turns = saved.turns();
        if let Some(memory) = &self.memory {
            for snapshot in memory.contexts().skip(saved.turns()) {
                let summary = memory
                    .summary(snapshot.turn_number)
                    .ok_or_else(|| Error::internal(format!("turn {} has no summary", snapshot.turn_number)))?;
                turns += 1;
                let turn = Turn { snapshot: snapshot.clone(), summary: summary.clone() };
                records.push(seal(data_key(id, Kind::Turn, turns as u64), Kind::Turn, &turn)?);
            }
        }

        // Artifacts: written once each, in order; the agent state under its next generation.
        for (k, artifact) in self.artifacts.list().iter().enumerate().skip(saved.artifacts()) {
            records.push(seal(data_key(id, Kind::Artifact, k as u64 + 1), Kind::Artifact, artifact)?);
        }
        if self.agent != saved.state.value {
            let generation = saved.state.generation + 1;
            records.push(seal(data_key(id, Kind::State, generation), Kind::State, &self.agent)?);
            if saved.state.generation > 0 {
                remove.push(data_key(id, Kind::State, saved.state.generation));
            }
            next.state = Part { generation, value: self.agent.clone() };
        }

        // The frame: when its revision changed (what it took between revisions is the history's).
        // A frame gone (a truncated history, before the next build) leaves the stored one, which
        // still stands for what was last sent.
        let frame = self.frame_mark();
        if frame.is_some() && frame != saved.frame.value {
            if let Some(state) = self.compactor.frame_state(&self.history) {
                let generation = saved.frame.generation + 1;
                let body = FrameBody { frame: state, counted: counting_tag(self.history.encoding()) };
                records.push(seal(data_key(id, Kind::Frame, generation), Kind::Frame, &body)?);
                if saved.frame.generation > 0 {
                    remove.push(data_key(id, Kind::Frame, saved.frame.generation));
                }
                next.frame = Part { generation, value: frame };
            }
        }

        let created_at = self.persist.created_at.unwrap_or(now);
        let stored = saved.effective();
        let meta = Meta {
            id: self.id.clone(),
            parent_id: self.parent_id.clone(),
            title: self.persist.title.clone(),
            created_at,
            updated_at: stored.as_ref().map_or(now, |m| m.updated_at),
            messages: len as u64,
            tokens: next.message_tokens.unwrap_or(0) + REPLY_PRIMING as u64,
            commit: saved.commit(),
            chunked: chunked as u64,
            settings: generations[0],
            summary: generations[1],
            calibration: generations[2],
            turns: turns as u64,
            loops: self.loops,
            subagents_spawned: self.subagents_spawned,
            turn_start: self.turn_start() as u64,
            artifacts: self.artifacts.len() as u64,
            state: next.state.generation,
            frame: next.frame.generation,
        };
        // The single records: messages past the last chunk.
        let new_messages = saved.messages().max(chunked)..len;
        if records.is_empty() && new_messages.is_empty() && stored.as_ref() == Some(&meta) {
            self.persist.pending = None;
            return Ok(Changes { records, remove, commit: saved.commit() });
        }
        let meta = Meta { updated_at: now.max(meta.updated_at), commit: saved.commit() + 1, ..meta };
        let commit = meta.commit;

        // A tail save: only new messages, short of the next chunk and of the tail's limit. Its
        // records carry the mark that commits them; the meta record stays as it is.
        let mark = TailMark(commit, len as u64, meta.tokens, meta.updated_at);
        let only_messages =
            records.is_empty() && stored.map(|stored| stored.with_tail(Some(mark))).as_ref() == Some(&meta);
        let meta_messages = saved.meta.as_ref().map_or(0, |m| m.messages);
        // (Not after a meta record of an earlier version: a tab still running that version reads
        // no tails, and would write over this one; the meta record of this version stops it.)
        let tail = (only_messages && saved.meta_version == RECORD_VERSION && (len as u64) < meta_messages + TAIL_LIMIT)
            .then_some(mark);
        let mut written = Vec::with_capacity(records.len() + new_messages.len() + 1);
        for position in new_messages {
            written.push(self.message_record(position, tail)?);
        }
        written.append(&mut records);
        next.tail = tail;
        if tail.is_none() {
            written.push(seal(meta_key(id), Kind::Meta, &meta)?);
            next.meta = Some(meta);
            next.meta_version = RECORD_VERSION;
        }
        let records = written;
        self.persist.created_at = Some(created_at);
        self.persist.pending = Some(next);
        Ok(Changes { records, remove, commit })
    }

    /// Confirms that the records of the `changes` call that made `commit` are stored (and its
    /// removals done or abandoned: garbage is harmless and found again on the next load).
    pub fn mark_saved(&mut self, commit: u64) -> Result<()> {
        if commit == self.persist.saved.commit() && self.persist.pending.is_none() {
            self.persist.garbage.clear();
            return Ok(());
        }
        match self.persist.pending.take() {
            Some(pending) if pending.commit() == commit => {
                self.persist.saved = pending;
                self.persist.garbage.clear();
                Ok(())
            }
            other => {
                let expected = other.as_ref().map(SavePoint::commit);
                self.persist.pending = other;
                Err(Error::conflict(format!(
                    "commit {commit} is not the one the last changes() made ({}): call changes() again",
                    expected.map_or("none".to_string(), |c| c.to_string())
                )))
            }
        }
    }

    fn logged_message(&self, position: usize) -> Result<LoggedMessage> {
        let record = self
            .history
            .records()
            .get(position)
            .ok_or_else(|| Error::internal(format!("no message at position {position}")))?;
        let message = self
            .history
            .get_value(&record.id)
            .ok_or_else(|| Error::internal(format!("message {} cannot be written out", record.id)))?;
        Ok(LoggedMessage { id: record.id.clone(), format: record.message.source, message })
    }

    /// Message `position` as a single record: its id follows from the key, its format from the
    /// session's unless it arrived in another.
    fn message_record(&self, position: usize, tail: Option<TailMark>) -> Result<StoredRecord> {
        let key = data_key(&self.id, Kind::Message, position as u64 + 1);
        let logged = self.logged_message(position)?;
        let format = (logged.format != self.format).then_some(logged.format);
        // `changes` counted every message first; a count that failed leaves the message to count on load.
        let count = self
            .history
            .records()
            .get(position)
            .and_then(|record| record.tokens())
            .map(|tokens| (counting_tag(self.history.encoding()), pack_tokens(tokens)));
        seal(key, Kind::Message, &message_body(logged.message, format, tail, count))
    }

    /// Messages `start + 1 ..= end` (1-based) as one chunk record, with their counts.
    fn chunk_record(&self, start: usize, end: usize) -> Result<StoredRecord> {
        let messages = (start..end).map(|p| self.logged_message(p)).collect::<Result<Vec<_>>>()?;
        let counts: Option<Vec<Vec<u32>>> =
            self.history.records()[start..end].iter().map(|r| r.tokens().map(pack_tokens)).collect();
        let (counted, tokens) = match counts {
            Some(tokens) => (counting_tag(self.history.encoding()), tokens),
            None => (String::new(), Vec::new()),
        };
        seal(data_key(&self.id, Kind::Chunk, end as u64), Kind::Chunk, &Chunk { messages, counted, tokens })
    }
}
