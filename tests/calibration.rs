//! Calibration replayed on usage the providers reported for known requests: budgets built with
//! the top of the band keep the bill within them whenever a request's ratio falls in the band.

use context_compactor::compact::{BudgetOptions, BuildOptions};
use context_compactor::message::Format;
use context_compactor::session::Session;
use context_compactor::tokens::anchor::{AnchorEnd, CountBasis};
use context_compactor::tokens::calibration::Calibration;
use context_compactor::tokens::{self, Encoding, RequestOptions};
use serde_json::{json, Value};

/// Anthropic's token-counting guide (https://docs.claude.com/en/docs/build-with-claude/token-counting):
/// requests and the `input_tokens` the count_tokens endpoint returned for them.
fn anthropic_published() -> Vec<(Value, u64)> {
    vec![
        (json!({"system": "You are a scientist", "messages": [{"role": "user", "content": "Hello, Claude"}]}), 14),
        (
            json!({
                "tools": [{
                    "name": "get_weather",
                    "description": "Get the current weather in a given location",
                    "input_schema": {"type": "object", "properties": {"location": {"type": "string", "description": "The city and state, e.g. San Francisco, CA"}}, "required": ["location"]}
                }],
                "messages": [{"role": "user", "content": "What's the weather like in San Francisco?"}]
            }),
            403,
        ),
        (
            json!({"messages": [
                {"role": "user", "content": "Are there an infinite number of prime numbers such that n mod 4 == 3?"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "This is a nice number theory question. Let's think about it step by step...", "signature": "EuYBCkQYAiJAgCs1le6/Pol5Z4/JMomVOouGrWdhYNsH3ukzUECbB6iWrSQtsQuRHJID6lWV..."},
                    {"type": "text", "text": "Yes, there are infinitely many prime numbers p such that p mod 4 = 3..."}
                ]},
                {"role": "user", "content": "Can you write a formal proof?"}
            ]}),
            88,
        ),
    ]
}

/// tests/data/openai-prompt-tokens.json: the prompt tokens OpenAI reported (tools included).
fn openai_reported() -> Vec<(Value, u64)> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/openai-prompt-tokens.json");
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    data["vectors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| (v["request"].clone(), v["prompt_tokens"].as_u64().unwrap()))
        .collect()
}

/// Replays `(counted, reported)` requests in order: each is checked against the calibration of
/// the ones before it, then recorded. Returns how many fell outside the band they met.
fn replay(model: &str, requests: &[(usize, u64)]) -> usize {
    let mut calibration = Calibration::default();
    let mut surprises = 0;
    for &(counted, reported) in requests {
        if let Some(factor) = calibration.factor(model) {
            let ratio = reported as f64 / counted as f64;
            if (factor.low..=factor.high).contains(&ratio) {
                // Within the band, a budget of `upper` billed tokens holds what the provider billed.
                assert!(reported as usize <= factor.upper(counted), "{counted} -> {reported}, band {factor:?}");
                assert!(factor.counted_budget(reported as usize) <= counted + 1);
            } else {
                surprises += 1;
            }
        }
        let factor = calibration.record(model, counted, reported).unwrap();
        // Once recorded, every request in the window fits under the top of the band.
        for observation in calibration.observations(model) {
            assert!(observation.reported as usize <= factor.upper(observation.counted as usize));
        }
    }
    surprises
}

#[test]
fn anthropic_published_counts_replay_within_the_band() {
    let options = RequestOptions { format: Format::Anthropic, ..RequestOptions::default() };
    let requests: Vec<(usize, u64)> = anthropic_published()
        .into_iter()
        .map(|(request, reported)| {
            (tokens::count_request(Encoding::O200kBase, request, &options).unwrap().total, reported)
        })
        .collect();
    for (counted, reported) in &requests {
        eprintln!("claude: counted {counted} with o200k_base, reported {reported}");
    }
    let surprises = replay("claude", &requests);
    assert!(surprises <= 2, "{surprises}");
}

#[test]
fn openai_whole_requests_are_calibrated_to_the_bill() {
    // Counted whole (messages, tools, tool choice), an OpenAI request is billed what it counts:
    // the factor stays 1 and no request falls outside the band.
    let requests: Vec<(usize, u64)> = openai_reported()
        .into_iter()
        .map(|(request, reported)| {
            (tokens::count_request(Encoding::Cl100kBase, request, &RequestOptions::default()).unwrap().total, reported)
        })
        .collect();
    let surprises = replay("gpt-3.5-turbo", &requests);
    eprintln!("openai: {} requests, {surprises} outside the band they met", requests.len());
    assert_eq!(surprises, 0);
}

