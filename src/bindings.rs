//! The JavaScript surface, and the only module that knows wasm-bindgen. Values cross the
//! boundary once per call, as JSON text: the engine's `JSON.stringify` rejects what JSON cannot
//! hold (cycles, BigInt) before Rust sees it, and serde_json's depth limit keeps a hostile
//! nesting from exhausting the wasm stack. Every failure becomes a typed JS error.

use std::cell::{RefCell, RefMut};
use std::rc::Rc;

use js_sys::{Function, Object, Reflect, JSON};
use serde_json::{json, Map, Value};
use wasm_bindgen::prelude::*;

use crate::compact::profile::{self, Profile};

use crate::compact::fasthash::FastMap;
use crate::compact::{Assembled, EmitCache, Piece};
use crate::message::Message;
use std::sync::Arc;
use crate::compact::{request as provider_request, BuildOptions, BuildOutcome};
use crate::error::{Error, Result};
use crate::session::{Session as CoreSession, DEFAULT_MAX_LOOPS, MAIN_CONTEXT_ID};
use crate::message::{self, Format};
use crate::tokens::{self, ChatCount, Encoding};

#[wasm_bindgen(typescript_custom_section)]
const TYPES: &'static str = r#"
export type Format = "openai" | "anthropic";
export type EncodingName = "o200k_base" | "cl100k_base" | "estimate";

