mod common;

use context_compactor::compact::profile::{self, Profile};
use context_compactor::compact::{
    validate, Action, BudgetOptions, BuildOptions, DropReason, RepairKind, Section, Summarizer, SummaryOptions,
};
use context_compactor::message::{Format, Role};
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use context_compactor::ErrorKind;
use serde_json::{json, Value};

fn call(id: &str, name: &str, args: Value) -> Value {
    json!({"id": id, "type": "function", "function": {"name": name, "arguments": args.to_string()}})
}

fn history(messages: Value) -> Session {
    let mut h = Session::with_encoding(Encoding::O200kBase);
    h.history.append_values(messages, Format::OpenAi).unwrap();
    h
}

fn ids(context: &context_compactor::compact::CompactedContext) -> Vec<String> {
    context.messages.iter().flat_map(|m| m.sources.clone()).collect()
}

fn no_summary() -> BuildOptions {
    BuildOptions { summary: None, ..BuildOptions::default() }
}

/// A count window: 50 messages, the last 10 kept; the system message and a tool chain whose
/// result lies inside the window are kept, the rest of the older messages dropped. The chain is
/// kept whole: a window that kept the assistant message at idx 2 but dropped its tool result at
/// idx 3 would hand the provider an unanswered call, which it rejects.
#[test]
fn seed_000_count_window_keeps_system_and_whole_chains() {
    let mut list =
        vec![json!({"role": "system", "content": "You are helpful."}), json!({"role": "user", "content": "start"})];
    list.push(json!({"role": "assistant", "content": null, "tool_calls": [call("call_1", "search", json!({"q": "a"})), call("call_2", "search", json!({"q": "b"}))]}));
    list.push(json!({"role": "tool", "tool_call_id": "call_1", "content": "result 1"}));
    while list.len() < 45 {
        let i = list.len();
        list.push(if i % 2 == 0 {
            json!({"role": "user", "content": format!("question {i}")})
        } else {
            json!({"role": "assistant", "content": format!("answer {i}")})
        });
    }
    list.push(json!({"role": "tool", "tool_call_id": "call_2", "content": "result 2 (late)"}));
    while list.len() < 50 {
        let i = list.len();
        list.push(if i % 2 == 0 {
            json!({"role": "user", "content": format!("question {i}")})
        } else {
            json!({"role": "assistant", "content": format!("answer {i}")})
        });
    }
    let mut h = history(Value::Array(list));
    assert_eq!(h.history.len(), 50);
    let options = BuildOptions { max_messages: Some(10), compress: None, ..no_summary() };
    let outcome = h.build(&options).unwrap();
    let context = outcome.context;
    // m2, the task, is pinned: it stays whatever the window.
    let mut expected: Vec<String> = vec!["m1".into(), "m2".into(), "m3".into(), "m4".into(), "m46".into()];
    expected.extend((41..=50).filter(|i| *i != 46).map(|i| format!("m{i}")));
    assert_eq!(ids(&context), expected);
    let request = context.to_request().unwrap();
    assert_eq!(validate(&request, Format::OpenAi), Ok(()));
    let entries = context.receipt.entries(h.history.records().iter().map(|r| r.id.as_str()));
    let entry = |id: &str| entries.iter().find(|e| e.id == id).unwrap().clone();
    assert_eq!(entry("m2").action, Action::Kept);
    assert_eq!(context.receipt.pinned[0].id, "m2");
    assert_eq!(entry("m5").action, Action::Dropped);
    assert_eq!(entry("m5").reason, Some(DropReason::Window));
    assert_eq!(entry("m4").action, Action::Kept);
    // The dropped message can be fetched back by id.
    assert_eq!(h.history.get_value("m5"), Some(json!({"role": "user", "content": "question 4"})));
    // Out of range is a typed error.
    for bad in [9, 101] {
        let e = h.build(&BuildOptions { max_messages: Some(bad), ..no_summary() }).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgument);
    }
}

#[test]
fn seed_000_unanswered_calls_are_dropped_and_reported() {
    let mut h = history(json!([
        {"role": "user", "content": "search for x"},
        {"role": "assistant", "content": "", "tool_calls": [call("call_123", "search", json!({}))]},
        {"role": "user", "content": "Actually, nevermind"}
    ]));
    let context = h.build(&no_summary()).unwrap().context;
    assert_eq!(ids(&context), ["m1", "m3"]);
    assert_eq!(context.receipt.repairs[0].kind, RepairKind::UnansweredCall);
    assert_eq!(context.receipt.repairs[0].id, "m2");
    for format in [Format::OpenAi, Format::Anthropic] {
        let context = h.build(&BuildOptions { format, ..no_summary() }).unwrap().context;
        context.to_request().unwrap();
    }
}

fn seed_001_history(items: usize) -> Session {
    let mut list = vec![json!({"role": "system", "content": "You are an assistant. The time is 2026-01-20 10:00:00."})];
    for i in 0..items {
        list.push(json!({"role": "user", "content": format!("What is on my calendar for day {i}?")}));
        list.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&format!("c{i}"), "list_events", json!({"day": i}))]}));
        let events: Vec<Value> = (1..=20)
            .map(|k| json!({"id": k, "title": format!("Meeting {k}"), "start_time": "2026-01-20T10:00:00", "location": "Room 4", "notes": "Bring the quarterly figures and the slides"}))
            .collect();
        list.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": json!({"success": true, "items": events, "total": 20}).to_string()}));
        list.push(json!({"role": "assistant", "content": format!("You have 20 meetings on day {i}.")}));
    }
    history(Value::Array(list))
}

