//! Small helpers the rest of the crate shares and that know nothing of messages or sessions:
//! hashing, content-derived ids, JSON reading and writing, lower-casing, stable sorting, and the
//! version header of exports.

pub(crate) mod fasthash;
pub mod ids;
pub(crate) mod json_de;
pub(crate) mod json_text;
pub(crate) mod lowercase;
pub(crate) mod sort;
pub mod versioned;
