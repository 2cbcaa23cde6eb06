//! context-compactor: a pure Rust core (message model, exact token counting, compaction)
//! with one thin wasm-bindgen module on top.
pub mod bpe;
