//! Random agent histories for the property tests: parallel tool calls (answered in any order, in
//! one message or several), interleaved system messages, orphan results, unanswered calls, reused
//! ids, very long outputs and file reads.
#![allow(dead_code)]

use context_compactor::compact::{BudgetOptions, BuildOptions, Summarizer, SummaryOptions};
use context_compactor::message::{self, Format, Message};
use proptest::prelude::*;
use serde_json::{json, Value};

#[derive(Clone, Debug)]
pub enum Event {
    System(u8),
    User(u16),
    AssistantText(u16),
    /// Calls `n` tools in parallel (some will be answered).
    Calls(u8, bool),
    /// Answers the open calls selected by the mask, in reverse order if the flag is set.
    Answer(u8, bool, Output),
    Orphan,
    /// A call id used again once answered.
    Reuse,
}

#[derive(Clone, Debug)]
pub enum Output {
    Short,
    LongText(u16),
    LongJson(u8),
    FileRead,
}

pub fn event() -> impl Strategy<Value = Event> {
    let output = prop_oneof![
        4 => Just(Output::Short),
        1 => (100u16..4000).prop_map(Output::LongText),
        1 => (5u8..60).prop_map(Output::LongJson),
        1 => Just(Output::FileRead),
    ];
    prop_oneof![
        1 => (0u8..3).prop_map(Event::System),
        4 => (1u16..300).prop_map(Event::User),
        3 => (0u16..300).prop_map(Event::AssistantText),
        4 => (1u8..4, any::<bool>()).prop_map(|(n, file)| Event::Calls(n, file)),
        5 => (any::<u8>(), any::<bool>(), output).prop_map(|(mask, rev, out)| Event::Answer(mask, rev, out)),
        1 => Just(Event::Orphan),
        1 => Just(Event::Reuse),
    ]
}

pub fn words(n: u16, seed: usize) -> String {
    let vocab = ["alpha", "beta", "gamma", "flight", "booking", "error", "ok", "/src/app.py", "done", "TODO: check"];
    (0..n as usize).map(|i| vocab[(i * 7 + seed) % vocab.len()]).collect::<Vec<_>>().join(" ")
}

pub fn output_text(output: &Output, seed: usize) -> String {
    match output {
        Output::Short => format!("result {seed}"),
        Output::LongText(n) => "x".repeat(*n as usize * 3) + &words(20, seed),
        Output::LongJson(n) => {
            let items: Vec<Value> = (0..*n)
                .map(|i| json!({"id": i, "name": format!("item {i}"), "detail": words(12, seed + i as usize)}))
                .collect();
            json!({"success": true, "total": n, "items": items}).to_string()
        }
        Output::FileRead => "def main():\n    pass\n\nclass App:\n    pass\n".repeat(40),
    }
}

/// Turns events into messages in `format` (parsed, not appended: orphans must get through).
pub fn history(events: &[Event], format: Format) -> Vec<Message> {
    let mut out: Vec<Value> = Vec::new();
    let mut open: Vec<(String, bool)> = Vec::new();
    let mut answered: Vec<String> = Vec::new();
    let mut next = 0usize;
    for (k, event) in events.iter().enumerate() {
        match event {
            Event::System(v) => out.push(json!({"role": "system", "content": format!("System rule {v}.")})),
            Event::User(n) => out.push(json!({"role": "user", "content": words(*n, k)})),
            Event::AssistantText(n) => out.push(json!({"role": "assistant", "content": words(*n, k)})),
            Event::Calls(n, file) if *n > 0 => {
                let mut calls = Vec::new();
                for _ in 0..*n {
                    next += 1;
                    let id = format!("call_{next}");
                    let name = if *file { "read_file" } else { "search" };
                    calls.push((id.clone(), name));
                    open.push((id, *file));
                }
                out.push(match format {
                    Format::OpenAi | Format::Responses | Format::AiSdk => json!({"role": "assistant", "content": null, "tool_calls": calls.iter().map(|(id, name)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": json!({"path": "src/main.py"}).to_string()}})).collect::<Vec<_>>()}),
                    Format::Anthropic => json!({"role": "assistant", "content": calls.iter().map(|(id, name)| json!({"type": "tool_use", "id": id, "name": name, "input": {"path": "src/main.py"}})).collect::<Vec<_>>()}),
                });
            }
            Event::Calls(..) => {}
            Event::Answer(mask, reverse, output) => {
                let mut chosen: Vec<(String, bool)> = Vec::new();
                let mut keep = Vec::new();
                for (i, call) in open.drain(..).enumerate() {
                    if mask & (1 << (i % 8)) != 0 {
                        chosen.push(call);
                    } else {
                        keep.push(call);
                    }
                }
                open = keep;
                if *reverse {
                    chosen.reverse();
                }
                if chosen.is_empty() {
                    continue;
                }
                let text = |i: usize, file: bool| {
                    if file {
                        output_text(&Output::FileRead, k + i)
                    } else {
                        output_text(output, k + i)
                    }
                };
                match format {
                    Format::OpenAi | Format::Responses | Format::AiSdk => {
                        for (i, (id, file)) in chosen.iter().enumerate() {
                            out.push(json!({"role": "tool", "tool_call_id": id, "content": text(i, *file)}));
                        }
                    }
                    Format::Anthropic => {
                        let mut blocks: Vec<Value> = chosen.iter().enumerate().map(|(i, (id, file))| json!({"type": "tool_result", "tool_use_id": id, "content": text(i, *file)})).collect();
                        if reverse & (chosen.len() > 1) {
                            blocks.push(json!({"type": "text", "text": "and also this"}));
                        }
                        out.push(json!({"role": "user", "content": blocks}));
                    }
                }
                answered.extend(chosen.into_iter().map(|(id, _)| id));
            }
            Event::Orphan => {
                let id = format!("orphan_{k}");
                out.push(match format {
                    Format::OpenAi | Format::Responses | Format::AiSdk => json!({"role": "tool", "tool_call_id": id, "content": "lost"}),
                    Format::Anthropic => json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": "lost"}]}),
                });
            }
            Event::Reuse => {
                if let Some(id) = answered.pop() {
                    open.push((id.clone(), false));
                    out.push(match format {
                        Format::OpenAi | Format::Responses | Format::AiSdk => json!({"role": "assistant", "content": "again", "tool_calls": [{"id": id, "type": "function", "function": {"name": "search", "arguments": "{}"}}]}),
                        Format::Anthropic => json!({"role": "assistant", "content": [{"type": "text", "text": "again"}, {"type": "tool_use", "id": id, "name": "search", "input": {}}]}),
                    });
                }
            }
        }
    }
    message::parse(Value::Array(out), format).expect("generated messages parse")
}

/// The build options the replay tests draw: a budget, its low-water mark, a summary (none,
/// extractive or external) and the recent steps kept whole.
pub fn replay_options(format: Format, budget: u32, low_water: f64, summary: u8, steps: usize) -> BuildOptions {
    BuildOptions {
        format,
        budget: Some(BudgetOptions {
            max_tokens: Some(budget),
            low_water_ratio: Some(low_water),
            ..BudgetOptions::default()
        }),
        keep_recent_steps: steps,
        summary: match summary {
            0 => None,
            n => Some(SummaryOptions {
                summarizer: if n == 1 { Summarizer::Extractive } else { Summarizer::External },
                min_messages: 8,
                min_new_messages: 4,
                ..SummaryOptions::default()
            }),
        },
        ..BuildOptions::default()
    }
}
