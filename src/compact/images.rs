//! Images sent once (an image the model has seen need not be paid for again): with
//! `imagesSentOnce`, an image in a turn before the latest goes into the context as a short line,
//! `[image: png, 1024×768, sent in turn 3, message m5]`. The stored message keeps the image
//! (`history.get(id)` or a recall of that turn finds it); the receipt lists what was replaced.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::repair::Item;
use crate::message::{Content, ImageSource, Message, Part, Role};
use crate::tokens::images::base64_image_size;
use crate::tokens::{self, Encoding};
use crate::util::fasthash::{FastMap, FastSet};

/// One image the context shows as its placeholder.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ImagePlaceholder {
    /// The stored message that holds it.
    pub id: String,
    pub turn: u32,
    pub text: String,
}

/// What the receipt says about the images sent once.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ImagesUse {
    pub replaced: Vec<ImagePlaceholder>,
    /// What the messages holding them cost whole, less what they cost with the placeholders.
    pub tokens_saved: usize,
}

/// A stored message with its images replaced, and its count.
pub(crate) struct Substitute {
    pub(crate) index: usize,
    pub(crate) message: Arc<Message>,
    pub(crate) tokens: u32,
}

/// The image's kind: its media type's subtype, a `data:` URL's, or a URL's file extension.
fn kind(source: &ImageSource) -> String {
    match source {
        ImageSource::Base64 { media_type, .. } => media_type.strip_prefix("image/").unwrap_or(media_type).to_string(),
        ImageSource::Url(url) if source.inline_data().is_some() => {
            url.strip_prefix("data:image/").and_then(|r| r.split([';', ',']).next()).unwrap_or("image").to_string()
        }
        ImageSource::Url(url) => {
            let path = url.split(['?', '#']).next().unwrap_or(url);
            let ext = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).filter(|e| e.len() <= 5);
            ext.unwrap_or_else(|| "url".to_string())
        }
    }
}

/// An image in a few words: its kind, its size when its data says it (else why not).
pub fn describe(source: &ImageSource) -> String {
    let kind = kind(source);
    let size = match source.inline_data().map(base64_image_size) {
        Some(Ok((w, h))) => format!("{w}×{h}"),
        Some(Err(error)) => format!("unreadable data: {}", error.describe()),
        None => "size not known".to_string(),
    };
    format!("{kind}, {size}")
}

/// The placeholder line of an image.
pub fn placeholder(source: &ImageSource, turn: u32, id: &str) -> String {
    format!("[image: {}, sent in turn {turn}, message {id}]", describe(source))
}

/// The images of a message, its tool results' included, in order.
pub fn images_of(message: &Message) -> Vec<&Part> {
    let mut out = Vec::new();
    for part in &message.content.parts {
        match part {
            Part::Image { .. } => out.push(part),
            Part::ToolResult(result) => {
                out.extend(result.content.parts.iter().filter(|p| matches!(p, Part::Image { .. })))
            }
            _ => {}
        }
    }
    out
}

fn replace_images(parts: &[Part], turn: u32, id: &str, out: &mut Vec<String>) -> Option<Vec<Part>> {
    let mut changed = false;
    let replaced = parts
        .iter()
        .map(|part| match part {
            Part::Image { source, .. } => {
                changed = true;
                let text = placeholder(source, turn, id);
                out.push(text.clone());
                Part::text(text)
            }
            Part::ToolResult(result) => match replace_images(&result.content.parts, turn, id, out) {
                Some(inner) => {
                    changed = true;
                    let mut result = result.clone();
                    result.content = Content { form: result.content.form, parts: inner };
                    Part::ToolResult(result)
                }
                None => part.clone(),
            },
            other => other.clone(),
        })
        .collect();
    changed.then_some(replaced)
}

/// The turn of each stored message: a user message with text or an image starts the next.
fn turns(items: &[Item]) -> Vec<u32> {
    let mut turn = 0u32;
    items
        .iter()
        .map(|item| {
            let asks = item.message.role == Role::User
                && item.message.content.parts.iter().any(|p| matches!(p, Part::Text { .. } | Part::Image { .. }));
            if asks {
                turn += 1;
            }
            turn.max(1)
        })
        .collect()
}

