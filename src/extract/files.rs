//! What a tool call does to which files, from its name and arguments, whatever the agent calls
//! its tools: Claude Code's `Read`/`Edit`/`MultiEdit`/`Write`/`NotebookEdit`, the
//! `str_replace_based_edit_tool` family (`command`), `apply_patch` patches (`*** Update File:`),
//! SWE-agent's `open`/`edit`/`create` (an edit without a path edits the open file), shell commands
//! (`cat`, `sed -i`, `rm`, redirections, scripts run). Used by the summary's `files` section, by
//! the digests (which results are file contents) and by the supersede rule (a later operation on
//! the same path makes an earlier read stale).

use std::borrow::Cow;

use serde_json::Value;

use crate::message::{ToolCall, ToolInput};

/// An operation on a file, most telling first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FileOp {
    Created,
    Edited,
    Deleted,
    Read,
    /// A script or test file run by a shell command.
    Ran,
    /// A path searched or listed.
    Searched,
    /// A path named in a command or a message, with no known operation.
    Mentioned,
}

impl FileOp {
    pub const ALL: [FileOp; 7] = [
        FileOp::Created,
        FileOp::Edited,
        FileOp::Deleted,
        FileOp::Read,
        FileOp::Ran,
        FileOp::Searched,
        FileOp::Mentioned,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            FileOp::Created => "created",
            FileOp::Edited => "edited",
            FileOp::Deleted => "deleted",
            FileOp::Read => "read",
            FileOp::Ran => "ran",
            FileOp::Searched => "searched",
            FileOp::Mentioned => "mentioned",
        }
    }

    pub fn parse(text: &str) -> Option<FileOp> {
        FileOp::ALL.into_iter().find(|op| op.as_str() == text)
    }

    /// Created, edited or deleted: the file is not as it was.
    pub fn changes(self) -> bool {
        matches!(self, FileOp::Created | FileOp::Edited | FileOp::Deleted)
    }
}

/// Argument names that hold one path.
const PATH_KEYS: [&str; 12] = [
    "file_path",
    "path",
    "filename",
    "file",
    "notebook_path",
    "target_file",
    "file_name",
    "filepath",
    "absolute_path",
    "relative_path",
    "target_path",
    "source_path",
];

/// Argument names that hold several.
const PATHS_KEYS: [&str; 3] = ["paths", "files", "file_paths"];

/// A tool's name without an MCP or namespace prefix, lowercased: `mcp__fs__read_file` → `read_file`.
fn base_name(name: &str) -> String {
    let name = name.rsplit("__").next().unwrap_or(name);
    let name = name.rsplit(['.', '/']).next().unwrap_or(name);
    name.to_ascii_lowercase()
}

fn kind_of(name: &str) -> Option<FileOp> {
    Some(match name {
        "read" | "read_file" | "readfile" | "read_text_file" | "read_many_files" | "view" | "view_file" | "open"
        | "open_file" | "cat" | "file_reader" | "notebookread" | "read_notebook" | "get_file_contents" => FileOp::Read,
        "write" | "write_file" | "writefile" | "create" | "create_file" | "new_file" | "write_to_file" => {
            FileOp::Created
        }
        "edit" | "multiedit" | "multi_edit" | "edit_file" | "str_replace" | "replace" | "insert" | "search_replace"
        | "replace_in_file" | "apply_diff" | "notebookedit" | "edit_notebook" | "patch" | "update_file" => {
            FileOp::Edited
        }
        "delete" | "delete_file" | "remove_file" | "rm" => FileOp::Deleted,
        "grep" | "glob" | "search" | "find_file" | "search_file" | "search_dir" | "ls" | "list_dir" | "list_files"
        | "list_directory" | "codebase_search" | "file_search" | "find" => FileOp::Searched,
        _ => return None,
    })
}

fn is_shell(name: &str) -> bool {
    matches!(
        name,
        "bash"
            | "shell"
            | "sh"
            | "zsh"
            | "run"
            | "exec"
            | "execute"
            | "exec_command"
            | "run_command"
            | "run_terminal_cmd"
            | "terminal"
            | "local_shell"
            | "execute_command"
            | "run_shell_command"
            | "powershell"
    )
}

/// A call's arguments as JSON: borrowed (Anthropic's), or parsed from OpenAI's text.
pub(crate) fn input_value(input: &ToolInput) -> Option<Cow<'_, Value>> {
    match input {
        ToolInput::Json(value) => Some(Cow::Borrowed(value)),
        ToolInput::Text(text) => serde_json::from_str(text).ok().map(Cow::Owned),
    }
}

