//! The conversation log: append-only, every message with a stable id, token counts cached per
//! message so that counting again after an append costs only the new message.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, ErrorKind, Result};
use crate::message::{self, Format, Message, PartKind};
use crate::tokens::anchor::{AnchoredCount, CountBasis};
use crate::tokens::calibration::Calibrated;
use crate::tokens::{self, ChatCount, Encoding, MessageTokens, REPLY_PRIMING};

mod lenient;
pub use lenient::{AppendRepair, RepairKind, RepairedAppend};

#[derive(Clone, Debug)]
pub struct Record {
    pub id: String,
    pub message: Arc<Message>,
    tokens: Option<MessageTokens>,
}

impl Record {
    /// The cached token count, if the message has been counted.
    pub fn tokens(&self) -> Option<MessageTokens> {
        self.tokens
    }
}

/// Where each tool call id stands: made by which message, answered by which.
#[derive(Clone, Debug, Default)]
struct ToolCallIndex {
    made_by: HashMap<String, usize>,
    answered_by: HashMap<String, usize>,
}

/// What appending a batch changes in a `ToolCallIndex`, checked against it: per call id, the
/// message that made it last, and what answers it now (`None`: the id was made again, so its
/// earlier answer no longer stands).
#[derive(Default)]
struct CallChanges {
    made_by: HashMap<String, usize>,
    answered_by: HashMap<String, Option<usize>>,
}

impl CallChanges {
    /// Checks `messages`, which would sit at `base`, `base + 1`, … after the messages `index`
    /// covers: a tool result must answer a call an earlier assistant message made, and answer
    /// it once; a call id is used again only once its call is answered. `describe` names an
    /// earlier message by position.
    fn check<'m>(
        index: &ToolCallIndex,
        messages: impl IntoIterator<Item = &'m Message>,
        base: usize,
        describe: impl Fn(usize) -> String,
    ) -> Result<CallChanges> {
        let mut changes = CallChanges::default();
        for (i, message) in messages.into_iter().enumerate() {
            let position = base + i;
            for call in message.tool_calls() {
                // Real logs reuse an id once its call is answered (tau-bench's GPT-4o runs do,
                // and the API accepted them): a result answers the latest call with its id.
                // Reusing an id whose call is still open would make the pairing ambiguous.
                if let Some(earlier) = changes.made_by(index, &call.id) {
                    if changes.answered_by(index, &call.id).is_none() {
                        return Err(Error::invalid_message(
                            i,
                            "",
                            format!(
                                "tool call id {:?} is already used by message {}, whose call is not answered yet",
                                call.id,
                                describe(earlier)
                            ),
                        ));
                    }
                    changes.answered_by.insert(call.id.clone(), None);
                }
                changes.made_by.insert(call.id.clone(), position);
            }
            for result in message.tool_results() {
                match (changes.made_by(index, &result.call_id), changes.answered_by(index, &result.call_id)) {
                    (None, _) => {
                        return Err(Error::invalid_message(
                            i,
                            "",
                            format!(
                                "tool result answers tool call {:?}, which no earlier assistant message made",
                                result.call_id
                            ),
                        ))
                    }
                    (Some(_), Some(answer)) => {
                        return Err(Error::invalid_message(
                            i,
                            "",
                            format!(
                                "tool call {:?} is already answered by message {}",
                                result.call_id,
                                describe(answer)
                            ),
                        ))
                    }
                    (Some(_), None) => {
                        changes.answered_by.insert(result.call_id.clone(), Some(position));
                    }
                }
            }
        }
        Ok(changes)
    }

    fn made_by(&self, index: &ToolCallIndex, id: &str) -> Option<usize> {
        self.made_by.get(id).copied().or_else(|| index.made_by.get(id).copied())
    }

    fn answered_by(&self, index: &ToolCallIndex, id: &str) -> Option<usize> {
        match self.answered_by.get(id) {
            Some(answer) => *answer,
            None => index.answered_by.get(id).copied(),
        }
    }

    /// Makes room in `index` for the changes: `apply` then allocates nothing.
    fn reserve_in(&self, index: &mut ToolCallIndex) -> Result<()> {
        let size = |n: usize| n.saturating_mul(std::mem::size_of::<(String, usize)>() + 1);
        index
            .made_by
            .try_reserve(self.made_by.len())
            .map_err(|_| Error::out_of_memory("the tool-call index", size(self.made_by.len())))?;
        index
            .answered_by
            .try_reserve(self.answered_by.len())
            .map_err(|_| Error::out_of_memory("the tool-call index", size(self.answered_by.len())))
    }

    fn apply(self, index: &mut ToolCallIndex) {
        for (id, position) in self.made_by {
            index.made_by.insert(id, position);
        }
        for (id, answer) in self.answered_by {
            match answer {
                Some(position) => index.answered_by.insert(id, position),
                None => index.answered_by.remove(&id),
            };
        }
    }
}