#[test]
fn seed_001_budget_split_and_tool_output_compression() {
    let mut h = seed_001_history(12);
    let budget = BudgetOptions { context_window: 128_000, ..BudgetOptions::default() };
    let options = BuildOptions { budget: Some(budget), ..no_summary() };
    let context = h.build(&options).unwrap().context;
    let report = context.receipt.budget.unwrap();
    assert_eq!(report.max_tokens, 76_800);
    // What the system prompt leaves, less the reply priming (3) and the reserve for a
    // placeholder user message (which no provider takes an empty list without).
    let placeholder = context_compactor::message::parse(
        json!([{"role": "user", "content": context_compactor::compact::PLACEHOLDER_TEXT}]),
        Format::OpenAi,
    )
    .unwrap();
    let reserve = context_compactor::tokens::count_message(Encoding::O200kBase, &placeholder[0]).total as usize;
    let avail = 76_800 - report.system_tokens - 3 - reserve;
    // The pinned task and latest request come first; the summary section's share is of the rest.
    let avail = avail - report.pinned_tokens;
    assert_eq!(report.summary_budget, (avail as f64 * 0.26) as usize);
    // Everything fits: the context is the history as it is (nothing is compacted while
    // the history fits).
    assert!(context.receipt.fates.iter().all(|e| e.action == Action::Kept));
    assert_eq!(context.receipt.tokens_after, context.receipt.tokens_before);
    // At 12k tokens it does not: the tool outputs over 200 tokens before the recent steps are
    // compressed (JSON-aware), oldest first, until it fits.
    // A low-water mark of the whole budget: the event compacts to the budget itself, so the
    // compression alone makes it fit.
    let budget = BudgetOptions { context_window: 12_000, low_water_ratio: Some(1.0), ..BudgetOptions::default() };
    let context = h.build(&BuildOptions { budget: Some(budget), ..no_summary() }).unwrap().context;
    let compressed = context.receipt.fates.iter().filter(|e| e.action == Action::Compressed).count();
    assert!(compressed >= 1, "{:?}", context.receipt.runs);
    assert!(context.receipt.fates.iter().all(|e| e.action != Action::Dropped));
    assert!(context.tokens.total <= 7_200);
    let tool = context.messages.iter().find(|m| m.message.role == Role::Tool).unwrap();
    let text = tool.message.content.parts.iter().find_map(|p| match p {
        context_compactor::message::Part::ToolResult(r) => Some(r.content.joined_text()),
        _ => None,
    });
    let value: Value = serde_json::from_str(&text.unwrap()).unwrap();
    assert_eq!(value["total"], 20);
    assert_eq!(value["items"][2], "... (16 items omitted)");
    assert!(context.receipt.tokens_after < context.receipt.tokens_before);
    assert_eq!(context.tokens.total, context.tokens.system + context.tokens.summary + context.tokens.recent + 3);
}

#[test]
fn seed_001_recent_selection_takes_chains_whole_newest_first() {
    let mut h = seed_001_history(30);
    let options = BuildOptions {
        budget: Some(BudgetOptions { context_window: 6000, ..BudgetOptions::default() }),
        ..no_summary()
    };
    let context = h.build(&options).unwrap().context;
    let report = context.receipt.budget.unwrap();
    // The pinned task counts among the recent tokens; the recent budget is what the pins leave.
    assert!(context.tokens.recent <= report.recent_budget + report.pinned_tokens);
    assert!(context.tokens.total <= report.max_tokens);
    assert!(context.receipt.within_budget);
    // The newest message is kept, the oldest dropped for the budget.
    assert_eq!(context.receipt.fates.last().unwrap().action, Action::Kept);
    // m2, the task, is pinned; the messages after it are dropped for the budget.
    assert_eq!(context.receipt.fates[1].action, Action::Kept);
    assert_eq!(context.receipt.fates[2].reason, Some(DropReason::Budget));
    context.to_request().unwrap();
    // Never half a chain: a kept tool message has its assistant message right before it.
    let request = context.to_request().unwrap();
    assert_eq!(validate(&request, Format::OpenAi), Ok(()));
}

#[test]
fn seed_001_no_optimisation_up_to_ten_messages() {
    let mut h = seed_001_history(2); // 8 messages after the system one
    let options = BuildOptions { budget: Some(BudgetOptions::default()), ..no_summary() };
    let context = h.build(&options).unwrap().context;
    assert!(context.receipt.fates.iter().all(|e| e.action == Action::Kept));
    // Twelve messages that fit are not optimised either (compaction starts past the
    // budget); twelve that do not are.
    let mut h = seed_001_history(3); // 12
    let context = h.build(&options).unwrap().context;
    assert!(context.receipt.fates.iter().all(|e| e.action == Action::Kept));
    let small = BudgetOptions { context_window: 3_000, low_water_ratio: Some(1.0), ..BudgetOptions::default() };
    let context = h.build(&BuildOptions { budget: Some(small), ..no_summary() }).unwrap().context;
    assert!(context.receipt.fates.iter().any(|e| e.action == Action::Compressed));
}

