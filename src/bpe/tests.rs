use super::*;

static CL100K_STANDALONE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cl100k_base.cctab"));
static O200K_STANDALONE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.cctab"));

/// The lite build's path: nothing until `load_ranks`, then the same encoder. (With embedded
/// ranks, `load_ranks` of a genuine table installs it, or is a no-op once built.)
#[test]
fn load_ranks_installs_standalone_tables() {
    #[cfg(not(feature = "embedded-ranks"))]
    assert_eq!(BpeEncoder::get(BpeEncoding::Cl100kBase).unwrap_err().kind(), BpeErrorKind::RanksNotLoaded);
    // cl100k first: the standalone table needs no o200k.
    load_ranks(BpeEncoding::Cl100kBase, CL100K_STANDALONE).unwrap();
    load_ranks(BpeEncoding::O200kBase, O200K_STANDALONE).unwrap();
    // Already loaded: idempotent.
    load_ranks(BpeEncoding::O200kBase, O200K_STANDALONE).unwrap();
    let c = BpeEncoder::get(BpeEncoding::Cl100kBase).unwrap();
    let o = BpeEncoder::get(BpeEncoding::O200kBase).unwrap();
    assert_eq!(c.encode("hello world"), vec![15339, 1917]);
    assert_eq!(o.encode("hello world"), vec![24912, 2375]);
}

#[test]
fn load_ranks_checks_tables() {
    // A table of the other encoding, a truncated one and a flipped byte are all refused by
    // checksum before decoding, whether or not the encoding is already installed.
    load_ranks(BpeEncoding::O200kBase, O200K_STANDALONE).unwrap();
    let refused = |enc, t: &[u8]| load_ranks(enc, t).unwrap_err().kind();
    assert_eq!(refused(BpeEncoding::Cl100kBase, O200K_STANDALONE), BpeErrorKind::InvalidTable);
    assert_eq!(refused(BpeEncoding::O200kBase, &O200K_STANDALONE[..1000]), BpeErrorKind::InvalidTable);
    let mut t = O200K_STANDALONE.to_vec();
    t[5000] ^= 1;
    assert_eq!(refused(BpeEncoding::O200kBase, &t), BpeErrorKind::InvalidTable);
}

#[test]
fn ascii_fast_path_matches_generated_tables() {
    for b in 0u8..128 {
        let blk = generated::BMP_INDEX[b as usize >> 6] as usize;
        assert_eq!(
            pretok::class_at_for_test(&[b], 0).0,
            generated::BMP_BLOCKS[blk * 64 + (b as usize & 63)],
            "byte {b:#x}"
        );
    }
}

#[cfg(feature = "embedded-ranks")]
#[test]
fn small_examples() {
    let o = BpeEncoder::get(BpeEncoding::O200kBase).unwrap();
    let c = BpeEncoder::get(BpeEncoding::Cl100kBase).unwrap();
    assert_eq!(o.encode(""), Vec::<u32>::new());
    assert_eq!(o.count(""), 0);
    assert_eq!(o.encode("hello world"), vec![24912, 2375]);
    assert_eq!(c.encode("hello world"), vec![15339, 1917]);
    assert_eq!(o.decode_bytes(&o.encode("héllo 👋🏽 wörld")).unwrap(), "héllo 👋🏽 wörld".as_bytes());
    assert_eq!(c.decode_bytes(&[100257]).unwrap(), b"<|endoftext|>");
    assert_eq!(o.decode_bytes(&[199999]).unwrap(), b"<|endoftext|>");
    assert_eq!(o.decode_bytes(&[199998]).unwrap_err().kind(), BpeErrorKind::UnknownToken);
    assert_eq!(o.n_tokens(), 199_998);
    assert_eq!(c.n_tokens(), 100_256);
}

#[test]
fn load_ranks_rejects_foreign_tables() {
    let e = load_ranks(BpeEncoding::Cl100kBase, b"nonsense").unwrap_err();
    assert_eq!(e.kind(), BpeErrorKind::InvalidTable);
    assert!(e.message().contains("bad magic or too short"), "{e}");
    // The decoder never panics on garbage.
    for len in [0usize, 3, 16, 271, 272, 300, 5000] {
        let mut t = vec![0xa5u8; len];
        if len >= 4 {
            t[..4].copy_from_slice(table::MAGIC);
        }
        if len >= 8 {
            t[4] = 1;
        }
        assert!(table::decode(&t, None).is_err());
    }
}

