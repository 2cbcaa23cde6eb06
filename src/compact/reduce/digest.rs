//! File-read digests: a file's contents, once read in an older turn, become one line:
//! `[file read] sales_analysis.py (python, 150 lines, functions: load_data, clean_data)`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::message::{ToolCall, ToolInput};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct DigestOptions {
    /// Names of the tools that read files (compared without case).
    pub tools: Vec<String>,
}

impl Default for DigestOptions {
    fn default() -> Self {
        DigestOptions { tools: DEFAULT_FILE_READ_TOOLS.iter().map(|s| s.to_string()).collect() }
    }
}

impl DigestOptions {
    pub fn validate(&self) -> Result<()> {
        if self.tools.iter().any(|t| t.trim().is_empty()) {
            return Err(Error::invalid_argument("digest.tools must not contain empty names"));
        }
        Ok(())
    }
}

/// Tool names that read files, by default (compared without case).
pub const DEFAULT_FILE_READ_TOOLS: [&str; 10] = [
    "read_file",
    "file_reader",
    "read",
    "view",
    "view_file",
    "open_file",
    "cat",
    "readfile",
    "read_text_file",
    "str_replace_based_edit_tool",
];

/// Is this call a file read? `str_replace_based_edit_tool` and `str_replace_editor` only with
/// `command: "view"`; calls whose ids start `call_read_file_` too (an agent convention).
pub fn is_file_read(call: &ToolCall, tools: &[String]) -> bool {
    if call.id.starts_with("call_read_file_") {
        return true;
    }
    let name = call.name.as_str();
    if !tools.iter().any(|t| t.eq_ignore_ascii_case(name)) {
        return false;
    }
    if name.eq_ignore_ascii_case("str_replace_based_edit_tool") || name.eq_ignore_ascii_case("str_replace_editor") {
        return input_object(&call.input).and_then(|o| o.get("command").and_then(Value::as_str).map(|c| c == "view"))
            == Some(true);
    }
    true
}

fn input_object(input: &ToolInput) -> Option<Value> {
    match input {
        ToolInput::Json(value) => Some(value.clone()),
        ToolInput::Text(text) => serde_json::from_str(text).ok(),
    }
}

/// The path a file-read call names, if any.
pub fn call_path(call: &ToolCall) -> Option<String> {
    let input = input_object(&call.input)?;
    for key in
        ["file_path", "path", "filename", "file", "notebook_path", "target_file", "file_name", "uri", "name", "id"]
    {
        if let Some(Value::String(path)) = input.get(key) {
            if !path.is_empty() {
                return Some(path.clone());
            }
        }
    }
    None
}

/// The one-line digest of a file's contents.
pub fn digest(path: Option<&str>, contents: &str) -> String {
    let (named, contents) = reader_header(path, contents);
    let contents = strip_line_numbers(contents);
    let name = named.or(path.map(base_name)).unwrap_or("file");
    let extension = name.rsplit_once('.').map(|(_, ext)| ext.to_ascii_lowercase()).unwrap_or_default();
    let lines = contents.lines().count();
    let size = human_size(contents.len());
    let language = language_of(&extension);
    let details = match language {
        Some("csv") | Some("tsv") => {
            let separator = if language == Some("tsv") { '\t' } else { ',' };
            let mut rows = contents.lines().filter(|l| !l.trim().is_empty());
            let header: Vec<String> = rows.next().map(|h| split_csv(h, separator)).unwrap_or_default();
            let count = rows.count();
            format!("{}, {count} rows, columns: {}", language.unwrap_or("csv").to_ascii_uppercase(), list(&header, 12))
        }
        Some("json") => match serde_json::from_str::<Value>(&contents) {
            Ok(Value::Object(map)) => {
                let keys: Vec<String> = map.keys().cloned().collect();
                format!("JSON, {size}, keys: {}", list(&keys, 12))
            }
            Ok(Value::Array(items)) => format!("JSON, {size}, array of {} items", items.len()),
            _ => format!("JSON, {size}"),
        },
        Some(language) if is_code(language) => {
            let (functions, classes) = outline(language, &contents);
            let mut text = format!("{language}, {lines} lines");
            if !functions.is_empty() {
                text.push_str(&format!(", functions: {}", list(&functions, 12)));
            }
            if !classes.is_empty() {
                text.push_str(&format!(", classes: {}", list(&classes, 12)));
            }
            text
        }
        Some(language) => format!("{language}, {size}, {lines} lines"),
        None if extension.is_empty() => format!("text, {size}, {lines} lines"),
        None => format!("{extension}, {size}, {lines} lines"),
    };
    format!("[file read] {name} ({details})")
}

