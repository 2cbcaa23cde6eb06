//! Typed reads of a `serde_json::Value` that name the field at fault (`counted: invalid value: …`).
//!
//! The same reads as `serde_json::from_value` (same visitor calls, same error texts), by a
//! deserializer of our own whose map and sequence accessors prefix the key or index to an error
//! as it passes them. serde_path_to_error did this by wrapping the deserializer, which wraps
//! every visitor: each typed shape's visitors were compiled a second time around the wrappers,
//! 88 KB of the lite wasm (15 KB gzipped). Here each shape is compiled once, against this one.

use serde::de::{self, DeserializeOwned, DeserializeSeed, Expected, Unexpected, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Number, Value};
use std::fmt;

/// A typed read that failed: serde's message and where, innermost segment first. Boxed, as
/// serde_json's error is, so that every `Result` of a read stays small.
#[derive(Debug)]
pub struct PathError(Box<Failure>);

#[derive(Debug)]
struct Failure {
    message: String,
    innermost_first: Vec<Segment>,
    /// What was wrong, in words a JS user reads (no Rust types): see `Plain`.
    plain: Option<Plain>,
}

/// A read's failure in plain words, for the errors a JS user sees (`error::from_json`): what the
/// value must be and what it was, rather than serde's `invalid type: …, expected u32`.
#[derive(Clone, Debug, PartialEq)]
pub enum Plain {
    /// The value must be `expected` (`a whole number from 0 to 4294967295`), and was `got`.
    Expected { expected: String, got: String },
    /// The value must be one of these names, and was `got`.
    OneOf { names: &'static [&'static str], got: String },
    /// An object has a field it cannot have; it can have these.
    UnknownField { field: String, names: &'static [&'static str] },
    /// An object lacks a field it must have.
    Missing { field: &'static str },
}

/// JS numbers JSON cannot hold (NaN, ±Infinity) reach a typed read as a string of this character
/// and the number as JS writes it (the bindings put them so, where `JSON.stringify` would write
/// `null`, "not given"): `Plain` shows them as they were.
pub const NON_FINITE: char = '\u{FDD0}';

/// A value as a message shows what it got: its JSON, a number JSON cannot hold as JS writes it.
pub fn shown(value: &Value) -> String {
    match value.as_str().and_then(|text| text.strip_prefix(NON_FINITE)) {
        Some(number) => number.to_string(),
        None => crate::util::json_text::value_text(value),
    }
}

#[derive(Clone, Debug)]
enum Segment {
    Key(String),
    Index(usize),
}

impl PathError {
    #[cold]
    fn at(mut self, segment: Segment) -> Self {
        self.0.innermost_first.push(segment);
        self
    }

    /// Where the error is: `a.b[2].c`, or `.` for the value itself.
    pub fn path(&self) -> String {
        if self.0.innermost_first.is_empty() {
            return ".".into();
        }
        let mut path = String::new();
        for segment in self.0.innermost_first.iter().rev() {
            match segment {
                Segment::Index(index) => path.push_str(&format!("[{index}]")),
                Segment::Key(key) => {
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                }
            }
        }
        path
    }

    /// `path` without its innermost segment: the object or array holding the value at fault.
    pub fn container_path(&self) -> String {
        let failure = &self.0;
        let outer = PathError(Box::new(Failure {
            message: String::new(),
            innermost_first: failure.innermost_first.iter().skip(1).cloned().collect(),
            plain: None,
        }));
        outer.path()
    }

    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// What was wrong in plain words, when serde said it in its own.
    pub fn plain(&self) -> Option<&Plain> {
        self.0.plain.as_ref()
    }

    #[cold]
    fn with_plain(mut self, plain: Plain) -> Self {
        self.0.plain = Some(plain);
        self
    }
}

