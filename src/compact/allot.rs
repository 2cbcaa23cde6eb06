//! Allot: the budget arithmetic, the stage after plan. The most tokens the context may
//! have, the pinned requests sized to at most half of what the system prompt leaves, the state's
//! sections, the summary section's share of the rest (`budget.summaryRatio`), and the summary in
//! force as the context shows it (cut to the share if it is longer). Whatever the summary section
//! does not use goes to the recent messages.

use super::forms::{made_up_tokens, Ctx, Forms, TextCounts};
use super::pins::{self, Pins};
use super::plan::Units;
use super::receipt::BudgetReport;
use super::request::placeholder;
use super::section::summary_messages;
use super::state_sections::{self, StateUse};
use crate::error::{Error, Result};
use crate::message::Message;
use crate::tokens::REPLY_PRIMING;

/// The summary in force as the context shows it.
#[derive(Clone, Debug, Default)]
pub(crate) struct SummarySection {
    pub(crate) messages: Vec<Message>,
    pub(crate) tokens: usize,
    /// Cut to its head and tail (or left out) to fit its share.
    pub(crate) truncated: bool,
}

/// The state's sections as they go in after the system prompt.
#[derive(Clone, Debug, Default)]
pub(crate) struct StateSection {
    pub(crate) messages: Vec<Message>,
    pub(crate) tokens: usize,
    pub(crate) used: Option<StateUse>,
}

/// The stage's output: how the budget is split.
#[derive(Clone, Debug)]
pub(crate) struct Allotment {
    /// The most tokens the context may have (with a budget), and the budget's report.
    pub(crate) max: Option<usize>,
    pub(crate) report: Option<BudgetReport>,
    /// The reserve for a placeholder user message.
    pub(crate) placeholder_tokens: usize,
    /// The pinned requests as they go in (the reduce stage puts them whole again when the context
    /// holds every unit).
    pub(crate) pins: Pins,
    /// The summary section's share: at most this much for the summary, the bridge and the memory.
    pub(crate) share: usize,
    pub(crate) summary: SummarySection,
    pub(crate) state: StateSection,
    pub(crate) notes: Vec<String>,
}

/// The stage: the budget split for `units`. A budget too small for the system prompt, or for the
/// system prompt and the pinned requests cut to the shortest, is an error that says the numbers.
pub(crate) fn allot(ctx: &Ctx, units: &Units, forms: &mut Forms, texts: &mut TextCounts) -> Result<Allotment> {
    let options = ctx.options;
    let placeholder_tokens = made_up_tokens(ctx, texts, &placeholder(options.format));
    let mut summary = SummarySection::default();
    if let Some(record) = units.summary {
        summary.messages = summary_messages(options, &record.text, &record.summarised_until);
        summary.tokens = summary.messages.iter().map(|m| made_up_tokens(ctx, texts, m)).sum();
    }
    let Some(budget) = &options.budget else {
        return Ok(Allotment {
            max: None,
            report: None,
            placeholder_tokens,
            pins: Pins::whole(&units.pins),
            share: usize::MAX,
            summary,
            state: state_section(ctx, texts, usize::MAX),
            notes: Vec::new(),
        });
    };
    let max = budget.max_tokens();
    let floor = units.system_tokens + REPLY_PRIMING + placeholder_tokens;
    if floor > max {
        return Err(Error::invalid_argument(format!(
            "the budget of {max} tokens ({}) is too small for the system prompt alone ({} tokens)",
            budget.describe(),
            units.system_tokens
        )));
    }
    // The state's sections: at most a quarter of what the system prompt leaves.
    let state = state_section(ctx, texts, (max - floor) / 4);
    let floor = floor + state.tokens;
    let room = (max - units.system_tokens - state.tokens - REPLY_PRIMING) / 2;
    let pins = pins::size(ctx, forms, &units.structure, &units.pins, room, max, units.system_tokens)?;
    let avail = max.saturating_sub(floor + pins.tokens);
    let share = (avail as f64 * budget.summary_ratio).floor() as usize;
    let mut notes = Vec::new();
    if let Some(record) = units.summary.filter(|_| summary.tokens > share) {
        summary = cut_summary(ctx, texts, &record.text, &record.summarised_until, share, &mut notes);
    }
    let report = BudgetReport {
        max_tokens: max,
        system_tokens: units.system_tokens,
        state_tokens: state.tokens,
        pinned_tokens: pins.tokens,
        summary_budget: share,
        recent_budget: avail.saturating_sub(summary.tokens),
        trigger_tokens: max,
        low_water_tokens: max,
        request_tokens: 0,
        billed_tokens: None,
    };
    Ok(Allotment { max: Some(max), report: Some(report), placeholder_tokens, pins, share, summary, state, notes })
}

