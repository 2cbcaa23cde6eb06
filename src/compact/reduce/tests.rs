use serde_json::{json, Value};

use super::*;
use crate::compact::forms::Reduction;
use crate::compact::receipt::{Action, DropReason};
use crate::compact::summary_state::SummaryState;
use crate::compact::testing::{through_reduce, turns, Log, ENCODING};
use crate::compact::{BudgetOptions, BuildCache, BuildOptions};

fn budget(max: u32) -> Option<BudgetOptions> {
    Some(BudgetOptions { max_tokens: Some(max), ..BudgetOptions::default() })
}

fn actions(pass: &Pass) -> Vec<Action> {
    pass.plans.every_plan(&pass.units).iter().flat_map(|p| p.members.iter().map(|m| m.action())).collect()
}

/// One coding-agent turn: the task, then `reads` reads of `files` files (each re-read or edited
/// later when `edits`), each result `lines` lines of code.
fn agent_turn(reads: usize, files: usize, lines: usize, edits: bool) -> Log {
    let mut all = vec![
        json!({"role": "system", "content": "You are a coding agent."}),
        json!({"role": "user", "content": "Fix the router."}),
    ];
    for i in 0..reads {
        let path = format!("/app/lib/f{}.ex", i % files);
        all.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("r{i}"), "type": "function", "function": {"name": "Read", "arguments": json!({"file_path": path}).to_string()}}]}));
        let code: String = (0..lines).map(|l| format!("  def fun_{i}_{l}(x), do: x + {l}\n")).collect();
        all.push(json!({"role": "tool", "tool_call_id": format!("r{i}"), "content": code}));
        if edits {
            all.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("e{i}"), "type": "function", "function": {"name": "Edit", "arguments": json!({"file_path": path, "old_string": "a", "new_string": "b"}).to_string()}}]}));
            all.push(json!({"role": "tool", "tool_call_id": format!("e{i}"), "content": "The file has been updated."}));
        }
    }
    all.push(json!({"role": "assistant", "content": "Done."}));
    Log::openai(Value::Array(all))
}

#[test]
fn a_history_that_fits_stays_as_it_is() {
    let log = turns(6, 2, 300);
    let items = log.items();
    let total: u32 = items.iter().map(|i| i.tokens).sum();
    let options = BuildOptions { budget: budget(total + 500), keep_recent_steps: 1, ..BuildOptions::default() };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_reduce(&ctx, &mut cache, &state);
    assert_eq!(pass.mode, Mode::Verbatim);
    assert!(actions(&pass).iter().all(|a| *a == Action::Kept), "nothing compressed or digested: it fits");
    assert_eq!(cache.reductions_computed(), 0, "not even computed");
}

#[test]
fn stale_reads_go_first_within_one_turn_and_only_as_far_as_needed() {
    // One turn: every file read twice or edited after its read.
    let log = agent_turn(12, 4, 60, true);
    let items = log.items();
    let total: usize = items.iter().map(|i| i.tokens as usize).sum();
    let goal = total - 2_500;
    let options =
        BuildOptions { budget: budget(goal as u32), keep_recent_steps: 2, summary: None, ..BuildOptions::default() };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_reduce(&ctx, &mut cache, &state);
    assert_eq!(pass.mode, Mode::Reduced);
    let reduced: Vec<(usize, Reduction)> = pass
        .plans
        .iter()
        .flat_map(|p| p.members.iter().flat_map(|m| m.replace.iter().map(move |(_, r)| (m.msg, *r))))
        .collect();
    // The oldest reads first, digests then one cut just deep enough; the rest whole.
    assert!(reduced.len() >= 2 && reduced.len() < 8, "{reduced:?}");
    assert_eq!(reduced[0].0, 3, "the oldest read first");
    assert!(reduced[..reduced.len() - 1].iter().all(|(_, r)| *r == Reduction::Digest), "{reduced:?}");
    let view = pass.view(true);
    assert!(view <= goal && view * 100 >= goal * 97, "{view} of {goal}: just within");
}

