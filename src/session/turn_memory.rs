//! A session's memory: turns recorded with their snapshots and summaries, the cumulative
//! summary, search over the memory and the log, and `recall_context`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{memory_off, Session};
use crate::compact::request::emit_request;
use crate::error::{Error, ErrorKind, Result};
use crate::history::{ConversationHistory, Record};
use crate::memory::recall::{self, Log, RecallRequest, RecallResult, SearchHit};
use crate::memory::{self, ContextSnapshot, MemoryStore, MessageRange};
use crate::message::{Content, ContentForm, Format, Message, Part, Role};

/// What the agent hands the memory at the end of a turn.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct TurnInput {
    /// Defaults to the turn after the last one recorded.
    pub turn_number: Option<u32>,
    /// The workspace the agent rendered this turn (`fullContext`).
    pub workspace_context: String,
    /// The turn's summary; the built-in one when absent.
    pub summary: Option<String>,
    pub insights: Option<Vec<String>>,
    /// Refuse a given summary longer than this (what a summariser was asked for).
    pub max_summary_tokens: Option<u32>,
}

/// The defaults of the memory's calls when the caller names no limit: a turn summary's budget
/// (and the most a caller may ask for), the cumulative summary's, and a recall's.
pub const TURN_SUMMARY_MAX_TOKENS: u32 = 300;
/// The most images one `recall_context` answer attaches.
pub const MAX_RECALLED_IMAGES: usize = 4;
pub const TURN_SUMMARY_MAX_TOKENS_LIMIT: u32 = 100_000;
pub const CUMULATIVE_SUMMARY_MAX_TOKENS: usize = 2_000;
pub const RECALL_MAX_TOKENS: usize = 4_000;

/// What a plugged-in summariser gets for the turn under way (`Session::turn_summary_request`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TurnSummaryRequest {
    pub id: String,
    pub turn_number: u32,
    pub message_ids: Vec<String>,
    /// One user message holding the turn's transcript and the instruction, in the requested format.
    #[cfg_attr(test, ts(type = "AnyMessages"))]
    pub messages: Value,
    pub prompt: String,
    pub max_tokens: u32,
    pub required_keys: Vec<String>,
}

impl Session {
    pub(super) fn memory_mut(&mut self) -> Result<&mut MemoryStore> {
        self.memory.as_mut().ok_or_else(memory_off)
    }

    /// The number the next recorded turn gets by default, and the messages it will cover.
    pub fn pending_turn(&self) -> Result<(u32, &[Record])> {
        let memory = self.memory.as_ref().ok_or_else(memory_off)?;
        let next = memory.last_turn().map_or(1, |t| t.saturating_add(1));
        Ok((next, self.history.records().get(self.turn_start()..).unwrap_or_default()))
    }

    /// Where the messages of the turn under way begin: after the last recorded turn's (each
    /// turn covers the messages appended since the one before).
    pub fn turn_start(&self) -> usize {
        self.memory
            .as_ref()
            .and_then(|memory| memory.contexts().rev().find_map(|s| s.messages.as_ref()))
            .and_then(|range| self.history.position(&range.until))
            .map_or(0, |until| until + 1)
    }

    /// Checks that the turns' message ranges are what recording them made: each turn covers the
    /// messages appended since the turn before, first to last (the one place import checks
    /// them; `record_turn` makes them so).
    pub(super) fn check_turn_ranges(&self) -> Result<()> {
        let Some(memory) = &self.memory else { return Ok(()) };
        let mut next = 0;
        for snapshot in memory.contexts() {
            let Some(range) = &snapshot.messages else { continue };
            let turn = snapshot.turn_number;
            let position = |id: &str| {
                self.history.position(id).ok_or_else(|| {
                    Error::invalid_argument(format!(
                        "turn {turn} covers message {id:?}, which the history does not have"
                    ))
                })
            };
            let (from, until) = (position(&range.from)?, position(&range.until)?);
            if from != next || until < from {
                let expected = self.history.records().get(next).map_or("none".to_string(), |r| format!("{:?}", r.id));
                return Err(Error::invalid_argument(format!(
                    "turn {turn} covers messages {:?} to {:?}, but a turn covers the messages since the turn before, \
                     from {expected} on, first to last",
                    range.from, range.until
                )));
            }
            next = until + 1;
        }
        Ok(())
    }

