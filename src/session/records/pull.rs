//! Catching up with another writer (a second tab, another process): what to read to reach the
//! stored session's latest commit, and applying it. This session's unsaved changes are kept and
//! go after the other writer's, so that nothing is lost and nothing interleaves: its unsaved
//! messages get the ids that follow, its unsaved memory turns the numbers that follow.

use std::collections::HashMap;

use serde::Serialize;

use super::load::{read_meta, Sorted};
use super::save::{unpack_tokens, Part};
use super::{counting_tag, data_key, meta_key, show, Kind, Meta, Settings, StoredRecord, TailMark, Turn, CHUNK};
use crate::compact::{FrameState, SummaryState};
use crate::error::{Error, Result};
use crate::memory::{MemoryExport, MessageRange};
use crate::message::{self, Message};
use crate::session::Session;
use crate::state::{AgentState, Artifact};
use crate::tokens::calibration::{Calibration, CalibrationState};
use crate::tokens::REPLY_PRIMING;
use crate::util::ids::fnv1a;

/// What to read to catch up with a stored meta record.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PullPlan {
    /// The stored session is the one this session last saved or loaded: nothing to read.
    pub current: bool,
    /// The records to read (each by its key) and hand to `pull` with the meta record.
    pub keys: Vec<Vec<String>>,
    /// Then the records a tail may hold past what this session has, in order: read them up to
    /// the first absent one, and hand those to `pull` too (when there are any, even if `current`).
    pub tail: Vec<Vec<String>>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Renumbered {
    pub from: String,
    pub to: String,
}

/// What a pull changed.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PullReport {
    /// The commit now saved.
    pub commit: u64,
    /// The ids of the messages the other writer saved, in order.
    pub appended: Vec<String>,
    /// This session's unsaved messages whose ids changed (they now follow the other writer's).
    pub renumbered: Vec<Renumbered>,
    /// This session's unsaved memory turns whose numbers changed: `[from, to]`.
    pub renumbered_turns: Vec<[u32; 2]>,
    /// Unsaved changes of this session that gave way to the other writer's (`"summary"`: a
    /// summary made here over messages that are no longer where it covered them, or while the
    /// other writer stored its own; `"frame"`: the context this session's last build sent, when
    /// the other writer stored the context its own build sent since, or when it covered unsaved
    /// messages that moved: the next build extends the other writer's, or starts afresh).
    pub superseded: Vec<String>,
}

/// The other writer's state, read from its records.
struct Theirs {
    /// The meta record, and the last tail save committed after it.
    meta: Meta,
    meta_version: u64,
    tail: Option<TailMark>,
    messages: Vec<(Message, Option<Vec<u32>>)>,
    settings: Option<Settings>,
    summary: Option<SummaryState>,
    calibration: Option<Option<CalibrationState>>,
    turns: Vec<Turn>,
    artifacts: Vec<Artifact>,
    state: Option<AgentState>,
    /// The frame they stored since (`Err`: why it cannot be restored), `None` when unchanged.
    frame: Option<std::result::Result<FrameState, String>>,
}

impl Session {
    fn check_successor(&self, theirs: &Meta, key: &[String]) -> Result<()> {
        if theirs.id != self.id {
            return Err(Error::invalid_argument(format!(
                "record {} belongs to session {:?}, not {:?}",
                show(key),
                theirs.id,
                self.id
            )));
        }
        let saved = &self.persist.saved;
        if theirs.commit < saved.meta_commit() {
            return Err(Error::conflict(format!(
                "the stored session {:?} is at commit {}, behind this one's last save ({}): was storage restored from an older copy?",
                self.id,
                theirs.commit,
                saved.meta_commit()
            )));
        }
        match &saved.meta {
            Some(ours)
                if theirs.created_at != ours.created_at
                    || theirs.messages < ours.messages
                    || theirs.turns < ours.turns
                    || theirs.artifacts < ours.artifacts =>
            {
                Err(Error::conflict(format!(
                    "the stored session {:?} was replaced (deleted and made again) since this one was saved or loaded",
                    self.id
                )))
            }
            Some(_) => Ok(()),
            None => Err(Error::conflict(format!(
                "another session {:?} is already stored: this one was never saved there (choose another id)",
                self.id
            ))),
        }
    }

