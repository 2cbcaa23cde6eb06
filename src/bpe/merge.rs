//! The merge loop: tiktoken's byte-pair merge for a piece that is not itself a token, a short
//! one in place, a long one with a heap, and one longer than a window (an unbroken run of a
//! megabyte: one character repeated, a line of punctuation) window by window.

use std::collections::VecDeque;

use super::{BpeEncoder, BIG};

/// How `bpe_long` walks a piece: merged `len` bytes at a time, a window's tokens kept up to
/// `margin` bytes before its end, and a cut moved back at most `backtrack` tokens.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Windows {
    pub(crate) len: usize,
    pub(crate) margin: usize,
    pub(crate) backtrack: usize,
}

impl Windows {
    /// 64 KB windows: the heap merge takes ~28 bytes of memory a byte, ~2 MB a window, however
    /// long the piece (it took ~28 MB for the 1 MB run this once refused). The margin is eight
    /// times the longest token of either encoding.
    pub(crate) const DEFAULT: Windows = Windows { len: 1 << 16, margin: 1 << 10, backtrack: 64 };
}

impl BpeEncoder {
    #[inline(always)]
    pub(super) fn rank_or_big(&self, piece: Option<&[u8]>) -> u32 {
        piece.and_then(|p| self.rank(p)).unwrap_or(BIG)
    }

    /// tiktoken's `byte_pair_encode` for a piece that is not itself a token: emits the ranks.
    /// (`emit` through `dyn`: one copy of the merge for every caller's kind of `emit`, at an
    /// indirect call per token of a piece that is neither a token nor in the cache.)
    pub(super) fn bpe(&self, piece: &[u8], parts: &mut Vec<(usize, u32)>, emit: &mut dyn FnMut(u32)) {
        if piece.len() < 2 {
            if let [b] = piece {
                emit(self.byte_rank[*b as usize]);
            }
            return;
        }
        if piece.len() >= 100 {
            if piece.len() > Windows::DEFAULT.len {
                return self.bpe_long(piece, Windows::DEFAULT, emit);
            }
            return self.bpe_large(piece, emit);
        }
        // parts[i] = (start of part i, rank of merging part i with part i + 1).
        parts.clear();
        let mut min = (BIG, usize::MAX);
        for i in 0..piece.len() - 1 {
            let r = self.rank_or_big(piece.get(i..i + 2));
            if r < min.0 {
                min = (r, i);
            }
            parts.push((i, r));
        }
        parts.push((piece.len() - 1, BIG));
        parts.push((piece.len(), BIG));
        let get_rank = |parts: &[(usize, u32)], i: usize| -> u32 {
            match (parts.get(i), parts.get(i + 3)) {
                (Some(a), Some(b)) => self.rank_or_big(piece.get(a.0..b.0)),
                _ => BIG,
            }
        };
        while min.0 != BIG {
            let i = min.1;
            if i > 0 {
                let r = get_rank(parts, i - 1);
                if let Some(p) = parts.get_mut(i - 1) {
                    p.1 = r;
                }
            }
            let r = get_rank(parts, i);
            if let Some(p) = parts.get_mut(i) {
                p.1 = r;
            }
            if i + 1 < parts.len() {
                parts.remove(i + 1);
            }
            min = (BIG, usize::MAX);
            for (i, &(_, r)) in parts.iter().enumerate().take(parts.len().saturating_sub(1)) {
                if r < min.0 {
                    min = (r, i);
                }
            }
        }
        for w in parts.windows(2) {
            self.emit_part(piece.get(w[0].0..w[1].0), emit);
        }
    }

    /// A part the merge loop produced is a token by construction (a single byte, or a merge
    /// found in the map). Should that ever fail, emit its bytes' ranks instead of panicking.
    #[inline(always)]
    pub(super) fn emit_part(&self, part: Option<&[u8]>, emit: &mut (impl FnMut(u32) + ?Sized)) {
        let Some(part) = part else { return };
        if let [b] = part {
            return emit(self.byte_rank[*b as usize]);
        }
        match self.rank(part) {
            Some(r) => emit(r),
            None => part.iter().for_each(|b| emit(self.byte_rank[*b as usize])),
        }
    }

