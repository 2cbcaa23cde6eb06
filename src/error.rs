//! One error type for the whole core. The bindings turn it into a typed JS `Error` subclass,
//! so its message must say what was wrong and where, on its own.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// A message that does not follow the provider's format, or breaks the log's tool-id rules.
    InvalidMessage,
    /// Any other bad argument: a list that is not a list, an option, a name, a ratio, a budget.
    InvalidArgument,
    /// A lookup by id or name that found nothing.
    NotFound,
    /// A broken invariant inside the library: a bug, reported instead of panicking.
    Internal,
    /// An operation that clashes with one already under way (a second concurrent compaction).
    Conflict,
    /// Stored data that fails its integrity check or is missing a part (`path` names the record).
    Corrupt,
    /// The call needed more memory (or stack) than the host gives: refused before anything changed,
    /// or, after a trap, rolled back to the last consistent state.
    Resource,
    /// A summary handed back for a compaction or a memory turn that its request refuses (empty,
    /// over its budget, without its required keys): the summariser's failure, not the caller's.
    Summarizer,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::InvalidMessage => "InvalidMessage",
            ErrorKind::InvalidArgument => "InvalidArgument",
            ErrorKind::NotFound => "NotFound",
            ErrorKind::Internal => "Internal",
            ErrorKind::Conflict => "Conflict",
            ErrorKind::Corrupt => "Corrupt",
            ErrorKind::Resource => "Resource",
            ErrorKind::Summarizer => "Summarizer",
        }
    }
}

/// An error: its fields (`ErrorDetails`) behind one pointer, as serde_json's are, so that a
/// `Result` is the size of its value or a pointer: returned in registers rather than through
/// memory, and passed on by `?` without copying 36 bytes (at every `?` and in every binding,
/// that copying was 22 KB of the gzipped lite wasm, 2026-11-29).
#[derive(Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorDetails>);

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorDetails {
    pub kind: ErrorKind,
    pub message: String,
    /// Index of the offending message in the list the caller passed.
    pub index: Option<usize>,
    /// JSON path of the offending value, e.g. `messages[3].tool_calls[0].id`.
    pub path: Option<String>,
}

impl std::ops::Deref for Error {
    type Target = ErrorDetails;
    fn deref(&self) -> &ErrorDetails {
        &self.0
    }
}

impl std::ops::DerefMut for Error {
    fn deref_mut(&mut self) -> &mut ErrorDetails {
        &mut self.0
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl From<ErrorDetails> for Error {
    fn from(details: ErrorDetails) -> Self {
        Error(Box::new(details))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ErrorDetails { kind, message: message.into(), index: None, path: None }.into()
    }

    /// The error's fields, owned.
    pub fn into_details(self) -> ErrorDetails {
        *self.0
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::InvalidArgument, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Internal, message)
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Conflict, message)
    }

    /// A stored record that is damaged or missing; `key` is where it is (or should be) stored.
    pub fn corrupt(key: &[String], message: impl Into<String>) -> Self {
        ErrorDetails { kind: ErrorKind::Corrupt, message: message.into(), index: None, path: Some(key.join("/")) }
            .into()
    }

    pub fn resource(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Resource, message)
    }

    pub fn summarizer(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Summarizer, message)
    }

    /// Memory for `what` (`bytes` of it) could not be had: refused before anything changed.
    pub fn out_of_memory(what: &str, bytes: usize) -> Self {
        Self::resource(format!(
            "out of memory: {what} needs {} more, which the wasm memory (at most 4 GB) cannot give",
            human_bytes(bytes)
        ))
    }

    /// An invalid message at `index`, with the path of the bad field relative to that message.
    pub fn invalid_message(index: usize, field: &str, message: impl Into<String>) -> Self {
        let path = if field.is_empty() { format!("messages[{index}]") } else { format!("messages[{index}].{field}") };
        ErrorDetails { kind: ErrorKind::InvalidMessage, message: message.into(), index: Some(index), path: Some(path) }
            .into()
    }
}

