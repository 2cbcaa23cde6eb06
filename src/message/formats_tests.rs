//! Round trips and conversions of the two list formats: Responses items and AI SDK messages.

use serde_json::{json, Value};

use super::*;

fn round_trip(value: Value, format: Format) {
    let messages = parse(value.clone(), format).unwrap();
    let out = emit(&messages, format);
    assert_eq!(out, value, "{format:?}");
    // Opaque items and parts come back byte for byte, key order included.
    for (emitted, original) in out.as_array().unwrap().iter().zip(value.as_array().unwrap()) {
        let opaque = ["reasoning", "compaction", "web_search_call"].contains(&original["type"].as_str().unwrap_or(""));
        if opaque {
            assert_eq!(emitted.to_string(), original.to_string());
        }
    }
}

fn responses_items() -> Value {
    json!([
        {"role": "developer", "content": "Be brief."},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"},
            {"type": "input_file", "file_id": "file-1"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "think"}], "encrypted_content": "gAAAAB=="},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "read", "arguments": "{\"path\":\"a\"}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": "contents"},
        {"type": "custom_tool_call", "call_id": "call_2", "name": "patch", "input": "*** Begin"},
        {"type": "custom_tool_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "ok"}]},
        {"type": "computer_call", "id": "cu_1", "call_id": "call_3", "action": {"type": "click", "x": 1, "y": 2}, "pending_safety_checks": [], "status": "completed"},
        {"type": "computer_call_output", "call_id": "call_3", "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,AA=="}},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": "done", "annotations": []}]},
        {"type": "compaction", "id": "cmp_1", "encrypted_content": "opaque=="},
        {"role": "user", "content": "next"}
    ])
}

fn ai_sdk_messages() -> Value {
    json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [
            {"type": "text", "text": "look", "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}},
            {"type": "image", "image": "iVBORw0KGgo=", "mediaType": "image/png"},
            {"type": "image", "image": "https://example.com/a.png"},
            {"type": "file", "data": "JVBERi0=", "mediaType": "application/pdf", "filename": "a.pdf"}]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "think", "providerOptions": {"anthropic": {"signature": "sig"}}},
            {"type": "text", "text": "reading"},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "read", "input": {"path": "a"}},
            {"type": "tool-call", "toolCallId": "c2", "toolName": "stat", "input": {"path": "b"}},
            {"type": "tool-call", "toolCallId": "c3", "toolName": "rm", "input": {}},
            {"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "c3"}]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "c1", "toolName": "read", "output": {"type": "text", "value": "contents"}},
            {"type": "tool-result", "toolCallId": "c2", "toolName": "stat", "output": {"type": "json", "value": {"size": 3}}, "providerOptions": {"x": {}}},
            {"type": "tool-approval-response", "approvalId": "ap1", "approved": false}]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "c3", "toolName": "rm", "output": {"type": "execution-denied", "reason": "no"}}]},
        {"role": "assistant", "content": [
            {"type": "tool-call", "toolCallId": "ws", "toolName": "web_search", "input": {}, "providerExecuted": true},
            {"type": "tool-result", "toolCallId": "ws", "toolName": "web_search", "output": {"type": "json", "value": []}},
            {"type": "text", "text": "done"}], "providerOptions": {"openai": {"itemId": "msg_1"}}},
        {"role": "user", "content": "next"}
    ])
}

#[test]
fn responses_items_round_trip() {
    round_trip(responses_items(), Format::Responses);
    let messages = parse(responses_items(), Format::Responses).unwrap();
    assert_eq!(messages.len(), 13, "one message per item");
    assert!(messages[2].is_opaque() && messages[11].is_compaction());
    assert_eq!(messages[3].tool_calls().next().map(|c| c.id.as_str()), Some("call_1"));
    assert_eq!(messages[8].tool_results().next().map(|r| r.call_id.as_str()), Some("call_3"));
}

#[test]
fn ai_sdk_messages_round_trip() {
    round_trip(ai_sdk_messages(), Format::AiSdk);
    let messages = parse(ai_sdk_messages(), Format::AiSdk).unwrap();
    let results: Vec<&str> = messages[3].tool_results().map(|r| r.content.parts.len()).map(|_| "r").collect();
    assert_eq!(results.len(), 2);
    assert_eq!(messages[3].tool_results().nth(1).map(|r| r.content.joined_text()), Some("{\"size\":3}".into()));
}

#[test]
fn reduced_json_output_goes_out_as_text() {
    let mut messages = parse(ai_sdk_messages(), Format::AiSdk).unwrap();
    if let Some(Part::ToolResult(result)) = messages[3].content.parts.get_mut(1) {
        result.content = Content::text("[3 bytes of JSON]");
    }
    let out = emit(&messages, Format::AiSdk);
    assert_eq!(out[3]["content"][1]["output"], json!({"type": "text", "value": "[3 bytes of JSON]"}));
}

