//! Images sent once: with `imagesSentOnce`, random histories with images
//! (readable, unreadable, remote; in user messages and tool results) build contexts that are
//! valid for the provider, within the budget, counted exactly, and the stored history keeps
//! every image.

use context_compactor::compact::{validate, BudgetOptions, BuildOptions, Compactor};
use context_compactor::message::Format;
use context_compactor::tokens::{self, Encoding, REPLY_PRIMING};
use context_compactor::{ConversationHistory, ErrorKind};
use proptest::prelude::*;
use serde_json::{json, Value};

/// PNG headers (1024×768, 200×100), data that is no image, and a remote image.
const IMAGES: [&str; 4] = [
    "iVBORw0KGgoAAAANSUhEUgAABAAAAAMACAYAAAA=",
    "iVBORw0KGgoAAAANSUhEUgAAAMgAAABkCAYAAAA=",
    "bm90IGFuIGltYWdl",
    "https://example.com/chart.png",
];

fn image(format: Format, which: usize) -> Value {
    let src = IMAGES[which % IMAGES.len()];
    let remote = src.starts_with("https://");
    match (format, remote) {
        (Format::Anthropic, false) => {
            json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": src}})
        }
        (Format::Anthropic, true) => json!({"type": "image", "source": {"type": "url", "url": src}}),
        (_, false) => json!({"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{src}")}}),
        (_, true) => json!({"type": "image_url", "image_url": {"url": src}}),
    }
}

/// A turn: a user request (with images or not), and either an answer or a tool call whose result
/// carries an image (a screenshot), then the answer.
fn turn(format: Format, n: usize, images: usize, kind: usize, screenshot: bool) -> Vec<Value> {
    let mut content =
        vec![json!({"type": "text", "text": format!("Request {n}: look at this. {}", "Details. ".repeat(kind % 20))})];
    content.extend((0..images).map(|i| image(format, kind + i)));
    let mut out = vec![json!({"role": "user", "content": content})];
    if screenshot {
        let id = format!("call_{n}");
        match format {
            Format::Anthropic => {
                out.push(json!({"role": "assistant", "content": [{"type": "tool_use", "id": id, "name": "screenshot", "input": {}}]}));
                out.push(json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": id, "content": [{"type": "text", "text": "taken"}, image(format, kind + 1)]}]}));
            }
            _ => {
                out.push(json!({"role": "assistant", "content": null, "tool_calls": [{"id": id, "type": "function", "function": {"name": "screenshot", "arguments": "{}"}}]}));
                out.push(json!({"role": "tool", "tool_call_id": id, "content": "taken"}));
            }
        }
    }
    out.push(json!({"role": "assistant", "content": format!("Answer {n}. {}", "It shows sales. ".repeat(kind % 30))}));
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn images_sent_once_keep_contexts_valid_and_within_budget(
        turns in prop::collection::vec((0usize..3, 0usize..40, any::<bool>()), 1..14),
        anthropic in any::<bool>(),
        max_tokens in prop::option::of(300u32..6_000),
        summary in any::<bool>(),
    ) {
        let format = if anthropic { Format::Anthropic } else { Format::OpenAi };
        let mut history = ConversationHistory::new(Encoding::O200kBase);
        let mut compactor = Compactor::new();
        let options = BuildOptions {
            format,
            images_sent_once: true,
            budget: max_tokens.map(|m| BudgetOptions { max_tokens: Some(m), ..BudgetOptions::default() }),
            summary: if summary { BuildOptions::default().summary } else { None },
            ..BuildOptions::default()
        };
        for (n, (images, kind, screenshot)) in turns.iter().enumerate() {
            history.append_values(Value::Array(turn(format, n, *images, *kind, *screenshot)), format).unwrap();
            let stored = history.logged().unwrap();
            let frame = compactor.frame_state(&history);
            let outcome = match compactor.build(&mut history, &options, &[], &[]) {
                Ok(outcome) => outcome,
                Err(error) => {
                    prop_assert_eq!(error.kind, ErrorKind::InvalidArgument, "{}", error);
                    prop_assert!(error.message.contains("too small"), "{}", error);
                    continue;
                }
            };
            prop_assert_eq!(history.logged().unwrap(), stored, "the stored history keeps its images");
            // What earlier builds cached (placeholders, counts, request forms) changes nothing
            // beside the context they sent (the frame, which storage keeps); with a summary the
            // compactor's own summary state differs from a fresh one's, so not there.
            if !summary {
                let mut cold = Compactor::new();
                if let Some(frame) = frame {
                    cold.set_frame_state(frame, &history).map_err(|e| TestCaseError::fail(e.to_string()))?;
                }
                let cold = cold.build(&mut history, &options, &[], &[]).map_err(|e| TestCaseError::fail(e.to_string()))?;
                prop_assert_eq!(&cold.context.receipt.images, &outcome.context.receipt.images);
                prop_assert_eq!(cold.context.to_request().ok(), outcome.context.to_request().ok());
            }
            let context = &outcome.context;
            let request = context.to_request().map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(validate(&request, format), Ok(()));
            if let Some(max) = max_tokens {
                prop_assert!(context.tokens.total <= max as usize, "{} > {max}", context.tokens.total);
            }
            let recount: usize = context.messages().map(|m| tokens::count_message(Encoding::O200kBase, m).total as usize).sum();
            prop_assert_eq!(recount + REPLY_PRIMING, context.tokens.total);
            prop_assert_eq!(context.receipt.tokens_before, history.token_count().total);
            // No image of an earlier turn goes again: every one the context holds is in the latest turn.
            let images = context.receipt.images.as_ref().unwrap();
            for placeholder in &images.replaced {
                let sent = format!("sent in turn {}, message {}]", placeholder.turn, placeholder.id);
                prop_assert!(placeholder.text.starts_with("[image: ") && placeholder.text.ends_with(&sent), "{}", placeholder.text);
                prop_assert!((placeholder.turn as usize) <= n, "turn {} is the latest", n + 1);
            }
        }
    }
}
