//! Reading JSON objects field by field with errors that name the message index and the path,
//! keeping every field nobody asked for as `extra`.

use serde_json::{Map, Value};

use crate::error::{Error, Result};

pub(crate) fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Where an object sits in its message (`content[2]`, `tool_calls[0].function`), written out
/// only for an error: a tool call's two objects each formatted and copied theirs, a handful of
/// allocations per call that loading 5,000 stored messages paid ~5 ms for (restarted Chromium).
pub(crate) enum Base {
    /// The message itself.
    Message,
    /// Item `i` of the message's list `key`.
    Item(&'static str, usize),
    /// Field `field` of item `i` of the message's list `key`.
    ItemField(&'static str, usize, &'static str),
    /// A path written out (deeper places, which are rare).
    Text(String),
}

impl Base {
    fn text(&self) -> String {
        match self {
            Base::Message => String::new(),
            Base::Item(key, i) => format!("{key}[{i}]"),
            Base::ItemField(key, i, field) => format!("{key}[{i}].{field}"),
            Base::Text(text) => text.clone(),
        }
    }
}

/// An object being taken apart: known fields are taken out, what remains is the extra.
/// (Held as a list, not the object's map: an object has a handful of fields, which a scan finds
/// faster than a hashed lookup, and a map's `shift_remove` moves the fields after the one taken
/// and re-indexes them: 6.4 ms of loading 5,000 stored messages, in a restarted browser.) A field
/// taken stays in the list without its value, so that the list keeps the object's key order.
pub(crate) struct Fields {
    fields: Vec<(String, Option<Value>)>,
    index: usize,
    base: Base,
}

impl Fields {
    pub fn new(value: Value, index: usize, base: Base, what: &str) -> Result<Fields> {
        match value {
            Value::Object(map) => {
                Ok(Fields { fields: map.into_iter().map(|(k, v)| (k, Some(v))).collect(), index, base })
            }
            other => Err(Error::invalid_message(
                index,
                &base.text(),
                format!("{what} must be an object, got {}", type_name(&other)),
            )),
        }
    }

    pub fn index(&self) -> usize {
        self.index
    }

    /// The path of field `key`, e.g. `content[2].image_url`.
    pub fn path(&self, key: &str) -> String {
        match &self.base {
            Base::Message => key.to_string(),
            base => format!("{}.{key}", base.text()),
        }
    }

    /// The place of field `key`, as the base of the object it holds.
    pub fn child(&self, key: &'static str) -> Base {
        match self.base {
            Base::Item(list, i) => Base::ItemField(list, i, key),
            _ => Base::Text(self.path(key)),
        }
    }

    /// The place of item `i` of the list in field `key`.
    pub fn item(&self, key: &'static str, i: usize) -> Base {
        match self.base {
            Base::Message => Base::Item(key, i),
            _ => Base::Text(format!("{}[{i}]", self.path(key))),
        }
    }

    pub fn error(&self, key: &str, message: impl Into<String>) -> Error {
        Error::invalid_message(self.index, &self.path(key), message)
    }

    fn slot(&mut self, key: &str) -> Option<&mut Option<Value>> {
        self.fields.iter_mut().find(|(name, _)| name == key).map(|(_, value)| value)
    }

    pub fn has(&self, key: &str) -> bool {
        self.peek(key).is_some()
    }

    pub fn peek(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(name, _)| name == key).and_then(|(_, value)| value.as_ref())
    }

    /// Takes a field out; the others keep their order.
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.slot(key)?.take()
    }

    /// Puts a value back, to travel verbatim with the extra fields (where it was, if it was there).
    pub fn keep(&mut self, key: &str, value: Value) {
        match self.slot(key) {
            Some(slot) => *slot = Some(value),
            None => self.fields.push((key.to_string(), Some(value))),
        }
    }

    pub fn required_str(&mut self, key: &str) -> Result<String> {
        match self.take(key) {
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(self.error(key, format!("`{key}` must be a string, got {}", type_name(&other)))),
            None => Err(self.error(key, format!("missing `{key}`"))),
        }
    }

    pub fn optional_str(&mut self, key: &str) -> Result<Option<String>> {
        match self.take(key) {
            Some(Value::String(s)) => Ok(Some(s)),
            Some(other) => Err(self.error(key, format!("`{key}` must be a string, got {}", type_name(&other)))),
            None => Ok(None),
        }
    }

    pub fn optional_bool(&mut self, key: &str) -> Result<Option<bool>> {
        match self.take(key) {
            Some(Value::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(self.error(key, format!("`{key}` must be a boolean, got {}", type_name(&other)))),
            None => Ok(None),
        }
    }

    /// The fields not taken (the extra), with the object's key order when it is not what the
    /// emitter writes: the keys of `written` in that order (those present), then the others in
    /// theirs. `written` is what the emitter of this object puts first, itself.
    pub fn rest_in(self, written: &[&str]) -> Extra {
        let rank = |key: &str| written.iter().position(|w| *w == key);
        let mut last = None;
        let mut others = false;
        let mut as_written = true;
        for (key, _) in &self.fields {
            match rank(key) {
                Some(r) if !others && last.is_none_or(|last| r > last) => last = Some(r),
                Some(_) => as_written = false,
                None => others = true,
            }
        }
        let order = (!as_written).then(|| self.fields.iter().map(|(key, _)| Box::from(key.as_str())).collect());
        let map: Map<String, Value> = self.fields.into_iter().filter_map(|(key, value)| Some((key, value?))).collect();
        Extra::from(map).with_order(order)
    }
}