/// The state's sections (`compact::state_sections`) within their cap and `room`.
fn state_section(ctx: &Ctx, texts: &mut TextCounts, room: usize) -> StateSection {
    let Some(options) = ctx.options.state.as_ref() else { return StateSection::default() };
    let cap = options.max_tokens.map_or(state_sections::STATE_MAX_TOKENS, |m| m as usize);
    match state_sections::state_sections(ctx.state, cap.min(room), ctx.encoding, ctx.options.format, &mut texts.lines) {
        Some((messages, used)) => StateSection { messages, tokens: used.tokens, used: Some(used) },
        None => StateSection::default(),
    }
}

/// The summary in force, longer than its `share`: its head and tail, as long as the share allows
/// (nothing if even the shortest is too long, which `notes` says).
fn cut_summary(
    ctx: &Ctx,
    texts: &mut TextCounts,
    text: &str,
    until: &str,
    share: usize,
    notes: &mut Vec<String>,
) -> SummarySection {
    let tokens_at = |chars: usize, texts: &mut TextCounts| -> (Vec<Message>, usize) {
        let cut = crate::extract::head_tail(text, chars, chars);
        let messages = summary_messages(ctx.options, &cut, until);
        let n = messages.iter().map(|m| made_up_tokens(ctx, texts, m)).sum();
        (messages, n)
    };
    let (mut low, mut high) = (0usize, text.chars().count() / 2);
    let mut best = None;
    while low <= high {
        let mid = low + (high - low) / 2;
        let (messages, n) = tokens_at(mid, texts);
        if n <= share {
            best = Some((messages, n));
            low = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            high = mid - 1;
        }
    }
    match best {
        Some((messages, tokens)) => {
            notes.push(format!("the summary was cut to its head and tail to fit its share ({share} tokens)"));
            SummarySection { messages, tokens, truncated: true }
        }
        None => {
            notes.push("the summary does not fit the budget at all and was left out".to_string());
            SummarySection { messages: Vec::new(), tokens: 0, truncated: true }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::compact::forms::Ctx;
    use crate::compact::pass::Mode;
    use crate::compact::summary_state::SummaryState;
    use crate::compact::testing::{through_reduce, turns, units_of, Log, ENCODING};
    use crate::compact::{BudgetOptions, BuildCache, BuildOptions};

    fn options(budget: BudgetOptions) -> BuildOptions {
        BuildOptions { budget: Some(budget), summary: None, compress: None, digest: None, ..BuildOptions::default() }
    }

    #[test]
    fn allot_pins_then_shares_what_the_system_prompt_leaves() {
        let log = turns(2, 1, 5);
        let items = log.items();
        let options = options(BudgetOptions { context_window: 10_000, ..BudgetOptions::default() });
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
        let mut cache = BuildCache::default();
        let state = SummaryState::default();
        let units = units_of(&ctx, &mut cache, &state);
        let allotment = allot(&ctx, &units, &mut cache.forms, &mut cache.texts).unwrap();
        let budget = allotment.report.unwrap();
        assert_eq!(budget.max_tokens, 6_000);
        let placeholder = made_up_tokens(&ctx, &mut cache.texts, &placeholder(options.format));
        let avail = 6_000 - units.system_tokens - REPLY_PRIMING - placeholder - allotment.pins.tokens;
        assert_eq!(budget.summary_budget, (avail as f64 * 0.26) as usize);
        assert_eq!(budget.pinned_tokens, allotment.pins.tokens);

        let tiny = self::options(BudgetOptions { context_window: 10, ..BudgetOptions::default() });
        let ctx = Ctx { options: &tiny, ..ctx };
        let units = units_of(&ctx, &mut cache, &state);
        let error = allot(&ctx, &units, &mut cache.forms, &mut cache.texts).unwrap_err();
        assert!(error.message.contains("too small for the system prompt alone"), "{error}");
    }

    #[test]
    fn pins_over_half_the_room_are_cut_to_head_and_tail() {
        let task = format!("Fix the bug. {} End of the task.", "Details of the problem. ".repeat(400));
        let log = Log::openai(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": task},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "and hurry"}
        ]));
        let items = log.items();
        let options = options(BudgetOptions { max_tokens: Some(1_200), ..BudgetOptions::default() });
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
        let mut cache = BuildCache::default();
        let state = SummaryState::default();
        let pass = through_reduce(&ctx, &mut cache, &state);
        assert_eq!(pass.mode, Mode::Selected);
        let pins = &pass.budget.pins;
        assert_eq!(pins.list.len(), 2);
        assert!(pins.tokens <= (1_200 - pass.units.system_tokens - REPLY_PRIMING) / 2);
        let task_pin = &pins.list[0];
        assert!(task_pin.plan.members[0].cut_text.is_some() && task_pin.plan.tokens < task_pin.whole);
        let text = ctx.materialize(&mut cache.forms, &task_pin.plan.members[0]).unwrap().content.joined_text();
        assert!(
            text.starts_with("Fix the bug.") && text.ends_with("End of the task.") && text.contains("chars omitted")
        );
        assert!(pins.list[1].plan.members[0].cut_text.is_none(), "the short one stays whole");
    }
}