/// A file read in one turn is a one-line digest from the next compaction event on.
#[test]
fn seed_002_file_reads_become_digests_in_later_turns() {
    let code = "import pandas as pd\n\ndef load_data(path):\n    return pd.read_csv(path)\n\ndef clean_data(df):\n    return df.dropna()\n\ndef visualize(df):\n    df.plot()\n".repeat(3);
    let mut h = history(json!([
        {"role": "user", "content": "Read code_sales_analysis"},
        {"role": "assistant", "content": null, "tool_calls": [call("call_read_file_1", "file_reader", json!({"path": "sales_analysis.py"}))]},
        {"role": "tool", "tool_call_id": "call_read_file_1", "content": code},
        {"role": "assistant", "content": "It loads, cleans and plots the data."}
    ]));
    let options = BuildOptions { keep_recent_steps: 1, ..no_summary() };
    let context = h.build(&options).unwrap().context;
    assert_eq!(context.receipt.fates[2].action, Action::Kept, "same turn: still whole");
    h.history.append_value(json!({"role": "user", "content": "Now make a chart"}), Format::OpenAi).unwrap();
    // Between compaction events the context only grows: the read stays as it was sent.
    let context = h.build(&options).unwrap().context;
    assert_eq!(context.receipt.fates[2].action, Action::Kept, "no event: as sent before");
    // A compaction event digests it: an older turn's read.
    let context = h.build(&BuildOptions { compact_now: true, ..options.clone() }).unwrap().context;
    assert_eq!(context.receipt.fates[2].action, Action::Digested);
    let digest = context.messages[2].message.content.parts.iter().find_map(|p| match p {
        context_compactor::message::Part::ToolResult(r) => Some(r.content.joined_text()),
        _ => None,
    });
    assert_eq!(
        digest.unwrap(),
        "[file read] sales_analysis.py (python, 30 lines, functions: load_data, clean_data, visualize)"
    );
    context.to_request().unwrap();
}

fn seed_004_history(rounds: usize) -> Session {
    seed_004_history_with(rounds, "Read", 300)
}

/// An exploring agent's history (as the `init` profile serves): rounds of "read a trace", the
/// tool result, "found a problem".
fn seed_004_history_with(rounds: usize, tool: &str, repeat: usize) -> Session {
    let mut h = Session::with_encoding(Encoding::O200kBase);
    let mut list = vec![
        json!({"role": "user", "content": "<execute_to_init_context>iteration 12 feedback</execute_to_init_context>"}),
        json!({"role": "assistant", "content": "Feedback received, starting the analysis."}),
    ];
    for i in 0..rounds {
        list.push(json!({"role": "user", "content": format!("Read the trace of sample {i}")}));
        list.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": tool, "input": {"file_path": format!("scenarios/x/execution_outputs/iteration_12/trace_{i}.log")}}]}));
        list.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": format!("step {i}: ").repeat(repeat)}]}));
        list.push(
            json!({"role": "assistant", "content": format!("Found problem {i}: the checker threshold is too strict.")}),
        );
    }
    h.history.append_values(Value::Array(list), Format::Anthropic).unwrap();
    h
}

fn seed_004_profile() -> Profile {
    Profile::from_value(json!({"name": "init-small", "contextWindow": 8000, "triggerFraction": 0.75, "keepRecentSteps": 3, "encoding": "o200k_base", "format": "anthropic"})).unwrap()
}

/// Past the trigger, a summary request; the summary comes back from "the model"; the context
/// becomes [task and summary (user), last N steps], alternating, and bad summaries are refused.
#[test]
fn seed_004_compaction_before_and_after() {
    // Traces read with a shell tool (a file-read tool's output would become a digest).
    let mut h = seed_004_history_with(20, "Bash", 100);
    let mut options = seed_004_profile().to_options().unwrap();
    options.thin = false;
    if let Some(summary) = options.summary.as_mut() {
        summary.summarizer = Summarizer::External;
        summary.min_messages = 10;
        summary.required_keys = vec!["pending".into()];
    }
    let before = h.build(&options).unwrap();
    let request = before.summary_request.clone().expect("compaction is due");
    assert_eq!(request.from, "m1");
    assert!(request.prompt.starts_with("Summarise the work so far"));
    // The request is ready to send: valid, the prompt last.
    assert_eq!(validate(&request.messages, Format::Anthropic), Ok(()));
    let last = request.messages["messages"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["role"], "user");
    // Meanwhile the context is valid and within budget: an extractive bridge covers what the
    // recent messages leave out, nothing is dropped uncovered.
    before.context.to_request().unwrap();
    assert!(before.context.receipt.within_budget);
    assert!(before.context.receipt.bridge.is_some());
    assert!(before.context.receipt.fates.iter().all(|e| e.action != Action::Dropped));

    // Two compactions never run at once.
    h.compactor.begin_summary(&request.id).unwrap();
    assert_eq!(h.compactor.begin_summary(&request.id).unwrap_err().kind, ErrorKind::Conflict);
    let again = h.build(&options).unwrap();
    assert!(again.summary_request.is_none());
    // Bad summaries are refused as the summariser's failures, and nothing changes; an unknown
    // request is the caller's mistake.
    let state = h.compactor.summary_state().clone();
    assert_eq!(h.complete_summary(&request.id, "   ", None).unwrap_err().kind, ErrorKind::Summarizer);
    assert_eq!(
        h.complete_summary(&request.id, &"pending ".repeat(5000), None).unwrap_err().kind,
        ErrorKind::Summarizer
    );
    let incomplete = h.complete_summary(&request.id, "{\"done\": true}", None).unwrap_err();
    assert!(incomplete.kind == ErrorKind::Summarizer && incomplete.message.contains("pending"), "{incomplete}");
    assert_eq!(h.complete_summary("s99", "text", None).unwrap_err().kind, ErrorKind::Conflict);
    assert_eq!(h.compactor.summary_state(), &state);
    let record = h
        .complete_summary(
            &request.id,
            "{\"analysis_conclusions\": [\"thresholds too strict\"], \"pending_actions\": [\"fix checker\"]}",
            Some("2026-02-01T00:00:00Z".into()),
        )
        .unwrap();
    assert_eq!(record.summarised_until, request.until);
    assert!(record.compression_rate > 0.9);
    assert_eq!(record.created_at, "2026-02-01T00:00:00Z");

    let after = h.build(&options).unwrap();
    let context = &after.context;
    let request_json = context.to_request().unwrap();
    let messages = request_json["messages"].as_array().unwrap();
    // The task stays first, and the summary goes in a user message, never an
    // assistant one (here merged with the task, which it follows).
    assert_eq!(messages[0]["role"], "user");
    assert_eq!(
        messages[0]["content"][0]["text"],
        "<execute_to_init_context>iteration 12 feedback</execute_to_init_context>"
    );
    assert!(messages[0]["content"][1]["text"].as_str().unwrap().contains("thresholds too strict"));
    assert_eq!(messages[1]["role"], "assistant");
    assert_eq!(context.messages[0].section, Section::Pinned);
    assert_eq!(context.messages[1].section, Section::Summary);
    // The last 3 steps (assistant messages with their results) stay whole.
    let assistants: Vec<&String> = context
        .messages
        .iter()
        .filter(|m| m.message.role == Role::Assistant && m.section == Section::Recent)
        .flat_map(|m| &m.sources)
        .collect();
    let n = h.history.len();
    for id in [format!("m{}", n), format!("m{}", n - 2), format!("m{}", n - 4)] {
        assert!(assistants.contains(&&id), "{id} in {assistants:?}");
    }
    assert!(context.messages.iter().any(|m| m.message.has_tool_results()));
    assert!(context.receipt.fates.iter().any(|e| e.action == Action::Summarised));
    assert!(context.receipt.summary.is_some());
    assert!(context.tokens.total < before.context.tokens.total);
}