    /// Ends a turn: stores the workspace snapshot with its summary (the built-in one unless
    /// given) and the range of messages appended since the previous turn. On error nothing changes.
    pub fn record_turn(&mut self, input: TurnInput) -> Result<ContextSnapshot> {
        let (next, records) = self.pending_turn()?;
        let turn_number = input.turn_number.unwrap_or(next);
        let range = match (records.first(), records.last()) {
            (Some(first), Some(last)) => Some(MessageRange { from: first.id.clone(), until: last.id.clone() }),
            _ => None,
        };
        let (summary, insights) = match input.summary {
            Some(summary) => {
                if let Some(max) = input.max_summary_tokens {
                    crate::compact::summary_state::validate_summary(&summary, self.history.encoding(), max, &[])?;
                }
                (summary, input.insights.unwrap_or_default())
            }
            None => {
                let messages: Vec<&Message> = records.iter().map(|r| &*r.message).collect();
                let (summary, insights) = memory::turn_summary(&messages, &input.workspace_context);
                (summary, input.insights.unwrap_or(insights))
            }
        };
        Ok(self.memory_mut()?.record_turn(turn_number, input.workspace_context, summary, insights, range)?.clone())
    }

    /// What a plugged-in summariser gets for the turn under way: its messages and workspace as
    /// one transcript in one user message (valid for either provider), and a token budget.
    pub fn turn_summary_request(
        &self,
        workspace_context: &str,
        format: Format,
        max_tokens: u32,
    ) -> Result<TurnSummaryRequest> {
        let (turn_number, records) = self.pending_turn()?;
        let message_ids: Vec<String> = records.iter().map(|r| r.id.clone()).collect();
        let messages: Vec<&Message> = records.iter().map(|r| &*r.message).collect();
        let prompt = memory::turn_prompt(turn_number, &messages, workspace_context);
        let message = Message::new(Role::User, Content::text(prompt.clone()), format);
        Ok(TurnSummaryRequest {
            id: format!("turn-{turn_number}"),
            turn_number,
            message_ids,
            messages: emit_request(std::iter::once(&message), format)?,
            prompt,
            max_tokens,
            required_keys: Vec::new(),
        })
    }

    /// The `[Turn 1] …` lines for the prompt, within `max_tokens`.
    pub fn memory_summary(&self, max_tokens: usize) -> Result<String> {
        let memory = self.memory.as_ref().ok_or_else(memory_off)?;
        Ok(memory.cumulative_summary(self.history.encoding(), max_tokens))
    }

    /// Brings the search index up to the end of the log.
    pub(super) fn sync_index(&mut self) {
        let Some(memory) = self.memory.as_mut() else { return };
        for record in self.history.records().get(self.indexed..).unwrap_or_default() {
            memory.index_message(&record.id, &record.message.readable_text());
        }
        self.indexed = self.history.len();
    }

    /// Keyword search over snapshots, summaries and every logged message (dropped ones included).
    pub fn search(&mut self, query: &str, limit: usize) -> Result<Vec<SearchHit>> {
        self.sync_index();
        let memory = self.memory.as_ref().ok_or_else(memory_off)?;
        let log = SessionLog { history: &self.history, memory };
        Ok(memory
            .index()
            .search(query, limit)
            .iter()
            .filter_map(|hit| recall::describe_hit(memory, &log, hit))
            .collect())
    }

    /// Executes a `recall_context` call (Anthropic's `input` object or OpenAI's `arguments` text).
    pub fn recall(&mut self, input: &Value, max_tokens: usize) -> Result<RecallResult> {
        let request: RecallRequest = recall::parse_request(input)?;
        self.sync_index();
        let memory = self.memory.as_ref().ok_or_else(memory_off)?;
        recall::execute(
            memory,
            &request,
            &SessionLog { history: &self.history, memory },
            self.history.encoding(),
            max_tokens,
        )
    }