#[derive(Clone, Debug)]
pub struct ConversationHistory {
    encoding: Encoding,
    /// The log itself; message `i` has the id `m{i + 1}`. Everything else here is derived from it.
    records: Vec<Record>,
    calls: ToolCallIndex,
    counted_messages: u64,
    /// The records before this one are all counted (`count_all` looks at the others only).
    counted_prefix: usize,
    /// While an append commits, the length before it (see `recover_after_trap`).
    committing: Option<usize>,
    /// How many times messages were taken off the end (`truncate`, a trap's undo). The log is
    /// otherwise append-only: what a compactor derived from it by id stays true until this changes.
    rebases: u64,
    /// The positions of the messages pinned explicitly (`pin`), in order: user requests every
    /// context keeps (see `compact::pins`).
    pins: Vec<usize>,
}

/// One stored message as JSON: its id, the format it arrived in, and the message as appended.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LoggedMessage {
    pub id: String,
    pub format: Format,
    #[cfg_attr(test, ts(type = "Message"))]
    pub message: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TokenReport {
    pub total: usize,
    pub messages: usize,
    pub reply_priming: usize,
    #[cfg_attr(
        test,
        ts(type = "Partial<Record<\"system\" | \"developer\" | \"user\" | \"assistant\" | \"tool\", number>>")
    )]
    pub by_role: BTreeMap<&'static str, usize>,
    /// Part kinds plus `overhead` (framing, role and name).
    #[cfg_attr(
        test,
        ts(
            type = "Partial<Record<\"overhead\" | \"text\" | \"image\" | \"toolCall\" | \"toolResult\" | \"thinking\" | \"other\", number>>"
        )
    )]
    pub by_part: BTreeMap<&'static str, usize>,
    /// Some message is counted by an estimate (Anthropic messages, images of unknown size, parts
    /// counted as their JSON).
    pub estimate: bool,
    /// `total` as the provider will likely bill it, once a whole request's usage was recorded.
    pub calibration: Option<Calibrated>,
    /// What `total` is: exact, estimated, or anchored to the last bill (then `anchored.tokens`,
    /// which holds the system prompt and tools the bill paid for; `counted` is the messages').
    pub basis: CountBasis,
    /// The package's own count of the history (`total` unless anchored).
    pub counted: usize,
    pub anchored: Option<AnchoredCount>,
    /// Why the count is not anchored although usage was recorded.
    pub unanchored: Option<String>,
}

