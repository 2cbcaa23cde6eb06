//! The conversation loader on every fixture of the project, read as a user hands it over: the whole file.

mod common;

use context_compactor::compact::{validate, BuildOptions};
use context_compactor::load::{load, LoadOptions, Loaded, MarkKind, Source};
use context_compactor::message::Format;
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use serde_json::Value;

fn read(relative: &str) -> String {
    std::fs::read_to_string(common::fixture_path(relative)).unwrap()
}

fn load_fixture(relative: &str, run: Option<usize>) -> Loaded {
    let name = relative.rsplit('/').next().map(str::to_string);
    load(&read(relative), &LoadOptions { name, run, ..LoadOptions::default() })
        .unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// Appends what was loaded and builds a context: valid for the provider, in both formats.
fn append_and_build(loaded: &Loaded) -> Session {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    let ids = session.history.append_values(loaded.messages.clone(), loaded.format).unwrap();
    assert_eq!(ids.len(), loaded.origins.len(), "one origin per appended message");
    for format in [Format::OpenAi, Format::Anthropic] {
        let options = BuildOptions { format, ..BuildOptions::default() };
        let outcome = session.build(&options).unwrap();
        // `to_request` checks the provider's rules; checked again here.
        let request = outcome.context.to_request().unwrap();
        assert!(validate(&request, format).is_ok(), "{format:?}: {:?}", validate(&request, format).err());
    }
    session
}

#[test]
fn airline_every_run_loads_as_it_was_written() {
    let runs = common::airline_runs();
    let text = read(common::AIRLINE_RUNS_FILE);
    for (index, traj) in runs.iter().enumerate() {
        let loaded = load(&text, &LoadOptions { run: Some(index), ..LoadOptions::default() }).unwrap();
        assert_eq!((loaded.source, loaded.format), (Source::TauBench, Format::OpenAi));
        assert_eq!(&loaded.messages, traj, "run {index} is lossless");
        let run = loaded.run.as_ref().unwrap();
        assert_eq!((run.index, run.count), (index, 40));
        if index < 3 {
            append_and_build(&loaded);
        }
    }
    let first = load_fixture(common::AIRLINE_RUNS_FILE, None);
    assert_eq!(first.run.unwrap().index, 0);
    assert_eq!(first.origins[2].record.as_deref(), Some("[0].traj[2]"));
    let error = load(&text, &LoadOptions { run: Some(40), ..LoadOptions::default() }).unwrap_err();
    assert_eq!(error.to_string(), "run 40 does not exist: the file has 40 runs (0 to 39)");
}

#[test]
fn swe_agent_trajectory() {
    let loaded = load_fixture(common::SWE_AGENT_FILE, None);
    assert_eq!((loaded.source, loaded.format), (Source::SweAgent, Format::OpenAi));
    assert_eq!(loaded.messages, common::swe_agent(), "tool_call_ids mapped, everything else as it was");
    assert!(loaded.notes.iter().any(|n| n.starts_with("10 tool messages")), "{:?}", loaded.notes);
    let session = append_and_build(&loaded);
    assert_eq!(session.history.len(), 22);
    // The name is only a hint: the same content under another name loads the same.
    let renamed =
        load(&read(common::SWE_AGENT_FILE), &LoadOptions { name: Some("x.json".into()), ..LoadOptions::default() })
            .unwrap();
    assert_eq!(renamed.messages, loaded.messages);
}

#[test]
fn claude_code_logs() {
    // (file, lines, messages after merging, assistant records merged away, skipped lines)
    for (name, lines, messages, merged, skipped) in
        [("claude-code-short.jsonl", 15, 5, 4, 6), ("claude-code-tool-heavy.jsonl", 38, 23, 4, 11)]
    {
        let loaded = load_fixture(&format!("anthropic/{name}"), None);
        assert_eq!((loaded.source, loaded.format), (Source::ClaudeCode, Format::Anthropic), "{name}");
        let records = common::claude_code(name);
        let list = loaded.messages["messages"].as_array().unwrap();
        assert_eq!(list.len(), messages, "{name}");
        assert_eq!(records.len(), messages + merged, "{name}: every user/assistant record is in a message");
        assert_eq!(loaded.skipped.len(), skipped, "{name}: {:?}", loaded.skipped);
        assert_eq!(loaded.skipped.len() + records.len(), lines);
        // Every content block of every record is in the result, once, in order.
        let blocks = |messages: &[Value]| -> Vec<Value> {
            messages
                .iter()
                .flat_map(|m| match &m["content"] {
                    Value::Array(blocks) => blocks.clone(),
                    text => vec![text.clone()],
                })
                .collect()
        };
        let mut expected = blocks(&records);
        let mut got = blocks(list);
        let key = |b: &Value| b.to_string();
        expected.sort_by_key(key);
        got.sort_by_key(key);
        assert_eq!(got, expected, "{name}");
        // One response, one message: no two assistant messages share an API message id.
        let mut ids: Vec<&str> = list.iter().filter_map(|m| m["id"].as_str()).collect();
        let before = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), before, "{name}");
        append_and_build(&loaded);
    }
    let heavy = load_fixture("anthropic/claude-code-tool-heavy.jsonl", None);
    // Line 23 is Claude Code's caveat about local commands, injected as a user message; lines 24
    // and 25 the /mcp command and its output.
    let marks: Vec<(MarkKind, Option<usize>)> = heavy.marks.iter().map(|m| (m.kind, m.line)).collect();
    assert_eq!(
        marks,
        [(MarkKind::Meta, Some(23)), (MarkKind::LocalCommand, Some(24)), (MarkKind::LocalCommand, Some(25))]
    );
    let index = heavy.marks[0].index;
    assert!(heavy.messages["messages"][index]["content"].as_str().unwrap().contains("Caveat: The messages below"));
    // Lines 31 and 34 are one response whose first call's result (line 33) was logged between them.
    let merged =
        heavy.origins.iter().position(|o| o.lines.as_deref() == Some(&[31, 34][..])).expect("lines 31 and 34 merged");
    let next: Vec<Option<usize>> = heavy.origins[merged + 1..merged + 3].iter().map(|o| o.line).collect();
    assert_eq!(next, [Some(33), Some(35)]);
}

#[test]
fn anthropic_request_file() {
    let messages: Vec<Value> = common::claude_code("claude-code-tool-heavy.jsonl");
    let request = serde_json::json!({ "system": "You are Claude Code.", "messages": messages });
    let loaded = load(&serde_json::to_string_pretty(&request).unwrap(), &LoadOptions::default()).unwrap();
    assert_eq!((loaded.source, loaded.format), (Source::Anthropic, Format::Anthropic));
    assert_eq!(loaded.messages, request, "lossless");
    append_and_build(&loaded);
}
