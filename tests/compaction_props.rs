//! Property tests over random histories: parallel tool calls (answered in any order, in one
//! message or several), interleaved system messages, orphan results, unanswered calls, reused
//! ids, very long outputs. Whatever the options, the context is valid for the provider, within
//! budget when one fits (and a typed error says so when none does), deterministic, counted
//! exactly, and the input is never mutated.

use context_compactor::compact::{
    self, summary_state, validate, Action, BudgetOptions, BuildCache, BuildOptions, Compactor, DropReason, Item,
    Summarizer, SummaryOptions, SummarySource, SummaryState, TurnNote,
};
use context_compactor::history::ConversationHistory;
use context_compactor::message::{Format, Message, Part, Role};
use context_compactor::tokens::{self, Encoding, REPLY_PRIMING};
use context_compactor::ErrorKind;
use proptest::prelude::*;
use serde_json::Value;

mod random_histories;
use random_histories::{event, history, Event, Output};

#[derive(Clone, Debug)]
struct Knobs {
    window: Option<u32>,
    max_messages: Option<usize>,
    thin: bool,
    steps: usize,
    summary: u8,
    trigger: u32,
}

fn knobs() -> impl Strategy<Value = Knobs> {
    (
        prop_oneof![1 => Just(None), 3 => (200u32..20_000).prop_map(Some)],
        prop_oneof![3 => Just(None), 1 => (10usize..=100).prop_map(Some)],
        any::<bool>(),
        1usize..6,
        0u8..3,
        100u32..5000,
    )
        .prop_map(|(window, max_messages, thin, steps, summary, trigger)| Knobs {
            window,
            max_messages,
            thin,
            steps,
            summary,
            trigger,
        })
}

fn options(knobs: &Knobs, format: Format) -> BuildOptions {
    BuildOptions {
        format,
        max_messages: knobs.max_messages,
        budget: knobs.window.map(|w| BudgetOptions { context_window: w, ..BudgetOptions::default() }),
        keep_recent_steps: knobs.steps,
        thin: knobs.thin,
        summary: match knobs.summary {
            0 => None,
            n => Some(SummaryOptions {
                summarizer: if n == 1 { Summarizer::Extractive } else { Summarizer::External },
                trigger_tokens: Some(knobs.trigger),
                target_tokens: Some(knobs.trigger / 2),
                min_messages: 8,
                min_new_messages: 4,
                ..SummaryOptions::default()
            }),
        },
        ..BuildOptions::default()
    }
}

const ENCODING: Encoding = Encoding::Estimate;

/// Messages as a history holds them: ids `m1…`, shared, counted.
struct Stored {
    ids: Vec<String>,
    shared: Vec<std::sync::Arc<Message>>,
}

impl Stored {
    fn new(messages: &[Message]) -> Stored {
        let ids = (1..=messages.len()).map(|i| format!("m{i}")).collect();
        Stored { ids, shared: messages.iter().cloned().map(std::sync::Arc::new).collect() }
    }

    fn items(&self) -> Vec<Item<'_>> {
        self.shared
            .iter()
            .zip(&self.ids)
            .enumerate()
            .map(|(i, (m, id))| Item {
                id,
                message: m,
                tokens: tokens::count_message(ENCODING, m).total,
                pinned: pinned_explicitly(i, m),
            })
            .collect()
    }
}

/// Some user messages are pinned explicitly, as a harness pins its task: every seventh, from
/// the fourth (a history can pin one of tool results only: it stands for nothing).
fn pinned_explicitly(i: usize, message: &Message) -> bool {
    i % 7 == 3 && message.role == Role::User
}

