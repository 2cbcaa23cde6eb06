//! The rank-table format shared by build.rs (which writes the tables, including this file with
//! `#[path]`), the decoder in table.rs, and the tests that forge tables. Plain std only, so the
//! build script can compile it too. The layout is documented in src/bpe/table.rs.
#![allow(dead_code)] // Each includer uses its own part: build.rs writes, the library reads.

pub const MAGIC: &[u8; 4] = b"CCBT";
pub const VERSION: u8 = 5;

/// The symbol of an id (see table.rs): for v = id + 1, v itself if v < 32, else 32 +
/// (bitlen(v) - 6) * 16 + (top 5 bits of v - 16); and the `n` low bits of v it leaves out.
pub fn id_symbol(id: u32) -> Result<(u8, u32, u32), String> {
    let v = id + 1;
    if v < 32 {
        return Ok((v as u8, 0, 0));
    }
    let len = 32 - v.leading_zeros();
    if len > 19 {
        return Err(format!("id {id} is too large for the id coding"));
    }
    let low = len - 5;
    Ok(((32 + (len - 6) * 16 + ((v >> low) - 16)) as u8, low, v & ((1 << low) - 1)))
}

/// Low bits, LSB first, packed into bytes.
#[derive(Default)]
pub struct BitWriter {
    pub bytes: Vec<u8>,
    acc: u64,
    nacc: u32,
}

impl BitWriter {
    pub fn push(&mut self, n: u32, bits: u32) {
        self.acc |= (bits as u64) << self.nacc;
        self.nacc += n;
        while self.nacc >= 8 {
            self.bytes.push(self.acc as u8);
            self.acc >>= 8;
            self.nacc -= 8;
        }
    }

    pub fn finish(mut self) -> Vec<u8> {
        if self.nacc > 0 {
            self.bytes.push(self.acc as u8);
        }
        self.bytes
    }
}

/// An id stream (see src/bpe/table.rs): the symbol bytes, then the low bits in a separate bit
/// stream, which gzip leaves alone. Used for the o200k_base ranks of a delta table's shared tokens.
pub fn push_ids(t: &mut Vec<u8>, ids: &[u32]) -> Result<(), String> {
    let mut syms = Vec::with_capacity(ids.len());
    let mut bits = BitWriter::default();
    for &id in ids {
        let (s, n, low) = id_symbol(id)?;
        syms.push(s);
        bits.push(n, low);
    }
    let bits = bits.finish();
    t.extend_from_slice(&(bits.len() as u32).to_le_bytes());
    t.extend_from_slice(&syms);
    t.extend_from_slice(&bits);
    Ok(())
}

// ---------------------------------------------------------------------------------------
// The pair section: rANS-coded with static, context-selected frequency tables.

/// Frequencies of a table sum to 1 << PROB_BITS.
pub const PROB_BITS: u32 = 12;
/// The rANS state stays in [RANS_L, RANS_L << 16) between symbols, renormalised by whole
/// 16-bit words: at most one per symbol, so the decoder reads it without a loop or a branch.
pub const RANS_L: u32 = 1 << 16;
/// Byte classes that select a table (see `class`).
pub const CLASSES: usize = 16;
/// The tails of a token: the classes of its last two bytes (the first of them `CLASSES` for a
/// one-byte token), `tail` numbers them.
pub const TAILS: usize = (CLASSES + 1) * CLASSES;
/// Tables for the right part's first byte: one per class of the left part's last byte, and one
/// each for the tails most used as a left part's (a table's context map says which).
pub const RIGHT_FIRST_TABLES: usize = CLASSES + 24;
/// Tables for a part's index, each for the left and for the right part: one per class of its
/// first byte, and one each for the first bytes used most by right parts.
pub const INDEX_TABLES: usize = CLASSES + 8;
/// Tables: the first byte of `left`; `left`'s index by its first byte's context; then `right`'s
/// first byte by `left`'s context, `right`'s index by its first byte's context (`Contexts`).
pub const N_TABLES: usize = 1 + INDEX_TABLES + RIGHT_FIRST_TABLES + INDEX_TABLES;

/// The class of a byte: lower, upper, digit, space, newline, other control, `.`, `_`, `-`,
/// brackets, other ASCII, and UTF-8 continuation (two halves) and lead bytes (three lengths).
#[inline(always)]
pub const fn class(b: u8) -> usize {
    CLASS_OF[b as usize] as usize
}

