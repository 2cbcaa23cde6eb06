use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::*;
use crate::compact::{BuildOptions, SummaryOptions};
use crate::error::ErrorKind;
use crate::session::turn_memory::tests::agent_with_two_turns;
use crate::session::{Session, TurnInput};
use crate::tokens::Encoding;

/// A key-value storage as an adapter keeps it, with the store's write order: records, then
/// removals once they are written.
#[derive(Clone, Default)]
struct Storage(BTreeMap<Vec<String>, String>);

impl Storage {
    fn save(&mut self, session: &mut Session, now: u64) -> Changes {
        let changes = session.changes(now).unwrap();
        for record in &changes.records {
            self.0.insert(record.key.clone(), record.value.clone());
        }
        session.mark_saved(changes.commit).unwrap();
        for key in &changes.remove {
            self.0.remove(key);
        }
        changes
    }

    fn records(&self, id: &str) -> Vec<StoredRecord> {
        self.0
            .iter()
            .filter(|(key, _)| key.get(1).map(String::as_str) == Some(id))
            .map(|(key, value)| StoredRecord { key: key.clone(), value: value.clone() })
            .collect()
    }

    fn load(&self, id: &str) -> Result<Session> {
        Session::load(&self.records(id))
    }

    fn get(&self, key: &[String]) -> StoredRecord {
        StoredRecord { key: key.to_vec(), value: self.0[key].clone() }
    }

    /// The records of `keys` up to the first absent one, as the store reads a tail.
    fn read_on(&self, keys: &[Vec<String>]) -> Vec<StoredRecord> {
        keys.iter()
            .map_while(|key| self.0.get(key).map(|value| StoredRecord { key: key.clone(), value: value.clone() }))
            .collect()
    }

    /// What `pull_plan` names, and its tail, with the meta record.
    fn pull(&self, session: &mut Session) -> Result<PullReport> {
        let meta = self.get(&meta_key(session.id()));
        let plan = session.pull_plan(&meta)?;
        let mut records: Vec<StoredRecord> = plan.keys.iter().map(|k| self.get(k)).collect();
        records.extend(self.read_on(&plan.tail));
        records.push(meta);
        session.pull(&records)
    }

    /// What `list` shows of session `id`: its meta record, tail and settings record.
    fn info(&self, id: &str) -> Result<SessionInfo> {
        let meta = self.get(&meta_key(id));
        let mut records = self.read_on(&tail_keys(&meta)?);
        records.extend(settings_key(&meta)?.map(|key| self.get(&key)));
        records.push(meta);
        SessionInfo::read(&records)
    }
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": text})
}

fn assistant(text: &str) -> Value {
    json!({"role": "assistant", "content": text})
}

fn exported(session: &Session) -> Value {
    serde_json::to_value(session.export().unwrap()).unwrap()
}

fn body_of(record: &StoredRecord) -> Value {
    serde_json::from_str::<Value>(&record.value).unwrap()["body"].clone()
}

/// `pairs` exchanges about source files, `text(i)` the i-th question.
fn ask_about_parts(session: &mut Session, pairs: usize, text: impl Fn(usize) -> String) {
    for i in 0..pairs {
        let answer = assistant(&format!("It parses part {i}."));
        session.history.append_values(json!([user(&text(i)), answer]), Format::OpenAi).unwrap();
    }
}

/// That a save after records of an earlier version wrote message `n` of session `id` and the meta
/// record, both in this version.
fn assert_message_and_meta_in_this_version(changes: &Changes, id: &str, n: u64) {
    let keys: Vec<Vec<String>> = changes.records.iter().map(|r| r.key.clone()).collect();
    assert_eq!(keys, [data_key(id, Kind::Message, n), meta_key(id)]);
    let prefix = format!(r#"{{"v":{RECORD_VERSION},"sum":""#);
    assert!(changes.records.iter().all(|r| r.value.starts_with(&prefix)));
}

/// Builds that summarise past `trigger` tokens, down to `target`.
fn summarising(trigger: u32, target: u32) -> BuildOptions {
    let summary = SummaryOptions {
        trigger_tokens: Some(trigger),
        target_tokens: Some(target),
        min_messages: 4,
        ..Default::default()
    };
    BuildOptions { summary: Some(summary), ..Default::default() }
}

#[test]
fn a_session_round_trips_through_its_records() {
    let mut session = agent_with_two_turns();
    session.history.append_value(user("and the return flight?"), Format::OpenAi).unwrap();
    session.next_loop().unwrap();
    session.metadata.insert("model".into(), "gpt-4o".into());
    session.set_title(Some("Trip to Seattle".into())).unwrap();
    session.record_usage(&json!({"prompt_tokens": 120}), Some("gpt-4o"), Some(100)).unwrap();
    let mut storage = Storage::default();
    let changes = storage.save(&mut session, 1_000);
    let kinds: Vec<&str> = changes.records.iter().map(|r| r.key[2.min(r.key.len() - 1)].as_str()).collect();
    assert_eq!(kinds, ["m", "m", "m", "m", "m", "m", "m", "settings", "calibration", "t", "t", "main"], "meta last");
    assert_eq!(changes.commit, 1);

    let loaded = storage.load("main").unwrap();
    assert_eq!(exported(&loaded), exported(&session));
    assert_eq!(loaded.title(), Some("Trip to Seattle"));
    assert_eq!(loaded.created_at(), Some(1_000));
    assert_eq!(loaded.compactor.calibration(), session.compactor.calibration());
    assert_eq!(loaded.saved_commit(), 1);
    let info = storage.info("main").unwrap();
    assert_eq!(
        (info.id.as_str(), info.title.as_deref(), info.messages, info.created_at, info.updated_at),
        ("main", Some("Trip to Seattle"), 7, 1_000, 1_000)
    );
    assert_eq!(info.tokens as usize, session.history.token_count().total);
    assert_eq!(info.encoding, Some(Encoding::O200kBase), "from the settings record");
    // Without the settings record (a caller that reads the meta record and tail alone): no encoding.
    let meta = storage.get(&meta_key("main"));
    let mut records = storage.read_on(&tail_keys(&meta).unwrap());
    records.push(meta);
    assert_eq!(SessionInfo::read(&records).unwrap().encoding, None);
    let mut other = Session::new("cl", Encoding::Cl100kBase, 10).unwrap();
    other.history.append_value(user("Count me in cl100k_base"), Format::OpenAi).unwrap();
    storage.save(&mut other, 1_000);
    assert_eq!(storage.info("cl").unwrap().encoding, Some(Encoding::Cl100kBase));

    // Nothing changed: nothing to write.
    let mut again = loaded;
    let nothing = again.changes(2_000).unwrap();
    assert!(nothing.records.is_empty() && nothing.remove.is_empty() && nothing.commit == 1, "{nothing:?}");
}

#[test]
fn an_append_writes_that_message_s_record_only_and_the_meta_record_every_16th() {
    let mut session = Session::new("chat", Encoding::O200kBase, 10).unwrap();
    let mut storage = Storage::default();
    let mut metas = Vec::new();
    for i in 0..40 {
        session.history.append_value(user(&format!("question {i}")), Format::OpenAi).unwrap();
        let changes = storage.save(&mut session, i);
        assert_eq!(changes.commit, i + 1);
        if changes.records.iter().any(|r| r.key == meta_key("chat")) {
            metas.push(i + 1);
        } else {
            assert_eq!(changes.records.len(), 1);
        }
    }
    assert_eq!(metas, [1, 17, 33], "the first save, then each time the tail would reach {TAIL_LIMIT}");
    let message = json!({"role": "assistant", "content": "A long answer. ".repeat(200)});
    let size = message.to_string().len();
    session.history.append_value(message, Format::OpenAi).unwrap();
    let changes = storage.save(&mut session, 50);
    assert_eq!(changes.records.len(), 1);
    assert_eq!(changes.records[0].key, data_key("chat", Kind::Message, 41));
    let written = changes.records[0].value.len();
    // The envelope (version, checksum), the tail mark and the message's count: under 140 B.
    assert!(written > size && written < size + 140, "{written} bytes for a {size}-byte message");
    let loaded = storage.load("chat").unwrap();
    assert_eq!(exported(&loaded), exported(&session));
    assert_eq!(loaded.saved_commit(), 41);
    // What list shows is exact: the meta record (of save 33) and the tail after it.
    let info = storage.info("chat").unwrap();
    assert_eq!((info.messages, info.commit, info.updated_at), (41, 41, 50));
    assert_eq!(info.tokens as usize, session.history.token_count().total);
    let meta = SessionInfo::read(&[storage.get(&meta_key("chat"))]).unwrap();
    assert_eq!((meta.messages, meta.commit), (33, 33), "the meta record alone");
}

#[test]
fn messages_are_chunked_past_each_thousand_and_load_back_with_their_counts() {
    let mut session = Session::new("long", Encoding::O200kBase, 10).unwrap();
    let mut storage = Storage::default();
    for i in 0..(2 * CHUNK + 5) {
        let message = if i % 2 == 0 { user(&format!("q{i}")) } else { assistant(&format!("a{i}")) };
        session.history.append_value(message, Format::OpenAi).unwrap();
        if i % 97 == 0 || i == CHUNK - 1 {
            storage.save(&mut session, i as u64);
        }
    }
    let changes = storage.save(&mut session, 9_999);
    assert!(changes.records.iter().any(|r| r.key == data_key("long", Kind::Chunk, 2000)));
    assert!(changes.remove.contains(&data_key("long", Kind::Message, 1001)));
    let keys: Vec<_> = storage.records("long").into_iter().map(|r| r.key).collect();
    assert!(keys.contains(&data_key("long", Kind::Chunk, 1000)) && keys.contains(&data_key("long", Kind::Chunk, 2000)));
    assert!(!keys.contains(&data_key("long", Kind::Message, 2000)), "single records a chunk holds are removed");
    assert_eq!(keys.iter().filter(|k| k.get(2).is_some_and(|s| s == "m")).count(), 5);

    let mut loaded = storage.load("long").unwrap();
    assert_eq!(loaded.history.ids(), session.history.ids());
    loaded.history.count_all();
    assert_eq!(loaded.history.counted_messages(), 0, "the chunks' counts and the 5 single records' are reused");
    assert_eq!(loaded.history.token_count(), session.history.token_count());
    // A chunk written by another library version (or for another encoding) is counted again.
    let mut other = storage.clone();
    let chunk_key = data_key("long", Kind::Chunk, 1000);
    let mut chunk: Chunk = serde_json::from_value(body_of(&other.get(&chunk_key))).unwrap();
    chunk.counted = "0.0.0/o200k_base".into();
    other.0.insert(chunk_key.clone(), seal(chunk_key, Kind::Chunk, &chunk).unwrap().value);
    let mut recounted = other.load("long").unwrap();
    recounted.history.count_all();
    assert_eq!(recounted.history.counted_messages(), CHUNK as u64);
}

#[test]
fn a_long_message_loaded_with_its_count_is_not_tokenized_again() {
    // A long message (a megabyte), kept in a chunk with its count: loading it takes the count,
    // and tokenizes nothing.
    let mut session = Session::new("long-text", Encoding::O200kBase, 10).unwrap();
    let long = "word ".repeat(200_000);
    session.history.append_value(user(&long), Format::OpenAi).unwrap();
    for i in 1..CHUNK {
        session.history.append_value(if i % 2 == 0 { user("q") } else { assistant("a") }, Format::OpenAi).unwrap();
    }
    session.history.count_all();
    let mut storage = Storage::default();
    storage.save(&mut session, 1);
    let mut loaded = storage.load("long-text").unwrap();
    assert_eq!(loaded.history.counted_messages(), 0, "every count came from the chunk");
    assert_eq!(loaded.history.token_count(), session.history.token_count());
    assert_eq!(loaded.history.counted_messages(), 0);
}

#[test]
fn a_stored_message_must_carry_the_id_of_its_place() {
    let key = data_key("s", Kind::Message, 7);
    let message = |id: &str| LoggedMessage { id: id.into(), format: Format::OpenAi, message: user("hi") };
    assert!(super::load::check_id(&key, &message("m7"), 7).is_ok());
    for id in ["m07", "m+7", "m8", "7", "m", "m7 ", "m18446744073709551623"] {
        let error = super::load::check_id(&key, &message(id), 7).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Corrupt, "{id}");
        assert!(error.message.contains("where m7 belongs"), "{error}");
    }
}

