//! `Session`: an agent's context (history, optional memory, loop counter, metadata) for JS, and
//! `Shared`, the one session every JS object that shows part of it (`session.history`,
//! `session.memory`) holds.

use std::rc::Rc;

use serde::Deserialize;
use serde_json::{Map, Value};
use wasm_bindgen::prelude::*;

use super::conversion::{count_in, export_arg, format_arg, from_js, string_arg, to_js};
use super::errors::JsResult;
use super::history::ConversationHistory;
use super::interning::RequestCache;
use super::memory_module::MemoryModule;
use super::recovery::{reclaim, Held, Lock, Recover};
use crate::error::{Error, Result};
use crate::message;
use crate::session::{Session as CoreSession, SessionOptions, DEFAULT_MAX_LOOPS};

/// A session shared by the JS objects that show parts of it. The JS side is single-threaded, so
/// one call at a time uses it; a call that finds it in use (a re-entrant call from user code the
/// library ran, such as a `toJSON`) gets an error, not a panic. Its locks are `recovery::Lock`s,
/// which the recovery takes back after a trap left them held.
#[derive(Clone)]
pub(crate) struct Shared(Rc<SharedState>);

struct SharedState {
    session: Lock<CoreSession>,
    request: Lock<RequestCache>,
}

impl Recover for SharedState {
    unsafe fn recover(&self) -> bool {
        // SAFETY: the caller's (no call under way).
        let undone = unsafe { reclaim(&self.session) }.recover_after_trap();
        // The interned JS objects of the last build may have been caught mid-update: leaked.
        let mut request = unsafe { reclaim(&self.request) };
        std::mem::forget(std::mem::take(&mut *request));
        undone
    }
}

impl Shared {
    pub(crate) fn new(session: CoreSession) -> Shared {
        Shared(Rc::new(SharedState { session: Lock::new(session), request: Lock::new(RequestCache::default()) }))
    }

    pub(crate) fn get(&self) -> Result<Held<'_, CoreSession>> {
        Held::take(&self.0.session, self.0.clone())?.ok_or_else(|| {
            Error::conflict("this session is already in use by a call that has not returned (a re-entrant call?)")
        })
    }

    pub(crate) fn request_cache(&self) -> Result<Held<'_, RequestCache>> {
        Held::take(&self.0.request, self.0.clone())?.ok_or_else(|| Error::internal("the build cache is in use"))
    }
}

/// `spawnSubagent`'s options.
#[derive(Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct SubagentOptions {
    max_loops: Option<u64>,
}

/// An agent's context: its history, an optional memory module, a loop counter and metadata.
/// Sub-agents are sessions of their own, isolated from their parent.
#[wasm_bindgen]
pub struct Session {
    pub(crate) shared: Shared,
}