fn check(
    messages: &[Message],
    options: &BuildOptions,
    state: &SummaryState,
) -> Result<Option<compact::BuildOutcome>, TestCaseError> {
    let stored = Stored::new(messages);
    let (ids, items) = (&stored.ids, stored.items());
    // A session's memory: a turn every four messages, with summaries of varied length.
    let summaries: Vec<String> =
        (0..messages.len().div_ceil(4)).map(|t| format!("turn {t} looked up order {t}. ").repeat(1 + t % 7)).collect();
    let notes: Vec<TurnNote> = summaries
        .iter()
        .enumerate()
        .map(|(t, summary)| TurnNote {
            turn: t as u32 + 1,
            first: 4 * t,
            last: (4 * t + 3).min(messages.len() - 1),
            summary,
        })
        .collect();
    // A session's state: open todos and a list of artifacts of varied length.
    let state_notes = vec![
        compact::StateNote {
            part: compact::StatePart::Todos,
            header: "Open todos:".into(),
            lines: (0..messages.len() % 4).map(|i| format!("- task {i}")).collect(),
            footer: None,
            keep_last: false,
        },
        compact::StateNote {
            part: compact::StatePart::Artifacts,
            header: "Available code files:".into(),
            lines: (0..messages.len() % 25)
                .map(|i| format!("- code_{i} (python) - step {i} of the analysis"))
                .collect(),
            footer: Some("Reference one with <code_ref>{code_id}</code_ref>.".into()),
            keep_last: true,
        },
    ];
    let build = |items: &[Item], cache: &mut BuildCache| {
        compact::build_with_notes(items, ENCODING, options, state, cache, &notes, &state_notes)
    };
    let snapshot = messages.to_vec();
    let mut cache = BuildCache::new();
    let result = build(&items, &mut cache);
    prop_assert_eq!(&snapshot, &messages.to_vec(), "the input is never mutated");
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(error) => {
            // Only when nothing fits: the system prompt alone is over the budget, or, with
            // messages pinned explicitly (more pins than the task and the latest request), the
            // system prompt and the pins cut to the shortest.
            let pinned = messages.iter().enumerate().any(|(i, m)| pinned_explicitly(i, m));
            prop_assert_eq!(error.kind, ErrorKind::InvalidArgument, "{}", error);
            prop_assert!(
                error.message.contains("too small for the system prompt alone")
                    || (pinned && error.message.contains("and the pinned requests")),
                "{}",
                error
            );
            return Ok(None);
        }
    };
    let context = &outcome.context;
    let request = context.to_request().map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(validate(&request, options.format), Ok(()));
    // Assembled from cached per-message forms, the request is what emitting it whole gives,
    // whichever messages the cache held before (here: the second half of the context).
    let whole =
        compact::emit_request(context.messages(), options.format).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&request, &whole);
    let mut forms = compact::EmitCache::default();
    let later: Vec<&std::sync::Arc<Message>> =
        context.messages.iter().skip(context.messages.len() / 2).map(|m| &m.message).collect();
    forms.assemble(&later, options.format).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let warm = context.request(&mut forms).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&forms.to_value(&warm), &whole);
    // One layout entry per request message, in order, saying which context messages it
    // carries; every context message is carried (or hoisted into Anthropic's system), or sends nothing.
    let layout = context.layout(&forms, &warm);
    let sent: Vec<&Value> = forms.messages(&warm).collect();
    prop_assert_eq!(layout.len(), sent.len(), "{:?}", layout);
    prop_assert!(layout.iter().all(|carried| !carried.is_empty()), "{:?}", layout);
    let flat: Vec<usize> = layout.iter().flatten().copied().collect();
    prop_assert!(layout.windows(2).all(|w| w[0].first() <= w[1].first()), "in order: {:?}", layout);
    let hoisted = context.hoisted();
    for (i, m) in context.messages.iter().enumerate() {
        let sends = !compact::emit_request([&*m.message], options.format).map_or(true, |r| {
            r.as_array().or_else(|| r.get("messages").and_then(Value::as_array)).is_none_or(Vec::is_empty)
        });
        prop_assert!(
            flat.contains(&i) || hoisted.contains(&i) || !sends,
            "{:?}: message {} not in {:?}: {:?}",
            options.format,
            i,
            layout,
            context.messages.iter().take(8).map(|m| &m.message).collect::<Vec<_>>()
        );
    }
    if let Some(budget) = &context.receipt.budget {
        prop_assert!(context.tokens.total <= budget.max_tokens, "{} > {}", context.tokens.total, budget.max_tokens);
    }
    // Counted exactly: the parts add up to a recount of the messages built.
    let recount: usize =
        context.messages().map(|m| tokens::count_message(ENCODING, m).total as usize).sum::<usize>() + REPLY_PRIMING;
    prop_assert_eq!(recount, context.tokens.total);
    // The state's sections follow the system prompt, counted exactly, as the receipt says.
    let state_tokens: usize = context
        .messages
        .iter()
        .filter(|m| m.section == compact::Section::State)
        .map(|m| tokens::count_message(ENCODING, &m.message).total as usize)
        .sum();
    prop_assert_eq!(state_tokens, context.tokens.state);
    prop_assert_eq!(context.receipt.state.as_ref().map_or(0, |s| s.tokens), context.tokens.state);
    let first_state = context.messages.iter().position(|m| m.section == compact::Section::State);
    if let Some(at) = first_state {
        prop_assert!(context.messages[..at].iter().all(|m| m.section == compact::Section::System));
    }
    prop_assert_eq!(context.receipt.fates.len(), messages.len());
    // The runs tell the same story as the fates, by id: alike neighbours in one run, nothing missed.
    let mut at = 0usize;
    for (k, run) in context.receipt.runs.iter().enumerate() {
        let fates = context.receipt.fates.get(at..at + run.count).unwrap_or(&[]);
        prop_assert!(run.count > 0 && fates.len() == run.count);
        prop_assert_eq!(&*run.from, ids[at].as_str());
        prop_assert_eq!(&*run.to, ids[at + run.count - 1].as_str());
        prop_assert!(fates.iter().all(|f| (f.action, f.reason) == (run.action, run.reason)));
        prop_assert_eq!(run.tokens_after, fates.iter().map(|f| u64::from(f.tokens_after)).sum::<u64>());
        if let Some(previous) = k.checked_sub(1).and_then(|p| context.receipt.runs.get(p)) {
            prop_assert!((previous.action, previous.reason) != (run.action, run.reason), "neighbouring runs differ");
        }
        at += run.count;
    }
    prop_assert_eq!(at, messages.len());
    // The task and the latest request (the first and last user messages with text) are
    // in every context, whole or cut to head and tail, and the receipt says so; the task is the
    // messages pinned explicitly, when some are (those with a request: more than tool results).
    let in_context: std::collections::HashSet<&str> =
        context.messages.iter().flat_map(|m| m.sources.iter().map(String::as_str)).collect();
    let explicit: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(i, m)| pinned_explicitly(*i, m) && m.content.parts.iter().any(|p| !matches!(p, Part::ToolResult(_))))
        .map(|(i, _)| i)
        .collect();
    for i in &explicit {
        prop_assert!(in_context.contains(ids[*i].as_str()), "{} pinned: {:?}", ids[*i], context.receipt.runs);
        let pinned = context.receipt.pinned.iter().any(|p| p.id == ids[*i] && p.role == compact::PinRole::Pinned);
        prop_assert!(pinned, "{:?}", context.receipt.pinned);
    }
    let with_text: Vec<usize> = messages
        .iter()
        .enumerate()
        .filter(|(_, m)| m.role == Role::User)
        .filter(|(_, m)| {
            m.content.parts.iter().any(|p| matches!(p, Part::Text { text, .. } if !text.trim().is_empty()))
        })
        .map(|(i, _)| i)
        .collect();
    let task = with_text.first().filter(|_| explicit.is_empty());
    for i in [task, with_text.last()].into_iter().flatten() {
        prop_assert!(in_context.contains(ids[*i].as_str()), "{} pinned: {:?}", ids[*i], context.receipt.runs);
        prop_assert!(context.receipt.pinned.iter().any(|p| p.id == ids[*i]), "{:?}", context.receipt.pinned);
    }
    // With a summary configured, nothing leaves the context uncovered: no dropped run but repairs.
    if options.summary.is_some() {
        let uncovered =
            context.receipt.runs.iter().find(|r| r.action == Action::Dropped && r.reason != Some(DropReason::Repair));
        prop_assert!(uncovered.is_none(), "{:?}", context.receipt.runs);
    }
    // The memory speaks for exactly the turns the context does not wholly hold (thinned counts as not).
    let whole: Vec<bool> = context
        .receipt
        .fates
        .iter()
        .map(|f| matches!(f.action, Action::Kept | Action::Compressed | Action::Digested))
        .collect();
    let memory =
        context.receipt.memory.clone().unwrap_or(compact::MemoryUse { turns: vec![], tokens: 0, omitted: vec![] });
    for note in &notes {
        let missing = (note.first..=note.last).any(|i| !whole[i]);
        let spoken = memory.turns.contains(&note.turn) || memory.omitted.contains(&note.turn);
        prop_assert_eq!(missing, spoken, "turn {}: {:?}", note.turn, memory);
    }
    // Deterministic, with a warm cache and with a cold one.
    let warm = build(&items, &mut cache).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&warm, &outcome);
    let cold = build(&items, &mut BuildCache::new()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    prop_assert_eq!(&cold, &outcome);
    // A cache warmed on a prefix (the history before its last appends) gives the same result:
    // the incremental structure equals a fresh analysis.
    for cut in [items.len().saturating_sub(1), items.len().saturating_sub(3), items.len() / 2] {
        let mut grown = BuildCache::new();
        let _ = compact::build(&items[..cut], ENCODING, options, state, &mut grown);
        let after = build(&items, &mut grown).map_err(|e| TestCaseError::fail(e.to_string()))?;
        prop_assert_eq!(&after, &outcome, "cache warmed on {} of {} messages", cut, items.len());
    }
    if let Some(request) = &outcome.summary_request {
        prop_assert_eq!(validate(&request.messages, options.format), Ok(()));
    }
    Ok(Some(outcome))
}