export interface OpenAITextPart { type: "text"; text: string; [key: string]: unknown }
export interface OpenAIImagePart { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high"; [key: string]: unknown }; [key: string]: unknown }
export type OpenAIContentPart = OpenAITextPart | OpenAIImagePart | { type: string; [key: string]: unknown };
export interface OpenAIToolCall { id: string; type: "function"; function: { name: string; arguments: string; [key: string]: unknown }; [key: string]: unknown }
export type OpenAIMessage =
  | { role: "system" | "developer"; content: string | OpenAITextPart[]; name?: string; [key: string]: unknown }
  | { role: "user"; content: string | OpenAIContentPart[]; name?: string; [key: string]: unknown }
  | { role: "assistant"; content?: string | OpenAIContentPart[] | null; tool_calls?: OpenAIToolCall[]; name?: string; [key: string]: unknown }
  | { role: "tool"; tool_call_id: string; content: string | OpenAITextPart[]; [key: string]: unknown };

export interface AnthropicTextBlock { type: "text"; text: string; [key: string]: unknown }
export interface AnthropicImageBlock { type: "image"; source: { type: "base64"; media_type: string; data: string } | { type: "url"; url: string }; [key: string]: unknown }
export interface AnthropicToolUseBlock { type: "tool_use"; id: string; name: string; input: Record<string, unknown>; [key: string]: unknown }
export interface AnthropicToolResultBlock { type: "tool_result"; tool_use_id: string; content?: string | Array<AnthropicTextBlock | AnthropicImageBlock>; is_error?: boolean; [key: string]: unknown }
export interface AnthropicThinkingBlock { type: "thinking"; thinking: string; signature?: string; [key: string]: unknown }
export interface AnthropicRedactedThinkingBlock { type: "redacted_thinking"; data: string; [key: string]: unknown }
export type AnthropicBlock = AnthropicTextBlock | AnthropicImageBlock | AnthropicToolUseBlock | AnthropicToolResultBlock | AnthropicThinkingBlock | AnthropicRedactedThinkingBlock;
export interface AnthropicMessage { role: "user" | "assistant"; content: string | AnthropicBlock[]; [key: string]: unknown }
export interface AnthropicRequest { system?: string | AnthropicTextBlock[]; messages: AnthropicMessage[] }

export type Message = OpenAIMessage | AnthropicMessage;
export type ToolDefinition =
  | { type: "function"; function: { name: string; description?: string; parameters?: Record<string, unknown> } }
  | { name: string; description?: string; input_schema: Record<string, unknown> };

export interface CountOptions { format?: Format; tools?: ToolDefinition[] }
export interface HistoryOptions { encoding?: EncodingName; format?: Format }
export interface ChatTokenCount { total: number; messages: number[]; tools: number; replyPriming: number }
export interface TokenReport {
  total: number;
  messages: number;
  replyPriming: number;
  byRole: Partial<Record<"system" | "developer" | "user" | "assistant" | "tool", number>>;
  byPart: Partial<Record<"overhead" | "text" | "image" | "toolCall" | "toolResult" | "thinking" | "other", number>>;
}
export type ErrorKind = "InvalidMessage" | "InvalidArgument" | "NotFound" | "Conflict" | "Internal";

export interface BudgetOptions { contextWindow: number; targetRatio?: number; summaryRatio?: number; recentRatio?: number; minMessages?: number }
export interface CompressOptions { maxTokens?: number; arrayKeep?: number; stringMaxChars?: number; maxDepth?: number; textMode?: "headTail" | "truncate"; textMaxChars?: number; textHead?: number; textTail?: number }
export interface SummaryOptions {
  summariser?: "extractive" | "external";
  triggerTokens?: number; targetTokens?: number; minMessages?: number; minNewMessages?: number; newTokenRatio?: number;
  maxTokens?: number; prompt?: string; requiredKeys?: string[]; placement?: "auto" | "system" | "exchange";
}
export interface Profile {
  name: string; contextWindow: number; triggerFraction: number; targetFraction?: number;
  keepRecentSteps: number; encoding: EncodingName; format?: Format;
}
/** Options of `history.build`: a built-in profile's name (or a profile) and/or explicit settings, which win. */
export interface BuildOptions {
  profile?: string | Profile;
  format?: Format;
  maxMessages?: number;
  budget?: BudgetOptions | null;
  keepRecentSteps?: number;
  dedupeSystem?: boolean;
  compress?: CompressOptions | null;
  digest?: { tools?: string[] } | null;
  thin?: boolean;
  summary?: SummaryOptions | null;
  /** A session with memory: summaries of recorded turns the context does not wholly hold, in the summary section within what the summary budget leaves (newest turns first); `null` leaves them out. */
  memory?: { maxTokens?: number } | null;
  now?: string;
}
export type Action = "kept" | "compressed" | "digested" | "thinned" | "summarised" | "dropped";
export interface TokensByPart { system: number; summary: number; recent: number; total: number }
export type DropReason = "repair" | "thinning" | "window" | "budget";
/** Messages `from`..`to` (ids, inclusive; `count` of them) all had `action` (and `reason`); tokens are the run's sums. */
export interface ReceiptRun { from: string; to: string; count: number; action: Action; reason?: DropReason; tokensBefore: number; tokensAfter: number }
/** One stored message's line of a receipt (`history.receiptEntries()`). */
export interface ReceiptEntry { id: string; action: Action; reason?: DropReason; tokensBefore: number; tokensAfter: number }
export interface Receipt {
  tokensBefore: number; tokensAfter: number; messagesBefore: number; messagesAfter: number;
  byPart: TokensByPart;
  budget: { maxTokens: number; systemTokens: number; summaryBudget: number; recentBudget: number } | null;
  withinBudget: boolean;
  /** What happened to every stored message, by id: runs of consecutive messages that fared alike, in history order. */
  runs: Array<Readonly<ReceiptRun>>;
  repairs: Array<{ id: string; kind: string; callId?: string }>;
  summary: { requestId: string; summarisedUntil: string; tokens: number; fresh: boolean } | null;
  /** The memory's turn summaries in the context (a session with memory): the turns in, their tokens, and the turns left out for space. */
  memory: { turns: number[]; tokens: number; omitted: number[] } | null;
  placeholder: boolean;
  notes: string[];
}
export interface SummaryRequest {
  id: string; from: string; until: string; messageIds: string[];
  /** Ready to send, in the build's format, the compact prompt last. */
  messages: OpenAIMessage[] | AnthropicRequest;
  prompt: string; previousSummary: string | null; maxTokens: number; requiredKeys: string[];
  originalTokens: number; messageCount: number;
}
export interface SummaryRecord {
  requestId: string; summarisedUntil: string; untilIndex: number; text: string; tokens: number;
  originalTokens: number; compressionRate: number; messageCount: number; createdAt: string; source: "extractive" | "external";
}
export interface SummaryState { current: SummaryRecord | null; inProgress: object | null; generation: number }
export interface BuildResult {
  /**
   * What to send: validated against the provider's rules. The list is new on every build; the
   * message objects in it are frozen (deeply) and shared with later builds that emit them unchanged.
   */
  messages: OpenAIMessage[] | AnthropicRequest;
  /** Where each message comes from; the entries, like `receipt.runs`, are frozen and shared as the messages are. */
  layout: Array<Readonly<{ sources: readonly string[]; section: "system" | "summary" | "recent"; action: Action }>>;
  tokens: TokensByPart;
  receipt: Receipt;
  /** Compaction is due: summarise these messages and hand the text to `completeSummary`. */
  summaryRequest: SummaryRequest | null;
  newSummary: SummaryRecord | null;
}
export interface Violation { index: number | null; rule: string; message: string }
/**
 * What a build hands over, by format: request-mode messages, with only the fields each API
 * accepts in a request (response-only and unknown fields are stripped), so that they type-check
 * against the providers' own SDK parameter types.
 */
export interface OpenAIOutputText { type: "text"; text: string }
export interface OpenAIOutputImage { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } }
export interface OpenAIOutputToolCall { id: string; type: "function"; function: { name: string; arguments: string } }
export type OpenAIOutputMessage =
  | { role: "system"; content: string | OpenAIOutputText[]; name?: string }
  | { role: "developer"; content: string | OpenAIOutputText[]; name?: string }
  | { role: "user"; content: string | Array<OpenAIOutputText | OpenAIOutputImage>; name?: string }
  | { role: "assistant"; content?: string | OpenAIOutputText[] | null; tool_calls?: OpenAIOutputToolCall[]; name?: string; refusal?: string | null }
  | { role: "tool"; tool_call_id: string; content: string | OpenAIOutputText[] };
export interface AnthropicOutputText { type: "text"; text: string }
export interface AnthropicOutputImage { type: "image"; source: { type: "base64"; media_type: "image/jpeg" | "image/png" | "image/gif" | "image/webp"; data: string } | { type: "url"; url: string } }
export type AnthropicOutputBlock =
  | AnthropicOutputText
  | AnthropicOutputImage
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content?: string | Array<AnthropicOutputText | AnthropicOutputImage>; is_error?: boolean }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string };
export interface AnthropicOutputRequest {
  system?: string | AnthropicOutputText[];
  messages: Array<{ role: "user" | "assistant"; content: string | AnthropicOutputBlock[] }>;
}
export type BuildResultIn<F extends Format> = Omit<BuildResult, "messages"> & {
  messages: F extends "anthropic" ? AnthropicOutputRequest : OpenAIOutputMessage[];
};
// Declaration merging adds this overload after the class's own (which takes no `format`), so a
// build that names its format gets messages typed for that provider's SDK.
export interface ConversationHistory {
  /** With the format named, the messages are typed for that provider's SDK. */
  build<F extends Format>(options: BuildOptions & { format: F }): BuildResultIn<F>;
  build(options?: BuildOptions): BuildResult;
}

