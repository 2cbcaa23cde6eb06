//! context-compactor: a pure Rust core (message model, exact token counting, compaction)
//! with one thin wasm-bindgen module on top (`bindings`), so `cargo test` covers the core natively.

pub mod bindings;
pub mod bpe;
pub mod compact;
pub mod error;
pub mod extract;
pub mod history;
pub mod load;
pub mod memory;
pub mod message;
pub mod session;
pub mod state;
pub mod tokens;
pub mod util;

pub use error::{Error, ErrorKind, Result};
pub use history::ConversationHistory;
