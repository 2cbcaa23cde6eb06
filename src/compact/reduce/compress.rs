//! Tool-output compression, of JSON and of plain text.
//!
//! JSON keeps every scalar (so `success`, `total`, `count`, `status` survive), cuts long strings,
//! and keeps the first and last items of long arrays with a marker saying how many were left
//! out; the items kept from a cut array keep only their identifying fields when they have any.
//! Plain text keeps its head and tail (the default) or is cut.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum TextMode {
    /// Over `textMaxChars`, keep `textHead` + `textTail` characters and say how many were left out.
    HeadTail,
    /// Over `textMaxChars`, cut there and give the total.
    Truncate,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct CompressOptions {
    /// Only results above this many tokens are compressed (default 200).
    pub max_tokens: u32,
    /// Items kept at each end of a long array (default 2).
    pub array_keep: usize,
    /// Strings inside JSON longer than this are cut.
    pub string_max_chars: usize,
    /// Deeper JSON than this is replaced by a short description.
    pub max_depth: usize,
    pub text_mode: TextMode,
    pub text_max_chars: usize,
    pub text_head: usize,
    pub text_tail: usize,
}

impl Default for CompressOptions {
    fn default() -> Self {
        CompressOptions {
            max_tokens: 200,
            array_keep: 2,
            string_max_chars: 200,
            max_depth: 6,
            text_mode: TextMode::HeadTail,
            text_max_chars: 5000,
            text_head: 1000,
            text_tail: 1000,
        }
    }
}

impl CompressOptions {
    pub fn validate(&self) -> Result<()> {
        if self.array_keep == 0 {
            return Err(Error::invalid_argument("compress.arrayKeep must be at least 1"));
        }
        if self.string_max_chars < 8 {
            return Err(Error::invalid_argument("compress.stringMaxChars must be at least 8"));
        }
        if self.text_mode == TextMode::HeadTail && self.text_head + self.text_tail >= self.text_max_chars {
            return Err(Error::invalid_argument(
                "compress.textHead + compress.textTail must be less than compress.textMaxChars",
            ));
        }
        if self.text_max_chars == 0 {
            return Err(Error::invalid_argument("compress.textMaxChars must be positive"));
        }
        Ok(())
    }
}

/// The compressed form of a tool output, or `None` when compression would not make it shorter.
pub fn compress_text(text: &str, options: &CompressOptions) -> Option<String> {
    let trimmed = text.trim_start();
    let compressed = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => compressed_text(value, options),
            Err(_) => compress_plain(text, options)?,
        }
    } else {
        compress_plain(text, options)?
    };
    (compressed.len() < text.len()).then_some(compressed)
}

pub fn compress_json(value: &Value, options: &CompressOptions) -> String {
    compressed_text(value.clone(), options)
}

/// The compressed value as text, an object marked `compressed`.
fn compressed_text(value: Value, options: &CompressOptions) -> String {
    let mut out = compress_value(value, options, 0, false);
    if let Value::Object(map) = &mut out {
        if !map.contains_key("compressed") {
            map.insert("compressed".into(), Value::Bool(true));
        }
    }
    crate::util::json_text::value_text(&out)
}

/// Compresses the parsed output in place: what it keeps is moved, not copied (most of a tool
/// output that is compressed is kept: its scalars, its short arrays, its objects' fields).
fn compress_value(value: Value, options: &CompressOptions, depth: usize, project: bool) -> Value {
    match value {
        Value::String(s) => Value::String(cut_string(s, options.string_max_chars)),
        Value::Array(items) if depth >= options.max_depth => Value::String(format!("[{} items]", items.len())),
        Value::Object(map) if depth >= options.max_depth => Value::String(format!("{{{} keys}}", map.len())),
        Value::Array(items) => {
            let keep = options.array_keep;
            let len = items.len();
            if len > 2 * keep + 1 {
                let mut out = Vec::with_capacity(2 * keep + 1);
                let mut items = items.into_iter();
                for item in items.by_ref().take(keep) {
                    out.push(compress_value(item, options, depth + 1, true));
                }
                out.push(Value::String(format!("... ({} items omitted)", len - 2 * keep)));
                for item in items.skip(len - 2 * keep) {
                    out.push(compress_value(item, options, depth + 1, true));
                }
                Value::Array(out)
            } else {
                Value::Array(items.into_iter().map(|item| compress_value(item, options, depth + 1, project)).collect())
            }
        }
        Value::Object(mut map) => {
            if project && map.keys().any(|k| is_identifying(k)) {
                map.retain(|key, _| is_identifying(key));
            }
            for inner in map.values_mut() {
                *inner = compress_value(std::mem::take(inner), options, depth + 1, false);
            }
            Value::Object(map)
        }
        other => other,
    }
}

/// Fields that name an item (`id`, `title`): all that is kept of each previewed item.
fn is_identifying(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    matches!(lower.as_str(), "id" | "name" | "title" | "key" | "type" | "status" | "date" | "path" | "label")
        || lower.ends_with("_id")
        || lower.ends_with("_number")
        || key.ends_with("Id")
}