"#;

type JsResult<T> = std::result::Result<T, JsValue>;

thread_local! {
    static ERROR_FACTORY: RefCell<Option<Function>> = const { RefCell::new(None) };
}

/// Installs the function that turns an error kind, message and details into the JS error to
/// throw (the package's entry points install their `ContextCompactorError` subclasses).
#[wasm_bindgen(js_name = setErrorFactory)]
pub fn set_error_factory(
    #[wasm_bindgen(unchecked_param_type = "(kind: ErrorKind, message: string, details: { index?: number; path?: string }) => Error")]
    factory: Function,
) {
    ERROR_FACTORY.with(|slot| *slot.borrow_mut() = Some(factory));
}

fn js_error(error: Error) -> JsValue {
    let message = error.to_string();
    let details = Object::new();
    // Setting a property on a fresh plain object cannot fail.
    if let Some(index) = error.index {
        let _ = Reflect::set(&details, &"index".into(), &JsValue::from(index as f64));
    }
    if let Some(path) = &error.path {
        let _ = Reflect::set(&details, &"path".into(), &JsValue::from_str(path));
    }
    let factory = ERROR_FACTORY.with(|slot| slot.borrow().clone());
    if let Some(factory) = factory {
        let made = factory.call3(&JsValue::NULL, &JsValue::from_str(error.kind.as_str()), &JsValue::from_str(&message), &details);
        if let Ok(value) = made {
            return value;
        }
    }
    let plain = js_sys::Error::new(&message);
    plain.set_name(&format!("{}Error", error.kind.as_str()));
    plain.into()
}

fn throw<T>(result: Result<T>) -> JsResult<T> {
    result.map_err(js_error)
}

fn js_type(value: &JsValue) -> String {
    if value.is_null() {
        "null".into()
    } else if js_sys::Array::is_array(value) {
        "an array".into()
    } else {
        value.js_typeof().as_string().unwrap_or_else(|| "an unknown value".into())
    }
}

/// Reads a JS value as JSON, once, with errors that say what was wrong with it.
fn from_js(value: &JsValue, what: &str) -> Result<Value> {
    if value.is_undefined() {
        return Err(Error::invalid_argument(format!("{what} is missing (got undefined)")));
    }
    let text = JSON::stringify(value).map_err(|thrown| {
        let reason = thrown
            .dyn_ref::<js_sys::Error>()
            .and_then(|e| e.message().as_string())
            .unwrap_or_else(|| "it cannot be serialised".into());
        Error::invalid_argument(format!("{what} cannot be read as JSON: {reason}"))
    })?;
    let Some(text) = JsValue::from(text).as_string() else {
        return Err(Error::invalid_argument(format!("{what} cannot be read as JSON: it is {}", js_type(value))));
    };
    parse_json_text(&text, what)
}

fn parse_json_text(text: &str, what: &str) -> Result<Value> {
    match serde_json::from_str(text) {
        Ok(value) => Ok(value),
        Err(error) if error.to_string().contains("recursion limit") => {
            Err(Error::invalid_argument(format!("{what} is nested more than 128 levels deep")))
        }
        Err(error) => match replace_lone_surrogates(text) {
            // JS strings may hold unpaired surrogates, which JSON.stringify escapes and
            // serde_json (rightly) refuses; they become U+FFFD, as any UTF-8 conversion would.
            Some(repaired) => parse_json_text(&repaired, what),
            None => Err(Error::invalid_argument(format!("{what} is not valid JSON: {error}"))),
        },
    }
}

/// Rewrites `\uD800`-style escapes that are not half of a pair as `\uFFFD`; `None` if there are none.
fn replace_lone_surrogates(json: &str) -> Option<String> {
    fn escape_at(bytes: &[u8], i: usize) -> Option<u16> {
        if bytes.get(i) == Some(&b'\\') && bytes.get(i + 1) == Some(&b'u') {
            let hex = std::str::from_utf8(bytes.get(i + 2..i + 6)?).ok()?;
            u16::from_str_radix(hex, 16).ok()
        } else {
            None
        }
    }
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let mut changed = false;
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(bytes, i) {
            Some(0xD800..=0xDBFF) if matches!(escape_at(bytes, i + 6), Some(0xDC00..=0xDFFF)) => i += 12,
            Some(0xD800..=0xDFFF) => {
                out.push_str(&json[copied..i]);
                out.push_str("\\uFFFD");
                i += 6;
                copied = i;
                changed = true;
            }
            // Any other escape is two characters or a \uXXXX that is not a surrogate.
            Some(_) => i += 6,
            None => i += 2,
        }
    }
    if !changed {
        return None;
    }
    out.push_str(&json[copied..]);
    Some(out)
}

