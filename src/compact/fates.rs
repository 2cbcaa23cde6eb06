//! Each stored message's fate in a build (kept, reduced, summarised or dropped, and why), made
//! from the plans the stages decided, and reused from the last build up to the first message
//! whose fate may differ. Apart from the receipt's types (`receipt`), which the stages before
//! speak in: this reads their output.

use std::collections::HashMap;
use std::sync::Arc;

use super::pass::Plans;
use super::receipt::{runs_reusing, Action, DropReason, Fate, ReceiptRun};
use super::repair::{Item, Member, Structure, Unit};
use super::turn_summaries::TurnNote;

/// What a build's fates were made from besides the stored messages, their structure and the
/// plans: two builds of one history that agree on `before` and `covered` have the same fates up
/// to the first planned unit, the first message summarised by one and not the other, and the
/// first of a turn whose memory summary one has and the other not, but for the messages the
/// context holds there (`Kept::fixed`).
#[derive(Clone, Debug, PartialEq)]
struct Background {
    summarised_until: Option<usize>,
    /// The messages of the turns whose memory summaries are in the context.
    memory: Vec<(usize, usize)>,
    before: Option<DropReason>,
    /// How many units the summary in force covers, and the last.
    covered: (usize, Option<usize>),
}

impl Background {
    /// The first message whose fate may differ between this build and `other` on this account.
    fn differs_from(&self, other: &Background) -> usize {
        if (self.before, self.covered) != (other.before, other.covered) {
            return 0;
        }
        // Before both ends of the summarised stretch, messages are summarised in both.
        let until = match (self.summarised_until, other.summarised_until) {
            (a, b) if a == b => usize::MAX,
            (a, b) => a.unwrap_or(0).min(b.unwrap_or(0)),
        };
        let memory = self
            .memory
            .iter()
            .filter(|r| !other.memory.contains(r))
            .chain(other.memory.iter().filter(|r| !self.memory.contains(r)))
            .map(|&(first, _)| first)
            .min()
            .unwrap_or(usize::MAX);
        until.min(memory)
    }
}

/// The last build's fates and receipt runs, which the next build starts from: a build after an
/// append changes the fates of the messages near the end only, and remakes only those (and the
/// runs from the first that changed).
#[derive(Clone, Debug)]
struct Kept {
    /// Shared with the receipt (and unshared by the time the next build starts: it is then
    /// changed in place).
    fates: Arc<Vec<Fate>>,
    runs: Arc<Vec<ReceiptRun>>,
    background: Background,
    /// The first message of the first planned unit (the history's length when none is).
    planned_from: usize,
    /// The messages before `planned_from` the context held (system prompts, pinned requests),
    /// in order, with what became of them.
    fixed: Vec<(usize, Action, u32)>,
    /// Made with images replaced (`images_sent_once`): kept for the receipt's entries only.
    reusable: bool,
}

impl Kept {
    /// Fates a build patched after `fates_and_runs` made them: kept for the entries, not reused.
    fn patched(fates: Arc<Vec<Fate>>) -> Kept {
        Kept {
            fates,
            runs: Arc::default(),
            background: Background { summarised_until: None, memory: Vec::new(), before: None, covered: (0, None) },
            planned_from: 0,
            fixed: Vec::new(),
            reusable: false,
        }
    }
}

/// What the fates of the last build leave to the next one, kept with the structure they were
/// made on (`repair::StructureCache::epoch`).
#[derive(Clone, Debug, Default)]
pub(crate) struct FateCache {
    epoch: u64,
    /// The last build's fates and receipt runs, which the next build's start from.
    kept: Option<Kept>,
    /// How far the units of the structure reach.
    reach: Reach,
    /// How many stored messages' fates builds made (not kept from the build before), and how
    /// many receipt runs: for tests and benchmarks.
    pub(crate) made: u64,
    pub(crate) runs_made: u64,
}

impl FateCache {
    /// Starts afresh unless what it keeps is of the structure of `epoch`.
    pub(crate) fn sync(&mut self, epoch: u64) {
        if self.epoch != epoch {
            self.epoch = epoch;
            self.kept = None;
            self.reach = Reach::default();
        }
    }

    /// Forgets the last build's fates: the next build makes all of them.
    pub(crate) fn forget(&mut self) {
        self.kept = None;
    }

    /// Keeps `fates`, patched after `fates_and_runs` made them, for the entries only: the next
    /// build makes its own.
    pub(crate) fn keep_patched(&mut self, fates: Arc<Vec<Fate>>) {
        self.kept = Some(Kept::patched(fates));
    }
}