/// A session `id` of one message stored, its meta record then claiming `messages` messages under
/// a checksum that verifies (anyone can compute one: an imported file may say anything that parses).
fn stored_claiming(id: &str, messages: u64) -> (Session, Storage) {
    let mut session = Session::new(id, Encoding::O200kBase, 10).unwrap();
    session.history.append_value(user("hi"), Format::OpenAi).unwrap();
    let mut storage = Storage::default();
    storage.save(&mut session, 1_000);
    let key = meta_key(id);
    let mut meta: Meta = serde_json::from_value(body_of(&storage.get(&key))).unwrap();
    meta.messages = messages;
    storage.0.insert(key.clone(), seal(key, Kind::Meta, &meta).unwrap().value);
    (session, storage)
}

#[test]
fn a_meta_record_claiming_billions_of_messages_is_corrupt_not_an_allocation() {
    let (_, storage) = stored_claiming("huge", 1 << 40);
    let error = storage.load("huge").err().unwrap();
    assert_eq!(error.kind, ErrorKind::Corrupt, "{error}");
    assert!(error.message.contains(r#"["r","huge","m","000000000002"] is missing"#), "{error}");
}

/// Debug builds panicked on the overflow; the wasm, built without overflow checks, wrapped the
/// commit to 0, and a load then ignored its next save.
#[test]
fn a_meta_record_at_the_end_of_u64_is_corrupt_not_an_overflow() {
    let (session, storage) = stored_claiming("end", u64::MAX);
    let meta_record = storage.get(&meta_key("end"));
    for error in [
        storage.load("end").err().unwrap(),
        tail_keys(&meta_record).err().unwrap(),
        storage.info("end").err().unwrap(),
        session.pull_plan(&meta_record).err().unwrap(),
    ] {
        assert_eq!(error.kind, ErrorKind::Corrupt, "{error}");
        assert_eq!(error.path.as_deref(), Some("s/end"), "{error}");
    }

    // A tail mark's commit as far out: not a batch of the session (the next save's commit would overflow).
    let mut session = Session::new("far", Encoding::O200kBase, 10).unwrap();
    let mut storage = Storage::default();
    storage.save(&mut session, 1_000);
    session.history.append_value(user("hi"), Format::OpenAi).unwrap();
    storage.save(&mut session, 2_000);
    let key = data_key("far", Kind::Message, 1);
    let mut body = body_of(&storage.get(&key));
    body["tail"][0] = json!(u64::MAX);
    storage.0.insert(key.clone(), seal(key, Kind::Message, &body).unwrap().value);
    let mut loaded = storage.load("far").unwrap();
    assert_eq!((loaded.history.len(), loaded.saved_commit()), (0, 1));
    loaded.history.append_value(user("again"), Format::OpenAi).unwrap();
    assert_eq!(storage.save(&mut loaded, 3_000).commit, 2);
}

#[test]
fn records_are_ascii_and_load_back_every_character() {
    let mut session = Session::new("text", Encoding::O200kBase, 10).unwrap();
    session.set_title(Some("café".into())).unwrap();
    let text = "naïve — 東京 😀 \u{2028} \\u00e9 \"quoted\"";
    session.history.append_value(user(text), Format::OpenAi).unwrap();
    let mut storage = Storage::default();
    let changes = storage.save(&mut session, 1);
    for record in &changes.records {
        assert!(record.value.is_ascii(), "{}", record.value);
    }
    let message = &storage.get(&data_key("text", Kind::Message, 1)).value;
    assert!(message.contains(r"na\u00efve \u2014 \u6771\u4eac \ud83d\ude00 \u2028 \\u00e9"), "{message}");
    let loaded = storage.load("text").unwrap();
    assert_eq!(loaded.history.emit(Format::OpenAi), json!([{"role": "user", "content": text}]));
    assert_eq!(loaded.title(), Some("café"));
}

#[test]
fn a_failed_write_leaves_the_same_records_for_the_next_attempt() {
    let mut session = agent_with_two_turns();
    let mut storage = Storage::default();
    storage.save(&mut session, 1);
    session.history.append_value(user("one more"), Format::OpenAi).unwrap();
    let first = session.changes(2).unwrap();
    // The store could not write them: no mark_saved. The same records come out again.
    let second = session.changes(2).unwrap();
    assert_eq!(first, second);
    let error = session.mark_saved(first.commit + 1).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Conflict);
    // A write that stopped half-way (records written, meta not) is not part of the session.
    for record in &first.records[..first.records.len() - 1] {
        storage.0.insert(record.key.clone(), record.value.clone());
    }
    assert_eq!(storage.load("main").unwrap().history.len(), 6);
    session.mark_saved(second.commit).unwrap();
    for record in &second.records {
        storage.0.insert(record.key.clone(), record.value.clone());
    }
    assert_eq!(storage.load("main").unwrap().history.len(), 7);
}

#[test]
fn replaced_parts_get_new_generations_and_the_old_ones_are_removed() {
    let mut session = Session::new("s", Encoding::O200kBase, 10).unwrap();
    ask_about_parts(&mut session, 30, |i| {
        format!("Please look at file src/part{i}.rs and tell me what it does. {}", "detail ".repeat(30))
    });
    let mut storage = Storage::default();
    storage.save(&mut session, 1);
    session.build(&summarising(500, 300)).unwrap();
    assert!(session.compactor.summary_state().current.is_some(), "the build made a summary");
    let changes = storage.save(&mut session, 2);
    assert!(changes.records.iter().any(|r| r.key == data_key("s", Kind::Summary, 1)));
    session.metadata.insert("k".into(), 1.into());
    let changes = storage.save(&mut session, 3);
    assert_eq!(changes.records.len(), 2);
    assert_eq!(changes.records[0].key, data_key("s", Kind::Settings, 2));
    assert_eq!(changes.remove, [data_key("s", Kind::Settings, 1)]);
    let loaded = storage.load("s").unwrap();
    assert_eq!(exported(&loaded), exported(&session));
    assert_eq!(loaded.compactor.summary_state(), session.compactor.summary_state());
}

#[test]
fn damaged_missing_and_newer_records_are_reported_with_their_keys() {
    let mut session = agent_with_two_turns();
    let mut storage = Storage::default();
    storage.save(&mut session, 1);
    let key = data_key("main", Kind::Message, 3);
    let with = |edit: &dyn Fn(&mut Storage)| {
        let mut copy = storage.clone();
        edit(&mut copy);
        copy.load("main").unwrap_err()
    };
    let flipped = with(&|s| {
        let value = s.0[&key].replacen("SEA", "SEB", 1);
        s.0.insert(key.clone(), value);
    });
    assert_eq!(flipped.kind, ErrorKind::Corrupt);
    assert_eq!(flipped.path.as_deref(), Some("r/main/m/000000000003"));
    assert!(flipped.message.contains("fails its checksum"), "{flipped}");
    let truncated = with(&|s| {
        let value = s.0[&key][..40].to_string();
        s.0.insert(key.clone(), value);
    });
    assert!(truncated.kind == ErrorKind::Corrupt && truncated.message.contains("not a stored record"), "{truncated}");
    let missing = with(&|s| {
        s.0.remove(&key);
    });
    assert!(missing.kind == ErrorKind::Corrupt && missing.message.contains("is missing"), "{missing}");
    let moved = with(&|s| {
        let value = s.0[&key].clone();
        s.0.insert(data_key("main", Kind::Message, 4), value);
    });
    assert!(moved.message.contains("fails its checksum"), "a record copied to another key: {moved}");
    let newer = with(&|s| {
        let value =
            s.0[&key].replacen(&format!(r#""v":{RECORD_VERSION}"#), &format!(r#""v":{}"#, RECORD_VERSION + 1), 1);
        s.0.insert(key.clone(), value);
    });
    assert_eq!(newer.kind, ErrorKind::InvalidArgument);
    assert!(newer.message.contains("version 6, newer than this library reads (5)"), "{newer}");
    assert_eq!(newer.path.as_deref(), Some("r/main/m/000000000003"));
    let no_meta = with(&|s| {
        s.0.remove(&meta_key("main"));
    });
    assert!(no_meta.message.contains(r#"["s","main"] is missing"#), "{no_meta}");
    // A record that passes its checksum but whose contents do not fit the rest: import's checks.
    let mut forged = storage.clone();
    let turn_key = data_key("main", Kind::Turn, 2);
    let mut turn: Turn = serde_json::from_value(body_of(&forged.get(&turn_key))).unwrap();
    turn.snapshot.messages = Some(crate::memory::MessageRange { from: "m5".into(), until: "m99".into() });
    forged.0.insert(turn_key.clone(), seal(turn_key, Kind::Turn, &turn).unwrap().value);
    let error = forged.load("main").unwrap_err();
    assert!(error.message.contains("which the history does not have"), "{error}");
    // Keys that are not a session's, and two sessions at once.
    let stray = StoredRecord { key: vec!["x".into()], value: "{}".into() };
    assert_eq!(Session::load(&[stray]).unwrap_err().kind, ErrorKind::InvalidArgument);
    let mut two = storage.records("main");
    two.push(StoredRecord { key: meta_key("other"), value: two[0].value.clone() });
    assert!(Session::load(&two).unwrap_err().message.contains("two sessions"));
}

#[test]
fn envelopes_in_another_layout_open_alike_and_a_body_must_be_one_value() {
    let mut session = agent_with_two_turns();
    let mut storage = Storage::default();
    storage.save(&mut session, 1);
    let key = data_key("main", Kind::Message, 3);
    let sealed = storage.get(&key).value;
    let (version, sum, body) = super::sealed(&sealed, Kind::Message).expect("seal's own layout");
    assert_eq!(version, RECORD_VERSION);
    // The same envelope as any JSON writer might lay it out: read as JSON, with the same result.
    let mut relaid = storage.clone();
    relaid.0.insert(key.clone(), format!("{{ \"body\": {body}, \"sum\": \"{sum}\", \"v\": {RECORD_VERSION} }}"));
    assert!(super::sealed(&relaid.get(&key).value, Kind::Message).is_none());
    assert_eq!(exported(&relaid.load("main").unwrap()), exported(&storage.load("main").unwrap()));
    // In seal's layout the body is the text up to the last brace: text after the body's value
    // (with a checksum that matches it) is no record, named by its key.
    let forged_body = format!("{body}, \"v\": 3");
    let sum = format!("{:016x}", checksum(&key, 3, Kind::Message, &forged_body));
    let mut forged = storage.clone();
    forged.0.insert(key.clone(), format!(r#"{{"v":3,"sum":"{sum}","body":{forged_body}}}"#));
    let error = forged.load("main").unwrap_err();
    assert_eq!(error.kind, ErrorKind::Corrupt);
    assert_eq!(error.path.as_deref(), Some("r/main/m/000000000003"));
    assert!(error.message.contains("not readable"), "{error}");
}

#[test]
fn records_the_meta_does_not_name_are_not_read_and_superseded_ones_are_garbage() {
    let mut session = Session::new("g", Encoding::O200kBase, 10).unwrap();
    session.history.append_value(user("hi"), Format::OpenAi).unwrap();
    let mut storage = Storage::default();
    storage.save(&mut session, 1);
    // Left by saves that did not finish: a message past the frontier that no tail save wrote,
    // an old settings generation.
    let stale = message_body(user("stale"), None, None, None);
    storage.0.insert(
        data_key("g", Kind::Message, 2),
        seal(data_key("g", Kind::Message, 2), Kind::Message, &stale).unwrap().value,
    );
    let old = storage.get(&data_key("g", Kind::Settings, 1)).value;
    storage.0.insert(data_key("g", Kind::Settings, 0), old);
    let mut loaded = storage.load("g").unwrap();
    assert_eq!(loaded.history.len(), 1);
    let changes = loaded.changes(2).unwrap();
    assert!(changes.records.is_empty());
    assert_eq!(changes.remove, [data_key("g", Kind::Settings, 0)]);
    loaded.mark_saved(changes.commit).unwrap();
    assert!(loaded.changes(3).unwrap().remove.is_empty());
    loaded.history.append_value(user("again"), Format::OpenAi).unwrap();
    storage.save(&mut loaded, 4);
    let reloaded = storage.load("g").unwrap();
    assert_eq!(exported(&reloaded), exported(&loaded), "the leftover was written over");
    // A damaged record where a tail may be is reported, named by its key: it may hold a
    // committed message.
    storage.0.insert(data_key("g", Kind::Message, 3), "not even JSON".into());
    let error = storage.load("g").unwrap_err();
    assert_eq!((error.kind, error.path.as_deref()), (ErrorKind::Corrupt, Some("r/g/m/000000000003")));
}

#[test]
fn version_0_a_whole_export_under_one_key_is_migrated() {
    let session = agent_with_two_turns();
    let text = serde_json::to_string(&session.export().unwrap()).unwrap();
    let record = StoredRecord { key: vec!["session:main".into()], value: text.clone() };
    let mut migrated = Session::load(&[record]).unwrap();
    assert_eq!(exported(&migrated), exported(&session));
    assert_eq!(migrated.saved_commit(), 0);
    let mut storage = Storage::default();
    storage.save(&mut migrated, 5);
    assert_eq!(exported(&storage.load("main").unwrap()), exported(&session));
    let newer = text.replacen(r#""version":1"#, r#""version":2"#, 1);
    let error = Session::load(&[StoredRecord { key: vec!["k".into()], value: newer }]).unwrap_err();
    assert!(error.message.contains("newer than this library"), "{error}");
}

#[test]
fn two_writers_append_and_nothing_is_lost_or_interleaved() {
    let mut first = Session::new("shared", Encoding::O200kBase, 10).unwrap();
    first.history.append_value(user("start"), Format::OpenAi).unwrap();
    let mut storage = Storage::default();
    storage.save(&mut first, 1);
    let mut second = storage.load("shared").unwrap();

    first.history.append_values(json!([user("from A 1"), assistant("A answers 1")]), Format::OpenAi).unwrap();
    second.history.append_values(json!([user("from B 1"), assistant("B answers 1")]), Format::OpenAi).unwrap();
    second.set_title(Some("B's title".into())).unwrap();
    storage.save(&mut first, 2);
    // B is behind: it reads A's save first, and its own messages follow A's.
    let report = storage.pull(&mut second).unwrap();
    assert_eq!(report.appended, ["m2", "m3"]);
    assert_eq!(
        report.renumbered,
        [Renumbered { from: "m2".into(), to: "m4".into() }, Renumbered { from: "m3".into(), to: "m5".into() }]
    );
    storage.save(&mut second, 3);
    assert!(storage.pull(&mut first).unwrap().renumbered.is_empty());
    let texts =
        |s: &Session| -> Vec<String> { s.history.records().iter().map(|r| r.message.content.joined_text()).collect() };
    assert_eq!(texts(&first), ["start", "from A 1", "A answers 1", "from B 1", "B answers 1"]);
    assert_eq!(exported(&first), exported(&second));
    assert_eq!(first.title(), Some("B's title"));
    assert_eq!(exported(&storage.load("shared").unwrap()), exported(&first));
    // Up to date: nothing to read.
    assert!(first.pull_plan(&storage.get(&meta_key("shared"))).unwrap().current);
}

#[test]
fn a_pull_keeps_unsaved_turns_after_the_other_writers() {
    let mut first = agent_with_two_turns();
    let mut storage = Storage::default();
    storage.save(&mut first, 1);
    let mut second = storage.load("main").unwrap();
    for (session, who) in [(&mut first, "A"), (&mut second, "B")] {
        session
            .history
            .append_values(json!([user(&format!("{who} asks")), assistant(&format!("{who} answers"))]), Format::OpenAi)
            .unwrap();
        session
            .record_turn(TurnInput { workspace_context: format!("{who}'s workspace"), ..Default::default() })
            .unwrap();
        session.next_loop().unwrap();
    }
    storage.save(&mut first, 2);
    let report = storage.pull(&mut second).unwrap();
    assert_eq!(report.renumbered_turns, [[3, 4]]);
    let turn4 = second.memory().unwrap().context(4).unwrap().clone();
    assert_eq!(turn4.messages, Some(crate::memory::MessageRange { from: "m9".into(), until: "m10".into() }));
    assert_eq!(second.turn_start(), 10, "the turn under way starts after the rebased turn 4");
    assert_eq!(second.loops(), 2, "both writers' loops count");
    storage.save(&mut second, 3);
    storage.pull(&mut first).unwrap();
    assert_eq!(exported(&first), exported(&second));
    assert_eq!(storage.load("main").unwrap().turn_start(), 10, "the meta's turnStart agrees with the turns");
    let recalled = first.recall(&json!({"turnNumbers": [4]}), 500).unwrap();
    assert!(serde_json::to_string(&recalled).unwrap().contains("B asks"));
}

#[test]
fn a_pull_that_cannot_apply_changes_nothing() {
    let mut first = Session::new("c", Encoding::O200kBase, 10).unwrap();
    first
        .history
        .append_value(json!({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}), Format::OpenAi)
        .unwrap();
    let mut storage = Storage::default();
    storage.save(&mut first, 1);
    let mut second = storage.load("c").unwrap();
    // Both answer the same call: the second answer cannot follow the first.
    first
        .history
        .append_value(json!({"role": "tool", "tool_call_id": "call_1", "content": "A"}), Format::OpenAi)
        .unwrap();
    second
        .history
        .append_value(json!({"role": "tool", "tool_call_id": "call_1", "content": "B"}), Format::OpenAi)
        .unwrap();
    storage.save(&mut first, 2);
    let before = exported(&second);
    let error = storage.pull(&mut second).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Conflict);
    assert!(error.message.contains("already answered"), "{error}");
    assert_eq!(exported(&second), before);
    assert_eq!(second.saved_commit(), 1);
    // A session deleted and made again under the same id is not a successor.
    let mut replaced = Storage::default();
    let mut fresh = Session::new("c", Encoding::O200kBase, 10).unwrap();
    for now in [97, 98, 99] {
        fresh.history.append_value(user("new"), Format::OpenAi).unwrap();
        replaced.save(&mut fresh, now);
    }
    assert!(replaced.pull(&mut first).unwrap_err().message.contains("was replaced"));
}

#[test]
fn a_summary_over_messages_that_moved_gives_way() {
    let mut first = Session::new("sum", Encoding::O200kBase, 10).unwrap();
    first.history.append_value(user("start"), Format::OpenAi).unwrap();
    let mut storage = Storage::default();
    storage.save(&mut first, 1);
    let mut second = storage.load("sum").unwrap();
    ask_about_parts(&mut second, 30, |i| format!("Look at src/part{i}.rs please. {}", "detail ".repeat(30)));
    second.build(&summarising(500, 300)).unwrap();
    assert!(second.compactor.summary_state().current.is_some());
    first.history.append_value(user("meanwhile"), Format::OpenAi).unwrap();
    storage.save(&mut first, 2);
    let report = storage.pull(&mut second).unwrap();
    // (Its frame, which sent the messages that moved, gives way too.)
    assert_eq!(report.superseded, ["summary", "frame"]);
    assert!(second.compactor.summary_state().current.is_none());
    assert_eq!(second.history.len(), 62);
    // The next build summarises again, over the messages where they now are.
    second.build(&summarising(500, 300)).unwrap();
    let current = second.compactor.summary_state().current.clone().unwrap();
    assert_eq!(second.history.records()[current.until_index].id, current.summarised_until);
}

fn artifact(id: &str, content: &str) -> crate::state::ArtifactInput {
    crate::state::ArtifactInput {
        id: id.into(),
        language: "python".into(),
        content: content.into(),
        description: Some(format!("{id}'s code")),
        ..Default::default()
    }
}

fn todos(items: &[&str]) -> crate::state::AgentState {
    crate::state::AgentState {
        todos: items.iter().map(|c| crate::state::Todo { content: c.to_string(), ..Default::default() }).collect(),
        active_skill: Some("analysis".into()),
        ..Default::default()
    }
}

#[test]
fn artifacts_and_state_are_records_of_their_own() {
    let mut session = Session::new("main", Encoding::O200kBase, 10).unwrap();
    session.history.append_value(user("analyse the sales"), Format::OpenAi).unwrap();
    session.save_artifact(artifact("code_sales_analysis", "import pandas\n")).unwrap();
    session.set_agent_state(todos(&["load", "plot"])).unwrap();
    let mut storage = Storage::default();
    let changes = storage.save(&mut session, 1);
    let kinds: Vec<&str> = changes.records.iter().map(|r| r.key[2.min(r.key.len() - 1)].as_str()).collect();
    assert_eq!(kinds, ["m", "settings", "a", "state", "main"]);
    let artifact_record = &changes.records[2];
    assert!(artifact_record.value.starts_with(&format!(r#"{{"v":{RECORD_VERSION},"sum":""#)));
    assert_eq!(body_of(artifact_record)["id"], "code_sales_analysis");
    let loaded = storage.load("main").unwrap();
    assert_eq!(exported(&loaded), exported(&session));
    assert_eq!(loaded.artifacts().len(), 1);

    // One more artifact: that record and the meta only; a new state: its next generation, the old removed.
    let mut session = loaded;
    session.save_artifact(artifact("code_chart", "import matplotlib\n")).unwrap();
    let changes = storage.save(&mut session, 2);
    let keys: Vec<Vec<String>> = changes.records.iter().map(|r| r.key.clone()).collect();
    assert_eq!(keys, [data_key("main", Kind::Artifact, 2), meta_key("main")]);
    session.set_agent_state(todos(&["plot"])).unwrap();
    let changes = storage.save(&mut session, 3);
    assert_eq!(changes.records[0].key, data_key("main", Kind::State, 2));
    assert_eq!(changes.remove, [data_key("main", Kind::State, 1)]);
    let loaded = storage.load("main").unwrap();
    assert_eq!(exported(&loaded), exported(&session));
    assert_eq!(loaded.agent_state(), &todos(&["plot"]));

    // A damaged artifact record is named by its key; nothing loads.
    let mut damaged = storage.clone();
    let key = data_key("main", Kind::Artifact, 1);
    let value = damaged.0[&key].replace("import pandas", "import numpy");
    damaged.0.insert(key.clone(), value);
    let error = damaged.load("main").unwrap_err();
    assert_eq!(error.kind, ErrorKind::Corrupt);
    assert_eq!(error.path.as_deref(), Some(key.join("/").as_str()));
    // A meta record that names an artifact the storage lacks.
    let mut missing = storage.clone();
    missing.0.remove(&data_key("main", Kind::Artifact, 2));
    assert!(missing.load("main").unwrap_err().message.contains("is missing"));
}

#[test]
fn a_pull_brings_the_other_writers_artifacts_and_state() {
    let mut first = Session::new("shared", Encoding::O200kBase, 10).unwrap();
    first.history.append_value(user("start"), Format::OpenAi).unwrap();
    let mut storage = Storage::default();
    storage.save(&mut first, 1);
    let mut second = storage.load("shared").unwrap();

    first.save_artifact(artifact("code_a", "a = 1\n")).unwrap();
    first.set_agent_state(todos(&["from A"])).unwrap();
    storage.save(&mut first, 2);
    second.save_artifact(artifact("code_b", "b = 2\n")).unwrap();
    storage.pull(&mut second).unwrap();
    let ids: Vec<&str> = second.artifacts().iter().map(|a| a.id.as_str()).collect();
    assert_eq!(ids, ["code_a", "code_b"], "theirs, then this session's unsaved one");
    assert_eq!(second.agent_state(), &todos(&["from A"]), "the state it did not change is theirs");
    storage.save(&mut second, 3);
    storage.pull(&mut first).unwrap();
    assert_eq!(exported(&first), exported(&second));
    assert_eq!(exported(&storage.load("shared").unwrap()), exported(&first));

    // Both saved the same id: the pull refuses and changes nothing.
    let mut third = storage.load("shared").unwrap();
    first.save_artifact(artifact("code_c", "c = 3\n")).unwrap();
    storage.save(&mut first, 4);
    third.save_artifact(artifact("code_c", "c = 4\n")).unwrap();
    let before = exported(&third);
    let error = storage.pull(&mut third).unwrap_err();
    assert_eq!(error.kind, ErrorKind::Conflict);
    assert!(error.message.contains("exists already"), "{error}");
    assert_eq!(exported(&third), before);
}

/// Records version 1 wrote (the library before tail saves, `Session.changes` in Node): two
/// saves of session "v1", the second an append, which then wrote the meta record again.
const VERSION_1_RECORDS: &str = r#"[{"key":["r","v1","m","000000000001"],"value":"{\"v\":1,\"kind\":\"message\",\"sum\":\"aa1ceee14abeb23d\",\"body\":{\"id\":\"m1\",\"format\":\"openai\",\"message\":{\"role\":\"user\",\"content\":\"Fly me to Lisbon \\u2014 \\u00e9\"}}}"},{"key":["r","v1","m","000000000002"],"value":"{\"v\":1,\"kind\":\"message\",\"sum\":\"b1b8f67d00dfedbc\",\"body\":{\"id\":\"m2\",\"format\":\"openai\",\"message\":{\"role\":\"assistant\",\"content\":\"Booked.\"}}}"},{"key":["r","v1","settings","000000000001"],"value":"{\"v\":1,\"kind\":\"settings\",\"sum\":\"f322e71b46cd80b5\",\"body\":{\"encoding\":\"o200k_base\",\"format\":\"openai\",\"maxLoops\":10,\"maxSnapshotChars\":null,\"metadata\":{}}}"},{"key":["r","v1","m","000000000003"],"value":"{\"v\":1,\"kind\":\"message\",\"sum\":\"8cde464c3482477e\",\"body\":{\"id\":\"m3\",\"format\":\"openai\",\"message\":{\"role\":\"user\",\"content\":\"Thanks\"}}}"},{"key":["s","v1"],"value":"{\"v\":1,\"kind\":\"meta\",\"sum\":\"03b55cf0c5e63ce6\",\"body\":{\"id\":\"v1\",\"title\":\"Written by version 1\",\"createdAt\":1000,\"updatedAt\":2000,\"messages\":3,\"tokens\":24,\"commit\":2,\"chunked\":0,\"settings\":1,\"summary\":0,\"calibration\":0,\"turns\":0,\"loops\":0,\"subagentsSpawned\":0,\"turnStart\":0}}"}]"#;

#[test]
fn version_1_records_load_and_the_next_saves_write_the_current_version_after_them() {
    let records: Vec<StoredRecord> = serde_json::from_str(VERSION_1_RECORDS).unwrap();
    let mut storage = Storage(records.iter().map(|r| (r.key.clone(), r.value.clone())).collect());
    let mut session = storage.load("v1").unwrap();
    let mut expected = Session::new("v1", Encoding::O200kBase, 10).unwrap();
    for message in [user("Fly me to Lisbon — é"), assistant("Booked."), user("Thanks")] {
        expected.history.append_value(message, Format::OpenAi).unwrap();
    }
    assert_eq!(exported(&session), exported(&expected));
    assert_eq!((session.title(), session.saved_commit()), (Some("Written by version 1"), 2));
    let info = storage.info("v1").unwrap();
    assert_eq!((info.messages, info.tokens as usize, info.commit), (3, expected.history.token_count().total, 2));
    // A damaged version 1 record is reported with its key, as before.
    let mut damaged = storage.clone();
    let key = data_key("v1", Kind::Message, 2);
    damaged.0.insert(key.clone(), damaged.0[&key].replace("Booked", "Booker"));
    let error = damaged.load("v1").unwrap_err();
    assert_eq!((error.kind, error.path.as_deref()), (ErrorKind::Corrupt, Some("r/v1/m/000000000002")));
    assert!(error.message.contains("fails its checksum"), "{error}");

    // An append: the meta record again, now of the current version, so that a tab still running
    // version 1 (which reads no tails, and would write over them) stops at it as newer than it reads.
    session.history.append_value(assistant("You're welcome."), Format::OpenAi).unwrap();
    expected.history.append_value(assistant("You're welcome."), Format::OpenAi).unwrap();
    let changes = storage.save(&mut session, 3000);
    assert_message_and_meta_in_this_version(&changes, "v1", 4);
    let mut body = body_of(&changes.records[0]);
    body.as_object_mut().unwrap().retain(|field, _| field != "counted" && field != "tokens");
    assert_eq!(body, json!({"message": assistant("You're welcome.")}), "id and format left out");
    // The next: a tail save.
    session.history.append_value(user("Bye"), Format::OpenAi).unwrap();
    expected.history.append_value(user("Bye"), Format::OpenAi).unwrap();
    let changes = storage.save(&mut session, 3500);
    assert_eq!(changes.records.len(), 1);
    let tokens = super::save::pack_tokens(session.history.records()[4].tokens().expect("counted"));
    assert_eq!(
        body_of(&changes.records[0]),
        json!({"message": user("Bye"), "tail": [4, 5, expected.history.token_count().total, 3500],
               "counted": counting_tag(Encoding::O200kBase), "tokens": tokens})
    );
    let loaded = storage.load("v1").unwrap();
    assert_eq!(exported(&loaded), exported(&expected));
    assert_eq!(loaded.saved_commit(), 4);
    // A title: the meta record.
    session.set_title(Some("Lisbon".into())).unwrap();
    let changes = storage.save(&mut session, 4000);
    assert_eq!(changes.records.last().unwrap().key, meta_key("v1"));
    assert_eq!(storage.info("v1").unwrap().title.as_deref(), Some("Lisbon"));
    assert_eq!(exported(&storage.load("v1").unwrap()), exported(&expected));
}

/// A session "t" of `n` user messages, saved after each: a meta record and a tail of `n - 1`.
fn tailed(n: usize) -> (Session, Storage) {
    let mut session = Session::new("t", Encoding::O200kBase, 10).unwrap();
    let mut storage = Storage::default();
    for i in 0..n {
        session.history.append_value(user(&format!("message {}", i + 1)), Format::OpenAi).unwrap();
        storage.save(&mut session, 100 + i as u64);
    }
    (session, storage)
}

#[test]
fn a_batch_cut_short_is_not_accepted_and_its_records_are_written_over() {
    let (mut session, mut storage) = tailed(3);
    let before = exported(&session);
    let tokens = session.history.token_count().total;
    // A tail save of three messages, of which only the first two were written.
    session.history.append_values(json!([user("four"), assistant("five"), user("six")]), Format::OpenAi).unwrap();
    let changes = session.changes(200).unwrap();
    assert_eq!(changes.records.len(), 3, "a tail save: no meta record");
    for record in &changes.records[..2] {
        storage.0.insert(record.key.clone(), record.value.clone());
    }
    assert_eq!(exported(&storage.load("t").unwrap()), before);
    let info = storage.info("t").unwrap();
    assert_eq!((info.messages, info.commit, info.tokens as usize, info.updated_at), (3, 3, tokens, 102));
    // Another writer, which sees the committed session, is not misled either.
    let mut other = storage.load("t").unwrap();
    assert!(storage.pull(&mut other).unwrap().appended.is_empty());
    // The next attempt writes the same records, whole.
    assert_eq!(session.changes(200).unwrap(), changes);
    storage.save(&mut session, 200);
    assert_eq!(exported(&storage.load("t").unwrap()), exported(&session));
    assert_eq!(storage.info("t").unwrap().messages, 6);
    // The other writer's pull brings them, and its own save follows them.
    let report = storage.pull(&mut other).unwrap();
    assert_eq!((report.appended.len(), report.commit), (3, 4));
}

#[test]
fn records_of_other_batches_after_the_tail_are_ignored() {
    let (session, storage) = tailed(4);
    let mark = |record: &StoredRecord| body_of(record)["tail"].clone();
    assert_eq!(mark(&storage.get(&data_key("t", Kind::Message, 4)))[0], 4);
    let stale = |n: u64, tail: TailMark| {
        let body = message_body(user("stale"), None, Some(tail), None);
        (data_key("t", Kind::Message, n), seal(data_key("t", Kind::Message, n), Kind::Message, &body).unwrap().value)
    };
    let cases = [
        // an older commit: a batch that was superseded
        vec![stale(5, TailMark(3, 5, 1, 1))],
        // the commit the tail has already
        vec![stale(5, TailMark(4, 5, 1, 1))],
        // a batch whose records belong to two attempts
        vec![stale(5, TailMark(5, 6, 1, 1)), stale(6, TailMark(6, 6, 1, 1))],
        // a batch ending before it starts, or past where a tail may reach
        vec![stale(5, TailMark(5, 4, 1, 1))],
        vec![stale(5, TailMark(5, 20, 1, 1))],
        // after a gap
        vec![stale(6, TailMark(5, 6, 1, 1))],
    ];
    for (i, records) in cases.into_iter().enumerate() {
        let mut copy = storage.clone();
        copy.0.extend(records);
        let mut loaded = copy.load("t").unwrap();
        assert_eq!(exported(&loaded), exported(&session), "case {i}");
        assert_eq!(copy.info("t").unwrap().messages, 4, "case {i}");
        // The next save writes over them.
        loaded.history.append_values(json!([assistant("five"), user("six")]), Format::OpenAi).unwrap();
        copy.save(&mut loaded, 300);
        assert_eq!(exported(&copy.load("t").unwrap()), exported(&loaded), "case {i}");
    }
}

#[test]
fn a_tail_another_writer_saved_is_pulled_before_a_save_and_nothing_interleaves() {
    let (mut first, mut storage) = tailed(2);
    let mut second = storage.load("t").unwrap();
    first.history.append_values(json!([assistant("A 1"), user("A 2")]), Format::OpenAi).unwrap();
    storage.save(&mut first, 300);
    second.history.append_value(assistant("B 1"), Format::OpenAi).unwrap();
    // B probes past what it saved: A's tail is there, and B pulls it before it saves.
    let plan = second.pull_plan(&storage.get(&meta_key("t"))).unwrap();
    assert!(plan.current && plan.keys.is_empty());
    assert_eq!(plan.tail[0], data_key("t", Kind::Message, 3));
    let report = storage.pull(&mut second).unwrap();
    assert_eq!((report.appended.clone(), report.commit), (vec!["m3".to_string(), "m4".to_string()], 3));
    assert_eq!(report.renumbered, [Renumbered { from: "m3".into(), to: "m5".into() }]);
    let changes = storage.save(&mut second, 400);
    assert_eq!((changes.records.len(), changes.commit), (1, 4), "a tail save after A's");
    let texts: Vec<String> =
        storage.load("t").unwrap().history.records().iter().map(|r| r.message.content.joined_text()).collect();
    assert_eq!(texts, ["message 1", "message 2", "A 1", "A 2", "B 1"]);
    storage.pull(&mut first).unwrap();
    assert_eq!(exported(&first), exported(&second));
    assert_eq!(exported(&storage.load("t").unwrap()), exported(&first));
    // A meta save by one writer (a title), then a tail save by the other: both seen.
    first.set_title(Some("t".into())).unwrap();
    storage.save(&mut first, 500);
    second.history.append_value(user("B 2"), Format::OpenAi).unwrap();
    storage.pull(&mut second).unwrap();
    assert_eq!(storage.save(&mut second, 600).records.len(), 1);
    storage.pull(&mut first).unwrap();
    assert_eq!(exported(&first), exported(&second));
    let info = storage.info("t").unwrap();
    assert_eq!((info.messages, info.commit, info.title.as_deref(), info.updated_at), (6, 6, Some("t"), 600));
    assert_eq!(info.tokens as usize, first.history.token_count().total);
}

#[test]
fn a_save_that_changes_more_than_messages_or_reaches_a_chunk_writes_the_meta_record() {
    let (mut session, mut storage) = tailed(2);
    session.history.append_value(assistant("three"), Format::OpenAi).unwrap();
    session.next_loop().unwrap();
    assert!(storage.save(&mut session, 300).records.iter().any(|r| r.key == meta_key("t")), "a counter changed");
    session.history.append_value(user("four"), Format::OpenAi).unwrap();
    assert!(!storage.save(&mut session, 301).records.iter().any(|r| r.key == meta_key("t")));
    let (mut long, mut storage) = tailed(CHUNK - 2);
    long.history.append_value(assistant("999"), Format::OpenAi).unwrap();
    assert_eq!(storage.save(&mut long, 1).records.len(), 1);
    long.history.append_value(user("1000"), Format::OpenAi).unwrap();
    let keys: Vec<Vec<String>> = storage.save(&mut long, 2).records.into_iter().map(|r| r.key).collect();
    assert_eq!(keys, [data_key("t", Kind::Chunk, CHUNK as u64), meta_key("t")]);
    assert_eq!(exported(&storage.load("t").unwrap()), exported(&long));
}

/// Session "v2" as version 2 wrote it (12 messages, a summary in force): FNV-1a checksums, and a
/// summary record holding the summary state alone.
const VERSION_2_RECORDS: &str = r##"[{"key":["r","v2","m","000000000001"],"value":"{\"v\":2,\"sum\":\"e97a3ceebdc0c20b\",\"body\":{\"message\":{\"role\":\"user\",\"content\":\"Look at src/part0.rs and say what it does, in detail please.\"}}}"},{"key":["r","v2","m","000000000002"],"value":"{\"v\":2,\"sum\":\"ae4b81092de80ca2\",\"body\":{\"message\":{\"role\":\"assistant\",\"content\":\"It parses part 0.\"}}}"},{"key":["r","v2","m","000000000003"],"value":"{\"v\":2,\"sum\":\"eb3150ecf20c7766\",\"body\":{\"message\":{\"role\":\"user\",\"content\":\"Look at src/part1.rs and say what it does, in detail please.\"}}}"},{"key":["r","v2","m","000000000004"],"value":"{\"v\":2,\"sum\":\"a9dc3e79e00ce66f\",\"body\":{\"message\":{\"role\":\"assistant\",\"content\":\"It parses part 1.\"}}}"},{"key":["r","v2","m","000000000005"],"value":"{\"v\":2,\"sum\":\"fa23e3e7a34054a1\",\"body\":{\"message\":{\"role\":\"user\",\"content\":\"Look at src/part2.rs and say what it does, in detail please.\"}}}"},{"key":["r","v2","m","000000000006"],"value":"{\"v\":2,\"sum\":\"266c7c788abbabec\",\"body\":{\"message\":{\"role\":\"assistant\",\"content\":\"It parses part 2.\"}}}"},{"key":["r","v2","m","000000000007"],"value":"{\"v\":2,\"sum\":\"926916699384c608\",\"body\":{\"message\":{\"role\":\"user\",\"content\":\"Look at src/part3.rs and say what it does, in detail please.\"}}}"},{"key":["r","v2","m","000000000008"],"value":"{\"v\":2,\"sum\":\"bd00eebf69ade745\",\"body\":{\"message\":{\"role\":\"assistant\",\"content\":\"It parses part 3.\"}}}"},{"key":["r","v2","m","000000000009"],"value":"{\"v\":2,\"sum\":\"d46215a24b4cba6f\",\"body\":{\"message\":{\"role\":\"user\",\"content\":\"Look at src/part4.rs and say what it does, in detail please.\"}}}"},{"key":["r","v2","m","000000000010"],"value":"{\"v\":2,\"sum\":\"29e52eae84718545\",\"body\":{\"message\":{\"role\":\"assistant\",\"content\":\"It parses part 4.\"}}}"},{"key":["r","v2","m","000000000011"],"value":"{\"v\":2,\"sum\":\"cc506168780acb05\",\"body\":{\"message\":{\"role\":\"user\",\"content\":\"Look at src/part5.rs and say what it does, in detail please.\"}}}"},{"key":["r","v2","m","000000000012"],"value":"{\"v\":2,\"sum\":\"1509f7c64de8e3d0\",\"body\":{\"message\":{\"role\":\"assistant\",\"content\":\"It parses part 5.\"}}}"},{"key":["r","v2","settings","000000000001"],"value":"{\"v\":2,\"sum\":\"02446040a5cf8868\",\"body\":{\"encoding\":\"o200k_base\",\"format\":\"openai\",\"maxLoops\":10,\"maxSnapshotChars\":null,\"metadata\":{}}}"},{"key":["r","v2","summary","000000000001"],"value":"{\"v\":2,\"sum\":\"52b7cc8209f4ce35\",\"body\":{\"current\":{\"requestId\":\"s1\",\"summarisedUntil\":\"m12\",\"untilIndex\":11,\"text\":\"{\\\"primaryRequest\\\":\\\"Look at src/part0.rs and say what it does, in detail please.\\\\n\\\\nLatest request: Look at src/part5.rs and say what it does, in detail please.\\\",\\\"userMessages\\\":[\\\"Look at src/part0.rs and say what it does, in detail please.\\\",\\\"Look at src/part1.rs and say what it does, in detail please.\\\",\\\"Look at src/part2.rs and say what it does, in detail please.\\\",\\\"Look at src/part3.rs and say what it does, in detail please.\\\",\\\"Look at src/part4.rs and say what it does, in detail please.\\\",\\\"Look at src/part5.rs and say what it does, in detail please.\\\"],\\\"files\\\":{\\\"src/part5.rs\\\":\\\"mentioned\\\",\\\"src/part4.rs\\\":\\\"mentioned\\\",\\\"src/part3.rs\\\":\\\"mentioned\\\",\\\"src/part2.rs\\\":\\\"mentioned\\\",\\\"src/part1.rs\\\":\\\"mentioned\\\",\\\"src/part0.rs\\\":\\\"mentioned\\\"}}\",\"tokens\":199,\"originalTokens\":144,\"compressionRate\":-0.3819444444444444,\"messageCount\":10,\"createdAt\":\"seq:1\",\"source\":\"extractive\"},\"inProgress\":null,\"generation\":1}}"},{"key":["s","v2"],"value":"{\"v\":2,\"sum\":\"18280eac40ef4cb4\",\"body\":{\"id\":\"v2\",\"createdAt\":1000,\"updatedAt\":1000,\"messages\":12,\"tokens\":189,\"commit\":1,\"chunked\":0,\"settings\":1,\"summary\":1,\"calibration\":0,\"turns\":0,\"loops\":0,\"subagentsSpawned\":0,\"turnStart\":0}}"}]"##;

#[test]
fn version_2_records_load_their_summary_counted_and_the_next_saves_write_the_current_version() {
    let records: Vec<StoredRecord> = serde_json::from_str(VERSION_2_RECORDS).unwrap();
    let mut storage = Storage(records.iter().map(|r| (r.key.clone(), r.value.clone())).collect());
    let mut session = storage.load("v2").unwrap();
    let summary = session.compactor.summary_state().current.clone().expect("the summary in force");
    assert_eq!((session.history.len(), summary.summarised_until.as_str(), summary.tokens), (12, "m12", 199));
    // Its summary's tokens have no counting tag: they are counted on load, and a count that does
    // not match its text is refused.
    let key = data_key("v2", Kind::Summary, 1);
    let body = body_of(&storage.get(&key)).to_string().replace(r#""tokens":199"#, r#""tokens":198"#);
    let sum = format!("{:016x}", checksum(&key, 2, Kind::Summary, &body));
    let mut miscounted = storage.clone();
    miscounted.0.insert(key.clone(), format!(r#"{{"v":2,"sum":"{sum}","body":{body}}}"#));
    let error = miscounted.load("v2").unwrap_err();
    assert!(error.message.contains("says it has 198 tokens, but its text has 199"), "{error}");

    // An append writes the meta record again (a tab still running version 2 stops at it), all in
    // the current version; the stored summary stays as it is until it changes.
    session.history.append_value(user("And part 6?"), Format::OpenAi).unwrap();
    let changes = storage.save(&mut session, 2000);
    assert_message_and_meta_in_this_version(&changes, "v2", 13);
    assert_eq!(exported(&storage.load("v2").unwrap()), exported(&session));
}

#[test]
fn a_stored_summary_counted_by_this_library_is_not_counted_again() {
    let mut session = Session::new("s", Encoding::O200kBase, 10).unwrap();
    ask_about_parts(&mut session, 6, |i| format!("Look at src/part{i}.rs and say what it does, in detail please."));
    session.build(&summarising(60, 40)).unwrap();
    let summary = session.compactor.summary_state().current.clone().expect("the build summarised");
    let mut storage = Storage::default();
    storage.save(&mut session, 1);
    let key = data_key("s", Kind::Summary, 1);
    let body = body_of(&storage.get(&key));
    assert_eq!(body["counted"], counting_tag(Encoding::O200kBase));
    assert_eq!(body["state"], serde_json::to_value(session.compactor.summary_state()).unwrap());
    assert_eq!(exported(&storage.load("s").unwrap()), exported(&session));

    // Text that is not what was counted, sealed anew: under this library's tag its count is
    // taken as stored (the checksum guards against damage; a forged count misleads a budget and
    // nothing else), under another tag it is counted, and refused.
    let longer = summary.text.replace("src/part0.rs", "src/part0.rs, src/part0.rs");
    let forged = |tag: &str, text: &str| {
        let mut body = body.clone();
        body["state"]["current"]["text"] = text.into();
        body["counted"] = tag.into();
        let text = body.to_string();
        let sum = checksum(&key, RECORD_VERSION, Kind::Summary, &text);
        let mut copy = storage.clone();
        copy.0.insert(key.clone(), format!(r#"{{"v":{RECORD_VERSION},"sum":"{sum:016x}","body":{text}}}"#));
        copy.load("s")
    };
    let tag = counting_tag(Encoding::O200kBase);
    let trusted = forged(&tag, &longer).unwrap();
    let current = trusted.compactor.summary_state().current.as_ref().unwrap();
    assert_eq!((current.text.as_str(), current.tokens), (longer.as_str(), summary.tokens));
    // What the store's import of a file checks (a fresh count of everything: js/store.ts
    // checkImported) refuses it.
    let recount = Session::import(exported(&trusted)).unwrap_err();
    assert!(recount.message.contains("the summary says it has"), "{recount}");
    let error = forged("0.0.1/o200k_base", &longer).unwrap_err();
    let counted = Encoding::O200kBase.count(&longer);
    assert!(
        error.message.contains(&format!("says it has {} tokens, but its text has {counted}", summary.tokens)),
        "{error}"
    );
    // An empty summary is refused either way.
    assert!(forged(&tag, " ").unwrap_err().message.contains("the summary is empty"));
}

#[test]
fn a_single_message_record_keeps_its_count_and_one_of_version_3_is_counted_on_load() {
    // Fewer messages than a chunk: each is a single record, which carries its count, so the
    // open of a session with no chunk yet (or the messages after its last) tokenizes nothing.
    let mut session = Session::new("few", Encoding::O200kBase, 10).unwrap();
    let mut storage = Storage::default();
    for i in 0..40 {
        let message = if i % 2 == 0 { user(&format!("question {i}")) } else { assistant(&format!("answer {i}")) };
        session.history.append_value(message, Format::OpenAi).unwrap();
        storage.save(&mut session, i as u64 + 1);
    }
    let key = data_key("few", Kind::Message, 7);
    let body = body_of(&storage.get(&key));
    assert_eq!(body["counted"], counting_tag(Encoding::O200kBase));
    let tokens = session.history.records()[6].tokens().expect("counted");
    assert_eq!(body["tokens"], serde_json::to_value(super::save::pack_tokens(tokens)).unwrap());
    let mut loaded = storage.load("few").unwrap();
    loaded.history.count_all();
    assert_eq!(loaded.history.counted_messages(), 0, "every count came from its record");
    assert_eq!(loaded.history.token_count(), session.history.token_count());

    // The same record as version 3 wrote it (no count), or counted by another version: that
    // message alone is counted on load, to the same total.
    let reseal = |version: u64, body: &Value| {
        let text = body.to_string();
        let sum = checksum(&key, version, Kind::Message, &text);
        let mut copy = storage.clone();
        copy.0.insert(key.clone(), format!(r#"{{"v":{version},"sum":"{sum:016x}","body":{text}}}"#));
        copy.load("few")
    };
    let mut version_3 = body.clone();
    version_3.as_object_mut().unwrap().retain(|field, _| field != "counted" && field != "tokens");
    let mut other_tag = body.clone();
    other_tag["counted"] = "0.0.1/o200k_base".into();
    for (version, body) in [(3, &version_3), (RECORD_VERSION, &other_tag)] {
        let mut loaded = reseal(version, body).unwrap();
        loaded.history.count_all();
        assert_eq!(loaded.history.counted_messages(), 1, "version {version}");
        assert_eq!(loaded.history.token_count(), session.history.token_count());
    }
    // A count without its tag, or not a list of whole numbers, is no message record.
    let mut untagged = body.clone();
    untagged.as_object_mut().unwrap().remove("counted");
    let mut negative = body.clone();
    negative["tokens"][0] = (-1).into();
    for forged in [untagged, negative] {
        let error = reseal(RECORD_VERSION, &forged).unwrap_err();
        assert_eq!(error.kind, ErrorKind::Corrupt);
        assert!(error.message.contains("not a message record"), "{error}");
    }
}

#[test]
fn pins_are_stored_with_the_settings_and_follow_their_messages_through_a_pull() {
    let mut first = Session::new("pins", Encoding::O200kBase, 10).unwrap();
    first.history.append_values(json!([user("demo"), assistant("ok"), user("the task")]), Format::OpenAi).unwrap();
    first.history.pin("m3").unwrap();
    let mut storage = Storage::default();
    let changes = storage.save(&mut first, 1);
    let settings = changes.records.iter().find(|r| r.key == data_key("pins", Kind::Settings, 1)).unwrap();
    assert_eq!(body_of(settings)["pinned"], json!(["m3"]));
    let mut second = storage.load("pins").unwrap();
    assert_eq!(second.history.pinned(), ["m3"]);
    assert_eq!(exported(&second)["history"]["pinned"], json!(["m3"]));

    // B pins a message of its own, not saved yet; A saves first, so B's message moves.
    first.history.append_values(json!([assistant("A")]), Format::OpenAi).unwrap();
    second.history.append_values(json!([assistant("B"), user("B's request")]), Format::OpenAi).unwrap();
    second.history.pin("m5").unwrap();
    storage.save(&mut first, 2);
    let report = storage.pull(&mut second).unwrap();
    assert!(report.renumbered.contains(&Renumbered { from: "m5".into(), to: "m6".into() }));
    assert_eq!(second.history.pinned(), ["m3", "m6"]);
    storage.save(&mut second, 3);
    storage.pull(&mut first).unwrap();
    assert_eq!(first.history.pinned(), ["m3", "m6"]);

    // Unpinned: the settings' next generation has no pins, as settings before pins existed.
    first.history.unpin("m3").unwrap();
    first.history.unpin("m6").unwrap();
    let changes = storage.save(&mut first, 4);
    let settings = changes.records.iter().find(|r| r.key[2] == "settings").unwrap();
    assert!(body_of(settings).get("pinned").is_none(), "{}", settings.value);
    assert!(storage.load("pins").unwrap().history.pinned().is_empty());
}

// ---------------------------------------------------------------------------------------------
// The frame: the context the last build sent, which the next build extends.

/// Builds within a budget the conversations below pass: compaction events (down to half the
/// budget, so that a tighter budget makes another), then appends.
fn budgeted() -> BuildOptions {
    BuildOptions {
        budget: Some(crate::compact::BudgetOptions {
            max_tokens: Some(900),
            low_water_ratio: Some(0.5),
            ..Default::default()
        }),
        ..BuildOptions::default()
    }
}

/// A build's request as JSON text, and its outcome without what it says of the prompt cache
/// (a reopened session has sent nothing before: its first build shares no prefix it knows of).
pub(crate) fn built(session: &mut Session, options: &BuildOptions) -> (String, crate::compact::BuildOutcome) {
    let mut outcome = session.build(options).unwrap();
    let request = session.compactor.request_value(&outcome.context).unwrap();
    outcome.context.receipt.cache = None;
    outcome.context.receipt.cost = None;
    outcome.context.marks = None;
    (serde_json::to_string(&request).unwrap(), outcome)
}

fn is_frame(record: &StoredRecord) -> bool {
    record.key.get(2).is_some_and(|segment| segment == "frame")
}

/// A session "f" whose builds (`budgeted`) made a compaction event, saved.
fn framed() -> (Session, Storage) {
    let mut session = Session::new("f", Encoding::O200kBase, 10).unwrap();
    ask_about_parts(&mut session, 24, |i| format!("Look at src/part{i}.rs please. {}", "detail ".repeat(30)));
    let first = session.build(&budgeted()).unwrap();
    assert!(first.context.receipt.cache.unwrap().event, "the history passes the budget");
    let mut storage = Storage::default();
    storage.save(&mut session, 1);
    (session, storage)
}

#[test]
fn the_frame_is_written_when_its_revision_changes_and_a_reopened_session_extends_it() {
    let (mut session, mut storage) = framed();
    let frame_key = data_key("f", Kind::Frame, 1);
    let record = storage.get(&frame_key);
    assert!(storage.get(&meta_key("f")).value.contains(r#""frame":1"#));
    let body = body_of(&record);
    assert_eq!(body["counted"], json!(counting_tag(Encoding::O200kBase)));
    assert!(body["frame"]["messages"].as_array().is_some_and(|m| !m.is_empty()), "{body}");

    // Appends and the builds between events write the new messages alone (tail saves).
    for i in 0..3 {
        session.history.append_value(user(&format!("and part {i}?")), Format::OpenAi).unwrap();
        let live = session.build(&budgeted()).unwrap();
        assert!(!live.context.receipt.cache.unwrap().event, "an append");
        let changes = storage.save(&mut session, 2 + i);
        assert_eq!(changes.records.len(), 1, "{:?}", changes.records.iter().map(|r| &r.key).collect::<Vec<_>>());
        assert_eq!(changes.records[0].key[2], "m");
    }
    // Reopened, it builds what the live session builds, byte for byte, and then exports the same
    // (its frame takes the messages the live one took since the revision at that build).
    let mut reopened = storage.load("f").unwrap();
    let without_frame = |session: &Session| {
        let mut export = exported(session);
        export["history"].as_object_mut().unwrap().remove("frame");
        export
    };
    assert_eq!(without_frame(&reopened), without_frame(&session));
    session.history.append_value(assistant("It parses all of them."), Format::OpenAi).unwrap();
    reopened.history.append_value(assistant("It parses all of them."), Format::OpenAi).unwrap();
    let (request, outcome) = built(&mut session, &budgeted());
    assert_eq!(built(&mut reopened, &budgeted()), (request.clone(), outcome));
    assert_eq!(exported(&reopened), exported(&session));
    // The live one extends the request before: the reopened one too, then.
    let frame_messages = reopened.compactor.frame_state(&reopened.history).unwrap().messages.len();
    assert!(frame_messages > 2);
    assert!(storage.save(&mut reopened, 10).records.iter().all(|r| !is_frame(r)), "nothing new to keep");

    // Another budget's event is a new revision: its frame is written, the old one removed.
    let tighter = BuildOptions {
        budget: Some(crate::compact::BudgetOptions {
            max_tokens: Some(500),
            low_water_ratio: Some(0.5),
            ..Default::default()
        }),
        ..BuildOptions::default()
    };
    let event = reopened.build(&tighter).unwrap();
    assert!(event.context.receipt.cache.unwrap().event);
    let changes = storage.save(&mut reopened, 11);
    assert!(changes.records.iter().any(|r| r.key == data_key("f", Kind::Frame, 2)));
    assert!(changes.remove.contains(&frame_key));
    assert!(!storage.0.contains_key(&frame_key));
    let again = storage.load("f").unwrap();
    assert_eq!(again.compactor.frame_state(&again.history), reopened.compactor.frame_state(&reopened.history));
}

#[test]
fn a_pull_brings_the_frame_another_writer_stored_and_its_next_build_extends_it() {
    let (mut first, mut storage) = framed();
    let mut second = storage.load("f").unwrap();
    // A serves the next turn: an event under a tighter budget; B, meanwhile, built on its own.
    let tighter = BuildOptions {
        budget: Some(crate::compact::BudgetOptions {
            max_tokens: Some(300),
            low_water_ratio: Some(0.5),
            ..Default::default()
        }),
        ..BuildOptions::default()
    };
    first.history.append_value(user("and now?"), Format::OpenAi).unwrap();
    assert!(first.build(&tighter).unwrap().context.receipt.cache.unwrap().event);
    second.build(&tighter).unwrap();
    storage.save(&mut first, 2);
    let report = storage.pull(&mut second).unwrap();
    assert_eq!(report.appended, ["m49"]);
    // (B's own summary, made by its build, gave way to A's as well.)
    assert!(report.superseded.iter().any(|part| part == "frame"), "B's own frame gave way to A's: {report:?}");
    assert_eq!(second.compactor.frame_state(&second.history), first.compactor.frame_state(&first.history));
    // B serves the turn after: it sends what A would have sent.
    for session in [&mut first, &mut second] {
        session.history.append_value(assistant("Here it is."), Format::OpenAi).unwrap();
    }
    let (request, outcome) = built(&mut first, &tighter);
    assert_eq!(built(&mut second, &tighter), (request, outcome));
    assert!(storage.save(&mut second, 3).records.iter().all(|r| !is_frame(r)), "the frame A stored");
    // A frame of its own that only its unsaved messages moved under: kept, and not written again.
    let mut third = storage.load("f").unwrap();
    third.history.append_value(user("from C"), Format::OpenAi).unwrap();
    first.history.append_value(user("from A"), Format::OpenAi).unwrap();
    storage.save(&mut first, 4);
    let before = third.compactor.frame_state(&third.history);
    let report = storage.pull(&mut third).unwrap();
    assert!(report.superseded.is_empty(), "{report:?}");
    assert_eq!(third.compactor.frame_state(&third.history), before);
    assert!(storage.save(&mut third, 5).records.iter().all(|r| !is_frame(r)));
}

#[test]
fn a_frame_that_does_not_fit_opens_the_session_without_it_and_the_next_build_says_so() {
    let (session, storage) = framed();
    let key = data_key("f", Kind::Frame, 1);
    let body = body_of(&storage.get(&key));
    let with_body = |edit: &dyn Fn(&mut Value)| {
        let mut body = body.clone();
        edit(&mut body);
        let mut copy = storage.clone();
        copy.0.insert(key.clone(), seal(key.clone(), Kind::Frame, &body).unwrap().value);
        copy
    };
    // What a session of the same history builds without any frame: its first build starts afresh.
    let mut older = exported(&session);
    older["history"].as_object_mut().unwrap().remove("frame");
    let (afresh, _) = built(&mut Session::import(older).unwrap(), &budgeted());
    let (_, fitting) = built(&mut storage.load("f").unwrap(), &budgeted());
    assert!(!fitting.context.receipt.notes.iter().any(|n| n.contains("frame")), "a frame that fits: no note");
    type Edit<'a> = &'a dyn Fn(&mut Value);
    let cases: [(&str, Edit); 4] = [
        ("ends at another message", &|b| b["frame"]["settledId"] = json!("m3")),
        ("which the history does not hold there", &|b| b["frame"]["messages"][1]["id"] = json!("m99")),
        ("not by this library", &|b| b["counted"] = json!("0.0.1/o200k_base")),
        ("is not readable", &|b| b["frame"]["messages"] = json!("none")),
    ];
    for (why, edit) in cases {
        let mut damaged = with_body(edit);
        let mut reopened = damaged.load("f").expect("a frame that does not fit fails no load");
        assert_eq!(exported(&reopened)["history"]["messages"], exported(&session)["history"]["messages"]);
        assert!(reopened.compactor.frame_state(&reopened.history).is_none(), "{why}: no frame");
        let (request, next) = built(&mut reopened, &budgeted());
        assert_eq!(request, afresh, "{why}: built as without a frame");
        assert!(reopened.compactor.frame_state(&reopened.history).is_some(), "{why}: a frame of its own now");
        let note = next.context.receipt.notes.last().cloned().unwrap_or_default();
        assert!(note.contains("the stored frame") && note.contains(why), "{why}: {note}");
        // Said once: the build after has no such note.
        assert!(!reopened.build(&budgeted()).unwrap().context.receipt.notes.iter().any(|n| n.contains("frame")));
        // Its next save stores its own frame, under the next generation.
        let changes = damaged.save(&mut reopened, 5);
        assert!(changes.records.iter().any(|r| r.key == data_key("f", Kind::Frame, 2)), "{why}");
        assert!(changes.remove.contains(&key));
        assert_eq!(built(&mut damaged.load("f").unwrap(), &budgeted()), built(&mut reopened, &budgeted()));
    }
    // A frame record that fails its checksum, or is missing, is damage, as for every kind.
    let mut flipped = storage.clone();
    flipped.0.insert(key.clone(), storage.get(&key).value.replacen("\"tokens\":", "\"tokens\": ", 1));
    let error = flipped.load("f").unwrap_err();
    assert_eq!((error.kind, error.path.as_deref()), (ErrorKind::Corrupt, Some("r/f/frame/000000000001")));
    let mut missing = storage.clone();
    missing.0.remove(&key);
    assert_eq!(missing.load("f").unwrap_err().kind, ErrorKind::Corrupt);
}

/// Records of version 4 (no frame), written by the library before frames were kept: a session
/// of three messages after one build.
const VERSION_4_RECORDS: &str = r#"[{"key":["r","v4","m","000000000001"],"value":"{\"v\":4,\"sum\":\"95dd28cf378c595c\",\"body\":{\"message\":{\"role\":\"system\",\"content\":\"You book flights.\"},\"counted\":\"0.1.0/o200k_base\",\"tokens\":[8,4,4,0,0,0,0,0,0]}}"},{"key":["r","v4","m","000000000002"],"value":"{\"v\":4,\"sum\":\"db0ea237c8851e20\",\"body\":{\"message\":{\"role\":\"user\",\"content\":\"Fly me to Lisbon\"},\"counted\":\"0.1.0/o200k_base\",\"tokens\":[8,4,4,0,0,0,0,0,0]}}"},{"key":["r","v4","m","000000000003"],"value":"{\"v\":4,\"sum\":\"f290f0ce9f675386\",\"body\":{\"message\":{\"role\":\"assistant\",\"content\":\"Booked.\"},\"counted\":\"0.1.0/o200k_base\",\"tokens\":[6,4,2,0,0,0,0,0,0]}}"},{"key":["r","v4","settings","000000000001"],"value":"{\"v\":4,\"sum\":\"b02573e55303c7a3\",\"body\":{\"encoding\":\"o200k_base\",\"format\":\"openai\",\"maxLoops\":10,\"maxSnapshotChars\":null,\"metadata\":{}}}"},{"key":["s","v4"],"value":"{\"v\":4,\"sum\":\"c69e67d9e2ad5b29\",\"body\":{\"id\":\"v4\",\"title\":\"Written by version 4\",\"createdAt\":1000,\"updatedAt\":1000,\"messages\":3,\"tokens\":25,\"commit\":1,\"chunked\":0,\"settings\":1,\"summary\":0,\"calibration\":0,\"turns\":0,\"loops\":0,\"subagentsSpawned\":0,\"turnStart\":0}}"}]"#;

#[test]
fn version_4_records_load_without_a_frame_and_the_next_save_stores_one() {
    let records: Vec<StoredRecord> = serde_json::from_str(VERSION_4_RECORDS).unwrap();
    let mut storage = Storage(records.iter().map(|r| (r.key.clone(), r.value.clone())).collect());
    let mut session = storage.load("v4").unwrap();
    assert!(session.compactor.frame_state(&session.history).is_none());
    assert_eq!((session.title(), session.history.len()), (Some("Written by version 4"), 3));
    let first = session.build(&budgeted()).unwrap();
    assert!(first.context.receipt.notes.is_empty(), "no frame stored is no frame dropped");
    session.history.append_value(user("And back?"), Format::OpenAi).unwrap();
    let changes = storage.save(&mut session, 2000);
    let keys: Vec<Vec<String>> = changes.records.iter().map(|r| r.key.clone()).collect();
    assert_eq!(keys, [data_key("v4", Kind::Message, 4), data_key("v4", Kind::Frame, 1), meta_key("v4")]);
    let prefix = format!(r#"{{"v":{RECORD_VERSION},"sum":""#);
    assert!(changes.records.iter().all(|r| r.value.starts_with(&prefix)));
    let mut reopened = storage.load("v4").unwrap();
    assert_eq!(exported(&reopened), exported(&session));
    assert_eq!(built(&mut reopened, &budgeted()), built(&mut session, &budgeted()));
}

#[test]
fn a_frame_record_is_ids_and_short_forms() {
    // A long session: 2,000 messages (long tool outputs among them) under a 6,000-token budget,
    // built after every exchange, so that its frame holds compressed outputs and a summary.
    let mut session = Session::new("long", Encoding::O200kBase, 10).unwrap();
    let options = BuildOptions {
        budget: Some(crate::compact::BudgetOptions { max_tokens: Some(6_000), ..Default::default() }),
        summary: Some(SummaryOptions::default()),
        ..BuildOptions::default()
    };
    let mut storage = Storage::default();
    let (mut largest, mut frames, mut events, mut history_bytes) = (0usize, 0usize, 0usize, 0usize);
    for i in 0..500 {
        let call = format!("call_{i}");
        let turn = json!([
            user(&format!("Step {i}: read src/file{i}.rs and fix what fails.")),
            {"role": "assistant", "content": null, "tool_calls": [{"id": call, "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\":\"src/file{i}.rs\"}}")}}]},
            {"role": "tool", "tool_call_id": call, "content": format!("fn f{i}() {{\n{}}}\n", "    let x = compute(alpha, beta, gamma);\n".repeat(60))},
            assistant(&format!("Fixed src/file{i}.rs: the call to compute had its arguments in the wrong order.")),
        ]);
        history_bytes += turn.to_string().len();
        session.history.append_values(turn, Format::OpenAi).unwrap();
        let outcome = session.build(&options).unwrap();
        events += usize::from(outcome.context.receipt.cache.is_some_and(|cache| cache.event));
        for record in storage.save(&mut session, i as u64).records {
            if is_frame(&record) {
                largest = largest.max(record.value.len());
                frames += 1;
            }
        }
    }
    let frame = session.compactor.frame_state(&session.history).unwrap();
    let record = storage.records("long").into_iter().find(is_frame).unwrap();
    eprintln!(
        "2,000 messages ({history_bytes} bytes): {frames} frame records written over 500 saves ({events} \
         compaction events), the largest {largest} bytes; the last {} bytes for {} context messages",
        record.value.len(),
        frame.messages.len()
    );
    // A few kilobytes: a summary and a handful of reduced outputs, the rest ids.
    assert!(largest < 40_000, "{largest} bytes");
    assert!(frames <= events + 1, "written at events, not at every save: {frames} for {events} events");
    let mut reopened = storage.load("long").unwrap();
    assert_eq!(built(&mut reopened, &options), built(&mut session, &options));
}