/// `1.5 MB`, `12 KB`, `300 bytes`: sizes in messages.
pub fn human_bytes(bytes: usize) -> String {
    match bytes {
        0..1024 => format!("{bytes} bytes"),
        1024..0x10_0000 => format!("{:.0} KB", bytes as f64 / 1024.0),
        0x10_0000..0x4000_0000 => format!("{:.1} MB", bytes as f64 / 1048576.0),
        _ => format!("{:.2} GB", bytes as f64 / 1073741824.0),
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(index) = self.index {
            write!(f, "message {index}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(path) = &self.path {
            write!(f, " (at {path})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {}

/// A value of a typed shape read from JSON, or an `InvalidArgument` error that names `what` and
/// the field at fault in plain words: `invalid options: counted must be a whole number, 0 or more, got -3`.
pub fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value, what: &str) -> Result<T> {
    crate::util::json_de::from_value(value).map_err(|error| unreadable(&error, what))
}

/// `from_json`'s error, compiled once rather than for each of the shapes read: where and what, in
/// plain words (`budget.maxTokens must be a whole number from 0 to 4294967295, got -1`) when the
/// read says them (`json_de::Plain`), else in its own.
#[cold]
fn unreadable(error: &crate::util::json_de::PathError, what: &str) -> Error {
    use crate::util::json_de::Plain;
    let at = |path: String| if path == "." { what.to_string() } else { format!("{what}: {path}") };
    let quoted = |names: &[&str]| names.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", ");
    let message = match error.plain() {
        Some(Plain::Expected { expected, got }) => format!("{} must be {expected}, got {got}", at(error.path())),
        Some(Plain::OneOf { names, got }) => {
            format!("{} must be one of {}, got {got}", at(error.path()), quoted(names))
        }
        // The path ends with the field itself: the object is the path before it.
        Some(Plain::UnknownField { field, names }) => {
            let container = error.container_path();
            let place = if container == "." { String::new() } else { format!(" in {container}") };
            match names.is_empty() {
                true => format!("{what}: unknown field {field:?}{place}: it has none"),
                false => format!("{what}: unknown field {field:?}{place}; the fields are {}", names.join(", ")),
            }
        }
        Some(Plain::Missing { field }) => format!("{} lacks the field {field:?}", at(error.path())),
        None => format!("{}: {}", at(error.path()), error.message()),
    };
    Error::invalid_argument(message)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::compact::BuildSpec;

    /// What an option that cannot be read says: the option, what it must be and what it was, in
    /// words, none of serde's (`u32`, `invalid type`, backquotes).
    #[test]
    fn option_errors_say_what_the_option_must_be_in_plain_words() {
        let error =
            |value| super::from_json::<BuildSpec>(value, "invalid build options").unwrap_err().into_details().message;
        let nan = format!("{}NaN", crate::util::json_de::NON_FINITE);
        let cases = [
            (json!({"budget": {"maxTokens": -1}}), "invalid build options: budget.maxTokens must be a whole number from 0 to 4294967295, got -1"),
            (json!({"budget": {"maxTokens": 1.5}}), "invalid build options: budget.maxTokens must be a whole number from 0 to 4294967295, got 1.5"),
            (json!({"budget": {"maxTokens": nan}}), "invalid build options: budget.maxTokens must be a whole number from 0 to 4294967295, got NaN"),
            (json!({"budget": {"targetRatio": "half"}}), "invalid build options: budget.targetRatio must be a number, got \"half\""),
            (json!({"summary": 5}), "invalid build options: summary must be an object, got 5"),
            (json!({"summary": {"placement": "top"}}), "invalid build options: summary.placement must be one of \"auto\", \"system\", \"exchange\", got \"top\""),
            (json!({"format": 3}), "invalid build options: format must be one of \"openai\", \"anthropic\", \"openai-responses\", \"ai-sdk\", got 3"),
            (json!({"dedupeSystem": "yes"}), "invalid build options: dedupeSystem must be a boolean, got \"yes\""),
        ];
        for (value, want) in cases {
            assert_eq!(error(value.clone()), want, "{value}");
        }
        let unknown = error(json!({"budgett": 3}));
        assert!(
            unknown.starts_with("invalid build options: unknown field \"budgett\"; the fields are profile, format,"),
            "{unknown}"
        );
        let nested = error(json!({"budget": {"maxToken": 3}}));
        assert!(
            nested.starts_with("invalid build options: unknown field \"maxToken\" in budget; the fields are "),
            "{nested}"
        );
        let memory = error(json!({"memory": {"maxTokens": "x"}}));
        assert!(!memory.contains('`') && !memory.contains("invalid type") && !memory.contains("u32"), "{memory}");
    }
}
