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
