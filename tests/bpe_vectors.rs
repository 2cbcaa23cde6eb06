//! Every cl100k_base / o200k_base vector of the token fixtures, against the expected ids and
//! tiktoken-rs; plus hand-picked edge cases of the two patterns.
mod common;
use common::*;
use context_compactor::bpe::BpeEncoding;

#[test]
fn token_vectors_of_both_encodings() {
    let plans = token_vectors();
    let count = |e: &str| plans.iter().filter(|p| p.0 == e).count();
    assert_eq!(count("cl100k_base"), 50);
    assert_eq!(count("o200k_base"), 50);
    for (name, sample, ids) in &plans {
        let enc = match name.as_str() {
            "cl100k_base" => BpeEncoding::Cl100kBase,
            "o200k_base" => BpeEncoding::O200kBase,
            _ => continue,
        };
        assert_same(enc, sample);
        assert_eq!(&ours(enc).encode(sample), ids, "{name} {sample:?}");
    }
}

#[test]
fn cookbook_vectors() {
    let s = std::fs::read_to_string(fixtures().join("tokens/openai-cookbook-chat-token-counts.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&s).unwrap();
    let mut n = 0;
    for vec in v["encoding_vectors"].as_array().unwrap() {
        let enc = match vec["encoding"].as_str().unwrap() {
            "cl100k_base" => BpeEncoding::Cl100kBase,
            "o200k_base" => BpeEncoding::O200kBase,
            _ => continue,
        };
        let text = vec["text"].as_str().unwrap();
        let ids: Vec<u32> = vec["ids"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect();
        assert_same(enc, text);
        assert_eq!(ours(enc).encode(text), ids, "{text:?}");
        n += 1;
    }
    assert_eq!(n, 8);
    // Every other text of that file too.
    let mut texts = Vec::new();
    json_texts(&v, &mut texts);
    for t in &texts {
        for enc in ENCODINGS {
            assert_same(enc, t);
        }
    }
}

#[test]
fn pattern_edge_cases() {
    let long_word = "a".repeat(300);
    let long_mixed = "aB".repeat(150) + "xyzzy";
    let long_spaces = " ".repeat(500) + "x";
    let cases: Vec<&str> = vec![
        "",
        " ",
        "  ",
        "\n",
        "\r\n",
        " \n",
        "\n ",
        "a\n\n b",
        "a  \n  b",
        "x   ",
        "x \t ",
        "x\u{a0}\u{a0}y",
        "'s",
        "'S",
        "'ſ",
        "'ll",
        "'LL",
        "'lL",
        "'re",
        "'Re",
        "'ve",
        "'VE",
        "'m",
        "'d",
        "'t",
        "'x",
        "''s",
        " 's",
        "don't",
        "DON'T",
        "I'm",
        "we'RE",
        "it'ſ",
        "you'll",
        "they've",
        "he'd",
        "Mc'Donald",
        "'",
        "ǅemal",
        "ʰa",
        "ªb",
        "e\u{301}",
        "\u{301}A",
        "\u{301}a",
        "A\u{301}b",
        "ABCdef",
        "abcDEF",
        "ǅǅǅ",
        "123",
        "1234567",
        "١٢٣٤",
        "½²³",
        "Ⅻ",
        " 12",
        "a1b2",
        "!!!",
        " !!!",
        "!!!\n\n",
        "!/\n/",
        "a//b",
        " /\r\n",
        "...\r\n\r\n",
        "—",
        " —\n",
        "👋🏽",
        "👨‍👩‍👧‍👦",
        "🇪🇸🇫🇷",
        "❤️",
        " 👋",
        "日本語のテキスト",
        "한국어 텍스트",
        "नमस्ते दुनिया",
        "\u{feff}x",
        "\u{200b}",
        "\\ud800",
        "\u{fffd}",
        "\0\u{1}\u{7f}",
        "\u{85}x",
        "\u{2028}\u{2029}",
        "\u{3000}x",
        "\t\tx",
        " \u{3000}\n",
        "\r",
        "\r\r\n\n",
        "a\r",
        "x \r\n ",
        "\u{b}\u{c}",
        &long_word,
        &long_mixed,
        &long_spaces,
    ];
    for c in &cases {
        for enc in ENCODINGS {
            assert_same(enc, c);
        }
    }
    // Every pair and triple of a small alphabet of tricky chars.
    let alphabet = [
        "a", "B", "ǅ", "ʰ", "ª", "\u{301}", "1", "٣", " ", "\t", "\n", "\r", "\u{a0}", "'", "s", "L", "/", "!", "👋",
        "日", "\u{3000}", "ſ",
    ];
    for x in alphabet {
        for y in alphabet {
            for z in alphabet {
                let s = format!("{x}{y}{z}");
                for enc in ENCODINGS {
                    assert_same(enc, &s);
                }
            }
        }
    }
}

/// The embedded tables (o200k_base standalone, cl100k_base coded against it) give every rank
/// the bytes tiktoken-rs gives it, whichever split of each token build.rs chose to code.
#[test]
fn every_rank_decodes_as_in_tiktoken_rs() {
    for enc in ENCODINGS {
        let (theirs, ours) = (reference(enc), ours(enc));
        for rank in 0..ours.n_tokens() as u32 {
            assert_eq!(
                ours.decode_bytes(&[rank]).unwrap(),
                theirs.decode_bytes(&[rank]).unwrap(),
                "{enc:?} rank {rank}"
            );
        }
    }
}

/// Runs over a megabyte that the pre-tokeniser cannot split (one letter repeated, punctuation,
/// a word of random letters) tokenize as tiktoken-rs tokenizes them, id for id, though they are
/// merged a window at a time (`bpe::merge::Windows`). (A run of spaces goes through tiktoken-rs's
/// regex lookahead, whose backtracking limit fancy-regex reaches past some 500,000 spaces: that
/// one is compared at 300,000, still five windows.)
#[test]
fn runs_over_a_megabyte_tokenize_as_tiktoken_does() {
    let mut x = 7u64;
    let random_word: String = (0..(1 << 20) + 4321)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(b'a' + (x % 26) as u8)
        })
        .collect();
    let runs = [
        "a".repeat((1 << 20) + 12_345),
        "=".repeat((1 << 20) + 1),
        format!("x{}y", " ".repeat(300_007)),
        "-_".repeat((1 << 19) + 99),
        random_word,
    ];
    for enc in ENCODINGS {
        for text in &runs {
            let want = reference(enc).encode_ordinary(text);
            let got = ours(enc).encode(text);
            assert!(
                got == want,
                "{enc:?}: a {}-byte run starting {:?}: {} ids, tiktoken-rs {}",
                text.len(),
                &text[..10],
                got.len(),
                want.len()
            );
            assert_eq!(ours(enc).count_exact(text), (want.len(), true));
        }
    }
}