/// What serde's `expected` text says, in plain words.
fn plain_expected(expected: &str) -> String {
    let whole = |max: u64| format!("a whole number from 0 to {max}");
    match expected {
        "u8" => whole(u8::MAX.into()),
        "u16" => whole(u16::MAX.into()),
        "u32" => whole(u32::MAX.into()),
        "u64" | "usize" => "a whole number, 0 or more".into(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a string" | "a borrowed string" | "a character" | "a string or bytes" => "a string".into(),
        "a sequence" | "fewer elements in array" => "an array".into(),
        "a map" | "map" | "fewer elements in map" | "map with a single key" | "struct variant" => "an object".into(),
        "string or map" => "a string or an object".into(),
        "unit" | "unit value" => "null".into(),
        other if other.starts_with("struct ") => "an object".into(),
        other if other.starts_with("a tuple of size ") || other.starts_with("tuple") => "an array".into(),
        other => other.into(),
    }
}

/// A value serde describes (`integer `3``, `string "x"`), as a JS user would write it.
fn plain_got(unexpected: Unexpected) -> String {
    match unexpected {
        Unexpected::Unsigned(n) => n.to_string(),
        Unexpected::Signed(n) => n.to_string(),
        Unexpected::Float(value) => Number::from_f64(value).map_or_else(|| value.to_string(), |n| n.to_string()),
        Unexpected::Str(text) => match text.strip_prefix(NON_FINITE) {
            Some(number) => number.to_string(),
            None => format!("{text:?}"),
        },
        Unexpected::Bool(b) => b.to_string(),
        Unexpected::Unit => "null".into(),
        Unexpected::Seq => "an array".into(),
        Unexpected::Map => "an object".into(),
        other => other.to_string(),
    }
}

/// serde's list of names: `` `a` ``, `` `a` or `b` ``, `` one of `a`, `b`, `c` ``.
struct OneOf(&'static [&'static str]);

impl fmt::Display for OneOf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => Ok(()),
            [only] => write!(f, "`{only}`"),
            [a, b] => write!(f, "`{a}` or `{b}`"),
            names => {
                f.write_str("one of ")?;
                for (i, name) in names.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "`{name}`")?;
                }
                Ok(())
            }
        }
    }
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for PathError {}

impl de::Error for PathError {
    #[cold]
    fn custom<T: fmt::Display>(message: T) -> Self {
        PathError(Box::new(Failure { message: message.to_string(), innermost_first: Vec::new(), plain: None }))
    }

    // serde_json's wording: `null` and `floating point `1.5``, not serde's `unit value`/`1.5`.
    #[cold]
    fn invalid_type(unexpected: Unexpected, expected: &dyn Expected) -> Self {
        let plain = Plain::Expected { expected: plain_expected(&expected.to_string()), got: plain_got(unexpected) };
        Self::custom(format_args!("invalid type: {}, expected {expected}", JsonUnexpected(unexpected)))
            .with_plain(plain)
    }

    #[cold]
    fn invalid_value(unexpected: Unexpected, expected: &dyn Expected) -> Self {
        let plain = Plain::Expected { expected: plain_expected(&expected.to_string()), got: plain_got(unexpected) };
        Self::custom(format_args!("invalid value: {}, expected {expected}", JsonUnexpected(unexpected)))
            .with_plain(plain)
    }

    // serde's own wording of the four below (its default methods), with their plain words.
    #[cold]
    fn invalid_length(len: usize, expected: &dyn Expected) -> Self {
        let plain = Plain::Expected { expected: plain_expected(&expected.to_string()), got: format!("{len} items") };
        Self::custom(format_args!("invalid length {len}, expected {expected}")).with_plain(plain)
    }

    #[cold]
    fn unknown_variant(variant: &str, names: &'static [&'static str]) -> Self {
        let plain = Plain::OneOf { names, got: format!("{variant:?}") };
        match names {
            [] => Self::custom(format_args!("unknown variant `{variant}`, there are no variants")),
            _ => Self::custom(format_args!("unknown variant `{variant}`, expected {}", OneOf(names))),
        }
        .with_plain(plain)
    }

    #[cold]
    fn unknown_field(field: &str, names: &'static [&'static str]) -> Self {
        let plain = Plain::UnknownField { field: field.to_string(), names };
        match names {
            [] => Self::custom(format_args!("unknown field `{field}`, there are no fields")),
            _ => Self::custom(format_args!("unknown field `{field}`, expected {}", OneOf(names))),
        }
        .with_plain(plain)
    }

    #[cold]
    fn missing_field(field: &'static str) -> Self {
        Self::custom(format_args!("missing field `{field}`")).with_plain(Plain::Missing { field })
    }
}

