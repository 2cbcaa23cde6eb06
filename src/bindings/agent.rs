//! Sessions (history + optional memory + loop counter), their memory module, sub-agents, and
//! the one export format they persist as.

use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::{
    format_arg, from_js, new_session, parse_json_text, string_arg, throw, to_js, ConversationHistory, JsResult,
    Options, Shared,
};
use crate::error::{Error, Result};
use crate::memory::{self, recall};
use crate::message::{self, Format};
use crate::session::{Session as CoreSession, TurnInput, DEFAULT_MAX_LOOPS, MAIN_CONTEXT_ID};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
export interface SessionOptions extends HistoryOptions {
  /** Letters, digits, '-', '_', '.' or ':' (default "main"). */
  id?: string;
  /** Agent loops allowed (default 10). */
  maxLoops?: number;
  /** Switches the memory module on (seed 003: only when configured). */
  memory?: boolean | { maxSnapshotChars?: number };
}
export interface ContextSnapshot {
  id: string; turnNumber: number; fullContext: string; summary: string;
  /** The first and last id of the turn's messages. */
  messages?: { from: string; until: string };
}
export interface MemorySummary { id: string; contextId: string; turnNumber: number; summary: string; insights: string[] }
export interface TurnInput {
  /** The workspace the agent rendered this turn. */
  workspaceContext: string;
  /** Default: the turn after the last one recorded. */
  turnNumber?: number;
  /** Default: the built-in summary of the turn's messages. */
  summary?: string;
  insights?: string[];
  /** Refuse a given summary longer than this many tokens (what a summariser was asked for). */
  maxSummaryTokens?: number;
}
export interface TurnSummaryRequest {
  id: string; turnNumber: number; messageIds: string[];
  /** One user message holding the turn's transcript and the instruction, in the requested format. */
  messages: OpenAIMessage[] | AnthropicRequest;
  prompt: string; maxTokens: number; requiredKeys: string[];
}
export interface SearchHit { kind: "snapshot" | "summary" | "message"; id: string; turnNumber: number | null; score: number }
export type RecallInput = { turnNumbers: number[] } | { query: string; limit?: number };
export interface RecalledTurn {
  turnNumber: number; summary: string; fullContext: string;
  messages: Array<{ id: string; role: string; text: string }>;
}
export type RecallResult =
  | { turns: RecalledTurn[]; truncated: boolean }
  | { query: string; results: Array<SearchHit & { text: string }>; truncated: boolean };
export interface SubagentResult { ok: boolean; result: string; context_id: string; loops: number }
export interface MemoryExport { format: "context-compactor/memory"; version: 1; contexts: ContextSnapshot[]; summaries: MemorySummary[] }
export interface SessionExport {
  format: "context-compactor/session"; version: 1;
  id: string; parentId: string | null; messageFormat: Format;
  loops: number; maxLoops: number; subagentsSpawned: number; turnStart: number;
  metadata: Record<string, unknown>;
  history: { encoding: EncodingName; messages: Array<{ id: string; format: Format; message: Message }>; summary: SummaryState };
  memory: MemoryExport | null;
  maxSnapshotChars: number | null;
}
export interface RecallContextToolOpenAI { type: "function"; function: { name: "recall_context"; description: string; parameters: { [key: string]: unknown } } }
export interface RecallContextToolAnthropic { name: "recall_context"; description: string; input_schema: { type: "object"; [key: string]: unknown } }
export type RecallContextTool = RecallContextToolOpenAI | RecallContextToolAnthropic;
/** The `recall_context` tool definition, typed for the named provider. */
export function recallContextTool(format: "openai"): RecallContextToolOpenAI;
export function recallContextTool(format: "anthropic"): RecallContextToolAnthropic;
"#;

/// Reads an export given as an object or as the JSON text of one.
fn export_arg(data: &JsValue) -> Result<Value> {
    match data.as_string() {
        Some(text) => parse_json_text(&text, "the export"),
        None => from_js(data, "the export"),
    }
}

fn count_option(options: &mut Options, key: &str, default: usize, max: usize) -> Result<usize> {
    match options.take(key) {
        None => Ok(default),
        Some(value) => value.as_u64().filter(|n| (1..=max as u64).contains(n)).map(|n| n as usize).ok_or_else(|| {
            Error::invalid_argument(format!(
                "{}.{key} must be a whole number from 1 to {max}, got {value}",
                options.what
            ))
        }),
    }
}