proptest! {
    // 10,000 cases by default; PROPTEST_CASES overrides (e.g. for a quick local run).
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000),
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    })]

    #[test]
    fn every_build_is_valid_within_budget_and_deterministic(
        events in prop::collection::vec(event(), 0..50),
        knobs in knobs(),
        source in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic)],
    ) {
        let messages = history(&events, source);
        for format in [Format::OpenAi, Format::Anthropic, Format::Responses, Format::AiSdk] {
            let options = options(&knobs, format);
            let state = SummaryState::default();
            let Some(outcome) = check(&messages, &options, &state)? else { continue };
            // An external summary comes back: the next build uses it and stays valid.
            if let Some(request) = outcome.summary_request {
                let text = "{\"done\": [\"earlier work\"]}";
                let tokens = summary_state::validate_summary(text, ENCODING, request.max_tokens, &[]).map_err(|e| TestCaseError::fail(e.to_string()))?;
                let record = summary_state::record(&request.pending(), text.to_string(), tokens, "t".into(), SummarySource::External);
                let state = SummaryState { current: Some(record), in_progress: None, generation: 1 };
                check(&messages, &options, &state)?;
            }
        }
    }
}

/// A case compaction_props found: a history whose only message is an empty assistant
/// text. Converted to the AI SDK or Responses, the emitters leave the empty message out, so the
/// build must put its placeholder in, or the request is empty.
#[test]
fn an_empty_assistant_text_alone_still_gives_a_request_in_every_format() {
    let knobs = Knobs { window: None, max_messages: None, thin: false, steps: 1, summary: 0, trigger: 100 };
    for source in [Format::OpenAi, Format::Anthropic] {
        let messages = history(&[Event::AssistantText(0)], source);
        for format in [Format::OpenAi, Format::Anthropic, Format::Responses, Format::AiSdk] {
            let result = check(&messages, &options(&knobs, format), &SummaryState::default());
            assert!(result.is_ok(), "{source:?} → {format:?}: {result:?}");
        }
    }
}