/// Serialises straight to JSON text (no intermediate `Value` tree) and lets the engine parse it.
fn to_js<T: serde::Serialize + ?Sized>(value: &T) -> Result<JsValue> {
    let text = serde_json::to_string(value).map_err(|e| Error::internal(format!("serialising a result: {e}")))?;
    JSON::parse(&text).map_err(|_| Error::internal("the engine could not parse a result the library serialised"))
}

fn string_arg(value: &JsValue, what: &str) -> Result<String> {
    value
        .as_string()
        .ok_or_else(|| Error::invalid_argument(format!("{what} must be a string, got {}", js_type(value))))
}

fn encoding_arg(value: &JsValue) -> Result<Encoding> {
    Encoding::parse(&string_arg(value, "the encoding")?)
}

fn format_arg(value: &JsValue, default: Format) -> Result<Format> {
    if value.is_undefined() || value.is_null() {
        return Ok(default);
    }
    Format::parse(&string_arg(value, "the format")?)
}

/// An options object, read as JSON, whose keys are taken one by one; leftovers are typos.
struct Options {
    map: Map<String, Value>,
    what: &'static str,
}

impl Options {
    fn read(value: &JsValue, what: &'static str) -> Result<Options> {
        if value.is_undefined() || value.is_null() {
            return Ok(Options { map: Map::new(), what });
        }
        match from_js(value, what)? {
            Value::Object(map) => Ok(Options { map, what }),
            other => Err(Error::invalid_argument(format!(
                "{what} must be an object, got {}",
                message::json::type_name(&other)
            ))),
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        self.map.remove(key).filter(|v| !v.is_null())
    }

    fn take_str(&mut self, key: &str) -> Result<Option<String>> {
        match self.take(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(Error::invalid_argument(format!(
                "{}.{key} must be a string, got {}",
                self.what,
                message::json::type_name(&other)
            ))),
        }
    }

    fn finish(self) -> Result<()> {
        match self.map.keys().next() {
            Some(key) => Err(Error::invalid_argument(format!("{} has an unknown option `{key}`", self.what))),
            None => Ok(()),
        }
    }
}

fn chat_count_value(count: &ChatCount) -> Value {
    json!({
        "total": count.total,
        "messages": count.messages,
        "tools": count.tools,
        "replyPriming": count.reply_priming,
    })
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
        throw(encoding_arg(&encoding).map(|encoding| Tokenizer { encoding }))
    }

    #[wasm_bindgen(getter, unchecked_return_type = "EncodingName")]
    pub fn encoding(&self) -> String {
        self.encoding.as_str().to_string()
    }

    /// Tokens in `text` (special-token text counts as ordinary text, as in a chat message).
    pub fn count(&self, #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue) -> JsResult<u32> {
        let text = throw(string_arg(&text, "text"))?;
        Ok(u32::try_from(self.encoding.count(&text)).unwrap_or(u32::MAX))
    }

    /// The token ids of `text`.
    pub fn encode(&self, #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue) -> JsResult<Vec<u32>> {
        let text = throw(string_arg(&text, "text"))?;
        throw(self.encoding.encode(&text))
    }

    /// A whole prompt, counted in one call: every message, the tools, the reply priming.
    #[wasm_bindgen(js_name = countMessages, unchecked_return_type = "ChatTokenCount")]
    pub fn count_messages(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Message[] | AnthropicRequest")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "CountOptions")] options: JsValue,
    ) -> JsResult<JsValue> {
        throw(self.count_messages_inner(&messages, &options))
    }
}

impl Tokenizer {
    fn count_messages_inner(&self, messages: &JsValue, options: &JsValue) -> Result<JsValue> {
        let mut options = Options::read(options, "options")?;
        let format = match options.take_str("format")? {
            Some(name) => Format::parse(&name)?,
            None => Format::OpenAi,
        };
        let tools = options.take("tools");
        options.finish()?;
        let messages = message::parse(from_js(messages, "messages")?, format)?;
        let count = tokens::count_messages(self.encoding, &messages, tools.as_ref())?;
        to_js(&chat_count_value(&count))
    }
}

mod agent;
mod load;

/// A session shared by the JS objects that show parts of it (`session.history`,
/// `session.memory`): the JS side is single-threaded, so a `RefCell` suffices, and a borrow that
/// fails (a re-entrant call from user code we ran, such as a `toJSON`) is an error, not a panic.
#[derive(Clone)]
struct Shared(Rc<SharedState>);

struct SharedState {
    session: RefCell<CoreSession>,
    request: RefCell<RequestCache>,
}

/// What the last build handed to JS: the request form of each context message (`EmitCache`),
/// and the frozen JS objects made from the forms, layout entries and receipt runs (`Interned`).
/// A build sends across the boundary only what was not in the last one; the rest are the same
/// objects.
#[derive(Default)]
struct RequestCache {
    forms: EmitCache,
    /// The format `sent` holds objects of.
    sent_format: Option<Format>,
    /// Per context message, a frozen array of its request objects.
    sent: Interned<ByIdentity>,
    layout: Interned<LayoutEntry>,
    runs: Interned<crate::compact::ReceiptRun>,
}

/// Where one context message comes from (`BuildResult.layout`).
#[derive(PartialEq, Eq, Hash, serde::Serialize)]
struct LayoutEntry {
    sources: Vec<String>,
    section: crate::compact::Section,
    action: crate::compact::Action,
}

/// A message as a key by identity (its address, which the held `Arc` keeps from being reused).
struct ByIdentity(Arc<Message>);

