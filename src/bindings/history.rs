//! `ConversationHistory` for JS: the log (append, read back, count) and the builds of the
//! session it belongs to (a history made on its own is the "main" session's).

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::conversion::{self, export_arg, format_arg, from_js, string_arg, to_js, typed};
use super::errors::JsResult;
use super::interning::LayoutEntry;
use super::session::Shared;
use crate::compact::{BuildOutcome, BuildSpec, Receipt, SummaryRecord, SummaryRequest, SummaryState, TokensByPart};
use crate::error::{Error, Result};
use crate::history::TokenReport;
use crate::session::{HistoryOptions, Session as CoreSession, SessionOptions};
use crate::tokens::ChatCount;

/// The whole conversation, append-only: stable ids, lossless read-back in either format, and
/// token counts cached per message.
#[wasm_bindgen]
pub struct ConversationHistory {
    pub(crate) session: Shared,
}

/// `appendMany`'s options (or just the format).
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub(crate) struct AppendOptions {
    pub(crate) format: Option<crate::message::Format>,
    /// Repair what the strict append refuses (a log cut at its head) and report it.
    pub(crate) repair: Option<bool>,
    /// Pins the messages at these positions of the list (in the order they are appended: an
    /// Anthropic `system` first), as `pin(id)` does; e.g. a loaded conversation's `pinned`.
    pub(crate) pin: Option<Vec<usize>>,
}

/// `append`'s options (or just the format).
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub(crate) struct AppendOneOptions {
    pub(crate) format: Option<crate::message::Format>,
    /// Pins the message, as `pin(id)` does: a request every context keeps.
    pub(crate) pin: Option<bool>,
}

/// `recordUsage`'s options.
#[derive(Default, serde::Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub(crate) struct RecordUsageOptions {
    /// The model the request went to (else the response's `model`).
    model: Option<String>,
    /// Your count of the whole request, system prompt and tools included (`countRequest(...).total`):
    /// with it the bill calibrates later counts. Without it the bill is paired with the last
    /// build's context (else the whole history), which does not hold what was sent beside the
    /// messages, and only anchors later counts.
    counted: Option<usize>,
}

/// What `build` returns. `messages`, `layout`, `receipt.runs` and `receipt.repairs` are set
/// afterwards, from the interned JS objects (null here keeps the keys in order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub(crate) struct BuildResult<'a> {
    /// What to send: validated against the provider's rules. The list is new on every build; the
    /// message objects in it are frozen (deeply) and shared with later builds that emit them unchanged.
    #[cfg_attr(test, ts(type = "AnyMessages"))]
    messages: (),
    /// Where each message comes from: `layout[i]` describes `messages[i]` (Anthropic:
    /// `messages.messages[i]`), with the stored messages it carries (several when same-role
    /// messages were merged into one); the entries, like `receipt.runs`, are frozen and shared
    /// as the messages are.
    #[cfg_attr(test, ts(type = "Array<Readonly<LayoutEntry>>"))]
    layout: (),
    /// Anthropic: where the top-level `system` comes from (absent without one, and in other formats).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional, type = "Readonly<LayoutEntry>"))]
    system_layout: Option<LayoutEntry>,
    tokens: &'a TokensByPart,
    receipt: &'a Receipt,
    /// Compaction is due: summarise these messages and hand the text to `completeSummary`.
    summary_request: &'a Option<SummaryRequest>,
    /// The summary the extractive summariser made during this build, if it did.
    new_summary: &'a Option<SummaryRecord>,
    /// A `prompt_cache_key` for OpenAI (which routes requests with the same key to the same
    /// cache): the session's id and a hash of its first message, the same for every call of one
    /// conversation.
    prompt_cache_key: String,
}

#[wasm_bindgen]
impl ConversationHistory {
    #[wasm_bindgen(constructor)]
    pub fn new(
        #[wasm_bindgen(unchecked_optional_param_type = "HistoryOptions")] options: JsValue,
    ) -> JsResult<ConversationHistory> {
        let HistoryOptions { encoding, format } = super::conversion::options(&options, "options")?;
        let session = CoreSession::from_options(SessionOptions { encoding, format, ..SessionOptions::default() })?;
        Ok(ConversationHistory { session: Shared::new(session) })
    }

    #[wasm_bindgen(getter)]
    pub fn length(&self) -> JsResult<u32> {
        Ok(u32::try_from(self.session.get()?.history.len()).unwrap_or(u32::MAX))
    }

    #[wasm_bindgen(getter, unchecked_return_type = "EncodingName")]
    pub fn encoding(&self) -> JsResult<String> {
        Ok(self.session.get()?.history.encoding().as_str().to_string())
    }

