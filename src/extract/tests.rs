use serde_json::{json, Value};

use super::*;
use crate::message::{parse, Format};

const E: Encoding = Encoding::O200kBase;

fn session() -> Vec<Message> {
    parse(
        json!([
            {"role": "user", "content": "Users with 2FA get a 500 on POST /session/verify. Fix it in lib/app/auth/totp.ex and add a test."},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me read the TOTP module."},
                {"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/home/dev/app/lib/app/auth/totp.ex"}}
            ]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "defmodule App.Auth.Totp do\nend"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t2", "name": "TodoWrite", "input": {"todos": [
                {"content": "Reproduce the 500", "status": "completed"},
                {"content": "Fix TOTP verification", "status": "in_progress"},
                {"content": "Add regression test", "status": "pending"}
            ]}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "Todos have been modified successfully."}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "mix compile --warnings-as-errors"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t3", "is_error": true, "content": "Exit code 1\n** (CompileError) lib/app/auth/totp.ex:12: undefined function verify/2"}]},
            {"role": "user", "content": "<system-reminder>The user opened totp.ex</system-reminder>"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t4", "name": "Edit", "input": {"file_path": "/home/dev/app/lib/app/auth/totp.ex", "old_string": "a", "new_string": "b"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t4", "content": "The file has been updated."}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t5", "name": "Bash", "input": {"command": "cat /proc/sys/kernel/random/uuid > /tmp/out.txt"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t5", "content": "ok"}]},
            {"role": "user", "content": "[Request interrupted by user]"},
            {"role": "user", "content": "also keep the public API of App.Accounts unchanged"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t6", "name": "Bash", "input": {"command": "mix compile --force"}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t6", "content": "Compiled 12 files"}]},
            {"role": "assistant", "content": "Compiled. Next, I'll write the regression test in test/app_web/session_controller_test.exs. Still compiling deps, let me wait."}
        ]),
        Format::Anthropic,
    )
    .unwrap()
}

fn sections(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

#[test]
fn the_summary_is_a_handoff_with_the_agents_sections_in_order() {
    let text = extractive(&session(), None, E, 4000);
    let value = sections(&text);
    let keys: Vec<&str> = value.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        ["primaryRequest", "userMessages", "files", "errors", "pendingTasks", "currentWork", "nextStep", "toolsUsed"]
    );
    let primary = value["primaryRequest"].as_str().unwrap();
    assert!(primary.starts_with("Users with 2FA get a 500"), "{primary}");
    assert!(primary.ends_with("Latest request: also keep the public API of App.Accounts unchanged"), "{primary}");
    // Every user message, harness text left out.
    assert_eq!(value["userMessages"].as_array().unwrap().len(), 2);
    assert!(!text.contains("Request interrupted") && !text.contains("system-reminder"), "{text}");
    // Files with their operations, changed first; /proc never, /tmp last.
    let files = value["files"].as_object().unwrap();
    let paths: Vec<&str> = files.keys().map(String::as_str).collect();
    assert_eq!(paths[0], "/home/dev/app/lib/app/auth/totp.ex");
    assert_eq!(files["/home/dev/app/lib/app/auth/totp.ex"], "edited, read");
    assert_eq!(paths.last(), Some(&"/tmp/out.txt"));
    assert!(!paths.iter().any(|p| p.starts_with("/proc/")), "{text}");
    assert_eq!(paths.len(), 2, "the user's mention of lib/app/auth/totp.ex is the file read: {paths:?}");
    // The error with its call, fixed once the same kind of call succeeded.
    assert_eq!(
        value["errors"],
        json!(["Bash: mix compile --warnings-as-errors → ** (CompileError) lib/app/auth/totp.ex:12: undefined function verify/2 [fixed]"])
    );
    assert_eq!(value["pendingTasks"], json!(["Fix TOTP verification (in progress)", "Add regression test"]));
    let work = value["currentWork"].as_array().unwrap();
    assert!(work.iter().any(|w| w
        .as_str()
        .unwrap()
        .starts_with("Bash: mix compile --warnings-as-errors → failed: ** (CompileError)")));
    assert_eq!(value["nextStep"], "Next, I'll write the regression test in test/app_web/session_controller_test.exs.");
    assert_eq!(value["toolsUsed"], json!({"Bash": 3, "Edit": 1, "Read": 1, "TodoWrite": 1}));
    assert_eq!(extractive(&session(), None, E, 4000), text, "deterministic");
}

