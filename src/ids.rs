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

#[cfg(test)]
mod tests {
    #[test]
    fn parts_are_separated() {
        assert_ne!(super::fnv1a(&["ab", "c"]), super::fnv1a(&["a", "bc"]));
        assert_eq!(super::fnv1a(&["x"]), super::fnv1a(&["x"]));
    }
}