struct JsonUnexpected<'a>(Unexpected<'a>);

impl fmt::Display for JsonUnexpected<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Unexpected::Unit => f.write_str("null"),
            // Number's Display writes a float as serde_json does (shortest round trip).
            Unexpected::Float(value) => match Number::from_f64(value) {
                Some(number) => write!(f, "floating point `{number}`"),
                None => f.write_str("floating point"),
            },
            other => fmt::Display::fmt(&other, f),
        }
    }
}

/// `value` read as a `T`, as `serde_json::from_value` reads it; the error says where.
pub fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, PathError> {
    T::deserialize(ValueDe(value))
}

type Result<T, E = PathError> = std::result::Result<T, E>;

struct ValueDe(Value);

fn unexpected(value: &Value) -> Unexpected<'_> {
    match value {
        Value::Null => Unexpected::Unit,
        Value::Bool(b) => Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => Unexpected::Unsigned(u),
            (None, Some(i), _) => Unexpected::Signed(i),
            (None, None, f) => Unexpected::Float(f.unwrap_or(f64::NAN)),
        },
        Value::String(s) => Unexpected::Str(s),
        Value::Array(_) => Unexpected::Seq,
        Value::Object(_) => Unexpected::Map,
    }
}

#[cold]
fn invalid_type(value: &Value, expected: &dyn Expected) -> PathError {
    de::Error::invalid_type(unexpected(value), expected)
}

/// An enum's value that is not a name (nor a one-key object): in plain words, one of `names`.
#[cold]
fn not_a_name(value: &Value, names: &'static [&'static str]) -> PathError {
    invalid_type(value, &"string or map").with_plain(Plain::OneOf { names, got: plain_got(unexpected(value)) })
}

// What a typed read expects, taken out of the value, else the error: outside the generic
// deserializer methods, so compiled once.
fn as_string(value: Value, expected: &dyn Expected) -> Result<String> {
    match value {
        Value::String(s) => Ok(s),
        other => Err(invalid_type(&other, expected)),
    }
}

fn as_array(value: Value, expected: &dyn Expected) -> Result<Vec<Value>> {
    match value {
        Value::Array(array) => Ok(array),
        other => Err(invalid_type(&other, expected)),
    }
}

fn as_object(value: Value, expected: &dyn Expected) -> Result<Map<String, Value>> {
    match value {
        Value::Object(object) => Ok(object),
        other => Err(invalid_type(&other, expected)),
    }
}

fn visit_number<'de, V: Visitor<'de>>(n: &Number, visitor: V) -> Result<V::Value> {
    match (n.as_u64(), n.as_i64()) {
        (Some(u), _) => visitor.visit_u64(u),
        (None, Some(i)) => visitor.visit_i64(i),
        (None, None) => visitor.visit_f64(n.as_f64().unwrap_or(f64::NAN)),
    }
}

fn visit_array<'de, V: Visitor<'de>>(array: Vec<Value>, visitor: V) -> Result<V::Value> {
    let len = array.len();
    let mut seq = SeqDe { iter: array.into_iter(), index: 0 };
    let value = visitor.visit_seq(&mut seq)?;
    match seq.iter.len() {
        0 => Ok(value),
        _ => Err(de::Error::invalid_length(len, &"fewer elements in array")),
    }
}

fn visit_object<'de, V: Visitor<'de>>(object: Map<String, Value>, visitor: V) -> Result<V::Value> {
    let len = object.len();
    let mut map = MapDe { iter: object.into_iter(), key: String::new(), value: None };
    let value = visitor.visit_map(&mut map)?;
    match map.iter.len() {
        0 => Ok(value),
        _ => Err(de::Error::invalid_length(len, &"fewer elements in map")),
    }
}

/// Deserializer methods that do what `$target` does.
macro_rules! forward_to {
    ($target:ident: $($method:ident)*) => {
        $(fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
            self.$target(visitor)
        })*
    };
}

