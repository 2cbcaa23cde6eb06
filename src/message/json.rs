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
/// and re-indexes them: 6.4 ms of loading 5,000 stored messages, in a restarted browser.)
pub(crate) struct Fields {
    fields: Vec<(String, Value)>,
    index: usize,
    base: Base,
}

impl Fields {
    pub fn new(value: Value, index: usize, base: Base, what: &str) -> Result<Fields> {
        match value {
            Value::Object(map) => Ok(Fields { fields: map.into_iter().collect(), index, base }),
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

    fn position(&self, key: &str) -> Option<usize> {
        self.fields.iter().position(|(name, _)| name == key)
    }

    pub fn has(&self, key: &str) -> bool {
        self.position(key).is_some()
    }

    pub fn peek(&self, key: &str) -> Option<&Value> {
        self.position(key).map(|i| &self.fields[i].1)
    }

    /// Takes a field out; the others keep their order.
    pub fn take(&mut self, key: &str) -> Option<Value> {
        self.position(key).map(|i| self.fields.remove(i).1)
    }

    /// Puts a value back, to travel verbatim with the extra fields (last, as a map's insert of a
    /// key it no longer has puts it).
    pub fn keep(&mut self, key: &str, value: Value) {
        match self.position(key) {
            Some(i) => self.fields[i].1 = value,
            None => self.fields.push((key.to_string(), value)),
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

    pub fn rest(self) -> Extra {
        Extra::from(self.fields.into_iter().collect::<Map<String, Value>>())
    }
}

/// Puts `extra` back after the known fields, without overwriting any of them.
pub(crate) fn with_extra<'a>(
    mut object: Map<String, Value>,
    extra: impl IntoIterator<Item = (&'a String, &'a Value)>,
) -> Value {
    for (key, value) in extra {
        if !object.contains_key(key) {
            object.insert(key.clone(), value.clone());
        }
    }
    Value::Object(object)
}

/// The fields of a message, part or call that no codec understands, kept verbatim to travel back
/// out. Almost every message has none, so none costs one null pointer rather than an empty map
/// (72 bytes natively, ~32 in wasm, times several per message: most of a message's footprint).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extra(Option<Box<Map<String, Value>>>);

impl Extra {
    pub fn new() -> Extra {
        Extra(None)
    }

    pub fn is_empty(&self) -> bool {
        self.0.as_ref().is_none_or(|map| map.is_empty())
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref()?.get(key)
    }

    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    pub fn insert(&mut self, key: String, value: Value) -> Option<Value> {
        self.0.get_or_insert_with(Box::default).insert(key, value)
    }

    pub fn remove(&mut self, key: &str) -> Option<Value> {
        let map = self.0.as_mut()?;
        let removed = map.shift_remove(key);
        if map.is_empty() {
            self.0 = None;
        }
        removed
    }

    pub fn iter(&self) -> ExtraIter<'_> {
        self.0.as_deref().into_iter().flatten()
    }

    pub fn into_map(self) -> Map<String, Value> {
        self.0.map(|map| *map).unwrap_or_default()
    }
}

impl From<Map<String, Value>> for Extra {
    fn from(map: Map<String, Value>) -> Extra {
        Extra((!map.is_empty()).then(|| Box::new(map)))
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