#[test]
fn seed_004_history_thinning_keeps_last_user_and_assistant_of_older_turns() {
    let mut h = seed_004_history(6);
    // Thinning only runs at a compaction event, past the budget: the whole history (7,594 tokens)
    // does not fit 2,800; thinned it takes 2,662, at least 90% of it (a thinning that leaves more
    // unused gives back, or leaves the budget to the selection). A low-water mark of the whole
    // budget compacts to the budget itself.
    let budget = BudgetOptions { max_tokens: Some(2_800), low_water_ratio: Some(1.0), ..BudgetOptions::default() };
    let options = BuildOptions {
        thin: true,
        keep_recent_steps: 2,
        // In OpenAI's units: an Anthropic budget is Claude's billed tokens, a larger count.
        format: Format::OpenAi,
        budget: Some(budget),
        digest: None,
        ..no_summary()
    };
    let whole = h.build(&BuildOptions { budget: None, ..options.clone() }).unwrap().context;
    assert!(whole.receipt.fates.iter().all(|e| e.action == Action::Kept));
    let context = h.build(&options).unwrap().context;
    // Turn 2 (m3..m6): the request and the analysis stay, the Read call and its result go.
    let entries = context.receipt.entries(h.history.records().iter().map(|r| r.id.as_str()));
    let entry = |id: &str| entries.iter().find(|e| e.id == id).unwrap().clone();
    assert_eq!(entry("m3").action, Action::Kept);
    assert_eq!(entry("m4").reason, Some(DropReason::Thinning));
    assert_eq!(entry("m5").reason, Some(DropReason::Thinning));
    assert_eq!(entry("m6").action, Action::Kept);
    // The last two steps (the final turn's Read and its analysis) are whole.
    let last = h.history.len();
    for i in [last - 2, last - 1, last] {
        assert_eq!(entry(&format!("m{i}")).action, Action::Kept, "m{i}");
    }
    context.to_request().unwrap();
}

#[test]
fn extractive_compaction_runs_without_a_model_and_builds_on_itself() {
    let mut h = seed_004_history_with(12, "Bash", 300);
    let mut options = BuildOptions { format: Format::Anthropic, ..BuildOptions::default() };
    options.summary = Some(SummaryOptions {
        trigger_tokens: Some(3000),
        target_tokens: Some(1500),
        min_messages: 10,
        ..SummaryOptions::default()
    });
    let first = h.build(&options).unwrap();
    let record = first.new_summary.clone().expect("extractive summary");
    assert_eq!(h.compactor.summary_state().current.as_ref(), Some(&record));
    let value: Value = serde_json::from_str(&record.text).unwrap();
    assert!(value["toolsUsed"]["Bash"].as_u64().unwrap() >= 8);
    let files = value["files"].as_object().unwrap();
    assert!(files.keys().any(|p| p.contains("trace_0.log")), "{files:?}");
    first.context.to_request().unwrap();
    assert!(first.context.tokens.total < 3000);
    // More work, a second compaction folds the first in.
    let mut more = Vec::new();
    // Enough that even compressed it does not fit under the trigger: a new summary is due.
    for i in 100..140 {
        more.push(json!({"role": "user", "content": format!("Read the trace of sample {i}")}));
        more.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("cat /srv/traces/trace_{i}.log")}}]}));
        more.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "line ".repeat(400)}]}));
        more.push(json!({"role": "assistant", "content": format!("Problem {i} found.")}));
    }
    h.history.append_values(Value::Array(more), Format::Anthropic).unwrap();
    let second = h.build(&options).unwrap();
    let record2 = second.new_summary.clone().expect("second summary");
    assert!(record2.until_index > record.until_index);
    assert!(record2.message_count > record.message_count);
    let value: Value = serde_json::from_str(&record2.text).unwrap();
    let requests: Vec<&str> = value["userMessages"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(requests.iter().any(|r| r.contains("sample 100")));
    second.context.to_request().unwrap();
}