/// Whether `parts` hold an image, a tool result's included.
fn holds_image(parts: &[Part]) -> bool {
    parts.iter().any(|part| match part {
        Part::Image { .. } => true,
        Part::ToolResult(result) => holds_image(&result.content.parts),
        _ => false,
    })
}

/// A stored message of an earlier turn as shown with its placeholders, its count and their lines;
/// `None` where the placeholders would not make it cheaper. A stored message and its turn never
/// change, so `ImagesShown` keeps this by id: a later build reuses the same `Arc` (its request
/// form is kept by identity) and counts nothing again.
type Shown = Option<(Arc<Message>, u32, Vec<String>)>;

/// What images sent once made of the stored messages that hold images, kept between builds.
#[derive(Clone, Debug, Default)]
pub(crate) struct ImagesShown {
    /// What images sent once made of each stored message holding images, by id.
    shown: FastMap<String, Shown>,
    /// The stored messages the last build showed with their images replaced.
    replaced: FastSet<String>,
}

impl ImagesShown {
    /// Notes the messages shown with their images replaced now; returns those that were not at
    /// the last build, or the other way round: their form changed since.
    pub(crate) fn replaced_now<'a>(&mut self, ids: impl Iterator<Item = &'a str>) -> Vec<String> {
        let now: FastSet<String> = ids.map(str::to_string).collect();
        let changed = now.symmetric_difference(&self.replaced).cloned().collect();
        self.replaced = now;
        changed
    }
}

fn show(item: &Item, turn: u32, encoding: Encoding) -> Shown {
    let mut texts = Vec::new();
    let parts = replace_images(&item.message.content.parts, turn, item.id, &mut texts)?;
    let form = match item.message.content.form {
        crate::message::ContentForm::Text => crate::message::ContentForm::Parts,
        form => form,
    };
    let message = Message { content: Content { form, parts }, ..Message::clone(item.message) };
    let tokens = tokens::count_message(encoding, &message).total;
    (tokens < item.tokens).then(|| (Arc::new(message), tokens, texts))
}

/// The messages of turns before the latest that hold images, with placeholders in their place,
/// where that makes them cheaper; and the receipt's account. `cache` keeps what earlier builds made.
pub(crate) fn sent_once(items: &[Item], encoding: Encoding, cache: &mut ImagesShown) -> (Vec<Substitute>, ImagesUse) {
    let turns = turns(items);
    let last = turns.last().copied().unwrap_or(0);
    let mut substitutes = Vec::new();
    let mut used = ImagesUse { replaced: Vec::new(), tokens_saved: 0 };
    for (index, (item, &turn)) in items.iter().zip(&turns).enumerate() {
        if turn >= last {
            break;
        }
        if !holds_image(&item.message.content.parts) {
            continue;
        }
        let entry = cache.shown.entry(item.id.to_string()).or_insert_with(|| show(item, turn, encoding));
        let Some((message, tokens, texts)) = entry else { continue };
        used.tokens_saved += (item.tokens - *tokens) as usize;
        used.replaced.extend(texts.iter().map(|text| ImagePlaceholder {
            id: item.id.to_string(),
            turn,
            text: text.clone(),
        }));
        substitutes.push(Substitute { index, message: Arc::clone(message), tokens: *tokens });
    }
    (substitutes, used)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG's header, base64 (the size is all the count reads).
    pub(crate) fn png(width: u32, height: u32) -> String {
        use crate::tokens::images::tests as images;
        images::base64(&images::png(width, height))
    }

    #[test]
    fn placeholders_name_the_kind_size_turn_and_message() {
        let source = ImageSource::Base64 { media_type: "image/png".into(), data: png(1024, 768) };
        assert_eq!(placeholder(&source, 3, "m5"), "[image: png, 1024×768, sent in turn 3, message m5]");
        let url = ImageSource::Url(format!("data:image/png;base64,{}", png(10, 20)));
        assert_eq!(placeholder(&url, 1, "m1"), "[image: png, 10×20, sent in turn 1, message m1]");
        let remote = ImageSource::Url("https://example.com/chart.jpg?x=1".into());
        assert_eq!(placeholder(&remote, 2, "m2"), "[image: jpg, size not known, sent in turn 2, message m2]");
        let broken = ImageSource::Base64 { media_type: "image/png".into(), data: "not base64!".into() };
        assert!(placeholder(&broken, 2, "m2").starts_with("[image: png, unreadable data: "));
    }
}

