//! What a long history costs in memory: the log's heap bytes against the
//! messages' own JSON, and what its first build needs beside it, counted by this test's
//! allocator. Natively pointers are twice the wasm's, so a bound that holds here holds with room
//! in the wasm build (`bench/scale.mjs` measures that). The bounds were measured on real
//! messages (the shared tau-bench runs): the tests that hold them read the shared fixtures and are
//! run by `scripts/test.sh` when those are there (`cargo test --test memory -- --ignored`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use context_compactor::compact::{BudgetOptions, BuildOptions};
use context_compactor::history::ConversationHistory;
use context_compactor::message::Format;
use context_compactor::session::Session;
use context_compactor::tokens::Encoding;
use serde_json::Value;

mod common;

/// The system allocator, keeping the live byte total. Tests in this binary run one at a time
/// (`MEASURING`), so the total is the measured test's own.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most `LIVE` has been since `peak_beside` last reset it.
static PEAK: AtomicUsize = AtomicUsize::new(0);
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

// SAFETY: every call goes to `System` with the same arguments; only the counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // Both blocks are live while the old one is copied.
        let live = LIVE.fetch_add(new_size, Ordering::Relaxed) + new_size;
        PEAK.fetch_max(live, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The heap bytes `f`'s result keeps, once what `f` allocated for a while is freed again.
fn retained<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    let out = f();
    (out, LIVE.load(Ordering::Relaxed).saturating_sub(before))
}

/// The most heap bytes `f` had live at once beyond what was live before it.
fn peak_beside<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    let out = f();
    (out, PEAK.load(Ordering::Relaxed).saturating_sub(before))
}

/// A build to a 20,000-token budget, with the default summary (extractive) or none.
fn budget_build(summary: bool) -> BuildOptions {
    let options = BuildOptions {
        budget: Some(BudgetOptions { context_window: 20_000, target_ratio: 1.0, ..BudgetOptions::default() }),
        ..BuildOptions::default()
    };
    if summary {
        options
    } else {
        BuildOptions { summary: None, ..options }
    }
}

/// A session holding `messages` (OpenAI), none counted yet.
fn session_of(messages: &[Value]) -> Session {
    let mut session = Session::with_encoding(Encoding::O200kBase);
    session.history.append_values(Value::Array(messages.to_vec()), Format::OpenAi).expect("valid messages");
    session
}

#[test]
#[ignore = "reads the shared fixtures"]
fn a_first_build_plans_what_its_context_may_hold_not_every_unit_of_the_history() {
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let messages = common::shared_long_conversation(30_000);
    for summary in [true, false] {
        let mut session = session_of(&messages);
        let outcome = session.build(&budget_build(summary)).expect("a build");
        let held = outcome.context.messages.len() as u64;
        let planned = session.compactor.units_planned();
        eprintln!("summary {summary}: {planned} units planned for a context of {held} messages of 30,000");
        // A unit is a message or a call with its results: the selection plans the units it takes
        // and the one where the room runs out (a first build with a summary runs twice).
        assert!(held > 3 && planned <= 2 * held + 8, "{planned} units planned for a context of {held} messages");
        // A warm build after one more message plans as many again, not more.
        session
            .history
            .append_value(serde_json::json!({"role": "user", "content": "and one more"}), Format::OpenAi)
            .expect("valid");
        let outcome = session.build(&budget_build(summary)).expect("a warm build");
        let again = session.compactor.units_planned() - planned;
        assert!(again <= 2 * outcome.context.messages.len() as u64 + 8, "{again} units planned by a warm build");
    }
}