const CLASS_OF: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = byte_class(b as u8);
        b += 1;
    }
    t
};

// The arms overlap on purpose: the first that matches wins, so the classes named before it are
// carved out of printable ASCII (`32..=126`).
#[allow(clippy::match_overlapping_arm)]
const fn byte_class(b: u8) -> u8 {
    match b {
        b'a'..=b'z' => 0,
        b'A'..=b'Z' => 1,
        b'0'..=b'9' => 2,
        b' ' => 3,
        b'\n' | b'\r' => 4,
        0..=31 | 127 => 5,
        b'.' => 6,
        b'_' => 7,
        b'-' => 8,
        b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'<' | b'>' => 9,
        32..=126 => 10,
        0x80..=0x9f => 11,
        0xa0..=0xbf => 12,
        0xc0..=0xdf => 13,
        0xe0..=0xef => 14,
        0xf0..=0xff => 15,
    }
}

/// The table coding the first byte of `left`.
#[inline(always)]
pub const fn table_left_first() -> usize {
    0
}
/// The table coding `left`'s index among the tokens that start with its first byte, given that
/// byte's context `ctx` (< INDEX_TABLES).
#[inline(always)]
pub const fn table_left_index(ctx: u8) -> usize {
    1 + ctx as usize
}
/// The table coding the first byte of `right`, after a `left` of context `ctx` (< RIGHT_FIRST_TABLES).
#[inline(always)]
pub const fn table_right_first(ctx: u8) -> usize {
    1 + INDEX_TABLES + ctx as usize
}
/// The table coding `right`'s index among the tokens that start with its first byte, given
/// that byte's context `ctx` (< INDEX_TABLES).
#[inline(always)]
pub const fn table_right_index(ctx: u8) -> usize {
    1 + INDEX_TABLES + RIGHT_FIRST_TABLES + ctx as usize
}

/// The tail of a token (< TAILS): the classes of its last two bytes.
#[inline(always)]
pub fn tail(token: &[u8]) -> usize {
    match token {
        [.., a, b] => class(*a) * CLASSES + class(*b),
        [b] => CLASSES * CLASSES + class(*b),
        [] => 0,
    }
}

/// The maps a table carries (after its byte counts) that choose the coding tables: by the left
/// part's tail, the table of the right part's first byte (`tails`), and by a part's first byte,
/// the table of its index (`firsts`, the left and the right part each their own tables). Each
/// is the class of the last byte, or for the tails and first bytes used most, a table of its
/// own: the classes of two bytes predict the next byte better than one (o200k_base: 114 -> 101
/// KB for the right parts' first bytes), a few first bytes their index better than their class
/// (144 -> 140 KB), and most pairs of classes are rare. Format 5's cheaper tables (FREQ_STEPS)
/// afford more of them: 24 own tails rather than 16 (-2.6 KB of rANS stream, +0.4
/// KB of tables gzipped; 8 fewer cost 2 KB, 16 more gain nothing), and own index tables for the
/// left part (-1.5 KB, +0.65 KB; 16 own first bytes rather than 8 gain less than they cost).
pub struct Contexts {
    pub tails: [u8; TAILS],
    pub firsts: [u8; 256],
}

impl Contexts {
    /// From how often each tail ends a left part and each byte starts a right part.
    pub fn choose(tail_uses: &[u32; TAILS], first_uses: &[u32; 256]) -> Contexts {
        Contexts {
            tails: most_used(tail_uses, RIGHT_FIRST_TABLES - CLASSES, |t| t % CLASSES),
            firsts: most_used(first_uses, INDEX_TABLES - CLASSES, |b| class(b as u8)),
        }
    }

    pub fn write(&self, t: &mut Vec<u8>) {
        t.extend_from_slice(&self.tails);
        t.extend_from_slice(&self.firsts);
    }
}

/// Per item, `class_of` it (< CLASSES), or for the `own` items used most (`uses`), CLASSES + k.
fn most_used<const N: usize>(uses: &[u32; N], own: usize, class_of: impl Fn(usize) -> usize) -> [u8; N] {
    let mut map = [0u8; N];
    for (i, m) in map.iter_mut().enumerate() {
        *m = class_of(i) as u8;
    }
    let mut by_use: Vec<usize> = (0..N).filter(|&i| uses[i] > 0).collect();
    by_use.sort_by_key(|&i| (std::cmp::Reverse(uses[i]), i));
    for (k, &i) in by_use.iter().take(own).enumerate() {
        map[i] = (CLASSES + k) as u8;
    }
    map
}

