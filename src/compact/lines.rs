//! Lines of text fitted into one system message within a token budget: the memory's turn
//! summaries (`memory`) and the state's sections (`state`).

use crate::message::Message;
use crate::tokens::{self, Encoding};
use crate::util::fasthash::FastMap;

/// The most lines of `lines` (in the order they are given up last to first) that fit in `room`
/// tokens as the message `make` builds from them, counted exactly: that message, its count and how
/// many lines it holds. Lines are chosen by their own counts (plus the newline), then the message
/// is counted whole and the last chosen line given up until it fits: lines can merge at their
/// joins. `line_tokens` keeps each line's own count between builds (they are stable).
pub(crate) fn fit_lines(
    lines: &[&str],
    room: usize,
    encoding: Encoding,
    line_tokens: &mut FastMap<String, u32>,
    make: impl Fn(&[&str]) -> Message,
) -> Option<(Message, usize, usize)> {
    if line_tokens.len() > 8192 {
        line_tokens.clear();
    }
    let mut used = tokens::count_message(encoding, &make(&[])).total as usize;
    let mut take = 0;
    for line in lines {
        let cost = match line_tokens.get(*line) {
            Some(n) => *n as usize,
            None => {
                let n = encoding.count(line) + 1;
                line_tokens.insert(line.to_string(), n as u32);
                n
            }
        };
        if used + cost > room {
            break;
        }
        used += cost;
        take += 1;
    }
    while take > 0 {
        let message = make(&lines[..take]);
        let n = tokens::count_message(encoding, &message).total as usize;
        if n <= room {
            return Some((message, n, take));
        }
        take -= 1;
    }
    None
}