#[test]
fn bad_input_is_a_typed_error_and_changes_nothing() {
    let mut h = seed_001_history(3);
    let before_len = h.history.len();
    for (target, summary, recent) in
        [(0.0, 0.26, 0.65), (1.5, 0.26, 0.65), (0.6, -0.1, 0.65), (0.6, 0.5, 0.6), (0.6, 0.26, f64::NAN)]
    {
        let budget = BudgetOptions {
            target_ratio: target,
            summary_ratio: summary,
            recent_ratio: recent,
            ..BudgetOptions::default()
        };
        let error = h.build(&BuildOptions { budget: Some(budget), ..no_summary() }).unwrap_err();
        assert_eq!(error.kind, ErrorKind::InvalidArgument, "{target} {summary} {recent}");
    }
    let tiny = BudgetOptions { context_window: 20, ..BudgetOptions::default() };
    let error = h.build(&BuildOptions { budget: Some(tiny), ..no_summary() }).unwrap_err();
    assert!(error.message.contains("too small for the system prompt alone"), "{error}");
    let error = Profile::from_value(
        json!({"name": "x", "contextWindow": 10000, "triggerFraction": 0.7, "keepRecentSteps": 3, "encoding": "gpt2"}),
    )
    .unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidArgument);
    let error = BuildOptions::from_value(json!({"budget": {"targetRatio": 2}})).unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidArgument);
    let error = BuildOptions::from_value(json!({"maxMessage": 20})).unwrap_err();
    assert!(error.message.contains("maxMessage"), "{error}");
    assert_eq!(h.history.len(), before_len);
    assert_eq!(h.compactor.summary_state(), &Default::default());
    assert_eq!(h.complete_summary("s1", "text", None).unwrap_err().kind, ErrorKind::NotFound);
}

#[test]
fn options_parse_from_camel_case_json() {
    let options = BuildOptions::from_value(json!({
        "format": "anthropic", "maxMessages": 40,
        "budget": {"contextWindow": 200000, "targetRatio": 0.6},
        "compress": {"maxTokens": 300, "textMode": "truncate", "textMaxChars": 1000},
        "digest": null, "thin": true,
        "summary": {"summariser": "external", "triggerTokens": 150000, "targetTokens": 90000, "requiredKeys": ["pending"]}
    }))
    .unwrap();
    assert_eq!(options.format, Format::Anthropic);
    assert_eq!(options.max_messages, Some(40));
    assert!(options.digest.is_none());
    assert_eq!(options.summary.unwrap().summarizer, Summarizer::External);
    assert_eq!(profile::resolve("gpt-4o").unwrap().to_options().unwrap().budget.unwrap().context_window, 128_000);
}

// ---------------------------------------------------------------------------------------------
// The fixtures: generated agent sessions in the shapes of real ones.

fn check_all_formats(h: &mut Session, options: &BuildOptions) {
    for format in [Format::OpenAi, Format::Anthropic] {
        let options = BuildOptions { format, ..options.clone() };
        let before = h.clone();
        let outcome = h.build(&options).unwrap_or_else(|e| panic!("{format:?}: {e}"));
        let context = outcome.context;
        let request = context.to_request().unwrap_or_else(|e| panic!("{format:?}: {e}"));
        assert_eq!(validate(&request, format), Ok(()));
        // Assembled from per-message forms, it is the request emitted whole (cache hints aside).
        let plain = context_compactor::compact::CompactedContext { marks: None, ..context.clone() };
        assert_eq!(
            plain.to_request().unwrap(),
            context_compactor::compact::emit_request(context.messages(), format).unwrap(),
            "{format:?}"
        );
        if let Some(budget) = &context.receipt.budget {
            assert!(
                context.tokens.total <= budget.max_tokens,
                "{format:?}: {} > {}",
                context.tokens.total,
                budget.max_tokens
            );
        }
        assert_eq!(context.receipt.fates.len(), h.history.len());
        let mut twin = before.clone();
        let again = twin.build(&options).unwrap().context;
        assert_eq!(again, context, "deterministic");
    }
}

#[test]
fn every_airline_run_builds_a_valid_context() {
    let options = BuildOptions {
        budget: Some(BudgetOptions { context_window: 8000, ..BudgetOptions::default() }),
        summary: Some(SummaryOptions {
            trigger_tokens: Some(4000),
            target_tokens: Some(2000),
            ..SummaryOptions::default()
        }),
        thin: true,
        ..BuildOptions::default()
    };
    for (i, run) in common::airline_runs().into_iter().enumerate() {
        let mut h = Session::with_encoding(Encoding::O200kBase);
        h.history.append_values(run, Format::OpenAi).unwrap_or_else(|e| panic!("run {i}: {e}"));
        check_all_formats(&mut h, &options);
    }
}