impl PartialEq for ByIdentity {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for ByIdentity {}

impl std::hash::Hash for ByIdentity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as usize).hash(state);
    }
}

/// Frozen JS objects made for the last result, by the key they were made from: a build's
/// messages, layout and receipt runs are mostly those of the build before, and only the new ones
/// cross the boundary (in one `JSON.parse`).
struct Interned<K> {
    objects: FastMap<K, JsValue>,
}

impl<K> Default for Interned<K> {
    fn default() -> Self {
        Interned { objects: FastMap::default() }
    }
}

impl<K: std::hash::Hash + Eq> Interned<K> {
    /// One object per key, in order: the last call's for keys it had, the others from `make`
    /// (given the keys without one, it returns a JS array of their objects, in that order).
    /// Objects of keys not asked for are forgotten.
    fn objects(&mut self, keys: Vec<K>, make: impl FnOnce(&[K]) -> Result<JsValue>) -> Result<Vec<JsValue>> {
        let mut previous = std::mem::take(&mut self.objects);
        let mut slots: Vec<Option<JsValue>> = Vec::with_capacity(keys.len());
        let mut missing: Vec<K> = Vec::new();
        for key in keys {
            match previous.remove(&key).or_else(|| self.objects.get(&key).cloned()) {
                Some(object) => {
                    slots.push(Some(object.clone()));
                    self.objects.insert(key, object);
                }
                None => {
                    slots.push(None);
                    missing.push(key);
                }
            }
        }
        drop(previous);
        let made = if missing.is_empty() { js_sys::Array::new() } else { js_sys::Array::from(&make(&missing)?) };
        let mut made = missing.into_iter().zip(made.iter());
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            let object = match slot {
                Some(object) => object,
                None => match made.next() {
                    Some((key, object)) => {
                        deep_freeze(&object);
                        self.objects.insert(key, object.clone());
                        object
                    }
                    None => return Err(Error::internal("fewer objects made than asked for")),
                },
            };
            out.push(object);
        }
        Ok(out)
    }

    /// `objects` for keys that serialise to their objects, as a JS array.
    fn array(&mut self, keys: Vec<K>) -> Result<js_sys::Array>
    where
        K: serde::Serialize,
    {
        Ok(self.objects(keys, to_js::<[K]>)?.into_iter().collect())
    }
}

impl Shared {
    fn new(session: CoreSession) -> Shared {
        Shared(Rc::new(SharedState { session: RefCell::new(session), request: RefCell::new(RequestCache::default()) }))
    }

    fn get(&self) -> Result<RefMut<'_, CoreSession>> {
        self.0
            .session
            .try_borrow_mut()
            .map_err(|_| Error::conflict("this session is already in use by a call that has not returned (a re-entrant call?)"))
    }

    fn request_cache(&self) -> Result<RefMut<'_, RequestCache>> {
        self.0.request.try_borrow_mut().map_err(|_| Error::internal("the build cache is in use"))
    }
}

/// The whole conversation, append-only: stable ids, lossless read-back in either format, and
/// token counts cached per message.
#[wasm_bindgen]
pub struct ConversationHistory {
    session: Shared,
}

/// Freezes a parsed JSON value all the way down: objects shared between builds must not change.
fn deep_freeze(value: &JsValue) {
    if !value.is_object() {
        return;
    }
    let object = Object::unchecked_from_js_ref(value);
    Object::freeze(object);
    for child in Object::values(object).iter() {
        deep_freeze(&child);
    }
}

impl RequestCache {
    /// The request as the provider takes it (OpenAI's message array, Anthropic's
    /// `{ system?, messages }`): the objects of the last build for messages still in the context.
    fn request_js(&mut self, assembled: &Assembled) -> Result<JsValue> {
        if self.sent_format != Some(assembled.format) {
            self.sent = Interned::default();
            self.sent_format = Some(assembled.format);
        }
        let own: Vec<ByIdentity> = assembled
            .pieces
            .iter()
            .filter_map(|piece| match piece {
                Piece::Own(message) => Some(ByIdentity(Arc::clone(message))),
                Piece::Joined(_) => None,
            })
            .collect();
        let forms = &self.forms;
        let own = self.sent.objects(own, |missing| to_js(&missing.iter().map(|m| forms.own(&m.0)).collect::<Vec<_>>()))?;
        // Messages emitted together are new each build: all of them in one `JSON.parse`.
        let joined: Vec<&[Value]> = assembled
            .pieces
            .iter()
            .filter_map(|piece| match piece {
                Piece::Joined(list) => Some(list.as_slice()),
                Piece::Own(_) => None,
            })
            .collect();
        let joined = if joined.is_empty() { js_sys::Array::new() } else { js_sys::Array::from(&to_js(&joined)?) };
        deep_freeze(&joined);
        let (mut own, mut joined) = (own.into_iter(), joined.iter());
        let out = js_sys::Array::new();
        for piece in &assembled.pieces {
            let objects = match piece {
                Piece::Own(_) => own.next(),
                Piece::Joined(_) => joined.next(),
            }
            .ok_or_else(|| Error::internal("a piece of the request has no objects"))?;
            let objects = js_sys::Array::from(&objects);
            for i in 0..objects.length() {
                out.push(&objects.get(i));
            }
        }
        match assembled.format {
            Format::OpenAi => Ok(out.into()),
            Format::Anthropic => {
                let request = Object::new();
                if let Some(system) = &assembled.system {
                    Reflect::set(&request, &"system".into(), &to_js(system)?).map_err(|_| Error::internal("could not set the request's system"))?;
                }
                Reflect::set(&request, &"messages".into(), &out).map_err(|_| Error::internal("could not set the request's messages"))?;
                Ok(request.into())
            }
        }
    }
}

