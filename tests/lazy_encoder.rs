//! What builds an encoder (decodes its rank table: ~15 ms for o200k_base, several times that in
//! a page whose wasm is not optimised yet): only a count. A test binary of its own, since the
//! encoders are built once per process and any other test would build them first.

use context_compactor::bpe::{BpeEncoder, BpeEncoding};
use context_compactor::message::Format;
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use serde_json::json;

#[test]
#[cfg(feature = "embedded-ranks")]
fn a_session_is_made_and_imported_without_decoding_a_table_until_something_is_counted() {
    let built = || BpeEncoder::is_built(BpeEncoding::O200kBase);
    let encoding = Encoding::parse("o200k_base").unwrap();
    let mut session = Session::new("main", encoding, 10).unwrap();
    session
        .history
        .append_value(json!({"role": "user", "content": "Book a flight to Paris."}), Format::OpenAi)
        .unwrap();
    session.history.append_value(json!({"role": "assistant", "content": "Which day?"}), Format::OpenAi).unwrap();
    let exported = serde_json::to_value(session.export().unwrap()).unwrap();
    // Reading the export names the encoding (its `Deserialize` checks that it can count).
    let mut imported = Session::import(exported).unwrap();
    assert!(!built(), "no table is decoded before a count");

    assert_eq!(encoding.count("hello world"), 2);
    assert!(built());
    assert_eq!(imported.history.token_count().messages, session.history.token_count().messages);
}

/// A stored session with its summary loads without decoding a table: the chunks keep their
/// messages' counts and the summary record its summary's (the decode was ~15 ms of a
/// warm open). The session is made and saved in a child process (this test again, with
/// `LAZY_STEP=save`), since making it counts, and loaded in another (`LAZY_STEP=load`), which
/// asserts; this process counts nothing, so the other test here may run beside it.
#[test]
#[cfg(feature = "embedded-ranks")]
fn a_stored_session_with_its_summary_loads_without_decoding_a_table() {
    use context_compactor::compact::{BuildOptions, SummaryOptions};
    use context_compactor::session::records::StoredRecord;
    use std::io::Write;
    use std::process::{Command, Stdio};

    const NAME: &str = "a_stored_session_with_its_summary_loads_without_decoding_a_table";
    match std::env::var("LAZY_STEP").as_deref() {
        Ok("save") => {
            let mut session = Session::new("lazy", Encoding::O200kBase, 10).unwrap();
            // Past a chunk, so that counts come from a chunk record and from single records alike.
            for i in 0..520 {
                let text = format!("Look at src/part{i}.rs and say what it does, in detail please.");
                let pair = json!([{"role": "user", "content": text}, {"role": "assistant", "content": format!("It parses part {i}.")}]);
                session.history.append_values(pair, Format::OpenAi).unwrap();
            }
            let summary = SummaryOptions { trigger_tokens: Some(2_000), ..Default::default() };
            session.build(&BuildOptions { summary: Some(summary), ..Default::default() }).unwrap();
            assert!(session.compactor.summary_state().current.is_some(), "the build summarised");
            let changes = session.changes(1).unwrap();
            println!("{}", serde_json::to_string(&changes.records).unwrap());
            return;
        }
        Ok("load") => {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut text).unwrap();
            let records: Vec<StoredRecord> = serde_json::from_str(&text).unwrap();
            let session = Session::load(&records).unwrap();
            assert!(session.compactor.summary_state().current.is_some());
            assert!(!BpeEncoder::is_built(BpeEncoding::O200kBase), "the load decoded the o200k_base table");
            return;
        }
        _ => {}
    }
    let step = |name: &str, input: &[u8]| {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([NAME, "--exact", "--nocapture", "--test-threads=1"])
            .env("LAZY_STEP", name)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(input).unwrap();
        let output = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "the {name} step failed: {stderr}");
        output.stdout
    };
    let saved = step("save", b"");
    // The libtest harness prints around the test's output, on its line: the records are the array.
    let text = String::from_utf8(saved).unwrap();
    let start = text.find("[{").expect("the records");
    let records = text[start..].lines().next().unwrap_or_default();
    step("load", records.as_bytes());
}