#[cfg(test)]
mod build_tests {
    use super::tests::png;
    use crate::compact::{validate, BudgetOptions, BuildOptions, Compactor};
    use crate::history::ConversationHistory;
    use crate::message::Format;
    use crate::tokens::{self, Encoding, REPLY_PRIMING};
    use serde_json::json;

    fn with_image(format: Format) -> ConversationHistory {
        let mut history = ConversationHistory::new(Encoding::O200kBase);
        let data = png(1024, 768);
        let first = match format {
            Format::Anthropic => json!({"role": "user", "content": [
                {"type": "text", "text": "What does this chart show?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}]}),
            _ => json!({"role": "user", "content": [
                {"type": "text", "text": "What does this chart show?"},
                {"type": "image_url", "image_url": {"url": format!("data:image/png;base64,{data}")}}]}),
        };
        history.append_value(first, format).unwrap();
        history.append_value(json!({"role": "assistant", "content": "Sales rise in March."}), format).unwrap();
        history
    }

    fn texts(outcome: &crate::compact::BuildOutcome) -> Vec<String> {
        outcome.context.messages().map(|m| m.readable_text()).collect()
    }

    #[test]
    fn an_image_of_an_earlier_turn_becomes_its_placeholder_and_stays_stored() {
        for format in [Format::OpenAi, Format::Anthropic] {
            let mut history = with_image(format);
            let mut compactor = Compactor::new();
            let options = BuildOptions { format, images_sent_once: true, ..BuildOptions::default() };
            // The image is in the latest turn: it goes whole.
            let first = compactor.build(&mut history, &options, &[], &[]).unwrap();
            assert!(first.context.receipt.images.as_ref().unwrap().replaced.is_empty());
            assert!(texts(&first)[0].contains("[image]"));
            let whole = first.context.tokens.total;

            history.append_value(json!({"role": "user", "content": "And in April?"}), format).unwrap();
            // Between compaction events the context only grows: the image stays as it was sent.
            let appended = compactor.build(&mut history, &options, &[], &[]).unwrap();
            assert!(texts(&appended)[0].contains("[image]"));
            // A compaction event shows it as its placeholder.
            let later = compactor
                .build(&mut history, &BuildOptions { compact_now: true, ..options.clone() }, &[], &[])
                .unwrap();
            let placeholder = "[image: png, 1024×768, sent in turn 1, message m1]";
            assert_eq!(texts(&later)[0], format!("What does this chart show?\n{placeholder}"));
            let images = later.context.receipt.images.clone().unwrap();
            assert_eq!((images.replaced.len(), images.replaced[0].turn, images.replaced[0].id.as_str()), (1, 1, "m1"));
            assert!(images.tokens_saved > 0);
            // Counted exactly; the receipt counts the stored message as stored.
            let recount: usize =
                later.context.messages().map(|m| tokens::count_message(Encoding::O200kBase, m).total as usize).sum();
            assert_eq!(recount + REPLY_PRIMING, later.context.tokens.total);
            assert!(later.context.tokens.total < whole, "{} < {whole}", later.context.tokens.total);
            assert_eq!(later.context.receipt.tokens_before, history.token_count().total);
            assert!(validate(&later.context.to_request().unwrap(), format).is_ok());
            // The stored message keeps its image.
            assert!(history.get("m1").unwrap().message.readable_text().contains("[image]"));
            // Off (the default): the image goes again.
            let off =
                compactor.build(&mut history, &BuildOptions { format, ..BuildOptions::default() }, &[], &[]).unwrap();
            assert!(texts(&off)[0].contains("[image]") && off.context.receipt.images.is_none());
            // Under a budget, the saving leaves room.
            let budget = BuildOptions {
                budget: Some(BudgetOptions { max_tokens: Some(200), ..BudgetOptions::default() }),
                ..options.clone()
            };
            let tight = compactor.build(&mut history, &budget, &[], &[]).unwrap();
            assert!(tight.context.tokens.total <= 200 && texts(&tight)[0].contains(placeholder));
        }
    }
}
