//! The memory's turn summaries in the context: a recorded turn whose messages are not
//! all in the context is represented by its summary line, in the summary section, within what the
//! summary budget leaves after the compaction summary. Newest turns first when not all fit.

use serde::{Deserialize, Serialize};

use super::lines::fit_lines;
use crate::memory::turn_line;
use crate::message::{Content, Format, Message, Role};
use crate::tokens::Encoding;

use crate::util::fasthash::FastMap;

/// A recorded turn offered to the builder: its summary and the stored messages it covers
/// (indices into the history, inclusive).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TurnNote<'a> {
    pub turn: u32,
    pub first: usize,
    pub last: usize,
    pub summary: &'a str,
}

/// `memory` in the build options: the turn summaries of a session with memory go into the context
/// unless this is `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct MemoryOptions {
    /// At most this many tokens for the turn summaries (the summary budget's rest caps it too).
    pub max_tokens: Option<u32>,
}

/// What the receipt says about the turn summaries a build put in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MemoryUse {
    /// The turns whose summaries are in the context, in order.
    pub turns: Vec<u32>,
    pub tokens: usize,
    /// Turns not wholly in the context whose summaries did not fit.
    pub omitted: Vec<u32>,
}

const HEADER: &str = "Summaries of earlier turns whose messages are not all in this context:";

fn message(lines: &[&str], format: Format) -> Message {
    let mut text = String::from(HEADER);
    for line in lines {
        text.push('\n');
        text.push_str(line);
    }
    Message::new(Role::System, Content::text(text), format)
}

/// For the turns `in_context` does not wholly hold: the system message of the summaries of the
/// newest that fit in `max_tokens` (exactly counted; none if none fits), and the receipt's account.
/// `None` when the context holds every turn.
/// `line_tokens` caches each line's own count between builds (they are stable).
pub(crate) fn turn_summaries(
    notes: &[TurnNote],
    in_context: impl Fn(usize) -> bool,
    max_tokens: usize,
    encoding: Encoding,
    format: Format,
    line_tokens: &mut FastMap<String, u32>,
) -> Option<(Option<Message>, MemoryUse)> {
    let missing: Vec<&TurnNote> = notes.iter().filter(|n| (n.first..=n.last).any(|i| !in_context(i))).collect();
    if missing.is_empty() {
        return None;
    }
    // Newest first: the oldest chosen line is the first given up.
    let texts: Vec<String> = missing.iter().rev().map(|note| turn_line(note.turn, note.summary)).collect();
    let lines: Vec<&str> = texts.iter().map(String::as_str).collect();
    let make = |chosen: &[&str]| message(&chosen.iter().rev().copied().collect::<Vec<_>>(), format);
    let placed = fit_lines(&lines, max_tokens, encoding, line_tokens, make);
    let taken = placed.as_ref().map_or(0, |(_, _, n)| *n);
    let turns: Vec<u32> = missing.iter().rev().take(taken).rev().map(|n| n.turn).collect();
    let omitted = missing.iter().map(|n| n.turn).filter(|t| !turns.contains(t)).collect();
    let tokens = placed.as_ref().map_or(0, |(_, n, _)| *n);
    Some((placed.map(|(m, _, _)| m), MemoryUse { turns, tokens, omitted }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens;

    fn notes() -> Vec<TurnNote<'static>> {
        vec![
            TurnNote {
                turn: 1,
                first: 0,
                last: 3,
                summary: "asked: find reservation ABC123; answered: it flies to Seattle.",
            },
            TurnNote { turn: 2, first: 4, last: 5, summary: "cancelled ABC123" },
            TurnNote { turn: 3, first: 6, last: 9, summary: "booked a new flight to Portland" },
        ]
    }

    #[test]
    fn only_turns_missing_from_the_context_are_summarised() {
        let mut cache = FastMap::default();
        let (msg, used) =
            turn_summaries(&notes(), |i| i >= 5, 10_000, Encoding::O200kBase, Format::OpenAi, &mut cache).unwrap();
        let msg = msg.unwrap();
        assert_eq!(used.turns, vec![1, 2]);
        assert!(used.omitted.is_empty());
        let text = msg.content.joined_text();
        assert!(
            text.contains("[Turn 1] asked: find reservation")
                && text.contains("[Turn 2] cancelled")
                && !text.contains("[Turn 3]")
        );
        assert_eq!(used.tokens, tokens::count_message(Encoding::O200kBase, &msg).total as usize);
        assert!(turn_summaries(&notes(), |_| true, 10_000, Encoding::O200kBase, Format::OpenAi, &mut cache).is_none());
    }

    #[test]
    fn the_newest_turns_win_when_not_all_fit_and_the_count_is_exact() {
        let mut cache = FastMap::default();
        let all =
            turn_summaries(&notes(), |_| false, 10_000, Encoding::O200kBase, Format::Anthropic, &mut cache).unwrap().1;
        assert_eq!(all.turns, vec![1, 2, 3]);
        for max in 0..all.tokens {
            match turn_summaries(&notes(), |_| false, max, Encoding::O200kBase, Format::Anthropic, &mut cache).unwrap()
            {
                (None, used) => {
                    assert!(used.turns.is_empty() && used.tokens == 0 && used.omitted == [1, 2, 3])
                }
                (Some(msg), used) => {
                    assert!(
                        used.tokens <= max
                            && used.tokens == tokens::count_message(Encoding::O200kBase, &msg).total as usize
                    );
                    assert_eq!(used.turns.last(), Some(&3), "the newest turn goes first");
                    assert_eq!(used.turns.len() + used.omitted.len(), 3);
                }
            }
        }
    }
}