    /// The format `append`, `appendMany` and `messages` use when none is given.
    #[wasm_bindgen(getter, unchecked_return_type = "Format")]
    pub fn format(&self) -> JsResult<String> {
        Ok(self.session.get()?.format.as_str().to_string())
    }

    /// How many messages have been tokenized so far: each at most once.
    #[wasm_bindgen(getter, js_name = countedMessages)]
    pub fn counted_messages(&self) -> JsResult<f64> {
        Ok(self.session.get()?.history.counted_messages() as f64)
    }

    /// Validates and appends one message; returns its id. With `{ pin: true }` the message is
    /// pinned (see `pin`).
    pub fn append(
        &self,
        #[wasm_bindgen(unchecked_param_type = "MessageInput")] message: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Format | AppendOneOptions")] options: JsValue,
    ) -> JsResult<String> {
        let value = from_js(&message, "message")?;
        let mut session = self.session.get()?;
        let AppendOneOptions { format, pin } = match options.is_object() {
            true => conversion::options(&options, "append options")?,
            false => AppendOneOptions { format: Some(format_arg(&options, session.format)?), pin: None },
        };
        let format = format.unwrap_or(session.format);
        Ok(session.history.append_value_pinned(value, format, pin == Some(true))?)
    }

    /// Validates and appends a list in one call; all or nothing. With `{ repair: true }` what the
    /// strict append refuses is repaired instead, and `{ ids, repairs }` is returned.
    #[wasm_bindgen(js_name = appendMany, unchecked_return_type = "string[]")]
    pub fn append_many(
        &self,
        #[wasm_bindgen(unchecked_param_type = "AnthropicRequest | ReadonlyArray<MessageInput>")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Format")] options: JsValue,
    ) -> JsResult<JsValue> {
        let value = from_js(&messages, "messages")?;
        let mut session = self.session.get()?;
        let AppendOptions { format, repair, pin } = match options.is_object() {
            true => conversion::options(&options, "append options")?,
            false => AppendOptions { format: Some(format_arg(&options, session.format)?), repair: None, pin: None },
        };
        let format = format.unwrap_or(session.format);
        let pins = pin.unwrap_or_default();
        if repair == Some(true) {
            return Ok(to_js(&session.history.append_repaired_pinned(value, format, &pins)?)?);
        }
        Ok(to_js(&session.history.append_values_pinned(value, format, &pins)?)?)
    }

    /// Pins the user message `id`: every context keeps it (cut to its head and tail only if the
    /// budget needs), the receipt lists it (`pinned`), and the first message pinned stands for
    /// the task, the summary's primary request, instead of the first user message. Saved with
    /// the session and its export.
    pub fn pin(&self, #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue) -> JsResult<()> {
        let id = string_arg(&id, "id")?;
        Ok(self.session.get()?.history.pin(&id)?)
    }

    /// Unpins the message `id`.
    pub fn unpin(&self, #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue) -> JsResult<()> {
        let id = string_arg(&id, "id")?;
        Ok(self.session.get()?.history.unpin(&id)?)
    }

    /// The ids of the messages pinned (`pin`, `append(message, { pin: true })`), in order.
    #[wasm_bindgen(getter)]
    pub fn pinned(&self) -> JsResult<Vec<String>> {
        Ok(self.session.get()?.history.pinned())
    }

    pub fn ids(&self) -> JsResult<Vec<String>> {
        Ok(self.session.get()?.history.ids())
    }

    /// The message with `id` exactly as it was appended, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "Message | undefined")]
    pub fn get(&self, #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue) -> JsResult<JsValue> {
        let id = string_arg(&id, "id")?;
        match self.session.get()?.history.get_value(&id) {
            Some(value) => Ok(to_js(&value)?),
            None => Ok(JsValue::UNDEFINED),
        }
    }