#[cfg(feature = "embedded-ranks")]
#[test]
fn table_decoding_is_checked() {
    // Flip bytes all over a real table: decode must return Ok or Err, never panic.
    let mut t = embedded::O200K.to_vec();
    let mut x = 12345u64;
    for _ in 0..200 {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let i = (x >> 33) as usize % t.len();
        t[i] ^= (x >> 13) as u8 | 1;
        let _ = table::decode(&t, None);
    }
    // Standalone and delta cl100k tables decode to the same tokens.
    let base = table::decode(embedded::O200K, None).unwrap();
    let delta = table::decode(embedded::CL100K_DELTA, Some(&base)).unwrap();
    assert_eq!(delta.len(), 100_256);
    let standalone = table::decode(CL100K_STANDALONE, None).unwrap();
    assert_eq!((&standalone.bytes, &standalone.offs), (&delta.bytes, &delta.offs));
    assert!(generated::CL100K_CHECKSUMS.contains(&table::table_checksum(CL100K_STANDALONE)));
    assert!(table::decode(embedded::CL100K_DELTA, None).is_err());
    assert!(generated::CL100K_CHECKSUMS.contains(&table::table_checksum(embedded::CL100K_DELTA)));
    assert!(generated::O200K_CHECKSUMS.contains(&table::table_checksum(embedded::O200K)));
}

/// A standalone table of the 256 byte ranks (rank r is byte 255 - r) and `pairs`, in rank order
/// from 256, coded with `firsts` as each token's first byte (the true ones if `None`).
fn forge(pairs: &[(u32, u32)], firsts: Option<&[u8]>) -> Vec<u8> {
    use super::format::{tail, Contexts, TAILS};
    let mut t = b"CCBT".to_vec();
    t.extend_from_slice(&[table::VERSION, 0, 0, 0]);
    t.extend_from_slice(&(256 + pairs.len() as u32).to_le_bytes());
    t.extend_from_slice(&(pairs.len() as u32).to_le_bytes());
    t.extend((0..=255u8).rev());
    // Each token's first byte and last two, all the coding looks at (lengths may double).
    let mut tokens: Vec<Vec<u8>> = (0..=255u8).rev().map(|b| vec![b]).collect();
    let (mut tail_uses, mut first_uses) = ([0u32; TAILS], [0u32; 256]);
    for &(a, b) in pairs {
        let part = |x: u32| tokens.get(x as usize).cloned().unwrap_or_default();
        tail_uses[tail(&part(a))] += 1;
        first_uses[part(b).first().copied().unwrap_or(0) as usize] += 1;
        let joined = [part(a), part(b)].concat();
        tokens.push(match joined[..] {
            [first, .., x, y] if joined.len() > 3 => vec![first, x, y],
            _ => joined,
        });
    }
    let ctx = Contexts::choose(&tail_uses, &first_uses);
    let ends: Vec<(u8, u8)> =
        tokens.iter().enumerate().map(|(r, tok)| (firsts.map_or(tok[0], |f| f[r]), ctx.tails[tail(tok)])).collect();
    let ranked: Vec<(u32, u32, u32)> = pairs.iter().enumerate().map(|(i, &(a, b))| (256 + i as u32, a, b)).collect();
    super::format::push_pairs(&mut t, &ctx, &ends, &ranked).unwrap();
    t
}

