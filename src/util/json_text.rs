//! Values written as compact JSON text, by one serializer: the results that cross to JS, the
//! stored records and the JSON text of tool results all go through `to_text`, so each type's
//! serialize code is compiled once in the wasm (it was compiled for each of serde_json's writers
//! and formatters a caller used: 2 KB of the gzipped lite wasm, 2026-11-25).

use serde::Serialize;
use std::alloc::Layout;

/// `value` as compact JSON text, as `serde_json::to_string` writes it; every growth of the
/// buffer is reserved first, so that running out of memory is an error (`out_of_room` says how
/// much was wanted), not a trap.
pub fn to_text<T: Serialize + ?Sized>(value: &T) -> Result<String, serde_json::Error> {
    let mut text = Text(Vec::new());
    let written = serde_json::to_writer(&mut text, value);
    into_string(text, written)
}

/// `to_text`'s part that does not depend on the type, compiled once.
#[inline(never)]
fn into_string(text: Text, written: Result<(), serde_json::Error>) -> Result<String, serde_json::Error> {
    written?;
    // serde_json writes valid UTF-8.
    String::from_utf8(text.0).map_err(|_| serde::ser::Error::custom("a value serialised to invalid UTF-8"))
}

/// `value` as compact JSON text: what its `to_string` gives. (Its `Display`, through a writer
/// and formatter of its own, would be one more copy of the serializer in the wasm.)
pub fn value_text(value: &serde_json::Value) -> String {
    to_text(value).unwrap_or_else(|error| {
        // Writing a `Value` fails only for want of memory, which traps, as `to_string` did.
        let wanted = Layout::array::<u8>(out_of_room(&error).unwrap_or(1)).unwrap_or(Layout::new::<u8>());
        std::alloc::handle_alloc_error(wanted)
    })
}

/// The bytes `to_text` could not reserve, when that is why it failed.
pub fn out_of_room(error: &serde_json::Error) -> Option<usize> {
    std::error::Error::source(error)
        .and_then(|e| e.downcast_ref::<std::io::Error>())
        .and_then(std::io::Error::get_ref)
        .and_then(|e| e.downcast_ref::<OutOfRoom>())
        .map(|room| room.0)
}

/// JSON text with every character past ASCII written as a `\uXXXX` escape (two for one past
/// U+FFFF, lower-case hex): the same JSON, read back the same. (Outside its strings JSON text is
/// ASCII, so only characters in strings are escaped.)
pub fn ascii_escaped(text: String) -> String {
    if text.is_ascii() {
        return text;
    }
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(text.len() + text.len() / 2);
    let mut rest = text.as_str();
    while let Some(at) = rest.find(|c: char| !c.is_ascii()) {
        out.push_str(&rest[..at]);
        let c = rest[at..].chars().next().unwrap_or_default();
        let mut units = [0u16; 2];
        for &mut unit in c.encode_utf16(&mut units) {
            out.push_str("\\u");
            for shift in [12, 8, 4, 0] {
                out.push(char::from(HEX[usize::from((unit >> shift) & 0xf)]));
            }
        }
        rest = &rest[at + c.len_utf8()..];
    }
    out.push_str(rest);
    out
}

struct Text(Vec<u8>);

struct OutOfRoom(usize);

impl std::io::Write for Text {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.write_all(bytes).map(|_| bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        if self.0.capacity() - self.0.len() < bytes.len() {
            let wanted = self.0.len().saturating_add(bytes.len()).max(self.0.capacity().saturating_mul(2));
            if self.0.try_reserve_exact(wanted - self.0.len()).is_err() {
                self.0.try_reserve_exact(bytes.len()).map_err(|_| std::io::Error::other(OutOfRoom(wanted)))?;
            }
        }
        self.0.extend_from_slice(bytes);
        Ok(())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::fmt::Debug for OutOfRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "out of memory at {} bytes", self.0)
    }
}

impl std::fmt::Display for OutOfRoom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self, f)
    }
}

impl std::error::Error for OutOfRoom {}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_what_serde_json_writes() {
        let value = json!({"a": [1, 2.5, null, true], "b": "x\"\n\u{1}é😀", "é": {}});
        assert_eq!(to_text(&value).unwrap(), serde_json::to_string(&value).unwrap());
    }

    #[test]
    fn value_text_is_what_to_string_gives() {
        for value in
            [json!(null), json!(-1.5e300), json!("é\u{7f}\\"), json!([{"b": 1, "a": [true]}, 18446744073709551615u64])]
        {
            assert_eq!(value_text(&value), value.to_string());
        }
    }

    #[test]
    fn escapes_every_character_past_ascii() {
        let value = json!({"ké": ["é", "a😀b", "plain", "\u{ffff}\u{10000}"]});
        let text = ascii_escaped(to_text(&value).unwrap());
        assert!(text.is_ascii());
        assert_eq!(text, r#"{"k\u00e9":["\u00e9","a\ud83d\ude00b","plain","\uffff\ud800\udc00"]}"#);
        assert_eq!(serde_json::from_str::<serde_json::Value>(&text).unwrap(), value);
        assert_eq!(ascii_escaped("{\"a\":1}".into()), "{\"a\":1}");
    }
}
