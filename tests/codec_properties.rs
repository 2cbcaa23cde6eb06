//! Property tests of the codecs: nothing a caller sends can panic, whatever is accepted comes
//! back unchanged, and conversion keeps every tool id.

use context_compactor::message::{self, Format};
use context_compactor::tokens::{self, Encoding};
use context_compactor::ConversationHistory;
use proptest::prelude::*;
use serde_json::{json, Map, Value};

const KEYS: &[&str] = &[
    "role",
    "content",
    "type",
    "text",
    "tool_calls",
    "id",
    "function",
    "name",
    "arguments",
    "tool_call_id",
    "tool_use_id",
    "input",
    "source",
    "image_url",
    "url",
    "detail",
    "system",
    "messages",
    "is_error",
    "thinking",
    "signature",
    "data",
    "media_type",
    "refusal",
    "cache_control",
    "call_id",
    "output",
    "encrypted_content",
    "toolCallId",
    "toolName",
    "value",
    "image",
    "mediaType",
    "providerOptions",
    "providerExecuted",
];
const WORDS: &[&str] = &[
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "function",
    "text",
    "image_url",
    "image",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "function_call",
    "function_call_output",
    "reasoning",
    "compaction",
    "message",
    "input_text",
    "output_text",
    "input_image",
    "computer_call",
    "computer_call_output",
    "tool-call",
    "tool-result",
    "json",
    "error-text",
    "content",
    "execution-denied",
    "base64",
    "url",
    "low",
    "c1",
    "c2",
    "{}",
    "{\"a\":1}",
    "[1]",
    "not json",
    "",
    "\u{1F600}",
    "data:image/png;base64,AAAA",
];

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        proptest::sample::select(WORDS).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(KEYS), inner), 0..7).prop_map(|entries| {
                Value::Object(entries.into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Map<_, _>>())
            }),
        ]
    })
}

/// A list of message-shaped objects: a real role, content of any shape, stray fields.
fn message_list() -> impl Strategy<Value = Value> {
    let content = prop_oneof![
        ".{0,12}".prop_map(Value::from),
        proptest::collection::vec(
            (
                proptest::sample::select(&["text", "image_url", "tool_use", "tool_result", "thinking", "odd"][..]),
                ".{0,8}",
                json_value()
            )
                .prop_map(|(kind, text, extra)| json!({"type": kind, "text": text, "extra": extra})),
            0..3
        )
        .prop_map(Value::Array),
        json_value(),
    ];
    let message = (
        proptest::sample::select(&["system", "developer", "user", "assistant", "tool", "robot"][..]),
        content,
        proptest::collection::vec((proptest::sample::select(KEYS), json_value()), 0..3),
    )
        .prop_map(|(role, content, stray)| {
            let mut object = Map::new();
            object.insert("role".into(), Value::from(role));
            object.insert("content".into(), content);
            for (key, value) in stray {
                if key != "role" && key != "content" {
                    object.insert(key.to_string(), value);
                }
            }
            Value::Object(object)
        });
    proptest::collection::vec(message, 0..6).prop_map(Value::Array)
}

fn has_array_system(value: &Value) -> bool {
    let list = match value {
        Value::Array(list) => list,
        Value::Object(request) => match request.get("messages") {
            Some(Value::Array(list)) => list,
            _ => return false,
        },
        _ => return false,
    };
    list.iter().any(|m| m.get("role") == Some(&Value::from("system")))
}