/// The case budgets_from_2k_to_200k found: the only step, a call whose two long results do not
/// fit whole, went in with both compressed (1,126 of 2,000 tokens). The step left out for the
/// budget is now cut only as deep as the room needs, as the units before it already were.
#[test]
fn a_lone_step_too_large_whole_is_cut_to_use_the_budget() {
    let events = [Event::Calls(3, false), Event::Answer(19, false, Output::LongText(1621))];
    let messages = history(&events, Format::OpenAi);
    let max = 2_000;
    for format in [Format::OpenAi, Format::Anthropic, Format::Responses, Format::AiSdk] {
        let whole = whole_size(&messages, format).expect("the history builds whole");
        assert!(whole > max, "{format:?}: {whole}");
        let options = BuildOptions {
            format,
            budget: Some(BudgetOptions { max_tokens: Some(max as u32), ..BudgetOptions::default() }),
            keep_recent_steps: 1,
            summary: None,
            ..BuildOptions::default()
        };
        let outcome = check(&messages, &options, &SummaryState::default()).expect("valid").expect("built");
        let total = outcome.context.tokens.total;
        assert!((max * 9 / 10..=max).contains(&total), "{format:?}: {total} of {max}");
    }
}

/// The tokens of the history as sent whole in `format` (after repair), or `None` when even that
/// cannot be built.
fn whole_size(messages: &[Message], format: Format) -> Option<usize> {
    let stored = Stored::new(messages);
    let items = stored.items();
    // A budget it fits: sent whole, nothing reduced.
    let roomy = Some(BudgetOptions { max_tokens: Some(1 << 30), ..BudgetOptions::default() });
    let options = BuildOptions { format, summary: None, budget: roomy, ..BuildOptions::default() };
    let outcome = compact::build(&items, ENCODING, &options, &SummaryState::default(), &mut BuildCache::new()).ok()?;
    Some(outcome.context.tokens.total)
}