#[test]
fn conversions_carry_what_both_formats_express() {
    let chat = json!([
        {"role": "system", "content": "s"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": null, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "assistant", "content": "done"}
    ]);
    let responses = convert(chat.clone(), Format::OpenAi, Format::Responses).unwrap();
    assert_eq!(
        responses,
        json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "hi"},
            {"type": "function_call", "call_id": "a", "name": "f", "arguments": "{\"x\":1}"},
            {"type": "function_call_output", "call_id": "a", "output": "A"},
            {"role": "assistant", "content": "done"}
        ])
    );
    let ai = convert(chat.clone(), Format::OpenAi, Format::AiSdk).unwrap();
    assert_eq!(
        ai,
        json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "a", "toolName": "f", "input": {"x": 1}}]},
            {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "a", "toolName": "f", "output": {"type": "text", "value": "A"}}]},
            {"role": "assistant", "content": "done"}
        ])
    );
    // And back: the chat list again (tool arguments as text, re-serialised).
    assert_eq!(convert(ai, Format::AiSdk, Format::OpenAi).unwrap()[3], chat[3]);
    let back = convert(responses, Format::Responses, Format::OpenAi).unwrap();
    assert_eq!(back[2]["tool_calls"][0]["function"]["arguments"], "{\"x\":1}");
    assert_eq!(back[3], chat[3]);
    // Opaque items have no form elsewhere: left out, never emptied.
    let chat = convert(responses_items(), Format::Responses, Format::OpenAi).unwrap();
    assert!(chat.as_array().unwrap().iter().all(|m| m.get("role").is_some()));
    assert!(!chat.to_string().contains("encrypted_content"));
    let anthropic = convert(ai_sdk_messages(), Format::AiSdk, Format::Anthropic).unwrap();
    assert!(anthropic["messages"][1]["content"].as_array().unwrap().iter().any(|b| b["type"] == "tool_use"));
}

#[test]
fn bad_items_are_named() {
    let error = parse(json!([{"type": "function_call", "call_id": "c", "name": "f"}]), Format::Responses).unwrap_err();
    assert!(error.message.contains("arguments"), "{error}");
    let error = parse(json!([{"role": "tool", "content": "x"}]), Format::AiSdk).unwrap_err();
    assert!(error.message.contains("tool message content"), "{error}");
    let error = parse(json!([{"role": "user", "content": [{"type": "tool-result"}]}]), Format::AiSdk).unwrap_err();
    assert!(error.message.contains("do not belong"), "{error}");
}

#[test]
fn errors_name_the_place_at_every_depth() {
    let path = |value: Value, format: Format| parse(value, format).unwrap_err().into_details().path.unwrap_or_default();
    let call = |body: Value| {
        json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": null, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}}, body]}])
    };
    assert_eq!(path(call(json!(3)), Format::OpenAi), "messages[1].tool_calls[1]");
    assert_eq!(path(call(json!({"type": "function", "function": {}})), Format::OpenAi), "messages[1].tool_calls[1].id");
    assert_eq!(
        path(call(json!({"id": "c2", "type": "function", "function": {"arguments": "{}"}})), Format::OpenAi),
        "messages[1].tool_calls[1].function.name"
    );
    assert_eq!(
        path(call(json!({"id": "c2", "type": "custom", "custom": {"name": "x"}})), Format::OpenAi),
        "messages[1].tool_calls[1].custom.input"
    );
    let image =
        json!([{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}]}]);
    assert_eq!(path(image, Format::OpenAi), "messages[0].content[1].image_url.url");
    let nested = json!([{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "a", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "ok"}, {"text": "no type"}]}]}]);
    assert_eq!(path(nested, Format::Anthropic), "messages[1].content[0].content[1].type");
    let source = json!([{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png"}}]}]);
    assert!(path(source, Format::Anthropic).starts_with("messages[0].content[0].source."));
    let part = json!([{"role": "user", "content": [{"type": "input_text"}]}]);
    assert_eq!(path(part, Format::Responses), "messages[0].content[0].text");
}

/// `value` with the keys of every object at every depth reordered: reversed, or rotated by `by`.
fn reordered(value: &Value, by: Option<usize>) -> Value {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.iter().map(|(k, v)| (k.clone(), reordered(v, by))).collect();
            match by {
                None => entries.reverse(),
                Some(n) if !entries.is_empty() => {
                    let n = n % entries.len();
                    entries.rotate_left(n);
                }
                Some(_) => {}
            }
            Value::Object(entries.into_iter().collect())
        }
        Value::Array(items) => Value::Array(items.iter().map(|item| reordered(item, by)).collect()),
        other => other.clone(),
    }
}

fn openai_messages() -> Value {
    json!([
        {"role": "system", "content": "Be brief.", "name": "rules"},
        {"role": "user", "content": [
            {"type": "text", "text": "look"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}}]},
        {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"path\":\"a\",\"mode\":\"r\"}"}},
            {"id": "c2", "type": "custom", "custom": {"name": "patch", "input": "*** Begin"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "contents"},
        {"role": "tool", "tool_call_id": "c2", "content": [{"type": "text", "text": "ok"}]},
        {"role": "assistant", "content": "done", "tool_calls": []}
    ])
}

fn anthropic_messages() -> Value {
    json!([
        {"role": "user", "content": [
            {"type": "text", "text": "look", "cache_control": {"type": "ephemeral"}},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "think", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a", "lines": {"from": 1, "to": 9}}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": [{"type": "text", "text": "contents"}], "is_error": false},
            {"type": "text", "text": "next"}]}
    ])
}

/// Each message reads back as the same bytes, whatever the key order of its objects (the
/// APIs' own, reversed, rotated): get(), an export and a stored session emit what was appended.
#[test]
fn every_format_reads_back_each_objects_keys_in_the_order_given() {
    for (format, list) in [
        (Format::OpenAi, openai_messages()),
        (Format::Anthropic, anthropic_messages()),
        (Format::AiSdk, ai_sdk_messages()),
        (Format::Responses, responses_items()),
    ] {
        for by in [Some(0), None, Some(1), Some(2), Some(3)] {
            let variant = reordered(&list, by);
            for (i, original) in variant.as_array().unwrap().iter().enumerate() {
                let message = parse_one(original.clone(), format, i).unwrap();
                let emitted = emit_one(&message, format).unwrap();
                assert_eq!(
                    crate::util::json_text::value_text(&emitted),
                    crate::util::json_text::value_text(original),
                    "{format:?}, keys {by:?}, message {i}"
                );
            }
        }
    }
}
