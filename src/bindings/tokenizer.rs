//! `Tokenizer` for JS: plain text and whole prompts, counted with one encoding.

use serde::Deserialize;
use serde_json::Value;
use wasm_bindgen::prelude::*;

use super::conversion::{from_js, from_js_finite, read_finite_with, string_arg, to_js};
use super::errors::JsResult;
use crate::message::Format;
use crate::tokens::{self, Encoding, RequestOptions};

/// `countMessages`' options.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub(crate) struct CountOptions {
    /// The messages' format (default OpenAI's).
    format: Option<Format>,
    /// Tool definitions, counted as OpenAI renders them (src/tokens/tools.rs).
    #[cfg_attr(test, ts(type = "ToolDefinition[]", optional))]
    tools: Option<Value>,
}

/// Counts tokens with one encoding: plain text, or whole prompts by OpenAI's chat rules.
#[wasm_bindgen]
pub struct Tokenizer {
    encoding: Encoding,
}

#[wasm_bindgen]
impl Tokenizer {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_param_type = "EncodingName")] encoding: JsValue) -> JsResult<Tokenizer> {
        Ok(Tokenizer { encoding: Encoding::parse(&string_arg(&encoding, "the encoding")?)? })
    }

    #[wasm_bindgen(getter, unchecked_return_type = "EncodingName")]
    pub fn encoding(&self) -> String {
        self.encoding.as_str().to_string()
    }

    /// Tokens in `text` (special-token text counts as ordinary text, as in a chat message).
    pub fn count(&self, #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue) -> JsResult<u32> {
        let text = string_arg(&text, "text")?;
        Ok(u32::try_from(self.encoding.count(&text)).unwrap_or(u32::MAX))
    }

    /// The token ids of `text`.
    pub fn encode(&self, #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue) -> JsResult<Vec<u32>> {
        let text = string_arg(&text, "text")?;
        Ok(self.encoding.encode(&text)?)
    }

    /// A whole prompt, counted in one call: every message, the tools, the reply priming.
    #[wasm_bindgen(js_name = countMessages, unchecked_return_type = "ChatTokenCount")]
    pub fn count_messages(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "CountableMessage[] | AnthropicMessagesInput | ReadonlyArray<MessageInput>"
        )]
        messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CountOptions")] options: JsValue,
    ) -> JsResult<JsValue> {
        let options: CountOptions = super::conversion::options(&options, "options")?;
        let format = options.format.unwrap_or(Format::OpenAi);
        let count = tokens::count_message_list(self.encoding, from_js(&messages, "messages")?, format, options.tools)?;
        Ok(to_js(&count)?)
    }

    /// A whole request counted as the provider bills it: system, messages, tool definitions,
    /// forcing and reply priming, broken down, with every estimate said.
    #[wasm_bindgen(js_name = countRequest, unchecked_return_type = "RequestTokenCount")]
    pub fn count_request(
        &self,
        #[wasm_bindgen(
            unchecked_param_type = "TokenCountRequest | ResponsesCountRequest | ReadonlyArray<CountableMessage | MessageLike>"
        )]
        request: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RequestCountOptions")] options: JsValue,
    ) -> JsResult<JsValue> {
        let options = if options.is_undefined() {
            RequestOptions::default()
        } else {
            read_finite_with(from_js_finite(&options, "options")?, "invalid options", RequestOptions::read)?
        };
        Ok(to_js(&tokens::count_request(self.encoding, from_js(&request, "the request")?, &options)?)?)
    }
}
