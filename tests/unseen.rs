//! Shapes of real sessions the shared fixtures lack, hand-made from the providers' and agents'
//! public documentation: each must load or parse, keep what it does not understand, and build a
//! request every provider accepts.

use context_compactor::compact::{validate, BuildOptions};
use context_compactor::load::{load, LoadOptions, Loaded, Source};
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
    // Into another format, a conversion is a request that format's provider takes (the source
    // format's own list comes back as it was, response-only fields included).
    for to in ALL.into_iter().filter(|to| *to != format) {
        let converted =
            message::convert(value.clone(), format, to).unwrap_or_else(|e| panic!("{format:?} -> {to:?}: {e}"));
        if let Err(v) = validate(&converted, to) {
            panic!("convert {format:?} -> {to:?}: {v:?}\n{converted:#}");
        }
    }
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

fn cc(kind: &str, uuid: &str, parent: Option<&str>, message: Value) -> Value {
    json!({"parentUuid": parent, "isSidechain": false, "userType": "external", "cwd": "/repo", "sessionId": "s1",
           "version": "1.0.80", "gitBranch": "main", "type": kind, "message": message, "uuid": uuid,
           "timestamp": "2025-08-01T10:00:00.000Z"})
}

/// An assistant record of a Claude Code log: one API response (`id`) holding `content`.
fn reply(uuid: &str, parent: &str, id: &str, content: Value) -> Value {
    let message = json!({"id": id, "type": "message", "role": "assistant", "model": "claude-opus-4-1", "content": content,
        "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}});
    cc("assistant", uuid, Some(parent), message)
}

const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

#[test]
fn claude_code_bookkeeping_streaming_images_compaction() {
    let mut records = vec![
        json!({"type": "summary", "summary": "Fixing the parser", "leafUuid": "elsewhere-1"}),
        json!({"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"messageId": "u1", "trackedFileBackups": {}, "timestamp": "2025-08-01T10:00:00.000Z"}, "isSnapshotUpdate": false}),
        cc("user", "u0", None, json!({"role": "user", "content": "<command-name>/clear</command-name>"})),
        {
            let mut r = cc(
                "user",
                "m0",
                Some("u0"),
                json!({"role": "user", "content": [{"type": "text", "text": "Caveat: local commands"}]}),
            );
            r["isMeta"] = json!(true);
            r
        },
        cc(
            "user",
            "u1",
            Some("m0"),
            json!({"role": "user", "content": [
                {"type": "text", "text": "What is in this screenshot?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
            ]}),
        ),
        cc(
            "assistant",
            "a1",
            Some("u1"),
            json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "thinking", "thinking": "", "signature": "ErUBCkYIBBgCIkB"}], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 4, "output_tokens": 1}}),
        ),
        cc(
            "assistant",
            "a2",
            Some("a1"),
            json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": "Let me look."}], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 4, "output_tokens": 1}}),
        ),
        cc(
            "assistant",
            "a3",
            Some("a2"),
            json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "tool_use", "id": "toolu_A", "name": "Read", "input": {"file_path": "/repo/shot.png"}}], "stop_reason": null, "stop_sequence": null, "usage": {"input_tokens": 4, "output_tokens": 1}}),
        ),
        cc(
            "assistant",
            "a4",
            Some("a3"),
            json!({"id": "msg_01", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "tool_use", "id": "toolu_B", "name": "Task", "input": {"description": "look", "prompt": "find it", "subagent_type": "general-purpose"}}], "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 4, "output_tokens": 50}}),
        ),
        {
            let mut r = cc(
                "user",
                "r1",
                Some("a4"),
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "content": [
                    {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
                ]}]}),
            );
            r["toolUseResult"] =
                json!({"type": "image", "file": {"base64": PNG, "type": "image/png", "originalSize": 70}});
            r
        },
        // The sub-agent's own conversation, on a side chain.
        {
            let mut r = cc("user", "s1", None, json!({"role": "user", "content": "find it"}));
            r["isSidechain"] = json!(true);
            r
        },
        {
            let mut r = cc(
                "assistant",
                "s2",
                Some("s1"),
                json!({"id": "msg_sub", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
                "content": [{"type": "tool_use", "id": "toolu_S", "name": "Grep", "input": {"pattern": "x"}}], "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}),
            );
            r["isSidechain"] = json!(true);
            r
        },
        {
            let mut r = cc(
                "user",
                "r2",
                Some("r1"),
                json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_B", "content": [{"type": "text", "text": "Found it in a.rs"}]}]}),
            );
            r["toolUseResult"] = json!({"content": [{"type": "text", "text": "Found it in a.rs"}], "totalDurationMs": 1000, "totalTokens": 10, "totalToolUseCount": 1});
            r
        },
        json!({"parentUuid": "r2", "isSidechain": false, "type": "system", "subtype": "informational", "content": "Hook ran", "level": "info", "uuid": "sys1", "timestamp": "2025-08-01T10:00:01.000Z"}),
        cc(
            "assistant",
            "a5",
            Some("sys1"),
            json!({"id": "msg_02", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}, {"type": "text", "text": "It is a cat."}], "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 4, "output_tokens": 9}}),
        ),
        json!({"parentUuid": null, "logicalParentUuid": "a5", "isSidechain": false, "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted", "isMeta": false, "level": "info", "compactMetadata": {"trigger": "auto", "preTokens": 155000}, "uuid": "cb1", "timestamp": "2025-08-01T11:00:00.000Z"}),
        {
            let mut r = cc(
                "user",
                "cs1",
                Some("cb1"),
                json!({"role": "user", "content": "This session is being continued from a previous conversation. Summary: a cat."}),
            );
            r["isCompactSummary"] = json!(true);
            r["isVisibleInTranscriptOnly"] = json!(true);
            r
        },
        cc("user", "u2", Some("cs1"), json!({"role": "user", "content": "thanks"})),
        {
            let mut r = cc(
                "assistant",
                "e1",
                Some("u2"),
                json!({"id": "b6f0a0c1-synthetic", "type": "message", "role": "assistant", "model": "<synthetic>",
                "content": [{"type": "text", "text": "API Error: Request was aborted."}], "stop_reason": "stop_sequence", "stop_sequence": "", "usage": {"input_tokens": 0, "output_tokens": 0}}),
            );
            r["isApiErrorMessage"] = json!(true);
            r
        },
    ];
    records.push(cc("user", "u3", Some("e1"), json!({"role": "user", "content": "[Request interrupted by user]"})));
    let loaded = loads(&jsonl(&records), "session.jsonl");
    let messages = loaded.messages["messages"].as_array().unwrap();
    // One response per message id; the sub-agent's records are left out, and said to be.
    assert!(loaded.notes.iter().any(|n| n.contains("sidechain")), "{:?}", loaded.notes);
    let text = serde_json::to_string(messages).unwrap();
    assert!(!text.contains("toolu_S"));
    assert!(text.contains("Found it in a.rs") && text.contains("It is a cat.") && text.contains("API Error"));
}