#[test]
fn swe_agent_and_claude_code_build_valid_contexts() {
    let options = BuildOptions {
        budget: Some(BudgetOptions { context_window: 6000, ..BudgetOptions::default() }),
        summary: Some(SummaryOptions {
            trigger_tokens: Some(3000),
            target_tokens: Some(1500),
            min_messages: 10,
            ..SummaryOptions::default()
        }),
        thin: true,
        ..BuildOptions::default()
    };
    let mut h = Session::with_encoding(Encoding::O200kBase);
    h.history.append_values(common::swe_agent(), Format::OpenAi).unwrap();
    check_all_formats(&mut h, &options);
    for log in common::CLAUDE_CODE_LOGS {
        let mut h = Session::with_encoding(Encoding::O200kBase);
        h.history.append_values(Value::Array(common::claude_code(log)), Format::Anthropic).unwrap();
        check_all_formats(&mut h, &BuildOptions { summary: None, ..options.clone() });
        check_all_formats(&mut h, &options);
        // Unbudgeted, every message survives (merged and cleaned for the request).
        let context = h
            .build(&BuildOptions { format: Format::Anthropic, compress: None, digest: None, ..no_summary() })
            .unwrap()
            .context;
        context.to_request().unwrap();
    }
}

#[test]
fn claude_code_file_reads_are_reduced_and_paths_summarised() {
    let mut h = Session::with_encoding(Encoding::O200kBase);
    h.history
        .append_values(Value::Array(common::claude_code("claude-code-tool-heavy.jsonl")), Format::Anthropic)
        .unwrap();
    // The last user turn: the read of chart.ts (2,045 tokens) stays in the context, reduced, while
    // older turns go to make room (the digest of a read is checked on a real log in tests/shared.rs).
    let budget = BudgetOptions { max_tokens: Some(1_650), ..BudgetOptions::default() };
    let options =
        BuildOptions { format: Format::Anthropic, keep_recent_steps: 1, budget: Some(budget), ..no_summary() };
    let context = h.build(&options).unwrap().context;
    assert!(context.tokens.total <= 1_650);
    let chart = context.receipt.runs.iter().find(|r| r.count == 1 && r.tokens_before >= 2_000);
    assert!(
        chart.is_some_and(|r| r.count == 1 && matches!(r.action, Action::Compressed | Action::Digested)),
        "the read of chart.ts is kept, reduced: {:?}",
        context.receipt.runs
    );
    let mut options = BuildOptions { format: Format::Anthropic, keep_recent_steps: 1, ..BuildOptions::default() };
    options.summary = Some(SummaryOptions {
        trigger_tokens: Some(200),
        target_tokens: Some(100),
        min_messages: 5,
        ..SummaryOptions::default()
    });
    let outcome = h.build(&options).unwrap();
    let summary: Value = serde_json::from_str(&outcome.new_summary.unwrap().text).unwrap();
    let files = summary["files"].to_string();
    assert!(files.contains("/home/dev/projects/ledger/src/ledger.ts"), "{files}");
    assert!(summary["toolsUsed"]["Bash"].as_u64().unwrap() >= 1);
}

/// The 40 airline runs as one 1,780-message conversation (~145k tokens), built to 100k tokens.
#[test]
fn airline_concatenated_to_a_100k_budget() {
    // 39 copies of the same system prompt are kept once.
    let (mut h, options, outcome) = common::concatenated_to_a_100k_budget(common::airline_runs(), 1780, 39);
    let context = &outcome.context;
    let summary = outcome.new_summary.as_ref().expect("past 50k: the extractive summary");
    let value: Value = serde_json::from_str(&summary.text).unwrap();
    assert!(value["toolsUsed"]["get_reservation_details"].as_u64().unwrap() > 40);
    // Warm, and after one append: only the new message is counted and no old reduction redone.
    let computed = h.compactor.reductions_computed();
    let counted = h.history.counted_messages();
    let warm = h.build(&options).unwrap();
    assert_eq!(h.compactor.reductions_computed(), computed);
    assert_eq!(warm.context.tokens, context.tokens);
    h.history.append_value(json!({"role": "user", "content": "One more question"}), Format::OpenAi).unwrap();
    let appended = h.build(&options).unwrap();
    assert_eq!(h.history.counted_messages(), counted + 1);
    assert!(h.compactor.reductions_computed() - computed <= 2, "{}", h.compactor.reductions_computed() - computed);
    assert_eq!(appended.context.receipt.fates.last().unwrap().action, Action::Kept);
}