#[test]
fn forged_tables_are_errors_not_aborts() {
    // A well-formed small table decodes.
    let t = forge(&[(0, 1), (256, 2)], None);
    let ok = table::decode(&t, None).unwrap();
    assert_eq!(ok.len(), 258);
    assert_eq!(ok.token(257).unwrap(), [255, 254, 253]);
    // Token lengths doubling at every rank: refused long before memory runs out.
    let doubling: Vec<(u32, u32)> = (256..256 + 64).map(|r| (r - 1, r - 1)).collect();
    let e = table::decode(&forge(&doubling, None), None).err().map(|e| e.kind());
    assert_eq!(e, Some(BpeErrorKind::InvalidTable));
    // A part coded as an index past the ranks that start with its byte: the encoder is told
    // rank 256 starts with byte 254 (it starts with 255) and 257 with 255 (the counts agree),
    // so 257's left part is index 1 of 254's ranks, which hold rank 1 alone.
    let mut firsts: Vec<u8> = (0..=255u8).rev().collect();
    firsts.extend([254, 255]);
    let e = table::decode(&forge(&[(0, 1), (256, 2)], Some(&firsts)), None).err().unwrap();
    assert!(e.message().contains("token 257: left part out of range"), "{e}");
    // Byte counts that disagree with the tokens.
    firsts.truncate(256);
    firsts.extend([254, 254]);
    let e = table::decode(&forge(&[(0, 1), (256, 2)], Some(&firsts)), None).err().unwrap();
    assert!(e.message().contains("token 256: more tokens start with byte 255"), "{e}");
    // Context maps naming tables that do not exist (the byte counts are one byte each here).
    for at in [table::HEADER_LEN + 256, table::HEADER_LEN + 256 + super::format::TAILS + 255] {
        let mut bad = t.clone();
        bad[at] = 200;
        let e = table::decode(&bad, None).err().unwrap();
        assert!(e.message().contains("context map is corrupt"), "{e}");
    }
    // A frequency code past the largest (the first of the first table's).
    let mut bad = t.clone();
    bad[table::HEADER_LEN + 256 + super::format::TAILS + 256] = super::format::MAX_FREQ_CODE + 1;
    let e = table::decode(&bad, None).err().unwrap();
    assert!(e.message().contains("frequency code out of range"), "{e}");
    // Truncation, trailing bytes, and every single-byte change of the pair section.
    assert!(table::decode(&t[..t.len() - 1], None).is_err());
    let mut t2 = t.clone();
    t2.push(0);
    assert!(table::decode(&t2, None).is_err());
    for i in table::HEADER_LEN..t.len() {
        for flip in [1u8, 0x80, 0xff] {
            let mut t3 = t.clone();
            t3[i] ^= flip;
            let _ = table::decode(&t3, None);
        }
    }
    // And load_ranks refuses all of them by checksum.
    for enc in [BpeEncoding::O200kBase, BpeEncoding::Cl100kBase] {
        assert!(!enc.checksums().contains(&table::table_checksum(&t)));
    }
}

#[test]
fn tables_of_other_format_versions_are_refused() {
    let mut t = forge(&[(0, 1)], None);
    t[4] = table::VERSION - 1;
    let e = table::decode(&t, None).err().unwrap();
    assert_eq!(e.kind(), BpeErrorKind::InvalidTable);
    assert!(e.message().contains(&format!("unsupported rank table version {}", table::VERSION - 1)), "{e}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// Any frequency codes in range give a table the rANS decoder can use: every used symbol
    /// a frequency of at least 1, unused ones 0, summing to the scale (or all 0 if none is used).
    #[test]
    fn frequency_codes_always_make_a_valid_table(
        codes in proptest::collection::vec(0..=super::format::MAX_FREQ_CODE, 256),
        unused in proptest::collection::vec(proptest::prelude::any::<bool>(), 256),
    ) {
        let mut c = [0u8; 256];
        for ((x, &k), &u) in c.iter_mut().zip(&codes).zip(&unused) {
            *x = if u { 0 } else { k };
        }
        let f = super::format::dequantise(&c).unwrap();
        for (&k, &x) in c.iter().zip(&f) {
            proptest::prop_assert_eq!(k == 0, x == 0);
        }
        let sum: u32 = f.iter().sum();
        proptest::prop_assert_eq!(sum, if c.iter().all(|&k| k == 0) { 0 } else { 1 << super::format::PROB_BITS });
    }

    /// Any bytes after a valid header (the pair section of a table of random pairs, cut and
    /// overwritten at random, or plain noise): decode returns, Ok or Err, and never panics.
    #[test]
    fn random_pair_sections_never_panic(
        pairs in proptest::collection::vec((0u32..300, 0u32..300), 1..40),
        noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600),
        cut in 0usize..2000,
        at in 0usize..2000,
    ) {
        let valid: Vec<(u32, u32)> = pairs.iter().enumerate().map(|(i, &(a, b))| (a % (256 + i as u32), b % (256 + i as u32))).collect();
        let t = forge(&valid, None);
        let decoded = table::decode(&t, None);
        proptest::prop_assert!(decoded.is_ok() || valid.len() > 6, "{:?}", decoded.err());
        let mut cut_t = t[..table::HEADER_LEN + cut % (t.len() - table::HEADER_LEN)].to_vec();
        let _ = table::decode(&cut_t, None);
        cut_t.truncate(table::HEADER_LEN);
        cut_t.extend_from_slice(&noise);
        let _ = table::decode(&cut_t, None);
        let mut over = t.clone();
        for (k, &b) in noise.iter().take(8).enumerate() {
            let i = table::HEADER_LEN + (at + k * 97) % (t.len() - table::HEADER_LEN);
            over[i] = b;
        }
        let _ = table::decode(&over, None);
    }
}

