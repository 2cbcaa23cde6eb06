use serde_json::json;

use super::*;
use crate::compact::receipt::DropReason;
use crate::compact::summary_state::{SummaryOptions, SummaryState};
use crate::compact::testing::{run_assemble, through_fill, turns, Log, ENCODING};
use crate::compact::{BudgetOptions, BuildCache, BuildOptions, PinRole, PLACEHOLDER_TEXT};

fn budget(max: u32) -> Option<BudgetOptions> {
    Some(BudgetOptions { max_tokens: Some(max), ..BudgetOptions::default() })
}

#[test]
fn system_then_pins_then_recent_with_a_receipt_for_every_message() {
    let log = turns(40, 1, 30);
    let items = log.items();
    let options =
        BuildOptions { budget: budget(2_400), summary: None, digest: None, compress: None, ..BuildOptions::default() };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_fill(&ctx, &mut cache, &state);
    let outcome = run_assemble(&ctx, &mut cache, pass).unwrap();
    let context = &outcome.context;
    let sections: Vec<Section> = context.messages.iter().map(|m| m.section).collect();
    assert_eq!(sections[..2], [Section::System, Section::Pinned]);
    assert_eq!(context.messages[1].sources, ["m2"], "the task first");
    assert!(sections[2..].iter().all(|s| matches!(s, Section::Recent | Section::Pinned)));
    assert_eq!(context.messages.last().unwrap().sources, [format!("m{}", items.len())]);
    let receipt = &context.receipt;
    assert_eq!(receipt.fates.len(), items.len());
    assert_eq!(receipt.runs.iter().map(|r| r.count).sum::<usize>(), items.len());
    assert_eq!(receipt.fates[2].reason, Some(DropReason::Budget));
    let pinned: Vec<(&str, PinRole)> = receipt.pinned.iter().map(|p| (p.id.as_str(), p.role)).collect();
    assert_eq!(pinned, [("m2", PinRole::Task), (format!("m{}", items.len() - 3).leak() as &str, PinRole::Latest)]);
    let kept: usize = receipt.fates.iter().map(|f| f.tokens_after as usize).sum();
    assert_eq!(kept + REPLY_PRIMING, context.tokens.total);
    assert!(receipt.within_budget && !receipt.placeholder);
    assert!(context.tokens.total * 10 >= 2_400 * 9, "{} of 2,400", context.tokens.total);
    assert!(context.request(&mut EmitCache::default()).is_ok(), "valid for the provider");
}

#[test]
fn anthropic_the_summary_is_a_user_message_after_the_task_and_thinking_is_untouched() {
    let mut list = vec![json!({"role": "user", "content": "Fix the router."})];
    for i in 0..12 {
        list.push(json!({"role": "assistant", "content": [
            {"type": "thinking", "thinking": format!("plan {i}"), "signature": "sig"},
            {"type": "text", "text": format!("step {i}")},
            {"type": "tool_use", "id": format!("t{i}"), "name": "Bash", "input": {"command": format!("make {i}")}}
        ]}));
        list.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": format!("t{i}"), "content": "output ".repeat(400)}]}));
    }
    let log = Log::anthropic(serde_json::Value::Array(list));
    let items = log.items();
    let options = BuildOptions {
        format: Format::Anthropic,
        budget: budget(1_500),
        summary: Some(SummaryOptions::default()),
        ..BuildOptions::default()
    };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_fill(&ctx, &mut cache, &state);
    let context = run_assemble(&ctx, &mut cache, pass).unwrap().context;
    let roles: Vec<(Role, Section)> = context.messages.iter().map(|m| (m.message.role, m.section)).collect();
    assert_eq!(
        roles[..3],
        [(Role::User, Section::Pinned), (Role::User, Section::Summary), (Role::Assistant, Section::Recent)]
    );
    assert!(context.receipt.bridge.is_some());
    let request = context.to_request().unwrap();
    let messages = request["messages"].as_array().unwrap();
    // The task and the summary merge into one user message; the assistant message keeps its
    // blocks in their order, thinking first.
    assert_eq!(messages[0]["role"], "user");
    assert!(
        messages[0].to_string().contains("Fix the router.")
            && messages[0].to_string().contains("Summary of the earlier conversation")
    );
    assert_eq!(messages[1]["content"][0]["type"], "thinking");
    assert!(context.receipt.runs.iter().all(|r| r.action != Action::Dropped || r.reason == Some(DropReason::Repair)));
}

#[test]
fn anthropic_gets_a_placeholder_when_no_user_message_leads() {
    let log = Log::openai(json!([{"role": "system", "content": "s"}, {"role": "assistant", "content": "hello"}]));
    let items = log.items();
    let options = BuildOptions { format: Format::Anthropic, summary: None, ..BuildOptions::default() };
    let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
    let mut cache = BuildCache::default();
    let state = SummaryState::default();
    let pass = through_fill(&ctx, &mut cache, &state);
    let context = run_assemble(&ctx, &mut cache, pass).unwrap().context;
    let roles: Vec<Role> = context.messages().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::Assistant]);
    assert_eq!(context.messages().nth(1).unwrap().content.joined_text(), PLACEHOLDER_TEXT);
    assert!(context.receipt.placeholder);
    assert!(context.to_request().is_ok());
}
