//! `recall_context`: the tool the model calls to bring back what compaction left out, by turn
//! number (whole snapshots) or by query (ranked snapshots, summaries and messages).

use serde::Serialize;
use serde_json::{json, Value};

use super::search::{DocumentKind, Hit};
use super::{MemoryStore, MessageRange};
use crate::error::{Error, Result};
use crate::tokens::Encoding;

pub const TOOL_NAME: &str = "recall_context";
const DESCRIPTION: &str = "Recall earlier parts of this conversation that are no longer in your context. \
Give turnNumbers to get the full workspace snapshot of those turns, or a query to search snapshots, \
summaries and messages by keywords.";
pub const DEFAULT_LIMIT: usize = 5;
pub const MAX_LIMIT: usize = 20;

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "turnNumbers": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1},
                "description": "Turns to recall in full, e.g. [2] or [3, 4]"
            },
            "query": {"type": "string", "description": "Keywords to search the conversation's memory for"},
            "limit": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "description": "How many search results, at most"}
        },
        "additionalProperties": false
    })
}

/// The tool's definition in `format`'s `tools` shape.
pub fn tool(format: crate::message::Format) -> Value {
    crate::message::tool_definition(format, TOOL_NAME, DESCRIPTION, input_schema())
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RecallRequest {
    Turns(Vec<u32>),
    Query { query: String, limit: usize },
}

/// Reads the tool's input: Anthropic's `input` object, or OpenAI's `arguments` JSON text.
pub fn parse_request(input: &Value) -> Result<RecallRequest> {
    let fields = crate::message::tool_arguments(input, TOOL_NAME, &["turnNumbers", "query", "limit"])?;
    match (fields.get("turnNumbers"), fields.get("query")) {
        (Some(Value::Array(turns)), None) if !turns.is_empty() => {
            let turns = turns
                .iter()
                .map(|t| t.as_u64().filter(|n| *n >= 1).and_then(|n| u32::try_from(n).ok()))
                .collect::<Option<Vec<u32>>>()
                .ok_or_else(|| Error::invalid_argument("recall_context turnNumbers must be whole numbers from 1"))?;
            Ok(RecallRequest::Turns(turns))
        }
        (None, Some(Value::String(query))) if !query.trim().is_empty() => {
            let limit = match fields.get("limit") {
                None | Some(Value::Null) => DEFAULT_LIMIT,
                Some(limit) => {
                    limit.as_u64().filter(|n| (1..=MAX_LIMIT as u64).contains(n)).map(|n| n as usize).ok_or_else(
                        || Error::invalid_argument(format!("recall_context limit must be from 1 to {MAX_LIMIT}")),
                    )?
                }
            };
            Ok(RecallRequest::Query { query: query.clone(), limit })
        }
        (Some(_), Some(_)) => Err(Error::invalid_argument("recall_context takes turnNumbers or a query, not both")),
        _ => Err(Error::invalid_argument("recall_context needs a non-empty turnNumbers list or a non-empty query")),
    }
}

/// What recall reads from the conversation log.
pub trait Log {
    /// A logged message's role and readable text.
    fn message(&self, id: &str) -> Option<(&'static str, String)>;
    /// The ids of a turn's messages, in order.
    fn ids_in(&self, range: &MessageRange) -> Vec<String>;
    /// The turn a logged message belongs to, if it is recorded.
    fn turn_of(&self, id: &str) -> Option<u32>;
}

/// Runs a recall within `max_tokens`: whole turns (snapshot, summary and the turn's messages)
/// or the best search hits.
pub fn execute(
    store: &MemoryStore,
    request: &RecallRequest,
    log: &dyn Log,
    encoding: Encoding,
    max_tokens: usize,
) -> Result<RecallResult> {
    let mut budget = Budget { encoding, left: max_tokens, truncated: false };
    match request {
        RecallRequest::Turns(turns) => {
            let known: Vec<u32> = store.turns().collect();
            if let Some(missing) = turns.iter().find(|t| store.context(**t).is_none()) {
                return Err(Error::not_found(format!(
                    "turn {missing} is not in memory (recorded turns: {})",
                    describe_turns(&known)
                )));
            }
            let mut items = Vec::new();
            for turn in turns {
                let Some(snapshot) = store.context(*turn) else { continue };
                let Some(full_context) = budget.take(&snapshot.full_context) else { break };
                let mut messages = Vec::new();
                for id in snapshot.messages.as_ref().map(|range| log.ids_in(range)).unwrap_or_default() {
                    let Some((role, text)) = log.message(&id) else { continue };
                    let Some(text) = budget.take(&text) else { break };
                    messages.push(RecalledMessage { id, role: role.to_string(), text });
                }
                // A message that did not fit emptied the budget: the next turn's snapshot stops the loop.
                items.push(RecalledTurn {
                    turn_number: *turn,
                    summary: snapshot.summary.clone(),
                    full_context,
                    messages,
                });
            }
            Ok(RecallResult::Turns { turns: items, truncated: budget.truncated })
        }
        RecallRequest::Query { query, limit } => {
            let mut results = Vec::new();
            for hit in store.index().search(query, *limit) {
                let Some(hit_described) = describe_hit(store, log, &hit) else { continue };
                let Some(document) = store.index().document(hit.document) else { continue };
                let text = match document.kind {
                    DocumentKind::Snapshot => {
                        document.turn_number.and_then(|t| store.context(t)).map(|s| s.full_context.clone())
                    }
                    DocumentKind::Summary => document.turn_number.and_then(|t| store.summary(t)).map(|s| {
                        std::iter::once(s.summary.clone())
                            .chain(s.insights.iter().cloned())
                            .collect::<Vec<_>>()
                            .join("\n")
                    }),
                    DocumentKind::Message => log.message(&document.id).map(|(_, text)| text),
                };
                let Some(text) = text else { continue };
                let Some(text) = budget.take(&text) else { break };
                results.push(RecallHit { hit: hit_described, text });
            }
            Ok(RecallResult::Query { query: query.clone(), results, truncated: budget.truncated })
        }
    }
}

/// A search hit as the caller sees it: kind, id, turn (a logged message's from the log) and score.
pub fn describe_hit(store: &MemoryStore, log: &dyn Log, hit: &Hit) -> Option<SearchHit> {
    let document = store.index().document(hit.document)?;
    Some(SearchHit {
        kind: document.kind,
        id: document.id.clone(),
        turn_number: document.turn_number.or_else(|| log.turn_of(&document.id)),
        score: (hit.score * 1000.0).round() / 1000.0,
    })
}

/// One search hit (`memory.search`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SearchHit {
    pub kind: DocumentKind,
    pub id: String,
    pub turn_number: Option<u32>,
    pub score: f64,
}

/// A search hit with its text, within the recall's budget.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RecallHit {
    #[serde(flatten)]
    pub hit: SearchHit,
    pub text: String,
}

