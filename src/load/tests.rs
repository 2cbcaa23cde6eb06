use proptest::prelude::*;
use serde_json::{json, Value};

use super::*;

fn load_text(text: &str) -> Result<Loaded> {
    load(text, &LoadOptions::default())
}

fn load_named(text: &str, name: &str) -> Result<Loaded> {
    load(text, &LoadOptions { name: Some(name.into()), ..LoadOptions::default() })
}

fn error_text(text: &str) -> String {
    match load_text(text) {
        Ok(loaded) => panic!("expected an error, loaded {:?}", loaded.messages),
        Err(error) => error.to_string(),
    }
}

/// The guarantee: what comes out appends to a history as it is.
fn appends(loaded: &Loaded) -> Vec<String> {
    let mut history = ConversationHistory::new(Encoding::Estimate);
    history.append_values(loaded.messages.clone(), loaded.format).expect("the loaded messages append")
}

fn jsonl(records: &[Value]) -> String {
    records.iter().map(Value::to_string).collect::<Vec<_>>().join("\n") + "\n"
}

#[test]
fn an_openai_list_comes_back_as_it_was() {
    let list = json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather?", "x_extra": {"kept": true}},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "w", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"}
    ]);
    let loaded = load_text(&serde_json::to_string_pretty(&list).unwrap()).unwrap();
    assert_eq!((loaded.format, loaded.source), (Format::OpenAi, Source::OpenAi));
    assert_eq!(loaded.messages, list);
    assert_eq!(loaded.origins[3].record.as_deref(), Some("[3]"));
    assert!(loaded.skipped.is_empty() && loaded.marks.is_empty());
    assert_eq!(appends(&loaded).len(), 4);
    // The same in a request body: the other keys are named in a note.
    let body = json!({"model": "gpt-4o", "messages": list, "tools": []});
    let loaded = load_text(&body.to_string()).unwrap();
    assert_eq!(loaded.messages, body["messages"]);
    assert_eq!(loaded.origins[1].record.as_deref(), Some("messages[1]"));
    assert!(loaded.notes.iter().any(|n| n.contains("`model`") && n.contains("`tools`")), "{:?}", loaded.notes);
}

