mod common;

use context_compactor::message::{self, Format, Part, Role};
use serde_json::{json, Value};

fn round_trip(messages: &Value, format: Format) -> Value {
    let parsed = message::parse(messages.clone(), format).expect("fixture parses");
    message::emit(&parsed, format)
}

#[test]
fn every_airline_run_round_trips_losslessly() {
    let runs = common::airline_runs();
    assert_eq!(runs.len(), 40);
    let mut total = 0;
    for run in &runs {
        assert_eq!(&round_trip(run, Format::OpenAi), run);
        total += run.as_array().map_or(0, Vec::len);
    }
    assert_eq!(total, 1780);
}

#[test]
fn swe_agent_trajectory_round_trips_with_its_extra_fields() {
    let history = common::swe_agent();
    assert_eq!(history.as_array().map(Vec::len), Some(22));
    assert_eq!(round_trip(&history, Format::OpenAi), history);
    let parsed = message::parse(history, Format::OpenAi).unwrap();
    assert!(parsed[0].extra.contains_key("message_type"), "unknown fields are kept");
}

/// Unknown fields travel after the known ones, in the order they came in. (`Value`'s equality
/// ignores the order of an object's keys, so the order is checked on the text.)
#[test]
fn unknown_fields_come_back_in_the_order_they_came_in() {
    let openai = json!([
        {"role": "user", "content": [{"type": "text", "text": "hi", "zeta": 1, "alpha": 2, "mid": 3}], "zeta": 1, "alpha": 2, "mid": 3},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "function": {"name": "f", "arguments": "{}", "zf": 1, "af": 2}, "zz": 1, "type": "function", "aa": 2, "mm": 3}
        ], "zeta": 1, "alpha": 2, "mid": 3},
        {"role": "tool", "tool_call_id": "c1", "content": "ok", "zeta": 1, "alpha": 2, "mid": 3}
    ]);
    let anthropic = json!({"system": "s", "messages": [
        {"role": "user", "content": [{"type": "text", "text": "hi", "zt": 1, "at": 2, "mt": 3}], "zeta": 1, "alpha": 2, "mid": 3},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"z": 1, "a": 2}, "zu": 1, "au": 2, "mu": 3}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok", "zr": 1, "ar": 2, "mr": 3}]}
    ]});
    for (messages, format) in [(openai, Format::OpenAi), (anthropic, Format::Anthropic)] {
        let text = |value: &Value| serde_json::to_string(value).unwrap();
        assert_eq!(text(&round_trip(&messages, format)), text(&messages), "{format:?}");
    }
}

#[test]
fn claude_code_records_round_trip_one_by_one() {
    for log in common::CLAUDE_CODE_LOGS {
        let records = common::claude_code(log);
        assert!(!records.is_empty());
        for (i, record) in records.iter().enumerate() {
            let parsed = message::parse_anthropic_message(record.clone(), i).expect("record parses");
            let emitted = message::emit(&[parsed], Format::Anthropic);
            assert_eq!(emitted["messages"][0], *record, "{log} record {i}");
        }
    }
}

#[test]
fn claude_code_logs_round_trip_as_one_list() {
    for log in common::CLAUDE_CODE_LOGS {
        let records = Value::Array(common::claude_code(log));
        assert_eq!(round_trip(&records, Format::Anthropic)["messages"], records, "{log}");
    }
}

#[test]
fn anthropic_request_keeps_its_system_blocks() {
    let request = json!({
        "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        "messages": [{"role": "user", "content": "hi"}]
    });
    assert_eq!(round_trip(&request, Format::Anthropic), request);
}

#[test]
fn airline_converts_to_anthropic_and_back_keeping_roles_texts_and_tool_ids() {
    for run in common::airline_runs().iter().take(50) {
        let anthropic = message::convert(run.clone(), Format::OpenAi, Format::Anthropic).unwrap();
        let messages = anthropic["messages"].as_array().unwrap();
        // Alternation holds after conversion: tool results merge into user turns.
        for pair in messages.windows(2) {
            assert_ne!(pair[0]["role"], pair[1]["role"], "roles alternate");
        }
        assert_eq!(anthropic["system"], run[0]["content"]);
        let back = message::convert(anthropic, Format::Anthropic, Format::OpenAi).unwrap();
        let ids = |list: &Value| -> Vec<String> {
            let mut ids = Vec::new();
            for m in list.as_array().unwrap() {
                for call in m["tool_calls"].as_array().into_iter().flatten() {
                    ids.push(format!("call:{}", call["id"].as_str().unwrap()));
                }
                if let Some(id) = m["tool_call_id"].as_str() {
                    ids.push(format!("result:{id}"));
                }
            }
            ids
        };
        assert_eq!(ids(&back), ids(run));
        let texts = |list: &Value| -> Vec<String> {
            list.as_array()
                .unwrap()
                .iter()
                .filter_map(|m| m["content"].as_str().map(str::to_string))
                .filter(|t| !t.is_empty())
                .collect()
        };
        assert_eq!(texts(&back), texts(run));
    }
}