/// A path as a call or a message names it, if it looks like one worth listing: not a URL, not
/// under `/proc`, `/sys` or `/dev`, of a sane length.
pub fn clean_path(raw: &str) -> Option<String> {
    let path = raw.trim().trim_matches(|c: char| matches!(c, '"' | '\'' | '`' | ',' | ';' | '(' | ')' | '[' | ']'));
    let mut path = path.trim_end_matches(['.', ':']);
    // `lib/x.ex:12:5` (a compiler's position) names `lib/x.ex`.
    while let Some((head, tail)) = path.rsplit_once(':') {
        if tail.is_empty() || !tail.chars().all(|c| c.is_ascii_digit()) {
            break;
        }
        path = head;
    }
    let ok = path.len() > 1
        && path.len() < 300
        && !path.contains("://")
        && !path.contains(char::is_whitespace)
        && path.chars().any(char::is_alphanumeric)
        && !["/proc/", "/sys/", "/dev/"].iter().any(|p| path.starts_with(p))
        && !path.starts_with('-');
    ok.then(|| path.to_string())
}

/// Whether `path` is a scratch file (under a temporary directory): listed last.
pub fn is_temporary(path: &str) -> bool {
    ["/tmp/", "/var/tmp/", "/private/tmp/", "/var/folders/"].iter().any(|p| path.starts_with(p))
        || path.contains("/tmp/")
}

/// Whether a word of a message names a file: a path with a directory and an extension
/// (`lib/app/router.ex`, `/srv/app/main.py:12`), not a URL or a module name.
pub fn mentions_file(token: &str) -> bool {
    let Some(path) = clean_path(token) else { return false };
    path.contains('/') && has_extension(&path) && !path.starts_with("//")
}

fn has_extension(path: &str) -> bool {
    let file = path.rsplit('/').next().unwrap_or("");
    file.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty()
            && (1..=8).contains(&ext.len())
            && ext.chars().all(|c| c.is_ascii_alphanumeric())
            && !ext.chars().all(|c| c.is_ascii_digit())
    })
}

/// Whether a word of a command names a file: an absolute or relative path, or a name with an
/// extension.
pub fn looks_like_file(token: &str) -> bool {
    let Some(path) = clean_path(token) else { return false };
    let rooted = path.starts_with('/') || path.starts_with("./") || path.starts_with("../") || path.starts_with("~/");
    let file = path.rsplit('/').next().unwrap_or("");
    let extension = file.rsplit_once('.').is_some_and(|(stem, ext)| {
        !stem.is_empty() && (1..=8).contains(&ext.len()) && ext.chars().all(|c| c.is_ascii_alphanumeric())
    });
    let has_dir = path.contains('/');
    (rooted && path.len() > 2 && file.chars().any(char::is_alphanumeric)) || (has_dir && extension)
}

/// The file operations of one call, from its arguments. `open` is the file an editor tool has
/// open (SWE-agent edits it without naming it); opening a file changes it.
pub(crate) fn ops_of(name: &str, input: &Value, open: &mut Option<String>) -> Vec<(String, FileOp)> {
    let name = base_name(name);
    let mut out = Vec::new();
    if is_editor(&name) {
        let op = match input.get("command").and_then(Value::as_str) {
            Some("view") => FileOp::Read,
            Some("create") => FileOp::Created,
            Some(_) => FileOp::Edited,
            None => FileOp::Mentioned,
        };
        push_paths(input, op, &mut out);
        return out;
    }
    if name == "apply_patch" || patch_text(input).is_some_and(|p| p.contains("*** Begin Patch")) {
        if let Some(patch) = patch_text(input) {
            patch_ops(&patch, &mut out);
        }
        return out;
    }
    if is_shell(&name) {
        if let Some(command) = command_text(input) {
            if command.contains("*** Begin Patch") {
                patch_ops(&command, &mut out);
            } else {
                shell_ops(&command, &mut out);
            }
        }
        // A path argument beside (or instead of) the command is still a file the call names.
        push_paths(input, FileOp::Mentioned, &mut out);
        return out;
    }
    let kind = kind_of(&name);
    push_paths(input, kind.unwrap_or(FileOp::Mentioned), &mut out);
    match kind {
        Some(FileOp::Read) if name == "open" || name == "open_file" => {
            if let Some((path, _)) = out.first() {
                *open = Some(path.clone());
            }
        }
        Some(FileOp::Created) => {
            if let Some((path, _)) = out.first() {
                *open = Some(path.clone());
            }
        }
        // SWE-agent's `edit`/`insert` name no file: they edit the one open.
        Some(FileOp::Edited) if out.is_empty() => {
            if let Some(path) = open.clone() {
                out.push((path, FileOp::Edited));
            }
        }
        _ => {}
    }
    out
}

