//! How a unit goes into the context: which of its members, in which form (whole, some parts,
//! reduced, text only, cut), and what each form costs. `Forms` keeps the form of each stored
//! record and its count by record id, so that a warm build computes only what is new; `Ctx` is
//! what stays the same during a build. Every stage plans units with these.

use std::sync::Arc;

use smallvec::SmallVec;

use super::options::BuildOptions;
use super::receipt::{Action, DropReason};
use super::repair::{Item, Unit};
use super::state_sections::{StateNote, StatePart};
use super::turn_summaries::TurnNote;
use crate::error::{Error, Result};
use crate::message::{Content, ContentForm, Format, Message, Part, Role, ToolResult};
use crate::tokens::{self, Encoding};
use crate::util::fasthash::FastMap;

/// How a tool result is reduced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reduction {
    /// A file's contents become their one-line digest.
    Digest,
    /// Long output compressed (JSON-aware, or head and tail).
    Compress,
    /// Head and tail of this many characters each: the reduction sized to what the budget needs.
    Cut(u32),
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct MemberPlan {
    pub(crate) msg: usize,
    pub(crate) parts: Option<Vec<usize>>,
    /// Result parts replaced by their reduced form.
    pub(crate) replace: Vec<(usize, Reduction)>,
    /// Only the text parts (history thinning).
    pub(crate) text_only: bool,
    /// Text parts cut to their head and tail of this many characters each, images and documents
    /// left out, tool calls and thinking whole (a pinned request or the oldest recent unit that
    /// does not fit whole).
    pub(crate) cut_text: Option<u32>,
    /// Parts left out of the middle (a pinned request of thousands of parts, cut to its first and
    /// last): after this many of `parts`, this many, said by a text part in their place.
    pub(crate) gap: Option<(usize, usize)>,
}

impl MemberPlan {
    pub(crate) fn of(msg: usize, parts: Option<Vec<usize>>) -> MemberPlan {
        MemberPlan { msg, parts, replace: Vec::new(), text_only: false, cut_text: None, gap: None }
    }

    pub(crate) fn whole(&self) -> bool {
        self.parts.is_none() && self.replace.is_empty() && !self.text_only && self.cut_text.is_none()
    }

    pub(crate) fn action(&self) -> Action {
        if self.text_only {
            Action::Thinned
        } else if self.cut_text.is_some() || self.replace.iter().any(|(_, r)| *r != Reduction::Digest) {
            Action::Compressed
        } else if !self.replace.is_empty() {
            Action::Digested
        } else {
            Action::Kept
        }
    }
}

/// A plan's members, inline up to two (a step's call and its result).
pub(crate) type Members = SmallVec<[MemberPlan; 2]>;

#[derive(Clone, Debug)]
pub(crate) struct Plan {
    pub(crate) unit: usize,
    pub(crate) members: Members,
    pub(crate) member_tokens: SmallVec<[u32; 4]>,
    pub(crate) tokens: usize,
    pub(crate) dropped: Option<DropReason>,
    /// Counted in its current form (`member_tokens` and `tokens` are up to date).
    pub(crate) counted: bool,
}

impl Plan {
    /// The unit whole: every member as the repair stage formed it, not yet counted.
    pub(crate) fn of(u: usize, unit: &Unit) -> Plan {
        Plan {
            unit: u,
            members: base_members(unit),
            member_tokens: SmallVec::new(),
            tokens: 0,
            dropped: None,
            counted: false,
        }
    }
}

/// What stays the same during a build.
pub(crate) struct Ctx<'a, 'b> {
    pub(crate) items: &'a [Item<'b>],
    pub(crate) encoding: Encoding,
    pub(crate) options: &'a BuildOptions,
    /// A session's recorded turns (`memory`), whose summaries stand in for turns not held whole.
    pub(crate) turns: &'a [TurnNote<'b>],
    /// A session's state (`state`): the sections after the system prompt.
    pub(crate) state: &'a [StateNote],
}

pub(crate) fn part_indices(message: &Message, member: &MemberPlan) -> Vec<usize> {
    match &member.parts {
        Some(list) => list.clone(),
        None => (0..message.content.parts.len()).collect(),
    }
}

