//! Pins: the requests a context never goes without. The *task* (the first user message with text)
//! and the *latest request* (the last one), and, when harness text (`extract::is_injected`: an
//! interruption notice, a slash-command echo, a system reminder) stands first or last, the first
//! and last user messages that are the user's own. A message pinned explicitly
//! (`ConversationHistory::pin`: a harness whose first user message is instructions or a
//! demonstration pins the real task) is kept too, and then stands for the task: the first user
//! message is no longer pinned as one. They stay whole when together they take at most half of
//! what the system prompt leaves of the budget; past that each text is cut to its head and tail
//! (1000 + 1000 characters, as tool-output compression keeps, fewer if that is still too much),
//! and a request of more parts than that leaves room for to its first and last parts.

use super::forms::{base_members, part_indices, Ctx, Forms, MemberPlan, Plan};
use super::receipt::PinRole;
use super::repair::{Structure, UnitKind};
use crate::error::{Error, Result};
use crate::extract::is_injected;
use crate::message::Part;

/// A pinned user request: always in the context, whole or cut to its head and tail.
#[derive(Clone, Debug)]
pub(crate) struct Pin {
    pub(crate) roles: Vec<PinRole>,
    pub(crate) plan: Plan,
    /// Tokens whole, as stored.
    pub(crate) whole: usize,
}

/// Characters kept at each end of a pinned request that is cut.
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