fn push_paths(input: &Value, op: FileOp, out: &mut Vec<(String, FileOp)>) {
    let Some(object) = input.as_object() else { return };
    for key in PATH_KEYS {
        if let Some(path) = object.get(key).and_then(Value::as_str).and_then(clean_path) {
            if !out.iter().any(|(p, _)| *p == path) {
                out.push((path, op));
            }
        }
    }
    for key in PATHS_KEYS {
        for path in object.get(key).and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
            if let Some(path) = clean_path(path) {
                if !out.iter().any(|(p, _)| *p == path) {
                    out.push((path, op));
                }
            }
        }
    }
    // MultiEdit and friends nest their edits; the path is at the top.
}

/// The text of a shell call's command (a string, or an argv list joined).
fn command_text(input: &Value) -> Option<String> {
    let value = ["command", "cmd", "script", "commands", "input"].iter().find_map(|k| input.get(*k))?;
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => {
            let words: Vec<&str> = items.iter().filter_map(Value::as_str).collect();
            Some(words.join(" "))
        }
        _ => None,
    }
}

fn patch_text(input: &Value) -> Option<String> {
    if let Some(text) = input.as_str() {
        return Some(text.to_string());
    }
    ["patch", "input", "diff", "content"].iter().find_map(|k| input.get(*k).and_then(Value::as_str)).map(String::from)
}

/// `*** Update File: path`, `*** Add File:`, `*** Delete File:`, `*** Move to:`; unified diffs' `+++ b/path`.
fn patch_ops(patch: &str, out: &mut Vec<(String, FileOp)>) {
    for line in patch.lines() {
        let line = line.trim();
        let found = [
            ("*** Update File:", FileOp::Edited),
            ("*** Add File:", FileOp::Created),
            ("*** Delete File:", FileOp::Deleted),
            ("*** Move to:", FileOp::Created),
            ("+++ b/", FileOp::Edited),
        ]
        .iter()
        .find_map(|(prefix, op)| line.strip_prefix(prefix).map(|rest| (rest, *op)));
        if let Some((rest, op)) = found {
            if let Some(path) = clean_path(rest) {
                if !out.iter().any(|(p, _)| *p == path) {
                    out.push((path, op));
                }
            }
        }
    }
}

const READERS: [&str; 10] = ["cat", "head", "tail", "less", "more", "bat", "nl", "wc", "sed", "awk"];
const RUNNERS: [&str; 14] =
    ["python", "python3", "node", "ruby", "bash", "sh", "pytest", "go", "cargo", "mix", "elixir", "deno", "bun", "php"];

/// A shell command's file operations, segment by segment (`&&`, `||`, `;`, `|`, new lines).
fn shell_ops(command: &str, out: &mut Vec<(String, FileOp)>) {
    let mut push = |path: String, op: FileOp| {
        if let Some(at) = out.iter().position(|(p, _)| *p == path) {
            if let Some(slot) = out.get_mut(at) {
                if op < slot.1 {
                    slot.1 = op;
                }
            }
        } else {
            out.push((path, op));
        }
    };
    for segment in command.split(['\n', ';', '|', '&']) {
        let words: Vec<&str> = segment.split_whitespace().collect();
        let Some(first) = words.first().map(|w| w.rsplit('/').next().unwrap_or(w)) else { continue };
        // Redirections write their target.
        for (i, word) in words.iter().enumerate() {
            let target = match word.strip_prefix(">>").or_else(|| word.strip_prefix('>')) {
                Some("") => words.get(i + 1).copied(),
                Some(rest) => Some(rest),
                None => None,
            };
            if let Some(path) = target.filter(|t| looks_like_file(t) && !t.starts_with("/dev/")).and_then(clean_path) {
                push(path, FileOp::Created);
            }
        }
        // A known command's arguments may be bare file names; an unknown one's only paths.
        let known = READERS.contains(&first)
            || RUNNERS.contains(&first)
            || matches!(first, "rm" | "unlink" | "touch" | "sed" | "perl" | "cp" | "mv");
        let args = words.iter().skip(1).filter(|w| {
            !w.starts_with('-')
                && !w.starts_with('>')
                && (looks_like_file(w) || known && has_extension(w) && clean_path(w).is_some())
        });
        let in_place = words.iter().any(|w| *w == "-i" || w.starts_with("-i") && first == "sed" || *w == "-pi");
        let op = match first {
            "rm" | "unlink" => FileOp::Deleted,
            "touch" => FileOp::Created,
            "sed" | "perl" if in_place => FileOp::Edited,
            "cp" | "mv" => {
                // The last argument is the destination.
                let list: Vec<&&str> = args.collect();
                if let Some((last, rest)) = list.split_last() {
                    for path in rest.iter().filter_map(|p| clean_path(p)) {
                        push(path, if first == "mv" { FileOp::Deleted } else { FileOp::Read });
                    }
                    if let Some(path) = clean_path(last) {
                        push(path, FileOp::Created);
                    }
                }
                continue;
            }
            w if READERS.contains(&w) => FileOp::Read,
            w if RUNNERS.contains(&w) => FileOp::Ran,
            "grep" | "rg" | "find" | "ls" | "tree" | "fd" => FileOp::Searched,
            _ => FileOp::Mentioned,
        };
        for path in args.filter_map(|p| clean_path(p)) {
            push(path, op);
        }
    }
}

