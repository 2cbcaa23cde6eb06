//! The JSON boundary: values cross it once per call, as JSON text. The engine's `JSON.stringify`
//! rejects what JSON cannot hold (cycles, BigInt) before Rust sees it, and serde_json's depth
//! limit keeps a hostile nesting from exhausting the wasm stack. Options objects are read into
//! the core's serde structs, which refuse unknown fields.

use js_sys::JSON;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

use crate::error::{Error, Result};
use crate::message::{self, Format};
use crate::util::json_de::NON_FINITE;

fn js_type(value: &JsValue) -> String {
    if value.is_null() {
        "null".into()
    } else if js_sys::Array::is_array(value) {
        "an array".into()
    } else {
        value.js_typeof().as_string().unwrap_or_else(|| "an unknown value".into())
    }
}

/// Above this, a value's JSON text is only copied into the wasm, and parsed, once the memory for
/// it is known to be there (`room_for`): a failed allocation is a typed error, not a trap.
const LARGE: usize = 1 << 20;

/// Whether `bytes` more can be allocated now: a block that size is allocated and freed at once
/// (which also grows the memory in one step, for what comes next).
fn room_for(bytes: usize) -> bool {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(bytes).is_ok()
}

#[wasm_bindgen]
extern "C" {
    /// The platform's `TextEncoder` (wasm-bindgen's glue needs it too).
    type TextEncoder;
    #[wasm_bindgen(constructor)]
    fn new() -> TextEncoder;
    /// Writes as much of `text` as fits into `into` as UTF-8, never half a character; a lone
    /// surrogate becomes U+FFFD, as the glue makes it.
    #[wasm_bindgen(method, js_name = encodeInto)]
    fn encode_into(this: &TextEncoder, text: &js_sys::JsString, into: &js_sys::Uint8Array) -> Encoded;
    /// `encodeInto`'s result: UTF-16 units read, bytes written.
    type Encoded;
    #[wasm_bindgen(method, getter)]
    fn read(this: &Encoded) -> u32;
    #[wasm_bindgen(method, getter)]
    fn written(this: &Encoded) -> u32;
}

thread_local! {
    static ENCODER: TextEncoder = TextEncoder::new();
}

/// Strings from this many UTF-16 units on are written into the wasm's memory by `encodeInto`
/// alone: the glue's `as_string` copies a string's ASCII prefix char by char in JS first (run by
/// the interpreter on a page's first calls: 3-4 times slower, in Chromium, for stored records).
const NATIVE: usize = 1 << 10;

/// A JS string copied into the wasm, once there is room for it; `None` if it is not a string.
pub(crate) fn js_string(text: &JsValue, what: &str) -> Result<Option<String>> {
    let Some(text) = text.dyn_ref::<js_sys::JsString>() else { return Ok(None) };
    let length = text.length() as usize;
    if length < NATIVE {
        return Ok(text.as_string());
    }
    // Room for one byte per unit (all of an ASCII text), then for three per unit left: the
    // second `encodeInto` always finishes.
    let mut utf8: Vec<u8> = Vec::new();
    let mut read = 0;
    while read < length {
        let room = if read == 0 { length } else { (length - read).saturating_mul(3) };
        if utf8.try_reserve_exact(room).is_err() {
            return Err(Error::out_of_memory(what, utf8.len().saturating_add(room)));
        }
        let start = utf8.len();
        utf8.resize(start + room, 0);
        // A view made after the allocation: growing the memory detaches the views made before.
        let memory: js_sys::WebAssembly::Memory = wasm_bindgen::memory().unchecked_into();
        let into = js_sys::Uint8Array::new_with_byte_offset_and_length(
            &memory.buffer(),
            utf8.as_ptr() as u32 + start as u32,
            room as u32,
        );
        // `read` counts from the start of `text`: what is left is sliced from it, not from a slice.
        let rest = if read == 0 { text.clone() } else { text.slice(read as u32, length as u32) };
        let encoded = ENCODER.with(|encoder| encoder.encode_into(&rest, &into));
        utf8.truncate(start + encoded.written() as usize);
        read += encoded.read() as usize;
        if encoded.read() == 0 {
            return Err(Error::internal(format!("TextEncoder wrote nothing of {what}")));
        }
    }
    String::from_utf8(utf8).map(Some).map_err(|e| Error::internal(format!("TextEncoder gave {what} as bad UTF-8: {e}")))
}

