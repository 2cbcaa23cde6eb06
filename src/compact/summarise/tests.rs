use serde_json::{json, Value};

use super::*;
use crate::compact::receipt::DropReason;
use crate::compact::summary_state::PendingSummary;
use crate::compact::testing::{run_fill, run_summarise, through_fill, through_reduce, turns, Log, ENCODING};
use crate::compact::{BudgetOptions, BuildCache, BuildOptions};

fn options(summarizer: Summarizer, max: Option<u32>) -> BuildOptions {
    let summary = SummaryOptions { summarizer, ..SummaryOptions::default() };
    // No digests or compression: the older reads keep their size.
    BuildOptions {
        summary: Some(summary),
        budget: max.map(|m| BudgetOptions { max_tokens: Some(m), ..BudgetOptions::default() }),
        keep_recent_steps: 2,
        digest: None,
        compress: None,
        ..BuildOptions::default()
    }
}

fn record(text: &str, until: &str, until_index: usize) -> SummaryRecord {
    summary_state::record(
        &PendingSummary {
            request_id: "s1".into(),
            until: until.into(),
            until_index,
            original_tokens: 10_000,
            message_count: until_index,
            max_tokens: 4_000,
            required_keys: Vec::new(),
        },
        text.into(),
        ENCODING.count(text) as u32,
        "t".into(),
        SummarySource::External,
    )
}

#[test]
fn a_history_that_fits_its_budget_is_never_summarised_whatever_its_size() {
    let log = turns(30, 1, 40);
    let items = log.items();
    let total: u32 = items.iter().map(|i| i.tokens).sum();
    let options = options(Summarizer::Extractive, Some(total + 10));
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let mut pass = through_reduce(&ctx, &mut cache, &state);
    assert!(total > 2_000, "past the no-budget 50k/30k-like thresholds would not matter: the budget decides");
    assert_eq!(run_summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap(), None);
}

#[test]
fn over_the_budget_a_summary_is_forced_whatever_the_gates() {
    let log = turns(12, 1, 40);
    let items = log.items();
    let mut options = options(Summarizer::Extractive, Some(1_500));
    // Gates that would never pass: the budget forces the first summary anyway.
    if let Some(summary) = options.summary.as_mut() {
        summary.min_messages = 10_000;
    }
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let mut pass = through_reduce(&ctx, &mut cache, &state);
    let record = run_summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap().expect("forced");
    assert_eq!(record.source, SummarySource::Extractive);
    let value: Value = serde_json::from_str(&record.text).unwrap();
    assert!(value["primaryRequest"].as_str().unwrap().starts_with("request 1"), "{value}");
    assert_eq!(record.created_at, "seq:1");
    assert!(record.tokens as usize <= pass.budget.share);
}

#[test]
fn an_external_summariser_gets_a_request_and_a_bridge_covers_meanwhile() {
    let log = turns(12, 1, 40);
    let items = log.items();
    let options = options(Summarizer::External, Some(1_500));
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let mut pass = through_reduce(&ctx, &mut cache, &state);
    assert_eq!(run_summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap(), None);
    let request = pass.summary_request.clone().expect("compaction is due");
    assert_eq!((request.id.as_str(), request.from.as_str()), ("s1", "m2"));
    assert!(request.max_tokens as usize <= pass.budget.share, "within the summary section's share");
    assert!(request.messages.as_array().unwrap().last().unwrap()["content"].as_str().unwrap().starts_with("Summarise"));
    // Meanwhile: the bridge covers everything before the recent messages.
    run_fill(&ctx, &mut cache, &mut pass).unwrap();
    let (message, bridge) = pass.bridge.clone().expect("a bridge");
    assert_eq!(message.role, Role::System);
    assert!(message.content.joined_text().contains("request 1"));
    assert_eq!(bridge.from, "m3", "the first active message (the task m2 is pinned)");
    let start = pass.suffix_start.unwrap();
    assert!(start > 0);
    assert!(pass.plans.every_plan(&pass.units)[..start].iter().all(|p| p.dropped == Some(DropReason::Bridge)));
    assert!(pass.plans.every_plan(&pass.units)[start..].iter().all(|p| p.dropped.is_none()), "a suffix");
    // Not allowed (the second pass), or a compaction already under way: nothing asked.
    let busy = SummaryState { in_progress: Some(request.pending()), ..Default::default() };
    let mut busy_pass = through_reduce(&ctx, &mut cache, &busy);
    assert_eq!(run_summarise(&ctx, &mut cache, &mut busy_pass, &busy, true).unwrap(), None);
    assert!(busy_pass.summary_request.is_none());
    assert!(busy_pass.notes.iter().any(|n| n.contains("in progress")));
}

#[test]
fn with_a_summary_in_force_little_new_is_bridged_and_much_new_summarised() {
    let log = turns(14, 1, 40);
    let items = log.items();
    let options = options(Summarizer::Extractive, Some(1_500));
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    // Covers the first twelve turns but for their last steps: a little is left between it and the
    // recent messages.
    let until = items.len() - 9;
    let state = SummaryState {
        current: Some(record("{\"primaryRequest\":\"request 1\"}", &format!("m{}", until + 1), until)),
        ..Default::default()
    };
    let mut pass = through_reduce(&ctx, &mut cache, &state);
    assert_eq!(
        run_summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap(),
        None,
        "few new messages: no new summary"
    );
    // A summary that covers nothing of it: much is new, a new one is made.
    let old =
        SummaryState { current: Some(record("{\"primaryRequest\":\"request 1\"}", "m3", 2)), ..Default::default() };
    let mut pass = through_reduce(&ctx, &mut cache, &old);
    let made = run_summarise(&ctx, &mut cache, &mut pass, &old, true).unwrap().expect("much is new");
    assert!(made.until_index > 2 && made.message_count > 2);
}

#[test]
fn the_bridge_fills_the_gap_and_the_context_its_budget() {
    let log = turns(14, 1, 40);
    let items = log.items();
    let options = options(Summarizer::Extractive, Some(1_500));
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let until = 10;
    let state = SummaryState {
        current: Some(record("{\"primaryRequest\":\"request 1\"}", &format!("m{}", until + 1), until)),
        ..Default::default()
    };
    let pass = through_fill(&ctx, &mut cache, &state);
    let (_, bridge) = pass.bridge.clone().expect("a bridge between the summary and the recent messages");
    // The summary ends inside turn 3's step (m11): the bridge starts at the answer after it.
    assert_eq!(bridge.from, format!("m{}", until + 3));
    let view = pass.view(true);
    assert!((1_350..=1_500).contains(&view), "{view}");
}

#[test]
fn without_a_budget_the_trigger_and_the_gates_decide() {
    let log = Log::openai(json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]));
    let items = log.items();
    let options = options(Summarizer::Extractive, None);
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let mut pass = through_reduce(&ctx, &mut cache, &state);
    assert_eq!(pass.mode, Mode::Verbatim);
    assert_eq!(run_summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap(), None);
    let log = turns(12, 1, 40);
    let items = log.items();
    let mut options = options.clone();
    if let Some(summary) = options.summary.as_mut() {
        summary.trigger_tokens = Some(2_000);
    }
    let ctx = Ctx { items: &items, options: &options, ..ctx };
    let mut pass = through_reduce(&ctx, &mut cache, &state);
    let made = run_summarise(&ctx, &mut cache, &mut pass, &state, true).unwrap().expect("past the trigger");
    assert!(made.until_index > 10);
}