#[test]
fn a_warm_build_makes_the_fates_and_runs_of_what_changed_not_of_the_history() {
    // 30,000 airline-run messages have over a thousand of receipt runs (one per stretch
    // between repaired messages); a build after one append remakes only those near the end.
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let messages = common::long_conversation(30_000);
    for summary in [false, true] {
        let mut session = session_of(&messages);
        let first = session.build(&budget_build(summary)).expect("a build");
        let runs = first.context.receipt.runs.len() as u64;
        assert_eq!(session.compactor.fates_made(), 30_000, "a first build makes every fate");
        drop(first);
        for i in 0..3 {
            let (fates, made) = (session.compactor.fates_made(), session.compactor.runs_made());
            let frame = session.compactor.frame_state(&session.history).expect("a frame");
            session
                .history
                .append_value(
                    serde_json::json!({"role": "user", "content": format!("and one more ({i})")}),
                    Format::OpenAi,
                )
                .expect("valid");
            let outcome = session.build(&budget_build(summary)).expect("a warm build");
            let held = outcome.context.messages.len() as u64;
            let (fates, made) = (session.compactor.fates_made() - fates, session.compactor.runs_made() - made);
            eprintln!(
                "summary {summary}: {fates} fates and {made} of {runs} runs made for a context of {held} messages"
            );
            assert!(summary || runs > 1000, "{runs} runs");
            assert!(fates <= 4 * held + 64, "{fates} fates made by a warm build holding {held} messages");
            assert!(made <= 2 * held + 8, "{made} of {runs} runs made by a warm build holding {held} messages");
            // What it made and what it kept are the receipt a build from scratch makes.
            // (Given the frame it appended to, as storage keeps it; what each says of the prompt
            // cache differs, the fresh one having sent nothing before.)
            let mut fresh = Session::with_encoding(Encoding::O200kBase);
            fresh.history = session.history.clone();
            fresh
                .compactor
                .set_summary_state(session.compactor.summary_state().clone(), &fresh.history)
                .expect("state");
            fresh.compactor.set_frame_state(frame.clone(), &fresh.history).expect("frame");
            let scratch = fresh.build(&budget_build(summary)).expect("a fresh build");
            let without_cache = |receipt: &context_compactor::compact::Receipt| context_compactor::compact::Receipt {
                cache: None,
                cost: None,
                ..receipt.clone()
            };
            assert_eq!(without_cache(&scratch.context.receipt), without_cache(&outcome.context.receipt));
        }
    }
}

#[test]
#[ignore = "reads the shared fixtures"]
fn a_first_build_needs_little_memory_beside_a_long_history() {
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let messages = common::shared_long_conversation(60_000);
    let json: usize = messages.iter().map(|m| m.to_string().len()).sum();
    for summary in [true, false] {
        let mut session = session_of(&messages);
        session.history.token_count();
        let (outcome, peak) = peak_beside(|| session.build(&budget_build(summary)).expect("a build"));
        let ratio = peak as f64 / json as f64;
        eprintln!("summary {summary}: the first build of 60,000 messages ({json} bytes of JSON) peaks {peak} bytes beside them: {ratio:.2}×");
        assert!(outcome.context.tokens.total <= 20_000);
        // What stays O(history) is per message and small: the units of the structure, the
        // receipt's fates, the list of stored messages the build reads, the summary's extract.
        assert!(ratio <= 0.6, "the first build peaks {ratio:.2}× the history's JSON beside it (at most 0.6×)");
    }
}

#[test]
#[ignore = "reads the shared fixtures"]
fn a_logged_message_takes_at_most_twice_its_json() {
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let messages: Vec<Value> =
        common::shared_tau_bench().into_iter().flat_map(|run| run.as_array().cloned().unwrap_or_default()).collect();
    let json: usize = messages.iter().map(|m| m.to_string().len()).sum();
    let texts: Vec<String> = messages.iter().map(Value::to_string).collect();
    drop(messages);
    let (history, bytes) = retained(|| {
        let mut history = ConversationHistory::new(Encoding::O200kBase);
        // Appended as an app appends them: one parsed message at a time.
        for text in &texts {
            let value: Value = serde_json::from_str(text).expect("fixture JSON");
            history.append_value(value, Format::OpenAi).expect("a valid message");
        }
        history
    });
    assert_eq!(history.len(), texts.len());
    let ratio = bytes as f64 / json as f64;
    eprintln!("{} messages, {json} bytes of JSON, {bytes} heap bytes: {ratio:.2}×", texts.len());
    assert!(
        ratio <= 2.0,
        "{} messages of {json} bytes of JSON keep {bytes} heap bytes: {ratio:.2}× (at most 2×)",
        texts.len()
    );
}