/// A user asks to run the tests; the assistant calls Bash (line 2), not answered yet.
fn run_the_tests() -> [Value; 2] {
    [
        cc("user", "u1", None, json!({"role": "user", "content": "run the tests"})),
        reply(
            "a1",
            "u1",
            "msg_01",
            json!([{"type": "tool_use", "id": "toolu_A", "name": "Bash", "input": {"command": "cargo test"}}]),
        ),
    ]
}

#[test]
fn claude_code_log_cut_mid_tool_use() {
    loads(&jsonl(&run_the_tests()), "cut.jsonl");
}

#[test]
fn claude_code_interrupted_tool_use() {
    let mut records = run_the_tests().to_vec();
    records.extend([
        cc(
            "user",
            "r1",
            Some("a1"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_A", "is_error": true,
            "content": "The user doesn't want to proceed with this tool use. The tool use was rejected."}]}),
        ),
        cc(
            "user",
            "i1",
            Some("r1"),
            json!({"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}),
        ),
        cc("user", "u2", Some("i1"), json!({"role": "user", "content": "no, run only the unit tests"})),
        reply("a2", "u2", "msg_02", json!([{"type": "text", "text": "OK."}])),
    ]);
    loads(&jsonl(&records), "interrupted.jsonl");
}

/// Claude Code writes a sub-agent's transcript to its own file (`agent-<id>.jsonl`), every record
/// on the side chain: that file is the sub-agent's conversation.
#[test]
fn claude_code_sub_agent_transcript_file() {
    let side = |mut r: Value| {
        r["isSidechain"] = json!(true);
        r["agentId"] = json!("a1b2c3");
        r
    };
    let records = vec![
        side(cc("user", "s1", None, json!({"role": "user", "content": "Find where the parser fails"}))),
        side(cc(
            "assistant",
            "s2",
            Some("s1"),
            json!({"id": "msg_s1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "tool_use", "id": "toolu_G", "name": "Grep", "input": {"pattern": "fn parse"}}], "stop_reason": "tool_use", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}),
        )),
        side(cc(
            "user",
            "s3",
            Some("s2"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_G", "content": "src/a.rs:10"}]}),
        )),
        side(cc(
            "assistant",
            "s4",
            Some("s3"),
            json!({"id": "msg_s2", "type": "message", "role": "assistant", "model": "claude-sonnet-4-20250514",
            "content": [{"type": "text", "text": "In src/a.rs line 10."}], "stop_reason": "end_turn", "stop_sequence": null, "usage": {"input_tokens": 1, "output_tokens": 1}}),
        )),
    ];
    let loaded = loads(&jsonl(&records), "agent-a1b2c3.jsonl");
    assert_eq!(loaded.messages["messages"].as_array().unwrap().len(), 4);
    assert!(loaded.notes.iter().any(|n| n.contains("sub-agent's conversation")), "{:?}", loaded.notes);
    assert!(loaded.skipped.is_empty(), "{:?}", loaded.skipped);
}

/// SWE-agent 1.x: `message_type`, `thought`/`action`, `agent`, demonstrations (`is_demo`),
/// content as parts with `cache_control`, and an observation for several calls.
#[test]
fn swe_agent_1x_trajectory() {
    let traj = json!({
        "environment": "swe_main",
        "trajectory": [{"action": "ls", "observation": "a.py", "response": "ls", "thought": "look", "execution_time": 0.1, "state": {}, "query": [], "extra_info": {}}],
        "history": [
            {"role": "system", "content": "You are a helpful assistant that can interact with a computer.", "agent": "main", "message_type": "system_prompt"},
            {"role": "user", "content": [{"type": "text", "text": "Here is a demonstration:\n...", "cache_control": {"type": "ephemeral"}}], "agent": "main", "message_type": "demonstration", "is_demo": true},
            {"role": "user", "content": [{"type": "text", "text": "<uploaded_files>/repo</uploaded_files> Fix the bug.", "cache_control": {"type": "ephemeral"}}], "agent": "main", "message_type": "observation"},
            {"role": "assistant", "content": "Let me look.", "thought": "Let me look.", "action": "ls /repo", "agent": "main",
             "tool_calls": [{"index": 0, "function": {"arguments": "{\"command\":\"ls /repo\"}", "name": "bash"}, "id": "call_1", "type": "function"},
                            {"index": 1, "function": {"arguments": "{\"command\":\"cat a.py\"}", "name": "bash"}, "id": "call_2", "type": "function"}],
             "message_type": "action", "thinking_blocks": []},
            {"role": "tool", "content": [{"type": "text", "text": "a.py\nb.py"}], "agent": "main", "message_type": "observation", "tool_call_ids": ["call_1", "call_2"]},
            {"role": "assistant", "content": "Bad format", "thought": "", "action": "", "agent": "main", "message_type": "action", "tool_calls": null},
            {"role": "user", "content": "Your last output did not use any tool calls! Please make sure your output includes exactly _ONE_ function call!", "agent": "main", "message_type": "user"},
            {"role": "assistant", "content": "", "thought": "", "action": "submit", "agent": "main",
             "tool_calls": [{"function": {"arguments": "{}", "name": "submit"}, "id": "call_3", "type": "function"}], "message_type": "action"},
            {"role": "tool", "content": "diff --git a/a.py b/a.py", "agent": "main", "message_type": "observation", "tool_call_ids": ["call_3"]}
        ],
        "info": {"exit_status": "submitted", "submission": "diff", "model_stats": {"instance_cost": 0.1, "tokens_sent": 10, "tokens_received": 5, "api_calls": 3}},
        "replay_config": null
    });
    loads(&traj.to_string(), "django__django-11099.traj");
}

/// SWE-agent 0.x: no function calling; observations come back as user messages.
#[test]
fn swe_agent_0x_trajectory() {
    let traj = json!({
        "environment": "swe_main",
        "trajectory": [{"action": "ls\n", "observation": "a.py", "response": "DISCUSSION\nlook\n```\nls\n```", "state": "{\"open_file\": \"n/a\"}", "thought": "DISCUSSION\nlook\n"}],
        "history": [
            {"role": "system", "content": "SETTING: You are an autonomous programmer.", "agent": "primary"},
            {"role": "user", "content": "Here is a demonstration of how to correctly accomplish this task.\n...", "agent": "primary", "is_demo": true},
            {"role": "user", "content": "We're currently solving the following issue.", "agent": "primary"},
            {"role": "assistant", "content": "DISCUSSION\nlook\n```\nls\n```", "thought": "DISCUSSION\nlook\n", "action": "ls\n", "agent": "primary"},
            {"role": "user", "content": "a.py\n(Open file: n/a)\n(Current directory: /repo)\nbash-$", "agent": "primary"}
        ],
        "info": {"exit_status": "early_exit"}
    });
    loads(&traj.to_string(), "old.traj");
}

/// tau-bench runs from a litellm model: `function_call: null`, null content with calls.
#[test]
fn tau_bench_run_with_null_legacy_fields() {
    let runs = json!([{"task_id": 3, "reward": 1.0, "info": {"task": {"user_id": "u"}}, "traj": [
        {"role": "system", "content": "# Airline Agent Policy"},
        {"role": "user", "content": "Hi"},
        {"content": null, "role": "assistant", "tool_calls": [{"function": {"arguments": "{\"user_id\": \"u\"}", "name": "get_user_details"}, "id": "call_a", "type": "function"}], "function_call": null},
        {"role": "tool", "tool_call_id": "call_a", "name": "get_user_details", "content": "{}"},
        {"content": "Done.", "role": "assistant", "tool_calls": null, "function_call": null}
    ]}]);
    loads(&runs.to_string(), "results.json");
}

/// The legacy `function` role (before `tool_calls`) is not supported: a typed error that says so
/// and where, for the message list and for a file of it.
#[test]
fn openai_legacy_function_role_is_refused_by_name() {
    let messages = json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": null, "function_call": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
        {"role": "function", "name": "get_weather", "content": "{\"t\": 21}"},
        {"role": "assistant", "content": "21C"}
    ]);
    let Err(error) = message::parse(messages.clone(), Format::OpenAi) else { panic!("the legacy role was accepted") };
    assert_eq!(error.path.as_deref(), Some("messages[2].role"), "{error}");
    assert!(error.message.contains(r#"legacy role "function" is not supported"#), "{error}");
    let Err(error) = load(&messages.to_string(), &LoadOptions::default()) else { panic!("the legacy role was loaded") };
    assert!(error.message.contains(r#"legacy role "function""#), "{error}");
}

#[test]
fn responses_items_file() {
    let items = json!([
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABo"},
        {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "f", "arguments": "{}", "status": "completed"},
        {"type": "function_call_output", "call_id": "call_1", "output": "1"},
        {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed", "content": [{"type": "output_text", "text": "one", "annotations": []}]}
    ]);
    let loaded = loads(&items.to_string(), "items.json");
    assert_eq!((loaded.format, loaded.source), (Format::Responses, Source::Responses));
}

#[test]
fn ai_sdk_messages_file() {
    let messages = json!([
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "f", "input": {}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "f", "output": {"type": "text", "value": "1"}}]},
        {"role": "assistant", "content": "one"}
    ]);
    let loaded = loads(&messages.to_string(), "messages.json");
    assert_eq!((loaded.format, loaded.source), (Format::AiSdk, Source::AiSdk));
}

/// Audio and files are billed by the provider's own rules (duration, pages), not as the JSON that
/// carries them: an OpenAI count holding one says it is an estimate, and where.
#[test]
fn openai_audio_and_file_parts_are_estimates() {
    use context_compactor::tokens::{count_request, RequestOptions};
    let messages = json!([
        {"role": "user", "content": [
            {"type": "text", "text": "Transcribe and summarise:"},
            {"type": "input_audio", "input_audio": {"data": "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=", "format": "wav"}},
            {"type": "file", "file": {"filename": "a.pdf", "file_data": "data:application/pdf;base64,JVBERi0xLjQK"}}
        ]}
    ]);
    let count = count_request(Encoding::O200kBase, messages.clone(), &RequestOptions::default()).unwrap();
    assert!(count.estimate, "{count:?}");
    assert!(count.estimates.iter().any(|e| e.starts_with("messages[0].content[1]")), "{:?}", count.estimates);
    assert!(count.estimates.iter().any(|e| e.starts_with("messages[0].content[2]")), "{:?}", count.estimates);
    let mut session = Session::with_encoding(Encoding::O200kBase);
    session.history.append_values(messages, Format::OpenAi).unwrap();
    assert!(session.history.token_count().estimate);
    // A refusal is text: exact.
    let refusal = json!([{"role": "assistant", "content": [{"type": "refusal", "refusal": "No."}]}]);
    assert!(!count_request(Encoding::O200kBase, refusal, &RequestOptions::default()).unwrap().estimate);
}

/// AI SDK v5 and v6 parts beyond the basics: approvals, denied executions, typed media in tool
/// outputs, files the model generated, reasoning carrying OpenAI's encrypted content.
#[test]
fn ai_sdk_newer_parts() {
    let messages = json!([
        {"role": "user", "content": "draw and run"},
        {"role": "assistant", "content": [
            {"type": "reasoning", "text": "", "providerOptions": {"openai": {"itemId": "rs_1", "reasoningEncryptedContent": "gAAAA"}}},
            {"type": "file", "data": PNG, "mediaType": "image/png"},
            {"type": "tool-call", "toolCallId": "c1", "toolName": "rm", "input": {"path": "/"}},
            {"type": "tool-approval-request", "approvalId": "ap1", "toolCallId": "c1"},
            {"type": "tool-call", "toolCallId": "c2", "toolName": "shot", "input": {}}
        ]},
        {"role": "tool", "content": [
            {"type": "tool-approval-response", "approvalId": "ap1", "approved": false, "reason": "no"},
            {"type": "tool-result", "toolCallId": "c1", "toolName": "rm", "output": {"type": "execution-denied", "reason": "no"}},
            {"type": "tool-result", "toolCallId": "c2", "toolName": "shot", "output": {"type": "content", "value": [
                {"type": "image-data", "data": PNG, "mediaType": "image/png"},
                {"type": "file-url", "url": "https://example.com/a.pdf"}
            ]}}
        ]},
        {"role": "assistant", "content": [{"type": "text", "text": "done"}]}
    ]);
    lossless_and_builds(messages, Format::AiSdk);
}

/// AI SDK v4 `CoreMessage`s (`args`, `result`), still in saved chats.
#[test]
fn ai_sdk_v4_core_messages() {
    let messages = json!([
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "args": {"city": "Paris"}}]},
        {"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "toolName": "weather", "result": {"t": 21}}]},
        {"role": "assistant", "content": "21C"}
    ]);
    match message::parse(messages.clone(), Format::AiSdk) {
        Ok(_) => {
            lossless_and_builds(messages, Format::AiSdk);
        }
        Err(e) => {
            let text = e.to_string();
            assert!(text.contains("messages[1]") || text.contains("message 1"), "{text}");
        }
    }
}

/// Anthropic blocks of newer tools, and thinking without a signature.
#[test]
fn anthropic_newer_blocks() {
    let request = json!({"messages": [
        {"role": "user", "content": [
            {"type": "container_upload", "file_id": "file_1"},
            {"type": "text", "text": "fetch and analyse"}
        ]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan"},
            {"type": "server_tool_use", "id": "srvtoolu_f", "name": "web_fetch", "input": {"url": "https://example.com"}},
            {"type": "web_fetch_tool_result", "tool_use_id": "srvtoolu_f", "content": {"type": "web_fetch_result", "url": "https://example.com",
                "content": {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "hello"}}}},
            {"type": "server_tool_use", "id": "srvtoolu_b", "name": "bash_code_execution", "input": {"command": "ls"}},
            {"type": "bash_code_execution_tool_result", "tool_use_id": "srvtoolu_b", "content": {"type": "bash_code_execution_result", "stdout": "a", "stderr": "", "return_code": 0, "content": []}},
            {"type": "tool_use", "id": "toolu_s", "name": "search", "input": {"q": "x"}}
        ]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_s", "content": [
            {"type": "search_result", "source": "https://docs.example.com", "title": "Docs", "content": [{"type": "text", "text": "x"}]}
        ]}]},
        {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    ]});
    lossless_and_builds(request, Format::Anthropic);
}