#[wasm_bindgen]
impl ConversationHistory {
    #[wasm_bindgen(constructor)]
    pub fn new(#[wasm_bindgen(unchecked_optional_param_type = "HistoryOptions")] options: JsValue) -> JsResult<ConversationHistory> {
        throw(Self::from_options(&options))
    }

    #[wasm_bindgen(getter)]
    pub fn length(&self) -> u32 {
        self.session.get().map_or(0, |s| u32::try_from(s.history.len()).unwrap_or(u32::MAX))
    }

    #[wasm_bindgen(getter, unchecked_return_type = "EncodingName")]
    pub fn encoding(&self) -> JsResult<String> {
        throw(self.session.get().map(|s| s.history.encoding().as_str().to_string()))
    }

    /// The format `append`, `appendMany` and `messages` use when none is given.
    #[wasm_bindgen(getter, unchecked_return_type = "Format")]
    pub fn format(&self) -> JsResult<String> {
        throw(self.session.get().map(|s| s.format.as_str().to_string()))
    }

    /// How many messages have been tokenized so far: each at most once.
    #[wasm_bindgen(getter, js_name = countedMessages)]
    pub fn counted_messages(&self) -> JsResult<f64> {
        throw(self.session.get().map(|s| s.history.counted_messages() as f64))
    }

    /// Validates and appends one message; returns its id.
    pub fn append(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Message")] message: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Format")] format: JsValue,
    ) -> JsResult<String> {
        throw((|| {
            let value = from_js(&message, "message")?;
            let mut session = self.session.get()?;
            let format = format_arg(&format, session.format)?;
            session.history.append_value(value, format)
        })())
    }

    /// Validates and appends a list in one call; all or nothing.
    #[wasm_bindgen(js_name = appendMany)]
    pub fn append_many(
        &self,
        #[wasm_bindgen(unchecked_param_type = "Message[] | AnthropicRequest")] messages: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "Format")] format: JsValue,
    ) -> JsResult<Vec<String>> {
        throw((|| {
            let value = from_js(&messages, "messages")?;
            let mut session = self.session.get()?;
            let format = format_arg(&format, session.format)?;
            session.history.append_values(value, format)
        })())
    }

    pub fn ids(&self) -> JsResult<Vec<String>> {
        throw(self.session.get().map(|s| s.history.ids()))
    }

    /// The message with `id` exactly as it was appended, or `undefined`.
    #[wasm_bindgen(unchecked_return_type = "Message | undefined")]
    pub fn get(&self, #[wasm_bindgen(unchecked_param_type = "string")] id: JsValue) -> JsResult<JsValue> {
        throw((|| match self.session.get()?.history.get_value(&string_arg(&id, "id")?) {
            Some(value) => to_js(&value),
            None => Ok(JsValue::UNDEFINED),
        })())
    }

    /// Every message: an OpenAI array, or Anthropic's `{ system?, messages }`.
    #[wasm_bindgen(unchecked_return_type = "OpenAIMessage[] | AnthropicRequest")]
    pub fn messages(&self, #[wasm_bindgen(unchecked_optional_param_type = "Format")] format: JsValue) -> JsResult<JsValue> {
        throw((|| {
            let session = self.session.get()?;
            to_js(&session.history.emit(format_arg(&format, session.format)?))
        })())
    }

    /// The history as one prompt; only messages appended since the last count are tokenized.
    #[wasm_bindgen(js_name = tokenCount, unchecked_return_type = "ChatTokenCount")]
    pub fn token_count(&self) -> JsResult<JsValue> {
        throw(self.session.get().and_then(|mut s| to_js(&chat_count_value(&s.history.token_count()))))
    }

    /// Tokens by role and by part kind.
    #[wasm_bindgen(js_name = tokenReport, unchecked_return_type = "TokenReport")]
    pub fn token_report(&self) -> JsResult<JsValue> {
        throw(self.session.get().and_then(|mut s| {
            let report = s.history.token_report();
            to_js(&json!({
                "total": report.total,
                "messages": report.messages,
                "replyPriming": report.reply_priming,
                "byRole": report.by_role,
                "byPart": report.by_part,
            }))
        }))
    }
}

#[wasm_bindgen]
impl ConversationHistory {
    /// The context for the next call: `[system] + [summary] + [recent]`, reduced and checked
    /// against the provider's rules, with a receipt of what happened to every stored message.
    /// The stored history never changes.
    #[wasm_bindgen(unchecked_return_type = "BuildResult")]
    pub fn build(&self, #[wasm_bindgen(unchecked_optional_param_type = "BuildOptions & { format?: undefined }")] options: JsValue) -> JsResult<JsValue> {
        throw(self.build_inner(&options))
    }

    /// The last build's receipt message by message (its `runs` expanded, with each message's
    /// tokens); empty before the first build.
    #[wasm_bindgen(js_name = receiptEntries, unchecked_return_type = "ReceiptEntry[]")]
    pub fn receipt_entries(&self) -> JsResult<JsValue> {
        throw(self.session.get().and_then(|s| to_js(&s.history.last_receipt_entries())))
    }