/// Units per block of `Reach`.
const REACH_BLOCK: usize = 64;

/// The greatest last message of the units up to the end of each block of `REACH_BLOCK` units,
/// kept with the structure (`FateCache`): units are in order of their first message,
/// and this finds the first that reaches a message, however late its last result came.
#[derive(Clone, Debug, Default)]
struct Reach {
    blocks: Vec<usize>,
}

impl Reach {
    /// The first unit with a member at `msg` or later (`units.len()` when none has).
    fn first_reaching(&mut self, structure: &Structure, msg: usize) -> usize {
        let units = &structure.units;
        // Blocks from the open run of assistant messages on may still grow (`repair::extend`).
        let settled = structure.open_step.unwrap_or(units.len()).min(units.len());
        self.blocks.truncate(settled / REACH_BLOCK);
        let mut reach = self.blocks.last().copied().unwrap_or(0);
        for block in units.chunks(REACH_BLOCK).skip(self.blocks.len()) {
            reach = block.iter().map(Unit::last).fold(reach, usize::max);
            self.blocks.push(reach);
        }
        let block = self.blocks.partition_point(|&reach| reach < msg);
        let from = block * REACH_BLOCK;
        units.get(from..).map_or(units.len(), |rest| from + rest.iter().take_while(|u| u.last() < msg).count())
    }
}

/// What `fates` reads of a build.
pub(crate) struct FateInputs<'a, 'b> {
    pub(crate) items: &'a [Item<'b>],
    pub(crate) structure: &'a Structure,
    pub(crate) covered: &'a [usize],
    pub(crate) active: &'a [usize],
    pub(crate) plans: &'a Plans,
    /// The action and the tokens of each message in the context.
    pub(crate) after: &'a HashMap<usize, (Action, u32)>,
    pub(crate) summarised_until: Option<usize>,
    pub(crate) turns: &'a [TurnNote<'a>],
    pub(crate) memory_turns: &'a [u32],
}

/// The fates and the runs of a build, those of the last build (`kept`, where these are kept in
/// turn) reused up to the first message whose fate may differ.
pub(crate) fn fates_and_runs(inputs: &FateInputs, cache: &mut FateCache) -> (Arc<Vec<Fate>>, Arc<Vec<ReceiptRun>>) {
    let kept = &mut cache.kept;
    let FateInputs { items, structure, active, plans, after, .. } = *inputs;
    // The ranges of the turns whose summaries are in the context: a handful, looked up once per
    // message left out (of a long history, most messages).
    let memory: Vec<(usize, usize)> =
        inputs.turns.iter().filter(|t| inputs.memory_turns.contains(&t.turn)).map(|t| (t.first, t.last)).collect();
    let background = Background {
        summarised_until: inputs.summarised_until,
        memory,
        before: plans.before,
        covered: (inputs.covered.len(), inputs.covered.last().copied()),
    };
    let planned_from = active.get(plans.first()).and_then(|&u| structure.units.get(u)).map_or(items.len(), |u| u.first);
    let mut fixed: Vec<(usize, Action, u32)> = after
        .iter()
        .filter(|(&msg, _)| msg < planned_from)
        .map(|(&msg, &(action, tokens))| (msg, action, tokens))
        .collect();
    fixed.sort_unstable_by_key(|f| f.0);
    // The first message whose fate may differ from the last build's: past its messages, from
    // the first planned unit of either build, or from the first held message they disagree on.
    let last = kept.take().filter(|k| k.reusable && k.fates.len() <= items.len());
    let from = last.as_ref().map_or(0, |k| {
        let planned = k.planned_from.min(planned_from);
        let below = |list: &[(usize, Action, u32)]| list.partition_point(|f| f.0 < planned);
        let (a, b) = (&k.fixed[..below(&k.fixed)], &fixed[..below(&fixed)]);
        let differs = a.iter().zip(b).find(|(x, y)| x != y).map(|(x, y)| x.0.min(y.0));
        let longer = match a.len().cmp(&b.len()) {
            std::cmp::Ordering::Less => b.get(a.len()).map(|f| f.0),
            std::cmp::Ordering::Greater => a.get(b.len()).map(|f| f.0),
            std::cmp::Ordering::Equal => None,
        };
        [
            k.fates.len(),
            planned,
            differs.unwrap_or(usize::MAX),
            longer.unwrap_or(usize::MAX),
            k.background.differs_from(&background),
        ]
        .into_iter()
        .min()
        .unwrap_or(0)
    });
    let (mut shared, last_runs) = match last {
        Some(k) => (k.fates, Some(k.runs)),
        None => (Arc::default(), None),
    };
    // Unshared by now (the last receipt was dropped), the last fates are changed in place.
    let fates = Arc::make_mut(&mut shared);
    fates.truncate(from);
    fill_fates(inputs, &background, fates, from, cache.reach.first_reaching(structure, from));
    let (runs, reused) = runs_reusing(items, fates, last_runs.as_deref().map(|r| (from, r.as_slice())));
    cache.made += (fates.len() - from) as u64;
    cache.runs_made += (runs.len() - reused) as u64;
    drop(last_runs);
    let runs = Arc::new(runs);
    cache.kept = Some(Kept {
        fates: Arc::clone(&shared),
        runs: Arc::clone(&runs),
        background,
        planned_from,
        fixed,
        reusable: true,
    });
    (shared, runs)
}

