//! The reductions and token counts of earlier builds, by record id, so that a warm build
//! computes only what is new.

use crate::util::fasthash::FastMap;

/// Per-part results, computed at most once.
#[derive(Clone, Debug, Default)]
pub(crate) struct PartCache {
    pub tokens: Option<u32>,
    pub compressed: Option<Option<crate::message::Part>>,
    pub digested: Option<Option<crate::message::Part>>,
}

/// Reductions and token counts computed for earlier builds, by record id. Valid for one set of
/// options: a build with other reducer options or another encoding starts it afresh.
#[derive(Clone, Debug, Default)]
pub struct ReduceCache {
    pub(crate) fingerprint: String,
    pub(crate) parts: FastMap<String, Vec<PartCache>>,
    pub(crate) members: FastMap<String, u32>,
    /// Reduced messages by the same key as `members`, with the last build that used each: a
    /// message keeps its identity from build to build (its request form is kept by identity).
    pub(crate) materialized: FastMap<String, (u64, std::sync::Arc<crate::message::Message>)>,
    /// Builds made with this cache.
    pub(crate) builds: u64,
    pub(crate) overheads: FastMap<String, u32>,
    /// The structure of the last history built, with what identifies that history: its length,
    /// first and last ids, and the dedupe flag (an append-only history with the same length and
    /// ends is the same history).
    pub(crate) structure: Option<(usize, String, String, bool, std::sync::Arc<crate::compact::repair::Structure>)>,
    /// The repairs of that structure as receipts report them, with how many of its `repairs` and
    /// `moved` they hold (`repair::reported`).
    pub(crate) reported: Option<(usize, usize, std::sync::Arc<Vec<crate::compact::repair::Repair>>)>,
    /// How many of that structure's units were looked at, and which of them are system units
    /// (`repair::system_units`).
    pub(crate) systems: (usize, Vec<usize>),
    /// Tokens of the messages a build makes up (summary, placeholder, prompt), by role, format and text:
    /// a summary is thousands of tokens, and it stays the same build after build.
    pub(crate) made_up: FastMap<(crate::message::Role, crate::message::Format, String), u32>,
    /// Tokens of the lines of the memory's turn summaries and the state's sections, by text.
    pub(crate) line_tokens: FastMap<String, u32>,
    /// Which results are file contents and which files later calls touch.
    pub(crate) files: super::index::FileIndex,
    /// Extractive summaries (the bridge) by what they cover: the previous summary's request id,
    /// the first and last message, and the budget.
    pub(crate) extracts: FastMap<(String, u64, u32), String>,
    /// The stored messages the last build showed with their images replaced (`images`).
    pub(crate) images_once: crate::fasthash::FastSet<String>,
    /// What images sent once made of each stored message holding images, by id.
    pub(crate) images_shown: FastMap<String, crate::compact::images::Shown>,
    /// Running sums of the active units' tokens (`sums`), valid with `structure`.
    pub(crate) sums: crate::compact::sums::UnitSums,
    /// The last build's fates and receipt runs, which the next build's start from.
    pub(crate) runs: Option<crate::compact::receipt::Kept>,
    /// How far the units of `structure` reach (`receipt::Reach`).
    pub(crate) reach: crate::compact::receipt::Reach,
    scratch: PartCache,
    /// How many reductions were computed (not served from the cache): for tests and benchmarks.
    pub computed: u64,
    /// How many unit plans builds made (`plan::Plans`): for tests and benchmarks.
    pub planned: u64,
    /// How many stored messages' fates builds made (not kept from the build before), and how
    /// many receipt runs: for tests and benchmarks.
    pub fates_made: u64,
    pub runs_made: u64,
}

impl ReduceCache {
    pub fn new() -> Self {
        Self::default()
    }

    pub(crate) fn prepare(&mut self, fingerprint: String) {
        if self.fingerprint != fingerprint {
            *self = ReduceCache {
                fingerprint,
                computed: self.computed,
                planned: self.planned,
                fates_made: self.fates_made,
                runs_made: self.runs_made,
                ..Default::default()
            };
        }
    }

    /// Forgets what it knows of the messages whose images are replaced now and were not at the
    /// last build, or the other way round: their form changed.
    pub(crate) fn images_replaced<'a>(&mut self, ids: impl Iterator<Item = &'a str>) {
        let now: crate::fasthash::FastSet<String> = ids.map(str::to_string).collect();
        let changed: Vec<String> = now.symmetric_difference(&self.images_once).cloned().collect();
        for id in &changed {
            self.parts.remove(id);
            self.overheads.remove(id);
            let prefix = format!("{id}|");
            self.members.retain(|key, _| !key.starts_with(&prefix));
            self.materialized.retain(|key, _| !key.starts_with(&prefix));
        }
        self.images_once = now;
    }

    pub(crate) fn part(&mut self, id: &str, index: usize, len: usize) -> &mut PartCache {
        if !self.parts.contains_key(id) {
            self.parts.insert(id.to_string(), Vec::new());
        }
        let Some(slots) = self.parts.get_mut(id) else {
            // Inserted just above; a scratch slot keeps this total without a panic path.
            self.scratch = PartCache::default();
            return &mut self.scratch;
        };
        let needed = len.max(index + 1);
        if slots.len() < needed {
            slots.resize(needed, PartCache::default());
        }
        match slots.get_mut(index) {
            Some(slot) => slot,
            None => {
                self.scratch = PartCache::default();
                &mut self.scratch
            }
        }
    }
}