/// The Claude Code logs and the SWE-agent trajectory at 60k, 30k, 6k and 3k tokens, budget
/// only, with the summary, and with thinning. Every context is valid, within budget, holds the
/// task and the latest request (pinned, in the context), is compacted by an event down to the
/// low-water mark (and not below it) when the history is larger, leaves nothing uncovered while
/// a summary is configured, and its summary (when one is made) has the handoff's sections.
#[test]
fn replayed_agent_sessions_keep_the_task_and_use_the_budget() {
    use context_compactor::compact::PinRole;
    let mut sessions: Vec<(&str, Format, Value)> = vec![("swe-agent", Format::OpenAi, common::swe_agent())];
    for log in common::CLAUDE_CODE_LOGS {
        sessions.push((log, Format::Anthropic, Value::Array(common::claude_code(log))));
    }
    for (name, format, messages) in sessions {
        let mut h = Session::with_encoding(Encoding::O200kBase);
        h.history.append_values(messages, format).unwrap();
        // As sent whole (a budget it fits: nothing reduced).
        let roomy = Some(BudgetOptions { max_tokens: Some(1 << 30), ..BudgetOptions::default() });
        let sent = h.build(&BuildOptions { format, budget: roomy, ..no_summary() }).unwrap().context;
        let whole = sent.tokens.total;
        // Claude's budgets are in billed units (its rule on the messages, an estimate).
        let whole_billed = sent.receipt.budget.and_then(|b| b.billed_tokens).unwrap_or(whole);
        for max in [60_000u32, 30_000, 6_000, 3_000] {
            let budget = Some(BudgetOptions { max_tokens: Some(max), ..BudgetOptions::default() });
            let modes = [
                ("budget only", BuildOptions { format, budget: budget.clone(), ..no_summary() }),
                ("summary", BuildOptions { format, budget: budget.clone(), ..BuildOptions::default() }),
                ("thinning", BuildOptions { format, budget: budget.clone(), thin: true, ..BuildOptions::default() }),
            ];
            for (mode, options) in modes {
                let at = format!("{name} at {max}, {mode}");
                let outcome = h.build(&options).unwrap_or_else(|e| panic!("{at}: {e}"));
                let context = &outcome.context;
                let request = context.to_request().unwrap_or_else(|e| panic!("{at}: {e}"));
                assert_eq!(validate(&request, format), Ok(()), "{at}");
                let total = context.tokens.total;
                assert!(total <= max as usize, "{at}: {total} tokens");
                let limit = context.receipt.budget.map_or(max as usize, |b| b.max_tokens);
                if whole_billed > limit {
                    // A compaction event: down to the low-water mark, and not below it; or, with
                    // a summary in force from an earlier build, that summary and all after it.
                    let cache = context.receipt.cache.unwrap();
                    let mark = context.receipt.budget.unwrap().low_water_tokens;
                    // Claude's mark is in billed units, converted at the history's ratio: the
                    // context's own ratio may be a few percent off it.
                    let billed = context.receipt.budget.and_then(|b| b.billed_tokens);
                    let reached = billed.map_or(total >= mark, |billed| billed as f64 >= mark as f64 * 0.95);
                    if cache.event {
                        assert!(
                            reached,
                            "{at}: {total} ({billed:?} billed) of {max}, under the mark {mark}; {:?}",
                            context.receipt.runs
                        );
                    } else {
                        let summary = context.receipt.summary.as_ref().unwrap_or_else(|| panic!("{at}: {cache:?}"));
                        let until = h.history.position(&summary.summarised_until).unwrap();
                        let fates = &context.receipt.fates;
                        // All after it are in the context (a long tool output reduced as before).
                        let included = |a: Action| matches!(a, Action::Kept | Action::Compressed | Action::Digested);
                        assert!(
                            fates[until + 1..].iter().all(|f| included(f.action)),
                            "{at}: {:?}",
                            context.receipt.runs
                        );
                    }
                } else {
                    assert_eq!(total, whole, "{at}: a history that fits is sent whole");
                }
                let in_context = ids(context);
                for role in [PinRole::Task, PinRole::Latest] {
                    let pin = context.receipt.pinned.iter().find(|p| p.role == role);
                    let pin = pin.unwrap_or_else(|| panic!("{at}: no {role:?} pinned: {:?}", context.receipt.pinned));
                    assert!(in_context.contains(&pin.id), "{at}: {role:?} {} not in the context", pin.id);
                }
                if options.summary.is_some() {
                    let uncovered = context
                        .receipt
                        .runs
                        .iter()
                        .find(|r| r.action == Action::Dropped && r.reason != Some(DropReason::Repair));
                    assert!(uncovered.is_none(), "{at}: dropped uncovered: {:?}", context.receipt.runs);
                }
                if let Some(summary) = &outcome.new_summary {
                    let value: Value = serde_json::from_str(&summary.text).unwrap_or_else(|e| panic!("{at}: {e}"));
                    for key in ["primaryRequest", "files"] {
                        assert!(value.get(key).is_some(), "{at}: the summary has no {key}: {}", summary.text);
                    }
                }
            }
        }
    }
}

/// A pin made or taken away between builds changes the next build as a build from scratch would
/// make it: what the compactor kept from the last build (reductions, fates, runs) does not hide it.
#[test]
fn a_pin_between_builds_builds_as_from_scratch() {
    let mut turns = vec![json!({"role": "system", "content": "Be brief."})];
    for t in 0..30 {
        turns.push(json!({"role": "user", "content": format!("request {t}: {}", "please look at this. ".repeat(30))}));
        let id = format!("c{t}");
        turns.push(json!({"role": "assistant", "content": null, "tool_calls": [call(&id, "read", json!({"path": format!("f{t}")}))]}));
        turns.push(json!({"role": "tool", "tool_call_id": id, "content": "line ".repeat(200)}));
        turns.push(json!({"role": "assistant", "content": format!("answer {t}")}));
    }
    let options =
        BuildOptions { budget: Some(BudgetOptions { max_tokens: Some(3_000), ..Default::default() }), ..no_summary() };
    let mut h = history(Value::Array(turns));
    let fresh = |h: &Session| {
        let mut copy = Session::import(serde_json::to_value(h.export().unwrap()).unwrap()).unwrap();
        copy.build(&options).unwrap()
    };
    h.build(&options).unwrap();
    for change in ["pin m22", "pin m2", "unpin m22", "unpin m2"] {
        let (verb, id) = change.split_once(' ').unwrap();
        match verb {
            "pin" => h.history.pin(id).unwrap(),
            _ => h.history.unpin(id).unwrap(),
        }
        let warm = h.build(&options).unwrap();
        let cold = fresh(&h);
        assert_eq!(ids(&warm.context), ids(&cold.context), "after {change}");
        // (A pin is a compaction event: the warm build says so, the cold one has no history.)
        let without_cache =
            |r: &context_compactor::compact::Receipt| context_compactor::compact::Receipt { cache: None, ..r.clone() };
        assert_eq!(without_cache(&warm.context.receipt), without_cache(&cold.context.receipt), "after {change}");
        assert_eq!(
            warm.context.receipt.pinned.iter().any(|p| p.id == "m22"),
            change == "pin m22" || change == "pin m2"
        );
    }
}