    /// Every message in the history's format: an array, or Anthropic's `{ system?, messages }`
    /// (`messages(format)`, typed for that format, is declared in types.d.ts).
    #[wasm_bindgen(unchecked_return_type = "AnyMessages")]
    pub fn messages(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "undefined")] format: JsValue,
    ) -> JsResult<JsValue> {
        let session = self.session.get()?;
        Ok(to_js(&session.history.emit(format_arg(&format, session.format)?))?)
    }

    /// The history as one prompt; only messages appended since the last count are tokenized.
    /// Anchored to the last bill (`basis: "anchored"`) while the recorded usage stands for it.
    #[wasm_bindgen(js_name = tokenCount, unchecked_return_type = "ChatTokenCount")]
    pub fn token_count(&self) -> JsResult<JsValue> {
        let count: ChatCount = self.session.get()?.token_count();
        Ok(to_js(&count)?)
    }

    /// Tokens by role and by part kind.
    #[wasm_bindgen(js_name = tokenReport, unchecked_return_type = "TokenReport")]
    pub fn token_report(&self) -> JsResult<JsValue> {
        let report: TokenReport = self.session.get()?.token_report();
        Ok(to_js(&report)?)
    }

    /// Records what the provider reported for a request (its `usage`, or the whole response):
    /// later counts start from the bill (anchored), and a count of the whole request (`counted`)
    /// calibrates this history's counts for that model. Returns what it made of the usage.
    #[wasm_bindgen(js_name = recordUsage, unchecked_return_type = "UsageReport")]
    pub fn record_usage(
        &self,
        #[wasm_bindgen(unchecked_param_type = "ProviderUsageInput")] usage: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "RecordUsageOptions")] options: JsValue,
    ) -> JsResult<JsValue> {
        let options: RecordUsageOptions = conversion::options(&options, "options")?;
        let usage = conversion::from_js(&usage, "usage")?;
        let report = self.session.get()?.record_usage(&usage, options.model.as_deref(), options.counted)?;
        Ok(to_js(&report)?)
    }

    /// The context for the next call: `[system] + [summary] + [recent]`, reduced and checked
    /// against the provider's rules, with a receipt of what happened to every stored message.
    /// The stored history never changes.
    #[wasm_bindgen(unchecked_return_type = "BuildResult")]
    pub fn build(
        &self,
        #[wasm_bindgen(unchecked_optional_param_type = "BuildOptions & { format?: undefined }")] options: JsValue,
    ) -> JsResult<JsValue> {
        Ok(self.build_result(&options)?)
    }

    /// The last build's receipt message by message (its `runs` expanded, with each message's
    /// tokens); empty before the first build.
    #[wasm_bindgen(js_name = receiptEntries, unchecked_return_type = "ReceiptEntry[]")]
    pub fn receipt_entries(&self) -> JsResult<JsValue> {
        Ok(to_js(&self.session.get()?.receipt_entries())?)
    }

    /// Marks the compaction the last build asked for as under way; a second one is a `ConflictError`.
    #[wasm_bindgen(js_name = beginSummary)]
    pub fn begin_summary(&self, #[wasm_bindgen(unchecked_param_type = "string")] request_id: JsValue) -> JsResult<()> {
        let id = string_arg(&request_id, "the request id")?;
        Ok(self.session.get()?.compactor.begin_summary(&id)?)
    }

    /// Hands back the summary text; checked (not empty, within budget, required keys) before it is stored.
    #[wasm_bindgen(js_name = completeSummary, unchecked_return_type = "SummaryRecord")]
    pub fn complete_summary(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] request_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] created_at: JsValue,
    ) -> JsResult<JsValue> {
        let id = string_arg(&request_id, "the request id")?;
        let text = string_arg(&text, "the summary")?;
        let created_at = match created_at.is_undefined() || created_at.is_null() {
            true => None,
            false => Some(string_arg(&created_at, "createdAt")?),
        };
        let record = self.session.get()?.complete_summary(&id, &text, created_at)?;
        Ok(to_js(&record)?)
    }

    /// Abandons the compaction under way (the summariser failed); the next build asks again.
    #[wasm_bindgen(js_name = cancelSummary)]
    pub fn cancel_summary(&self, #[wasm_bindgen(unchecked_param_type = "string")] request_id: JsValue) -> JsResult<()> {
        let id = string_arg(&request_id, "the request id")?;
        Ok(self.session.get()?.compactor.cancel_summary(&id)?)
    }

    /// The summary in force and any compaction under way, for storage.
    #[wasm_bindgen(js_name = summaryState, unchecked_return_type = "SummaryState")]
    pub fn summary_state(&self) -> JsResult<JsValue> {
        Ok(to_js(self.session.get()?.compactor.summary_state())?)
    }

    #[wasm_bindgen(js_name = setSummaryState)]
    pub fn set_summary_state(
        &self,
        #[wasm_bindgen(unchecked_param_type = "SummaryState")] state: JsValue,
    ) -> JsResult<()> {
        let state: SummaryState = typed(&state, "summary state")?;
        Ok(self.session.get()?.set_summary_state(state)?)
    }

    /// The history (with its summary state) as one versioned JSON document: a session export.
    #[wasm_bindgen(unchecked_return_type = "SessionExport")]
    pub fn export(&self) -> JsResult<JsValue> {
        Ok(to_js(&self.session.get()?.export()?)?)
    }

    /// A history from `export()`'s output (an object or its JSON text); throws on a corrupt,
    /// truncated or newer export.
    #[wasm_bindgen(js_name = import)]
    pub fn import(
        #[wasm_bindgen(unchecked_param_type = "SessionExport | string")] data: JsValue,
    ) -> JsResult<ConversationHistory> {
        Ok(ConversationHistory { session: Shared::new(CoreSession::import(export_arg(&data)?)?) })
    }
}

