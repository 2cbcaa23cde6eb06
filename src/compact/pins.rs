//! Pins: the requests a context never goes without. The *task* (the first user message with text)
//! and the *latest request* (the last one), and, when harness text (`extract::is_injected`: an
//! interruption notice, a slash-command echo, a system reminder) stands first or last, the first
//! and last user messages that are the user's own. They stay whole when together they take at most
//! half of what the system prompt leaves of the budget; past that each is cut to its head and tail
//! (seed 004's 1000 + 1000 characters, fewer if that is still too much).

use super::plan::{Ctx, Pass, PinRole};
use super::reduce::ReduceCache;
use super::repair::{Structure, UnitKind};
use crate::error::{Error, Result};
use crate::extract::is_injected;
use crate::message::Part;

/// Characters kept at each end of a pinned request that is cut (seed 004).
pub(crate) const PIN_CHARS: u32 = 1000;

/// The text of a user unit, if it has any that is not whitespace.
fn unit_text(ctx: &Ctx, structure: &Structure, u: usize) -> Option<String> {
    let unit = structure.units.get(u)?;
    let mut text = String::new();
    for member in &unit.members {
        let message = ctx.items.get(member.msg)?.message;
        let parts: Box<dyn Iterator<Item = &Part>> = match &member.parts {
            Some(list) => Box::new(list.iter().filter_map(|j| message.content.parts.get(*j))),
            None => Box::new(message.content.parts.iter()),
        };
        for part in parts {
            if let Part::Text { text: t, .. } = part {
                text.push_str(t);
                text.push('\n');
            }
        }
    }
    (!text.trim().is_empty()).then_some(text)
}

/// The pinned units (indices into the structure's units), in order, with why each is pinned,
/// among the units from history index `from` on.
pub(crate) fn find(ctx: &Ctx, structure: &Structure, from: usize) -> Vec<(usize, Vec<PinRole>)> {
    // Looked for from each end: a long history's user units are not listed.
    let users = || {
        structure.units.iter().enumerate().filter(|(_, u)| u.kind == UnitKind::User && u.first >= from).map(|(i, _)| i)
    };
    let mut pins: Vec<(usize, Vec<PinRole>)> = Vec::new();
    let mut add = |u: usize, role: PinRole| match pins.iter_mut().find(|(p, _)| *p == u) {
        Some((_, roles)) if roles.contains(&role) => {}
        Some((_, roles)) => roles.push(role),
        None => pins.push((u, vec![role])),
    };
    // From each end: the first unit with text, and the first whose text is the user's own.
    for (ends, role) in [
        (Box::new(users()) as Box<dyn Iterator<Item = usize>>, PinRole::Task),
        (Box::new(users().rev()), PinRole::Latest),
    ] {
        let mut with_text = false;
        for u in ends {
            let Some(text) = unit_text(ctx, structure, u) else { continue };
            if !with_text {
                add(u, role);
                with_text = true;
            }
            if !is_injected(&text) {
                add(u, role);
                break;
            }
        }
    }
    crate::sort::sort_by_key(&mut pins, |(u, _)| *u);
    pins
}

/// Sizes the pins for a budget whose pins may take `room` tokens: whole if they fit together,
/// else cut to the longest head and tail (at most `PIN_CHARS` each) with which they fit. A budget
/// too small for even the shortest cut is an error that says the numbers.
pub(crate) fn size(ctx: &Ctx, cache: &mut ReduceCache, pass: &mut Pass, room: usize) -> Result<()> {
    let whole: usize = pass.pins.iter().map(|p| p.whole).sum();
    if whole <= room {
        pass.pins_tokens = whole;
        return Ok(());
    }
    let mut total_at = |chars: u32, pass: &mut Pass| -> Result<usize> {
        let mut total = 0;
        for pin in pass.pins.iter_mut() {
            for member in pin.plan.members.iter_mut() {
                member.cut_text = Some(chars);
            }
            ctx.plan_tokens(cache, &mut pin.plan)?;
            // Short enough already: whole (the same message as stored).
            if pin.plan.tokens >= pin.whole || fits_whole(ctx, &pin.plan, chars) {
                for member in pin.plan.members.iter_mut() {
                    member.cut_text = None;
                }
                ctx.plan_tokens(cache, &mut pin.plan)?;
            }
            total += pin.plan.tokens;
        }
        Ok(total)
    };
    let (mut low, mut high) = (0u32, PIN_CHARS);
    let mut best: Option<u32> = None;
    while low <= high {
        let mid = low + (high - low) / 2;
        if total_at(mid, pass)? <= room {
            best = Some(mid);
            low = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            high = mid - 1;
        }
    }
    let Some(chars) = best else {
        let least = total_at(0, pass)?;
        return Err(Error::invalid_argument(format!(
            "the budget of {} tokens is too small for the system prompt ({} tokens) and the pinned task and \
             latest request ({least} tokens cut to the shortest): they may take half of what the system prompt leaves, {room} tokens",
            pass.max.unwrap_or(0),
            pass.system_tokens
        )));
    };
    pass.pins_tokens = total_at(chars, pass)?;
    Ok(())
}

/// Whether cutting to `chars` at each end leaves the unit as it is (only text, and short).
fn fits_whole(ctx: &Ctx, plan: &super::plan::Plan, chars: u32) -> bool {
    plan.members.iter().all(|member| {
        let Some(message) = ctx.items.get(member.msg).map(|i| i.message) else { return false };
        super::plan::part_indices(message, member).iter().all(|j| match message.content.parts.get(*j) {
            Some(Part::Text { text, .. }) => text.chars().count() <= 2 * chars as usize,
            Some(Part::Image { .. } | Part::Other(_)) => false,
            _ => true,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::plan::testing::{Log, ENCODING};
    use crate::compact::repair::structure_for;
    use crate::compact::BuildOptions;
    use serde_json::json;

    fn pins_of(log: &Log) -> Vec<(usize, Vec<PinRole>)> {
        let items = log.items();
        let options = BuildOptions::default();
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
        let mut cache = ReduceCache::default();
        let structure = structure_for(&items, true, &mut cache);
        find(&ctx, &structure, 0).into_iter().map(|(u, roles)| (structure.units[u].first, roles)).collect()
    }

    #[test]
    fn the_task_and_the_latest_request_and_the_users_own_when_harness_text_stands_at_an_end() {
        let log = Log::openai(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "<local-command-caveat>Caveat: generated by local commands</local-command-caveat>"},
            {"role": "user", "content": "start phoenix in background"},
            {"role": "assistant", "content": "started"},
            {"role": "user", "content": "scrolling does not work in xterm.js"},
            {"role": "assistant", "content": "looking"},
            {"role": "user", "content": "[Request interrupted by user]"},
            {"role": "user", "content": "   "}
        ]));
        assert_eq!(
            pins_of(&log),
            [
                (1, vec![PinRole::Task]),
                (2, vec![PinRole::Task]),
                (4, vec![PinRole::Latest]),
                (6, vec![PinRole::Latest])
            ]
        );
        // One request is both.
        let one = Log::openai(
            json!([{"role": "user", "content": "<task>fix it</task>"}, {"role": "assistant", "content": "ok"}]),
        );
        assert_eq!(pins_of(&one), [(0, vec![PinRole::Task, PinRole::Latest])]);
        assert!(pins_of(&Log::openai(json!([{"role": "assistant", "content": "hi"}]))).is_empty());
    }
}
