//! A broken rule of a provider's request: what `validate` and the list formats' rules (`lists`)
//! report, kept apart from both so that neither depends on the other for it.

use serde::Serialize;

/// One broken rule in a message list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Violation {
    /// Index in the message list, when one message is at fault.
    pub index: Option<usize>,
    pub rule: &'static str,
    pub message: String,
}

pub(super) fn violation(index: Option<usize>, rule: &'static str, message: impl Into<String>) -> Violation {
    Violation { index, rule, message: message.into() }
}
