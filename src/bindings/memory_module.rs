//! `MemoryModule` for JS, and the `recall_context` tool definition.

use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::conversion::{count_in, from_js, string_arg, to_js, typed};
use super::errors::JsResult;
use super::session::Shared;
use crate::memory::recall;
use crate::message::{self, Format};
use crate::session::{
    TurnInput, CUMULATIVE_SUMMARY_MAX_TOKENS, RECALL_MAX_TOKENS, TURN_SUMMARY_MAX_TOKENS, TURN_SUMMARY_MAX_TOKENS_LIMIT,
};

/// Options that only bound an output: `{ maxTokens?, limit?, format? }`, as each method takes.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct MaxTokens {
    max_tokens: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct SearchOptions {
    limit: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct TurnRequestOptions {
    format: Option<Format>,
    max_tokens: Option<u64>,
}

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct AnswerOptions {
    format: Option<Format>,
    max_tokens: Option<u64>,
}

/// The optional memory: per-turn snapshots of the workspace with their summaries, the
/// cumulative summary for the prompt, keyword search and `recall_context`.
#[wasm_bindgen]
pub struct MemoryModule {
    pub(crate) shared: Shared,
}

#[wasm_bindgen]
impl MemoryModule {
    /// Recorded turn numbers, in order.
    #[wasm_bindgen(getter, unchecked_return_type = "number[]")]
    pub fn turns(&self) -> JsResult<JsValue> {
        let session = self.shared.get()?;
        Ok(to_js(&session.memory().map(|m| m.turns().collect::<Vec<_>>()).unwrap_or_default())?)
    }

    #[wasm_bindgen(getter, unchecked_return_type = "ContextSnapshot[]")]
    pub fn contexts(&self) -> JsResult<JsValue> {
        let session = self.shared.get()?;
        Ok(to_js(&session.memory().map(|m| m.contexts().collect::<Vec<_>>()).unwrap_or_default())?)
    }

    #[wasm_bindgen(getter, unchecked_return_type = "MemorySummary[]")]
    pub fn summaries(&self) -> JsResult<JsValue> {
        let session = self.shared.get()?;
        Ok(to_js(&session.memory().map(|m| m.summaries().collect::<Vec<_>>()).unwrap_or_default())?)
    }

    /// Ends a turn: stores the workspace snapshot, its summary (the built-in one unless given)
    /// and the messages appended since the last turn. On error nothing changes.
    #[wasm_bindgen(js_name = recordTurn, unchecked_return_type = "ContextSnapshot")]
    pub fn record_turn(&self, #[wasm_bindgen(unchecked_param_type = "TurnInput")] input: JsValue) -> JsResult<JsValue> {
        let input: TurnInput = typed(&input, "turn")?;
        Ok(to_js(&self.shared.get()?.record_turn(input)?)?)
    }

    /// The request a plugged-in summariser answers for the turn under way.
    #[wasm_bindgen(js_name = turnSummaryRequest, unchecked_return_type = "TurnSummaryRequest")]
    pub fn turn_summary_request(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] workspace_context: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ format?: Format; maxTokens?: number }")] options: JsValue,
    ) -> JsResult<JsValue> {
        let workspace = string_arg(&workspace_context, "the workspace context")?;
        let options: TurnRequestOptions = super::conversion::options(&options, "options")?;
        let max_tokens = count_in(
            options.max_tokens,
            "options.maxTokens",
            TURN_SUMMARY_MAX_TOKENS.into(),
            TURN_SUMMARY_MAX_TOKENS_LIMIT.into(),
        )?;
        let session = self.shared.get()?;
        let format = options.format.unwrap_or(session.format);
        Ok(to_js(&session.turn_summary_request(&workspace, format, max_tokens as u32)?)?)
    }

    /// The `[Turn 1] …` lines, the newest kept when they do not all fit `maxTokens` (default 2,000).
    #[wasm_bindgen(js_name = cumulativeSummary)]
    pub fn cumulative_summary(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "{ maxTokens?: number }")] options: JsValue,
    ) -> JsResult<String> {
        let options: MaxTokens = super::conversion::options(&options, "options")?;
        let max_tokens =
            count_in(options.max_tokens, "options.maxTokens", CUMULATIVE_SUMMARY_MAX_TOKENS as u64, u64::MAX)?;
        Ok(self.shared.get()?.memory_summary(usize::try_from(max_tokens).unwrap_or(usize::MAX))?)
    }

    /// Keyword search (BM25) over snapshots, summaries and every logged message.
    #[wasm_bindgen(unchecked_return_type = "SearchHit[]")]
    pub fn search(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] query: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ limit?: number }")] options: JsValue,
    ) -> JsResult<JsValue> {
        let query = string_arg(&query, "the query")?;
        let options: SearchOptions = super::conversion::options(&options, "options")?;
        let limit = count_in(options.limit, "options.limit", recall::DEFAULT_LIMIT as u64, 1_000)?;
        Ok(to_js(&self.shared.get()?.search(&query, limit as usize)?)?)
    }

    /// Executes a `recall_context` call: Anthropic's `input` object or OpenAI's `arguments`
    /// text. The result stays within `maxTokens` (default 4,000). Unknown turns throw `NotFoundError`.
    #[wasm_bindgen(unchecked_return_type = "RecallResult")]
    pub fn recall(
        &self,
        #[wasm_bindgen(unchecked_param_type = "RecallInput | string")] input: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ maxTokens?: number }")] options: JsValue,
    ) -> JsResult<JsValue> {
        let input = match input.as_string() {
            Some(text) => Value::String(text),
            None => from_js(&input, "the recall_context input")?,
        };
        let options: MaxTokens = super::conversion::options(&options, "options")?;
        let max_tokens = count_in(options.max_tokens, "options.maxTokens", RECALL_MAX_TOKENS as u64, u64::MAX)?;
        Ok(to_js(&self.shared.get()?.recall(&input, usize::try_from(max_tokens).unwrap_or(usize::MAX))?)?)
    }

    /// Answers a model's `recall_context` call (OpenAI's tool call or Anthropic's `tool_use`
    /// block) with the message to append: the result, or an error the model can correct, marked
    /// as one. In `format` (default: the call's provider).
    #[wasm_bindgen(js_name = answerRecall, unchecked_return_type = "Message")]
    pub fn answer_recall(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ToolCallInput")] call: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ format?: Format; maxTokens?: number }")] options: JsValue,
    ) -> JsResult<JsValue> {
        let call = from_js(&call, "the recall_context call")?;
        let options: AnswerOptions = super::conversion::options(&options, "options")?;
        let max_tokens = count_in(options.max_tokens, "options.maxTokens", RECALL_MAX_TOKENS as u64, u64::MAX)?;
        let message = self.shared.get()?.answer_recall(
            &call,
            options.format,
            usize::try_from(max_tokens).unwrap_or(usize::MAX),
        )?;
        let single = message::emit_one(&message, message.source)
            .ok_or_else(|| crate::error::Error::internal("a tool result could not be written out"))?;
        Ok(to_js(&single)?)
    }
}

/// The `recall_context` tool definition, in OpenAI's `tools` shape or Anthropic's.
#[wasm_bindgen(js_name = recallContextTool, unchecked_return_type = "RecallContextTool")]
pub fn recall_context_tool(#[wasm_bindgen(unchecked_param_type = "Format")] format: JsValue) -> JsResult<JsValue> {
    let tool = recall::tool(Format::parse(&string_arg(&format, "the format")?)?);
    Ok(to_js(&tool)?)
}
