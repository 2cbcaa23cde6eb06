//! Stored messages and a way to run the stages one by one, for the stages' own tests.

use std::sync::Arc;

use serde_json::Value;

use crate::compact::allot::allot;
use crate::compact::assemble::{assemble, BuildOutcome};
use crate::compact::forms::Ctx;
use crate::compact::measure::measure;
use crate::compact::pass::Pass;
use crate::compact::plan::{split, Units};
use crate::compact::reduce::Reductions;
use crate::compact::repair::{structure_for, Item};
use crate::compact::summary_state::{SummaryRecord, SummaryState};
use crate::compact::BuildCache;
use crate::compact::{fill, reduce, summarise};
use crate::error::Result;
use crate::message::{parse, Format, Message};
use crate::tokens::{count_message, Encoding};

pub(crate) const ENCODING: Encoding = Encoding::O200kBase;

/// A stored history: ids `m1`, `m2`, … and each message's tokens.
pub(crate) struct Log {
    ids: Vec<String>,
    messages: Vec<Arc<Message>>,
    tokens: Vec<u32>,
    /// The positions of the messages pinned explicitly.
    pub(crate) pinned: Vec<usize>,
}

impl Log {
    pub(crate) fn openai(value: Value) -> Log {
        Log::parsed(value, Format::OpenAi)
    }

    pub(crate) fn anthropic(value: Value) -> Log {
        Log::parsed(value, Format::Anthropic)
    }

    fn parsed(value: Value, format: Format) -> Log {
        let messages: Vec<Arc<Message>> =
            parse(value, format).expect("valid messages").into_iter().map(Arc::new).collect();
        let tokens = messages.iter().map(|m| count_message(ENCODING, m).total).collect();
        let ids = (1..=messages.len()).map(|i| format!("m{i}")).collect();
        Log { ids, messages, tokens, pinned: Vec::new() }
    }

    pub(crate) fn items(&self) -> Vec<Item<'_>> {
        (0..self.ids.len())
            .map(|i| Item {
                id: &self.ids[i],
                message: &self.messages[i],
                tokens: self.tokens[i],
                pinned: self.pinned.contains(&i),
            })
            .collect()
    }
}

/// The stages up to plan, as `build_once` runs them.
pub(crate) fn units_of<'s>(ctx: &Ctx, cache: &mut BuildCache, state: &'s SummaryState) -> Units<'s> {
    let structure = structure_for(ctx.items, ctx.options.dedupe_system, &mut cache.structure);
    split(ctx, structure, state, &mut cache.structure, &mut cache.forms).expect("plan")
}

/// The stages before summarise, as `build_once` runs them.
pub(crate) fn through_reduce<'s>(ctx: &Ctx, cache: &mut BuildCache, state: &'s SummaryState) -> Pass<'s> {
    let units = units_of(ctx, cache, state);
    let budget = allot(ctx, &units, &mut cache.forms, &mut cache.texts).expect("allot");
    let measured = measure(ctx, &units, &budget, &mut cache.forms, &mut cache.sums).expect("measure");
    let mut pass = Pass::of(units, budget, measured, ctx.options);
    reduce::plan_active(ctx, &mut cache.forms, &mut cache.files, &mut pass).expect("plans");
    reduce::fit(ctx, &mut cache.forms, &mut cache.files, &mut cache.sums, &mut pass).expect("fit");
    pass
}

/// Every stage but assemble, the summary stage not allowed to summarise.
pub(crate) fn through_fill<'s>(ctx: &Ctx, cache: &mut BuildCache, state: &'s SummaryState) -> Pass<'s> {
    let mut pass = through_reduce(ctx, cache, state);
    assert!(run_summarise(ctx, cache, &mut pass, state, false).expect("summarise").is_none());
    run_fill(ctx, cache, &mut pass).expect("fill");
    pass
}

/// The summary stage with the caches of `cache` it uses.
pub(crate) fn run_summarise(
    ctx: &Ctx,
    cache: &mut BuildCache,
    pass: &mut Pass,
    state: &SummaryState,
    allowed: bool,
) -> Result<Option<SummaryRecord>> {
    let mut reductions = Reductions { forms: &mut cache.forms, files: &mut cache.files };
    summarise::summarise(ctx, &mut reductions, &mut cache.texts, pass, state, allowed)
}

/// The assemble stage with the caches of `cache` it uses.
pub(crate) fn run_assemble(ctx: &Ctx, cache: &mut BuildCache, pass: Pass) -> Result<BuildOutcome> {
    assemble(ctx, &mut cache.forms, &mut cache.texts, &mut cache.fates, &mut cache.structure, pass)
}

/// The fill stage with the caches of `cache` it uses.
pub(crate) fn run_fill(ctx: &Ctx, cache: &mut BuildCache, pass: &mut Pass) -> Result<()> {
    let mut reductions = Reductions { forms: &mut cache.forms, files: &mut cache.files };
    fill::fill(ctx, &mut reductions, &mut cache.texts, &mut cache.bridges, pass)
}

/// A user request, then `steps` tool steps (a call, its result of `result_words` words) and
/// a closing answer: one turn.
pub(crate) fn turn(n: usize, steps: usize, result_words: usize) -> Vec<Value> {
    let mut out = vec![serde_json::json!({"role": "user", "content": format!("request {n}")})];
    for s in 0..steps {
        let id = format!("c{n}_{s}");
        out.push(serde_json::json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "read_file", "arguments": format!("{{\"path\": \"/src/f{n}_{s}.rs\"}}")}}]}));
        out.push(serde_json::json!({"role": "tool", "tool_call_id": id, "content": format!("line {n} {s} ").repeat(result_words)}));
    }
    out.push(serde_json::json!({"role": "assistant", "content": format!("answer {n}")}));
    out
}

pub(crate) fn turns(count: usize, steps: usize, result_words: usize) -> Log {
    let mut all = vec![serde_json::json!({"role": "system", "content": "Be brief."})];
    for n in 1..=count {
        all.extend(turn(n, steps, result_words));
    }
    Log::openai(Value::Array(all))
}