#[test]
fn a_calibrated_history_builds_within_the_billed_budget() {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    for i in 0..120 {
        let text = format!("message {i}: {}", "the quick brown fox jumps over the lazy dog ".repeat(1 + i % 7));
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        session.history.append_value(json!({"role": role, "content": text}), Format::Anthropic).unwrap();
    }
    let budget = BudgetOptions { context_window: 4000, target_ratio: 1.0, ..BudgetOptions::default() };
    let options =
        BuildOptions { format: Format::Anthropic, budget: Some(budget), summary: None, ..BuildOptions::default() };

    let first = session.build(&options).unwrap();
    assert!(first.context.receipt.calibration.is_none(), "before any usage, counts are uncalibrated estimates");
    assert!(session.token_report().estimate);
    let uncalibrated = first.context.tokens.total;

    // The provider billed 25% more than we counted for that context, then 18% and 30% more.
    for (counted, reported) in [(uncalibrated, uncalibrated as u64 * 5 / 4), (1000, 1180), (2000, 2600)] {
        session
            .record_usage(
                &json!({"input_tokens": reported, "cache_read_input_tokens": 0}),
                Some("claude-sonnet-4-5"),
                Some(counted),
            )
            .unwrap();
    }
    let factor = session.compactor.calibration().unwrap();
    assert_eq!(factor.observations, 3);
    let built = session.build(&options).unwrap();
    let receipt = &built.context.receipt;
    let calibrated = receipt.calibration.clone().unwrap();
    assert!(receipt.within_budget);
    assert!(calibrated.upper <= 4000, "the context's bill at the top of the band fits the budget: {calibrated:?}");
    let counted_budget = receipt.budget.as_ref().unwrap().max_tokens;
    assert!(counted_budget < 4000 * 10 / 13 + 1);
    // The context sent before still fits the calibrated budget: it is sent again as it was
    // (the prompt cache keeps it), not compacted further.
    assert!(built.context.tokens.total <= counted_budget);
    assert_eq!(built.context.tokens.total, uncalibrated);
    let report = session.token_report();
    assert_eq!(report.calibration.map(|c| c.factor.model), Some("claude-sonnet-4-5".to_string()));

    // Usage without a model, or a request counted as nothing, is refused and changes nothing.
    assert!(session.record_usage(&json!({"input_tokens": 10}), None, None).is_err());
    assert!(session.record_usage(&json!({"input_tokens": 10}), Some("m"), Some(0)).is_err());
    assert!(session.record_usage(&json!({"prompt_tokens": "ten"}), Some("m"), None).is_err());
    assert_eq!(session.compactor.calibration().unwrap().observations, 3);
    // A whole response names its model; by default the last build's context is what was sent.
    // That count holds the messages alone, not what was sent beside them: the bill anchors later
    // counts and is not learnt as a ratio.
    let report = session
        .record_usage(&json!({"model": "claude-sonnet-4-5", "usage": {"input_tokens": 3000}}), None, None)
        .unwrap();
    assert!(!report.calibrated && report.anchored && !report.counted_whole_request, "{report:?}");
    assert_eq!(report.counted, built.context.tokens.total);
    assert!(report.notes.iter().any(|n| n.contains("not calibrated")), "{:?}", report.notes);
    assert_eq!(report.calibration.map(|f| f.observations), Some(3));
    assert_eq!(session.compactor.calibration().unwrap().observations, 3);
}

fn claude_session() -> Session {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    session
        .history
        .append_values(
            json!([
                {"role": "user", "content": "Read /etc/hosts and tell me what it maps."},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {"file_path": "/etc/hosts"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "127.0.0.1 localhost\n::1 localhost"}]}
            ]),
            Format::Anthropic,
        )
        .unwrap();
    session
}

const RESPONSE: &str = r#"{"role": "assistant", "content": [{"type": "text", "text": "Let me look at the other file too."}, {"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/etc/resolv.conf"}}]}"#;
const RESULT: &str =
    r#"{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": "nameserver 1.1.1.1"}]}"#;

fn claude_usage() -> Value {
    json!({"model": "claude-opus-4-6", "usage": {"input_tokens": 10, "cache_creation_input_tokens": 5000, "cache_read_input_tokens": 20000, "output_tokens": 120}})
}

/// Claude's rule for one stored message (what the anchored count adds for an appended one).
fn billed(session: &Session, index: usize) -> usize {
    let record = &session.history.records()[index];
    tokens::claude::billed(
        Encoding::O200kBase,
        &record.message,
        &tokens::count_message(Encoding::O200kBase, &record.message),
    ) as usize
}