#[test]
fn anthropic_lists_and_system_requests_come_back_as_they_were() {
    let messages = json!([
        {"role": "user", "content": "read it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "text"}]}
    ]);
    let loaded = load_text(&messages.to_string()).unwrap();
    assert_eq!((loaded.format, loaded.source), (Format::Anthropic, Source::Anthropic));
    assert_eq!(loaded.messages, json!({ "messages": messages }));
    let request = json!({"system": [{"type": "text", "text": "Be brief."}], "messages": messages});
    let loaded = load_text(&request.to_string()).unwrap();
    assert_eq!(loaded.messages, request);
    assert_eq!(loaded.origins.len(), 4, "the system prompt is appended first");
    assert_eq!(loaded.origins[0].record.as_deref(), Some("system"));
    assert_eq!(loaded.origins[1].record.as_deref(), Some("messages[0]"));
    assert_eq!(appends(&loaded).len(), 4);
}

#[test]
fn plain_text_is_read_as_openai_and_said_so() {
    let loaded = load_text(r#"[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]"#).unwrap();
    assert_eq!(loaded.format, Format::OpenAi);
    assert!(loaded.notes.iter().any(|n| n.contains("both formats")));
    let one = load_text(r#"{"role":"user","content":"hi"}"#).unwrap();
    assert_eq!(one.messages, json!([{"role": "user", "content": "hi"}]));
}

#[test]
fn messages_one_a_line() {
    let text = "{\"role\":\"user\",\"content\":\"hi\"}\n\n{\"role\":\"assistant\",\"content\":\"hello\"}\n";
    let loaded = load_text(text).unwrap();
    assert_eq!(loaded.messages.as_array().unwrap().len(), 2);
    assert_eq!(loaded.origins[1].line, Some(3));
    let error = error_text("{\"role\":\"user\",\"content\":\"hi\"}\n{\"role\":\"tool\",\"content\":\"x\"}\n");
    assert_eq!(error, "line 2: tool message has no tool_call_id (at line 2.tool_call_id)");
}

fn record(kind: &str, uuid: &str, parent: Option<&str>, message: Value) -> Value {
    json!({"type": kind, "uuid": uuid, "parentUuid": parent, "isSidechain": false, "sessionId": "s", "message": message})
}

fn split_response_log() -> Vec<Value> {
    vec![
        json!({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}}),
        record("user", "u1", None, json!({"role": "user", "content": "fix it"})),
        record(
            "assistant",
            "a1",
            Some("u1"),
            json!({"id": "msg_1", "role": "assistant", "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}], "stop_reason": null}),
        ),
        record(
            "assistant",
            "a2",
            Some("a1"),
            json!({"id": "msg_1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}], "stop_reason": null}),
        ),
        json!({"type": "progress", "uuid": "p1", "parentUuid": "a2", "data": {}}),
        record(
            "user",
            "r1",
            Some("a2"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "one"}]}),
        ),
        record(
            "assistant",
            "a3",
            Some("r1"),
            json!({"id": "msg_1", "role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {}}], "stop_reason": "tool_use"}),
        ),
        record(
            "user",
            "r2",
            Some("a3"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "two"}]}),
        ),
        json!({"type": "assistant", "uuid": "s1", "parentUuid": "r2", "isSidechain": true, "message": {"id": "msg_9", "role": "assistant", "content": "sub-agent"}}),
        json!({"type": "system", "subtype": "compact_boundary", "uuid": "b1", "parentUuid": null, "logicalParentUuid": "r2", "compactMetadata": {"trigger": "auto", "preTokens": 155000}}),
        json!({"type": "user", "uuid": "c1", "parentUuid": "b1", "isCompactSummary": true, "message": {"role": "user", "content": "This session is being continued…"}}),
        json!({"type": "user", "uuid": "m1", "parentUuid": "c1", "isMeta": true, "message": {"content": "Caveat: local commands"}}),
        record(
            "assistant",
            "a4",
            Some("m1"),
            json!({"id": "msg_2", "role": "assistant", "content": [{"type": "text", "text": "done"}]}),
        ),
        json!({"type": "summary", "summary": "Fixing", "leafUuid": "a4"}),
    ]
}

#[test]
fn a_claude_code_log_merges_split_responses_and_reports_the_rest() {
    let loaded = load_named(&jsonl(&split_response_log()), "session.jsonl").unwrap();
    assert_eq!((loaded.format, loaded.source), (Format::Anthropic, Source::ClaudeCode));
    let messages = loaded.messages["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, ["user", "assistant", "user", "user", "user", "user", "assistant"]);
    // One response: thinking, both calls; its results follow it; the last record's fields win.
    let kinds: Vec<&str> =
        messages[1]["content"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["thinking", "tool_use", "tool_use"]);
    assert_eq!(messages[1]["stop_reason"], "tool_use");
    assert_eq!(loaded.origins[1].lines, Some(vec![3, 4, 7]));
    assert_eq!(loaded.origins[2].line, Some(6));
    assert_eq!(messages[5]["role"], "user", "a role missing from the message is the record's type");
    let skipped: Vec<(usize, &str)> = loaded.skipped.iter().map(|s| (s.line.unwrap(), s.reason.as_str())).collect();
    assert_eq!(skipped.iter().map(|s| s.0).collect::<Vec<_>>(), [1, 5, 9, 10, 14]);
    assert!(skipped[0].1.contains("file-history-snapshot"));
    assert!(skipped[2].1.contains("isSidechain"));
    assert!(skipped[3].1.contains("compact_boundary"));
    let marks: Vec<(usize, MarkKind, Option<usize>)> = loaded.marks.iter().map(|m| (m.index, m.kind, m.line)).collect();
    assert_eq!(
        marks,
        [
            (4, MarkKind::CompactBoundary, Some(10)),
            (4, MarkKind::CompactSummary, Some(11)),
            (5, MarkKind::Meta, Some(12))
        ]
    );
    assert_eq!((loaded.marks[0].trigger.as_deref(), loaded.marks[0].pre_tokens), (Some("auto"), Some(155_000)));
    assert!(loaded.notes.iter().any(|n| n.starts_with("2 assistant records merged")), "{:?}", loaded.notes);
    assert!(loaded.notes.iter().any(|n| n == "1 sub-agent (sidechain) records left out"), "{:?}", loaded.notes);
    assert_eq!(appends(&loaded).len(), 7);
}

#[test]
fn cumulative_split_records_and_repeated_records_count_once() {
    let block = |t: &str| json!({"type": "text", "text": t});
    let log = vec![
        record("user", "u1", None, json!({"role": "user", "content": "hi"})),
        record("assistant", "a1", Some("u1"), json!({"id": "m", "role": "assistant", "content": [block("a")]})),
        record(
            "assistant",
            "a2",
            Some("a1"),
            json!({"id": "m", "role": "assistant", "content": [block("a"), block("b")]}),
        ),
        record("user", "u1", None, json!({"role": "user", "content": "hi"})),
    ];
    let loaded = load_text(&jsonl(&log)).unwrap();
    let messages = loaded.messages["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[1]["content"], json!([block("a"), block("b")]));
    assert!(loaded.skipped.iter().any(|s| s.line == Some(4) && s.reason.contains("repeat of line 1")));
}

#[test]
fn a_rewound_branch_is_left_out_and_parallel_results_are_not() {
    let log = vec![
        record("user", "u1", None, json!({"role": "user", "content": "first question"})),
        record("assistant", "a1", Some("u1"), json!({"id": "m1", "role": "assistant", "content": "first answer"})),
        // Asked, answered, then rewound to a1 and asked differently.
        record("user", "u2", Some("a1"), json!({"role": "user", "content": "a question taken back"})),
        record(
            "assistant",
            "a2",
            Some("u2"),
            json!({"id": "m2", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]}),
        ),
        record(
            "user",
            "r2",
            Some("a2"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]}),
        ),
        record("user", "u3", Some("a1"), json!({"role": "user", "content": "the question asked instead"})),
        record(
            "assistant",
            "a3",
            Some("u3"),
            json!({"id": "m3", "role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "x", "input": {}}, {"type": "tool_use", "id": "t3", "name": "x", "input": {}}]}),
        ),
        // Parallel calls' results hang off the same parent: both stay.
        record(
            "user",
            "r3",
            Some("a3"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "x"}]}),
        ),
        record(
            "user",
            "r4",
            Some("a3"),
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "content": "x"}]}),
        ),
        record("assistant", "a4", Some("r4"), json!({"id": "m4", "role": "assistant", "content": "done"})),
    ];
    let loaded = load_text(&jsonl(&log)).unwrap();
    let texts: Vec<String> =
        loaded.messages["messages"].as_array().unwrap().iter().map(|m| m["content"].to_string()).collect();
    assert_eq!(texts.len(), 7, "{texts:#?}");
    assert!(!texts.iter().any(|t| t.contains("taken back")));
    let rewound: Vec<usize> =
        loaded.skipped.iter().filter(|s| s.reason.contains("rewound")).map(|s| s.line.unwrap()).collect();
    assert_eq!(rewound, [3, 4, 5]);
    assert!(loaded.skipped[0].reason.contains("continues at line 6"), "{:?}", loaded.skipped[0]);
    appends(&loaded);
}

