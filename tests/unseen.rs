//! Shapes of real sessions the shared fixtures lack, hand-made from the providers' and agents'
//! public documentation: each must load or parse, keep what it does not understand, and build a
//! request every provider accepts.

use context_compactor::compact::{validate, BuildOptions};
use context_compactor::load::{load, LoadOptions, Loaded};
use context_compactor::message::{self, Format};
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use serde_json::{json, Value};

const ALL: [Format; 4] = [Format::OpenAi, Format::Anthropic, Format::Responses, Format::AiSdk];

/// Parse-then-emit in the source format gives back the input; the history builds a valid
/// request in every format.
fn lossless_and_builds(value: Value, format: Format) -> Session {
    let parsed = message::parse(value.clone(), format).unwrap_or_else(|e| panic!("{format:?}: {e}"));
    let emitted = message::emit(&parsed, format);
    assert_eq!(emitted, value, "{format:?}: parse-then-emit is lossless");
    builds(value, format)
}

fn builds(value: Value, format: Format) -> Session {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    session.history.append_values(value, format).unwrap_or_else(|e| panic!("append {format:?}: {e}"));
    for to in ALL {
        let options = BuildOptions { format: to, ..BuildOptions::default() };
        let outcome = session.build(&options).unwrap_or_else(|e| panic!("{format:?} -> {to:?}: {e}"));
        let request = outcome.context.to_request().unwrap_or_else(|e| panic!("{format:?} -> {to:?}: {e}"));
        if let Err(v) = validate(&request, to) {
            panic!("{format:?} -> {to:?}: {v:?}\n{request:#}");
        }
    }
    session
}

fn loads(text: &str, name: &str) -> Loaded {
    let loaded = load(text, &LoadOptions { name: Some(name.into()), ..LoadOptions::default() })
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    builds(loaded.messages.clone(), loaded.format);
    loaded
}

fn jsonl(records: &[Value]) -> String {
    records.iter().map(Value::to_string).collect::<Vec<_>>().join("\n")
}

#[test]
fn anthropic_server_tools_documents_citations() {
    let request = json!({
        "system": [{"type": "text", "text": "You research.", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [
                {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"},
                 "title": "spec.pdf", "citations": {"enabled": true}, "cache_control": {"type": "ephemeral"}},
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "The sky is blue."}},
                {"type": "document", "source": {"type": "url", "url": "https://example.com/a.pdf"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
                {"type": "image", "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}},
                {"type": "search_result", "source": "https://docs.example.com/x", "title": "X", "content": [{"type": "text", "text": "x is y"}], "citations": {"enabled": true}},
                {"type": "text", "text": "What is the weather and what does the spec say?"}
            ]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "I should search.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"},
                {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"},
                {"type": "server_tool_use", "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "name": "web_search", "input": {"query": "weather paris"}},
                {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "content": [
                    {"type": "web_search_result", "url": "https://w.example/p", "title": "Paris", "encrypted_content": "EqgfCioIARgBIiQ3YTAwMjY1", "page_age": "1 day"}
                ]},
                {"type": "text", "text": "It is sunny.", "citations": [
                    {"type": "web_search_result_location", "url": "https://w.example/p", "title": "Paris", "encrypted_index": "Eo8BCioIAhgBIiQyYjQ0", "cited_text": "sunny"}
                ]},
                {"type": "text", "text": "The spec says", "citations": [
                    {"type": "page_location", "cited_text": "x", "document_index": 0, "document_title": "spec.pdf", "start_page_number": 1, "end_page_number": 2}
                ]},
                {"type": "tool_use", "id": "toolu_01A", "name": "get_time", "input": {}, "cache_control": {"type": "ephemeral"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01A", "is_error": true, "content": [
                    {"type": "text", "text": "clock unavailable"},
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}},
                    {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "log"}}
                ]},
                {"type": "text", "text": "ok"}
            ]},
            {"role": "assistant", "content": [
                {"type": "server_tool_use", "id": "srvtoolu_02", "name": "code_execution", "input": {"code": "print(1)"}},
                {"type": "code_execution_tool_result", "tool_use_id": "srvtoolu_02", "content": {"type": "code_execution_result", "stdout": "1\n", "stderr": "", "return_code": 0}},
                {"type": "mcp_tool_use", "id": "mcptoolu_01", "name": "echo", "server_name": "srv", "input": {"a": 1}},
                {"type": "mcp_tool_result", "tool_use_id": "mcptoolu_01", "is_error": false, "content": [{"type": "text", "text": "1"}]},
                {"type": "text", "text": "done"}
            ]}
        ]
    });
    lossless_and_builds(request, Format::Anthropic);
}

#[test]
fn openai_chat_parts_audio_legacy_functions() {
    let messages = json!([
        {"role": "developer", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "system", "content": "You help.", "name": "ops"},
        {"role": "user", "name": "alice", "content": [
            {"type": "text", "text": "Look:"},
            {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "low"}},
            {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZF", "format": "wav"}},
            {"type": "file", "file": {"file_id": "file-abc123"}},
            {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQK"}}
        ]},
        {"role": "assistant", "content": null, "refusal": null, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "a", "arguments": "{\"x\":1}"}},
            {"id": "call_2", "type": "function", "function": {"name": "b", "arguments": "{}"}}
        ], "annotations": []},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "b done"}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a done"},
        {"role": "assistant", "content": null, "refusal": "I can't help with that."},
        {"role": "user", "content": "say it"},
        {"role": "assistant", "content": null, "audio": {"id": "audio_abc123"}},
        {"role": "assistant", "content": [{"type": "text", "text": "21C"}, {"type": "refusal", "refusal": "no more"}]},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_3", "type": "custom", "custom": {"name": "sql", "input": "SELECT 1"}}
        ]},
        {"role": "tool", "tool_call_id": "call_3", "content": "1"}
    ]);
    lossless_and_builds(messages, Format::OpenAi);
}