    /// What to read to catch up with `meta`, the stored meta record of this session.
    pub fn pull_plan(&self, meta: &StoredRecord) -> Result<PullPlan> {
        let (theirs, _) = read_meta(meta)?;
        self.check_successor(&theirs, &meta.key)?;
        let saved = &self.persist.saved;
        let current = theirs.commit == saved.meta_commit();
        let held = if current { saved.messages() as u64 } else { theirs.messages };
        let mut tail = Vec::new();
        for n in held + 1..=theirs.tail_reach() {
            tail.push(data_key(&self.id, Kind::Message, n));
        }
        if current {
            return Ok(PullPlan { current, keys: Vec::new(), tail });
        }
        let mut keys = Vec::new();
        let mut seq = saved.messages() as u64 + 1;
        while seq <= theirs.messages {
            if seq <= theirs.chunked {
                let end = seq.div_ceil(CHUNK as u64) * CHUNK as u64;
                keys.push(data_key(&self.id, Kind::Chunk, end));
                seq = end + 1;
            } else {
                keys.push(data_key(&self.id, Kind::Message, seq));
                seq += 1;
            }
        }
        if theirs.settings != saved.settings_generation() {
            keys.push(data_key(&self.id, Kind::Settings, theirs.settings));
        }
        if theirs.summary != saved.summary.generation && theirs.summary > 0 {
            keys.push(data_key(&self.id, Kind::Summary, theirs.summary));
        }
        if theirs.calibration != saved.calibration.generation && theirs.calibration > 0 {
            keys.push(data_key(&self.id, Kind::Calibration, theirs.calibration));
        }
        for k in saved.turns() as u64 + 1..=theirs.turns {
            keys.push(data_key(&self.id, Kind::Turn, k));
        }
        for k in saved.artifacts() as u64 + 1..=theirs.artifacts {
            keys.push(data_key(&self.id, Kind::Artifact, k));
        }
        if theirs.state != saved.state.generation && theirs.state > 0 {
            keys.push(data_key(&self.id, Kind::State, theirs.state));
        }
        if theirs.frame != saved.frame.generation && theirs.frame > 0 {
            keys.push(data_key(&self.id, Kind::Frame, theirs.frame));
        }
        Ok(PullPlan { current, keys, tail })
    }

