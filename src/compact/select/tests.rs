use serde_json::json;

use super::*;
use crate::compact::receipt::Action;
use crate::compact::summary_state::SummaryState;
use crate::compact::testing::{through_fill, through_reduce, turns, Log, ENCODING};
use crate::compact::{BudgetOptions, BuildCache, BuildOptions};

fn options(budget: Option<BudgetOptions>) -> BuildOptions {
    BuildOptions { budget, summary: None, compress: None, digest: None, ..BuildOptions::default() }
}

fn budget(max: u32) -> Option<BudgetOptions> {
    Some(BudgetOptions { max_tokens: Some(max), ..BudgetOptions::default() })
}

#[test]
fn measure_finds_the_recent_steps() {
    let log = turns(3, 2, 5);
    let items = log.items();
    let options = BuildOptions { keep_recent_steps: 2, ..options(None) };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_reduce(&ctx, &mut cache, &state);
    let tail: Vec<usize> =
        pass.units.active[pass.measured.tail_start..].iter().map(|u| pass.units.unit(*u).unwrap().first).collect();
    assert_eq!(tail, [items.len() - 3, items.len() - 1]);
    // The pinned requests (m2 and the last turn's) are not active, nor is the system prompt.
    let pinned: Vec<usize> =
        pass.budget.pins.list.iter().map(|p| pass.units.unit(p.plan.unit).unwrap().first).collect();
    assert_eq!(pinned, [1, items.len() - 6]);
    let active: usize =
        items.iter().enumerate().filter(|(i, _)| *i != 0 && !pinned.contains(i)).map(|(_, i)| i.tokens as usize).sum();
    assert_eq!(pass.measured.unreduced, active);
}

#[test]
fn the_window_keeps_units_with_a_message_among_the_last_n() {
    let log = turns(4, 1, 5);
    let items = log.items();
    let options = BuildOptions { max_messages: Some(10), ..options(None) };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_fill(&ctx, &mut cache, &state);
    let kept: Vec<usize> = pass
        .plans
        .every_plan(&pass.units)
        .iter()
        .filter(|p| p.dropped.is_none())
        .flat_map(|p| p.members.iter().map(|m| m.msg))
        .collect();
    // The active messages among the last 10 (the pinned request m14 aside), chains whole.
    assert_eq!(kept, [6, 7, 8, 9, 10, 11, 12, 14, 15, 16]);
    assert!(pass
        .plans
        .every_plan(&pass.units)
        .iter()
        .filter(|p| p.dropped.is_some())
        .all(|p| p.dropped == Some(DropReason::Window)));
}

#[test]
fn the_budget_is_filled_newest_first_and_the_boundary_cut_to_fit() {
    let log = turns(30, 1, 60);
    let items = log.items();
    let options = options(budget(1_800));
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_fill(&ctx, &mut cache, &state);
    let view = pass.view(true);
    assert!(view <= 1_800 && view * 10 >= 1_800 * 9, "{view} of 1,800");
    assert!(
        pass.plans.every_plan(&pass.units).last().is_some_and(|p| p.dropped.is_none()),
        "the newest unit comes first"
    );
    assert!(
        pass.plans.every_plan(&pass.units).first().is_some_and(|p| p.dropped == Some(DropReason::Budget)),
        "the oldest do not fit"
    );
}

#[test]
fn without_a_summary_a_unit_too_big_is_skipped_and_older_ones_taken() {
    let mut list = vec![json!({"role": "user", "content": "go"})];
    for i in 0..6 {
        let big = if i == 4 { 3000 } else { 20 };
        list.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}));
        list.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "entry ".repeat(big)}));
    }
    list.push(json!({"role": "assistant", "content": "done"}));
    let log = Log::openai(serde_json::Value::Array(list));
    let items = log.items();
    let options = options(budget(700));
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_fill(&ctx, &mut cache, &state);
    let fates: Vec<Option<DropReason>> = pass.plans.every_plan(&pass.units).iter().map(|p| p.dropped).collect();
    assert!(fates.iter().all(Option::is_none), "{fates:?}");
    // The big output (c4) is skipped at first, and c3 and older taken; then it fills what is left, cut.
    let actions: Vec<Action> = pass
        .plans
        .every_plan(&pass.units)
        .iter()
        .map(|p| p.members.iter().map(|m| m.action()).min().unwrap())
        .collect();
    assert_eq!(actions[4], Action::Compressed);
    assert!(actions.iter().enumerate().all(|(i, a)| i == 4 || *a == Action::Kept), "{actions:?}");
    let view = pass.view(true);
    assert!(view <= 700 && view * 10 >= 700 * 9, "{view}");
}

#[test]
fn with_a_summary_the_recent_messages_are_a_suffix() {
    let mut list = vec![json!({"role": "user", "content": "go"})];
    for i in 0..6 {
        let big = if i == 4 { 3000 } else { 20 };
        list.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("c{i}"), "type": "function", "function": {"name": "ls", "arguments": "{}"}}]}));
        list.push(json!({"role": "tool", "tool_call_id": format!("c{i}"), "content": "entry ".repeat(big)}));
    }
    list.push(json!({"role": "assistant", "content": "done"}));
    let log = Log::openai(serde_json::Value::Array(list));
    let items = log.items();
    let options = BuildOptions { summary: Some(Default::default()), ..options(budget(900)) };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_fill(&ctx, &mut cache, &state);
    let start = pass.suffix_start.expect("a suffix");
    assert!(pass.plans.every_plan(&pass.units)[..start].iter().all(|p| p.dropped == Some(DropReason::Bridge)));
    assert!(pass.plans.every_plan(&pass.units)[start..].iter().all(|p| p.dropped.is_none()));
    assert!(pass.bridge.is_some());
    assert!(pass.view(true) <= 900);
}
