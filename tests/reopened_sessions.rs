//! A session saved and reopened, replayed call by call: its stored records (the frame among them,
//! written only when what storage keeps of it changed) give back a session that builds the
//! requests the live one builds, byte for byte, and the same receipts (what each says of the
//! prompt cache aside: a reopened session has sent nothing it knows of).
//!
//! One exception, by design: between revisions a stored frame keeps the messages it took as the
//! history's, and a reopened session takes them again from the history. When a message logged
//! later changes how those were grouped (a late tool result, an assistant message joining its step
//! across a system message), the live session, which took them before, makes a compaction event
//! (`repair`); the reopened one, which takes them now, appends. Its request is then valid and
//! within budget, and the replay goes on from the live session's records.
//! When the live session's repair event proposes a summary, the summary event that follows is
//! part of the same exception. A summary request that stands (proposed, its summary not yet
//! come) is stored with the frame: the reopened session asks for it as the live one does.

use std::collections::BTreeMap;

use context_compactor::compact::{BudgetOptions, BuildOptions, BuildOutcome, EventReason};
use context_compactor::message::{Format, Message, Role};
use context_compactor::session::records::StoredRecord;
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use proptest::prelude::*;

mod random_histories;
use random_histories::{event, history, replay_options as options};

/// A key-value storage, written as the session store writes it: the records, then the removals.
#[derive(Clone, Default)]
struct Storage(BTreeMap<Vec<String>, String>);

impl Storage {
    fn save(&mut self, session: &mut Session, now: u64) -> Result<(), TestCaseError> {
        let changes = session.changes(now).map_err(|e| TestCaseError::fail(format!("changes: {e}")))?;
        for record in changes.records {
            self.0.insert(record.key, record.value);
        }
        session.mark_saved(changes.commit).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for key in changes.remove {
            self.0.remove(&key);
        }
        Ok(())
    }

    fn load(&self) -> Result<Session, TestCaseError> {
        let records: Vec<StoredRecord> =
            self.0.iter().map(|(key, value)| StoredRecord { key: key.clone(), value: value.clone() }).collect();
        Session::load(&records).map_err(|e| TestCaseError::fail(format!("load: {e}")))
    }
}

/// The build before a model call, its external summary made at once (as `compact()` has it): the
/// request as JSON text (without cache hints), the outcome, and whether either build was a
/// `repair` event (the summary event after one is then part of the exception above).
fn call(session: &mut Session, options: &BuildOptions) -> Result<(String, BuildOutcome, bool), String> {
    let repair = |outcome: &BuildOutcome| {
        outcome.context.receipt.cache.as_ref().and_then(|cache| cache.reason) == Some(EventReason::Repair)
    };
    let mut outcome = session.build(options).map_err(|e| format!("{:?}", e.kind))?;
    let mut repaired = repair(&outcome);
    if let Some(request) = outcome.summary_request.clone() {
        session.compactor.begin_summary(&request.id).map_err(|e| e.to_string())?;
        session.complete_summary(&request.id, "{\"done\": [\"earlier work\"]}", None).map_err(|e| e.to_string())?;
        outcome = session.build(options).map_err(|e| e.to_string())?;
        repaired |= repair(&outcome);
    }
    // The cache hints follow what the build knows was sent before: left out, as its receipt's cache.
    outcome.context.marks = None;
    let request = session.compactor.request_value(&outcome.context).map_err(|e| format!("invalid: {e}"))?;
    Ok((serde_json::to_string(&request).map_err(|e| e.to_string())?, outcome, repaired))
}

/// What a replay saw: calls, compaction events of the live session, and calls where the reopened
/// session appended where the live one made a `repair` event (the exception above).
#[derive(Debug, Default)]
struct Seen {
    calls: usize,
    events: usize,
    repairs: usize,
}

fn replay(messages: &[Message], options: &BuildOptions, reopen: &[bool]) -> Result<Seen, TestCaseError> {
    let mut live = Session::new("live", Encoding::Estimate, 1000).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut live_storage = Storage::default();
    let mut reopened =
        Session::new("live", Encoding::Estimate, 1000).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let mut storage = Storage::default();
    let mut seen = Seen::default();
    let max = options.budget.as_ref().map(BudgetOptions::max_tokens).unwrap_or(usize::MAX);
    for (k, message) in messages.iter().enumerate() {
        let now = k as u64;
        let before_a_call = message.role == Role::Assistant
            && live.history.records().last().is_some_and(|last| last.message.role != Role::Assistant);
        if before_a_call {
            seen.calls += 1;
            let calls = seen.calls;
            if reopen[calls % reopen.len()] {
                reopened = storage.load()?;
            }
            let a = call(&mut live, options);
            let b = call(&mut reopened, options);
            match (a, b) {
                (Ok((request, mut outcome, repaired)), Ok((other_request, mut other, _))) => {
                    let cache = outcome.context.receipt.cache.take().expect("every build reports the cache");
                    seen.events += usize::from(cache.event);
                    other.context.receipt.cache = None;
                    (outcome.context.receipt.cost, other.context.receipt.cost) = (None, None);
                    if (request != other_request || outcome != other) && repaired {
                        // The exception above: valid and within budget, then on from the live records.
                        prop_assert!(other.context.tokens.total <= max, "call {}: over budget", calls);
                        live_storage.save(&mut live, now)?;
                        storage = live_storage.clone();
                        reopened = storage.load()?;
                        seen.repairs += 1;
                    } else {
                        prop_assert_eq!(
                            &request,
                            &other_request,
                            "call {} (message {}): the requests differ",
                            calls,
                            k
                        );
                        if outcome != other {
                            let (a, b) = (format!("{outcome:?}"), format!("{other:?}"));
                            let at = a.bytes().zip(b.bytes()).position(|(x, y)| x != y).unwrap_or(0);
                            let from = at.saturating_sub(200);
                            prop_assert!(
                                false,
                                "call {}: the outcomes differ\nlive     {}\nreopened {}",
                                calls,
                                &a[from..(at + 200).min(a.len())],
                                &b[from..(at + 200).min(b.len())]
                            );
                        }
                    }
                }
                (Err(a), Err(b)) => prop_assert_eq!(a, b),
                (a, b) => prop_assert!(false, "call {}: live {:?}, reopened {:?}", calls, a.err(), b.err()),
            }
            live_storage.save(&mut live, now)?;
            storage.save(&mut reopened, now)?;
        }
        let _ = live.history.append_all(vec![message.clone()]);
        let _ = reopened.history.append_all(vec![message.clone()]);
        live_storage.save(&mut live, now)?;
        storage.save(&mut reopened, now)?;
    }
    if std::env::var_os("SHOW_REOPENED").is_some() {
        eprintln!("{seen:?}");
    }
    Ok(seen)
}