/// The path a call reads whole, when its result is that file's contents: a read tool (by name,
/// or one of `tools`, compared without case), an editor's `view`, or a shell `cat`/`nl` of one file.
pub fn read_path(call: &ToolCall, tools: &[String]) -> Option<String> {
    read_path_of(&call.name, &*input_value(&call.input)?, tools)
}

/// What the digests need of one call, from one parse of its arguments: the path it reads whole
/// (`read_path`) and its file operations (`ops_of`). A call that can do neither (not a file or
/// shell tool by name, and no path key nor patch in its arguments' text) is not parsed at all:
/// most of an agent's calls, read once per call of the history.
pub(crate) fn call_files(
    call: &ToolCall,
    tools: &[String],
    open: &mut Option<String>,
) -> (Option<String>, Vec<(String, FileOp)>) {
    if let ToolInput::Text(text) = &call.input {
        if !may_name_file(&call.name, text, tools) {
            return (None, Vec::new());
        }
    }
    let Some(input) = input_value(&call.input) else { return (None, Vec::new()) };
    (read_path_of(&call.name, &input, tools), ops_of(&call.name, &input, open))
}

/// Whether a call named `name` with arguments `text` could read or touch a file: by its name, or
/// by a path key or a patch in its arguments. Without a backslash (an escape could spell a key
/// otherwise), every other `"` of the text opens a string, so a key the arguments hold is one of
/// the pieces between an odd `"` and the next.
fn may_name_file(name: &str, text: &str, tools: &[String]) -> bool {
    let base = base_name(name);
    let by_name = is_editor(&base)
        || base == "apply_patch"
        || is_shell(&base)
        || kind_of(&base).is_some()
        || is_listed(name, &base, tools);
    by_name
        || text.contains('\\')
        || text.contains("*** Begin Patch")
        || text.split('"').skip(1).step_by(2).any(|quoted| PATH_KEYS.contains(&quoted) || PATHS_KEYS.contains(&quoted))
}

/// Whether `tools` (the caller's read tools) names the call, by its full or its base name.
fn is_listed(call_name: &str, base: &str, tools: &[String]) -> bool {
    tools.iter().any(|t| t.eq_ignore_ascii_case(call_name) || t.eq_ignore_ascii_case(base))
}

fn is_editor(name: &str) -> bool {
    matches!(name, "str_replace_based_edit_tool" | "str_replace_editor" | "text_editor")
}

