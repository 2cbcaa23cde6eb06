//! Property tests: random strings built from the troublesome parts of the two patterns, id
//! for id against tiktoken-rs (1,000,000 strings, each checked with both encodings), and
//! the pre-tokeniser's pieces against fancy-regex running the very patterns tiktoken-rs uses.
//! `BPE_PROP_CASES` overrides the number of strings.
mod common;
use common::*;
use context_compactor::bpe::{split_pieces, BpeEncoding};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

const FRAGMENTS: &[&str] = &[
    // whitespace
    " ",
    " ",
    " ",
    "  ",
    "   ",
    "\t",
    "\n",
    "\n",
    "\r\n",
    "\r",
    "\n\n",
    " \n",
    "\u{a0}",
    "\u{3000}",
    "\u{2028}",
    "\u{85}",
    "\u{b}",
    "\u{c}",
    "\u{2009}",
    "\u{1680}",
    // contractions, both cases, and near misses
    "'s",
    "'S",
    "'t",
    "'T",
    "'re",
    "'RE",
    "'Re",
    "'rE",
    "'ve",
    "'VE",
    "'m",
    "'M",
    "'ll",
    "'LL",
    "'Ll",
    "'d",
    "'D",
    "'ſ",
    "'",
    "''",
    "'x",
    "'r",
    "'l",
    "'v",
    // words
    "the",
    "The",
    "THE",
    "hello",
    "World",
    "don",
    "McDonald",
    "iPhone",
    "JSON",
    "camelCase",
    "snake_case",
    "a",
    "I",
    "x",
    "ab",
    // digits
    "0",
    "7",
    "42",
    "123",
    "2024",
    "3.14",
    "1,000",
    "١٢٣",
    "½",
    "²",
    "Ⅻ",
    "𝟘",
    // punctuation, code, JSON
    ".",
    ",",
    "!",
    "?",
    ":",
    ";",
    "-",
    "--",
    "—",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "\"",
    "\"\":",
    "/",
    "//",
    "\\",
    "<",
    ">",
    "</",
    "/>",
    "=>",
    "::",
    "#",
    "@",
    "$",
    "%",
    "&&",
    "||",
    "*",
    "_",
    "`",
    "```",
    "~",
    "^",
    "|",
    // letters of every class: Lt, Lm, Lo, Ll/Lu outside ASCII, marks
    "ǅ",
    "ǈ",
    "ʰ",
    "ˆ",
    "ª",
    "º",
    "ß",
    "É",
    "é",
    "ñ",
    "Ω",
    "ω",
    "Ж",
    "ж",
    "e\u{301}",
    "\u{301}",
    "\u{20dd}",
    "\u{0903}",
    "\u{64b}",
    "ا",
    "ب",
    "ि",
    "न",
    "ก",
    "\u{e31}",
    // CJK, other scripts
    "日本",
    "語",
    "中文",
    "한국어",
    "テスト",
    "ｶﾀｶﾅ",
    "Привет",
    "مرحبا",
    "नमस्ते",
    "สวัสดี",
    // emoji and ZWJ sequences
    "😀",
    "👋🏽",
    "👨‍👩‍👧‍👦",
    "🇪🇸",
    "❤️",
    "\u{200d}",
    "\u{fe0f}",
    "🏳️‍🌈",
    // invalid-looking input and odd code points
    "\\ud800",
    "\\udc00",
    "\\u{dfff}",
    "\u{fffd}",
    "\u{feff}",
    "\u{200b}",
    "\0",
    "\u{1}",
    "\u{7f}",
    "\u{e000}",
    "\u{10ffff}",
    "\u{e0041}",
];

fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        12 => prop::sample::select(FRAGMENTS).prop_map(str::to_string),
        2 => any::<char>().prop_map(|c| c.to_string()),
        1 => "[a-zA-Z]{1,12}",
        1 => "[ \t\r\n]{1,6}",
        1 => "[0-9]{1,8}",
        // rarely, a long word: pieces of 100+ bytes take the heap merge path
        1 => prop::sample::select(&["a", "ab", "xyz", "é", "日", "!"][..])
            .prop_flat_map(|s| (Just(s), 20usize..80))
            .prop_map(|(s, n)| s.repeat(n)),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..14).prop_map(|v| v.concat())
}

fn cases(default: u32) -> u32 {
    std::env::var("BPE_PROP_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn runner(cases: u32) -> TestRunner {
    TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() })
}

#[test]
fn ids_match_tiktoken_rs() {
    // A custom runner rather than `proptest!`, to run the million cases without per-case
    // persistence; failures still shrink and print the minimal string.
    let mut r = runner(cases(1_000_000));
    r.run(&text(), |s| {
        for enc in ENCODINGS {
            let want = reference(enc).encode_ordinary(&s);
            let ours = ours(enc);
            prop_assert_eq!(ours.encode(&s), want.clone(), "{:?} {:?} pieces {:?}", enc, s, split_pieces(enc, &s));
            prop_assert_eq!(ours.count(&s), want.len());
        }
        Ok(())
    })
    .unwrap();
}

const CL100K_PAT: &str = r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s";

#[test]
fn pieces_match_fancy_regex() {
    // The pattern strings exactly as tiktoken-rs compiles them.
    let o200k = fancy_regex::Regex::new(tiktoken_rs::O200K_BASE_PAT_STR).unwrap();
    let cl100k = fancy_regex::Regex::new(CL100K_PAT).unwrap();
    let mut r = runner(cases(1_000_000) / 5);
    r.run(&text(), |s| {
        for (enc, re) in [(BpeEncoding::O200kBase, &o200k), (BpeEncoding::Cl100kBase, &cl100k)] {
            let want: Vec<&str> = re.find_iter(&s).map(|m| m.unwrap().as_str()).collect();
            prop_assert_eq!(split_pieces(enc, &s), want, "{:?} {:?}", enc, s);
        }
        Ok(())
    })
    .unwrap();
}