impl ConversationHistory {
    fn build_result(&self, options: &JsValue) -> Result<JsValue> {
        let spec: BuildSpec = super::conversion::options(options, "build options")?;
        let mut session = self.session.get()?;
        let options = spec.resolve(session.history.encoding(), session.format)?;
        let BuildOutcome { mut context, summary_request, new_summary } = session.build(&options)?;
        // The session's id with a hash of the first message: two conversations of the default
        // session id ("main") do not share a key.
        let first = session.history.records().first().map(|r| r.message.content.joined_text()).unwrap_or_default();
        let prompt_cache_key = format!("{}-{:016x}", session.id(), crate::util::ids::fnv1a64(&[first.as_bytes()]));
        let mut cache = self.session.request_cache()?;
        let assembled = session.compactor.request(&context)?;
        let messages = cache.request_js(&assembled, session.compactor.forms())?;
        mark_for_the_cache(&messages, &context, session.compactor.forms(), &assembled)?;
        let carried = context.layout(session.compactor.forms(), &assembled);
        drop(session);
        // One entry per request message: the context messages it carries, the first's section
        // and action.
        let entry = |indices: &[usize]| -> Option<LayoutEntry> {
            let first = context.messages.get(*indices.first()?)?;
            let sources = indices
                .iter()
                .filter_map(|&i| context.messages.get(i))
                .flat_map(|m| m.sources.iter().cloned())
                .collect();
            Some(LayoutEntry { sources, section: first.section, action: first.action })
        };
        let system_layout = entry(&context.hoisted());
        let layout: Vec<LayoutEntry> = carried
            .iter()
            .map(|indices| {
                entry(indices).ok_or_else(|| Error::internal("a request message carries no context message"))
            })
            .collect::<Result<_>>()?;
        let layout = cache.layout.array(layout)?;
        let runs = cache.runs_js(std::mem::take(&mut context.receipt.runs))?;
        let repairs = cache.repairs_js(std::mem::take(&mut context.receipt.repairs))?;
        let result = BuildResult {
            prompt_cache_key,
            messages: (),
            layout: (),
            system_layout,
            tokens: &context.tokens,
            receipt: &context.receipt,
            summary_request: &summary_request,
            new_summary: &new_summary,
        };
        let value = to_js(&result)?;
        set(&value, "messages", &messages)?;
        set(&value, "layout", &layout)?;
        let receipt = js_sys::Reflect::get(&value, &"receipt".into())
            .map_err(|_| Error::internal("the result has no receipt"))?;
        set(&receipt, "runs", &runs)?;
        set(&receipt, "repairs", &repairs)?;
        Ok(value)
    }
}

/// Sets `key` of a result object (a function, not a closure: a closure was compiled into each
/// of its four calls).
fn set(target: &JsValue, key: &str, value: &JsValue) -> Result<()> {
    js_sys::Reflect::set(target, &key.into(), value)
        .map(|_| ())
        .map_err(|_| Error::internal(format!("could not set the result's {key}")))
}

/// Puts the context's provider cache hints on the request `value` (the objects `request_js` made):
/// the few messages marked are replaced by marked copies, the others stay the frozen objects
/// reused from build to build.
fn mark_for_the_cache(
    value: &JsValue,
    context: &crate::compact::CompactedContext,
    forms: &crate::compact::EmitCache,
    assembled: &crate::compact::Assembled,
) -> Result<()> {
    use crate::compact::request::hints;
    let points = context.breakpoints(forms, assembled);
    let Some(marks) = context.marks.as_ref().filter(|_| !points.is_empty()) else { return Ok(()) };
    let ttl = marks.options.ttl.unwrap_or_default();
    let set = |target: &JsValue, key: &JsValue, value: &JsValue| {
        js_sys::Reflect::set(target, key, value)
            .map_err(|_| Error::internal("could not mark the request for the cache"))
    };
    let list = match context.format {
        crate::message::Format::Anthropic => {
            if let (Some(block), Some(system)) = (points.system, assembled.system.as_ref()) {
                set(value, &"system".into(), &to_js(&hints::marked_system(system, block, ttl))?)?;
            }
            js_sys::Reflect::get(value, &"messages".into())
                .map_err(|_| Error::internal("the request has no messages"))?
        }
        _ => value.clone(),
    };
    let messages: Vec<&serde_json::Value> = forms.messages(assembled).collect();
    for &(at, block) in &points.messages {
        let Some(message) = messages.get(at) else { continue };
        let marked = to_js(&hints::marked(message, block, context.format, ttl))?;
        set(&list, &JsValue::from(at as u32), &marked)?;
    }
    Ok(())
}