#[test]
fn openai_responses_items() {
    let items = json!([
        {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
        {"role": "user", "content": "hi"},
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "see"},
            {"type": "input_image", "image_url": "https://example.com/a.png", "detail": "auto"},
            {"type": "input_image", "file_id": "file-img", "detail": "high"},
            {"type": "input_file", "file_id": "file-abc"},
            {"type": "input_file", "filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQK"}
        ]},
        {"type": "reasoning", "id": "rs_1", "summary": [{"type": "summary_text", "text": "thinking"}], "encrypted_content": "gAAAAABo"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shot", "arguments": "{}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "here"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}
        ]},
        {"type": "web_search_call", "id": "ws_1", "status": "completed", "action": {"type": "search", "query": "q"}},
        {"type": "file_search_call", "id": "fs_1", "status": "completed", "queries": ["q"], "results": null},
        {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": [
            {"type": "output_text", "text": "Found it.", "annotations": [{"type": "url_citation", "start_index": 0, "end_index": 5, "url": "https://x", "title": "x"}], "logprobs": []},
            {"type": "refusal", "refusal": "but not that"}
        ]},
        {"type": "computer_call", "id": "cu_1", "call_id": "call_c", "action": {"type": "click", "x": 1, "y": 2, "button": "left"}, "pending_safety_checks": [], "status": "completed"},
        {"type": "computer_call_output", "call_id": "call_c", "output": {"type": "computer_screenshot", "image_url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="}},
        {"type": "custom_tool_call", "id": "ctc_1", "call_id": "call_x", "name": "sql", "input": "SELECT 1"},
        {"type": "custom_tool_call_output", "call_id": "call_x", "output": "1"},
        {"type": "local_shell_call", "id": "lsh_1", "call_id": "call_sh", "action": {"type": "exec", "command": ["ls"], "env": {}}, "status": "completed"},
        {"type": "local_shell_call_output", "id": "call_sh", "output": "a\nb"},
        {"type": "mcp_call", "id": "mcp_1", "server_label": "s", "name": "echo", "arguments": "{}", "output": "x"},
        {"type": "image_generation_call", "id": "ig_1", "status": "completed", "result": "iVBORw0KGgo="},
        {"type": "item_reference", "id": "msg_0"},
        {"role": "assistant", "content": "plain"},
        {"role": "user", "content": "bye"}
    ]);
    lossless_and_builds(items, Format::Responses);
}

#[test]
fn ai_sdk_v5_model_messages() {
    let messages = json!([
        {"role": "system", "content": "You help.", "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}}},
        {"role": "user", "content": [
            {"type": "text", "text": "see"},
            {"type": "image", "image": "https://example.com/a.png", "mediaType": "image/png"},
            {"type": "file", "data": "JVBERi0xLjQK", "mediaType": "application/pdf", "filename": "a.pdf"}
        ]},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "hmm", "providerOptions": {"anthropic": {"signature": "sig"}}},
            {"type": "text", "text": "calling"},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "a", "input": {"x": 1}},
            {"type": "tool-call", "toolCallId": "c2", "toolName": "b", "input": {}},
            {"type": "tool-call", "toolCallId": "c3", "toolName": "c", "input": {}},
            {"type": "tool-call", "toolCallId": "c4", "toolName": "d", "input": {}},
            {"type": "tool-call", "toolCallId": "ws", "toolName": "web_search", "input": {"q": 1}, "providerExecuted": true},
            {"type": "tool-result", "toolCallId": "ws", "toolName": "web_search", "output": {"type": "json", "value": [{"url": "u"}]}, "providerExecuted": true}
        ]},
        {"role": "tool", "content": [
            {"type": "tool-result", "toolCallId": "c1", "toolName": "a", "output": {"type": "text", "value": "1"}},
            {"type": "tool-result", "toolCallId": "c2", "toolName": "b", "output": {"type": "json", "value": {"ok": true}}},
            {"type": "tool-result", "toolCallId": "c3", "toolName": "c", "output": {"type": "error-text", "value": "boom"}},
            {"type": "tool-result", "toolCallId": "c4", "toolName": "d", "output": {"type": "content", "value": [
                {"type": "text", "text": "shot"},
                {"type": "media", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", "mediaType": "image/png"}
            ]}}
        ]},
        {"role": "assistant", "content": "ok", "providerOptions": {"openai": {"itemId": "msg_1"}}},
        {"role": "user", "content": [{"type": "text", "text": "json error", "providerOptions": {"x": {}}}]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c5", "toolName": "e", "input": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c5", "toolName": "e", "output": {"type": "error-json", "value": {"code": 1}}}]}
    ]);
    lossless_and_builds(messages, Format::AiSdk);
}