/// Each stored message's fate from `from` on (`fates` holds those before): summarised (by the
/// summary in force, the bridge, or its turn's memory summary), dropped (by repair, thinning,
/// the window or the budget), or what its members in the context became. With a summary, what
/// repair left out before `summarised_until` counts as summarised too. `first_unit` is the first
/// unit with a member at `from` or later.
fn fill_fates(inputs: &FateInputs, background: &Background, fates: &mut Vec<Fate>, from: usize, first_unit: usize) {
    let FateInputs { items, structure, covered, active, plans, after, .. } = *inputs;
    // Every message starts as left out by repair (summarised, before `summarised_until`); what a
    // later stage decided overwrites that.
    let until = background.summarised_until.unwrap_or(0);
    fates.extend(items.iter().enumerate().skip(from).map(|(msg, item)| {
        let (action, reason) =
            if msg < until { (Action::Summarised, None) } else { (Action::Dropped, Some(DropReason::Repair)) };
        Fate { action, reason, tokens_before: item.tokens, tokens_after: 0 }
    }));
    let set = |fates: &mut [Fate], msg: usize, action: Action, reason: Option<DropReason>| {
        if let Some(fate) = fates.get_mut(msg).filter(|_| msg >= from) {
            fate.action = action;
            fate.reason = reason;
        }
    };
    let from_unit = |units: &[usize]| units.partition_point(|&u| u < first_unit);
    for &u in &covered[from_unit(covered)..] {
        if let Some(unit) = structure.units.get(u) {
            // A unit that ends before `until` is summarised already (most of a long history's
            // covered units), without reading its members.
            if unit.last() < until {
                continue;
            }
            for m in &unit.members {
                set(fates, m.msg, Action::Summarised, None);
            }
        }
    }
    let memory = |msg: usize| background.memory.iter().any(|&(first, last)| (first..=last).contains(&msg));
    let left_out = |fates: &mut [Fate], unit_members: &[Member], reason: DropReason| {
        for m in unit_members {
            match reason {
                DropReason::Bridge => set(fates, m.msg, Action::Summarised, Some(DropReason::Bridge)),
                _ if memory(m.msg) => set(fates, m.msg, Action::Summarised, Some(DropReason::Memory)),
                _ => set(fates, m.msg, Action::Dropped, Some(reason)),
            }
        }
    };
    // The units not planned, all left out alike.
    if let Some(reason) = plans.before {
        let not_planned = active.get(..plans.first()).unwrap_or(active);
        for &u in &not_planned[from_unit(not_planned)..] {
            left_out(fates, structure.units.get(u).map_or(&[][..], |u| u.members.as_slice()), reason);
        }
    }
    for plan in plans.iter() {
        let unit_members = structure.units.get(plan.unit).map_or(&[][..], |u| u.members.as_slice());
        if let Some(reason) = plan.dropped {
            left_out(fates, unit_members, reason);
        } else {
            // Members of a kept unit that thinning left out.
            for m in unit_members {
                if !plan.members.iter().any(|p| p.msg == m.msg) {
                    match memory(m.msg) {
                        true => set(fates, m.msg, Action::Summarised, Some(DropReason::Memory)),
                        false => set(fates, m.msg, Action::Dropped, Some(DropReason::Thinning)),
                    }
                }
            }
        }
    }
    // The messages in the context (its size, not the history's).
    for (&msg, &(action, tokens)) in after {
        if let Some(fate) = fates.get_mut(msg).filter(|_| msg >= from) {
            *fate = Fate { action, reason: None, tokens_before: fate.tokens_before, tokens_after: tokens };
        }
    }
}