/// Reads a JS value as JSON, once, with errors that say what was wrong with it.
pub(crate) fn from_js(value: &JsValue, what: &str) -> Result<Value> {
    if value.is_undefined() {
        return Err(Error::invalid_argument(format!("{what} is missing (got undefined)")));
    }
    let text = JSON::stringify(value).map_err(|thrown| {
        let reason = thrown
            .dyn_ref::<js_sys::Error>()
            .and_then(|e| e.message().as_string())
            .unwrap_or_else(|| "it cannot be serialised".into());
        Error::invalid_argument(format!("{what} cannot be read as JSON: {reason}"))
    })?;
    let Some(text) = js_string(&text.into(), what)? else {
        return Err(Error::invalid_argument(format!("{what} cannot be read as JSON: it is {}", js_type(value))));
    };
    parse_json_text(&text, what)
}

/// About what parsing `text` allocates: its strings, and a value of some 64 bytes (with its
/// map or vector slot) for each element; counted outside strings.
fn parse_estimate(text: &str) -> usize {
    let (mut nodes, mut in_string, mut escaped) = (0usize, false, false);
    for &b in text.as_bytes() {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
        } else {
            match b {
                b'"' => in_string = true,
                b'{' | b'[' | b',' => nodes += 1,
                _ => {}
            }
        }
    }
    text.len().saturating_add(nodes.saturating_mul(64))
}

pub(crate) fn parse_json_text(text: &str, what: &str) -> Result<Value> {
    if text.len() > LARGE {
        let needed = parse_estimate(text);
        if !room_for(needed) {
            return Err(Error::out_of_memory(what, needed));
        }
    }
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(error) if error.to_string().contains("recursion limit") => {
            Err(Error::invalid_argument(format!("{what} is nested more than 128 levels deep")))
        }
        Err(error) => match replace_lone_surrogates(text) {
            // JS strings may hold unpaired surrogates, which JSON.stringify escapes and
            // serde_json (rightly) refuses; they become U+FFFD, as any UTF-8 conversion would.
            Some(repaired) => parse_json_text(&repaired, what),
            None => Err(Error::invalid_argument(format!("{what} is not valid JSON: {error}"))),
        },
    }
}

/// Rewrites `\uD800`-style escapes that are not half of a pair as `\uFFFD`; `None` if there are none.
fn replace_lone_surrogates(json: &str) -> Option<String> {
    fn escape_at(bytes: &[u8], i: usize) -> Option<u16> {
        if bytes.get(i) == Some(&b'\\') && bytes.get(i + 1) == Some(&b'u') {
            let hex = std::str::from_utf8(bytes.get(i + 2..i + 6)?).ok()?;
            u16::from_str_radix(hex, 16).ok()
        } else {
            None
        }
    }
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut changed = false;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(bytes, i) {
            Some(0xD800..=0xDBFF) if matches!(escape_at(bytes, i + 6), Some(0xDC00..=0xDFFF)) => i += 12,
            Some(0xD800..=0xDFFF) => {
                out.push_str(&json[copied..i]);
                out.push_str("\\uFFFD");
                i += 6;
                copied = i;
                changed = true;
            }
            // Any other escape is two characters or a \uXXXX that is not a surrogate.
            Some(_) => i += 6,
            None => i += 2,
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&json[copied..]);
    Some(out)
}

/// Serialises straight to JSON text (no intermediate `Value` tree) and lets the engine parse it.
pub(crate) fn to_js<T: serde::Serialize + ?Sized>(value: &T) -> Result<JsValue> {
    text_to_js(crate::util::json_text::to_text(value))
}

