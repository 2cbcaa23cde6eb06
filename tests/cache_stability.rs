//! Cache-stable contexts, replayed call by call: a build before every model call (before each
//! assistant message, from everything logged before it), as an agent makes them. Between two
//! compaction events each request, cache hints left out, is a prefix of the next one; events
//! happen only when the budget would be passed (or the history forces one: a late tool result,
//! a summary coming back); every build is valid, within budget, and holds the task.

use context_compactor::compact::{BudgetOptions, BuildOptions, Change, Compactor, EventReason};
use context_compactor::history::ConversationHistory;
use context_compactor::message::{Format, Message, Part, Role};
use context_compactor::tokens::Encoding;
use context_compactor::ErrorKind;
use proptest::prelude::*;
use serde_json::Value;

mod random_histories;
use random_histories::{event, history, replay_options as options};

const ENCODING: Encoding = Encoding::Estimate;

/// A request as the provider's cache sees it: Anthropic's system, then one entry per content
/// block (a message's blocks with its role), or per message in the other formats; cache hints
/// left out.
fn cache_units(request: &Value, format: Format) -> (Option<Value>, Vec<Value>) {
    let strip = |value: &Value| -> Value {
        let mut value = value.clone();
        if let Value::Object(map) = &mut value {
            map.remove("cache_control");
            map.remove("providerOptions");
        }
        value
    };
    match format {
        Format::Anthropic => {
            let system = request.get("system").map(|s| match s {
                Value::Array(blocks) => Value::Array(blocks.iter().map(strip).collect()),
                Value::String(text) => serde_json::json!([{"type": "text", "text": text}]),
                other => other.clone(),
            });
            let mut units = Vec::new();
            for message in request.get("messages").and_then(Value::as_array).into_iter().flatten() {
                let role = message.get("role").cloned().unwrap_or(Value::Null);
                match message.get("content") {
                    Some(Value::Array(blocks)) => {
                        units.extend(blocks.iter().map(|b| Value::Array(vec![role.clone(), strip(b)])))
                    }
                    Some(text) => {
                        units.push(Value::Array(vec![role.clone(), serde_json::json!({"type": "text", "text": text})]))
                    }
                    None => {}
                }
            }
            (system, units)
        }
        _ => (None, request.as_array().into_iter().flatten().map(strip).collect()),
    }
}

/// Whether `before` is a prefix of `after`, as a cache sees requests.
fn extends(before: &(Option<Value>, Vec<Value>), after: &(Option<Value>, Vec<Value>)) -> bool {
    before.0 == after.0 && after.1.len() >= before.1.len() && after.1[..before.1.len()] == before.1[..]
}

/// The first user message with text: the task.
fn task(log: &ConversationHistory) -> Option<String> {
    log.records().iter().find_map(|r| {
        let text = r.message.role == Role::User
            && r.message.content.parts.iter().any(|p| matches!(p, Part::Text { text, .. } if !text.trim().is_empty()));
        text.then(|| r.id.clone())
    })
}