/// A Claude Code user record with empty text (a prompt sent blank, or content an editor cleared).
#[test]
fn claude_code_empty_text() {
    let records = vec![
        cc("user", "u1", None, json!({"role": "user", "content": "start"})),
        reply("a1", "u1", "msg_01", json!([{"type": "text", "text": ""}])),
        cc("user", "u2", Some("a1"), json!({"role": "user", "content": ""})),
        reply("a2", "u2", "msg_02", json!([])),
        cc("user", "u3", Some("a2"), json!({"role": "user", "content": "again"})),
    ];
    loads(&jsonl(&records), "blank.jsonl");
}

/// A resumed Claude Code session whose file starts mid-turn: its first record answers a call made
/// in the earlier file. Loading it says what is wrong and how to read it anyway (`repair`).
#[test]
fn claude_code_resumed_mid_turn() {
    let records = vec![
        cc(
            "user",
            "r0",
            Some("earlier"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_OLD", "content": "ok"}]}),
        ),
        reply("a1", "r0", "msg_01", json!([{"type": "text", "text": "Continuing."}])),
    ];
    let text = jsonl(&records);
    let error = load(&text, &LoadOptions { name: Some("resumed.jsonl".into()), ..LoadOptions::default() }).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("line 1") && message.contains("toolu_OLD"), "{message}");
    let loaded = load(&text, &LoadOptions { repair: Some(true), ..LoadOptions::default() }).unwrap();
    let mut session = Session::with_encoding(Encoding::O200kBase);
    session.history.append_repaired(loaded.messages, loaded.format).unwrap();
    for to in ALL {
        let request = session
            .build(&BuildOptions { format: to, ..BuildOptions::default() })
            .unwrap()
            .context
            .to_request()
            .unwrap();
        assert!(validate(&request, to).is_ok(), "{to:?}");
    }
}