fn exercise(value: Value) {
    for format in [Format::OpenAi, Format::Anthropic, Format::Responses, Format::AiSdk] {
        if let Ok(parsed) = message::parse(value.clone(), format) {
            let emitted = message::emit(&parsed, format);
            let lossless = match format {
                Format::OpenAi | Format::Responses | Format::AiSdk => emitted == value,
                Format::Anthropic if has_array_system(&value) => true,
                Format::Anthropic => match &value {
                    Value::Array(_) => emitted["messages"] == value && emitted.get("system").is_none(),
                    _ => emitted == value,
                },
            };
            assert!(lossless, "round trip changed {value} into {emitted}");
            let other = if format == Format::OpenAi { Format::Anthropic } else { Format::OpenAi };
            // Conversion into the other format always yields something (and never panics).
            let _ = message::emit(&parsed, other);
            tokens::count_messages(Encoding::O200kBase, &parsed, None).expect("counting accepted messages");
        }
        let mut history = ConversationHistory::new(Encoding::Cl100kBase);
        let before = history.len();
        match history.append_values(value.clone(), format) {
            Ok(ids) => assert_eq!(history.len(), before + ids.len()),
            Err(error) => {
                assert_eq!(history.len(), before, "a refused batch leaves the history as it was");
                assert!(!error.to_string().is_empty());
            }
        }
        history.token_report();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4096, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_json_never_panics_and_what_is_accepted_round_trips(value in json_value()) {
        exercise(value);
    }

    #[test]
    fn message_shaped_garbage_never_panics(value in message_list()) {
        exercise(value);
    }
}

/// Valid OpenAI conversations: text turns and assistant steps with parallel tool calls.
fn openai_conversation() -> impl Strategy<Value = Value> {
    let step = (
        proptest::option::of(".{0,20}"),
        proptest::collection::vec(
            ("[a-z_]{1,10}", proptest::sample::select(vec!["{}", "{\"q\":\"x\"}", "{\"n\":[1,2]}"]), ".{0,40}"),
            1..4,
        ),
    );
    let turn = prop_oneof![
        ".{0,40}".prop_map(|t| vec![json!({"role": "user", "content": t})]),
        ".{0,40}".prop_map(|t| vec![json!({"role": "assistant", "content": t})]),
        ".{0,20}".prop_map(|t| vec![json!({"role": "system", "content": t})]),
        step.prop_map(|(text, calls)| (text, calls)).prop_map(|(text, calls)| {
            let ids: Vec<String> = (0..calls.len()).map(|i| format!("call_{i}")).collect();
            let mut out = vec![json!({
                "role": "assistant",
                "content": text.map_or(Value::Null, Value::from),
                "tool_calls": calls.iter().zip(&ids).map(|((name, args, _), id)| json!({
                    "id": id, "type": "function", "function": {"name": name, "arguments": args}
                })).collect::<Vec<_>>(),
            })];
            for ((_, _, result), id) in calls.iter().zip(&ids) {
                out.push(json!({"role": "tool", "tool_call_id": id, "content": result}));
            }
            out
        }),
    ];
    proptest::collection::vec(turn, 1..12).prop_map(|turns| {
        // Give every call a unique id across the conversation.
        let mut n = 0;
        let mut messages = Vec::new();
        for mut turn in turns {
            let mut renamed = std::collections::HashMap::new();
            for message in &mut turn {
                if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
                    for call in calls {
                        n += 1;
                        let fresh = format!("call_{n}");
                        renamed.insert(call["id"].as_str().unwrap_or_default().to_string(), fresh.clone());
                        call["id"] = Value::from(fresh);
                    }
                }
                if let Some(id) = message.get("tool_call_id").and_then(Value::as_str) {
                    let fresh = renamed.get(id).cloned().unwrap_or_default();
                    message["tool_call_id"] = Value::from(fresh);
                }
            }
            messages.extend(turn);
        }
        Value::Array(messages)
    })
}

fn tool_ids(messages: &Value) -> Vec<String> {
    let mut ids = Vec::new();
    for m in messages.as_array().into_iter().flatten() {
        for call in m["tool_calls"].as_array().into_iter().flatten() {
            ids.push(format!("call {}", call["id"].as_str().unwrap_or_default()));
        }
        if let Some(id) = m["tool_call_id"].as_str() {
            ids.push(format!("result {id}"));
        }
    }
    ids
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    #[test]
    fn valid_conversations_are_accepted_and_survive_conversion(conversation in openai_conversation()) {
        let mut history = ConversationHistory::new(Encoding::O200kBase);
        history.append_values(conversation.clone(), Format::OpenAi).expect("a valid conversation is accepted");
        prop_assert_eq!(history.emit(Format::OpenAi), conversation.clone());
        let anthropic = message::convert(conversation.clone(), Format::OpenAi, Format::Anthropic).unwrap();
        let back = message::convert(anthropic, Format::Anthropic, Format::OpenAi).unwrap();
        prop_assert_eq!(tool_ids(&back), tool_ids(&conversation));
        let count = history.token_count();
        prop_assert_eq!(count.messages.len(), history.len());
    }
}