/// `default` cases, or one in `per` of PROPTEST_CASES when set (at least one): for properties
/// whose every case builds many long histories.
fn scaled_cases(default: u32, per: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse::<u32>().ok()).map_or(default, |n| (n / per).max(1))
}

proptest! {
    // Budgets from 2,000 to 200,000 tokens over histories made (by repeating a random
    // session) up to three times larger. 250 cases by default (each history is up to ~600k tokens,
    // built some 30 times: about a second a case); PROPTEST_CASES / 40 when set.
    #![proptest_config(ProptestConfig {
        cases: scaled_cases(250, 40),
        max_shrink_iters: 500,
        ..ProptestConfig::default()
    })]

    #[test]
    fn budgets_from_2k_to_200k_keep_the_task_and_use_the_budget(
        events in prop::collection::vec(event(), 1..40),
        max in 2_000u32..=200_000,
        ratio in 0.3f64..3.0,
        summary in 0u8..2,
        thin in any::<bool>(),
        steps in 1usize..6,
        source in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic)],
    ) {
        let one = history(&events, source);
        let size: usize = one.iter().map(|m| tokens::count_message(ENCODING, m).total as usize).sum::<usize>().max(1);
        let copies = ((f64::from(max) * ratio) as usize).div_ceil(size).clamp(1, 60);
        let repeated: Vec<Event> = (0..copies).flat_map(|_| events.iter().cloned()).collect();
        let messages = history(&repeated, source);
        for format in [Format::OpenAi, Format::Anthropic, Format::Responses, Format::AiSdk] {
            let options = BuildOptions {
                format,
                budget: Some(BudgetOptions { max_tokens: Some(max), ..BudgetOptions::default() }),
                keep_recent_steps: steps,
                thin,
                summary: (summary == 1).then(SummaryOptions::default),
                ..BuildOptions::default()
            };
            let Some(outcome) = check(&messages, &options, &SummaryState::default())? else { continue };
            let Some(whole) = whole_size(&messages, format) else { continue };
            let total = outcome.context.tokens.total;
            if whole > max as usize {
                prop_assert!(
                    total * 10 >= max as usize * 9,
                    "{format:?}: {total} of {max} ({:.2}%), history {whole}: {:?} {:?}",
                    total as f64 * 100.0 / f64::from(max),
                    outcome.context.tokens,
                    outcome.context.receipt.memory
                );
            }
        }
    }
}

/// Appends `messages` one at a time, leaving out those the log refuses (an orphan result, a
/// reused call id): what is left is a history like any other.
fn append_each(history: &mut ConversationHistory, messages: &[Message]) {
    for message in messages {
        let _ = history.append_all(vec![message.clone()]);
    }
}

/// A warm compactor's build on `history` against a fresh compactor's with the same summary state
/// and frame (what storage keeps), read back from their stored forms: the caches only save time.
/// (What each says of the prompt cache differs: the fresh one has sent nothing before.)
fn warm_equals_fresh(
    warm: &mut Compactor,
    history: &mut ConversationHistory,
    options: &BuildOptions,
    when: &str,
) -> Result<(), TestCaseError> {
    let state = warm.summary_state().clone();
    let frame = warm.frame_state(history);
    let warm_outcome = warm.build(history, options, &[], &[]);
    let mut fresh = Compactor::new();
    fresh.set_summary_state(state, history).map_err(|e| TestCaseError::fail(format!("{when}: {e}")))?;
    if let Some(frame) = frame {
        let text = serde_json::to_string(&frame).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let frame = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(e.to_string()))?;
        fresh.set_frame_state(frame, history).map_err(|e| TestCaseError::fail(format!("{when}: {e}")))?;
    }
    let fresh_outcome = fresh.build(history, options, &[], &[]);
    let without_cache = |mut outcome: compact::BuildOutcome| {
        // What the cache holds and what it costs depend on what this compactor sent before.
        outcome.context.receipt.cache = None;
        outcome.context.receipt.cost = None;
        outcome.context.marks = None;
        outcome
    };
    match (warm_outcome, fresh_outcome) {
        (Ok(mut warm), Ok(fresh)) => {
            // The summary request an event proposed stands in the compactor that made the event
            // (it is proposed again until the summary comes); a compactor given the stored frame
            // proposes one at its next event.
            if fresh.summary_request.is_none() {
                warm.summary_request = None;
            }
            prop_assert_eq!(without_cache(warm), without_cache(fresh), "{} ({} messages)", when, history.len())
        }
        (Err(warm), Err(fresh)) => prop_assert_eq!(warm.kind, fresh.kind, "{}", when),
        (warm, fresh) => prop_assert!(false, "{when}: warm {:?}, fresh {:?}", warm.err(), fresh.err()),
    }
    Ok(())
}