impl Ctx<'_, '_> {
    /// The agent's open todos, from the state's todo section (`- ` list lines).
    pub(crate) fn open_todos(&self) -> Vec<String> {
        self.state
            .iter()
            .filter(|n| n.part == StatePart::Todos)
            .flat_map(|n| n.lines.iter().map(|l| l.strip_prefix("- ").unwrap_or(l).to_string()))
            .collect()
    }

    pub(crate) fn item(&self, msg: usize) -> Result<&Item<'_>> {
        self.items.get(msg).ok_or_else(|| Error::internal(format!("message index {msg} out of range")))
    }

    pub(crate) fn overhead(&self, forms: &mut Forms, msg: usize) -> Result<u32> {
        let item = self.item(msg)?;
        if let Some(n) = forms.overheads.get(item.id) {
            return Ok(*n);
        }
        let n = u32::try_from(tokens::message_overhead(self.encoding, item.message)).unwrap_or(u32::MAX);
        forms.overheads.insert(item.id.to_string(), n);
        Ok(n)
    }

    pub(crate) fn part_tokens(&self, forms: &mut Forms, msg: usize, j: usize) -> Result<u32> {
        let item = *self.item(msg)?;
        let len = item.message.content.parts.len();
        if let Some(n) = forms.part(item.id, j, len).tokens {
            return Ok(n);
        }
        let n = if len == 1 {
            item.tokens.saturating_sub(self.overhead(forms, msg)?)
        } else {
            let part = item.message.content.parts.get(j).ok_or_else(|| Error::internal("part index out of range"))?;
            u32::try_from(tokens::count_part(self.encoding, part, item.message.source)).unwrap_or(u32::MAX)
        };
        forms.part(item.id, j, len).tokens = Some(n);
        Ok(n)
    }

    pub(crate) fn materialize(&self, forms: &mut Forms, member: &MemberPlan) -> Result<Arc<Message>> {
        let item = *self.item(member.msg)?;
        if member.whole() {
            return Ok(Arc::clone(item.message));
        }
        // The same variant is the same `Arc` build after build: its request form is kept by
        // identity (`EmitCache`).
        let key = member_key(item.id, member);
        let builds = forms.builds;
        if let Some((used, message)) = forms.materialized.get_mut(&key) {
            *used = builds;
            return Ok(Arc::clone(message));
        }
        let source = item.message;
        let mut parts = Vec::new();
        for (k, j) in part_indices(source, member).into_iter().enumerate() {
            if let Some((_, left_out)) = member.gap.filter(|(at, _)| *at == k) {
                parts.push(Part::text(format!("[... {left_out} parts omitted ...]")));
            }
            let Some(original) = source.content.parts.get(j) else { continue };
            if member.text_only && !matches!(original, Part::Text { .. }) {
                continue;
            }
            let replaced = match member.replace.iter().find(|(k, _)| *k == j) {
                Some((_, reduction)) => self.reduced(forms, member.msg, j, *reduction)?,
                None => None,
            };
            let part = match (replaced, member.cut_text, original) {
                (Some(part), _, _) => part,
                (None, Some(chars), Part::Text { text, extra }) => Part::Text {
                    text: crate::extract::head_tail(text, chars as usize, chars as usize),
                    extra: extra.clone(),
                },
                // Cut short, a message keeps its calls, results and thinking, not its images;
                // its opaque parts (AI SDK approvals…) stay, but a Responses item that is
                // opaque whole (reasoning) goes: it must precede its item unchanged.
                (None, Some(_), Part::Image { .. }) => continue,
                (None, Some(_), Part::Other(_))
                    if !original.is_opaque() || (source.source == Format::Responses && source.is_opaque()) =>
                {
                    continue
                }
                (None, _, original) => original.clone(),
            };
            parts.push(part);
        }
        let form = if member.parts.is_none() && !member.text_only && member.cut_text.is_none() {
            source.content.form
        } else if source.content.form == ContentForm::Text && parts.iter().all(|p| matches!(p, Part::Text { .. })) {
            ContentForm::Text
        } else if parts.is_empty() && matches!(source.content.form, ContentForm::Null | ContentForm::Absent) {
            source.content.form
        } else {
            ContentForm::Parts
        };
        let message = Arc::new(Message {
            role: source.role,
            content: Content { form, parts },
            name: source.name.clone(),
            extra: source.extra.clone(),
            source: source.source,
        });
        forms.materialized.insert(key, (builds, Arc::clone(&message)));
        Ok(message)
    }

    pub(crate) fn member_tokens(&self, forms: &mut Forms, member: &MemberPlan) -> Result<u32> {
        let item = *self.item(member.msg)?;
        if member.whole() {
            return Ok(item.tokens);
        }
        let key = member_key(item.id, member);
        if let Some(n) = forms.members.get(&key) {
            return Ok(*n);
        }
        let message = self.materialize(forms, member)?;
        let n = tokens::count_message(self.encoding, &message).total;
        forms.members.insert(key, n);
        Ok(n)
    }

    pub(crate) fn plan_tokens(&self, forms: &mut Forms, plan: &mut Plan) -> Result<()> {
        plan.member_tokens.clear();
        let mut total = 0usize;
        for member in &plan.members {
            let n = self.member_tokens(forms, member)?;
            plan.member_tokens.push(n);
            total += n as usize;
        }
        plan.tokens = total;
        plan.counted = true;
        Ok(())
    }

    /// The reduced part: computed by the reduce stage (`reduce::parts::ensure_reduced`), or cut
    /// here.
    pub(crate) fn reduced(
        &self,
        forms: &mut Forms,
        msg: usize,
        j: usize,
        reduction: Reduction,
    ) -> Result<Option<Part>> {
        let item = *self.item(msg)?;
        if let Reduction::Cut(chars) = reduction {
            return Ok(match item.message.content.parts.get(j) {
                Some(Part::ToolResult(result)) => {
                    let text = result.content.joined_text();
                    Some(result_with(result, crate::extract::head_tail(&text, chars as usize, chars as usize)))
                }
                _ => None,
            });
        }
        let slot = forms.part(item.id, j, item.message.content.parts.len());
        Ok(match reduction {
            Reduction::Compress => slot.compressed.clone().flatten(),
            _ => slot.digested.clone().flatten(),
        })
    }
}