    fn read_theirs(&self, records: &[StoredRecord]) -> Result<Theirs> {
        let (id, sorted) = Sorted::new(records)?;
        let meta_record = sorted.meta.ok_or_else(|| {
            let key = meta_key(&self.id);
            Error::invalid_argument(format!("pull needs the meta record {} with the records it names", show(&key)))
        })?;
        let (meta, meta_version) = read_meta(meta_record)?;
        self.check_successor(&meta, &meta_record.key)?;
        let saved = &self.persist.saved;
        let settings: Option<Settings> = (meta.settings != saved.settings_generation())
            .then(|| sorted.body(&id, Kind::Settings, meta.settings))
            .transpose()?;
        let summary = if meta.summary == saved.summary.generation {
            None
        } else {
            // Counted again when it is set (the state may be this session's or theirs).
            Some(sorted.summary(&id, meta.summary)?.0)
        };
        let calibration = if meta.calibration == saved.calibration.generation {
            None
        } else if meta.calibration == 0 {
            Some(None)
        } else {
            Some(Some(sorted.body(&id, Kind::Calibration, meta.calibration)?))
        };
        let turns = (saved.turns() as u64 + 1..=meta.turns)
            .map(|k| sorted.body::<Turn>(&id, Kind::Turn, k))
            .collect::<Result<Vec<_>>>()?;
        let artifacts = (saved.artifacts() as u64 + 1..=meta.artifacts)
            .map(|k| sorted.body::<Artifact>(&id, Kind::Artifact, k))
            .collect::<Result<Vec<_>>>()?;
        let state = if meta.state == saved.state.generation {
            None
        } else if meta.state == 0 {
            Some(AgentState::default())
        } else {
            Some(sorted.body(&id, Kind::State, meta.state)?)
        };
        // The tail: past this session's when the meta record is the one it saved, else past the
        // meta record's messages (which include this session's: their writer pulled them).
        let current = meta.commit == saved.meta_commit();
        if !current && meta.messages < saved.messages() as u64 {
            return Err(Error::conflict(format!(
                "the stored session {:?} holds {} messages, fewer than this one saved ({})",
                self.id,
                meta.messages,
                saved.messages()
            )));
        }
        let tail = sorted.tail(&meta, if current { saved.tail } else { None })?;
        let until = tail.map_or(meta.messages, TailMark::end);
        let encoding = settings.as_ref().map_or(self.history.encoding(), |s| s.encoding);
        let frame = (meta.frame != saved.frame.generation && meta.frame > 0)
            .then(|| sorted.frame(&id, meta.frame, &counting_tag(encoding)))
            .transpose()?;
        let format = settings.as_ref().map_or(self.format, |s| s.format);
        let (logged, counts) = sorted.messages(
            &id,
            (saved.messages() as u64 + 1, until),
            meta.chunked,
            &counting_tag(encoding),
            format,
        )?;
        let messages = logged
            .into_iter()
            .zip(counts)
            .enumerate()
            .map(|(i, (logged, count))| {
                let key = data_key(&id, Kind::Message, (saved.messages() + i + 1) as u64);
                message::parse_one(logged.message, logged.format, i)
                    .map(|m| (m, count))
                    .map_err(|e| Error::corrupt(&key, format!("message {}: {}", logged.id, e.message)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Theirs {
            meta,
            meta_version,
            tail,
            messages,
            settings,
            summary,
            calibration,
            turns,
            artifacts,
            state,
            frame,
        })
    }

    /// Applies what another writer saved since this session's last save or load (the meta record,
    /// the records `pull_plan` named, and those of its tail up to the first absent), keeping this session's unsaved changes after it: its
    /// messages are appended again after the other writer's (new ids, in `renumbered`), its memory
    /// turns recorded after theirs, its changed settings, title and calibration kept. A summary
    /// made here over messages that moved gives way (`superseded`). On any error, nothing changes.
    pub fn pull(&mut self, records: &[StoredRecord]) -> Result<PullReport> {
        let theirs = self.read_theirs(records)?;
        let theirs_state_saved = theirs.state.clone();
        let saved = self.persist.saved.clone();
        let saved_meta = saved.meta.clone();
        let saved_count = saved.messages();
        let stored = theirs.meta.clone().with_tail(theirs.tail);
        let mut report = PullReport {
            commit: stored.commit,
            appended: Vec::new(),
            renumbered: Vec::new(),
            renumbered_turns: Vec::new(),
            superseded: Vec::new(),
        };
        let mut next = self.clone();

        // Messages: theirs after the saved ones, then this session's unsaved ones again.
        let ours: Vec<(String, Message)> =
            self.history.records()[saved_count..].iter().map(|r| (r.id.clone(), Message::clone(&r.message))).collect();
        next.history.truncate(saved_count);
        let (their_messages, their_counts): (Vec<Message>, Vec<Option<Vec<u32>>>) = theirs.messages.into_iter().unzip();
        report.appended = next.history.append_all(their_messages).map_err(|e| {
            Error::corrupt(
                &meta_key(&self.id),
                format!("the stored messages do not follow this session's: {}", e.message),
            )
        })?;
        for (i, count) in their_counts.iter().enumerate() {
            if let Some(tokens) = count.as_deref().and_then(unpack_tokens) {
                next.history.restore_count(saved_count + i, tokens);
            }
        }
        let (old_ids, our_messages): (Vec<String>, Vec<Message>) = ours.into_iter().unzip();
        let new_ids = next.history.append_all(our_messages).map_err(|e| {
            Error::conflict(format!(
                "this session's unsaved messages cannot follow the ones another writer saved: {}",
                e.message
            ))
        })?;
        report.renumbered = old_ids
            .into_iter()
            .zip(new_ids)
            .filter(|(from, to)| from != to)
            .map(|(from, to)| super::Renumbered { from, to })
            .collect();
        let moved: HashMap<&str, &str> = report.renumbered.iter().map(|r| (r.from.as_str(), r.to.as_str())).collect();
        let moved_id = |id: &String| moved.get(id.as_str()).map_or_else(|| id.clone(), |to| to.to_string());

        // Memory turns: the saved ones, theirs, then this session's unsaved ones, renumbered.
        if let Some(memory) = &self.memory {
            let export = memory.export();
            let (kept, our_turns) = export.contexts.split_at(saved.turns().min(export.contexts.len()));
            let summary_of = |turn: u32| export.summaries.iter().find(|s| s.turn_number == turn).cloned();
            let mut contexts = kept.to_vec();
            let mut summaries: Vec<_> = kept.iter().filter_map(|c| summary_of(c.turn_number)).collect();
            for turn in &theirs.turns {
                contexts.push(turn.snapshot.clone());
                summaries.push(turn.summary.clone());
            }
            let mut last = contexts.last().map_or(0, |c| c.turn_number);
            for snapshot in our_turns {
                let mut snapshot = snapshot.clone();
                let mut summary = summary_of(snapshot.turn_number)
                    .ok_or_else(|| Error::internal(format!("turn {} has no summary", snapshot.turn_number)))?;
                if snapshot.turn_number <= last {
                    report.renumbered_turns.push([snapshot.turn_number, last + 1]);
                    snapshot.turn_number = last + 1;
                    snapshot.id = format!("ctx_{}_{:08x}", snapshot.turn_number, fnv1a(&[&snapshot.full_context]));
                    summary.turn_number = snapshot.turn_number;
                    summary.context_id = snapshot.id.clone();
                    summary.id = format!("sum_{}", snapshot.id);
                }
                last = snapshot.turn_number;
                if let Some(range) = &mut snapshot.messages {
                    *range = MessageRange { from: moved_id(&range.from), until: moved_id(&range.until) };
                }
                contexts.push(snapshot);
                summaries.push(summary);
            }
            let rebuilt = MemoryExport { contexts, summaries, ..export.clone() };
            next.memory_mut()?.restore(rebuilt)?;
            next.indexed = 0;
        }

        // The summary: theirs when they stored one; this session's while it covers only what
        // both share.
        let ours_summary = self.compactor.summary_state().clone();
        let ours_changed = ours_summary != saved.summary.value;
        let shared = |state: &SummaryState| {
            state
                .current
                .iter()
                .map(|c| c.until_index)
                .chain(state.in_progress.iter().map(|p| p.until_index))
                .all(|i| i < saved_count)
        };
        let summary = match (&theirs.summary, ours_changed) {
            (Some(their_summary), changed) => {
                if changed {
                    report.superseded.push("summary".into());
                }
                their_summary.clone()
            }
            (None, true) if shared(&ours_summary) => ours_summary,
            (None, true) => {
                report.superseded.push("summary".into());
                saved.summary.value.clone()
            }
            (None, false) => ours_summary,
        };
        next.compactor.set_summary_state(summary, &next.history)?;

        // The frame: theirs when they stored one since (what their build last sent, which the
        // next call must extend); else this session's, which a truncate above (its unsaved
        // messages put after theirs) leaves to be checked against the history again.
        let ours_unsaved = self.frame_mark() != saved.frame.value;
        let mut frame_saved = saved.frame.clone();
        match theirs.frame {
            Some(frame) => {
                if ours_unsaved {
                    report.superseded.push("frame".into());
                }
                match frame {
                    Ok(frame) => next.restore_frame(frame, "the frame another writer stored"),
                    Err(why) => next.drop_frame("the frame another writer stored", &why),
                }
                frame_saved = Part { generation: theirs.meta.frame, value: next.frame_mark() };
            }
            None if next.history.rebases() != self.history.rebases() => {
                if let Some(frame) = self.compactor.frame_state(&self.history) {
                    // Ids are places: past the saved messages the same ids now name others.
                    let fits = frame.settled <= saved_count;
                    if !fits || next.compactor.set_frame_state(frame, &next.history).is_err() {
                        report.superseded.push("frame".into());
                        next.drop_frame("this session's frame", "it sent messages that now follow another writer's");
                    } else if !ours_unsaved {
                        // The same frame as stored, under the revision its restoring gave it.
                        frame_saved.value = next.frame_mark();
                    }
                }
            }
            None => {}
        }

        // Settings, title, calibration: this session's when it changed them, else theirs.
        let our_settings = self.settings();
        let (settings, ours) = match (&theirs.settings, saved.settings.as_ref() == Some(&our_settings)) {
            (Some(their_settings), true) => (their_settings.clone(), false),
            _ => (our_settings, true),
        };
        if settings.encoding != next.history.encoding() {
            return Err(Error::conflict(format!(
                "the stored session {:?} counts with {}, this one with {}",
                self.id,
                settings.encoding.as_str(),
                next.history.encoding().as_str()
            )));
        }
        next.format = settings.format;
        next.max_loops = settings.max_loops;
        next.metadata = settings.metadata.clone();
        // This session's pins follow its messages to their new ids.
        let pinned: Vec<String> = match ours {
            true => settings.pinned.iter().map(moved_id).collect(),
            false => settings.pinned.clone(),
        };
        next.history.set_pinned(&pinned).map_err(|e| {
            Error::conflict(format!("this session's pins cannot follow the stored messages: {}", e.message))
        })?;
        if let Some(max) = settings.max_snapshot_chars {
            next.enable_memory(max)?;
        }
        let saved_title = saved_meta.as_ref().and_then(|m| m.title.clone());
        if self.persist.title == saved_title {
            next.persist.title = theirs.meta.title.clone();
        }
        let our_calibration = self.compactor.calibration_state();
        let our_calibration = (!our_calibration.is_empty()).then(|| our_calibration.state());
        if let (Some(their_calibration), true) = (&theirs.calibration, our_calibration == saved.calibration.value) {
            let calibration = match their_calibration {
                Some(state) => Calibration::from_state(state.clone())?,
                None => Calibration::default(),
            };
            next.compactor.set_calibration(calibration);
        }

        // Artifacts: the saved ones, theirs, then this session's unsaved ones (an id both saved
        // is a conflict: artifacts are written once). The agent state: this session's when it
        // changed it, else theirs.
        let mut artifacts = self.artifacts.list().to_vec();
        let ours_unsaved = artifacts.split_off(saved.artifacts().min(artifacts.len()));
        artifacts.extend(theirs.artifacts);
        artifacts.extend(ours_unsaved);
        let state = match (theirs.state, self.agent == saved.state.value) {
            (Some(their_state), true) => their_state,
            _ => self.agent.clone(),
        };
        next.restore_state(artifacts, state).map_err(|e| {
            Error::conflict(format!(
                "this session's unsaved artifacts or state cannot follow the stored ones: {}",
                e.message
            ))
        })?;

        // Counters: the other writer's, plus what this session added since its save.
        // (Where the turn under way starts follows from the rebuilt memory: its last turn's range.)
        let (saved_loops, saved_spawned) = saved_meta.as_ref().map_or((0, 0), |m| (m.loops, m.subagents_spawned));
        next.loops = theirs.meta.loops.saturating_add(self.loops.saturating_sub(saved_loops)).min(next.max_loops);
        next.subagents_spawned =
            theirs.meta.subagents_spawned.saturating_add(self.subagents_spawned.saturating_sub(saved_spawned));

        next.persist.saved = super::save::SavePoint {
            message_tokens: Some(stored.tokens.saturating_sub(REPLY_PRIMING as u64)),
            tail: theirs.tail,
            settings: theirs.settings.or(saved.settings),
            summary: match theirs.summary {
                Some(value) => Part { generation: theirs.meta.summary, value },
                None => saved.summary,
            },
            calibration: match theirs.calibration {
                Some(value) => Part { generation: theirs.meta.calibration, value },
                None => saved.calibration,
            },
            state: match &theirs_state_saved {
                Some(value) => Part { generation: theirs.meta.state, value: value.clone() },
                None => saved.state,
            },
            frame: frame_saved,
            meta: Some(theirs.meta),
            meta_version: theirs.meta_version,
        };
        next.persist.pending = None;
        *self = next;
        Ok(report)
    }
}