proptest! {
    // Warm builds: a build after appends (and after a truncate, a stored session's rebase,
    // which gives the dropped ids to new messages) on a compactor that built before equals a
    // build from scratch of the same history: messages, receipt and tokens. 500 cases by
    // default; PROPTEST_CASES / 20 when set.
    #![proptest_config(ProptestConfig {
        cases: scaled_cases(500, 20),
        max_shrink_iters: 500,
        ..ProptestConfig::default()
    })]

    #[test]
    fn a_warm_build_after_appends_and_a_truncate_equals_a_build_from_scratch(
        events in prop::collection::vec(event(), 1..60),
        others in prop::collection::vec(event(), 1..30),
        cuts in prop::collection::vec(0usize..100, 1..5),
        keep in 0usize..100,
        knobs in knobs(),
        source in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic)],
        format in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic), Just(Format::Responses), Just(Format::AiSdk)],
    ) {
        let messages = history(&events, source);
        let options = options(&knobs, format);
        let mut log = ConversationHistory::new(ENCODING);
        let mut warm = Compactor::new();
        // Appended in a few steps, built after each.
        let mut bounds: Vec<usize> = cuts.iter().map(|c| c * messages.len() / 100).collect();
        bounds.push(messages.len());
        bounds.sort_unstable();
        let mut from = 0;
        for to in bounds {
            append_each(&mut log, &messages[from..to]);
            from = to;
            warm_equals_fresh(&mut warm, &mut log, &options, "after appends")?;
        }
        // Rebased: the end of the log replaced by other messages (with the dropped ids); a summary
        // over messages that moved gives way, as `pull` has it.
        let before = log.len();
        let kept = keep * before / 100;
        log.truncate(kept);
        if warm.summary_state().current.as_ref().is_some_and(|s| s.until_index >= kept) {
            warm.set_summary_state(SummaryState::default(), &log).map_err(|e| TestCaseError::fail(e.to_string()))?;
        }
        append_each(&mut log, &history(&others, source));
        // The same length (and so the same first and last ids) as before, where it can be: what a
        // cache keyed by the ends of the log would take for the log it built.
        log.truncate(before);
        warm_equals_fresh(&mut warm, &mut log, &options, "after a truncate")?;
    }

    // What a build keeps for the next (the fates and runs, the running sums) holds whatever the
    // options of the next: message by message, a compactor built each time with one of two
    // option sets equals a build from scratch.
    #[test]
    fn a_warm_build_after_each_append_with_other_options_equals_a_build_from_scratch(
        events in prop::collection::vec(event(), 1..40),
        knobs in prop::collection::vec(knobs(), 2..3),
        pick in prop::collection::vec(0usize..2, 40..41),
        source in prop_oneof![Just(Format::OpenAi), Just(Format::Anthropic)],
        format in prop_oneof![Just(Format::OpenAi), Just(Format::Responses)],
    ) {
        let messages = history(&events, source);
        let mut log = ConversationHistory::new(ENCODING);
        let mut warm = Compactor::new();
        let mut last = None;
        for (i, message) in messages.iter().enumerate() {
            append_each(&mut log, std::slice::from_ref(message));
            let options = options(&knobs[pick[i % pick.len()] % knobs.len()], format);
            // The frame a compactor stores is its last build's: with other options, the warm one
            // takes up the frame it keeps for them (parked in memory), a fresh one makes an event.
            if last.as_ref() == Some(&options) {
                warm_equals_fresh(&mut warm, &mut log, &options, "after an append")?;
            } else {
                let outcome = warm.build(&mut log, &options, &[], &[]);
                if let Ok(outcome) = outcome {
                    warm.request_value(&outcome.context).map_err(|e| TestCaseError::fail(format!("invalid: {e}")))?;
                }
            }
            last = Some(options);
        }
    }
}