/// A reader that names the file in its first line (`file_reader`: `code_sales_analysis.py
/// (python, 12 lines, 345 characters)`, a blank line, then the contents) when called with an id
/// that has no extension: the file's name from that line, and the contents after it.
fn reader_header<'a>(path: Option<&str>, contents: &'a str) -> (Option<&'a str>, &'a str) {
    let Some(id) = path.map(base_name).filter(|n| !n.contains('.')) else { return (None, contents) };
    let Some((first, rest)) = contents.split_once("\n\n") else { return (None, contents) };
    match first.split_once(" (") {
        Some((name, _)) if name.strip_prefix(id).is_some_and(|ext| ext.starts_with('.') && !ext.contains(' ')) => {
            (Some(name), rest)
        }
        _ => (None, contents),
    }
}

fn base_name(path: &str) -> &str {
    let trimmed = path.trim_end_matches(['/', '\\']);
    trimmed.rsplit(['/', '\\']).next().filter(|s| !s.is_empty()).unwrap_or(trimmed)
}

fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes}B")
    } else if bytes < 1024 * 1024 {
        format!("{:.1}KB", bytes as f64 / 1024.0)
    } else {
        format!("{:.1}MB", bytes as f64 / (1024.0 * 1024.0))
    }
}

fn list(names: &[String], max: usize) -> String {
    if names.len() <= max {
        names.join(", ")
    } else {
        let shown: Vec<&str> = names.iter().take(max).map(String::as_str).collect();
        format!("{} (+{} more)", shown.join(", "), names.len() - max)
    }
}

fn split_csv(line: &str, separator: char) -> Vec<String> {
    line.split(separator).map(|c| c.trim().trim_matches('"').to_string()).collect()
}

/// Claude Code's Read prefixes every line with `     1→`; `cat -n` with `     1\t`.
fn strip_line_numbers(contents: &str) -> String {
    let numbered = |line: &str| -> Option<usize> {
        let trimmed = line.trim_start();
        let digits = trimmed.chars().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return None;
        }
        // ASCII digits: `digits` bytes in, a char boundary.
        let rest = trimmed.get(digits..)?;
        if rest.starts_with('→') || rest.starts_with('\t') {
            Some(line.len() - rest.len() + rest.chars().next().map_or(0, char::len_utf8))
        } else {
            None
        }
    };
    let lines: Vec<&str> = contents.lines().collect();
    let nonempty = lines.iter().filter(|l| !l.trim().is_empty()).count();
    let with_numbers = lines.iter().filter(|l| numbered(l).is_some()).count();
    if nonempty == 0 || with_numbers * 10 < nonempty * 8 {
        return contents.to_string();
    }
    let mut out = String::with_capacity(contents.len());
    for line in lines {
        match numbered(line) {
            Some(cut) => out.push_str(line.get(cut..).unwrap_or("")),
            None => out.push_str(line),
        }
        out.push('\n');
    }
    out
}

fn language_of(extension: &str) -> Option<&'static str> {
    Some(match extension {
        "py" | "pyi" => "python",
        "js" | "mjs" | "cjs" | "jsx" => "javascript",
        "ts" | "tsx" | "mts" | "cts" => "typescript",
        "rs" => "rust",
        "go" => "go",
        "java" => "java",
        "kt" | "kts" => "kotlin",
        "c" | "h" => "c",
        "cc" | "cpp" | "cxx" | "hpp" | "hh" => "c++",
        "cs" => "c#",
        "rb" => "ruby",
        "php" => "php",
        "swift" => "swift",
        "ex" | "exs" => "elixir",
        "sh" | "bash" | "zsh" => "shell",
        "sql" => "sql",
        "html" | "htm" => "html",
        "css" | "scss" => "css",
        "md" | "markdown" => "markdown",
        "yaml" | "yml" => "yaml",
        "toml" => "toml",
        "xml" => "xml",
        "csv" => "csv",
        "tsv" => "tsv",
        "json" => "json",
        "txt" => "text",
        _ => return None,
    })
}

fn is_code(language: &str) -> bool {
    matches!(
        language,
        "python"
            | "javascript"
            | "typescript"
            | "rust"
            | "go"
            | "java"
            | "kotlin"
            | "c"
            | "c++"
            | "c#"
            | "ruby"
            | "php"
            | "swift"
            | "elixir"
            | "shell"
    )
}

