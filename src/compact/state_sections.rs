//! A session's state in the context (the agent state and artifacts, in a fixed order): after the
//! system prompt, one system message per part — the active skill, the open todos, the available
//! artifacts with how to reference them, the uploaded files — within their own cap and what the
//! budget leaves after the system prompt. Counted exactly; the receipt says what each part held
//! and what did not fit. Offered to the builder as notes, as the memory's turn summaries are.

use serde::{Deserialize, Serialize};

use super::lines::fit_lines;
use crate::message::{Content, Format, Message, Role};
use crate::tokens::Encoding;
use crate::util::fasthash::FastMap;

/// Which part of the state a section shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum StatePart {
    Skill,
    Todos,
    Artifacts,
    Uploads,
}

/// One part of the state offered to the builder: a header, its lines, a footer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateNote {
    pub part: StatePart,
    pub header: String,
    pub lines: Vec<String>,
    pub footer: Option<String>,
    /// When not all lines fit: keep the last ones (the newest) rather than the first.
    pub keep_last: bool,
}

/// `state` in the build options: a session's state goes into the context unless this is `null`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct StateOptions {
    /// At most this many tokens for the state's sections (default 2,000; a budget caps them
    /// further at a quarter of what the system prompt leaves).
    pub max_tokens: Option<u32>,
}

pub const STATE_MAX_TOKENS: usize = 2_000;

/// What the receipt says about one section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StateSectionUse {
    pub part: StatePart,
    /// Lines shown, and lines that did not fit.
    pub lines: usize,
    pub omitted: usize,
    pub tokens: usize,
}

/// What the receipt says about the state's sections a build put in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct StateUse {
    pub sections: Vec<StateSectionUse>,
    pub tokens: usize,
}

fn message(note: &StateNote, lines: &[&str], format: Format) -> Message {
    let mut text = note.header.clone();
    for line in lines {
        text.push('\n');
        text.push_str(line);
    }
    if let Some(footer) = &note.footer {
        text.push_str("\n\n");
        text.push_str(footer);
    }
    Message::new(Role::System, Content::text(text), format)
}

/// The most lines of `note` that fit in `room` tokens, counted exactly: the message, its count
/// and how many lines; with `keep_last`, the last lines are the ones kept.
fn fit(
    note: &StateNote,
    room: usize,
    encoding: Encoding,
    format: Format,
    line_tokens: &mut FastMap<String, u32>,
) -> Option<(Message, usize, usize)> {
    let order: Vec<&str> = match note.keep_last {
        true => note.lines.iter().rev().map(String::as_str).collect(),
        false => note.lines.iter().map(String::as_str).collect(),
    };
    let make = |chosen: &[&str]| match note.keep_last {
        true => message(note, &chosen.iter().rev().copied().collect::<Vec<_>>(), format),
        false => message(note, chosen, format),
    };
    fit_lines(&order, room, encoding, line_tokens, make)
}

/// The state's sections within `max_tokens`, in the order given; a section none of whose lines
/// fits is left out (and its lines counted as omitted).
pub(crate) fn state_sections(
    notes: &[StateNote],
    max_tokens: usize,
    encoding: Encoding,
    format: Format,
    line_tokens: &mut FastMap<String, u32>,
) -> Option<(Vec<Message>, StateUse)> {
    if notes.is_empty() {
        return None;
    }
    let mut messages = Vec::new();
    let mut sections = Vec::new();
    let mut left = max_tokens;
    for note in notes.iter().filter(|n| !n.lines.is_empty()) {
        let (lines, tokens) = match fit(note, left, encoding, format, line_tokens) {
            Some((msg, n, lines)) => {
                messages.push(msg);
                left -= n;
                (lines, n)
            }
            None => (0, 0),
        };
        sections.push(StateSectionUse { part: note.part, lines, omitted: note.lines.len() - lines, tokens });
    }
    let tokens = max_tokens - left;
    Some((messages, StateUse { sections, tokens }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokens;

    fn notes() -> Vec<StateNote> {
        vec![
            StateNote {
                part: StatePart::Todos,
                header: "Open todos:".into(),
                lines: vec!["- load the data".into(), "- draw the chart (in progress)".into()],
                footer: None,
                keep_last: false,
            },
            StateNote {
                part: StatePart::Artifacts,
                header: "可用代码文件列表：".into(),
                lines: (0..30).map(|i| format!("- code_part_{i} (python) - part {i} of the analysis")).collect(),
                footer: Some("你可以通过 <code_ref>{code_id}</code_ref> 标签在最终报告中引用这些代码。".into()),
                keep_last: true,
            },
        ]
    }

    #[test]
    fn sections_fit_their_room_exactly_and_keep_the_newest_artifacts() {
        let (all, used) =
            state_sections(&notes(), 100_000, Encoding::O200kBase, Format::OpenAi, &mut FastMap::default()).unwrap();
        assert_eq!(all.len(), 2);
        assert_eq!(used.sections[1].omitted, 0);
        let exact: usize = all.iter().map(|m| tokens::count_message(Encoding::O200kBase, m).total as usize).sum();
        assert_eq!(used.tokens, exact);
        for max in (0..used.tokens).step_by(7) {
            let (messages, part) =
                state_sections(&notes(), max, Encoding::O200kBase, Format::Anthropic, &mut FastMap::default()).unwrap();
            let counted: usize =
                messages.iter().map(|m| tokens::count_message(Encoding::O200kBase, m).total as usize).sum();
            assert!(counted <= max && counted == part.tokens, "{max}: {counted} vs {}", part.tokens);
            let artifacts = &part.sections[1];
            assert_eq!(artifacts.lines + artifacts.omitted, 30);
            if let Some(text) = messages.iter().map(|m| m.content.joined_text()).find(|t| t.contains("code_ref")) {
                assert!(text.contains("code_part_29"), "the newest artifact is kept first");
            }
        }
    }
}
