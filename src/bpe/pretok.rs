//! Hand-written pre-tokenisers: exact equivalents of the o200k_base and cl100k_base split
//! patterns of tiktoken-rs (run there by fancy-regex with backtracking, leftmost-first
//! alternation), without a regex engine.
//!
//! ```text
//! o200k_base:
//!   A  [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//!   B |[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?
//!   C |\p{N}{1,3}
//!   D | ?[^\s\p{L}\p{N}]+[\r\n/]*
//!   E |\s*[\r\n]+
//!   F |\s+(?!\S)
//!   G |\s+
//! cl100k_base:
//!   1  '(?i:[sdmt]|ll|ve|re)
//!   2 |[^\r\n\p{L}\p{N}]?+\p{L}++
//!   3 |\p{N}{1,3}+
//!   4 | ?[^\s\p{L}\p{N}]++[\r\n]*+
//!   5 |\s++$
//!   6 |\s*[\r\n]
//!   7 |\s+(?!\S)
//!   8 |\s
//! ```
//!
//! Every alternative consumes at least one char and every char starts some alternative, so
//! both patterns partition the text; `next_*` return the end of the piece starting at `i`.
//! The derivations of the backtracking behaviour are in the comments below; the tests check
//! the splits against fancy-regex itself and the ids against tiktoken-rs.
//!
//! Panic-free by construction: every byte access goes through `get`, and past the end a
//! char reads as "no char" (flags 0, length 0).

use super::generated::{fold_letter, ASTRAL_FLAGS, ASTRAL_STARTS, BMP_BLOCKS, BMP_INDEX};

/// \p{L}
pub(crate) const L: u8 = 1;
/// \p{N}
pub(crate) const N: u8 = 2;
/// \s (Unicode White_Space)
pub(crate) const WS: u8 = 4;
/// \r or \n
pub(crate) const CRLF: u8 = 8;
/// [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] (o200k's "upper" class)
pub(crate) const UP: u8 = 16;
/// [\p{Ll}\p{Lm}\p{Lo}\p{M}] (o200k's "lower" class)
pub(crate) const LO: u8 = 32;

#[inline(always)]
fn flags_of(cp: u32) -> u8 {
    if cp < 0x1_0000 {
        let blk = BMP_INDEX[(cp as usize >> 6) & 1023] as usize;
        *BMP_BLOCKS.get(blk * 64 + (cp as usize & 63)).unwrap_or(&0)
    } else {
        let i = ASTRAL_STARTS.partition_point(|&s| s <= cp);
        *ASTRAL_FLAGS.get(i.wrapping_sub(1)).unwrap_or(&0)
    }
}