/// Puts `extra` back after the known fields, without overwriting any of them, in the object's
/// own key order when it came in another than the emitter's (`Fields::rest_in`).
pub(crate) fn with_extra(object: Map<String, Value>, extra: &Extra) -> Value {
    let object = merge_fields(object, extra);
    match extra.order() {
        Some(order) => Value::Object(in_order(object, order.iter().map(|k| &**k))),
        None => Value::Object(object),
    }
}

/// Puts `fields` after the known fields, without overwriting any of them.
pub(crate) fn merge_fields<'a>(
    mut object: Map<String, Value>,
    fields: impl IntoIterator<Item = (&'a String, &'a Value)>,
) -> Map<String, Value> {
    for (key, value) in fields {
        if !object.contains_key(key) {
            object.insert(key.clone(), value.clone());
        }
    }
    object
}

/// `object` with the keys of `order` first, in that order (those it has), then its others.
pub(crate) fn in_order<'k>(object: Map<String, Value>, order: impl IntoIterator<Item = &'k str>) -> Map<String, Value> {
    let mut entries: Vec<Option<(String, Value)>> = object.into_iter().map(Some).collect();
    let mut out = Map::with_capacity(entries.len());
    for key in order {
        if let Some((key, value)) =
            entries.iter_mut().find(|e| e.as_ref().is_some_and(|(k, _)| k == key)).and_then(Option::take)
        {
            out.insert(key, value);
        }
    }
    out.extend(entries.into_iter().flatten());
    out
}

/// The fields of a message, part or call that no codec understands, kept verbatim to travel back
/// out, and the object's key order when it came in another than the emitter writes (so that a
/// message reads back byte for byte as it was appended: a prompt cache keys on the bytes).
/// Almost every message has neither, so none costs one null pointer rather than an empty map
/// (72 bytes natively, ~32 in wasm, times several per message: most of a message's footprint).
#[derive(Clone, Debug, Default)]
pub struct Extra(Option<Box<ExtraFields>>);

#[derive(Clone, Debug, Default)]
struct ExtraFields {
    map: Map<String, Value>,
    /// Every key of the object as it came, in order (`Fields::rest_in`).
    order: Option<Box<[Box<str>]>>,
}

/// Two extras are equal when their fields are: the key order is how the object was written.
impl PartialEq for Extra {
    fn eq(&self, other: &Extra) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => a.map == b.map,
            _ => self.is_empty() && other.is_empty(),
        }
    }
}

impl Extra {
    pub fn new() -> Extra {
        Extra(None)
    }

    /// Whether it has no fields (a key order alone is not one).
    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|fields| fields.map.is_empty())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref()?.map.get(key)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        self.0.get_or_insert_with(Box::default).map.insert(key, value)
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let fields = self.0.as_mut()?;
        let removed = fields.map.shift_remove(key);
        if fields.map.is_empty() && fields.order.is_none() {
            self.0 = None;
        }
        removed
    }

    pub fn iter(&self) -> ExtraIter<'_> {
        self.0.as_deref().map(|fields| &fields.map).into_iter().flatten()
    }

    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|fields| fields.map).unwrap_or_default()
    }

    /// The object's keys as it came, when not in the order its emitter writes.
    pub fn order(&self) -> Option<&[Box<str>]> {
        self.0.as_ref()?.order.as_deref()
    }

    pub(crate) fn with_order(mut self, order: Option<Box<[Box<str>]>>) -> Extra {
        if order.is_some() {
            self.0.get_or_insert_with(Box::default).order = order;
        }
        self
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(map: Map<String, Value>) -> Extra {
        Extra((!map.is_empty()).then(|| Box::new(ExtraFields { map, order: None })))
    }
}

/// The fields of an `Extra`, in order (no allocation: most are empty and iterated per emit).
pub type ExtraIter<'a> = std::iter::Flatten<std::option::IntoIter<&'a Map<String, Value>>>;

impl<'a> IntoIterator for &'a Extra {
    type Item = (&'a String, &'a Value);
    type IntoIter = ExtraIter<'a>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}