/// An agent's context: its history, an optional memory module, a loop counter and metadata.
/// Sub-agents are sessions of their own, isolated from their parent.
#[wasm_bindgen]
pub struct Session {
    shared: Shared,
}

#[wasm_bindgen]
impl Session {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "SessionOptions")] options: JsValue,
    ) -> JsResult<Session> {
        throw((|| {
            let mut options = Options::read(&options, "session options")?;
            let id = options.take_str("id")?.unwrap_or_else(|| MAIN_CONTEXT_ID.to_string());
            let max_loops =
                count_option(&mut options, "maxLoops", DEFAULT_MAX_LOOPS as usize, u32::MAX as usize)? as u32;
            let memory = options.take("memory");
            let mut session = new_session(&mut options, &id, max_loops)?;
            options.finish()?;
            match memory {
                None | Some(Value::Bool(false)) => {}
                Some(Value::Bool(true)) => session.enable_memory(memory::DEFAULT_MAX_SNAPSHOT_CHARS)?,
                Some(Value::Object(map)) => {
                    let mut memory = Options { map, what: "session options.memory" };
                    let limit =
                        count_option(&mut memory, "maxSnapshotChars", memory::DEFAULT_MAX_SNAPSHOT_CHARS, usize::MAX)?;
                    memory.finish()?;
                    session.enable_memory(limit)?;
                }
                Some(other) => {
                    return Err(Error::invalid_argument(format!(
                        "session options.memory must be a boolean or an object, got {}",
                        message::json::type_name(&other)
                    )))
                }
            }
            Ok(Session { shared: Shared::new(session) })
        })())
    }

    /// A session from `export()`'s output (an object or its JSON text). A corrupt, truncated or
    /// newer export throws and builds nothing.
    #[wasm_bindgen(js_name = import)]
    pub fn import(#[wasm_bindgen(unchecked_param_type = "SessionExport | string")] data: JsValue) -> JsResult<Session> {
        throw((|| Ok(Session { shared: Shared::new(CoreSession::import(export_arg(&data)?)?) }))())
    }

    /// History, summaries, memory, counters and metadata, as one versioned JSON document.
    #[wasm_bindgen(unchecked_return_type = "SessionExport")]
    pub fn export(&self) -> JsResult<JsValue> {
        throw(self.shared.get().and_then(|s| to_js(&s.export()?)))
    }

    #[wasm_bindgen(getter)]
    pub fn id(&self) -> JsResult<String> {
        throw(self.shared.get().map(|s| s.id().to_string()))
    }

    #[wasm_bindgen(getter, js_name = parentId)]
    pub fn parent_id(&self) -> JsResult<Option<String>> {
        throw(self.shared.get().map(|s| s.parent_id().map(str::to_string)))
    }

    #[wasm_bindgen(getter)]
    pub fn loops(&self) -> JsResult<u32> {
        throw(self.shared.get().map(|s| s.loops()))
    }

    #[wasm_bindgen(getter, js_name = maxLoops)]
    pub fn max_loops(&self) -> JsResult<u32> {
        throw(self.shared.get().map(|s| s.max_loops()))
    }

    /// The session's history (the same log, whichever object shows it).
    #[wasm_bindgen(getter)]
    pub fn history(&self) -> ConversationHistory {
        ConversationHistory { session: self.shared.clone() }
    }

    /// The memory module, or `undefined` when the session was made without one.
    #[wasm_bindgen(getter)]
    pub fn memory(&self) -> JsResult<Option<MemoryModule>> {
        throw(self.shared.get().map(|s| s.memory().map(|_| MemoryModule { shared: self.shared.clone() })))
    }

    #[wasm_bindgen(getter, unchecked_return_type = "Record<string, unknown>")]
    pub fn metadata(&self) -> JsResult<JsValue> {
        throw(self.shared.get().and_then(|s| to_js(&s.metadata)))
    }

    #[wasm_bindgen(setter)]
    pub fn set_metadata(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Record<string, unknown>")] metadata: JsValue,
    ) -> JsResult<()> {
        throw((|| match from_js(&metadata, "metadata")? {
            Value::Object(map) => {
                self.shared.get()?.metadata = map;
                Ok(())
            }
            other => Err(Error::invalid_argument(format!(
                "metadata must be an object, got {}",
                message::json::type_name(&other)
            ))),
        })())
    }

    /// Counts one agent loop; past `maxLoops` it throws.
    #[wasm_bindgen(js_name = nextLoop)]
    pub fn next_loop(&self) -> JsResult<u32> {
        throw(self.shared.get().and_then(|mut s| s.next_loop()))
    }

    /// A child session (`subagent-` and 8 hex digits) whose history starts with `task`,
    /// isolated from this one.
    #[wasm_bindgen(js_name = spawnSubagent)]
    pub fn spawn_subagent(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] task: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ maxLoops?: number }")] options: JsValue,
    ) -> JsResult<Session> {
        throw((|| {
            let task = string_arg(&task, "the task")?;
            let mut options = Options::read(&options, "sub-agent options")?;
            let max_loops =
                count_option(&mut options, "maxLoops", DEFAULT_MAX_LOOPS as usize, u32::MAX as usize)? as u32;
            options.finish()?;
            let child = self.shared.get()?.spawn_subagent(&task, max_loops)?;
            Ok(Session { shared: Shared::new(child) })
        })())
    }

    /// What this sub-agent hands its parent: `{ ok, result, context_id, loops }`.
    #[wasm_bindgen(js_name = subagentResult, unchecked_return_type = "SubagentResult")]
    pub fn subagent_result(&self) -> JsResult<JsValue> {
        throw(self.shared.get().and_then(|s| to_js(&s.subagent_result())))
    }

    /// The result as the tool message that answers the parent's call `callId`.
    #[wasm_bindgen(js_name = subagentToolResult, unchecked_return_type = "Message")]
    pub fn subagent_tool_result(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] call_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Format")] format: JsValue,
    ) -> JsResult<JsValue> {
        throw((|| {
            let call_id = string_arg(&call_id, "the call id")?;
            let session = self.shared.get()?;
            let format = format_arg(&format, session.format)?;
            let message = session.subagent_tool_result(&call_id, format)?;
            let single = message::emit_one(&message, format);
            to_js(&single.ok_or_else(|| Error::internal("a tool result could not be written out"))?)
        })())
    }
}