/// Each rank's index among the ranks that start with the same byte (in rank order, as the
/// decoder fills its lists), and how many ranks start with each byte.
pub fn first_byte_indices(ends: &[(u8, u8)]) -> (Vec<u32>, [u32; 256]) {
    let mut counts = [0u32; 256];
    let index = ends
        .iter()
        .map(|&(first, _)| {
            counts[first as usize] += 1;
            counts[first as usize] - 1
        })
        .collect();
    (index, counts)
}

/// How token `r` = `left` + `right` is coded: four (table, symbol) events for the rANS coder,
/// and the two indices' low bits (count, bits) that go to the bit stream as they are.
pub type PairCode = ([(usize, u8); 4], [(u32, u32); 2]);

pub fn pair_code(
    ctx: &Contexts,
    ends: &[(u8, u8)],
    index: &[u32],
    r: u32,
    left: u32,
    right: u32,
) -> Result<PairCode, String> {
    let part = |x: u32| {
        let i = index
            .get(x as usize)
            .filter(|_| x < r)
            .ok_or_else(|| format!("token {r}: part {x} is not a lower rank"))?;
        let (s, n, low) = id_symbol(*i)?;
        Ok::<_, String>((ends[x as usize].0, s, (n, low)))
    };
    let ((lf, ls, lbits), (rf, rs, rbits)) = (part(left)?, part(right)?);
    let events = [
        (table_left_first(), lf),
        (table_left_index(ctx.firsts[lf as usize]), ls),
        (table_right_first(ends[left as usize].1), rf),
        (table_right_index(ctx.firsts[rf as usize]), rs),
    ];
    Ok((events, [lbits, rbits]))
}

/// Writes the pair section of a table: tokens `pairs` = (rank, left, right), in rank order;
/// `ends[r]` = (first byte, `ctx.tails[tail]`) of every rank r of the vocabulary. A rank is coded as
/// its first byte and its index among the lower ranks that start with that byte (in rank order).
pub fn push_pairs(t: &mut Vec<u8>, ctx: &Contexts, ends: &[(u8, u8)], pairs: &[(u32, u32, u32)]) -> Result<(), String> {
    let (index, counts) = first_byte_indices(ends);
    let mut events: Vec<(usize, u8)> = Vec::with_capacity(pairs.len() * 4);
    let mut bits = BitWriter::default();
    let mut last = None;
    for &(r, a, b) in pairs {
        if last.is_some_and(|l| l >= r) || r as usize >= ends.len() {
            return Err("pairs out of rank order".into());
        }
        last = Some(r);
        let (coded, low) = pair_code(ctx, ends, &index, r, a, b)?;
        events.extend(coded);
        for (n, x) in low {
            bits.push(n, x);
        }
    }
    // How many ranks start with each byte, so that the decoder lays its lists out in one array.
    for &c in &counts {
        push_varint(t, c);
    }
    ctx.write(t);
    let mut counts = vec![[0u32; 256]; N_TABLES];
    for &(tb, s) in &events {
        counts[tb][s as usize] += 1;
    }
    let mut freqs = Vec::with_capacity(N_TABLES);
    for c in &counts {
        let codes = quantise(c);
        t.extend_from_slice(&codes);
        freqs.push(dequantise(&codes).ok_or("a frequency code out of range")?);
    }
    // rANS codes last symbol first, so the decoder reads them in order.
    let mut starts = vec![[0u32; 256]; N_TABLES];
    for (st, f) in starts.iter_mut().zip(&freqs) {
        let mut c = 0;
        for (s, x) in st.iter_mut().zip(f) {
            *s = c;
            c += x;
        }
    }
    let mut x = RANS_L;
    let mut words: Vec<u16> = Vec::new();
    for &(tb, s) in events.iter().rev() {
        let (f, st) = (freqs[tb][s as usize], starts[tb][s as usize]);
        if x as u64 >= (((RANS_L >> PROB_BITS) as u64) << 16) * f as u64 {
            words.push(x as u16);
            x >>= 16;
        }
        x = ((x / f) << PROB_BITS) + (x % f) + st;
    }
    // Reversed: the decoder reads the final state first (high word first), then the words
    // renormalisation pushed, last first.
    words.extend([x as u16, (x >> 16) as u16]);
    words.reverse();
    t.extend_from_slice(&((words.len() * 2) as u32).to_le_bytes());
    t.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    let bits = bits.finish();
    t.extend_from_slice(&(bits.len() as u32).to_le_bytes());
    t.extend_from_slice(&bits);
    Ok(())
}

