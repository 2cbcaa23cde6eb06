//! The extractive summary rendered: the sections as JSON in the agent's order, fitted to a token
//! budget by trimming the least important entries first; a previous summary folded in.

use super::*;

pub(super) fn strings(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(|v| v.as_str().map(String::from)).collect())
        .unwrap_or_default()
}

/// Folds a previous summary in: ours section by section, anyone else's as `earlier`.
pub(super) fn fold_previous(ex: &mut Extract, previous: &str) {
    let ours = match serde_json::from_str::<Value>(previous) {
        Ok(Value::Object(map)) if !map.is_empty() && map.keys().all(|k| KEYS.contains(&k.as_str())) => map,
        // Someone else's summary (a model's): carried as it is.
        _ => {
            ex.earlier = Some(previous.to_string());
            return;
        }
    };
    ex.earlier = ours.get("earlier").and_then(Value::as_str).map(String::from);
    if let Some(primary) = ours.get("primaryRequest").and_then(Value::as_str) {
        match primary.split_once("\n\nLatest request: ") {
            Some((task, latest)) => {
                ex.task = Some(task.to_string());
                ex.latest = Some(latest.to_string());
            }
            None => ex.task = Some(primary.to_string()),
        }
    }
    ex.user_messages = strings(ours.get("userMessages")).into();
    if let Some(Value::Object(files)) = ours.get("files") {
        // Rendered most recent first within their class: older entries get older clocks.
        let count = files.len() as u64;
        for (i, (path, ops)) in files.iter().enumerate() {
            let mut counts = [0u32; 7];
            for op in ops.as_str().unwrap_or("").split(", ") {
                let (name, n) = match op.split_once(" ×") {
                    Some((name, n)) => (name, n.parse().unwrap_or(1)),
                    None => (op, 1),
                };
                if let Some(at) = FileOp::parse(name).and_then(|op| FileOp::ALL.iter().position(|o| *o == op)) {
                    if let Some(slot) = counts.get_mut(at) {
                        *slot += n;
                    }
                }
            }
            ex.files.push(FileEntry { path: path.clone(), ops: counts, last: count - i as u64 });
        }
        ex.clock = count + 1;
    }
    for text in strings(ours.get("errors")) {
        let (body, fixed) = match text.strip_suffix(" [fixed]") {
            Some(body) => (body.to_string(), true),
            None => (text.clone(), false),
        };
        let (call, error) =
            body.split_once(" → ").map_or(("tool".to_string(), body.clone()), |(c, e)| (c.to_string(), e.to_string()));
        ex.errors.push(ErrorEntry { call, error, fixed });
    }
    ex.pending = strings(ours.get("pendingTasks"));
    ex.current = strings(ours.get("currentWork"));
    ex.next_step = ours.get("nextStep").and_then(Value::as_str).map(String::from);
    if let Some(Value::Object(tools)) = ours.get("toolsUsed") {
        for (name, count) in tools {
            ex.tools.insert(name.clone(), count.as_u64().unwrap_or(0));
        }
    }
}

/// The files, most important first: changed, then read or run, then mentioned, then scratch files;
/// the most recently touched first within each.
pub(super) fn ordered_files(files: &[FileEntry]) -> Vec<&FileEntry> {
    let mut list: Vec<&FileEntry> = files.iter().collect();
    crate::util::sort::sort_by(&mut list, |a, b| {
        a.class().cmp(&b.class()).then(b.last.cmp(&a.last)).then(a.path.cmp(&b.path))
    });
    list
}

pub(super) fn primary_text(ex: &Extract) -> Option<String> {
    let task = ex.task.as_ref()?;
    Some(match &ex.latest {
        Some(latest) if latest != task => format!("{task}\n\nLatest request: {latest}"),
        _ => task.clone(),
    })
}

