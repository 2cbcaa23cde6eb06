//! `Session`'s artifacts and agent state (`AppState`), and the
//! `file_reader` tool definition.

use serde::Deserialize;
use wasm_bindgen::prelude::*;

use super::conversion::{from_js, string_arg, to_js};
use super::errors::JsResult;
use super::session::Session;
use crate::error::Error;
use crate::message::{self, Format};
use crate::state::artifacts;
use crate::state::{AgentState, ArtifactInput};

#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct ReaderOptions {
    format: Option<Format>,
}

#[wasm_bindgen]
impl Session {
    /// Saves an artifact: its language checked against the supported list (an unsupported one
    /// falls back to python, reported as `languageFallback`, or throws with `strictLanguage`).
    /// A duplicate id throws `ConflictError`; nothing changes on error.
    #[wasm_bindgen(js_name = saveArtifact, unchecked_return_type = "SavedArtifact")]
    pub fn save_artifact(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ArtifactInput")] input: JsValue,
    ) -> JsResult<JsValue> {
        let input: ArtifactInput = super::conversion::options(&input, "the artifact")?;
        Ok(to_js(&self.shared.get()?.save_artifact(input)?)?)
    }

    /// One artifact with its content; an unknown id throws `NotFoundError`.
    #[wasm_bindgen(unchecked_return_type = "Artifact")]
    pub fn artifact(&self, #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue) -> JsResult<JsValue> {
        let id = string_arg(&id, "the artifact id")?;
        Ok(to_js(self.shared.get()?.artifact(&id)?)?)
    }

    /// Every artifact, in the order they were saved.
    #[wasm_bindgen(unchecked_return_type = "Artifact[]")]
    pub fn artifacts(&self) -> JsResult<JsValue> {
        Ok(to_js(self.shared.get()?.artifacts())?)
    }

    /// Answers a model's `file_reader` call with the tool result to append: the artifact whole,
    /// or an error the model can correct, marked as one. In `format` (default: the call's).
    #[wasm_bindgen(js_name = answerFileReader, unchecked_return_type = "Message")]
    pub fn answer_file_reader(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ToolCallInput")] call: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ format?: Format }")] options: JsValue,
    ) -> JsResult<JsValue> {
        let call = from_js(&call, "the file_reader call")?;
        let options: ReaderOptions = super::conversion::options(&options, "options")?;
        let message = self.shared.get()?.answer_file_reader(&call, options.format)?;
        let single = message::emit_one(&message, message.source)
            .ok_or_else(|| Error::internal("a tool result could not be written out"))?;
        Ok(to_js(&single)?)
    }

    /// The agent state with the context ids and the loop counter.
    #[wasm_bindgen(unchecked_return_type = "AppState")]
    pub fn state(&self) -> JsResult<JsValue> {
        Ok(to_js(&self.shared.get()?.app_state())?)
    }

    /// Replaces the agent state (fields left out are empty), checked first.
    #[wasm_bindgen(js_name = setState)]
    pub fn set_state(&self, #[wasm_bindgen(unchecked_param_type = "AgentState")] state: JsValue) -> JsResult<()> {
        let state: AgentState = super::conversion::options(&state, "the state")?;
        Ok(self.shared.get()?.set_agent_state(state)?)
    }
}

/// The `file_reader` tool definition, in OpenAI's `tools` shape or Anthropic's.
#[wasm_bindgen(js_name = fileReaderTool, unchecked_return_type = "FileReaderTool")]
pub fn file_reader_tool(#[wasm_bindgen(unchecked_param_type = "Format")] format: JsValue) -> JsResult<JsValue> {
    let tool = artifacts::tool(Format::parse(&string_arg(&format, "the format")?)?);
    Ok(to_js(&tool)?)
}

/// The languages an artifact may have.
#[wasm_bindgen(js_name = supportedLanguages)]
pub fn supported_languages() -> Vec<String> {
    artifacts::supported_languages().into_iter().map(String::from).collect()
}