fn identifier(text: &str) -> Option<String> {
    let name: String = text.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$').collect();
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

fn after_keyword<'a>(line: &'a str, keyword: &str) -> Option<&'a str> {
    let mut rest = line;
    loop {
        let position = rest.find(keyword)?;
        // `find` gives a char boundary, and the keyword's end is one too.
        let before_ok =
            position == 0 || rest.get(..position).is_some_and(|b| b.ends_with(|c: char| c.is_whitespace() || c == '('));
        let after = rest.get(position + keyword.len()..)?;
        if before_ok && after.starts_with(|c: char| c.is_whitespace()) {
            return Some(after.trim_start());
        }
        rest = after;
    }
}

/// Function and class names, by a line scan per language (no parser: good enough for a digest).
pub fn outline(language: &str, contents: &str) -> (Vec<String>, Vec<String>) {
    let mut functions: Vec<String> = Vec::new();
    let mut classes: Vec<String> = Vec::new();
    let push = |list: &mut Vec<String>, name: Option<String>| {
        if let Some(name) = name {
            if !list.contains(&name) {
                list.push(name);
            }
        }
    };
    for raw in contents.lines() {
        let line = raw.trim();
        if line.starts_with("//")
            || line.starts_with('#')
                && language != "python"
                && language != "ruby"
                && language != "elixir"
                && language != "shell"
        {
            continue;
        }
        match language {
            "python" => {
                if let Some(rest) = line.strip_prefix("async def ").or_else(|| line.strip_prefix("def ")) {
                    push(&mut functions, identifier(rest));
                } else if let Some(rest) = line.strip_prefix("class ") {
                    push(&mut classes, identifier(rest));
                }
            }
            "javascript" | "typescript" => {
                if let Some(rest) = after_keyword(line, "function").or_else(|| after_keyword(line, "function*")) {
                    push(&mut functions, identifier(rest.trim_start_matches('*').trim_start()));
                } else if let Some(rest) = after_keyword(line, "class") {
                    push(&mut classes, identifier(rest));
                } else if let Some(rest) = after_keyword(line, "interface").filter(|_| language == "typescript") {
                    push(&mut classes, identifier(rest));
                } else if let Some(rest) = after_keyword(line, "const").or_else(|| after_keyword(line, "let")) {
                    if let Some((name, value)) = rest.split_once('=') {
                        let value = value.trim_start();
                        let value = value.strip_prefix("async").map(str::trim_start).unwrap_or(value);
                        if value.starts_with("function")
                            || (value.starts_with('(') || identifier(value).is_some()) && value.contains("=>")
                        {
                            push(&mut functions, identifier(name.trim()));
                        }
                    }
                }
            }
            "rust" => {
                if let Some(rest) = after_keyword(line, "fn") {
                    push(&mut functions, identifier(rest));
                } else if let Some(rest) = after_keyword(line, "struct")
                    .or_else(|| after_keyword(line, "enum"))
                    .or_else(|| after_keyword(line, "trait"))
                {
                    push(&mut classes, identifier(rest));
                }
            }
            "go" => {
                if let Some(rest) = line.strip_prefix("func ") {
                    let rest = if rest.starts_with('(') {
                        rest.split_once(')').map_or("", |(_, r)| r.trim_start())
                    } else {
                        rest
                    };
                    push(&mut functions, identifier(rest));
                } else if let Some(rest) = line.strip_prefix("type ") {
                    if rest.contains(" struct") || rest.contains(" interface") {
                        push(&mut classes, identifier(rest));
                    }
                }
            }
            "java" | "kotlin" | "c#" | "swift" | "php" | "c" | "c++" => {
                if let Some(rest) = after_keyword(line, "class")
                    .or_else(|| after_keyword(line, "interface"))
                    .or_else(|| after_keyword(line, "enum"))
                    .or_else(|| after_keyword(line, "record"))
                    .or_else(|| after_keyword(line, "struct"))
                {
                    push(&mut classes, identifier(rest));
                } else if let Some(rest) = after_keyword(line, "fun")
                    .or_else(|| after_keyword(line, "func"))
                    .or_else(|| after_keyword(line, "function"))
                {
                    push(&mut functions, identifier(rest));
                } else {
                    push(&mut functions, c_like_method(line));
                }
            }
            "ruby" => {
                if let Some(rest) = line.strip_prefix("def ") {
                    push(&mut functions, identifier(rest.trim_start_matches("self.")));
                } else if let Some(rest) = line.strip_prefix("class ").or_else(|| line.strip_prefix("module ")) {
                    push(&mut classes, identifier(rest));
                }
            }
            "elixir" => {
                if let Some(rest) = line.strip_prefix("defp ").or_else(|| line.strip_prefix("def ")) {
                    push(&mut functions, identifier(rest));
                } else if let Some(rest) = line.strip_prefix("defmodule ") {
                    let name: String =
                        rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.').collect();
                    push(&mut classes, (!name.is_empty()).then_some(name));
                }
            }
            "shell" => {
                if let Some(rest) = line.strip_prefix("function ") {
                    push(&mut functions, identifier(rest));
                } else if let Some((name, _)) = line.split_once("()") {
                    if !name.contains(' ') {
                        push(&mut functions, identifier(name));
                    }
                }
            }
            _ => {}
        }
    }
    (functions, classes)
}