/// One logged message of a recalled turn.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RecalledMessage {
    pub id: String,
    pub role: String,
    pub text: String,
}

/// A recalled turn: its snapshot, summary and messages.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct RecalledTurn {
    pub turn_number: u32,
    pub summary: String,
    pub full_context: String,
    pub messages: Vec<RecalledMessage>,
}

/// What `recall_context` returns: whole turns, or search hits; `truncated` when the token limit
/// cut something.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum RecallResult {
    Turns { turns: Vec<RecalledTurn>, truncated: bool },
    Query { query: String, results: Vec<RecallHit>, truncated: bool },
}

fn describe_turns(turns: &[u32]) -> String {
    match (turns.first(), turns.last()) {
        (Some(first), Some(last)) if first == last => first.to_string(),
        (Some(first), Some(last)) => format!("{first}–{last}"),
        _ => "none".into(),
    }
}

struct Budget {
    encoding: Encoding,
    left: usize,
    truncated: bool,
}

impl Budget {
    /// The text, or as much of its head as fits; `None` when nothing fits any more.
    fn take(&mut self, text: &str) -> Option<String> {
        if self.left == 0 {
            self.truncated = true;
            return None;
        }
        let tokens = self.encoding.count(text);
        if tokens <= self.left {
            self.left -= tokens;
            return Some(text.to_string());
        }
        self.truncated = true;
        let note_tokens = 16;
        let room = self.left.saturating_sub(note_tokens);
        let mut chars = room.saturating_mul(3);
        let total_chars = text.chars().count();
        loop {
            let head: String = text.chars().take(chars).collect();
            if chars == 0 || self.encoding.count(&head) <= room {
                self.left = 0;
                return Some(format!(
                    "{head}\n[… {} more characters cut to fit the recall limit]",
                    total_chars - chars.min(total_chars)
                ));
            }
            chars = chars * 3 / 4;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn to_value(result: RecallResult) -> Value {
        serde_json::to_value(result).unwrap()
    }

    /// One logged message, m7, in turn 2.
    struct OneMessage;

    impl Log for OneMessage {
        fn message(&self, id: &str) -> Option<(&'static str, String)> {
            (id == "m7").then(|| ("user", "please cancel reservation ABC123".to_string()))
        }
        fn ids_in(&self, range: &MessageRange) -> Vec<String> {
            if range.from == "m7" {
                vec!["m7".into()]
            } else {
                vec![]
            }
        }
        fn turn_of(&self, id: &str) -> Option<u32> {
            (id == "m7").then_some(2)
        }
    }

    fn store() -> MemoryStore {
        let mut store = MemoryStore::default();
        store
            .record_turn(1, "Files: [main.ts]\nthe flight to Seattle".into(), "looked up flights".into(), vec![], None)
            .unwrap();
        store
            .record_turn(
                2,
                "benchmark.ts shows a slow loop ".repeat(200),
                "found the bottleneck".into(),
                vec!["loop in utils.ts".into()],
                Some(MessageRange { from: "m7".into(), until: "m7".into() }),
            )
            .unwrap();
        store.index_message("m7", "please cancel reservation ABC123");
        store
    }

    #[test]
    fn both_tool_shapes_describe_the_same_schema() {
        use crate::message::Format;
        assert_eq!(tool(Format::OpenAi)["function"]["parameters"], tool(Format::Anthropic)["input_schema"]);
        assert_eq!(tool(Format::Anthropic)["name"], TOOL_NAME);
    }

    #[test]
    fn recall_by_turn_returns_snapshots_and_refuses_unknown_turns() {
        let store = store();
        let out = to_value(
            execute(
                &store,
                &parse_request(&json!({"turnNumbers": [1]})).unwrap(),
                &OneMessage,
                Encoding::O200kBase,
                1000,
            )
            .unwrap(),
        );
        assert_eq!(out["turns"][0]["fullContext"], "Files: [main.ts]\nthe flight to Seattle");
        let out =
            to_value(execute(&store, &RecallRequest::Turns(vec![2]), &OneMessage, Encoding::O200kBase, 5000).unwrap());
        assert_eq!(
            out["turns"][0]["messages"],
            json!([{"id": "m7", "role": "user", "text": "please cancel reservation ABC123"}])
        );
        let error =
            execute(&store, &RecallRequest::Turns(vec![9]), &OneMessage, Encoding::O200kBase, 1000).unwrap_err();
        assert!(error.message.contains("turn 9 is not in memory (recorded turns: 1–2)"), "{error}");
    }

    #[test]
    fn recall_by_query_ranks_and_reaches_logged_messages() {
        let store = store();
        let request = parse_request(&Value::from(r#"{"query": "cancel reservation"}"#)).unwrap();
        let out = to_value(execute(&store, &request, &OneMessage, Encoding::O200kBase, 1000).unwrap());
        assert_eq!(out["results"][0]["id"], "m7");
        assert_eq!(out["results"][0]["kind"], "message");
        assert_eq!(out["results"][0]["turnNumber"], 2);
    }

    #[test]
    fn results_respect_the_token_limit() {
        let store = store();
        let out = to_value(
            execute(&store, &RecallRequest::Turns(vec![2, 1]), &OneMessage, Encoding::O200kBase, 100).unwrap(),
        );
        assert_eq!(out["truncated"], true);
        let text = out["turns"][0]["fullContext"].as_str().unwrap();
        assert!(Encoding::O200kBase.count(text) <= 100, "{}", Encoding::O200kBase.count(text));
        assert!(text.contains("more characters cut"));
    }

    #[test]
    fn bad_requests_are_refused_with_reasons() {
        for (input, reason) in [
            (json!({}), "needs a non-empty"),
            (json!({"turnNumbers": [0]}), "whole numbers from 1"),
            (json!({"query": "x", "turnNumbers": [1]}), "not both"),
            (json!({"query": "x", "limit": 99}), "limit must be"),
            (json!({"query": "x", "depth": 1}), "no parameter `depth`"),
            (Value::from("{oops"), "not valid JSON"),
        ] {
            let error = parse_request(&input).unwrap_err();
            assert!(error.message.contains(reason), "{input}: {error}");
        }
    }
}
