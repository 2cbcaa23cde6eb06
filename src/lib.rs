//! context-compactor: a pure Rust core (message model, exact token counting, compaction)
//! with one thin wasm-bindgen module on top (`bindings`), so `cargo test` covers the core natively.

pub mod bindings;
pub mod bpe;
pub mod compact;
pub mod error;
pub mod extract;
pub(crate) mod fasthash;
pub mod history;
pub mod ids;
pub(crate) mod json_de;
pub(crate) mod json_text;
pub mod load;
pub(crate) mod lowercase;
pub mod memory;
pub mod message;
pub mod session;
pub(crate) mod sort;
pub mod state;
pub mod tokens;
pub mod versioned;

pub use error::{Error, ErrorKind, Result};
pub use history::ConversationHistory;