/// A cache key for a member's variant: the id, the parts, the reductions, text-only or cut.
pub(crate) fn member_key(id: &str, member: &MemberPlan) -> String {
    use std::fmt::Write;
    let mut key = String::with_capacity(id.len() + 16);
    key.push_str(id);
    key.push('|');
    if let Some(parts) = &member.parts {
        for j in parts {
            let _ = write!(key, "{j},");
        }
    } else {
        key.push('*');
    }
    key.push('|');
    for (j, reduction) in &member.replace {
        let _ = match reduction {
            Reduction::Digest => write!(key, "{j}d"),
            Reduction::Compress => write!(key, "{j}c"),
            Reduction::Cut(n) => write!(key, "{j}x{n}"),
        };
    }
    if member.text_only {
        key.push_str("|t");
    }
    if let Some(n) = member.cut_text {
        let _ = write!(key, "|k{n}");
    }
    if let Some((at, left_out)) = member.gap {
        let _ = write!(key, "|g{at},{left_out}");
    }
    key
}

pub(crate) fn base_members(unit: &Unit) -> Members {
    unit.members.iter().map(|m| MemberPlan::of(m.msg, m.parts.clone())).collect()
}

pub(crate) fn has_text(message: &Message, member: &MemberPlan) -> bool {
    part_indices(message, member)
        .iter()
        .any(|j| matches!(message.content.parts.get(*j), Some(Part::Text { text, .. }) if !text.trim().is_empty()))
}

/// The tokens of a message the build makes up (summary, placeholder, prompt), counted once.
pub(crate) fn made_up_tokens(ctx: &Ctx, texts: &mut TextCounts, message: &Message) -> usize {
    let text = message.content.joined_text();
    let key = (message.role, message.source, text);
    if let Some(n) = texts.messages.get(&key) {
        return *n as usize;
    }
    let n = tokens::count_message(ctx.encoding, message).total;
    // Summaries come and go; a few dozen texts is all a history ever needs at once.
    if texts.messages.len() >= 64 {
        texts.messages.clear();
    }
    texts.messages.insert(key, n);
    n as usize
}

/// A tool result with its content replaced by `text`.
pub(crate) fn result_with(result: &ToolResult, text: String) -> Part {
    Part::ToolResult(ToolResult {
        call_id: result.call_id.clone(),
        content: Content::text(text),
        is_error: result.is_error,
        extra: result.extra.clone(),
    })
}

