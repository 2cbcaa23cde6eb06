//! `loadConversation`: a conversation file (a message list, a Claude Code log, a SWE-agent
//! trajectory, tau-bench runs) read into messages ready for `appendMany`, in one call.

use wasm_bindgen::prelude::*;

use super::conversion::{options, string_arg, to_js};
use super::errors::JsResult;
use crate::load::{self, LoadOptions};

/// Reads a conversation file's text (or its bytes, as UTF-8). A file that is not a conversation,
/// or a malformed one, is an `InvalidArgumentError` or `InvalidMessageError` naming the line or
/// record and the field.
#[wasm_bindgen(js_name = loadConversation, unchecked_return_type = "LoadedConversation")]
pub fn load_conversation(
    #[wasm_bindgen(unchecked_param_type = "string | Uint8Array")] text: JsValue,
    #[wasm_bindgen(unchecked_optional_param_type = "LoadOptions")] load_options: JsValue,
) -> JsResult<JsValue> {
    let text = match text.dyn_ref::<js_sys::Uint8Array>() {
        Some(bytes) => String::from_utf8_lossy(&bytes.to_vec()).into_owned(),
        None => string_arg(&text, "the file's text")?,
    };
    let load_options: LoadOptions = options(&load_options, "options")?;
    Ok(to_js(&load::load(&text, &load_options)?)?)
}