#[test]
fn claude_code_converts_to_openai_with_tool_messages() {
    let records = Value::Array(common::claude_code("claude-code-tool-heavy.jsonl"));
    let openai = message::convert(records.clone(), Format::Anthropic, Format::OpenAi).unwrap();
    let parsed = message::parse(openai.clone(), Format::OpenAi).expect("conversion is valid OpenAI input");
    let calls: Vec<&str> = parsed.iter().flat_map(|m| m.tool_calls()).map(|c| c.id.as_str()).collect();
    let results: Vec<&str> = parsed
        .iter()
        .filter(|m| m.role == Role::Tool)
        .flat_map(|m| m.tool_results())
        .map(|r| r.call_id.as_str())
        .collect();
    assert_eq!(calls.len(), 9);
    assert_eq!(results.len(), 9);
    for id in &results {
        assert!(calls.contains(id));
    }
    assert!(parsed.iter().all(|m| !m.content.parts.iter().any(|p| matches!(p, Part::Thinking { .. }))));
}

#[test]
fn images_convert_between_data_urls_and_base64_sources() {
    let openai = json!([{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}
    ]}]);
    let anthropic = message::convert(openai, Format::OpenAi, Format::Anthropic).unwrap();
    assert_eq!(
        anthropic["messages"][0]["content"][1],
        json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}})
    );
    let back = message::convert(anthropic, Format::Anthropic, Format::OpenAi).unwrap();
    assert_eq!(back[0]["content"][1]["image_url"]["url"], "data:image/png;base64,iVBORw0KGgo=");
}

#[test]
fn tool_arguments_that_are_not_a_json_object_still_convert() {
    let openai = json!([
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"city\": \"Par"}},
            {"id": "c2", "type": "function", "function": {"name": "g", "arguments": "[1, 2]"}},
            {"id": "c3", "type": "function", "function": {"name": "h", "arguments": ""}}
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "a"},
        {"role": "tool", "tool_call_id": "c2", "content": "b"},
        {"role": "tool", "tool_call_id": "c3", "content": "c"}
    ]);
    let anthropic = message::convert(openai, Format::OpenAi, Format::Anthropic).expect("conversion never fails");
    let calls = &anthropic["messages"][1]["content"];
    assert_eq!(calls[0]["input"], json!({"arguments": "{\"city\": \"Par"}));
    assert_eq!(calls[1]["input"], json!({"arguments": "[1, 2]"}));
    assert_eq!(calls[2]["input"], json!({}));
}

/// A 1×1 PNG, base64.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

fn image_message(format: Format, data: &str) -> Value {
    let url = format!("data:image/png;base64,{data}");
    match format {
        Format::OpenAi => json!([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]),
        Format::Anthropic => json!([{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]}]),
        Format::Responses => json!([{"role": "user", "content": [{"type": "input_image", "image_url": url}]}]),
        Format::AiSdk => {
            json!([{"role": "user", "content": [{"type": "image", "image": data, "mediaType": "image/png"}]}])
        }
    }
}

#[test]
fn broken_inline_image_data_is_refused_with_its_path() {
    for format in [Format::OpenAi, Format::Anthropic, Format::Responses, Format::AiSdk] {
        let good = image_message(format, PNG);
        let emitted = round_trip(&good, format);
        let emitted = if format == Format::Anthropic { &emitted["messages"] } else { &emitted };
        assert_eq!(emitted, &good, "{format:?}: well-formed data round-trips");
        for (bad, why) in [("iVBOR*w0KGgo", "not base64"), ("", "empty"), ("iVBORw0KG", "cannot end")] {
            let error = message::parse(image_message(format, bad), format).expect_err("broken data is refused");
            let text = error.to_string();
            assert!(text.contains(why), "{format:?} {bad:?}: {text}");
            assert!(text.contains("messages[0].content[0]"), "{format:?}: the error names where: {text}");
        }
    }
}

/// The generated coding session as Responses input items and as AI SDK model messages: read and
/// written back as they were, and converted to OpenAI Chat with every call and its result.
#[test]
fn responses_and_ai_sdk_sessions_round_trip_and_convert() {
    for (file, format) in
        [("responses/coding-session.json", Format::Responses), ("ai-sdk/coding-session.json", Format::AiSdk)]
    {
        let session = common::read_json(file);
        assert_eq!(round_trip(&session, format), session, "{file}");
        let openai = message::convert(session, format, Format::OpenAi).unwrap();
        let parsed = message::parse(openai, Format::OpenAi).expect("valid OpenAI input");
        let calls: Vec<&str> = parsed.iter().flat_map(|m| m.tool_calls()).map(|c| c.id.as_str()).collect();
        let results: Vec<&str> = parsed.iter().flat_map(|m| m.tool_results()).map(|r| r.call_id.as_str()).collect();
        assert_eq!((calls.len(), &results), (5, &calls), "{file}");
        let images = parsed.iter().flat_map(|m| &m.content.parts).filter(|p| matches!(p, Part::Image { .. })).count();
        assert_eq!(images, 1, "{file}: the screenshot");
    }
}