fn read_path_of(call_name: &str, input: &Value, tools: &[String]) -> Option<String> {
    let name = base_name(call_name);
    let listed = is_listed(call_name, &name, tools);
    if is_editor(&name) {
        if input.get("command").and_then(Value::as_str) != Some("view") {
            return None;
        }
    } else if is_shell(&name) {
        let command = command_text(input)?;
        let words: Vec<&str> = command.split_whitespace().collect();
        return match words.as_slice() {
            [reader, path] | [reader, "-n" | "-ba", path] if matches!(*reader, "cat" | "nl" | "bat") => {
                clean_path(path)
            }
            _ => None,
        };
    } else if !listed && kind_of(&name) != Some(FileOp::Read) {
        return None;
    }
    let mut paths = Vec::new();
    push_paths(input, FileOp::Read, &mut paths);
    match paths.into_iter().next() {
        Some((path, _)) => Some(path),
        // A listed tool without a path argument still reads a file (`file_reader` names an
        // artifact, not a path).
        None if listed => Some(String::new()),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ops(name: &str, input: Value) -> Vec<(String, FileOp)> {
        ops_of(name, &input, &mut None)
    }

    fn one(path: &str, op: FileOp) -> Vec<(String, FileOp)> {
        vec![(path.to_string(), op)]
    }

    /// `call_files` skips parsing the calls that cannot name a file: what it finds must be what
    /// `read_path` and `ops_of` find on the parsed arguments, whatever the text looks like.
    #[test]
    fn call_files_finds_what_read_path_and_ops_find() {
        let tools = vec!["file_reader".to_string()];
        let cases = [
            ("get_reservation_details", r#"{"reservation_id": "ABC123"}"#),
            ("search_direct_flight", r#"{"origin": "JFK", "destination": "SEA", "date": "2024-05-01"}"#),
            ("lookup", r#"{"path": "src/a.rs"}"#),
            ("lookup", r#"{"paths": ["src/a.rs", "src/b.rs"]}"#),
            ("lookup", r#"{"p\u0061th": "src/escaped.rs"}"#),
            ("lookup", r#"{"note": "the path is \"src/a.rs\""}"#),
            ("lookup", r#"{"note": "file_path and filepath", "other": 1}"#),
            ("custom", r#"{"diff": "*** Begin Patch\n*** Update File: src/p.rs\n*** End Patch"}"#),
            ("custom", r#""*** Begin Patch\n*** Add File: src/q.rs\n*** End Patch""#),
            ("file_reader", r#"{"q": 1}"#),
            ("Read", r#"{"file_path": "/a/b.py"}"#),
            ("open", r#"{"path": "src/open.py"}"#),
            ("edit", r#"{"text": "x"}"#),
            ("bash", r#"{"command": "cat src/a.rs"}"#),
            ("mcp__fs__read_file", r#"{"path": "src/m.rs"}"#),
            ("lookup", "not json"),
            ("lookup", r#"{"id": 3"#),
        ];
        let (mut open_fast, mut open_slow) = (None, None);
        for (name, text) in cases {
            let call = ToolCall {
                id: "c".into(),
                name: name.into(),
                input: ToolInput::Text(text.into()),
                extra: Default::default(),
                function_extra: Default::default(),
            };
            let slow = match serde_json::from_str::<Value>(text) {
                Ok(input) => (read_path_of(name, &input, &tools), ops_of(name, &input, &mut open_slow)),
                Err(_) => (None, Vec::new()),
            };
            assert_eq!(call_files(&call, &tools, &mut open_fast), slow, "{name} {text}");
            assert_eq!(open_fast, open_slow, "{name} {text}");
        }
        let unknown = |text: &str| may_name_file("get_user", text, &[]);
        assert!(!unknown(r#"{"user_id": "u1", "profile": {"file_count": 2}}"#));
        assert!(unknown(r#"{"user_id": "u1", "file": "a.txt"}"#));
        assert!(unknown(r#"{"n\u0061me": "x"}"#));
    }

    #[test]
    fn tools_are_known_by_their_names_and_arguments() {
        assert_eq!(ops("Read", json!({"file_path": "/a/lib/x.ex"})), one("/a/lib/x.ex", FileOp::Read));
        assert_eq!(ops("Edit", json!({"file_path": "lib/x.ex", "old_string": "a"})), one("lib/x.ex", FileOp::Edited));
        assert_eq!(ops("MultiEdit", json!({"file_path": "lib/x.ex", "edits": []})), one("lib/x.ex", FileOp::Edited));
        assert_eq!(ops("Write", json!({"file_path": "lib/y.ex", "content": ""})), one("lib/y.ex", FileOp::Created));
        assert_eq!(ops("NotebookEdit", json!({"notebook_path": "a.ipynb"})), one("a.ipynb", FileOp::Edited));
        assert_eq!(ops("mcp__fs__read_file", json!({"path": "src/a.rs"})), one("src/a.rs", FileOp::Read));
        assert_eq!(
            ops("str_replace_based_edit_tool", json!({"command": "create", "path": "/r/n.py"})),
            one("/r/n.py", FileOp::Created)
        );
        assert_eq!(
            ops("str_replace_editor", json!({"command": "view", "path": "/r/n.py"})),
            one("/r/n.py", FileOp::Read)
        );
        assert_eq!(ops("Grep", json!({"pattern": "foo", "path": "/r/lib"})), one("/r/lib", FileOp::Searched));
        assert_eq!(ops("WebFetch", json!({"url": "https://x.org/a.html"})), vec![]);
        assert_eq!(ops("lookup", json!({"path": "/proc/sys/kernel/random/uuid"})), vec![]);
    }

    #[test]
    fn patches_and_shell_commands() {
        let patch = "*** Begin Patch\n*** Update File: src/app.py\n@@\n-a\n+b\n*** Add File: src/new.py\n+x\n*** Delete File: old.py\n*** End Patch";
        assert_eq!(
            ops("apply_patch", json!({"input": patch})),
            vec![
                ("src/app.py".into(), FileOp::Edited),
                ("src/new.py".into(), FileOp::Created),
                ("old.py".into(), FileOp::Deleted)
            ]
        );
        assert_eq!(ops("shell", json!({"command": ["apply_patch", patch]})).len(), 3);
        assert_eq!(
            ops("Bash", json!({"command": "cat lib/a.ex && sed -i 's/a/b/' lib/b.ex && rm /tmp/x.log"})),
            vec![
                ("lib/a.ex".into(), FileOp::Read),
                ("lib/b.ex".into(), FileOp::Edited),
                ("/tmp/x.log".into(), FileOp::Deleted)
            ]
        );
        assert_eq!(
            ops("Bash", json!({"command": "python reproduce.py > out/result.txt"})),
            vec![("out/result.txt".into(), FileOp::Created), ("reproduce.py".into(), FileOp::Ran),]
        );
        assert_eq!(ops("Bash", json!({"command": "mix test test/a_test.exs"})), one("test/a_test.exs", FileOp::Ran));
        assert_eq!(ops("Bash", json!({"command": "git status"})), vec![]);
    }

    #[test]
    fn swe_agent_edits_the_open_file() {
        let mut open = None;
        assert_eq!(
            ops_of("create", &json!({"filename": "reproduce.py"}), &mut open),
            one("reproduce.py", FileOp::Created)
        );
        assert_eq!(ops_of("insert", &json!({"text": "x"}), &mut open), one("reproduce.py", FileOp::Edited));
        ops_of("open", &json!({"path": "src/marshmallow/fields.py", "line_number": 1474}), &mut open);
        assert_eq!(
            ops_of("edit", &json!({"search": "a", "replace": "b"}), &mut open),
            one("src/marshmallow/fields.py", FileOp::Edited)
        );
    }

    #[test]
    fn reads_whose_result_is_the_file() {
        let call = |name: &str, input: Value| ToolCall {
            id: "c".into(),
            name: name.into(),
            input: ToolInput::Json(input),
            extra: Default::default(),
            function_extra: Default::default(),
        };
        let tools = vec!["file_reader".to_string()];
        assert_eq!(read_path(&call("Read", json!({"file_path": "/a/b.py"})), &[]), Some("/a/b.py".into()));
        assert_eq!(read_path(&call("file_reader", json!({"q": 1})), &tools), Some(String::new()));
        assert_eq!(read_path(&call("Bash", json!({"command": "cat src/a.rs"})), &[]), Some("src/a.rs".into()));
        assert_eq!(read_path(&call("Bash", json!({"command": "cat a.rs | grep x"})), &[]), None);
        assert_eq!(read_path(&call("Edit", json!({"file_path": "/a/b.py"})), &[]), None);
        assert_eq!(
            read_path(&call("str_replace_editor", json!({"command": "view", "path": "/a"})), &[]),
            Some("/a".into())
        );
    }

    #[test]
    fn paths_in_free_text() {
        for yes in ["lib/app/router.ex", "/home/dev/app/mix.exs", "./run.sh", "src/a.rs:12"] {
            assert!(looks_like_file(yes), "{yes}");
        }
        for no in ["and/or", "https://x.org/a.js", "hello", "1/2", "/"] {
            assert!(!looks_like_file(no), "{no}");
        }
        assert_eq!(clean_path("`lib/a.ex`,"), Some("lib/a.ex".into()));
        assert_eq!(clean_path("lib/x.ex:12:5:"), Some("lib/x.ex".into()));
        assert!(is_temporary("/tmp/claude-1000/out.txt"));
    }
}