/// Decodes the char at byte `i` of valid UTF-8: (code point, length). Past the end: (0, 0).
#[inline(always)]
fn decode(t: &[u8], i: usize) -> (u32, usize) {
    let Some(&b0) = t.get(i) else { return (0, 0) };
    if b0 < 0x80 {
        return (b0 as u32, 1);
    }
    let cont = |k: usize| (*t.get(i + k).unwrap_or(&0x80) & 0x3f) as u32;
    if b0 < 0xe0 {
        (((b0 as u32 & 0x1f) << 6) | cont(1), 2)
    } else if b0 < 0xf0 {
        (((b0 as u32 & 0x0f) << 12) | (cont(1) << 6) | cont(2), 3)
    } else {
        (((b0 as u32 & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3), 4)
    }
}

/// Flags and byte length of the char at `i`; (0, 0) past the end.
/// End of `\p{N}{1,3}` from `i` (both patterns; `i` starts a number).
#[inline(always)]
fn digits(t: &[u8], i: usize) -> usize {
    let mut j = i;
    for _ in 0..3 {
        let (f, l) = class_at(t, j);
        if l == 0 || f & N == 0 {
            break;
        }
        j += l;
    }
    j
}

#[inline(always)]
fn class_at(t: &[u8], i: usize) -> (u8, usize) {
    if let Some(&b) = t.get(i) {
        if b < 0x80 {
            return (ASCII[b as usize], 1);
        }
    }
    let (cp, len) = decode(t, i);
    if len == 0 {
        return (0, 0);
    }
    (flags_of(cp), len)
}

static ASCII: [u8; 128] = {
    let mut a = [0u8; 128];
    let mut i = 0;
    while i < 128 {
        let c = i as u8;
        a[i] = if c.is_ascii_uppercase() {
            L | UP
        } else if c.is_ascii_lowercase() {
            L | LO
        } else if c.is_ascii_digit() {
            N
        } else if c == b'\r' || c == b'\n' {
            WS | CRLF
        } else if c == b' ' || c == b'\t' || c == 0x0b || c == 0x0c {
            WS
        } else {
            0
        };
        i += 1;
    }
    a
};

/// End of the run of chars whose flags intersect `mask`, starting at `i`.
#[inline(always)]
fn run(t: &[u8], mut i: usize, mask: u8) -> usize {
    loop {
        // ASCII fast path.
        while let Some(&b) = t.get(i) {
            if b >= 0x80 {
                break;
            }
            if ASCII[b as usize] & mask == 0 {
                return i;
            }
            i += 1;
        }
        let (f, l) = class_at(t, i);
        if l == 0 || f & mask == 0 {
            return i;
        }
        i += l;
    }
}

/// `'(?i:s|t|re|ve|m|ll|d)` at `i` (the two patterns' contraction sets are the same):
/// the end of the match, or None.
#[inline]
fn contraction(t: &[u8], i: usize) -> Option<usize> {
    if t.get(i) != Some(&b'\'') {
        return None;
    }
    let letter = |j: usize| {
        let (cp, len) = decode(t, j);
        (fold_letter(char::from_u32(cp).unwrap_or('\0')), len)
    };
    let (c1, l1) = letter(i + 1);
    let j = i + 1 + l1;
    match c1 {
        b's' | b't' | b'm' | b'd' => Some(j),
        b'r' | b'v' | b'l' => {
            let (c2, l2) = letter(j);
            let want = if c1 == b'l' { b'l' } else { b'e' };
            (c2 == want).then_some(j + l2)
        }
        _ => None,
    }
}

/// o200k alternative A from `s` (after the optional prefix char): `U*W+`, backtracking.
/// U* takes the longest run; W+ then needs a W char at the end of that run, else U* gives
/// back chars until one it gave back is in W (U∩W = Lm|Lo|M). The first success in that
/// order: if the char after the U-run is in W, the W-run from there; otherwise the end of
/// the last W char inside the U-run (the chars after it are U-only, so W+ stops there).
#[inline]
fn o200k_a(t: &[u8], s: usize) -> Option<usize> {
    let mut j = s;
    let mut last_lo_end = None;
    loop {
        let (f, l) = class_at(t, j);
        if l == 0 || f & UP == 0 {
            if l != 0 && f & LO != 0 {
                return Some(run(t, j + l, LO));
            }
            return last_lo_end;
        }
        j += l;
        if f & LO != 0 {
            last_lo_end = Some(j);
        }
    }
}

/// o200k alternative B from `s`: `U+W*`.
#[inline]
fn o200k_b(t: &[u8], s: usize) -> Option<usize> {
    let (f, l) = class_at(t, s);
    if l == 0 || f & UP == 0 {
        return None;
    }
    let j = run(t, s + l, UP);
    Some(run(t, j, LO))
}

/// Fast path of A and B when everything involved is ASCII (most text): an optional
/// prefix char, then `[A-Z]*[a-z]+` (A) or else `[A-Z]+` (B), as `o200k_a`/`o200k_b` decide
/// for these classes (no ASCII char is in both U and W): Some(Some(end)). Some(None) when
/// neither A nor B can match (an ASCII non-letter after an ASCII prefix char, or nothing).
/// None, for the general path, when a non-ASCII char is involved (it could be a letter or a
/// mark that continues the letters).
#[inline(always)]
fn o200k_ascii_word(t: &[u8], i: usize) -> Option<Option<usize>> {
    let b0 = *t.get(i)?;
    if b0 >= 0x80 {
        return None;
    }
    let f0 = ASCII[b0 as usize];
    let s = if f0 & L != 0 {
        i
    } else if f0 & (N | CRLF) == 0 {
        i + 1
    } else {
        return None;
    };
    let mut j = s;
    while t.get(j).is_some_and(|b| b.is_ascii_uppercase()) {
        j += 1;
    }
    let u_end = j;
    while t.get(j).is_some_and(|b| b.is_ascii_lowercase()) {
        j += 1;
    }
    if t.get(j).is_some_and(|&b| b >= 0x80) {
        return None;
    }
    Some(if j > u_end {
        Some(j)
    } else if u_end > s {
        Some(u_end)
    } else {
        None
    })
}

/// ` ?[^\s\p{L}\p{N}]+` then the trailing set: the end, or None.
/// The optional space can be given back, but then the space itself would have to be
/// punctuation, which it is not: so the space is taken iff punctuation follows it.
#[inline]
fn punct(t: &[u8], i: usize, o200k: bool) -> Option<usize> {
    const NOT_P: u8 = WS | L | N;
    let mut j = i;
    if t.get(i) == Some(&b' ') {
        let (f, l) = class_at(t, i + 1);
        if l != 0 && f & NOT_P == 0 {
            j = i + 1;
        }
    }
    let (f, l) = class_at(t, j);
    if l == 0 || f & NOT_P != 0 {
        return None;
    }
    // The punctuation run: chars with none of WS, L, N.
    let mut j = j + l;
    loop {
        let (f, l) = class_at(t, j);
        if l == 0 || f & NOT_P != 0 {
            break;
        }
        j += l;
    }
    // Then [\r\n/]* (o200k) or [\r\n]* (cl100k), greedy, nothing after it to backtrack for.
    while let Some(&b) = t.get(j) {
        if b == b'\r' || b == b'\n' || (o200k && b == b'/') {
            j += 1;
        } else {
            break;
        }
    }
    Some(j)
}

/// The whitespace run at `i`: (end of run, end of its last \r/\n if any, start of its last char).
#[inline]
fn ws_run(t: &[u8], i: usize) -> (usize, Option<usize>, usize) {
    let (mut j, mut last_crlf_end, mut last_start) = (i, None, i);
    loop {
        let (f, l) = class_at(t, j);
        if l == 0 || f & WS == 0 {
            return (j, last_crlf_end, last_start);
        }
        if f & CRLF != 0 {
            last_crlf_end = Some(j + l);
        }
        last_start = j;
        j += l;
    }
}

/// End of the o200k_base piece starting at byte `i` (`i < t.len()`, on a char boundary).
/// Always `> i` when `i < t.len()`.
pub(crate) fn next_o200k(t: &[u8], i: usize) -> usize {
    let fast = o200k_ascii_word(t, i);
    if let Some(Some(e)) = fast {
        return contraction(t, e).unwrap_or(e);
    }
    let (f0, l0) = class_at(t, i);
    if l0 == 0 {
        return t.len();
    }
    // A and B: the optional prefix is tried taken first, then not taken; all of A before B.
    let other0 = f0 & (L | N | CRLF) == 0;
    if fast.is_none() && (other0 || f0 & (UP | LO) != 0) {
        let with_prefix = i + l0;
        let end = (if other0 { o200k_a(t, with_prefix) } else { None })
            .or_else(|| o200k_a(t, i))
            .or_else(|| if other0 { o200k_b(t, with_prefix) } else { None })
            .or_else(|| o200k_b(t, i));
        if let Some(e) = end {
            // The optional suffix is greedy: taken whenever it matches.
            return contraction(t, e).unwrap_or(e);
        }
    }
    // C: \p{N}{1,3}
    if f0 & N != 0 {
        return digits(t, i);
    }
    // D
    if let Some(e) = punct(t, i, true) {
        return e;
    }
    // Only whitespace is left (every other char matched above).
    let (j, last_crlf_end, last_start) = ws_run(t, i);
    if j == i {
        return i + l0; // unreachable: c0 is whitespace; never loop forever anyway
    }
    // E: \s*[\r\n]+ — \s* backs off from the end of the run to the run's last \r/\n.
    if let Some(e) = last_crlf_end {
        return e;
    }
    // F: \s+(?!\S) — the whole run at the end of the text, else all but its last char.
    if j >= t.len() {
        return j;
    }
    if last_start > i {
        return last_start;
    }
    // G: \s+ (a single whitespace char before a non-space).
    j
}

/// End of the cl100k_base piece starting at byte `i` (`i < t.len()`, on a char boundary).
/// Always `> i` when `i < t.len()`.
pub(crate) fn next_cl100k(t: &[u8], i: usize) -> usize {
    let (f0, l0) = class_at(t, i);
    if l0 == 0 {
        return t.len();
    }
    // 1: contractions.
    if let Some(e) = contraction(t, i) {
        return e;
    }
    // 2: [^\r\n\p{L}\p{N}]?+\p{L}++ — the possessive prefix, when present, is never given
    // back, and a letter never matches the prefix; so: a letter run at i, or one other char
    // then a letter run.
    if f0 & L != 0 {
        return run(t, i + l0, L);
    }
    if f0 & (L | N | CRLF) == 0 {
        let (f1, l1) = class_at(t, i + l0);
        if l1 != 0 && f1 & L != 0 {
            return run(t, i + l0 + l1, L);
        }
    }
    // 3: \p{N}{1,3}+
    if f0 & N != 0 {
        return digits(t, i);
    }
    // 4
    if let Some(e) = punct(t, i, false) {
        return e;
    }
    let (j, last_crlf_end, last_start) = ws_run(t, i);
    if j == i {
        return i + l0; // unreachable, see next_o200k
    }
    // 5: \s++$ — the whole run, if it reaches the end of the text.
    if j >= t.len() {
        return j;
    }
    // 6: \s*[\r\n] — up to the run's last \r/\n.
    if let Some(e) = last_crlf_end {
        return e;
    }
    // 7: \s+(?!\S) — all but the run's last char; 8: \s — a single char.
    if last_start > i {
        return last_start;
    }
    j
}

/// Calls `f` on every piece of `text` under the given pattern.
#[inline(always)]
pub(crate) fn for_each_piece<F: FnMut(&[u8])>(text: &str, o200k: bool, mut f: F) {
    let t = text.as_bytes();
    let mut i = 0;
    while i < t.len() {
        let e = if o200k { next_o200k(t, i) } else { next_cl100k(t, i) };
        // `e > i` always (see above); clamp so a bug could never loop or index out of range.
        let e = e.clamp(i + 1, t.len());
        if let Some(p) = t.get(i..e) {
            f(p);
        }
        i = e;
    }
}

#[cfg(test)]
pub(crate) fn class_at_for_test(t: &[u8], i: usize) -> (u8, usize) {
    class_at(t, i)
}
