//! Every text of the conversation fixtures, id for id against tiktoken-rs.
mod common;
use common::*;

#[test]
fn every_fixture_text() {
    let mut n = 0;
    for (_file, texts) in fixture_texts() {
        for t in &texts {
            for enc in ENCODINGS {
                assert_same(enc, t);
            }
            n += 1;
        }
    }
    assert!(n > 10_000, "only {n} texts");
}

#[test]
fn bulk_concatenation() {
    // Past a megabyte: the texts of the airline runs, joined, as many times as it takes.
    let once = airline_texts().join("\n");
    let all = vec![once.as_str(); 1_000_000 / once.len() + 1].join("\n");
    assert!(all.len() > 1_000_000);
    for enc in ENCODINGS {
        assert_same(enc, &all);
    }
}