/// `to_js`'s part that does not depend on the type, compiled once rather than into each of the
/// many callers the generic part is inlined into.
#[inline(never)]
fn text_to_js(text: std::result::Result<String, serde_json::Error>) -> Result<JsValue> {
    let text = text.map_err(|error| match crate::util::json_text::out_of_room(&error) {
        Some(bytes) => Error::out_of_memory("the result", bytes),
        None => Error::internal(format!("serialising a result: {error}")),
    })?;
    JSON::parse(&text).map_err(|_| {
        if text.len() > 1 << 28 {
            Error::resource(format!(
                "the result is {} of JSON, longer than the JS engine's strings can be",
                crate::error::human_bytes(text.len())
            ))
        } else {
            Error::internal("the engine could not parse a result the library serialised")
        }
    })
}

/// Bytes from a `Uint8Array` (a Node `Buffer` is one), another typed array or `DataView`, or an
/// `ArrayBuffer`, copied into the wasm; at most `max` of them.
pub(crate) fn bytes_arg(value: &JsValue, what: &str, max: usize) -> Result<Vec<u8>> {
    let view = if let Some(buffer) = value.dyn_ref::<js_sys::ArrayBuffer>() {
        js_sys::Uint8Array::new(buffer)
    } else if js_sys::ArrayBuffer::is_view(value) {
        let view: &js_sys::DataView = value.unchecked_ref();
        js_sys::Uint8Array::new_with_byte_offset_and_length(
            &view.buffer(),
            view.byte_offset() as u32,
            view.byte_length() as u32,
        )
    } else {
        return Err(Error::invalid_argument(format!(
            "{what} must be a Uint8Array or an ArrayBuffer, got {}",
            js_type(value)
        )));
    };
    let length = view.length() as usize;
    if length > max {
        return Err(Error::invalid_argument(format!("{what} has {length} bytes, more than the {max} it can have")));
    }
    let mut bytes = Vec::new();
    bytes.try_reserve_exact(length).map_err(|_| Error::out_of_memory(what, length))?;
    bytes.resize(length, 0);
    view.copy_to(&mut bytes);
    Ok(bytes)
}

pub(crate) fn string_arg(value: &JsValue, what: &str) -> Result<String> {
    value.as_string().ok_or_else(|| Error::invalid_argument(format!("{what} must be a string, got {}", js_type(value))))
}

/// An optional format argument: the session's when left out.
pub(crate) fn format_arg(value: &JsValue, default: Format) -> Result<Format> {
    if value.is_undefined() || value.is_null() {
        return Ok(default);
    }
    Format::parse(&string_arg(value, "the format")?)
}

/// An options object (or nothing: all defaults) read into `T`, whose serde attributes refuse
/// unknown fields; errors name `what`.
pub(crate) fn options<T: DeserializeOwned>(value: &JsValue, what: &str) -> Result<T> {
    if value.is_undefined() || value.is_null() {
        return crate::error::from_json(Value::Object(Map::new()), &format!("invalid {what}"));
    }
    match from_js_finite(value, what)? {
        Value::Object(map) => read_finite(Value::Object(map), &format!("invalid {what}")),
        other => {
            Err(Error::invalid_argument(format!("{what} must be an object, got {}", message::json::type_name(&other))))
        }
    }
}

/// A value of a core type, read from JS (`what` names it in errors).
pub(crate) fn typed<T: DeserializeOwned>(value: &JsValue, what: &str) -> Result<T> {
    read_finite(from_js_finite(value, what)?, &format!("invalid {what}"))
}

