//! The header every export carries, `{format, version}`, and the one check all imports make.

use serde_json::Value;

use crate::error::{Error, Result};

/// Refuses a value that is not a `format` export this library can read: another format, a newer
/// version (upgrade the library), or an unknown one.
pub fn check_header(value: &Value, format: &str, version: u32, what: &str) -> Result<()> {
    check(
        value.get("format").and_then(Value::as_str),
        value.get("version").and_then(Value::as_u64),
        format,
        version,
        what,
    )
}

/// `check_header` on a header already read.
pub fn check(found: Option<&str>, found_version: Option<u64>, format: &str, version: u32, what: &str) -> Result<()> {
    if found != Some(format) {
        return Err(Error::invalid_argument(format!(
            "not a {what} export: `format` is {}, expected {format:?}",
            found.map_or("missing".to_string(), |f| format!("{f:?}"))
        )));
    }
    match found_version {
        Some(v) if v == u64::from(version) => Ok(()),
        Some(v) if v > u64::from(version) => Err(Error::invalid_argument(format!(
            "this {what} export is version {v}, newer than this library reads ({version}): upgrade context-compactor"
        ))),
        other => Err(Error::invalid_argument(format!(
            "unsupported {what} export version {}",
            other.map_or("(missing)".to_string(), |v| v.to_string())
        ))),
    }
}