/// Frequency codes per octave: a table stores each symbol's frequency as a byte, 0 for unused,
/// else k for a weight of 2^((k - 1) / FREQ_STEPS), rescaled to sum to 1 << PROB_BITS. Format 4
/// stored exact frequencies as varints: o200k_base's tables took 5.2 KB of its gzipped size.
/// Codes cost less in the tables than coarser frequencies cost the rANS stream, down to two an
/// octave (whole o200k_base table, gzip -9: 1 step 615,465 B, 2 steps 614,192, 3 614,698, 4
/// 614,877, 6 615,125).
pub const FREQ_STEPS: u32 = 2;
/// The largest frequency code: a weight of 2^12, the whole scale.
pub const MAX_FREQ_CODE: u8 = (PROB_BITS * FREQ_STEPS + 1) as u8;
/// 2^(j / FREQ_STEPS) in units of 1/256, for j < FREQ_STEPS.
const FREQ_MANTISSAS: [u32; FREQ_STEPS as usize] = [256, 362];

/// The frequency codes of a table's symbol counts (see FREQ_STEPS): the nearest code on the log
/// scale to each count's share of 1 << PROB_BITS, at least 1 for a used symbol.
pub fn quantise(counts: &[u32; 256]) -> [u8; 256] {
    let total: f64 = counts.iter().map(|&x| x as f64).sum();
    let mut codes = [0u8; 256];
    for (code, &c) in codes.iter_mut().zip(counts) {
        if c > 0 {
            let share = c as f64 * (1u32 << PROB_BITS) as f64 / total;
            let k = 1.0 + (share.log2() * FREQ_STEPS as f64).round();
            *code = k.clamp(1.0, MAX_FREQ_CODE as f64) as u8;
        }
    }
    codes
}

/// The frequencies of a table's codes (see FREQ_STEPS), summing to 1 << PROB_BITS, or all 0 for an
/// unused table; None for a code out of range. Integer arithmetic only: build.rs and the decoder
/// must agree to the bit.
pub fn dequantise(codes: &[u8; 256]) -> Option<[u32; 256]> {
    let mut f = [0u32; 256];
    for (x, &k) in f.iter_mut().zip(codes) {
        if k > MAX_FREQ_CODE {
            return None;
        }
        if k > 0 {
            let j = (k - 1) as u32;
            *x = FREQ_MANTISSAS[(j % FREQ_STEPS) as usize] << (j / FREQ_STEPS);
        }
    }
    normalize(&mut f);
    Some(f)
}

/// Scales weights to frequencies summing to 1 << PROB_BITS, every used symbol at least 1
/// (an unused table stays all zero).
fn normalize(f: &mut [u32; 256]) {
    let total: u64 = f.iter().map(|&x| x as u64).sum();
    if total == 0 {
        return;
    }
    let m = 1u64 << PROB_BITS;
    for x in f.iter_mut() {
        if *x > 0 {
            *x = ((*x as u64 * m / total) as u32).max(1);
        }
    }
    // Settle the rounding on the largest frequencies, where it costs least. Each step either
    // settles the sum or takes a frequency down to 1; fewer than 256 symbols are used, so the
    // sum cannot stay above the scale.
    loop {
        let sum: u64 = f.iter().map(|&x| x as u64).sum();
        if sum == m {
            break;
        }
        let big = (0..256).max_by_key(|&i| f[i]).unwrap_or(0);
        if sum > m {
            let cut = ((sum - m) as u32).min(f[big] - 1).max(1);
            f[big] -= cut;
        } else {
            f[big] += (m - sum) as u32;
        }
    }
}

fn push_varint(t: &mut Vec<u8>, mut x: u32) {
    while x >= 0x80 {
        t.push(x as u8 | 0x80);
        x >>= 7;
    }
    t.push(x as u8);
}

/// A 64-bit checksum of a table: the library accepts only tables whose checksum build.rs recorded.
pub fn table_checksum(t: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ t.len() as u64;
    for c in t.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        h ^= h >> 29;
    }
    h
}