/// `from_js` for a value read into a core type: a number JSON cannot hold (NaN, ±Infinity), which
/// `JSON.stringify` writes as `null` (for an option, "not given"), comes through as a string of
/// `json_de::NON_FINITE` and the number, which the read refuses by name (`read_finite`).
pub(crate) fn from_js_finite(value: &JsValue, what: &str) -> Result<Value> {
    if value.is_undefined() {
        return Err(Error::invalid_argument(format!("{what} is missing (got undefined)")));
    }
    let replacer =
        Closure::<dyn FnMut(JsValue, JsValue) -> JsValue>::new(|_key: JsValue, value: JsValue| match value.as_f64() {
            Some(n) if n.is_nan() => JsValue::from_str(&format!("{NON_FINITE}NaN")),
            Some(n) if n.is_infinite() => {
                JsValue::from_str(&format!("{NON_FINITE}{}", if n > 0.0 { "Infinity" } else { "-Infinity" }))
            }
            _ => value,
        });
    let text = JSON::stringify_with_replacer(value, replacer.as_ref()).map_err(|thrown| {
        let reason = thrown
            .dyn_ref::<js_sys::Error>()
            .and_then(|e| e.message().as_string())
            .unwrap_or_else(|| "it cannot be serialised".into());
        Error::invalid_argument(format!("{what} cannot be read as JSON: {reason}"))
    })?;
    let Some(text) = js_string(&text.into(), what)? else {
        return Err(Error::invalid_argument(format!("{what} cannot be read as JSON: it is {}", js_type(value))));
    };
    parse_json_text(&text, what)
}

/// `value` read as `T`; a number JSON cannot hold (`from_js_finite`) is an error naming where it
/// is, also where any JSON value is taken (the read then does not refuse it itself).
fn read_finite<T: DeserializeOwned>(value: Value, what: &str) -> Result<T> {
    read_finite_with(value, what, |value| crate::error::from_json(value, what))
}

/// `read_finite`, with a reader of the value's own.
pub(crate) fn read_finite_with<T>(value: Value, what: &str, read: impl FnOnce(Value) -> Result<T>) -> Result<T> {
    let non_finite = find_non_finite(&value, &mut String::new());
    let read = read(value)?;
    match non_finite {
        Some((path, number)) => {
            Err(Error::invalid_argument(format!("{what}: {path} must be a finite number, got {number}")))
        }
        None => Ok(read),
    }
}

/// The path (`a.b[2]`) and text of the first number JSON cannot hold in `value` (`from_js_finite`).
fn find_non_finite(value: &Value, path: &mut String) -> Option<(String, String)> {
    match value {
        Value::String(text) => text.strip_prefix(NON_FINITE).map(|number| (path.clone(), number.to_string())),
        Value::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let len = path.len();
            path.push_str(&format!("[{i}]"));
            let found = find_non_finite(item, path);
            path.truncate(len);
            found
        }),
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            let len = path.len();
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(key);
            let found = find_non_finite(item, path);
            path.truncate(len);
            found
        }),
        _ => None,
    }
}

/// An export given as an object or as the JSON text of one.
pub(crate) fn export_arg(data: &JsValue) -> Result<Value> {
    match data.as_string() {
        Some(text) => parse_json_text(&text, "the export"),
        None => from_js(data, "the export"),
    }
}

/// A count option: a whole number from 1 to `max`.
pub(crate) fn count_in(value: Option<u64>, what: &str, default: u64, max: u64) -> Result<u64> {
    match value {
        None => Ok(default),
        Some(n) if (1..=max).contains(&n) => Ok(n),
        Some(n) => Err(Error::invalid_argument(format!("{what} must be a whole number from 1 to {max}, got {n}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        assert_eq!(replace_lone_surrogates(r#""ok""#), None);
        assert_eq!(replace_lone_surrogates(r#""\ud83d\ude00""#), None, "a pair stays");
        assert_eq!(replace_lone_surrogates(r#""a\ud800b""#).as_deref(), Some(r#""a\uFFFDb""#));
        assert_eq!(replace_lone_surrogates(r#""\udc00\\u""#).as_deref(), Some(r#""\uFFFD\\u""#));
        assert_eq!(replace_lone_surrogates(r#""\\ud800""#), None, "an escaped backslash is not an escape");
        let value = parse_json_text(r#"{"t":"x\ud800"}"#, "message").unwrap();
        assert_eq!(value["t"], "x\u{FFFD}");
    }

    #[test]
    fn deep_nesting_is_refused_not_recursed() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let error = parse_json_text(&deep, "messages").unwrap_err();
        assert!(error.message.contains("nested more than 128 levels"), "{error}");
    }
}