    /// tiktoken's `_byte_pair_merge_large` (pieces of 100+ bytes): the same merges, found
    /// with a heap (lowest rank, then leftmost) over a linked list of parts.
    #[inline(never)]
    pub(super) fn bpe_large(&self, piece: &[u8], emit: &mut dyn FnMut(u32)) {
        use std::cmp::Reverse;
        use std::collections::BinaryHeap;
        let n = piece.len();
        // For the part starting at i: end, previous part's start, rank of merging with the next.
        let mut end: Vec<usize> = (1..=n).collect();
        let mut prev: Vec<usize> = (0..n).map(|i| i.wrapping_sub(1)).collect();
        let mut next_rank: Vec<u32> = vec![BIG; n];
        let mut heap = BinaryHeap::with_capacity(n);
        for (i, nr) in next_rank.iter_mut().enumerate().take(n - 1) {
            let r = self.rank_or_big(piece.get(i..i + 2));
            *nr = r;
            if r != BIG {
                heap.push(Reverse((r, i)));
            }
        }
        while let Some(Reverse((r, start))) = heap.pop() {
            if next_rank.get(start) != Some(&r) {
                continue; // stale
            }
            let Some(&right) = end.get(start) else {
                continue;
            };
            let Some(&right_end) = end.get(right) else {
                continue;
            };
            // Merge.
            end[start] = right_end;
            next_rank[right] = BIG;
            if let Some(p) = prev.get_mut(right_end) {
                *p = start;
            }
            let nr = match end.get(right_end) {
                Some(&e2) => self.rank_or_big(piece.get(start..e2)),
                None => BIG,
            };
            next_rank[start] = nr;
            if nr != BIG {
                heap.push(Reverse((nr, start)));
            }
            if start > 0 {
                if let Some(&p) = prev.get(start) {
                    let pr = self.rank_or_big(piece.get(p..right_end));
                    if let Some(x) = next_rank.get_mut(p) {
                        *x = pr;
                        if pr != BIG {
                            heap.push(Reverse((pr, p)));
                        }
                    }
                }
            }
        }
        let mut i = 0;
        while i < n {
            let e = end.get(i).copied().unwrap_or(n).max(i + 1);
            self.emit_part(piece.get(i..e), emit);
            i = e;
        }
    }

    /// tiktoken's merge of a piece of any length, in memory bounded by the window: the piece is
    /// merged a window at a time, and each window's tokens are kept up to a cut `margin` bytes
    /// before its end; the next window starts at the cut. A token list is what the merge makes
    /// of its text exactly when each pair of neighbours is what it makes of those two tokens'
    /// text (the property github.com/github/rust-gems' `bpe` crate builds on), so a cut holds
    /// when the token before it and the next window's first one make such a pair; when they do
    /// not, the cut moves back a token and the window is merged again. Should that fail
    /// `backtrack` times in a row, the rest of the piece goes out a byte a token (its count an
    /// upper bound, noted: `count_exact`) rather than take memory without bound.
    #[inline(never)]
    pub(crate) fn bpe_long(&self, piece: &[u8], windows: Windows, emit: &mut dyn FnMut(u32)) {
        let n = piece.len();
        // Kept tokens (rank, length) not emitted yet: the cut can move back over them.
        let mut held: VecDeque<(u32, usize)> = VecDeque::new();
        let mut window: Vec<u32> = Vec::new();
        let mut pair: Vec<(usize, u32)> = Vec::new();
        let (mut at, mut failures) = (0usize, 0usize);
        while at < n {
            let end = at.saturating_add(windows.len).min(n);
            window.clear();
            self.bpe_large(piece.get(at..end).unwrap_or(&[]), &mut |rank| window.push(rank));
            let holds = match (held.back(), window.first()) {
                (Some(&(last, _)), Some(&first)) => self.is_pair(last, first, &mut pair),
                _ => true,
            };
            if !holds {
                failures += 1;
                match held.pop_back() {
                    Some((_, len)) if failures <= windows.backtrack => {
                        at -= len;
                        continue;
                    }
                    popped => {
                        let at = at - popped.map_or(0, |(_, len)| len);
                        held.drain(..).for_each(|(rank, _)| emit(rank));
                        super::note_inexact();
                        piece.get(at..).unwrap_or(&[]).iter().for_each(|b| emit(self.byte_rank[*b as usize]));
                        return;
                    }
                }
            }
            failures = 0;
            // The last window keeps every token; the others those ending before the margin (at
            // least one, so that the walk goes on).
            let limit = if end == n { usize::MAX } else { (end - at).saturating_sub(windows.margin) };
            let mut kept = 0usize;
            for (k, &rank) in window.iter().enumerate() {
                let len = self.store.token(rank).map_or(1, <[u8]>::len);
                if k > 0 && kept + len > limit {
                    break;
                }
                kept += len;
                held.push_back((rank, len));
            }
            at += kept;
            while held.len() > windows.backtrack.max(1) {
                if let Some((rank, _)) = held.pop_front() {
                    emit(rank);
                }
            }
        }
        held.into_iter().for_each(|(rank, _)| emit(rank));
    }

    /// Whether the merge makes of the two tokens' text exactly those two tokens.
    fn is_pair(&self, left: u32, right: u32, parts: &mut Vec<(usize, u32)>) -> bool {
        let (Some(a), Some(b)) = (self.store.token(left), self.store.token(right)) else { return false };
        let text = [a, b].concat();
        let mut got = [BIG; 2];
        let mut count = 0usize;
        self.bpe(&text, parts, &mut |rank| {
            if let Some(slot) = got.get_mut(count) {
                *slot = rank;
            }
            count += 1;
        });
        count == 2 && got == [left, right]
    }
}