    /// Marks the compaction the last build asked for as under way; a second one is a `ConflictError`.
    #[wasm_bindgen(js_name = beginSummary)]
    pub fn begin_summary(&self, #[wasm_bindgen(unchecked_param_type = "string")] request_id: JsValue) -> JsResult<()> {
        throw((|| self.session.get()?.history.begin_summary(&string_arg(&request_id, "the request id")?))())
    }

    /// Hands back the summary text; checked (not empty, within budget, required keys) before it is stored.
    #[wasm_bindgen(js_name = completeSummary, unchecked_return_type = "SummaryRecord")]
    pub fn complete_summary(
        &self,
        #[wasm_bindgen(unchecked_param_type = "string")] request_id: JsValue,
        #[wasm_bindgen(unchecked_param_type = "string")] text: JsValue,
        #[wasm_bindgen(unchecked_optional_param_type = "string")] created_at: JsValue,
    ) -> JsResult<JsValue> {
        throw((|| {
            let id = string_arg(&request_id, "the request id")?;
            let text = string_arg(&text, "the summary")?;
            let created_at = if created_at.is_undefined() || created_at.is_null() {
                None
            } else {
                Some(string_arg(&created_at, "createdAt")?)
            };
            let record = self.session.get()?.history.complete_summary(&id, &text, created_at)?;
            to_js(&record)
        })())
    }

    /// Abandons the compaction under way (the summariser failed); the next build asks again.
    #[wasm_bindgen(js_name = cancelSummary)]
    pub fn cancel_summary(&self, #[wasm_bindgen(unchecked_param_type = "string")] request_id: JsValue) -> JsResult<()> {
        throw((|| self.session.get()?.history.cancel_summary(&string_arg(&request_id, "the request id")?))())
    }

    /// The summary in force and any compaction under way, for storage.
    #[wasm_bindgen(js_name = summaryState, unchecked_return_type = "SummaryState")]
    pub fn summary_state(&self) -> JsResult<JsValue> {
        throw(self.session.get().and_then(|s| to_js(s.history.summary_state())))
    }

    #[wasm_bindgen(js_name = setSummaryState)]
    pub fn set_summary_state(&self, #[wasm_bindgen(unchecked_param_type = "SummaryState")] state: JsValue) -> JsResult<()> {
        throw((|| {
            let state = serde_json::from_value(from_js(&state, "the summary state")?)
                .map_err(|e| Error::invalid_argument(format!("invalid summary state: {e}")))?;
            self.session.get()?.history.set_summary_state(state)
        })())
    }
}

fn to_value<T: serde::Serialize>(value: &T) -> Result<Value> {
    serde_json::to_value(value).map_err(|e| Error::internal(format!("serialising a result: {e}")))
}

impl ConversationHistory {
    fn build_options(options: &JsValue, history_encoding: Encoding, history_format: Format) -> Result<BuildOptions> {
        let Options { mut map, .. } = Options::read(options, "build options")?;
        let mut value = match map.remove("profile") {
            None | Some(Value::Null) => Value::Object(Map::new()),
            Some(profile) => {
                let profile = match profile {
                    Value::String(name) => profile::resolve(&name)?,
                    other => Profile::from_value(other)?,
                };
                let encoding = profile.encoding()?;
                if encoding != history_encoding {
                    return Err(Error::invalid_argument(format!(
                        "profile {:?} counts with {} but this history counts with {}",
                        profile.name,
                        encoding.as_str(),
                        history_encoding.as_str()
                    )));
                }
                to_value(&profile.to_options()?)?
            }
        };
        if let Value::Object(base) = &mut value {
            if !base.contains_key("format") && !map.contains_key("format") {
                base.insert("format".into(), Value::from(history_format.as_str()));
            }
            base.extend(map);
        }
        BuildOptions::from_value(value)
    }

    fn build_inner(&self, options: &JsValue) -> Result<JsValue> {
        let (encoding, format) = {
            let session = self.session.get()?;
            (session.history.encoding(), session.format)
        };
        let options = Self::build_options(options, encoding, format)?;
        let BuildOutcome { mut context, summary_request, new_summary } = self.session.get()?.build(&options)?;
        #[derive(serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        struct BuildResult<'a> {
            /// Set afterwards (null here keeps the keys in order): the messages from
            /// `RequestCache::request_js`, the layout and the receipt's runs from `Interned::array`.
            messages: (),
            layout: (),
            tokens: &'a crate::compact::TokensByPart,
            receipt: &'a crate::compact::Receipt,
            summary_request: &'a Option<crate::compact::summary::SummaryRequest>,
            new_summary: &'a Option<crate::compact::summary::SummaryRecord>,
        }
        let mut cache = self.session.request_cache()?;
        let assembled = context.request(&mut cache.forms)?;
        let messages = cache.request_js(&assembled)?;
        let layout: Vec<LayoutEntry> = context
            .messages
            .iter_mut()
            .map(|m| LayoutEntry { sources: std::mem::take(&mut m.sources), section: m.section, action: m.action })
            .collect();
        let layout = cache.layout.array(layout)?;
        let runs = cache.runs.array(std::mem::take(&mut context.receipt.runs))?;
        let result = BuildResult {
            messages: (),
            layout: (),
            tokens: &context.tokens,
            receipt: &context.receipt,
            summary_request: &summary_request,
            new_summary: &new_summary,
        };
        let value = to_js(&result)?;
        let set = |target: &JsValue, key: &str, value: &JsValue| {
            Reflect::set(target, &key.into(), value).map_err(|_| Error::internal(format!("could not set the result's {key}")))
        };
        set(&value, "messages", &messages)?;
        set(&value, "layout", &layout)?;
        let receipt = Reflect::get(&value, &"receipt".into()).map_err(|_| Error::internal("the result has no receipt"))?;
        set(&receipt, "runs", &runs)?;
        Ok(value)
    }

    fn from_options(options: &JsValue) -> Result<ConversationHistory> {
        let mut options = Options::read(options, "options")?;
        let session = new_session(&mut options, MAIN_CONTEXT_ID, DEFAULT_MAX_LOOPS)?;
        options.finish()?;
        Ok(ConversationHistory { session: Shared::new(session) })
    }
}