/// Seed 003's MemoryModule: per-turn snapshots of the workspace with their summaries, the
/// cumulative summary for the prompt, keyword search and `recall_context`.
#[wasm_bindgen]
pub struct MemoryModule {
    shared: Shared,
}

#[wasm_bindgen]
impl MemoryModule {
    /// Recorded turn numbers, in order.
    #[wasm_bindgen(getter, unchecked_return_type = "number[]")]
    pub fn turns(&self) -> JsResult<JsValue> {
        throw(
            self.shared
                .get()
                .and_then(|s| to_js(&s.memory().map(|m| m.turns().collect::<Vec<_>>()).unwrap_or_default())),
        )
    }

    #[wasm_bindgen(getter, unchecked_return_type = "ContextSnapshot[]")]
    pub fn contexts(&self) -> JsResult<JsValue> {
        throw(
            self.shared
                .get()
                .and_then(|s| to_js(&s.memory().map(|m| m.contexts().collect::<Vec<_>>()).unwrap_or_default())),
        )
    }

    #[wasm_bindgen(getter, unchecked_return_type = "MemorySummary[]")]
    pub fn summaries(&self) -> JsResult<JsValue> {
        throw(
            self.shared
                .get()
                .and_then(|s| to_js(&s.memory().map(|m| m.summaries().collect::<Vec<_>>()).unwrap_or_default())),
        )
    }

    /// Ends a turn: stores the workspace snapshot, its summary (the built-in one unless given)
    /// and the messages appended since the last turn. On error nothing changes.
    #[wasm_bindgen(js_name = recordTurn, unchecked_return_type = "ContextSnapshot")]
    pub fn record_turn(&self, #[wasm_bindgen(unchecked_param_type = "TurnInput")] input: JsValue) -> JsResult<JsValue> {
        throw((|| {
            let input: TurnInput = serde_json::from_value(from_js(&input, "the turn")?)
                .map_err(|e| Error::invalid_argument(format!("invalid turn: {e}")))?;
            let snapshot = self.shared.get()?.record_turn(input)?;
            to_js(&snapshot)
        })())
    }