#[wasm_bindgen]
impl Session {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "SessionOptions")] options: JsValue,
    ) -> JsResult<Session> {
        let options: SessionOptions = super::conversion::options(&options, "session options")?;
        Ok(Session { shared: Shared::new(CoreSession::from_options(options)?) })
    }

    /// A session from `export()`'s output (an object or its JSON text). A corrupt, truncated or
    /// newer export throws and builds nothing.
    #[wasm_bindgen(js_name = import)]
    pub fn import(#[wasm_bindgen(unchecked_param_type = "SessionExport | string")] data: JsValue) -> JsResult<Session> {
        Ok(Session { shared: Shared::new(CoreSession::import(export_arg(&data)?)?) })
    }

    /// History, summaries, memory, counters and metadata, as one versioned JSON document.
    #[wasm_bindgen(unchecked_return_type = "SessionExport")]
    pub fn export(&self) -> JsResult<JsValue> {
        Ok(to_js(&self.shared.get()?.export()?)?)
    }

    #[wasm_bindgen(getter)]
    pub fn id(&self) -> JsResult<String> {
        Ok(self.shared.get()?.id().to_string())
    }

    #[wasm_bindgen(getter, js_name = parentId)]
    pub fn parent_id(&self) -> JsResult<Option<String>> {
        Ok(self.shared.get()?.parent_id().map(str::to_string))
    }

    #[wasm_bindgen(getter)]
    pub fn loops(&self) -> JsResult<u32> {
        Ok(self.shared.get()?.loops())
    }

    #[wasm_bindgen(getter, js_name = maxLoops)]
    pub fn max_loops(&self) -> JsResult<u32> {
        Ok(self.shared.get()?.max_loops())
    }

    /// The session's history (the same log, whichever object shows it).
    #[wasm_bindgen(getter)]
    pub fn history(&self) -> ConversationHistory {
        ConversationHistory { session: self.shared.clone() }
    }

    /// The memory module, or `undefined` when the session was made without one.
    #[wasm_bindgen(getter)]
    pub fn memory(&self) -> JsResult<Option<MemoryModule>> {
        Ok(self.shared.get()?.memory().map(|_| MemoryModule { shared: self.shared.clone() }))
    }

    #[wasm_bindgen(getter, unchecked_return_type = "Record<string, unknown>")]
    pub fn metadata(&self) -> JsResult<JsValue> {
        Ok(to_js(&self.shared.get()?.metadata)?)
    }

    #[wasm_bindgen(setter)]
    pub fn set_metadata(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Record<string, unknown>")] metadata: JsValue,
    ) -> JsResult<()> {
        let map: Map<String, Value> = match from_js(&metadata, "metadata")? {
            Value::Object(map) => map,
            other => {
                return Err(Error::invalid_argument(format!(
                    "metadata must be an object, got {}",
                    message::json::type_name(&other)
                ))
                .into())
            }
        };
        // One move, the old map dropped after: a trap leaves either map whole.
        drop(std::mem::replace(&mut self.shared.get()?.metadata, map));
        Ok(())
    }

    /// Counts one agent loop; past `maxLoops` it throws.
    #[wasm_bindgen(js_name = nextLoop)]
    pub fn next_loop(&self) -> JsResult<u32> {
        Ok(self.shared.get()?.next_loop()?)
    }

    /// A child session (`subagent-` and 8 hex digits) whose history starts with `task`,
    /// isolated from this one.
    #[wasm_bindgen(js_name = spawnSubagent)]
    pub fn spawn_subagent(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] task: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "{ maxLoops?: number }")] options: JsValue,
    ) -> JsResult<Session> {
        let task = string_arg(&task, "the task")?;
        let options: SubagentOptions = super::conversion::options(&options, "sub-agent options")?;
        let max_loops =
            count_in(options.max_loops, "sub-agent options.maxLoops", DEFAULT_MAX_LOOPS.into(), u32::MAX.into())?;
        let child = self.shared.get()?.spawn_subagent(&task, max_loops as u32)?;
        Ok(Session { shared: Shared::new(child) })
    }

    /// What this sub-agent hands its parent: `{ ok, result, context_id, loops }`.
    #[wasm_bindgen(js_name = subagentResult, unchecked_return_type = "SubagentResult")]
    pub fn subagent_result(&self) -> JsResult<JsValue> {
        Ok(to_js(&self.shared.get()?.subagent_result())?)
    }

    /// The result as the tool message that answers the parent's call `callId`.
    #[wasm_bindgen(js_name = subagentToolResult, unchecked_return_type = "Message")]
    pub fn subagent_tool_result(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] call_id: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Format")] format: JsValue,
    ) -> JsResult<JsValue> {
        let call_id = string_arg(&call_id, "the call id")?;
        let session = self.shared.get()?;
        let format = format_arg(&format, session.format)?;
        let message = session.subagent_tool_result(&call_id, format)?;
        let single = message::emit_one(&message, format)
            .ok_or_else(|| Error::internal("a tool result could not be written out"))?;
        Ok(to_js(&single)?)
    }
}