/// The extract as its JSON text. The user messages (most of a long history's extract) go into
/// the JSON tree and back rather than being copied into it.
pub(super) fn render(ex: &mut Extract) -> String {
    let mut map = Map::new();
    if let Some(earlier) = &ex.earlier {
        map.insert("earlier".into(), Value::from(earlier.clone()));
    }
    if let Some(primary) = primary_text(ex) {
        map.insert("primaryRequest".into(), Value::from(primary));
    }
    if !ex.user_messages.is_empty() {
        let users = std::mem::take(&mut ex.user_messages);
        map.insert("userMessages".into(), Value::Array(users.into_iter().map(Value::String).collect()));
    }
    if !ex.files.is_empty() {
        let files: Map<String, Value> =
            ordered_files(&ex.files).into_iter().map(|f| (f.path.clone(), Value::from(f.ops_text()))).collect();
        map.insert("files".into(), Value::Object(files));
    }
    if !ex.errors.is_empty() {
        map.insert("errors".into(), Value::from(ex.errors.iter().map(ErrorEntry::text).collect::<Vec<_>>()));
    }
    if !ex.pending.is_empty() {
        map.insert("pendingTasks".into(), Value::from(ex.pending.clone()));
    }
    if !ex.current.is_empty() {
        map.insert("currentWork".into(), Value::from(ex.current.clone()));
    }
    if let Some(next) = &ex.next_step {
        map.insert("nextStep".into(), Value::from(next.clone()));
    }
    if !ex.tools.is_empty() {
        let tools: Map<String, Value> = ex.tools.iter().map(|(k, v)| (k.clone(), Value::from(*v))).collect();
        map.insert("toolsUsed".into(), Value::Object(tools));
    }
    let value = Value::Object(map);
    let text = crate::util::json_text::to_text(&value).unwrap_or_default();
    if let Value::Object(mut map) = value {
        if let Some(Value::Array(users)) = map.remove("userMessages") {
            ex.user_messages =
                users.into_iter().filter_map(|v| if let Value::String(s) = v { Some(s) } else { None }).collect();
        }
    }
    text
}

/// A deterministic handoff summary of `messages`, folded onto `previous`, within `max_tokens`.
pub fn extractive<M: std::borrow::Borrow<Message>>(
    messages: &[M],
    previous: Option<&str>,
    encoding: Encoding,
    max_tokens: u32,
) -> String {
    extractive_with_todos(messages, previous, &[], None, encoding, max_tokens)
}

/// The request pinned as the task (`ConversationHistory::pin`), for `extractive_with_todos`: its
/// text, and where the messages after it begin (those before it are not later requests).
#[derive(Clone, Copy, Debug)]
pub struct PinnedTask<'a> {
    pub text: &'a str,
    pub after: usize,
}

/// `extractive`, with the agent's open todos (from its state) as the pending tasks when there
/// are any (the state is newer than any todo list the messages hold), and the request pinned as
/// the task, if one is, as the primary request.
pub fn extractive_with_todos<M: std::borrow::Borrow<Message>>(
    messages: &[M],
    previous: Option<&str>,
    open_todos: &[String],
    pinned: Option<PinnedTask>,
    encoding: Encoding,
    max_tokens: u32,
) -> String {
    let mut ex = extract_pinned(messages, previous, pinned);
    if !open_todos.is_empty() {
        ex.pending = open_todos.to_vec();
        if ex.next_step.as_deref().is_none_or(|s| s.starts_with("Continue with: ")) {
            ex.next_step = ex.pending.first().map(|p| format!("Continue with: {p}"));
        }
    }
    fit(ex, encoding, max_tokens as usize)
}

/// Renders `ex` within `max` tokens, dropping the least important entries first.
pub(super) fn fit(mut ex: Extract, encoding: Encoding, max: usize) -> String {
    for _ in 0..64 {
        let text = render(&mut ex);
        let n = encoding.count(&text);
        if n <= max {
            return text;
        }
        // Drop what the estimate says is enough, with a little to spare for the joins.
        let mut excess = (n - max) as i64 + 2 + (n - max) as i64 / 20;
        while excess > 0 {
            match trim_one(&mut ex, encoding) {
                Some(saved) => excess -= saved as i64,
                None => break,
            }
        }
        if excess > 0 {
            break;
        }
    }
    // Nothing left to cut: the shortest honest summary.
    let minimal = "{\"note\":\"earlier messages summarised; details left out to fit the budget\"}".to_string();
    if encoding.count(&minimal) <= max {
        minimal
    } else {
        "summarised".to_string()
    }
}

pub(super) fn cost(encoding: Encoding, text: &str) -> usize {
    encoding.count(text) + 3
}

