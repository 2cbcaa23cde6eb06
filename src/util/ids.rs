//! Deterministic ids: wasm32-unknown-unknown has no clock or entropy without JS, and ids that
//! follow from their content make sessions replayable.

/// FNV-1a, 32 bits: a short, stable tag of some text.
pub fn fnv1a(parts: &[&str]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            // A separator, so that ["ab", "c"] and ["a", "bc"] differ.
            hash ^= 0xff;
            hash = hash.wrapping_mul(0x0100_0193);
        }
        for byte in part.bytes() {
            hash ^= u32::from(byte);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    }
    hash
}

/// FNV-1a, 64 bits, over raw bytes: the checksum of a stored record (a stable, documented
/// function, so records written by one version are checked by the next).
pub fn fnv1a64(parts: &[&[u8]]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &byte in *part {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

#[cfg(test)]
mod tests {
    #[test]
    fn parts_are_separated() {
        assert_ne!(super::fnv1a(&["ab", "c"]), super::fnv1a(&["a", "bc"]));
        assert_eq!(super::fnv1a(&["x"]), super::fnv1a(&["x"]));
    }

    #[test]
    fn fnv1a64_matches_the_published_vectors() {
        // From the FNV reference test suite (fnv1a64 of "", "a", "foobar").
        assert_eq!(super::fnv1a64(&[]), 0xcbf2_9ce4_8422_2325);
        assert_eq!(super::fnv1a64(&[b"a"]), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(super::fnv1a64(&[b"foo", b"bar"]), 0x8594_4171_f739_67e8);
    }
}