fn cut_string(s: String, max_chars: usize) -> String {
    let count = s.chars().count();
    if count <= max_chars {
        return s;
    }
    let head: String = s.chars().take(max_chars).collect();
    format!("{head}... ({count} chars)")
}

fn compress_plain(text: &str, options: &CompressOptions) -> Option<String> {
    let count = text.chars().count();
    if count <= options.text_max_chars {
        return None;
    }
    Some(match options.text_mode {
        TextMode::HeadTail => {
            let head: String = text.chars().take(options.text_head).collect();
            // `validate` keeps head + tail below max; saturating keeps unvalidated options safe.
            let tail: String = text.chars().skip(count.saturating_sub(options.text_tail)).collect();
            let omitted = count.saturating_sub(options.text_head + options.text_tail);
            format!("{head}\n\n[... {omitted} chars omitted ...]\n\n{tail}")
        }
        TextMode::Truncate => {
            let head: String = text.chars().take(options.text_max_chars).collect();
            format!("{head}\n... (truncated, {count} chars total)")
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seed_001_twenty_item_json_keeps_success_total_and_the_ends() {
        let items: Vec<Value> = (1..=20)
            .map(|i| {
                json!({"id": i, "title": format!("Meeting {}", (b'A' + i as u8 - 1) as char),
                       "start_time": "2026-01-20T10:00:00", "location": "Room 4", "attendees": ["a", "b"]})
            })
            .collect();
        let original = json!({"success": true, "items": items, "total": 20});
        let text = original.to_string();
        let out = compress_text(&text, &CompressOptions::default()).unwrap();
        let value: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(value["success"], true);
        assert_eq!(value["total"], 20);
        assert_eq!(value["compressed"], true);
        assert_eq!(
            value["items"],
            json!([
                {"id": 1, "title": "Meeting A"},
                {"id": 2, "title": "Meeting B"},
                "... (16 items omitted)",
                {"id": 19, "title": "Meeting S"},
                {"id": 20, "title": "Meeting T"}
            ])
        );
        assert!(out.len() * 3 < text.len());
    }

    #[test]
    fn seed_004_long_text_keeps_1000_and_1000() {
        let text: String = (0..6000).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let out = compress_text(&text, &CompressOptions::default()).unwrap();
        assert!(out.starts_with(&text[..1000]));
        assert!(out.ends_with(&text[5000..]));
        assert!(out.contains("[... 4000 chars omitted ...]"));
        assert_eq!(compress_text(&text[..4000], &CompressOptions::default()), None);
    }

    #[test]
    fn seed_000_truncation_gives_the_total() {
        let options = CompressOptions { text_mode: TextMode::Truncate, text_max_chars: 1000, ..Default::default() };
        let text = "x".repeat(2500);
        let out = compress_text(&text, &options).unwrap();
        assert_eq!(out, format!("{}\n... (truncated, 2500 chars total)", "x".repeat(1000)));
    }

    /// Compression works on the parsed output in place: a projection keeps the identifying keys
    /// in their order (a repeated key where it first was, with its last value), the items left
    /// out are the middle ones, and depth is cut where it was.
    #[test]
    fn projection_and_cut_arrays_keep_the_order_of_the_text() {
        let long = "y".repeat(300);
        let text =
            format!(r#"[{{"b":1,"id":2,"note":"n","id":3,"name":"x"}},{{"b":2}},"{long}","{long}",{{"c":[[1]]}},6]"#);
        let options = CompressOptions { max_depth: 3, ..Default::default() };
        assert_eq!(
            compress_text(&text, &options).unwrap(),
            r#"[{"id":3,"name":"x"},{"b":2},"... (2 items omitted)",{"c":["[1 items]"]},6]"#
        );
        let nested =
            r#"{"ok":true,"rows":[{"k":"a"},{"k":"b"}],"deep":{"a":{"b":{"c":{"d":{"e":{"f":1}}}}}},"pad":"PAD"}"#
                .replace("PAD", &"z".repeat(300));
        assert_eq!(
            compress_text(&nested, &CompressOptions::default()).unwrap(),
            format!(
                r#"{{"ok":true,"rows":[{{"k":"a"}},{{"k":"b"}}],"deep":{{"a":{{"b":{{"c":{{"d":{{"e":"{{1 keys}}"}}}}}}}}}},"pad":"{}... (300 chars)","compressed":true}}"#,
                "z".repeat(200)
            )
        );
    }

    #[test]
    fn long_strings_in_json_are_cut() {
        let text = json!({"ok": true, "log": "y".repeat(1000)}).to_string();
        let out: Value = serde_json::from_str(&compress_text(&text, &CompressOptions::default()).unwrap()).unwrap();
        assert_eq!(out["ok"], true);
        assert!(out["log"].as_str().unwrap().ends_with("... (1000 chars)"));
    }
}