impl ConversationHistory {
    pub fn new(encoding: Encoding) -> Self {
        ConversationHistory {
            encoding,
            records: Vec::new(),
            calls: ToolCallIndex::default(),
            counted_messages: 0,
            counted_prefix: 0,
            committing: None,
            rebases: 0,
            pins: Vec::new(),
        }
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// Changes when messages were taken off the end: the ids of the dropped ones are given again
    /// to the next messages appended, so what was derived from them by id no longer holds.
    pub fn rebases(&self) -> u64 {
        self.rebases
    }

    /// How many messages have been tokenized so far (each at most once).
    pub fn counted_messages(&self) -> u64 {
        self.counted_messages
    }

    /// Parses and appends one message; returns its id.
    pub fn append_value(&mut self, value: Value, format: Format) -> Result<String> {
        self.append_value_pinned(value, format, false)
    }

    /// `append_value`, pinning the message when `pin` (see `pin`); a message that cannot be
    /// pinned is refused, and then not appended.
    pub fn append_value_pinned(&mut self, value: Value, format: Format, pin: bool) -> Result<String> {
        let message = message::parse_one(value, format, 0).map_err(single_message_error)?;
        let pins: &[usize] = if pin { &[0] } else { &[] };
        let mut ids = self.append_counted(vec![message], Vec::new(), pins).map_err(single_message_error)?;
        ids.pop().ok_or_else(|| Error::internal("append returned no id"))
    }

    /// Parses and appends a list (OpenAI array; Anthropic array or `{ system, messages }`).
    /// All or nothing: if any message is invalid, nothing is appended.
    pub fn append_values(&mut self, value: Value, format: Format) -> Result<Vec<String>> {
        self.append_values_pinned(value, format, &[])
    }

    /// `append_values`, pinning the messages at positions `pins` of the list (in the order they
    /// are appended: an Anthropic `system` first). All or nothing, pins included.
    pub fn append_values_pinned(&mut self, value: Value, format: Format, pins: &[usize]) -> Result<Vec<String>> {
        let messages = message::parse(value, format)?;
        self.append_counted(messages, Vec::new(), pins)
    }

    /// `append_values`, lenient: what the strict append refuses (a result whose call is not in
    /// the log, a second result, an id reused while its call is open) is repaired as a build
    /// repairs a context and reported (`lenient`); what is valid is kept as it is. Messages
    /// that are not messages at all are still refused.
    pub fn append_repaired(&mut self, value: Value, format: Format) -> Result<RepairedAppend> {
        self.append_repaired_pinned(value, format, &[])
    }

    /// `append_repaired`, pinning the messages at positions `pins` of the list given (a message
    /// the repair leaves out cannot be pinned: the append is refused).
    pub fn append_repaired_pinned(&mut self, value: Value, format: Format, pins: &[usize]) -> Result<RepairedAppend> {
        let messages = message::parse(value, format)?;
        let given = messages.len();
        let (messages, repairs) = lenient::repair(&self.calls, messages);
        // The positions of the messages kept, in the list given.
        let left_out: Vec<usize> =
            repairs.iter().filter(|r| r.kind == RepairKind::EmptyAfterRepair).map(|r| r.index).collect();
        let kept: Vec<usize> = (0..given).filter(|i| !left_out.contains(i)).collect();
        let pins = pins
            .iter()
            .map(|&i| match kept.binary_search(&i) {
                Ok(position) => Ok(position),
                Err(_) if i < given => Err(Error::invalid_argument(format!(
                    "pin: message {i} of the list cannot be pinned: the repair left it out"
                ))),
                Err(_) => Err(pin_out_of_range(i, given)),
            })
            .collect::<Result<Vec<_>>>()?;
        let ids = self.append_counted(messages, Vec::new(), &pins)?;
        Ok(RepairedAppend { ids, repairs })
    }

    /// Appends messages after checking them against the log (`CallChanges::check`), and that
    /// the tokenizer can take them (a message too long to tokenize lazily is counted now).
    /// All or nothing: on any error, and after a trap in the middle (`recover_after_trap`),
    /// nothing is appended.
    pub fn append_all(&mut self, messages: Vec<Message>) -> Result<Vec<String>> {
        self.append_counted(messages, Vec::new(), &[])
    }

    /// `append_all` with the counts made earlier (`known[i]` for `messages[i]`, by this version of
    /// the library for this encoding: kept in storage), which are not made again, and the
    /// messages at positions `pins` of the list pinned.
    fn append_counted(
        &mut self,
        messages: Vec<Message>,
        known: Vec<Option<MessageTokens>>,
        pins: &[usize],
    ) -> Result<Vec<String>> {
        let base = self.records.len();
        let changes = CallChanges::check(&self.calls, &messages, base, |position| self.describe(position, base))?;
        let mut pins = pins.to_vec();
        crate::util::sort::sort(&mut pins);
        pins.dedup();
        for &i in &pins {
            let message = messages.get(i).ok_or_else(|| pin_out_of_range(i, messages.len()))?;
            check_pinnable(message, &format!("message {i} of the list"))?;
        }
        let mut records = Vec::new();
        let mut keys = Vec::new();
        let size = |n: usize| n.saturating_mul(std::mem::size_of::<Record>());
        records
            .try_reserve_exact(messages.len())
            .map_err(|_| Error::out_of_memory("the messages", size(messages.len())))?;
        keys.try_reserve_exact(messages.len())
            .map_err(|_| Error::out_of_memory("the messages", size(messages.len())))?;
        let mut known = known.into_iter();
        for (i, message) in messages.into_iter().enumerate() {
            // A message without a count made earlier is counted when first needed.
            let tokens = known.next().flatten();
            let id = format!("m{}", base + i + 1);
            keys.push(id.clone());
            records.push(Record { id, message: Arc::new(message), tokens });
        }
        self.records.try_reserve(records.len()).map_err(|_| Error::out_of_memory("the log", size(records.len())))?;
        self.pins.try_reserve(pins.len()).map_err(|_| Error::out_of_memory("the pins", size(pins.len())))?;
        changes.reserve_in(&mut self.calls)?;
        // The commit: room for all of it is reserved, so it allocates nothing and cannot fail; a
        // trap in the middle (a JS stack overflow) is undone whole by `recover_after_trap`.
        self.committing = Some(base);
        changes.apply(&mut self.calls);
        self.records.extend(records);
        // After every stored message: the pins stay in order.
        self.pins.extend(pins.iter().map(|i| base + i));
        self.committing = None;
        Ok(keys)
    }

    /// After a wasm trap interrupted a call on this history (the JS layer's recovery, see
    /// `bindings`): an append caught half-way is undone whole, and the indexes it was updating
    /// are made again from the records. Those indexes may be torn, so they are leaked, never
    /// dropped. Returns whether an append was undone. (A trap in here leaves `committing` set,
    /// so that the next recovery does it all again.)
    pub fn recover_after_trap(&mut self) -> bool {
        let Some(base) = self.committing else { return false };
        // The records themselves are whole: each push wrote a record then the length.
        self.records.truncate(base);
        self.pins.retain(|&p| p < base);
        self.counted_prefix = self.counted_prefix.min(base);
        self.rebases += 1;
        let calls = self.calls_from_records();
        std::mem::forget(std::mem::replace(&mut self.calls, calls));
        self.counted_messages = self.records.iter().filter(|r| r.tokens.is_some()).count() as u64;
        self.committing = None;
        true
    }

    /// The tool-call index, made again from the records.
    fn calls_from_records(&self) -> ToolCallIndex {
        let mut calls = ToolCallIndex::default();
        // Cannot fail: every record passed this check when it was appended.
        if let Ok(changes) = CallChanges::check(&calls, self.records.iter().map(|r| &*r.message), 0, |p| p.to_string())
        {
            changes.apply(&mut calls);
        }
        calls
    }

    /// Drops the messages from position `len` on (a stored session rebasing its unsaved messages
    /// onto another writer's): ids and the tool-call index are what they were when the
    /// log held `len` messages.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.records.len() {
            return;
        }
        // Ids follow positions (`m{i + 1}`), so the next append reuses the dropped ones.
        self.records.truncate(len);
        self.pins.retain(|&p| p < len);
        self.counted_prefix = self.counted_prefix.min(len);
        self.rebases += 1;
        self.calls = self.calls_from_records();
    }

    /// Puts back the count of the message at `position`, made earlier with this encoding by this
    /// version of the library (kept in storage), so that it is not tokenized again.
    pub fn restore_count(&mut self, position: usize, tokens: MessageTokens) {
        if let Some(record) = self.records.get_mut(position) {
            record.tokens.get_or_insert(tokens);
        }
    }

    /// Pins the user message `id`: every context keeps it (cut to its head and tail if the
    /// budget needs), the receipt lists it, and the first message pinned stands for the task
    /// (see `compact::pins`). Only a request can be pinned: a user message with more than tool
    /// results.
    pub fn pin(&mut self, id: &str) -> Result<()> {
        let position = self.position(id).ok_or_else(|| Error::not_found(format!("no message {id:?} to pin")))?;
        check_pinnable(&self.records[position].message, id)?;
        if let Err(at) = self.pins.binary_search(&position) {
            self.pins.try_reserve(1).map_err(|_| Error::out_of_memory("the pins", std::mem::size_of::<usize>()))?;
            self.pins.insert(at, position);
        }
        Ok(())
    }

    /// Unpins the message `id` (one not pinned stays as it is).
    pub fn unpin(&mut self, id: &str) -> Result<()> {
        let position = self.position(id).ok_or_else(|| Error::not_found(format!("no message {id:?} to unpin")))?;
        if let Ok(at) = self.pins.binary_search(&position) {
            self.pins.remove(at);
        }
        Ok(())
    }

    /// The ids of the pinned messages, in order.
    pub fn pinned(&self) -> Vec<String> {
        self.pins.iter().filter_map(|&p| self.records.get(p)).map(|r| r.id.clone()).collect()
    }

    /// The positions of the pinned messages, in order.
    pub fn pinned_positions(&self) -> &[usize] {
        &self.pins
    }

    /// Pins exactly the messages `ids` (stored pins being restored): checked whole first, as `pin`
    /// checks one; on error nothing changes.
    pub fn set_pinned(&mut self, ids: &[String]) -> Result<()> {
        let mut pins = Vec::with_capacity(ids.len());
        for id in ids {
            let position = self.position(id).ok_or_else(|| Error::not_found(format!("no message {id:?} to pin")))?;
            check_pinnable(&self.records[position].message, id)?;
            pins.push(position);
        }
        crate::util::sort::sort(&mut pins);
        pins.dedup();
        self.pins = pins;
        Ok(())
    }

    fn describe(&self, position: usize, base: usize) -> String {
        match self.records.get(position) {
            Some(record) => record.id.clone(),
            None => format!("{} of this batch", position - base),
        }
    }

    pub fn ids(&self) -> Vec<String> {
        self.records.iter().map(|r| r.id.clone()).collect()
    }

    pub fn get(&self, id: &str) -> Option<&Record> {
        self.position(id).map(|i| &self.records[i])
    }

    /// Where the message with `id` sits in the log (0-based). Ids follow positions (`m{i + 1}`),
    /// so this reads the id rather than keeping an index of them.
    pub fn position(&self, id: &str) -> Option<usize> {
        let position = usize::try_from(message_number(id)?).ok()?.checked_sub(1)?;
        (position < self.records.len()).then_some(position)
    }

    /// The message with `id` exactly as it was appended, in its own format.
    pub fn get_value(&self, id: &str) -> Option<Value> {
        let position = self.position(id)?;
        let message = &self.records[position].message;
        if message.source == Format::AiSdk && message.has_tool_results() {
            // An AI SDK result names its tool: the name is the call's, earlier in the log.
            let names = message
                .tool_results()
                .filter_map(|result| {
                    let call = self.call_before(position, &result.call_id)?;
                    Some((call.id.clone(), call.name.clone()))
                })
                .collect();
            return message::emit_ai_sdk_naming([message.as_ref()], names).pop();
        }
        message::emit_one(message, message.source)
    }

    /// The latest call with `call_id` made before `position`: the one the index holds, unless the
    /// id was made again after `position` (ids are reused once answered), then found by a scan.
    fn call_before(&self, position: usize, call_id: &str) -> Option<&message::ToolCall> {
        let made_by = |p: usize| self.records[p].message.tool_calls().find(|call| call.id == call_id);
        match self.calls.made_by.get(call_id) {
            Some(&maker) if maker < position => made_by(maker),
            _ => (0..position.min(self.records.len())).rev().find_map(made_by),
        }
    }

    /// Every message as appended, with its id and format (what an export holds).
    pub fn logged(&self) -> Result<Vec<LoggedMessage>> {
        let messages = self
            .records
            .iter()
            .map(|r| {
                let message = self
                    .get_value(&r.id)
                    .ok_or_else(|| Error::internal(format!("message {} cannot be written out", r.id)))?;
                Ok(LoggedMessage { id: r.id.clone(), format: r.message.source, message })
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(messages)
    }

    /// Rebuilds a history from its logged messages, checking them as appends are checked: valid
    /// messages, tool results that answer earlier calls, ids in their order.
    pub fn from_logged(encoding: Encoding, logged: Vec<LoggedMessage>) -> Result<ConversationHistory> {
        ConversationHistory::from_counted(encoding, logged, Vec::new())
    }

    /// `from_logged` with the counts kept in storage (`known[i]` for `logged[i]`, made by this
    /// version of the library for `encoding`), which are then not made again.
    pub fn from_counted(
        encoding: Encoding,
        logged: Vec<LoggedMessage>,
        known: Vec<Option<MessageTokens>>,
    ) -> Result<ConversationHistory> {
        let mut history = ConversationHistory::new(encoding);
        let mut messages = Vec::with_capacity(logged.len());
        let mut ids = Vec::with_capacity(logged.len());
        for (i, logged) in logged.into_iter().enumerate() {
            let parsed = message::parse_one(logged.message, logged.format, i);
            messages.push(parsed.map_err(|e| corrupt(&format!("message {}", logged.id), e))?);
            ids.push(logged.id);
        }
        let assigned = history.append_counted(messages, known, &[]).map_err(|e| corrupt("its messages", e))?;
        if let Some((expected, found)) = assigned.iter().zip(&ids).find(|(a, b)| a != b) {
            return Err(Error::invalid_argument(format!(
                "corrupt export: message {found:?} is where {expected:?} belongs (ids run m1, m2, … in order)"
            )));
        }
        Ok(history)
    }

    pub fn emit(&self, format: Format) -> Value {
        message::emit(self.records.iter().map(|r| &*r.message), format)
    }

    /// Counts every message not counted yet (each is tokenized at most once).
    pub fn count_all(&mut self) {
        let encoding = self.encoding;
        // A count is never taken back, so a build after an append looks at the new messages only.
        for record in self.records.iter_mut().skip(self.counted_prefix) {
            if record.tokens.is_none() {
                record.tokens = Some(tokens::count_message(encoding, &record.message));
                self.counted_messages += 1;
            }
        }
        self.counted_prefix = self.records.len();
    }

    /// Tokens of the whole history as one prompt; only messages not counted before are tokenized.
    pub fn token_count(&mut self) -> ChatCount {
        self.count_all();
        let messages: Vec<u32> = self.records.iter().map(|r| r.tokens.map_or(0, |t| t.total)).collect();
        let total = messages.iter().map(|n| *n as usize).sum::<usize>() + REPLY_PRIMING;
        let estimate = self.is_estimate();
        ChatCount {
            total,
            messages,
            tools: 0,
            reply_priming: REPLY_PRIMING,
            estimate,
            basis: CountBasis::of(estimate),
            anchored: None,
        }
    }

    /// Tokens broken down by role and by part kind.
    pub fn token_report(&mut self) -> TokenReport {
        self.count_all();
        let mut by_role: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut by_part: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut total = REPLY_PRIMING;
        for record in &self.records {
            let Some(tokens) = record.tokens else { continue };
            *by_role.entry(record.message.role.as_str()).or_default() += tokens.total as usize;
            *by_part.entry("overhead").or_default() += tokens.overhead as usize;
            for kind in PartKind::ALL {
                let n = tokens.part(kind) as usize;
                if n > 0 {
                    *by_part.entry(kind.as_str()).or_default() += n;
                }
            }
            total += tokens.total as usize;
        }
        let estimate = self.is_estimate();
        // The history knows no bills: a session fills this in from its compactor.
        let calibration = None;
        TokenReport {
            total,
            messages: self.records.len(),
            reply_priming: REPLY_PRIMING,
            by_role,
            by_part,
            estimate,
            calibration,
            basis: CountBasis::of(estimate),
            counted: total,
            anchored: None,
            unanchored: None,
        }
    }

    fn is_estimate(&self) -> bool {
        self.records.iter().any(|r| r.message.source == Format::Anthropic || r.tokens.is_some_and(|t| t.estimated))
    }
}

/// The number `n` of a message id `m{n}` as appends give them (digits only, no leading zero);
/// `None` for any other text.
pub(crate) fn message_number(id: &str) -> Option<u64> {
    let digits = id.strip_prefix('m')?;
    if digits.starts_with('0') || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Only a request can be pinned: a user message with something besides tool results (`what`
/// names it in the error).
fn check_pinnable(message: &Message, what: &str) -> Result<()> {
    if message.role != message::Role::User {
        return Err(Error::invalid_argument(format!(
            "only a user message can be pinned, not {what}: its role is {}",
            message.role.as_str()
        )));
    }
    if message.content.parts.iter().all(|part| matches!(part, message::Part::ToolResult(_))) {
        return Err(Error::invalid_argument(format!(
            "only a user message with a request can be pinned: {what} holds only tool results"
        )));
    }
    Ok(())
}

fn pin_out_of_range(i: usize, len: usize) -> Error {
    Error::invalid_argument(format!("pin: {i} is not the position of a message of the list, which has {len}"))
}

/// The error for an export that cannot be what an export of this library wrote.
pub fn corrupt(what: &str, error: Error) -> Error {
    Error::invalid_argument(format!("corrupt export: {what}: {error}"))
}

/// A lone message's errors say "message" rather than "message 0 of a list of one".
fn single_message_error(mut error: Error) -> Error {
    if error.kind == ErrorKind::InvalidMessage && error.index == Some(0) {
        error.index = None;
        if let Some(path) = error.path.take() {
            error.path = Some(path.replacen("messages[0]", "message", 1));
        }
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn history() -> ConversationHistory {
        ConversationHistory::new(Encoding::O200kBase)
    }

    #[test]
    fn ids_are_stable_and_sequential() {
        let mut h = history();
        let ids = h
            .append_values(
                json!([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]),
                Format::OpenAi,
            )
            .unwrap();
        assert_eq!(ids, ["m1", "m2"]);
        assert_eq!(h.append_value(json!({"role": "user", "content": "again"}), Format::OpenAi).unwrap(), "m3");
        assert_eq!(h.get_value("m2"), Some(json!({"role": "assistant", "content": "hello"})));
        assert_eq!(h.get_value("m9"), None);
    }

    #[test]
    fn an_ai_sdk_result_read_alone_names_the_tool_of_its_call() {
        let mut h = history();
        h.append_value(
            json!({"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c1", "toolName": "search", "input": {}}]}),
            Format::AiSdk,
        )
        .unwrap();
        // A result made without the name (a sub-agent's, a converter's) is read back with it.
        let id = h
            .append_value(
                json!({"role": "tool", "content": [{"type": "tool-result", "toolCallId": "c1", "output": {"type": "text", "value": "ok"}}]}),
                Format::AiSdk,
            )
            .unwrap();
        let value = h.get_value(&id).unwrap();
        assert_eq!(value["content"][0]["toolName"], "search", "{value}");
    }

    #[test]
    fn a_bad_batch_appends_nothing() {
        let mut h = history();
        h.append_value(json!({"role": "user", "content": "hi"}), Format::OpenAi).unwrap();
        let error = h
            .append_values(
                json!([{"role": "user", "content": "ok"}, {"role": "robot", "content": "x"}]),
                Format::OpenAi,
            )
            .unwrap_err();
        assert_eq!(error.index, Some(1));
        assert!(error.to_string().contains("unknown role \"robot\""), "{error}");
        assert_eq!(h.len(), 1);
    }

    #[test]
    fn dangling_and_double_answers_are_refused() {
        let mut h = history();
        let error =
            h.append_value(json!({"role": "tool", "tool_call_id": "c1", "content": "x"}), Format::OpenAi).unwrap_err();
        assert!(error.message.contains("no earlier assistant message made"), "{error}");
        assert_eq!(error.index, None);
        h.append_value(
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            Format::OpenAi,
        )
        .unwrap();
        let open_reuse = h
            .append_value(
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
                Format::OpenAi,
            )
            .unwrap_err();
        assert!(
            open_reuse.message.contains("already used by message m1, whose call is not answered yet"),
            "{open_reuse}"
        );
        h.append_value(json!({"role": "tool", "tool_call_id": "c1", "content": "x"}), Format::OpenAi).unwrap();
        let again =
            h.append_value(json!({"role": "tool", "tool_call_id": "c1", "content": "y"}), Format::OpenAi).unwrap_err();
        assert!(again.message.contains("already answered by message m2"), "{again}");
        assert_eq!(h.len(), 2);
        // Once answered, an id may be used again (as real GPT-4o logs do); its result answers the new call.
        h.append_value(
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]}),
            Format::OpenAi,
        )
        .unwrap();
        h.append_value(json!({"role": "tool", "tool_call_id": "c1", "content": "z"}), Format::OpenAi).unwrap();
        assert_eq!(h.len(), 4);
    }

    #[test]
    fn truncating_restores_ids_and_the_tool_call_index() {
        let mut h = history();
        let call = |id: &str| json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
        let result = |id: &str| json!({"role": "tool", "tool_call_id": id, "content": "ok"});
        h.append_values(json!([call("c1"), result("c1"), call("c1")]), Format::OpenAi).unwrap();
        h.append_value(result("c1"), Format::OpenAi).unwrap();
        h.truncate(3);
        assert_eq!(h.ids(), ["m1", "m2", "m3"]);
        // The second c1 call is open again: its answer is accepted, a second call with its id is not.
        assert!(h.append_value(call("c1"), Format::OpenAi).is_err());
        assert_eq!(h.append_value(result("c1"), Format::OpenAi).unwrap(), "m4");
        h.truncate(1);
        assert_eq!(h.get("m2").map(|r| r.id.as_str()), None);
        assert_eq!(h.append_value(result("c1"), Format::OpenAi).unwrap(), "m2");
        h.truncate(10);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn counting_after_an_append_tokenizes_only_the_new_message() {
        let mut h = history();
        h.append_values(
            json!([{"role": "user", "content": "one"}, {"role": "assistant", "content": "two"}]),
            Format::OpenAi,
        )
        .unwrap();
        let before = h.token_count();
        assert_eq!(h.counted_messages(), 2);
        h.append_value(json!({"role": "user", "content": "three four five"}), Format::OpenAi).unwrap();
        let after = h.token_count();
        assert_eq!(h.counted_messages(), 3);
        let added = 3 + Encoding::O200kBase.count("user") + Encoding::O200kBase.count("three four five");
        assert_eq!(after.total, before.total + added);
        h.token_report();
        assert_eq!(h.counted_messages(), 3);
        // Messages appended after a truncate are counted, where counted ones were dropped.
        h.truncate(1);
        h.append_values(
            json!([{"role": "assistant", "content": "six"}, {"role": "user", "content": "seven"}]),
            Format::OpenAi,
        )
        .unwrap();
        let counts = h.token_count().messages;
        assert!(counts.iter().all(|&n| n > 0), "{counts:?}");
        assert_eq!(h.counted_messages(), 5);
    }

    #[test]
    fn the_report_adds_up() {
        let mut h = history();
        h.append_values(
            json!([{"role": "system", "content": "be brief"}, {"role": "user", "name": "ann", "content": "hello there"}]),
            Format::OpenAi,
        )
        .unwrap();
        let report = h.token_report();
        assert_eq!(report.total, h.token_count().total);
        assert_eq!(report.by_role.values().sum::<usize>() + report.reply_priming, report.total);
        assert_eq!(report.by_part.values().sum::<usize>() + report.reply_priming, report.total);
    }

    #[test]
    fn pins_are_user_requests_kept_in_order_and_dropped_with_their_messages() {
        let mut h = history();
        let call = json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]});
        h.append_values(
            json!([{"role": "system", "content": "s"}, {"role": "user", "content": "demo"}, {"role": "user", "content": "task"}, call]),
            Format::OpenAi,
        )
        .unwrap();
        h.pin("m3").unwrap();
        h.pin("m2").unwrap();
        h.pin("m3").unwrap();
        assert_eq!(h.pinned(), ["m2", "m3"]);
        assert_eq!(h.pin("m9").unwrap_err().kind, ErrorKind::NotFound);
        for (id, why) in [("m1", "not m1: its role is system"), ("m4", "not m4: its role is assistant")] {
            let error = h.pin(id).unwrap_err();
            assert!(error.kind == ErrorKind::InvalidArgument && error.message.contains(why), "{error}");
        }
        h.unpin("m2").unwrap();
        h.unpin("m2").unwrap();
        assert_eq!(h.pinned(), ["m3"]);
        // A user message of tool results alone is no request.
        h.append_value(
            json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "ok"}]}),
            Format::Anthropic,
        )
        .unwrap();
        assert!(h.pin("m5").unwrap_err().message.contains("holds only tool results"));

        // Pinned at append, all or nothing: a pin that cannot be is refused with the batch.
        let batch = json!([{"role": "user", "content": "next"}, {"role": "assistant", "content": "ok"}]);
        let error = h.append_values_pinned(batch.clone(), Format::OpenAi, &[1]).unwrap_err();
        assert!(error.message.contains("not message 1 of the list: its role is assistant"), "{error}");
        assert!(h.append_values_pinned(batch.clone(), Format::OpenAi, &[2]).is_err());
        assert_eq!(h.len(), 5);
        assert_eq!(h.append_values_pinned(batch, Format::OpenAi, &[0]).unwrap(), ["m6", "m7"]);
        assert_eq!(
            h.append_value_pinned(json!({"role": "user", "content": "more"}), Format::OpenAi, true).unwrap(),
            "m8"
        );
        assert_eq!(h.pinned(), ["m3", "m6", "m8"]);
        // Messages taken off the end take their pins with them; an append undone by a trap too.
        h.truncate(7);
        assert_eq!(h.pinned(), ["m3", "m6"]);
        h.committing = Some(5);
        assert!(h.recover_after_trap());
        assert_eq!(h.pinned(), ["m3"]);
        // Restored whole, or not at all.
        assert!(h.set_pinned(&["m2".into(), "m4".into()]).is_err());
        assert_eq!(h.pinned(), ["m3"]);
        h.set_pinned(&["m3".into(), "m2".into()]).unwrap();
        assert_eq!(h.pinned(), ["m2", "m3"]);
    }

    #[test]
    fn a_lenient_append_pins_by_the_position_in_the_list_given() {
        let mut h = history();
        // The list's first message answers a call the log does not hold: repaired into text.
        let list = json!([
            {"role": "tool", "tool_call_id": "gone", "content": "late"},
            {"role": "user", "content": "the real task"},
            {"role": "assistant", "content": "ok"}
        ]);
        let appended = h.append_repaired_pinned(list.clone(), Format::OpenAi, &[1]).unwrap();
        assert_eq!(appended.ids.len(), 3);
        assert_eq!(h.pinned(), [appended.ids[1].clone()]);
        assert!(h.append_repaired_pinned(list, Format::OpenAi, &[3]).unwrap_err().message.contains("has 3"));
    }

    #[test]
    fn a_text_with_a_run_over_a_megabyte_is_stored_and_counted() {
        let mut h = history();
        let run = "=".repeat((1 << 20) + 3);
        let id = h.append_value(json!({"role": "user", "content": run}), Format::OpenAi).unwrap();
        assert_eq!(h.get_value(&id).unwrap()["content"], run);
        let count = h.token_count();
        assert!(!count.estimate);
        let text = Encoding::O200kBase.count(&run);
        assert_eq!(count.messages[0] as usize, 3 + Encoding::O200kBase.count("user") + text);
        assert!(text > 0 && text < run.len() / 4);
    }
}