#[test]
fn a_recorded_bill_anchors_the_next_count_of_the_history() {
    let mut session = claude_session();
    assert_eq!(session.token_count().basis, CountBasis::Estimated);
    // The response is appended, then its usage recorded: the bill covers the three messages
    // before it; its output tokens stand for it.
    session.history.append_value(serde_json::from_str(RESPONSE).unwrap(), Format::Anthropic).unwrap();
    let report = session.record_usage(&claude_usage(), None, None).unwrap();
    assert_eq!(
        (report.billed_input, report.cache_write, report.cache_read, report.prompt, report.output),
        (10, 5000, 20000, 25010, Some(120))
    );
    assert!(report.anchored && !report.calibrated && !report.counted_whole_request, "{report:?}");
    assert!(report.notes.iter().any(|n| n.contains("not calibrated")), "{:?}", report.notes);
    assert!(session.compactor.calibration().is_none(), "a count of the messages alone is never learnt");

    session.history.append_value(serde_json::from_str(RESULT).unwrap(), Format::Anthropic).unwrap();
    let anchored = session.compactor.anchored_total(&session.history, Some("claude-opus-4-6"), None).unwrap();
    assert_eq!(anchored.tokens, 25010 + 120 + billed(&session, 4));
    assert_eq!((anchored.output, anchored.appended, anchored.appended_messages), (Some(120), billed(&session, 4), 2));
    let count = session.token_count();
    assert_eq!((count.basis, count.total), (CountBasis::Anchored, anchored.tokens));
    assert_eq!(count.messages.len(), 5, "the messages keep their own counts");
    let report = session.token_report();
    assert_eq!((report.basis, report.total), (CountBasis::Anchored, anchored.tokens));
    assert!(report.counted < report.total, "the bill holds the system prompt and tools the history does not");

    // Another model, a rewritten history, a compaction event: the anchor no longer holds.
    assert_eq!(
        session.compactor.anchored_total(&session.history, Some("claude-haiku-4-5"), None),
        Err(AnchorEnd::OtherModel { anchored: "claude-opus-4-6".into(), next: "claude-haiku-4-5".into() })
    );
    let mut cut = session.history.clone();
    cut.truncate(2);
    assert_eq!(session.compactor.anchored_total(&cut, None, None), Err(AnchorEnd::HistoryRewritten));
    session.compactor.end_anchor();
    assert_eq!(session.compactor.anchored_total(&session.history, None, None), Err(AnchorEnd::Compacted));
    let count = session.token_count();
    assert_eq!(count.basis, CountBasis::Estimated);
    assert!(session.token_report().unanchored.unwrap().contains("compaction"));
}

#[test]
fn usage_recorded_before_the_response_is_appended_anchors_the_same() {
    let mut session = claude_session();
    session.record_usage(&claude_usage(), None, None).unwrap();
    let before = session.compactor.anchored_total(&session.history, None, None).unwrap();
    assert_eq!((before.tokens, before.output, before.appended_messages), (25010, None, 0), "no response yet");
    session.history.append_value(serde_json::from_str(RESPONSE).unwrap(), Format::Anthropic).unwrap();
    session.history.append_value(serde_json::from_str(RESULT).unwrap(), Format::Anthropic).unwrap();
    let after = session.compactor.anchored_total(&session.history, None, None).unwrap();
    assert_eq!(after.tokens, 25010 + 120 + billed(&session, 4));
}

#[test]
fn openai_output_tokens_do_not_stand_for_the_response() {
    // Reasoning models bill reasoning as output, and the next prompt does not hold it.
    let mut session = Session::with_encoding(Encoding::O200kBase);
    session.history.append_value(json!({"role": "user", "content": "hi"}), Format::OpenAi).unwrap();
    let plain = json!({"model": "gpt-4o", "usage": {"prompt_tokens": 900, "completion_tokens": 40,
        "completion_tokens_details": {"reasoning_tokens": 0}}});
    let report = session.record_usage(&plain, None, None).unwrap();
    assert!(!report.notes.iter().any(|n| n.contains("reasoning")), "no reasoning, no note: {:?}", report.notes);
    let usage = json!({"model": "o3", "usage": {"prompt_tokens": 900, "completion_tokens": 4000, "prompt_tokens_details": {"cached_tokens": 512},
        "completion_tokens_details": {"reasoning_tokens": 3900}}});
    let report = session.record_usage(&usage, None, None).unwrap();
    assert_eq!((report.billed_input, report.cache_read, report.output), (388, 512, Some(4000)));
    assert!(report.notes.iter().any(|n| n.contains("reasoning")), "{:?}", report.notes);
    session.history.append_value(json!({"role": "assistant", "content": "Hello!"}), Format::OpenAi).unwrap();
    let anchored = session.compactor.anchored_total(&session.history, None, None).unwrap();
    let estimate = tokens::count_message(Encoding::O200kBase, &session.history.records()[1].message).total as usize;
    assert_eq!((anchored.output, anchored.tokens), (None, 900 + estimate));
}

