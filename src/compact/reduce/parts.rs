//! The reductions of a step's result parts: which parts a reduction could apply to
//! (`candidates`), and each part's digest or compression, computed once and kept in the record
//! forms (`Forms`) by record id.

use super::compress;
use super::digest;
use super::index::FileIndex;
use crate::compact::forms::{part_indices, result_with, Ctx, Forms, MemberPlan, Reduction};
use crate::compact::repair::Structure;
use crate::error::{Error, Result};
use crate::message::{Part, Role};

/// The file index, up to date with the history.
pub(crate) fn index(ctx: &Ctx, files: &mut FileIndex) {
    let tools: &[String] = ctx.options.digest.as_ref().map_or(&[], |d| d.tools.as_slice());
    files.update(ctx.items, tools);
}

/// Computes (once) the digested or compressed form of result part `j` of message `msg`; says if
/// there is one (shorter than the part).
pub(crate) fn ensure_reduced(
    ctx: &Ctx,
    forms: &mut Forms,
    msg: usize,
    j: usize,
    reduction: Reduction,
    path: Option<&str>,
) -> Result<bool> {
    let item = *ctx.item(msg)?;
    let len = item.message.content.parts.len();
    let slot = forms.part(item.id, j, len);
    let cached = match reduction {
        Reduction::Compress => slot.compressed.as_ref().map(Option::is_some),
        Reduction::Digest => slot.digested.as_ref().map(Option::is_some),
        Reduction::Cut(_) => return Ok(true),
    };
    if let Some(done) = cached {
        return Ok(done);
    }
    let Some(Part::ToolResult(result)) = item.message.content.parts.get(j) else {
        return Ok(false);
    };
    let text_only = result.content.parts.iter().all(|p| matches!(p, Part::Text { .. }));
    let text = result.content.joined_text();
    let reduced_text = if !text_only || text.is_empty() {
        None
    } else {
        match reduction {
            Reduction::Compress => ctx.options.compress.as_ref().and_then(|o| compress::compress_text(&text, o)),
            _ => {
                let line = digest::digest(path.filter(|p| !p.is_empty()), &text);
                (line.len() < text.len()).then_some(line)
            }
        }
    };
    let part = reduced_text.map(|t| result_with(result, t));
    let found = part.is_some();
    forms.computed += 1;
    let slot = forms.part(item.id, j, len);
    match reduction {
        Reduction::Compress => slot.compressed = Some(part),
        _ => slot.digested = Some(part),
    }
    Ok(found)
}

/// Adds digests (file reads, when `digest`) and compression (long outputs, when `compress`) to a
/// step's result members: every reduction there is, the most a unit can be reduced.
pub(crate) fn reduce_members(
    ctx: &Ctx,
    forms: &mut Forms,
    files: &FileIndex,
    structure: &Structure,
    members: &mut [MemberPlan],
    digest: bool,
    compress: bool,
) -> Result<()> {
    for c in candidates(ctx, forms, files, structure, members)? {
        let member = members.get_mut(c.member).ok_or_else(|| Error::internal("member out of range"))?;
        if member.replace.iter().any(|(k, _)| *k == c.part) {
            continue;
        }
        if digest
            && c.read.is_some()
            && ensure_reduced(ctx, forms, member.msg, c.part, Reduction::Digest, c.read.as_deref())?
        {
            member.replace.push((c.part, Reduction::Digest));
        } else if compress && c.long && ensure_reduced(ctx, forms, member.msg, c.part, Reduction::Compress, None)? {
            member.replace.push((c.part, Reduction::Compress));
        }
    }
    Ok(())
}

/// The result parts of `members` that a reduction could apply to, in order.
pub(crate) fn candidates(
    ctx: &Ctx,
    forms: &mut Forms,
    files: &FileIndex,
    structure: &Structure,
    members: &[MemberPlan],
) -> Result<Vec<Candidate>> {
    let mut out = Vec::new();
    for (m, member) in members.iter().enumerate() {
        let item = *ctx.item(member.msg)?;
        if item.message.role == Role::Assistant || member.text_only {
            continue;
        }
        for j in part_indices(item.message, member) {
            let Some(Part::ToolResult(result)) = item.message.content.parts.get(j) else { continue };
            let call = structure.calls.get(&result.call_id).copied();
            let read = match (call, ctx.options.digest.is_some(), result.is_error) {
                (Some((msg, part)), true, None | Some(false)) => files.read(msg, part).map(String::from),
                _ => None,
            };
            let superseded = match (&read, call) {
                (Some(path), Some((msg, _))) => files.superseded(msg, path),
                _ => false,
            };
            let long = match &ctx.options.compress {
                Some(options) => ctx.part_tokens(forms, member.msg, j)? > options.max_tokens,
                None => false,
            };
            out.push(Candidate { member: m, part: j, read, superseded, long });
        }
    }
    Ok(out)
}

/// A result part a reduction could apply to.
pub(crate) struct Candidate {
    pub(crate) member: usize,
    pub(crate) part: usize,
    /// The file it holds, if it is a file read (digests on).
    pub(crate) read: Option<String>,
    /// A later call touches that file.
    pub(crate) superseded: bool,
    /// Longer than `compress.maxTokens` (compression on).
    pub(crate) long: bool,
}