    /// Answers a model's `recall_context` call (OpenAI's tool call, or Anthropic's `tool_use`
    /// block) with the message to append: the recall's result, or, for a call the memory refuses
    /// (an unknown turn, bad arguments), the error marked as one, so that the model can correct
    /// itself. In `format`, or the call's own.
    pub fn answer_recall(&mut self, call: &Value, format: Option<Format>, max_tokens: usize) -> Result<Message> {
        // A call of the wrong shape is the caller's mistake (typed error); bad arguments are the
        // model's, answered with an error result it can read.
        let (input, own_format, id) = crate::message::tool_call_input(call, recall::TOOL_NAME)?;
        let format = format.unwrap_or(own_format);
        let (content, is_error, images) = match self.recall(input, max_tokens) {
            Ok(result) => (to_json_text(&result)?, false, self.recalled_images(&result, format)),
            Err(error) if error.kind == ErrorKind::Internal => return Err(error),
            Err(error) => (format!("Error: {error}"), true, Vec::new()),
        };
        let mut message = Message::tool_result(id, Some(recall::TOOL_NAME), content, is_error, format);
        if let Some(Part::ToolResult(result)) = message.content.parts.first_mut() {
            if !images.is_empty() {
                result.content.form = ContentForm::Parts;
                result.content.parts.extend(images);
            }
        }
        Ok(message)
    }

    /// The images of the recalled turns' messages, to attach to the answer where the format's
    /// tool results carry images (Anthropic's `tool_result` blocks, the AI SDK's content output);
    /// OpenAI's tool messages are text only, and there the result's `images` lines stand alone.
    /// At most `MAX_RECALLED_IMAGES`: a recall is not a way to send a whole album again.
    fn recalled_images(&self, result: &RecallResult, format: Format) -> Vec<Part> {
        if !matches!(format, Format::Anthropic | Format::AiSdk) {
            return Vec::new();
        }
        let RecallResult::Turns { turns, .. } = result else { return Vec::new() };
        turns
            .iter()
            .flat_map(|turn| &turn.messages)
            .filter(|m| !m.images.is_empty())
            .filter_map(|m| self.history.get(&m.id))
            .flat_map(|record| {
                crate::compact::images::images_of(&record.message).into_iter().cloned().collect::<Vec<_>>()
            })
            .take(MAX_RECALLED_IMAGES)
            .collect()
    }
}

/// A value as JSON text, its keys in order (what `JSON.stringify` of the returned object gave).
fn to_json_text<T: Serialize>(value: &T) -> Result<String> {
    crate::util::json_text::to_text(value).map_err(|e| Error::internal(format!("serialising a recall result: {e}")))
}

struct SessionLog<'a> {
    history: &'a ConversationHistory,
    memory: &'a MemoryStore,
}