/// A session from the options a history and a session share: `encoding` and `format`.
fn new_session(options: &mut Options, id: &str, max_loops: u32) -> Result<CoreSession> {
    let encoding = match options.take_str("encoding")? {
        Some(name) => Encoding::parse(&name)?,
        // Parsed, not named: the lite build refuses an encoding whose ranks are not loaded.
        None => Encoding::parse("o200k_base")?,
    };
    let mut session = CoreSession::new(id, encoding, max_loops)?;
    if let Some(name) = options.take_str("format")? {
        session.format = Format::parse(&name)?;
    }
    Ok(session)
}

/// Every rule of the provider's API that a message list breaks (empty when it is valid).
#[wasm_bindgen(js_name = validateMessages, unchecked_return_type = "Violation[]")]
pub fn validate_messages(
    #[wasm_bindgen(unchecked_param_type = "OpenAIMessage[] | AnthropicRequest")] messages: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Format")] format: JsValue,
) -> JsResult<JsValue> {
    throw((|| {
        let format = Format::parse(&string_arg(&format, "the format")?)?;
        let value = from_js(&messages, "messages")?;
        let violations = provider_request::validate(&value, format).err().unwrap_or_default();
        to_js(&violations)
    })())
}

/// The built-in profiles' names (models, and seed 004's `init` and `execute` agents).
#[wasm_bindgen(js_name = profileNames)]
pub fn profile_names() -> Vec<String> {
    profile::builtin_names().into_iter().map(str::to_string).collect()
}

/// The profile for a model: its exact name or the longest built-in prefix.
#[wasm_bindgen(js_name = resolveProfile, unchecked_return_type = "Profile")]
pub fn resolve_profile(#[wasm_bindgen(unchecked_param_type = "string")] model: JsValue) -> JsResult<JsValue> {
    throw((|| to_js(&profile::resolve(&string_arg(&model, "the model")?)?))())
}

/// Installs an encoding's rank table (the `.cctab` files shipped with the package) in the lite
/// build, which embeds none; the full build already has both and ignores the call.
#[wasm_bindgen(js_name = loadRanks)]
pub fn load_ranks(
    #[wasm_bindgen(unchecked_param_type = "EncodingName")] encoding: JsValue,
    table: &[u8],
) -> JsResult<()> {
    let name = throw(string_arg(&encoding, "the encoding"))?;
    let bpe = match name.as_str() {
        "o200k_base" => crate::bpe::BpeEncoding::O200kBase,
        "cl100k_base" => crate::bpe::BpeEncoding::Cl100kBase,
        other => {
            return Err(js_error(Error::invalid_argument(format!(
                "no rank table for {other:?}: expected \"o200k_base\" or \"cl100k_base\""
            ))))
        }
    };
    crate::bpe::load_ranks(bpe, table).map_err(|e| js_error(Error::invalid_argument(e.to_string())))
}

/// Converts a message list between formats, for what both can express.
#[wasm_bindgen(js_name = convertMessages, unchecked_return_type = "OpenAIMessage[] | AnthropicRequest")]
pub fn convert_messages(
    #[wasm_bindgen(unchecked_param_type = "Message[] | AnthropicRequest")] messages: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Format")] from: JsValue,
    #[wasm_bindgen(unchecked_param_type = "Format")] to: JsValue,
) -> JsResult<JsValue> {
    throw((|| {
        let from = Format::parse(&string_arg(&from, "from")?)?;
        let to = Format::parse(&string_arg(&to, "to")?)?;
        to_js(&message::convert(from_js(&messages, "messages")?, from, to)?)
    })())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        assert_eq!(replace_lone_surrogates(r#""ok""#), None);
        assert_eq!(replace_lone_surrogates(r#""\ud83d\ude00""#), None, "a pair stays");
        assert_eq!(replace_lone_surrogates(r#""a\ud800b""#).as_deref(), Some(r#""a\uFFFDb""#));
        assert_eq!(replace_lone_surrogates(r#""\udc00\\u""#).as_deref(), Some(r#""\uFFFD\\u""#));
        assert_eq!(replace_lone_surrogates(r#""\\ud800""#), None, "an escaped backslash is not an escape");
        let value = parse_json_text(r#"{"t":"x\ud800"}"#, "message").unwrap();
        assert_eq!(value["t"], "x\u{FFFD}");
    }

    #[test]
    fn deep_nesting_is_refused_not_recursed() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        let error = parse_json_text(&deep, "messages").unwrap_err();
        assert!(error.message.contains("nested more than 128 levels"), "{error}");
    }
}