/// `public static int add(int a, int b) {` → `add`: a declaration with a type before the name.
fn c_like_method(line: &str) -> Option<String> {
    let (head, _) = line.split_once('(')?;
    if line.ends_with(';') || line.contains('=') && !line.contains("==") && head.contains('=') {
        return None;
    }
    if !(line.ends_with('{') || line.ends_with(')') || line.contains(") {") || line.contains(") throws")) {
        return None;
    }
    let words: Vec<&str> = head.split_whitespace().collect();
    if words.len() < 2 {
        return None;
    }
    let first = words.first()?;
    if matches!(
        *first,
        "if" | "for"
            | "while"
            | "switch"
            | "return"
            | "new"
            | "else"
            | "catch"
            | "do"
            | "case"
            | "throw"
            | "synchronized"
            | "try"
    ) {
        return None;
    }
    let name = words.last()?.trim_start_matches(['*', '&']);
    let name = name.rsplit("::").next().unwrap_or(name);
    identifier(name).filter(|n| n.len() == name.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_002_python_digest() {
        let code = "import pandas as pd\n\n\ndef load_data(path):\n    return pd.read_csv(path)\n\n\ndef clean_data(df):\n    return df.dropna()\n\n\ndef visualize(df):\n    df.plot()\n";
        assert_eq!(
            digest(Some("/work/sales_analysis.py"), code),
            "[file read] sales_analysis.py (python, 13 lines, functions: load_data, clean_data, visualize)"
        );
    }

    #[test]
    fn seed_002_csv_and_json_digests() {
        let mut csv = String::from("date,product,amount,region\n");
        for i in 0..5000 {
            csv.push_str(&format!("2024-01-01,p{i},{i},north\n"));
        }
        assert_eq!(
            digest(Some("data.csv"), &csv),
            "[file read] data.csv (CSV, 5000 rows, columns: date, product, amount, region)"
        );
        let json = format!("{{\"config\": {{}}, \"data\": [{}], \"options\": {{}}}}", "1,".repeat(1200) + "1");
        assert_eq!(
            digest(Some("chart_result.json"), &json),
            "[file read] chart_result.json (JSON, 2.4KB, keys: config, data, options)"
        );
    }

    #[test]
    fn code_outlines_for_each_language() {
        let js =
            "export async function load(a) {}\nclass Store {}\nconst handler = async (e) => e\nfunction* gen() {}\n";
        assert_eq!(
            outline("javascript", js),
            (vec!["load".into(), "handler".into(), "gen".into()], vec!["Store".into()])
        );
        let ts =
            "export interface Props { a: string }\nexport const f = (x: number) => x\nexport default class App {}\n";
        assert_eq!(outline("typescript", ts), (vec!["f".into()], vec!["Props".into(), "App".into()]));
        let rs = "pub struct Budget {}\nenum Kind { A }\npub(crate) async fn build() {}\nimpl Budget {\n    fn new() -> Self {}\n}\n";
        assert_eq!(outline("rust", rs), (vec!["build".into(), "new".into()], vec!["Budget".into(), "Kind".into()]));
        let go = "type Server struct {}\nfunc (s *Server) Start() error {\nfunc main() {\n";
        assert_eq!(outline("go", go), (vec!["Start".into(), "main".into()], vec!["Server".into()]));
        let java = "public class Calc {\n    public static int add(int a, int b) {\n        if (a > b) {\n        return helper(a);\n    }\n    private void reset() {\n}\n";
        assert_eq!(outline("java", java), (vec!["add".into(), "reset".into()], vec!["Calc".into()]));
    }

    #[test]
    fn claude_code_line_numbers_are_stripped_and_other_files_get_type_and_size() {
        let numbered = "     1→def main():\n     2→    pass\n";
        assert_eq!(digest(Some("a/b/run.py"), numbered), "[file read] run.py (python, 2 lines, functions: main)");
        assert_eq!(digest(Some("NOTES"), "hello\nworld\n"), "[file read] NOTES (text, 12B, 2 lines)");
        assert_eq!(digest(Some("README.md"), "# Title\n"), "[file read] README.md (markdown, 8B, 1 lines)");
    }
}
