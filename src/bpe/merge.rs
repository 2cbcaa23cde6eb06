//! The merge loop: tiktoken's byte-pair merge for a piece that is not itself a token, a short
//! one in place and a long one with a heap.

use super::{BpeEncoder, BIG};

impl BpeEncoder {
    #[inline(always)]
    pub(super) fn rank_or_big(&self, piece: Option<&[u8]>) -> u32 {
        piece.and_then(|p| self.rank(p)).unwrap_or(BIG)
    }

    /// tiktoken's `byte_pair_encode` for a piece that is not itself a token: emits the ranks.
    pub(super) fn bpe(&self, piece: &[u8], parts: &mut Vec<(usize, u32)>, emit: &mut impl FnMut(u32)) {
        if piece.len() < 2 {
            if let [b] = piece {
                emit(self.byte_rank[*b as usize]);
            }
            return;
        }
        if piece.len() >= 100 {
            if piece.len() > super::MAX_PIECE_BYTES && super::refused(piece.len()) {
                return;
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
    pub(super) fn emit_part(&self, part: Option<&[u8]>, emit: &mut impl FnMut(u32)) {
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
    pub(super) fn bpe_large(&self, piece: &[u8], emit: &mut impl FnMut(u32)) {
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
}