/// What is known of one part of a stored record, computed at most once.
#[derive(Clone, Debug, Default)]
pub(crate) struct PartForms {
    pub(crate) tokens: Option<u32>,
    pub(crate) compressed: Option<Option<Part>>,
    pub(crate) digested: Option<Option<Part>>,
}

/// The forms of the stored records and their counts, by record id: each part's tokens and
/// reductions, each record's overhead, and each variant of a record a plan made (its message and
/// its tokens). A record's id names the same message build after build (the log is
/// append-only), so a warm build counts and reduces only what is new.
#[derive(Clone, Debug, Default)]
pub(crate) struct Forms {
    parts: FastMap<String, Vec<PartForms>>,
    overheads: FastMap<String, u32>,
    /// Tokens of each variant, by `member_key`.
    members: FastMap<String, u32>,
    /// Each variant's message, by the same key as `members`, with the last build that used it: a
    /// message keeps its identity from build to build (its request form is kept by identity).
    materialized: FastMap<String, (u64, Arc<Message>)>,
    /// Builds made with these forms.
    builds: u64,
    scratch: PartForms,
    /// How many reductions were computed (not served from here): for tests and benchmarks.
    pub(crate) computed: u64,
}

impl Forms {
    /// A build starts: the variants it materialises are marked as its own.
    pub(crate) fn start_build(&mut self) {
        self.builds += 1;
    }

    /// A build ended: the variants it did not use are forgotten (they are made again if needed).
    pub(crate) fn end_build(&mut self) {
        let builds = self.builds;
        self.materialized.retain(|_, (used, _)| *used == builds);
    }

    /// Forgets what is known of the records `ids`: their form changed (`images`).
    pub(crate) fn forget(&mut self, ids: &[String]) {
        for id in ids {
            self.parts.remove(id);
            self.overheads.remove(id);
            let prefix = format!("{id}|");
            self.members.retain(|key, _| !key.starts_with(&prefix));
            self.materialized.retain(|key, _| !key.starts_with(&prefix));
        }
    }

    pub(crate) fn part(&mut self, id: &str, index: usize, len: usize) -> &mut PartForms {
        if !self.parts.contains_key(id) {
            self.parts.insert(id.to_string(), Vec::new());
        }
        let Some(slots) = self.parts.get_mut(id) else {
            // Inserted just above; a scratch slot keeps this total without a panic path.
            self.scratch = PartForms::default();
            return &mut self.scratch;
        };
        let needed = len.max(index + 1);
        if slots.len() < needed {
            slots.resize(needed, PartForms::default());
        }
        match slots.get_mut(index) {
            Some(slot) => slot,
            None => {
                self.scratch = PartForms::default();
                &mut self.scratch
            }
        }
    }
}

/// The token counts of the texts a build makes up, by text: the messages (summary, placeholder,
/// prompt: a summary is thousands of tokens, and it stays the same build after build), and the
/// lines of the memory's turn summaries and the state's sections.
#[derive(Clone, Debug, Default)]
pub(crate) struct TextCounts {
    messages: FastMap<(Role, Format, String), u32>,
    pub(crate) lines: FastMap<String, u32>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::testing::{Log, ENCODING};
    use serde_json::json;

    #[test]
    fn a_member_materialises_its_parts_and_counts_them_exactly() {
        let log = Log::openai(json!([
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "reading", "tool_calls": [{"id": "a", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "ok"}
        ]));
        let items = log.items();
        let options = BuildOptions::default();
        let ctx = Ctx { items: &items, encoding: ENCODING, options: &options, turns: &[], state: &[] };
        let mut forms = Forms::default();
        let text_only = MemberPlan { text_only: true, ..MemberPlan::of(1, None) };
        let message = ctx.materialize(&mut forms, &text_only).unwrap();
        assert_eq!(message.content.joined_text(), "reading");
        assert!(message.tool_calls().next().is_none());
        assert_eq!(ctx.member_tokens(&mut forms, &text_only).unwrap(), tokens::count_message(ENCODING, &message).total);
        let again = ctx.materialize(&mut forms, &text_only).unwrap();
        assert!(Arc::ptr_eq(&message, &again), "the same variant is the same message build after build");
        let whole = MemberPlan::of(1, None);
        assert!(Arc::ptr_eq(&ctx.materialize(&mut forms, &whole).unwrap(), items[1].message));
    }
}