/// The user unit of the message at history index `msg`, if it has one (a user message's own unit
/// starts at it; units are in order of their first message).
fn user_unit(structure: &Structure, msg: usize) -> Option<usize> {
    let u = structure.units.partition_point(|unit| unit.first < msg);
    structure.units.get(u).filter(|unit| unit.first == msg && unit.kind == UnitKind::User).map(|_| u)
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
    let explicit: Vec<usize> = ctx
        .items
        .iter()
        .enumerate()
        .skip(from)
        .filter(|(_, item)| item.pinned)
        .filter_map(|(msg, _)| user_unit(structure, msg))
        .collect();
    for &u in &explicit {
        add(u, PinRole::Pinned);
    }
    // From each end: the first unit with text, and the first whose text is the user's own. A
    // message pinned explicitly stands for the task.
    let ends: [(Box<dyn Iterator<Item = usize>>, PinRole); 2] =
        [(Box::new(users()), PinRole::Task), (Box::new(users().rev()), PinRole::Latest)];
    for (ends, role) in ends {
        if role == PinRole::Task && !explicit.is_empty() {
            continue;
        }
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
    crate::util::sort::sort_by_key(&mut pins, |(u, _)| *u);
    pins
}

/// How pins are cut: each text to its head and tail of `chars` characters, and with `parts`, a
/// member of more parts than twice that to its first and last `parts`.
#[derive(Clone, Copy, Debug)]
struct Cut {
    chars: u32,
    parts: Option<usize>,
}

/// The pinned requests as they go into the context, and their tokens.
#[derive(Clone, Debug, Default)]
pub(crate) struct Pins {
    pub(crate) list: Vec<Pin>,
    pub(crate) tokens: usize,
}

impl Pins {
    /// The pins `found`, whole, as stored.
    pub(crate) fn whole(found: &[Pin]) -> Pins {
        Pins { list: found.to_vec(), tokens: found.iter().map(|p| p.whole).sum() }
    }
}

/// Sizes the pins `found` for a budget of `max` tokens whose pins may take `room`: whole if they
/// fit together, else cut to the longest head and tail (at most `PIN_CHARS` each) with which they
/// fit, and when even the shortest is too long (a request of thousands of parts), to as many first
/// and last parts as fit. A budget too small for even one part at each end is an error that says
/// the numbers (with the system prompt's `system_tokens`).
pub(crate) fn size(
    ctx: &Ctx,
    forms: &mut Forms,
    structure: &Structure,
    found: &[Pin],
    room: usize,
    max: usize,
    system_tokens: usize,
) -> Result<Pins> {
    let mut pins = Pins::whole(found);
    if pins.tokens <= room {
        return Ok(pins);
    }
    let mut total_at = |cut: Cut, pins: &mut Vec<Pin>| -> Result<usize> {
        let mut total = 0;
        for pin in pins.iter_mut() {
            cut_pin(ctx, forms, structure, pin, cut)?;
            total += pin.plan.tokens;
        }
        Ok(total)
    };
    let list = &mut pins.list;
    let texts = |parts: Option<usize>| Cut { chars: 0, parts };
    let cut = if total_at(texts(None), list)? <= room {
        let chars = longest(0, PIN_CHARS as usize, |chars| {
            Ok(total_at(Cut { chars: chars as u32, parts: None }, list)? <= room)
        })?;
        Cut { chars: chars.unwrap_or(0) as u32, parts: None }
    } else {
        let most = list
            .iter()
            .flat_map(|pin| pin.plan.members.iter().map(|m| m.msg))
            .filter_map(|msg| ctx.items.get(msg).map(|item| item.message.content.parts.len()))
            .max()
            .unwrap_or(1);
        let Some(parts) = longest(1, most.div_ceil(2).max(1), |k| Ok(total_at(texts(Some(k)), list)? <= room))? else {
            let least = total_at(texts(Some(1)), list)?;
            return Err(Error::invalid_argument(format!(
                "the budget of {max} tokens is too small for the system prompt ({system_tokens} tokens) and the pinned \
                 requests ({least} tokens cut to the shortest): they may take half of what the system prompt leaves, \
                 {room} tokens"
            )));
        };
        let chars = longest(0, PIN_CHARS as usize, |chars| {
            Ok(total_at(Cut { chars: chars as u32, parts: Some(parts) }, list)? <= room)
        })?;
        Cut { chars: chars.unwrap_or(0) as u32, parts: Some(parts) }
    };
    pins.tokens = total_at(cut, &mut pins.list)?;
    Ok(pins)
}

/// The greatest `n` in `low..=high` with `fits(n)`, which holds up to some `n` and not past it.
fn longest(low: usize, high: usize, mut fits: impl FnMut(usize) -> Result<bool>) -> Result<Option<usize>> {
    let (mut low, mut high) = (low, high);
    let mut best = None;
    while low <= high {
        let mid = low + (high - low) / 2;
        if fits(mid)? {
            best = Some(mid);
            low = mid + 1;
        } else if mid == 0 {
            break;
        } else {
            high = mid - 1;
        }
    }
    Ok(best)
}

/// Plans `pin` cut by `cut`, or whole if the cut leaves it as it is.
fn cut_pin(ctx: &Ctx, forms: &mut Forms, structure: &Structure, pin: &mut Pin, cut: Cut) -> Result<()> {
    let unit = structure.units.get(pin.plan.unit).ok_or_else(|| Error::internal("a pin's unit is missing"))?;
    let mut members = base_members(unit);
    let mut parts_cut = false;
    for member in members.iter_mut() {
        member.cut_text = Some(cut.chars);
        if let Some(keep) = cut.parts {
            let message = ctx.item(member.msg)?.message;
            let list = part_indices(message, member);
            if list.len() > 2 * keep {
                member.gap = Some((keep, list.len() - 2 * keep));
                member.parts = Some(list[..keep].iter().chain(&list[list.len() - keep..]).copied().collect());
                parts_cut = true;
            }
        }
    }
    pin.plan.members = members;
    ctx.plan_tokens(forms, &mut pin.plan)?;
    // Short enough already: whole (the same message as stored).
    if !parts_cut && (pin.plan.tokens >= pin.whole || fits_whole(ctx, &pin.plan, cut.chars)) {
        uncut(ctx, forms, structure, pin)?;
    }
    Ok(())
}

/// Plans `pin` whole, as stored.
fn uncut(ctx: &Ctx, forms: &mut Forms, structure: &Structure, pin: &mut Pin) -> Result<()> {
    let unit = structure.units.get(pin.plan.unit).ok_or_else(|| Error::internal("a pin's unit is missing"))?;
    let members = base_members(unit);
    if pin.plan.members != members {
        pin.plan.members = members;
        ctx.plan_tokens(forms, &mut pin.plan)?;
    }
    Ok(())
}

/// Whether cutting to `chars` at each end leaves the unit as it is (only text, and short).
fn fits_whole(ctx: &Ctx, plan: &Plan, chars: u32) -> bool {
    plan.members.iter().all(|member: &MemberPlan| {
        let Some(message) = ctx.items.get(member.msg).map(|i| i.message) else { return false };
        part_indices(message, member).iter().all(|j| match message.content.parts.get(*j) {
            Some(Part::Text { text, .. }) => text.chars().count() <= 2 * chars as usize,
            Some(Part::Image { .. } | Part::Other(_)) => false,
            _ => true,
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::repair::structure_for;
    use crate::compact::testing::{Log, ENCODING};
    use crate::compact::{BuildCache, BuildOptions};
    use serde_json::json;

    fn pins_of(log: &Log) -> Vec<(usize, Vec<PinRole>)> {
        let items = log.items();
        let options = BuildOptions::default();
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
        let mut cache = BuildCache::default();
        let structure = structure_for(&items, true, &mut cache.structure);
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

    #[test]
    fn a_message_pinned_explicitly_stands_for_the_task() {
        let mut log = Log::openai(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "Here is a demonstration of another issue."},
            {"role": "user", "content": "The issue: fix the parser."},
            {"role": "assistant", "content": "on it"},
            {"role": "user", "content": "hurry"}
        ]));
        assert_eq!(pins_of(&log), [(1, vec![PinRole::Task]), (4, vec![PinRole::Latest])]);
        log.pinned = vec![2];
        assert_eq!(pins_of(&log), [(2, vec![PinRole::Pinned]), (4, vec![PinRole::Latest])]);
        // Pinned and latest at once; a pin with no request of its own (an assistant message) is none.
        log.pinned = vec![3, 4];
        assert_eq!(pins_of(&log), [(4, vec![PinRole::Pinned, PinRole::Latest])]);
    }

    #[test]
    fn a_pinned_request_of_many_parts_is_cut_to_its_first_and_last_parts() {
        use crate::compact::summary_state::SummaryState;
        use crate::compact::testing::through_reduce;
        use crate::compact::BudgetOptions;
        let parts: Vec<serde_json::Value> =
            (0..5_000).map(|i| json!({"type": "text", "text": format!("part {i} of the task")})).collect();
        let log = Log::openai(json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": parts},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "and?"}
        ]));
        let items = log.items();
        let options = BuildOptions {
            budget: Some(BudgetOptions { max_tokens: Some(2_000), ..BudgetOptions::default() }),
            summary: None,
            ..BuildOptions::default()
        };
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
        let mut cache = BuildCache::default();
        let state = SummaryState::default();
        let pass = through_reduce(&ctx, &mut cache, &state);
        let room = (2_000 - pass.units.system_tokens - crate::tokens::REPLY_PRIMING) / 2;
        assert!(pass.budget.pins.tokens <= room, "{} tokens of pins in {room}", pass.budget.pins.tokens);
        let task = &pass.budget.pins.list[0];
        let member = &task.plan.members[0];
        let (kept, left_out) = member.gap.expect("parts left out");
        assert_eq!(member.parts.as_ref().map(Vec::len), Some(2 * kept));
        assert_eq!(left_out, 5_000 - 2 * kept);
        let text = ctx.materialize(&mut cache.forms, member).unwrap().content.joined_text();
        assert!(text.starts_with("part 0 of the task"), "{}", &text[..40]);
        assert!(text.ends_with("part 4999 of the task"));
        assert!(text.contains(&format!("[... {left_out} parts omitted ...]")));
        // Whole again once the budget holds it.
        let roomy = BuildOptions { budget: None, ..options.clone() };
        let ctx = Ctx { options: &roomy, ..ctx };
        let pass = through_reduce(&ctx, &mut cache, &state);
        assert!(
            pass.budget.pins.list[0].plan.members[0].whole()
                && pass.budget.pins.list[0].plan.tokens == pass.budget.pins.list[0].whole
        );
    }
}