#[test]
fn a_compacted_context_anchors_the_context_not_the_history() {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    for i in 0..40 {
        let text = format!("message {i}: {}", "the quick brown fox jumps over the lazy dog ".repeat(6));
        let role = if i % 2 == 0 { "user" } else { "assistant" };
        session.history.append_value(json!({"role": role, "content": text}), Format::Anthropic).unwrap();
    }
    let whole = BuildOptions { format: Format::Anthropic, summary: None, ..BuildOptions::default() };
    session.build(&whole).unwrap();
    session.record_usage(&claude_usage(), None, None).unwrap();
    assert_eq!(session.token_count().basis, CountBasis::Anchored, "the whole history was sent");

    let budget = BudgetOptions { context_window: 800, target_ratio: 1.0, ..BudgetOptions::default() };
    session.build(&BuildOptions { budget: Some(budget), ..whole }).unwrap();
    session.record_usage(&claude_usage(), None, None).unwrap();
    assert_eq!(session.token_count().basis, CountBasis::Estimated);
    assert!(session.token_report().unanchored.unwrap().contains("compacted context"));
    // The compaction layer's count of the next context (the billed one plus appends) holds.
    session.history.append_value(json!({"role": "user", "content": "next"}), Format::Anthropic).unwrap();
    let next = session.compactor.anchored_total(&session.history, None, None).unwrap();
    assert_eq!((next.prompt, next.appended_messages), (25010, 1));
}

/// A bill far above a whole request's count holds parts the count never saw (a response_format
/// schema): an amount, not a scale. It is reported, not learnt: the next budget stays the user's.
#[test]
fn a_bill_far_above_the_count_is_not_learnt_as_a_factor() {
    use context_compactor::compact::options::RequestParts;
    let mut session = Session::with_encoding(Encoding::O200kBase);
    session.history.append_value(json!({"role": "user", "content": "Weather in Paris?"}), Format::OpenAi).unwrap();
    let tools =
        vec![json!({"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}})];
    let options = BuildOptions {
        budget: Some(BudgetOptions { max_tokens: Some(8_000), ..BudgetOptions::default() }),
        request: Some(RequestParts { tools: Some(tools), ..RequestParts::default() }),
        summary: None,
        ..BuildOptions::default()
    };
    let counted = session.build(&options).unwrap().context.tokens.total;
    let unseen = 2_500;
    let usage = json!({"model": "gpt-4o", "usage": {"prompt_tokens": counted + unseen, "completion_tokens": 9}});
    let report = session.record_usage(&usage, None, None).unwrap();
    assert!(!report.calibrated && report.counted_whole_request, "{report:?}");
    assert!(
        report.notes.iter().any(|n| n.contains("not calibrated") && n.contains("2500 tokens")),
        "{:?}",
        report.notes
    );
    assert!(session.compactor.calibration().is_none());
    let budget = session.build(&options).unwrap().context.receipt.budget.unwrap();
    assert_eq!(budget.max_tokens, 8_000);
    // Within twice the count, the ratio is learnt as before.
    let usage = json!({"model": "gpt-4o", "usage": {"prompt_tokens": counted + counted / 4, "completion_tokens": 9}});
    assert!(session.record_usage(&usage, None, None).unwrap().calibrated);
}

/// A Claude budget is in billed tokens; a build refused for it names the budget as given beside
/// what the conversion made of it, not a number the caller never wrote.
#[test]
fn a_budget_too_small_names_the_budget_as_given() {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    let system = "Answer in French, in full sentences, citing the sources you used. ".repeat(40);
    session.history.append_value(json!({"role": "system", "content": system}), Format::Anthropic).unwrap();
    session.history.append_value(json!({"role": "user", "content": "Bonjour ?"}), Format::Anthropic).unwrap();
    let options = BuildOptions {
        format: Format::Anthropic,
        budget: Some(BudgetOptions { max_tokens: Some(300), ..BudgetOptions::default() }),
        summary: None,
        ..BuildOptions::default()
    };
    let error = session.build(&options).unwrap_err();
    assert!(error.message.contains("the budget given, 300 billed tokens, is "), "{}", error.message);
}