#[test]
fn every_budget_is_met_and_the_task_goes_last() {
    let messages = session();
    let full = E.count(&extractive(&messages, None, E, 100_000));
    let mut last_len = usize::MAX;
    for max in (24..full + 10).rev().step_by(7) {
        let text = extractive(&messages, None, E, max as u32);
        assert!(E.count(&text) <= max, "{max}: {text}");
        if max >= 64 {
            let value = sections(&text);
            assert!(value["primaryRequest"].as_str().unwrap().starts_with("Users with 2FA"), "{max}: {text}");
        }
        assert!(text.len() <= last_len.saturating_add(40), "smaller budgets keep less");
        last_len = text.len();
    }
    // Changed files outlive read-only ones and fixed errors.
    let tight = sections(&extractive(&messages, None, E, 170));
    assert!(
        tight["files"].as_object().is_some_and(|f| f.contains_key("/home/dev/app/lib/app/auth/totp.ex")),
        "{tight}"
    );
    assert!(tight.get("errors").is_none(), "{tight}");
}

#[test]
fn a_previous_summary_is_folded_in() {
    let messages = session();
    let first = extractive(&messages[..7], None, E, 4000);
    let second = sections(&extractive(&messages[7..], Some(&first), E, 4000));
    let whole = sections(&extractive(&messages, None, E, 4000));
    assert_eq!(second["primaryRequest"], whole["primaryRequest"]);
    assert_eq!(second["userMessages"], whole["userMessages"]);
    assert_eq!(second["files"], whole["files"]);
    assert_eq!(second["errors"], whole["errors"], "the later success fixes the folded error");
    assert_eq!(second["pendingTasks"], whole["pendingTasks"]);
    assert_eq!(second["toolsUsed"], whole["toolsUsed"]);
    assert_eq!(second["nextStep"], whole["nextStep"]);
    // A model's summary is carried as it is.
    let foreign = sections(&extractive(&messages[7..], Some("The user wants 2FA fixed."), E, 4000));
    assert_eq!(foreign["earlier"], "The user wants 2FA fixed.");
}

#[test]
fn swe_agent_and_codex_tools() {
    let messages = parse(
        json!([
            {"role": "user", "content": "<task>Fix TimeDelta rounding</task>"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "a", "type": "function", "function": {"name": "open", "arguments": "{\"path\":\"src/marshmallow/fields.py\", \"line_number\": 1474}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "[File: src/marshmallow/fields.py (1997 lines total)]"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "b", "type": "function", "function": {"name": "edit", "arguments": "{\"search\":\"int(\", \"replace\":\"round(\"}"}}]},
            {"role": "tool", "tool_call_id": "b", "content": "Text replaced."},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "update_plan", "arguments": "{\"plan\":[{\"step\":\"patch\",\"status\":\"completed\"},{\"step\":\"run tests\",\"status\":\"pending\"}]}"}}]},
            {"role": "tool", "tool_call_id": "c", "content": "ok"}
        ]),
        Format::OpenAi,
    )
    .unwrap();
    let value = sections(&extractive(&messages, None, E, 4000));
    assert_eq!(value["primaryRequest"], "<task>Fix TimeDelta rounding</task>");
    assert_eq!(value["files"], json!({"src/marshmallow/fields.py": "edited, read"}));
    assert_eq!(value["pendingTasks"], json!(["run tests"]));
    assert_eq!(value["nextStep"], "Continue with: run tests");
}

#[test]
fn cut_middle_keeps_head_and_tail() {
    assert_eq!(cut_middle("short", 10), "short");
    let text: String = ('a'..='z').collect();
    assert_eq!(cut_middle(&text, 10), "abcde\n\n[... 16 chars omitted ...]\n\nvwxyz");
    assert_eq!(head_tail("ééééé", 1, 1), "é\n\n[... 3 chars omitted ...]\n\né");
}

#[test]
fn the_primary_request_is_the_pinned_one() {
    let messages = parse(
        json!([
            {"role": "user", "content": "Demonstration: here is how another issue was solved."},
            {"role": "assistant", "content": "I edited the parser."},
            {"role": "user", "content": "The issue: TimeDelta rounds 345 ms down."},
            {"role": "assistant", "content": "Looking."},
            {"role": "user", "content": "Use round(), not int()."}
        ]),
        Format::OpenAi,
    )
    .unwrap();
    let primary = |pinned: Option<PinnedTask>| {
        let text = extractive_with_todos(&messages, None, &[], pinned, E, 4000);
        sections(&text)["primaryRequest"].as_str().unwrap().to_string()
    };
    assert!(primary(None).starts_with("Demonstration"));
    let issue = "The issue: TimeDelta rounds 345 ms down.";
    let pinned = primary(Some(PinnedTask { text: issue, after: 3 }));
    assert_eq!(pinned, format!("{issue}\n\nLatest request: Use round(), not int()."));
    // A user text before the pin is not a later request; the pin itself stands even when the
    // summary does not reach it.
    assert_eq!(primary(Some(PinnedTask { text: issue, after: 5 })), issue);
}