/// Removes (or shortens) the least important entry; returns about how many tokens that saved,
/// `None` when nothing is left but what must stay.
pub(super) fn trim_one(ex: &mut Extract, encoding: Encoding) -> Option<usize> {
    let order = |ex: &Extract| -> Vec<(usize, u8, u64)> {
        // (index in ex.files, class, last) least important first
        let mut list: Vec<(usize, u8, u64)> =
            ex.files.iter().enumerate().map(|(i, f)| (i, f.class(), f.last)).collect();
        crate::util::sort::sort_by(&mut list, |a, b| b.1.cmp(&a.1).then(a.2.cmp(&b.2)));
        list
    };
    let remove_file = |ex: &mut Extract, i: usize| -> usize {
        let f = ex.files.remove(i);
        cost(encoding, &f.path) + cost(encoding, &f.ops_text())
    };
    // 1. Scratch files and paths only mentioned or searched.
    if let Some(&(i, _, _)) = order(ex).iter().find(|(_, class, _)| *class >= 2) {
        return Some(remove_file(ex, i));
    }
    // 2. Errors fixed since, oldest first.
    if let Some(i) = ex.errors.iter().position(|e| e.fixed) {
        let e = ex.errors.remove(i);
        return Some(cost(encoding, &e.text()));
    }
    // 3. Files only read or run, least recently touched first.
    if let Some(&(i, _, _)) = order(ex).iter().find(|(_, class, _)| *class == 1) {
        return Some(remove_file(ex, i));
    }
    // 4. User messages but the first and the last, oldest first.
    if ex.user_messages.len() > 2 {
        let m = ex.user_messages.remove(1)?;
        return Some(cost(encoding, &m));
    }
    // 5. Older calls of the current work.
    if ex.current.len() > 3 {
        let c = ex.current.remove(0);
        return Some(cost(encoding, &c));
    }
    // 6. Rarely used tools.
    if ex.tools.len() > 6 {
        let least = ex.tools.iter().min_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))).map(|(k, _)| k.clone())?;
        ex.tools.remove(&least);
        return Some(cost(encoding, &least) + 1);
    }
    // 7. Older open errors.
    if ex.errors.len() > 2 {
        let e = ex.errors.remove(0);
        return Some(cost(encoding, &e.text()));
    }
    // 8. Someone else's earlier summary, by halves.
    if let Some(earlier) = ex.earlier.take() {
        let chars = earlier.chars().count();
        if chars > 200 {
            let shorter = cut_middle(&earlier, chars / 2);
            let saved = encoding.count(&earlier).saturating_sub(encoding.count(&shorter));
            ex.earlier = Some(shorter);
            return Some(saved.max(1));
        }
        return Some(cost(encoding, &earlier));
    }
    // 9. Changed files beyond the six most recent.
    if ex.files.len() > 6 {
        let &(i, _, _) = order(ex).first()?;
        return Some(remove_file(ex, i));
    }
    // 10. Pending tasks beyond the first five.
    if ex.pending.len() > 5 {
        let p = ex.pending.pop()?;
        return Some(cost(encoding, &p));
    }
    // 11. The last user message, then the first shortened.
    if ex.user_messages.len() > 1 {
        let m = ex.user_messages.pop_back()?;
        return Some(cost(encoding, &m));
    }
    // 12. Whatever is left of the sections, least important first.
    if let Some(c) = (!ex.current.is_empty()).then(|| ex.current.remove(0)) {
        return Some(cost(encoding, &c));
    }
    if let Some(e) = (!ex.errors.is_empty()).then(|| ex.errors.remove(0)) {
        return Some(cost(encoding, &e.text()));
    }
    if let Some(m) = ex.user_messages.pop_back() {
        return Some(cost(encoding, &m));
    }
    if !ex.tools.is_empty() {
        let tools = std::mem::take(&mut ex.tools);
        return Some(tools.keys().map(|k| cost(encoding, k)).sum());
    }
    if ex.files.len() > 1 {
        let &(i, _, _) = order(ex).first()?;
        return Some(remove_file(ex, i));
    }
    if ex.pending.len() > 1 {
        let p = ex.pending.pop()?;
        return Some(cost(encoding, &p));
    }
    if let Some(latest) = ex.latest.take() {
        return Some(cost(encoding, &latest));
    }
    if let Some(next) = ex.next_step.take() {
        return Some(cost(encoding, &next));
    }
    // 13. The task itself, by halves, never below a sentence.
    if let Some(task) = ex.task.take() {
        let chars = task.chars().count();
        if chars > 120 {
            let shorter = cut_middle(&task, chars / 2);
            let saved = encoding.count(&task).saturating_sub(encoding.count(&shorter));
            ex.task = Some(shorter);
            return Some(saved.max(1));
        }
        ex.task = Some(task);
    }
    if let Some(f) = (!ex.files.is_empty()).then(|| ex.files.remove(0)) {
        return Some(cost(encoding, &f.path));
    }
    if let Some(p) = ex.pending.pop() {
        return Some(cost(encoding, &p));
    }
    None
}
