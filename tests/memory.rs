//! What a long history costs in memory (issue #18, defect 3): the log's heap bytes against the
//! messages' own JSON, counted by this test's allocator. Natively pointers are twice the wasm's,
//! so a bound that holds here holds with room in the wasm build (`bench/scale.mjs` measures that).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use context_compactor::history::ConversationHistory;
use context_compactor::message::Format;
use context_compactor::tokens::Encoding;
use serde_json::Value;

mod common;

/// The system allocator, keeping the live byte total. Tests in this binary run one at a time
/// (`MEASURING`), so the total is the measured test's own.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static MEASURING: std::sync::Mutex<()> = std::sync::Mutex::new(());

// SAFETY: every call goes to `System` with the same arguments; only the counter is added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size, Ordering::Relaxed);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The heap bytes `f`'s result keeps, once what `f` allocated for a while is freed again.
fn retained<T>(f: impl FnOnce() -> T) -> (T, usize) {
    let before = LIVE.load(Ordering::Relaxed);
    let out = f();
    (out, LIVE.load(Ordering::Relaxed).saturating_sub(before))
}

#[test]
fn a_logged_message_takes_at_most_twice_its_json() {
    let _one_at_a_time = MEASURING.lock().unwrap_or_else(|e| e.into_inner());
    let messages: Vec<Value> =
        common::tau_bench().into_iter().flat_map(|run| run.as_array().cloned().unwrap_or_default()).collect();
    let json: usize = messages.iter().map(|m| m.to_string().len()).sum();
    let texts: Vec<String> = messages.iter().map(Value::to_string).collect();
    drop(messages);
    let (history, bytes) = retained(|| {
        let mut history = ConversationHistory::new(Encoding::O200kBase);
        // Appended as an app appends them: one parsed message at a time.
        for text in &texts {
            let value: Value = serde_json::from_str(text).expect("fixture JSON");
            history.append_value(value, Format::OpenAi).expect("a valid message");
        }
        history
    });
    assert_eq!(history.len(), texts.len());
    let ratio = bytes as f64 / json as f64;
    eprintln!("{} messages, {json} bytes of JSON, {bytes} heap bytes: {ratio:.2}×", texts.len());
    assert!(
        ratio <= 2.0,
        "{} messages of {json} bytes of JSON keep {bytes} heap bytes: {ratio:.2}× (at most 2×)",
        texts.len()
    );
}