#[test]
fn a_chain_broken_by_missing_parents_keeps_every_message_in_file_order() {
    let log = vec![
        record("user", "u1", Some("gone"), json!({"role": "user", "content": "q"})),
        record("assistant", "a1", Some("u1"), json!({"id": "m1", "role": "assistant", "content": "a"})),
        record("user", "u2", Some("elsewhere"), json!({"role": "user", "content": "q2"})),
        record("assistant", "a2", Some("u2"), json!({"id": "m2", "role": "assistant", "content": "a2"})),
    ];
    let loaded = load_text(&jsonl(&log)).unwrap();
    assert_eq!(loaded.messages["messages"].as_array().unwrap().len(), 4);
}

#[test]
fn parent_cycles_end_the_walk() {
    let log = vec![
        record("user", "u1", Some("a2"), json!({"role": "user", "content": "q"})),
        record("assistant", "a1", Some("u1"), json!({"id": "m1", "role": "assistant", "content": "a"})),
        record("user", "u2", Some("u2"), json!({"role": "user", "content": "q2"})),
        record("assistant", "a2", Some("u1"), json!({"id": "m2", "role": "assistant", "content": "a2"})),
    ];
    let loaded = load_text(&jsonl(&log)).unwrap();
    assert_eq!(loaded.messages["messages"].as_array().unwrap().len(), 4);
}

#[test]
fn claude_code_records_saved_as_a_json_array() {
    let loaded = load_text(&Value::Array(split_response_log()).to_string()).unwrap();
    assert_eq!(loaded.source, Source::ClaudeCode);
    assert_eq!(loaded.origins[0].record.as_deref(), Some("[1]"));
}