/// A build's count of a request with tool definitions is the one `countRequest` gives for what it
/// sends: tools joined to the history's system message cost less than the one they would make.
#[test]
fn a_build_counts_its_tools_as_count_request_counts_the_request() {
    use context_compactor::compact::options::RequestParts;
    use context_compactor::tokens::{count_request, RequestOptions};
    let tools =
        vec![json!({"type": "function", "function": {"name": "get_weather", "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}})];
    for system in [true, false] {
        for format in [Format::OpenAi, Format::Responses, Format::AiSdk] {
            let mut messages = vec![json!({"role": "user", "content": "Weather in Paris?"})];
            if system {
                messages.insert(0, json!({"role": "system", "content": "You are helpful."}));
            }
            let mut h = history(Value::Array(messages));
            let request = RequestParts { tools: Some(tools.clone()), ..RequestParts::default() };
            let options = BuildOptions {
                format,
                budget: Some(BudgetOptions { max_tokens: Some(8_000), ..BudgetOptions::default() }),
                request: Some(request),
                ..no_summary()
            };
            let context = h.build(&options).unwrap().context;
            let sent = h.compactor.request_value(&context).unwrap();
            let (body, counted_as) = match format {
                Format::Responses => (
                    json!({"input": sent, "tools": [{"type": "function", "name": "get_weather",
                    "description": "Weather for a city", "parameters": tools[0]["function"]["parameters"]}]}),
                    Format::Responses,
                ),
                Format::AiSdk => {
                    let chat = h
                        .history
                        .records()
                        .iter()
                        .map(|r| context_compactor::message::emit_one(&r.message, Format::OpenAi).unwrap())
                        .collect::<Vec<_>>();
                    (json!({"messages": chat, "tools": tools}), Format::OpenAi)
                }
                _ => (json!({"messages": sent, "tools": tools}), Format::OpenAi),
            };
            let options = RequestOptions { format: counted_as, ..RequestOptions::default() };
            let count = count_request(Encoding::O200kBase, body, &options).unwrap();
            assert_eq!(context.tokens.total, count.total, "{format:?}, system message: {system}");
        }
    }
}

/// A context compacted under a small budget is made again when the budget grows by half or more:
/// what it cut may fit now. A budget that moves a little keeps the context (and its cache).
#[test]
fn a_grown_budget_makes_the_cut_context_again() {
    use context_compactor::compact::EventReason;
    let request = format!("Plan a trip to Rome. {}", "Include museums, food and transport. ".repeat(100));
    let mut h = history(json!([{"role": "user", "content": request}, {"role": "assistant", "content": "Sure."}]));
    let at = |max: u32| BuildOptions {
        budget: Some(BudgetOptions { max_tokens: Some(max), ..BudgetOptions::default() }),
        ..no_summary()
    };
    let small = h.build(&at(100)).unwrap().context;
    assert!(small.tokens.total <= 100);
    let slightly = h.build(&at(140)).unwrap().context;
    assert_eq!(slightly.receipt.cache.as_ref().map(|c| c.event), Some(false), "a budget 40% larger keeps the context");
    let large = h.build(&at(100_000)).unwrap().context;
    let cache = large.receipt.cache.as_ref().unwrap();
    assert_eq!((cache.event, cache.reason), (true, Some(EventReason::Grown)));
    assert_eq!(large.messages[0].message.content.joined_text(), request, "the request whole again");
    let unbounded = h.build(&at(1_000_000)).unwrap().context;
    assert_eq!(unbounded.receipt.cache.as_ref().map(|c| c.event), Some(false), "nothing was cut: nothing to remake");
}

/// Another provider's block in a message is refused when it is appended; a part type this library
/// does not know travels in its own format and, left out of another, is named in the notes.
#[test]
fn foreign_and_unknown_content_parts_are_refused_or_named() {
    let mut h = Session::with_encoding(Encoding::O200kBase);
    let tool_result = json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "r"}]});
    let error = h.history.append_value(tool_result, Format::OpenAi).unwrap_err();
    assert_eq!(error.kind, ErrorKind::InvalidMessage);
    assert!(error.message.contains("\"tool_result\" is an Anthropic content block"), "{}", error.message);
    let image_url =
        json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}]});
    assert!(h.history.append_value(image_url, Format::Anthropic).unwrap_err().message.contains("OpenAI content part"));
    assert_eq!(h.history.len(), 0, "nothing appended");

    let mut h = history(json!([
        {"role": "user", "content": "hi"},
        {"role": "user", "content": [{"type": "text", "text": "and"}, {"type": "foo", "data": 1}]},
        {"role": "assistant", "content": "ok"}
    ]));
    let native = h.build(&no_summary()).unwrap().context;
    assert!(native.receipt.notes.is_empty(), "{:?}", native.receipt.notes);
    let options = BuildOptions { format: Format::Anthropic, ..no_summary() };
    let foreign = h.build(&options).unwrap().context;
    assert!(
        foreign
            .receipt
            .notes
            .iter()
            .any(|n| n == "content parts of type foo in m2 have no anthropic form and are not sent"),
        "{:?}",
        foreign.receipt.notes
    );
}