/// Deterministic bytes for the merge tests (xorshift): `len` of them from `alphabet`.
fn sample(alphabet: &[u8], len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            alphabet[(x % alphabet.len() as u64) as usize]
        })
        .collect()
}

/// Pieces to merge: runs of one character, of two, of punctuation and spaces, and random text of
/// a few letters, of every lowercase letter, of a script of several bytes a character, and bytes.
fn long_pieces() -> Vec<Vec<u8>> {
    let letters: Vec<u8> = (b'a'..=b'z').collect();
    let all: Vec<u8> = (0..=255).collect();
    vec![
        b"a".repeat(20_000),
        b" ".repeat(20_001),
        b"=-".repeat(9_000),
        b"ab".repeat(10_000),
        b"-".repeat(15_000),
        sample(b"ab", 20_000, 1),
        sample(b"aab", 20_000, 2),
        sample(&letters, 30_000, 3),
        "日本語のテキスト".repeat(800).into_bytes(),
        sample(&all, 12_000, 4),
    ]
}

/// Merged a window at a time, a piece gets exactly the tokens of the merge of it whole: small
/// windows (a cut every few hundred bytes) and the default one, over every kind of piece.
#[cfg(feature = "embedded-ranks")]
#[test]
fn a_long_piece_merges_window_by_window_as_it_does_whole() {
    use merge::Windows;
    let windows = [
        Windows { len: 300, margin: 80, backtrack: 64 },
        Windows { len: 1000, margin: 300, backtrack: 64 },
        Windows { len: 4096, margin: 1024, backtrack: 8 },
        Windows::DEFAULT,
    ];
    for enc in [BpeEncoding::O200kBase, BpeEncoding::Cl100kBase] {
        let e = BpeEncoder::get(enc).unwrap();
        for piece in long_pieces() {
            let mut whole = Vec::new();
            e.bpe_large(&piece, &mut |rank| whole.push(rank));
            for w in windows {
                let mut windowed = Vec::new();
                let ((), exact) = exactly(|| e.bpe_long(&piece, w, &mut |rank| windowed.push(rank)));
                assert!(exact, "{enc:?}, {} bytes, {w:?}: merged exactly", piece.len());
                assert!(windowed == whole, "{enc:?}, {} bytes from {:?}…, {w:?}", piece.len(), &piece[..8]);
            }
        }
    }
}

/// When no cut holds (here: windows too short for any, and no backtracking), the rest of the
/// piece is counted a token a byte: an upper bound, said so, never a refusal or a wrong count
/// passed off as exact. Encoding such a run is refused rather than given wrong ids.
#[cfg(feature = "embedded-ranks")]
#[test]
fn a_piece_with_no_cut_that_holds_is_counted_at_an_upper_bound_and_said_so() {
    let e = BpeEncoder::get(BpeEncoding::O200kBase).unwrap();
    let strict = merge::Windows { len: 6, margin: 1, backtrack: 0 };
    let mut inexact = 0;
    for piece in long_pieces() {
        let piece = &piece[..3000];
        let mut whole = Vec::new();
        e.bpe_large(piece, &mut |rank| whole.push(rank));
        let mut n = 0usize;
        let ((), exact) = exactly(|| e.bpe_long(piece, strict, &mut |_| n += 1));
        if exact {
            assert_eq!(n, whole.len());
        } else {
            inexact += 1;
            assert!(
                n >= whole.len() && n <= piece.len(),
                "{n} is an upper bound of {} for {} bytes",
                whole.len(),
                piece.len()
            );
        }
    }
    assert!(inexact > 0, "some piece had no cut that holds");
    // Through the public counts: exact, and so said, for any length.
    let run = "a".repeat(3 << 20);
    assert_eq!(e.count_exact(&run), (e.encode(&run).len(), true));
    assert!(e.encode_exact(&run).is_ok());
}