impl<'de> de::Deserializer<'de> for ValueDe {
    type Error = PathError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(b),
            Value::Number(n) => visit_number(&n, visitor),
            Value::String(s) => visitor.visit_string(s),
            Value::Array(array) => visit_array(array, visitor),
            Value::Object(object) => visit_object(object, visitor),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        match self.0 {
            Value::String(variant) => visitor.visit_enum(EnumDe { variant, value: None }),
            Value::Object(object) => {
                let mut entries = object.into_iter();
                match (entries.next(), entries.next()) {
                    (Some((variant, value)), None) => visitor.visit_enum(EnumDe { variant, value: Some(value) }),
                    _ => Err(de::Error::invalid_value(Unexpected::Map, &"map with a single key")),
                }
            }
            other => Err(not_a_name(&other, variants)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            Value::Bool(b) => visitor.visit_bool(b),
            other => Err(invalid_type(&other, &visitor)),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match &self.0 {
            Value::Number(n) => visit_number(n, visitor),
            other => Err(invalid_type(other, &visitor)),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let text = as_string(self.0, &visitor)?;
        visitor.visit_string(text)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            Value::String(s) => visitor.visit_string(s),
            Value::Array(array) => visit_array(array, visitor),
            other => Err(invalid_type(&other, &visitor)),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            other => Err(invalid_type(&other, &visitor)),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visit_array(as_array(self.0, &visitor)?, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visit_object(as_object(self.0, &visitor)?, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        // Unlike serde_json, not from an array of the fields in order: no caller writes one, and
        // each struct's sequence visitor would be compiled in for it (30 KB of the lite wasm).
        self.deserialize_map(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_unit()
    }

    // serde_json reads every number type from whatever the number holds (the visitor checks the
    // range); strings, chars and identifiers from strings; bytes from strings or arrays.
    forward_to!(deserialize_f64: deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32);
    forward_to!(deserialize_string: deserialize_char deserialize_str deserialize_identifier);
    forward_to!(deserialize_byte_buf: deserialize_bytes);
}

struct SeqDe {
    iter: std::vec::IntoIter<Value>,
    /// Elements read so far.
    index: usize,
}

// The accessors' work that does not depend on what is read is done outside their generic
// methods, which are compiled once per type read (40 struct types and their fields' types).
impl SeqDe {
    fn next_element(&mut self) -> Option<Value> {
        let value = self.iter.next()?;
        self.index += 1;
        Some(value)
    }

    #[cold]
    fn at_element(&self, error: PathError) -> PathError {
        error.at(Segment::Index(self.index - 1))
    }
}

impl<'de> de::SeqAccess<'de> for SeqDe {
    type Error = PathError;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>> {
        let Some(value) = self.next_element() else { return Ok(None) };
        match seed.deserialize(ValueDe(value)) {
            Ok(read) => Ok(Some(read)),
            Err(e) => Err(self.at_element(e)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

struct MapDe {
    iter: <Map<String, Value> as IntoIterator>::IntoIter,
    /// The key just read (for the error path) and its value, until that is read.
    key: String,
    value: Option<Value>,
}

impl MapDe {
    /// The next key, its value kept for `next_value_seed`.
    fn next_key(&mut self) -> Option<&str> {
        let (key, value) = self.iter.next()?;
        (self.key, self.value) = (key, Some(value));
        Some(&self.key)
    }

    fn take_value(&mut self) -> Result<Value> {
        self.value.take().ok_or_else(|| de::Error::custom("value is missing"))
    }

    #[cold]
    fn at_key(&mut self, error: PathError) -> PathError {
        error.at(Segment::Key(std::mem::take(&mut self.key)))
    }
}

impl<'de> de::MapAccess<'de> for MapDe {
    type Error = PathError;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>> {
        let Some(key) = self.next_key() else { return Ok(None) };
        match seed.deserialize(KeyDe(key)) {
            Ok(read) => Ok(Some(read)),
            Err(e) => Err(self.at_key(e)),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value> {
        let value = self.take_value()?;
        seed.deserialize(ValueDe(value)).map_err(|e| self.at_key(e))
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.iter.len())
    }
}

/// An object's key: a string, or (as serde_json reads keys) a number or a bool written as one.
struct KeyDe<'a>(&'a str);

impl<'de> de::Deserializer<'de> for KeyDe<'_> {
    type Error = PathError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_str(self.0)
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        let numeric = self.0.starts_with(|c: char| c == '-' || c.is_ascii_digit());
        match (numeric, self.0.parse::<u64>(), self.0.parse::<i64>(), self.0.parse::<f64>()) {
            (true, Ok(u), _, _) => visitor.visit_u64(u),
            (true, _, Ok(i), _) => visitor.visit_i64(i),
            (true, _, _, Ok(f)) => visitor.visit_f64(f),
            _ => Err(de::Error::custom("invalid value: expected key to be a number in quotes")),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        match self.0 {
            "true" => visitor.visit_bool(true),
            "false" => visitor.visit_bool(false),
            other => Err(de::Error::invalid_type(Unexpected::Str(other), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(self, _name: &'static str, visitor: V) -> Result<V::Value> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value> {
        visitor.visit_enum(EnumDe { variant: self.0.to_owned(), value: None })
    }

    forward_to!(deserialize_u64: deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32);

    forward_to_deserialize_any! {
        i128 u128 f32 f64 char str string bytes byte_buf unit unit_struct seq tuple tuple_struct
        map struct identifier ignored_any
    }
}

/// An enum written as its variant's name, or as an object with one key: the variant's name.
struct EnumDe {
    variant: String,
    value: Option<Value>,
}

impl<'de> de::EnumAccess<'de> for EnumDe {
    type Error = PathError;
    type Variant = VariantDe;

    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, VariantDe)> {
        let read = seed.deserialize(KeyDe(&self.variant))?;
        Ok((read, VariantDe { variant: self.variant, value: self.value }))
    }
}

struct VariantDe {
    variant: String,
    value: Option<Value>,
}

impl VariantDe {
    /// The variant's content, read by `read`; errors name the variant.
    fn content<T>(self, expected: &str, read: impl FnOnce(Value) -> Result<T>) -> Result<T> {
        match self.value {
            Some(value) => read(value).map_err(|e| e.at(Segment::Key(self.variant))),
            None => Err(de::Error::invalid_type(Unexpected::UnitVariant, &expected)),
        }
    }
}

impl<'de> de::VariantAccess<'de> for VariantDe {
    type Error = PathError;

    fn unit_variant(self) -> Result<()> {
        match self.value {
            Some(value) => de::Deserialize::deserialize(ValueDe(value)),
            None => Ok(()),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value> {
        self.content("newtype variant", |value| seed.deserialize(ValueDe(value)))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value> {
        self.content("tuple variant", |value| match value {
            Value::Array(array) if array.is_empty() => visitor.visit_unit(),
            Value::Array(array) => visit_array(array, visitor),
            other => Err(invalid_type(&other, &"tuple variant")),
        })
    }

    fn struct_variant<V: Visitor<'de>>(self, _fields: &'static [&'static str], visitor: V) -> Result<V::Value> {
        self.content("struct variant", |value| match value {
            Value::Object(object) => visit_object(object, visitor),
            other => Err(invalid_type(&other, &"struct variant")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    struct Outer {
        name: String,
        #[serde(default)]
        limit: Option<u8>,
        #[serde(default)]
        inner: Vec<Inner>,
        #[serde(default)]
        by_turn: BTreeMap<u32, String>,
        #[serde(default)]
        mode: Option<Mode>,
        #[serde(default)]
        shape: Option<Shape>,
        #[serde(default)]
        either: Option<Either>,
        #[serde(default)]
        pair: Option<(bool, f64)>,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        ratio: f64,
        count: usize,
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(rename_all = "lowercase")]
    enum Mode {
        Fast,
        Budget(u32),
        Window { size: u32 },
        Pair(u8, u8),
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(tag = "kind", rename_all = "lowercase")]
    enum Shape {
        Dot,
        Line { length: u32 },
    }

    #[derive(Deserialize, Debug, PartialEq)]
    #[serde(untagged)]
    enum Either {
        Number(u32),
        Text(String),
    }

    /// Reads `value` both ways: the same result, the same message; returns our path.
    fn both(value: Value) -> std::result::Result<Outer, (String, String)> {
        let theirs = serde_json::from_value::<Outer>(value.clone());
        match (from_value::<Outer>(value), theirs) {
            (Ok(ours), Ok(theirs)) => {
                assert_eq!(ours, theirs);
                Ok(ours)
            }
            (Err(ours), Err(theirs)) => {
                assert_eq!(ours.message(), theirs.to_string(), "the same message as serde_json");
                Err((ours.path(), ours.message().to_owned()))
            }
            (ours, theirs) => panic!("ours {ours:?}, serde_json {theirs:?}"),
        }
    }

    #[test]
    fn reads_what_serde_json_reads() {
        let read = both(json!({
            "name": "a", "limit": 7, "inner": [{"ratio": 1, "count": 2}, {"ratio": -0.5, "count": 0}],
            "byTurn": {"3": "x", "10": "y"}, "mode": {"window": {"size": 9}}, "shape": {"kind": "line", "length": 4},
            "either": "t", "pair": [true, 2.5]
        }))
        .unwrap();
        assert_eq!(read.inner[1], Inner { ratio: -0.5, count: 0 });
        assert_eq!(read.by_turn[&10], "y");
        assert_eq!(read.mode, Some(Mode::Window { size: 9 }));
        for (mode, expected) in [
            (json!("fast"), Mode::Fast),
            (json!({"budget": 5}), Mode::Budget(5)),
            (json!({"pair": [1, 2]}), Mode::Pair(1, 2)),
        ] {
            assert_eq!(both(json!({"name": "m", "mode": mode})).unwrap().mode, Some(expected));
        }
        assert_eq!(
            both(json!({"name": "e", "either": 4, "shape": {"kind": "dot"}})).unwrap().either,
            Some(Either::Number(4))
        );
    }

    #[test]
    fn errors_name_the_field_at_fault() {
        let cases = [
            (json!({"name": "a", "limit": 300}), "limit", "invalid value: integer `300`, expected u8"),
            (json!({"name": "a", "limit": 1.5}), "limit", "invalid type: floating point `1.5`, expected u8"),
            (json!({"name": null}), "name", "invalid type: null, expected a string"),
            (json!({"name": "a", "inner": [{"ratio": 1, "count": 2}, {"ratio": 1, "count": -1}]}), "inner[1].count", "invalid value: integer `-1`, expected usize"),
            (json!({"name": "a", "inner": [{"ratio": 1}]}), "inner[0]", "missing field `count`"),
            (json!({"name": "a", "limits": 1}), "limits", "unknown field `limits`, expected one of `name`, `limit`, `inner`, `byTurn`, `mode`, `shape`, `either`, `pair`"),
            (json!({"name": "a", "byTurn": {"x": "y"}}), "byTurn.x", "invalid value: expected key to be a number in quotes"),
            (json!({"name": "a", "mode": {"window": {"size": "big"}}}), "mode.window.size", "invalid type: string \"big\", expected u32"),
            (json!({"name": "a", "mode": {"fast": 1, "budget": 2}}), "mode", "invalid value: map, expected map with a single key"),
            (json!({"name": "a", "mode": 3}), "mode", "invalid type: integer `3`, expected string or map"),
            (json!({"name": "a", "pair": [true, 1, 2]}), "pair", "invalid length 3, expected fewer elements in array"),
            (json!({"name": "a", "either": true}), "either", "data did not match any variant of untagged enum Either"),
        ];
        // serde_json would read a struct from an array of its fields in order; we do not.
        let error = from_value::<Inner>(json!([1.5, 2])).unwrap_err();
        assert_eq!((error.path().as_str(), error.message()), (".", "invalid type: sequence, expected struct Inner"));
        for (value, path, message) in cases {
            let (ours_path, ours_message) = both(value.clone()).unwrap_err();
            assert_eq!((ours_path.as_str(), ours_message.as_str()), (path, message), "{value}");
        }
    }
}