#[test]
fn swe_agent_tool_call_ids_become_tool_call_id() {
    let call = |id: &str| json!({"id": id, "type": "function", "function": {"name": "ls", "arguments": "{}"}});
    let trajectory = json!({
        "history": [
            {"role": "system", "content": "SETTING", "agent": "main", "message_type": "system_prompt"},
            {"role": "assistant", "content": "look", "thought": "look", "action": "ls", "tool_calls": [call("c1"), call("c2")]},
            {"role": "tool", "content": "a b", "tool_call_ids": ["c1", "c2"], "agent": "main"}
        ],
        "trajectory": [], "info": {}
    });
    let loaded = load_named(&trajectory.to_string(), "x.traj").unwrap();
    assert_eq!((loaded.format, loaded.source), (Format::OpenAi, Source::SweAgent));
    let messages = loaded.messages.as_array().unwrap();
    assert_eq!(messages.len(), 4, "one tool message per answered call");
    assert_eq!(messages[2]["tool_call_id"], "c1");
    assert_eq!(messages[3]["tool_call_id"], "c2");
    assert_eq!(messages[3]["agent"], "main", "extra keys travel");
    assert!(messages[2].get("tool_call_ids").is_none());
    assert_eq!(loaded.origins[3].record.as_deref(), Some("history[2]"));
    appends(&loaded);
    let mut bad = trajectory.clone();
    bad["history"][2]["tool_call_ids"] = json!("c1");
    assert_eq!(
        error_text(&bad.to_string()),
        "history[2]: `tool_call_ids` must be an array of ids, got a string (at history[2].tool_call_ids)"
    );
    let mut orphan = trajectory;
    orphan["history"][2]["tool_call_ids"] = json!(["c9"]);
    let error = error_text(&orphan.to_string());
    assert!(error.starts_with("history[2]: tool result answers tool call \"c9\""), "{error}");
}

#[test]
fn older_swe_agent_trajectories() {
    let old = json!({"history": [
        {"role": "system", "content": "SETTING", "agent": "primary"},
        {"role": "user", "content": "issue", "agent": "primary", "is_demo": true},
        {"role": "assistant", "content": "DISCUSSION\n```\nls\n```", "thought": "DISCUSSION", "action": "ls\n"}
    ], "info": {}});
    let loaded = load_text(&old.to_string()).unwrap();
    assert_eq!(loaded.source, Source::SweAgent);
    assert_eq!(loaded.messages, old["history"]);
    let steps = json!({"history": [], "trajectory": [
        {"action": "ls", "observation": "a b", "response": "let me look\nls", "thought": "let me look"},
        {"action": "submit", "observation": null, "thought": "done"}
    ]});
    let loaded = load_text(&steps.to_string()).unwrap();
    let contents: Vec<&str> =
        loaded.messages.as_array().unwrap().iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(contents, ["let me look\nls", "a b", "done\nsubmit"]);
    assert!(loaded.notes[0].contains("2 trajectory steps"));
}

#[test]
fn swe_agent_pins_the_instances_issue_after_its_demonstrations() {
    let system = json!({"role": "system", "content": "SETTING", "agent": "main", "message_type": "system_prompt"});
    let issue = json!({"role": "user", "content": "ISSUE: fix it", "agent": "main", "message_type": "observation"});
    let answer = json!({"role": "assistant", "content": "ok", "agent": "main", "message_type": "action"});
    let cases = [
        // No demonstration: the first user message is the issue.
        (vec![system.clone(), issue.clone(), answer.clone()], vec![1]),
        // A demonstration as one message (SWE-agent's demonstration template).
        (
            vec![
                system.clone(),
                json!({"role": "user", "content": "Here is a demonstration", "agent": "main", "is_demo": true, "message_type": "demonstration"}),
                issue.clone(),
                answer.clone(),
            ],
            vec![2],
        ),
        // A demonstration's own messages in the history, each marked (older SWE-agent: `is_demo`).
        (
            vec![
                system.clone(),
                json!({"role": "user", "content": "demo issue", "agent": "primary", "is_demo": true}),
                json!({"role": "assistant", "content": "demo answer", "agent": "primary", "is_demo": true}),
                issue.clone(),
                answer,
            ],
            vec![3],
        ),
        // Nothing but demonstrations: nothing to pin.
        (vec![system, json!({"role": "user", "content": "demo", "message_type": "demonstration"})], vec![]),
    ];
    for (history, pinned) in cases {
        let loaded = load_text(&json!({"history": history, "info": {}}).to_string()).unwrap();
        assert_eq!(loaded.pinned, pinned, "{history:?}");
    }
    let steps = json!({"history": [], "trajectory": [{"action": "ls", "observation": "a b", "response": "ls"}]});
    assert!(load_text(&steps.to_string()).unwrap().pinned.is_empty(), "steps hold no issue");
}