impl Log for SessionLog<'_> {
    fn message(&self, id: &str) -> Option<(&'static str, String)> {
        self.history.get(id).map(|r| (r.message.role.as_str(), r.message.readable_text()))
    }

    fn image_notes(&self, id: &str) -> Vec<String> {
        let Some(record) = self.history.get(id) else { return Vec::new() };
        crate::compact::images::images_of(&record.message)
            .into_iter()
            .filter_map(|part| match part {
                Part::Image { source, .. } => Some(crate::compact::images::describe(source)),
                _ => None,
            })
            .collect()
    }

    fn ids_in(&self, range: &MessageRange) -> Vec<String> {
        match (self.history.position(&range.from), self.history.position(&range.until)) {
            (Some(from), Some(until)) => {
                self.history.records().get(from..=until).unwrap_or_default().iter().map(|r| r.id.clone()).collect()
            }
            _ => Vec::new(),
        }
    }

    fn turn_of(&self, id: &str) -> Option<u32> {
        let at = self.history.position(id)?;
        self.memory.contexts().find_map(|snapshot| {
            let range = snapshot.messages.as_ref()?;
            let (from, until) = (self.history.position(&range.from)?, self.history.position(&range.until)?);
            (from..=until).contains(&at).then_some(snapshot.turn_number)
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::compact::BuildOptions;
    use crate::message::Format;
    use crate::tokens::Encoding;
    use serde_json::json;

    fn with_memory() -> Session {
        let mut session = Session::new("main", Encoding::O200kBase, 10).unwrap();
        session.enable_memory(10_000).unwrap();
        session
    }

    pub(crate) fn agent_with_two_turns() -> Session {
        let mut session = with_memory();
        session
            .history
            .append_values(
                json!([
                    {"role": "user", "content": "Find my reservation to Seattle"},
                    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_reservation", "arguments": "{\"id\":\"ABC123\"}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "{\"id\":\"ABC123\",\"destination\":\"SEA\"}"},
                    {"role": "assistant", "content": "Reservation ABC123 flies to Seattle."}
                ]),
                Format::OpenAi,
            )
            .unwrap();
        let first = session
            .record_turn(TurnInput { workspace_context: "reservations: [ABC123]".into(), ..Default::default() })
            .unwrap();
        assert_eq!(first.turn_number, 1);
        assert_eq!(first.messages, Some(MessageRange { from: "m1".into(), until: "m4".into() }));
        session
            .history
            .append_values(
                json!([{"role": "user", "content": "Cancel it"}, {"role": "assistant", "content": "Cancelled."}]),
                Format::OpenAi,
            )
            .unwrap();
        session
            .record_turn(TurnInput {
                workspace_context: "reservations: []".into(),
                summary: Some("cancelled ABC123".into()),
                ..Default::default()
            })
            .unwrap();
        session
    }

    /// A 1×1 PNG, base64.
    const PNG: &str =
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

    #[test]
    fn a_recalled_turn_brings_its_images_back() {
        let mut session = with_memory();
        session
            .history
            .append_values(
                json!([
                    {"role": "user", "content": [{"type": "text", "text": "What is in this chart?"},
                        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}]},
                    {"role": "assistant", "content": "A single pixel."}
                ]),
                Format::Anthropic,
            )
            .unwrap();
        session.record_turn(TurnInput { workspace_context: "chart".into(), ..Default::default() }).unwrap();
        let call =
            json!({"type": "tool_use", "id": "toolu_1", "name": "recall_context", "input": {"turnNumbers": [1]}});

        let result = session.recall(&call["input"], 5_000).unwrap();
        let RecallResult::Turns { turns, .. } = &result else { panic!("turns") };
        assert_eq!(turns[0].messages[0].images, ["png, 1×1"]);
        assert!(turns[0].messages[1].images.is_empty());

        let answer = session.answer_recall(&call, Some(Format::Anthropic), 5_000).unwrap();
        let Some(Part::ToolResult(tool_result)) = answer.content.parts.first() else { panic!("a tool result") };
        let images: Vec<_> = tool_result.content.parts.iter().filter(|p| matches!(p, Part::Image { .. })).collect();
        assert_eq!(images.len(), 1, "Anthropic's tool_result carries the image itself");
        let emitted = crate::message::emit(&[answer], Format::Anthropic);
        assert_eq!(emitted["messages"][0]["content"][0]["content"][1]["source"]["data"], PNG);

        let openai_call = json!({"id": "c9", "type": "function", "function": {"name": "recall_context", "arguments": "{\"turnNumbers\":[1]}"}});
        let answer = session.answer_recall(&openai_call, Some(Format::OpenAi), 5_000).unwrap();
        let emitted = crate::message::emit(&[answer], Format::OpenAi);
        let text = emitted[0]["content"].as_str().expect("OpenAI's tool message is text");
        assert!(text.contains("png, 1×1") && !text.contains(PNG), "{text}");
    }

    #[test]
    fn the_context_carries_the_summaries_of_turns_it_does_not_hold() {
        let mut session = agent_with_two_turns();
        // More than the 6,000-token window holds: a history that fits is kept verbatim.
        for turn in 3..=12 {
            let long = format!("Turn {turn}: {}", "please look at the seat map again. ".repeat(80));
            session
                .history
                .append_values(json!([{"role": "user", "content": long}, {"role": "assistant", "content": format!("Seat {turn}A is free.")}]), Format::OpenAi)
                .unwrap();
            session
                .record_turn(TurnInput { workspace_context: format!("seat {turn}A"), ..Default::default() })
                .unwrap();
        }
        // Compacted to the budget itself: room for every turn's summary.
        let budget =
            crate::compact::BudgetOptions { context_window: 6_000, low_water_ratio: Some(1.0), ..Default::default() };
        let options = BuildOptions { budget: Some(budget), summary: None, ..Default::default() };
        let context = session.build(&options).unwrap().context;
        let memory = context.receipt.memory.clone().expect("turn summaries in the context");
        let in_context: Vec<&str> =
            context.messages.iter().flat_map(|m| m.sources.iter().map(String::as_str)).collect();
        for snapshot in session.memory().unwrap().contexts() {
            let range = snapshot.messages.as_ref().unwrap();
            let (from, until) =
                (session.history.position(&range.from).unwrap(), session.history.position(&range.until).unwrap());
            let whole = session.history.records()[from..=until].iter().all(|r| in_context.contains(&r.id.as_str()));
            assert_eq!(
                !whole,
                memory.turns.contains(&snapshot.turn_number),
                "turn {}: {memory:?}",
                snapshot.turn_number
            );
        }
        assert!(memory.turns.len() >= 3 && memory.omitted.is_empty(), "{memory:?}");
        assert!(context.receipt.within_budget && context.tokens.summary == memory.tokens, "{:?}", context.receipt);
        let message = context.messages.iter().find(|m| m.section == crate::compact::Section::Summary).unwrap();
        assert!(message
            .message
            .content
            .joined_text()
            .contains(&format!("[Turn {0}] asked: Turn {0}: please look", memory.turns[0])));
        assert_eq!(memory.tokens, crate::tokens::count_message(Encoding::O200kBase, &message.message).total as usize);

        let without = session.build(&BuildOptions { memory: None, ..options.clone() }).unwrap().context;
        assert!(without.receipt.memory.is_none() && without.tokens.summary == 0);
        let tight = crate::compact::MemoryOptions { max_tokens: Some(40) };
        let capped =
            session.build(&BuildOptions { memory: Some(tight), ..options }).unwrap().context.receipt.memory.unwrap();
        assert!(
            capped.tokens <= 40 && !capped.omitted.is_empty() && capped.turns.len() < memory.turns.len(),
            "{capped:?}"
        );
    }

    #[test]
    fn turns_get_built_in_summaries_and_recall_brings_back_their_messages() {
        let mut session = agent_with_two_turns();
        let memory = session.memory().unwrap();
        let first = memory.summary(1).unwrap();
        assert!(
            first.summary.starts_with("asked: Find my reservation to Seattle; answered: Reservation ABC123"),
            "{}",
            first.summary
        );
        assert!(first.summary.contains("tools: get_reservation"), "{}", first.summary);
        assert_eq!(session.memory_summary(1000).unwrap().lines().nth(1), Some("[Turn 2] cancelled ABC123"));

        let recalled = serde_json::to_value(session.recall(&json!({"turnNumbers": [1]}), 2000).unwrap()).unwrap();
        let ids: Vec<&str> =
            recalled["turns"][0]["messages"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
        assert_eq!(ids, ["m1", "m2", "m3", "m4"]);
        assert!(recalled["turns"][0]["messages"][1]["text"].as_str().unwrap().starts_with("get_reservation("));

        let found =
            serde_json::to_value(session.recall(&Value::from(r#"{"query": "cancel"}"#), 2000).unwrap()).unwrap();
        assert_eq!(found["results"][0]["id"], "m5");
        assert_eq!(found["results"][0]["turnNumber"], 2);
        assert!(session
            .recall(&json!({"turnNumbers": [3]}), 100)
            .unwrap_err()
            .message
            .contains("turn 3 is not in memory"));
        let no_memory = Session::new("plain", Encoding::O200kBase, 10).unwrap().memory_summary(10).unwrap_err();
        assert!(no_memory.message.contains("no memory"), "{no_memory}");
    }
}
