//! The rank-table format shared by build.rs (which writes the tables, including this file with
//! `#[path]`), the decoder in table.rs, and the tests that forge tables. Plain std only, so the
//! build script can compile it too.
#![allow(dead_code)] // Each includer uses its own part: build.rs writes, the library reads.

pub const MAGIC: &[u8; 4] = b"CCBT";
pub const VERSION: u8 = 2;

/// An id stream (see src/bpe/table.rs): per id, a symbol byte holding v = id + 1 exactly if
/// v < 32, else its bit length and top 5 bits; the remaining low bits go, LSB first, to a
/// separate bit stream. gzip then entropy-codes the symbols (skewed) and leaves the raw bits
/// (near uniform): 6% smaller than byte planes of the ids, with no entropy decoder to ship.
pub fn push_ids(t: &mut Vec<u8>, ids: &[u32]) -> Result<(), String> {
    let mut syms = Vec::with_capacity(ids.len());
    let (mut bits, mut acc, mut nacc) = (Vec::new(), 0u64, 0u32);
    for &id in ids {
        let v = id + 1;
        if v < 32 {
            syms.push(v as u8);
            continue;
        }
        let len = 32 - v.leading_zeros();
        if len > 19 {
            return Err(format!("id {id} is too large for the id stream"));
        }
        let low = len - 5;
        syms.push((32 + (len - 6) * 16 + ((v >> low) - 16)) as u8);
        acc |= ((v & ((1 << low) - 1)) as u64) << nacc;
        nacc += low;
        while nacc >= 8 {
            bits.push(acc as u8);
            acc >>= 8;
            nacc -= 8;
        }
    }
    if nacc > 0 {
        bits.push(acc as u8);
    }
    t.extend_from_slice(&(bits.len() as u32).to_le_bytes());
    t.extend_from_slice(&syms);
    t.extend_from_slice(&bits);
    Ok(())
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