fn scaled_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).map_or(default, |n: u32| (n / 10).max(1))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: scaled_cases(200), max_shrink_iters: 500, ..ProptestConfig::default() })]

    #[test]
    fn a_reopened_session_builds_the_requests_of_the_live_one(
        events in prop::collection::vec(event(), 1..100),
        budget in 600u32..8_000,
        low_water in 0.2f64..0.9,
        summary in 0u8..3,
        steps in 1usize..5,
        reopen in prop::collection::vec(any::<bool>(), 1..6),
        source in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic)],
        format in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic), Just(Format::Responses), Just(Format::AiSdk)],
    ) {
        let messages = history(&events, source);
        replay(&messages, &options(format, budget, low_water, summary, steps), &reopen)?;
    }
}

/// Agent turns without late results or instructions mid-step: the reopened session builds what
/// the live one builds at every call, with no exception.
#[test]
fn a_plain_agent_session_reopened_at_every_call_builds_what_the_live_one_builds() {
    let messages = agent_turns(40);
    for format in [Format::OpenAi, Format::Anthropic, Format::Responses, Format::AiSdk] {
        for summary in 0..3 {
            let seen = replay(&messages, &options(format, 3_000, 0.5, summary, 2), &[true]).unwrap();
            assert!(seen.events >= 3 && seen.repairs == 0, "{format:?}: {seen:?}");
        }
    }
}

/// `n` agent turns: a task, a file read, its result, a short answer.
fn agent_turns(n: usize) -> Vec<Message> {
    let mut messages = Vec::new();
    for i in 0..n {
        let call = format!("call_{i}");
        let turn = serde_json::json!([
            {"role": "user", "content": format!("Step {i}: read src/file{i}.rs and fix it. {}", "Please. ".repeat(i % 7))},
            {"role": "assistant", "content": null, "tool_calls": [{"id": call, "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\":\"src/file{i}.rs\"}}")}}]},
            {"role": "tool", "tool_call_id": call, "content": "    let x = compute(alpha, beta);\n".repeat(10 + i % 30)},
            {"role": "assistant", "content": format!("Fixed src/file{i}.rs.")},
        ]);
        for value in turn.as_array().unwrap() {
            messages.push(context_compactor::message::parse_one(value.clone(), Format::OpenAi, 0).unwrap());
        }
    }
    messages
}

/// A summary request the live session proposed and has not had answered yet: the reopened session
/// gets it from its first build, the same request, and given the same summary goes on alike.
#[test]
fn a_standing_summary_request_survives_a_reopen() {
    let options = options(Format::Anthropic, 2_000, 0.5, 2, 2);
    let mut live = Session::new("live", Encoding::Estimate, 1000).unwrap();
    let mut storage = Storage::default();
    let mut proposed = None;
    for (k, message) in agent_turns(40).into_iter().enumerate() {
        live.history.append_all(vec![message]).unwrap();
        if k % 4 == 2 {
            let outcome = live.build(&options).unwrap();
            if outcome.summary_request.is_some() {
                proposed = outcome.summary_request;
                break;
            }
        }
    }
    let proposed = proposed.expect("a 2,000-token budget over 40 turns asks for a summary");
    storage.save(&mut live, 1).unwrap();
    let mut reopened = storage.load().unwrap();
    let (again, there) = (live.build(&options).unwrap(), reopened.build(&options).unwrap());
    assert_eq!(again.summary_request.as_ref(), Some(&proposed), "the live session asks again");
    assert_eq!(there.summary_request.as_ref(), Some(&proposed), "the reopened session asks the same");
    for session in [&mut live, &mut reopened] {
        session.compactor.begin_summary(&proposed.id).unwrap();
        session.complete_summary(&proposed.id, "{\"done\": [\"earlier work\"]}", None).unwrap();
    }
    let (a, b) = (call(&mut live, &options).unwrap(), call(&mut reopened, &options).unwrap());
    assert_eq!(a.0, b.0, "the requests after the summary");
    // Once answered, a reopen does not ask again.
    storage.save(&mut live, 2).unwrap();
    assert_eq!(storage.load().unwrap().build(&options).unwrap().summary_request, None);
}
