//! The JavaScript surface, and the only module that knows wasm-bindgen. One file per JS class
//! (`tokenizer`, `history`, `session`, `memory`), the JSON boundary (`conversion`), the error
//! bridge (`errors`) and the JS objects a build reuses (`interning`); the functions below.
//! No domain logic: every method reads its arguments, calls the core, and hands back its result.

mod allocator;
mod conversion;
mod errors;
mod history;
mod interning;
mod load;
mod memory_module;
mod records;
mod recovery;
mod session;
mod session_state;
mod tokenizer;
#[cfg(test)]
mod typescript;

use wasm_bindgen::prelude::*;

pub use errors::set_error_factory;
pub use history::ConversationHistory;
pub use load::load_conversation;
pub use memory_module::{recall_context_tool, MemoryModule};
pub use recovery::recover_after_trap;
pub use session::Session;
pub use session_state::{file_reader_tool, supported_languages};
pub use tokenizer::Tokenizer;

use crate::compact::{profile, validate};
use crate::error::Error;
use crate::message::{self, Format};
use crate::tokens::Encoding;
use conversion::{from_js, string_arg, to_js};
use errors::JsResult;

/// The declarations of the values the package takes and returns: those with a Rust type are
/// generated from it (`typescript.rs`), the providers' message shapes and the overloads are
/// written by hand.
#[wasm_bindgen(typescript_custom_section)]
const GENERATED_TYPES: &'static str = include_str!("generated.d.ts");

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = include_str!("types.d.ts");

/// Every rule of the provider's API that a message list breaks (empty when it is valid).
#[wasm_bindgen(js_name = validateMessages, unchecked_return_type = "Violation[]")]
pub fn validate_messages(
    #[wasm_bindgen(unchecked_param_type = "AnthropicRequest | ReadonlyArray<MessageInput>")] messages: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Format")] format: JsValue,
) -> JsResult<JsValue> {
    let format = Format::parse(&string_arg(&format, "the format")?)?;
    let value = from_js(&messages, "messages")?;
    let violations = validate(&value, format).err().unwrap_or_default();
    Ok(to_js(&violations)?)
}

/// The built-in profiles' names (models, and the `init` and `execute` agents).
#[wasm_bindgen(js_name = profileNames)]
pub fn profile_names() -> Vec<String> {
    profile::builtin_names().into_iter().map(str::to_string).collect()
}

/// The profile for a model: its exact name or the longest built-in prefix.
#[wasm_bindgen(js_name = resolveProfile, unchecked_return_type = "Profile")]
pub fn resolve_profile(#[wasm_bindgen(unchecked_param_type = "string")] model: JsValue) -> JsResult<JsValue> {
    Ok(to_js(&profile::resolve(&string_arg(&model, "the model")?)?)?)
}

/// Installs an encoding's rank table (the `.cctab` files shipped with the package) in the lite
/// build, which embeds none; the full build already has both and ignores the call.
#[wasm_bindgen(js_name = loadRanks)]
pub fn load_ranks(
    #[wasm_bindgen(unchecked_param_type = "EncodingName")] encoding: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Uint8Array | ArrayBuffer")] table: JsValue,
) -> JsResult<()> {
    let name = string_arg(&encoding, "the encoding")?;
    let bpe = Encoding::named(&name).ok().and_then(Encoding::bpe).ok_or_else(|| {
        Error::invalid_argument(format!("no rank table for {name:?}: expected \"o200k_base\" or \"cl100k_base\""))
    })?;
    let table = conversion::bytes_arg(&table, "the rank table", MAX_RANK_TABLE_BYTES)?;
    crate::bpe::load_ranks(bpe, &table).map_err(|e| Error::invalid_argument(e.to_string()))?;
    Ok(())
}

/// Larger than any rank table this build ships (o200k_base's is 2.2 MB): bigger bytes are refused
/// unread.
const MAX_RANK_TABLE_BYTES: usize = 16 << 20;

/// Converts a message list between formats, for what both can express.
#[wasm_bindgen(js_name = convertMessages, unchecked_return_type = "AnyMessages")]
pub fn convert_messages(
    #[wasm_bindgen(unchecked_param_type = "AnthropicRequest | ReadonlyArray<MessageInput>")] messages: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Format")] from: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Format")] to: JsValue,
) -> JsResult<JsValue> {
    let from = Format::parse(&string_arg(&from, "from")?)?;
    let to = Format::parse(&string_arg(&to, "to")?)?;
    Ok(to_js(&message::convert(from_js(&messages, "messages")?, from, to)?)?)
}
