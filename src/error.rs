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
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// Index of the offending message in the list the caller passed.
    pub index: Option<usize>,
    /// JSON path of the offending value, e.g. `messages[3].tool_calls[0].id`.
    pub path: Option<String>,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error { kind, message: message.into(), index: None, path: None }
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
        Error { kind: ErrorKind::Corrupt, message: message.into(), index: None, path: Some(key.join("/")) }
    }

    pub fn resource(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Resource, message)
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
        Error { kind: ErrorKind::InvalidMessage, message: message.into(), index: Some(index), path: Some(path) }
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
/// the field at fault: `invalid options: counted: invalid value: integer `-3`, expected usize`.
pub fn from_json<T: serde::de::DeserializeOwned>(value: serde_json::Value, what: &str) -> Result<T> {
    crate::json_de::from_value(value).map_err(|error| unreadable(&error, what))
}

/// `from_json`'s error, compiled once rather than for each of the shapes read.
#[cold]
fn unreadable(error: &crate::json_de::PathError, what: &str) -> Error {
    let (path, inner) = (error.path(), error.message());
    if path == "." {
        Error::invalid_argument(format!("{what}: {inner}"))
    } else {
        Error::invalid_argument(format!("{what}: {path}: {inner}"))
    }
}