#[test]
fn tau_bench_runs_one_at_a_time() {
    let run = |task: u32, text: &str| json!({"task_id": task, "reward": 1.0, "traj": [{"role": "user", "content": text}], "trial": 0});
    let text = json!([run(7, "first"), run(8, "second")]).to_string();
    let loaded = load_text(&text).unwrap();
    assert_eq!(loaded.source, Source::TauBench);
    assert_eq!(loaded.run, Some(RunInfo { index: 0, count: 2, task_id: Some(json!(7)) }));
    assert_eq!(loaded.messages, json!([{"role": "user", "content": "first"}]));
    let second = load(&text, &LoadOptions { run: Some(1), ..LoadOptions::default() }).unwrap();
    assert_eq!(second.messages[0]["content"], "second");
    assert_eq!(second.origins[0].record.as_deref(), Some("[1].traj[0]"));
    let error = load(&text, &LoadOptions { run: Some(2), ..LoadOptions::default() }).unwrap_err();
    assert_eq!(error.to_string(), "run 2 does not exist: the file has 2 runs (0 to 1)");
    let error = load(r#"[{"role":"user","content":"x"}]"#, &LoadOptions { run: Some(0), ..LoadOptions::default() })
        .unwrap_err();
    assert!(error.message.contains("not a tau-bench run list"), "{error}");
    let bad = json!([run(1, "x"), {"task_id": 2, "traj": {"role": "user"}}]).to_string();
    assert_eq!(
        load(&bad, &LoadOptions { run: Some(1), ..LoadOptions::default() }).unwrap_err().to_string(),
        "[1]: `traj` must be a message list, got an object (at [1].traj)"
    );
}

#[test]
fn malformed_files_say_where() {
    let base = split_response_log();
    // A user record without its message.
    let mut log = base.clone();
    log[1].as_object_mut().unwrap().remove("message");
    let error = load_text(&jsonl(&log)).unwrap_err();
    assert_eq!(error.to_string(), "line 2: record has no \"message\" (at line 2.message)");
    assert_eq!((error.kind, error.path.as_deref()), (ErrorKind::InvalidMessage, Some("line 2.message")));
    // Wrong types inside a message.
    let mut log = base.clone();
    log[3]["message"]["content"][0]["input"] = json!("not an object");
    assert_eq!(
        error_text(&jsonl(&log)),
        "line 4: `input` must be an object, got a string (at line 4.message.content[0].input)"
    );
    let mut log = base.clone();
    log[1]["message"]["content"] = json!(42);
    assert!(error_text(&jsonl(&log)).ends_with("(at line 2.message.content)"));
    let mut log = base.clone();
    log[1]["type"] = json!(3);
    assert_eq!(error_text(&jsonl(&log)), "line 2: `type` must be a string, got a number (at line 2.type)");
    let mut log = base.clone();
    log[2]["message"]["role"] = json!("user");
    assert!(error_text(&jsonl(&log)).contains("(at line 3.message.role)"));
    // A tool result answering nothing names its line.
    let mut log = base.clone();
    log[5]["message"]["content"][0]["tool_use_id"] = json!("nobody");
    let error = error_text(&jsonl(&log));
    assert!(error.starts_with("line 6: tool result answers tool call \"nobody\""), "{error}");
    // A broken line in the middle.
    let mut text = jsonl(&base);
    assert!(text.contains("\"fix it\""));
    // An unterminated string, whatever key follows it.
    text = text.replacen("\"fix it\"", "\"fix it", 1);
    let error = error_text(&text);
    assert!(error.starts_with("line 2: not valid JSON: "), "{error}");
    // A line that is not an object.
    let error = error_text(&format!("{}\n[1, 2]\n", base[1]));
    assert_eq!(error, "line 2: a record must be a JSON object, got an array (at line 2)");
}

#[test]
fn an_incomplete_last_line_is_skipped_as_one() {
    let mut text = jsonl(&split_response_log()[..4]);
    text.push_str(r#"{"type":"assistant","message":{"id":"msg_1","#);
    let loaded = load_text(&text).unwrap();
    let last = loaded.skipped.last().unwrap();
    assert_eq!(last.line, Some(5));
    assert!(last.reason.contains("incomplete last line"));
    // With a newline after it, the writer had finished: an error.
    assert!(error_text(&(text + "\n")).starts_with("line 5: not valid JSON"));
}

#[test]
fn files_that_are_not_conversations() {
    assert_eq!(error_text(""), "the file is empty");
    assert_eq!(error_text(" \n\t"), "the file holds only whitespace");
    assert!(error_text("\u{0}\u{1}ELF\u{fffd}\u{fffd}").contains("binary data"));
    assert_eq!(error_text("\n\nhello"), "line 3: not JSON or JSON Lines: the file starts with \"hello\" (at line 3)");
    let error = error_text("[\n  {\"role\": \"user\", \"content\": \"hi\"},\n  {\"role\": \"assistant\"");
    assert!(error.starts_with("the file is not valid JSON: EOF while parsing") && error.contains("line 3"), "{error}");
    assert_eq!(error_text("[]"), "the file holds an empty list: there are no messages");
    assert_eq!(error_text("{\"messages\": []}"), "the message list is empty: there are no messages");
    assert!(error_text("[1, 2]").starts_with("[0]: expected a message (an object), got a number"));
    assert!(error_text("{\"foo\": 1}").contains("got an object with keys `foo`"));
    assert!(error_text("\"text\"").contains("got a string") || error_text("\"text\"").contains("not JSON"));
    assert!(error_text(&("[".repeat(500) + &"]".repeat(500))).contains("nested more than 128 levels"));
    let only_noise = jsonl(&[json!({"type": "progress", "uuid": "p"}), json!({"type": "summary", "summary": "s"})]);
    let error = error_text(&only_noise);
    assert!(error.starts_with("no conversation in 2 records") && error.contains("progress, summary"), "{error}");
    assert!(error_text(r#"[{"role": "robot", "content": "x"}]"#).contains("(at [0].role)"));
    let error = load_named("{\"a\": 1}", "run.traj").unwrap_err();
    assert!(error.message.contains("SWE-agent trajectory"), "{error}");
    let error = load_text(r#"{"system": 5, "messages": [{"role": "user", "content": "x"}]}"#).unwrap_err();
    assert_eq!(error.path.as_deref(), Some("system"), "{error}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let text = String::from_utf8_lossy(&bytes);
        let _ = load_text(&text);
        let _ = load_named(&text, "x.jsonl");
    }

    /// Lines of real records, cut, repeated, shuffled and retyped: an error or a result that appends.
    #[test]
    fn mangled_logs_load_or_fail_cleanly(
        picks in proptest::collection::vec((0usize..14, 0u8..6, any::<u16>()), 0..24),
        name in prop_oneof![Just("s.jsonl"), Just("s.json"), Just("s.traj")],
    ) {
        let base = split_response_log();
        let mut lines = Vec::new();
        for (pick, mutation, seed) in picks {
            let mut value = base[pick % base.len()].clone();
            let line = match mutation {
                0 => value.to_string(),
                1 => {
                    let text = value.to_string();
                    let cut = (seed as usize) % text.len().max(1);
                    text.chars().take(cut).collect()
                }
                2 => {
                    if let Some(object) = value.as_object_mut() {
                        let keys: Vec<String> = object.keys().cloned().collect();
                        if let Some(key) = keys.get(seed as usize % keys.len().max(1)) {
                            object.remove(key);
                        }
                    }
                    value.to_string()
                }
                3 => {
                    if let Some(message) = value.get_mut("message").and_then(Value::as_object_mut) {
                        message.insert("content".into(), json!(seed));
                    }
                    value.to_string()
                }
                4 => {
                    value["isSidechain"] = json!(seed % 2 == 0);
                    value["parentUuid"] = json!(format!("u{}", seed % 5));
                    value["uuid"] = json!(format!("u{}", seed % 7));
                    value.to_string()
                }
                _ => String::new(),
            };
            lines.push(line);
        }
        let text = lines.join("\n");
        if let Ok(loaded) = load_named(&text, name) {
            let mut history = ConversationHistory::new(Encoding::Estimate);
            prop_assert!(history.append_values(loaded.messages.clone(), loaded.format).is_ok());
            prop_assert_eq!(loaded.origins.len(), history.len());
        }
    }
}