#[test]
fn a_read_no_later_call_touches_is_digested_only_after_stale_ones() {
    let mut all = vec![json!({"role": "user", "content": "Look around."})];
    for (i, path) in ["/a/x.py", "/a/y.py", "/a/x.py"].iter().enumerate() {
        all.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": format!("r{i}"), "type": "function", "function": {"name": "read_file", "arguments": json!({"path": path}).to_string()}}]}));
        all.push(
            json!({"role": "tool", "tool_call_id": format!("r{i}"), "content": "def main():\n    pass\n".repeat(80)}),
        );
    }
    all.push(json!({"role": "assistant", "content": "ok"}));
    let log = Log::openai(Value::Array(all));
    let items = log.items();
    let total: usize = items.iter().map(|i| i.tokens as usize).sum();
    // Room for one digest's saving: the stale read of x.py (m3) goes, not y.py (m5).
    let options = BuildOptions {
        budget: budget(total as u32 - 50),
        keep_recent_steps: 2,
        summary: None,
        ..BuildOptions::default()
    };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_reduce(&ctx, &mut cache, &state);
    let touched: Vec<usize> = pass
        .plans
        .every_plan(&pass.units)
        .iter()
        .flat_map(|p| p.members.iter())
        .filter(|m| !m.replace.is_empty())
        .map(|m| m.msg)
        .collect();
    assert_eq!(touched, [2]);
}

#[test]
fn thinning_only_without_a_summary_only_earlier_turns_only_while_needed() {
    let log = turns(6, 2, 5);
    let items = log.items();
    let total: usize = items.iter().map(|i| i.tokens as usize).sum();
    let thin = |summary| BuildOptions {
        thin: true,
        keep_recent_steps: 1,
        budget: budget(total as u32 - 40),
        compress: None,
        digest: None,
        summary,
        ..BuildOptions::default()
    };
    let options = thin(None);
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_reduce(&ctx, &mut cache, &state);
    assert_eq!(pass.mode, Mode::Reduced);
    let thinned: Vec<usize> = pass
        .plans
        .iter()
        .filter(|p| p.dropped == Some(DropReason::Thinning))
        .map(|p| pass.units.unit(p.unit).unwrap().turn)
        .collect();
    assert!(!thinned.is_empty() && thinned.iter().all(|t| *t == 1), "only the oldest turn: {thinned:?}");
    // With a summary configured, never.
    let options = thin(Some(Default::default()));
    let ctx = Ctx { options: &options, ..ctx };
    let pass = through_reduce(&ctx, &mut cache, &state);
    assert!(pass.plans.every_plan(&pass.units).iter().all(|p| p.dropped.is_none()));
}

#[test]
fn without_budget_or_summary_older_turns_are_reduced_as_always() {
    let log = turns(3, 1, 400);
    let items = log.items();
    let options = BuildOptions { keep_recent_steps: 1, summary: None, ..BuildOptions::default() };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_reduce(&ctx, &mut cache, &state);
    assert_eq!(pass.mode, Mode::Unlimited);
    let steps: Vec<Plan> = pass
        .plans
        .every_plan(&pass.units)
        .into_iter()
        .filter(|p| pass.units.unit(p.unit).unwrap().kind == UnitKind::Step)
        .collect();
    let actions: Vec<Action> = steps.iter().map(|p| p.members[1].action()).collect();
    // Turns 1 and 2 read files in an earlier turn: digests; the current turn's read is not
    // digested (it may be compressed: it is not the newest unit).
    assert_eq!(actions[..2], [Action::Digested, Action::Digested]);
    assert_ne!(actions[2], Action::Digested);
    assert!(steps[0].tokens < items[3].tokens as usize, "a digest is cheaper than the read");
    let computed = cache.reductions_computed();
    through_reduce(&ctx, &mut cache, &state);
    assert_eq!(cache.reductions_computed(), computed, "a second pass reuses the reductions");
}

#[test]
fn hopeless_histories_leave_the_reductions_to_the_selection() {
    let log = turns(40, 2, 200);
    let items = log.items();
    let options = BuildOptions { budget: budget(3_000), summary: None, ..BuildOptions::default() };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_reduce(&ctx, &mut cache, &state);
    assert_eq!(pass.mode, Mode::Selected);
    assert!(pass.lazy && cache.reductions_computed() == 0, "nothing reduced that the selection may never reach");
}