    /// The request a plugged-in summariser answers for the turn under way.
    #[wasm_bindgen(js_name = turnSummaryRequest, unchecked_return_type = "TurnSummaryRequest")]
    pub fn turn_summary_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace_context: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ format?: Format; maxTokens?: number }")] options: JsValue,
    ) -> JsResult<JsValue> {
        throw((|| {
            let workspace = string_arg(&workspace_context, "the workspace context")?;
            let mut options = Options::read(&options, "options")?;
            let format = options.take_str("format")?;
            let max_tokens = count_option(&mut options, "maxTokens", 300, 100_000)? as u32;
            options.finish()?;
            let session = self.shared.get()?;
            let format = format.map_or(Ok(session.format), |f| Format::parse(&f))?;
            to_js(&session.turn_summary_request(&workspace, format, max_tokens)?)
        })())
    }

    /// Seed 003's `[Turn 1] …` lines, the newest kept when they do not all fit `maxTokens` (default 2,000).
    #[wasm_bindgen(js_name = cumulativeSummary)]
    pub fn cumulative_summary(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ maxTokens?: number }")] options: JsValue,
    ) -> JsResult<String> {
        throw((|| {
            let mut options = Options::read(&options, "options")?;
            let max_tokens = count_option(&mut options, "maxTokens", 2_000, usize::MAX)?;
            options.finish()?;
            self.shared.get()?.memory_summary(max_tokens)
        })())
    }

    /// Keyword search (BM25) over snapshots, summaries and every logged message.
    #[wasm_bindgen(unchecked_return_type = "SearchHit[]")]
    pub fn search(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] query: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ limit?: number }")] options: JsValue,
    ) -> JsResult<JsValue> {
        throw((|| {
            let query = string_arg(&query, "the query")?;
            let mut options = Options::read(&options, "options")?;
            let limit = count_option(&mut options, "limit", recall::DEFAULT_LIMIT, 1_000)?;
            options.finish()?;
            let hits = self.shared.get()?.search(&query, limit)?;
            to_js(&hits)
        })())
    }

    /// Executes a `recall_context` call: Anthropic's `input` object or OpenAI's `arguments`
    /// text. The result stays within `maxTokens` (default 4,000). Unknown turns throw `NotFoundError`.
    #[wasm_bindgen(unchecked_return_type = "RecallResult")]
    pub fn recall(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RecallInput | string")] input: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ maxTokens?: number }")] options: JsValue,
    ) -> JsResult<JsValue> {
        throw((|| {
            let input = match input.as_string() {
                Some(text) => Value::String(text),
                None => from_js(&input, "the recall_context input")?,
            };
            let mut options = Options::read(&options, "options")?;
            let max_tokens = count_option(&mut options, "maxTokens", 4_000, usize::MAX)?;
            options.finish()?;
            let result = self.shared.get()?.recall(&input, max_tokens)?;
            to_js(&result)
        })())
    }
}

/// The `recall_context` tool definition, in OpenAI's `tools` shape or Anthropic's.
#[wasm_bindgen(js_name = recallContextTool, unchecked_return_type = "RecallContextTool")]
pub fn recall_context_tool(#[wasm_bindgen(unchecked_param_type = "Format")] format: JsValue) -> JsResult<JsValue> {
    throw((|| match Format::parse(&string_arg(&format, "the format")?)? {
        Format::OpenAi => to_js(&recall::openai_tool()),
        Format::Anthropic => to_js(&recall::anthropic_tool()),
    })())
}

#[wasm_bindgen]
impl ConversationHistory {
    /// The history (with its summary state) as one versioned JSON document: a session export.
    #[wasm_bindgen(unchecked_return_type = "SessionExport")]
    pub fn export(&self) -> JsResult<JsValue> {
        throw(self.session.get().and_then(|s| to_js(&s.export()?)))
    }

    /// A history from `export()`'s output (an object or its JSON text); throws on a corrupt,
    /// truncated or newer export.
    #[wasm_bindgen(js_name = import)]
    pub fn import(
        #[wasm_bindgen(unchecked_param_type = "SessionExport | string")] data: JsValue,
    ) -> JsResult<ConversationHistory> {
        throw((|| Ok(ConversationHistory { session: Shared::new(CoreSession::import(export_arg(&data)?)?) }))())
    }
}