fn replay(messages: &[Message], options: &BuildOptions) -> Result<(), TestCaseError> {
    let mut log = ConversationHistory::new(ENCODING);
    let mut compactor = Compactor::new();
    let mut previous: Option<(Option<Value>, Vec<Value>)> = None;
    let max = options.budget.as_ref().map(BudgetOptions::max_tokens).unwrap_or(usize::MAX);
    for (k, message) in messages.iter().enumerate() {
        // A model call answers what was logged last: a user request, tool results, instructions
        // (an assistant message right after another is the same response, logged in two).
        let before_a_call = message.role == Role::Assistant
            && log.records().last().is_some_and(|last| last.message.role != Role::Assistant);
        if before_a_call {
            let mut outcome = match compactor.build(&mut log, options, &[], &[]) {
                Ok(outcome) => outcome,
                // A budget too small for the system prompt is said so, never a wrong context.
                Err(error) => {
                    prop_assert_eq!(error.kind, ErrorKind::InvalidArgument, "{}", error);
                    previous = None;
                    continue;
                }
            };
            // An external summary comes back before the call, as `compact()` has it.
            if let Some(request) = outcome.summary_request.clone() {
                compactor.begin_summary(&request.id).map_err(|e| TestCaseError::fail(e.to_string()))?;
                compactor
                    .complete_summary(&request.id, "{\"done\": [\"earlier work\"]}", None, ENCODING)
                    .map_err(|e| TestCaseError::fail(e.to_string()))?;
                outcome =
                    compactor.build(&mut log, options, &[], &[]).map_err(|e| TestCaseError::fail(e.to_string()))?;
            }
            let context = &outcome.context;
            let cache = context.receipt.cache.expect("every build reports the cache");
            let request = compactor.request_value(context).map_err(|e| TestCaseError::fail(format!("invalid: {e}")))?;
            prop_assert!(context.tokens.total <= max, "{} tokens over {}", context.tokens.total, max);
            if let Some(task) = task(&log) {
                let held = context.messages.iter().any(|m| m.sources.contains(&task));
                prop_assert!(held, "call {}: the task {} is not in the context", k, task);
            }
            let units = cache_units(&request, options.format);
            // The predicted bill splits the whole input, and a context that extends the last one
            // by a long prefix is predicted to read it back.
            let cost = context.receipt.cost.clone().expect("every build predicts its cost");
            let billed = context.receipt.budget.as_ref().and_then(|b| b.billed_tokens).unwrap_or(context.tokens.total);
            prop_assert_eq!(cost.cached_tokens + cost.written_tokens + cost.uncached_tokens, billed);
            if previous.is_some() && !cache.event && cache.prefix_tokens >= 4_096 {
                prop_assert!(cost.cached_tokens > 0, "call {}: {:?} predicts no cache read: {:?}", k, cache, cost);
            }
            match (&previous, cache.event) {
                (Some(before), false) => {
                    prop_assert!(
                        extends(before, &units),
                        "call {}: no event, yet the request does not extend the last one ({:?})\nbefore {}\nafter  {}",
                        k,
                        cache,
                        serde_json::to_string(&before.1).unwrap_or_default(),
                        serde_json::to_string(&units.1).unwrap_or_default()
                    );
                    prop_assert!(matches!(cache.change, Change::Appended | Change::Unchanged));
                }
                (_, true) => {
                    let reason = cache.reason.expect("an event says why");
                    prop_assert!(
                        matches!(
                            reason,
                            EventReason::First
                                | EventReason::Budget
                                | EventReason::Window
                                | EventReason::Repair
                                | EventReason::Summary
                        ) || (reason == EventReason::System && options.format == Format::Anthropic),
                        "call {}: event for {:?}",
                        k,
                        reason
                    );
                    // Past the budget: the context as it was plus what was logged since would not fit.
                    if reason == EventReason::Budget {
                        prop_assert!(context.tokens.total <= max);
                    }
                }
                (None, false) => {}
            }
            previous = Some(units);
        }
        let _ = log.append_all(vec![message.clone()]);
    }
    Ok(())
}

fn scaled_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).map_or(default, |n: u32| (n / 10).max(1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled_cases(400), max_shrink_iters: 500, ..ProptestConfig::default() })]

    #[test]
    fn replayed_contexts_only_grow_between_events(
        events in prop::collection::vec(event(), 1..120),
        budget in 600u32..12_000,
        low_water in 0.2f64..0.9,
        summary in 0u8..3,
        steps in 1usize..5,
        source in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic)],
        format in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic), Just(Format::Responses), Just(Format::AiSdk)],
    ) {
        let messages = history(&events, source);
        replay(&messages, &options(format, budget, low_water, summary, steps))?;
    }
}

/// Claude's counts are estimates: once a bill is recorded, the trigger is checked against the
/// billed size of the next request (the bill, the response, the estimate of what was appended),
/// not against the estimate of the whole context.
#[test]
fn the_trigger_follows_the_bill_once_one_is_recorded() {
    let mut log = ConversationHistory::new(Encoding::O200kBase);
    let mut compactor = Compactor::new();
    let turn = |n: usize| {
        serde_json::json!([
            {"role": "user", "content": format!("question {n}: {}", "what about the flight? ".repeat(20))},
            {"role": "assistant", "content": format!("answer {n}: {}", "the flight is on time. ".repeat(20))}
        ])
    };
    for n in 0..6 {
        log.append_values(turn(n), Format::Anthropic).unwrap();
    }
    log.append_value(serde_json::json!({"role": "user", "content": "and now?"}), Format::Anthropic).unwrap();
    let options = BuildOptions {
        format: Format::Anthropic,
        budget: Some(BudgetOptions { max_tokens: Some(4_000), ..BudgetOptions::default() }),
        ..BuildOptions::default()
    };
    let first = compactor.build(&mut log, &options, &[], &[]).unwrap();
    let counted = first.context.tokens.total;
    assert!(counted < 2_000 && !first.context.receipt.cache.unwrap().event, "{counted}");
    // The provider billed far more than we estimated (a system prompt and tools we were not given).
    compactor
        .record_usage(
            &mut log,
            &serde_json::json!({"input_tokens": 3_980, "output_tokens": 40}),
            Some("claude-sonnet-4-5"),
            None,
        )
        .unwrap();
    log.append_value(serde_json::json!({"role": "assistant", "content": "It is."}), Format::Anthropic).unwrap();
    log.append_value(serde_json::json!({"role": "user", "content": "thanks, and the return?"}), Format::Anthropic)
        .unwrap();
    let next = compactor.build(&mut log, &options, &[], &[]).unwrap();
    let cache = next.context.receipt.cache.unwrap();
    assert!(cache.event && cache.reason == Some(EventReason::Budget), "{cache:?}");
    // Without a bill the same context would have been appended to.
    let mut unbilled = Compactor::new();
    let frame = unbilled.build(&mut log, &options, &[], &[]).unwrap();
    assert!(!frame.context.receipt.cache.unwrap().event);
}
