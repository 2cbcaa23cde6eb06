//! Sums of the units' stored tokens over the active units, kept between builds: what the active
//! units hold as stored (`measure`) and what reductions could save at most
//! (`reduce::stages`). Each is a sum from the first active unit to a unit near the end of the
//! history, which moves by a few units from build to build (an append, the recent steps moving
//! on): a build adds or takes off the units between, instead of reading every unit.

use super::forms::{Ctx, Forms, MemberPlan};
use super::pins::Pin;
use super::plan::Units;
use super::repair::{Structure, UnitKind};
use crate::error::Result;
use crate::message::Role;

/// A unit's stored tokens: all its members', and its results' (the members of a step not from
/// an assistant message). System units count for nothing: they are never active.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Sum {
    pub(crate) all: usize,
    pub(crate) results: usize,
}

impl Sum {
    fn add(self, other: Sum) -> Sum {
        Sum { all: self.all + other.all, results: self.results + other.results }
    }

    fn sub(self, other: Sum) -> Sum {
        Sum { all: self.all.saturating_sub(other.all), results: self.results.saturating_sub(other.results) }
    }
}

/// The sum of the units `from..to`.
#[derive(Clone, Debug, Default)]
struct Cursor {
    from: usize,
    to: usize,
    sum: Sum,
}

/// Which running sum: one per end a build asks for.
#[derive(Clone, Copy, Debug)]
pub(crate) enum End {
    /// The last unit (the active units' tokens as stored).
    History,
    /// Where the recent steps kept whole begin (what reductions could save).
    Tail,
    /// Where the current turn begins (what thinning could save).
    Turn,
}

/// The running sums, valid for one structure as it is extended by appends (`sync`) and for the
/// stored tokens (a build that shows images replaced starts them afresh).
#[derive(Clone, Debug, Default)]
pub(crate) struct UnitSums {
    /// The structure they are sums of (`repair::StructureCache::epoch`).
    epoch: u64,
    cursors: [Cursor; 3],
}

impl UnitSums {
    /// Starts afresh unless the sums are of the structure of `epoch`.
    pub(crate) fn sync(&mut self, epoch: u64) {
        if self.epoch != epoch {
            *self = UnitSums { epoch, ..UnitSums::default() };
        }
    }

    /// Starts afresh: the tokens they sum changed.
    pub(crate) fn forget(&mut self) {
        self.cursors = Default::default();
    }
}

/// A unit's `Sum`.
fn unit_sum(ctx: &Ctx, forms: &mut Forms, structure: &Structure, u: usize) -> Result<Sum> {
    let Some(unit) = structure.units.get(u).filter(|unit| unit.kind != UnitKind::System) else {
        return Ok(Sum::default());
    };
    let mut sum = Sum::default();
    for member in &unit.members {
        let tokens = match member.parts {
            None => ctx.item(member.msg)?.tokens as usize,
            Some(_) => ctx.member_tokens(forms, &MemberPlan::of(member.msg, member.parts.clone()))? as usize,
        };
        sum.all += tokens;
        if unit.kind == UnitKind::Step && ctx.item(member.msg)?.message.role != Role::Assistant {
            sum.results += tokens;
        }
    }
    Ok(sum)
}

/// The sum of the active units before unit `to` (the units from the first active one, less the
/// system units and the pinned requests among them).
pub(crate) fn active_before(
    ctx: &Ctx,
    forms: &mut Forms,
    sums: &mut UnitSums,
    units: &Units,
    pins: &[Pin],
    end: End,
    to: usize,
) -> Result<Sum> {
    let structure = &*units.structure;
    let from = units.active.first().copied().unwrap_or(structure.units.len());
    let to = to.max(from);
    // Units from the open run of assistant messages on may still change (`repair::extend`):
    // summed afresh each time, never kept.
    let settled = structure.open_step.unwrap_or(structure.units.len()).clamp(from, to);
    let cursor = &mut sums.cursors[end as usize];
    if cursor.from != from || cursor.to > structure.units.len() {
        *cursor = Cursor { from, to: from, sum: Sum::default() };
    }
    // A cursor is left where it got to if a count fails: it holds the sum of the units it passed.
    while cursor.to < settled {
        cursor.sum = cursor.sum.add(unit_sum(ctx, forms, structure, cursor.to)?);
        cursor.to += 1;
    }
    while cursor.to > settled {
        let unit = unit_sum(ctx, forms, structure, cursor.to - 1)?;
        cursor.to -= 1;
        cursor.sum = cursor.sum.sub(unit);
    }
    let mut sum = cursor.sum;
    for u in settled..to {
        sum = sum.add(unit_sum(ctx, forms, structure, u)?);
    }
    for pin in pins.iter().filter(|p| (from..to).contains(&p.plan.unit)) {
        sum = sum.sub(unit_sum(ctx, forms, structure, pin.plan.unit)?);
    }
    Ok(sum)
}
