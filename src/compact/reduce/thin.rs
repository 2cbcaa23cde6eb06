//! History thinning: a complete earlier turn (not the current one) before the recent
//! steps keeps its user request and the assistant's last text; its tool traffic and earlier
//! replies are left out. Only without a summary, and only while the context does not fit.

use std::collections::HashMap;

use crate::compact::forms::{base_members, has_text, part_indices, Ctx, MemberPlan};
use crate::compact::pass::Pass;
use crate::compact::repair::UnitKind;
use crate::error::Result;
use crate::message::{Part, Role};

/// Per unit of a complete earlier turn before the recent steps: the member it keeps (the turn's
/// last user request, or the turn's last assistant text, text parts only), or `None` when it is
/// left out.
pub(crate) fn decide(ctx: &Ctx, pass: &Pass) -> Result<HashMap<usize, Option<MemberPlan>>> {
    let mut thinning: HashMap<usize, Option<MemberPlan>> = HashMap::new();
    let mut last_user: HashMap<usize, usize> = HashMap::new();
    let mut last_text: HashMap<usize, (usize, MemberPlan)> = HashMap::new();
    let last_turn = pass.units.structure.last_turn;
    for &u in pass.units.active.iter().take(pass.measured.tail_start) {
        let Some(unit) = pass.units.unit(u).filter(|unit| unit.turn < last_turn) else { continue };
        match unit.kind {
            UnitKind::User => {
                last_user.insert(unit.turn, u);
            }
            UnitKind::Assistant | UnitKind::Step => {
                for member in base_members(unit).into_iter().rev() {
                    let message = ctx.item(member.msg)?.message;
                    if message.role == Role::Assistant && has_text(message, &member) {
                        let text_parts: Vec<usize> = part_indices(message, &member)
                            .into_iter()
                            .filter(|j| matches!(message.content.parts.get(*j), Some(Part::Text { .. })))
                            .collect();
                        let whole = unit.kind == UnitKind::Assistant
                            && unit.members.len() == 1
                            && text_parts.len() == message.content.parts.len();
                        let plan = match whole {
                            true => MemberPlan::of(member.msg, None),
                            false => MemberPlan { text_only: true, ..MemberPlan::of(member.msg, Some(text_parts)) },
                        };
                        last_text.insert(unit.turn, (u, plan));
                        break;
                    }
                }
            }
            UnitKind::System => {}
        }
    }
    for &u in pass.units.active.iter().take(pass.measured.tail_start) {
        let Some(unit) = pass.units.unit(u).filter(|unit| unit.turn < last_turn) else { continue };
        let keep = match unit.kind {
            UnitKind::User => {
                (last_user.get(&unit.turn) == Some(&u)).then(|| base_members(unit).into_iter().next()).flatten()
            }
            UnitKind::Assistant | UnitKind::Step => {
                last_text.get(&unit.turn).filter(|(w, _)| *w == u).map(|(_, m)| m.clone())
            }
            UnitKind::System => continue,
        };
        thinning.insert(u, keep);
    }
    Ok(thinning)
}
