//! `loadConversation`: a conversation file (a message list, a Claude Code log, a SWE-agent
//! trajectory, tau-bench runs) read into messages ready for `appendMany`, in one call.

use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::{string_arg, throw, to_js, JsResult, Options};
use crate::error::{Error, Result};
use crate::load::{self, LoadOptions};
use crate::message::json::type_name;

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
export interface LoadOptions {
  /** The file's name: a hint (`.jsonl`, `.traj`); the content decides. */
  name?: string;
  /** Which run of a tau-bench run list (default 0; `run.count` says how many there are). */
  run?: number;
}
export type ConversationSource = "openai" | "anthropic" | "claude-code" | "swe-agent" | "tau-bench";
/** Where a message or a skipped record is in the file: a line (JSON Lines, from 1), or a JSON path (`history[3]`). */
export interface LoadOrigin {
  line?: number;
  /** Every line, for a message merged from several records (one API response Claude Code logged in parts). */
  lines?: number[];
  record?: string;
}
export interface LoadSkipped { line?: number; record?: string; reason: string }
/**
 * `meta`: text the agent injected as a user message; `compactSummary`: the summary the agent wrote
 * when it compacted; `localCommand`: a slash command or its output; `compactBoundary`: the agent
 * compacted its context before message `index`.
 */
export type LoadMarkKind = "meta" | "compactSummary" | "localCommand" | "compactBoundary";
export interface LoadMark {
  /** The message, by its position in what `appendMany` appends (Anthropic's `system` first). */
  index: number;
  kind: LoadMarkKind;
  line?: number;
  record?: string;
  /** compactBoundary: what triggered the compaction and the tokens before it, as the agent logged them. */
  trigger?: string;
  preTokens?: number;
}
export interface LoadedConversationBase {
  source: ConversationSource;
  /** Per message, in the order `appendMany` appends them (the ids it returns), where it came from. */
  origins: LoadOrigin[];
  /** Lines or records not in `messages`, and why (not messages, sub-agents' sidechains, rewound branches). */
  skipped: LoadSkipped[];
  marks: LoadMark[];
  notes: string[];
  /** tau-bench: the run loaded, and how many the file has. */
  run?: { index: number; count: number; taskId?: unknown };
}
/** A conversation read from a file: `history.appendMany(loaded.messages, loaded.format)` takes it as it is. */
export type LoadedConversation =
  | (LoadedConversationBase & { format: "openai"; messages: OpenAIMessage[] })
  | (LoadedConversationBase & { format: "anthropic"; messages: AnthropicRequest });
"#;

/// Reads a conversation file's text (or its bytes, as UTF-8). A file that is not a conversation,
/// or a malformed one, is an `InvalidArgumentError` or `InvalidMessageError` naming the line or
/// record and the field.
#[wasm_bindgen(js_name = loadConversation, unchecked_return_type = "LoadedConversation")]
pub fn load_conversation(
    #[wasm_bindgen(unchecked_param_type = "string | Uint8Array")] text: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "LoadOptions")] options: JsValue,
) -> JsResult<JsValue> {
    throw((|| {
        let text = match text.dyn_ref::<js_sys::Uint8Array>() {
            Some(bytes) => String::from_utf8_lossy(&bytes.to_vec()).into_owned(),
            None => string_arg(&text, "the file's text")?,
        };
        let options = load_options(&options)?;
        to_js(&load::load(&text, &options)?)
    })())
}

fn load_options(value: &JsValue) -> Result<LoadOptions> {
    let mut options = Options::read(value, "options")?;
    let name = options.take_str("name")?;
    let run = match options.take("run") {
        None => None,
        Some(Value::Number(n)) if n.as_u64().is_some() => {
            n.as_u64().and_then(|n| usize::try_from(n).ok())
        }
        Some(other) => {
            return Err(Error::invalid_argument(format!(
                "options.run must be a run's index (0, 1, …), got {}",
                match &other {
                    Value::Number(n) => n.to_string(),
                    other => type_name(other).to_string(),
                }
            )))
        }
    };
    options.finish()?;
    Ok(LoadOptions { name, run })
}
