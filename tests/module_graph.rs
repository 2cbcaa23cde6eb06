//! The compaction pipeline's modules form no cycle: each stage of `src/compact/` is to depend
//! on the stages before it and on shared modules, never on a later stage, and no two modules are to
//! reach each other. A module that imports from a later one makes the stages a bag again (every
//! stage reading and writing what any other set), so this reads the sources and checks the graph.
//!
//! An edge is any path into another module of `src/compact/`: `use` trees and paths in code
//! (`super::…`, `self::…`, `crate::compact::…`, a child module's name), a name a parent module
//! re-exports counting as its defining module's. Test code (`#[cfg(test)]`) is left out: a test
//! may drive the whole pipeline. A parent module's re-export of its own child is not an edge.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The stages in the order the pipeline runs them (`src/compact/mod.rs`): none may depend on a
/// later one.
const STAGES: &[&str] = &["repair", "plan", "allot", "measure", "reduce", "select", "summarise", "fill", "assemble"];

type Module = Vec<String>;

struct Source {
    /// The file, its comments and literals blanked and its test code left out.
    code: String,
}

#[test]
fn the_compaction_modules_form_no_cycle() {
    let graph = Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compact"));
    assert!(graph.modules.len() > 20, "the modules of src/compact were not found: {:?}", graph.modules.keys());
    let cycles = graph.cycles();
    assert!(
        cycles.is_empty(),
        "modules of src/compact that depend on each other (each with the references that close the circle):\n{}",
        cycles.iter().map(|c| graph.describe(c)).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn no_stage_depends_on_a_later_one() {
    let graph = Graph::read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src/compact"));
    let mut backwards = Vec::new();
    for (from, edges) in &graph.edges {
        for (to, line) in edges {
            if let (Some(a), Some(b)) = (stage_of(from), stage_of(to)) {
                if b > a {
                    backwards.push(format!("{} (a stage before) depends on {}: {line}", name(from), name(to)));
                }
            }
        }
    }
    assert!(backwards.is_empty(), "stages that depend on later ones:\n{}", backwards.join("\n"));
}

#[test]
fn the_reader_sees_a_cycle_where_there_is_one() {
    let dir = std::env::temp_dir().join(format!("module-graph-{}", std::process::id()));
    let write = |path: &str, text: &str| {
        let file = dir.join(path);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    };
    write(
        "mod.rs",
        "pub mod a;\npub mod b;\npub mod c;\n#[cfg(test)]\nmod t;\npub use c::Shared;\npub fn run() { a::go() }\n",
    );
    // b reaches a through a re-export of the parent, a reaches b through a brace group.
    write("a.rs", "use super::{c, b::Thing};\npub fn go() {}\n// use super::c::Nothing;\n");
    write("b.rs", "pub struct Thing;\nfn f() -> super::Shared { let _ = \"super::a::\"; todo!() }\n");
    write(
        "c.rs",
        "pub struct Shared;\nfn f() { crate::compact::a::go() }\n#[cfg(test)]\nmod tests { use super::super::b; }\n",
    );
    write("t.rs", "use super::run;\n");
    let graph = Graph::read(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let edges = |m: &str| -> Vec<String> {
        graph.edges.get(&module(m)).map(|e| e.keys().map(name).collect()).unwrap_or_default()
    };
    assert_eq!(edges("a"), ["b", "c"]);
    assert_eq!(edges("b"), ["c"], "a name the parent re-exports is its defining module's; a string is no path");
    assert_eq!(edges("c"), ["a"], "test code is left out");
    assert_eq!(edges(""), ["a"], "the parent's code depends on a; its re-export of c is none");
    assert!(!graph.modules.contains_key(&module("t")), "a test module is left out");
    let cycles = graph.cycles();
    assert_eq!(cycles.len(), 1);
    assert_eq!(cycles[0].iter().map(name).collect::<Vec<_>>(), ["a", "b", "c"]);
}

fn module(path: &str) -> Module {
    path.split("::").filter(|s| !s.is_empty()).map(str::to_string).collect()
}

fn name(module: &Module) -> String {
    if module.is_empty() {
        "compact".to_string()
    } else {
        module.join("::")
    }
}

fn stage_of(module: &Module) -> Option<usize> {
    STAGES.iter().position(|s| module.first().is_some_and(|m| m == s))
}

struct Graph {
    modules: BTreeMap<Module, Source>,
    /// For each module, the modules it depends on, each with one reference that says so.
    edges: BTreeMap<Module, BTreeMap<Module, String>>,
}

impl Graph {
    fn read(root: &Path) -> Graph {
        let mut files = Vec::new();
        collect(root, &mut files);
        let mut all: BTreeMap<Module, Source> = BTreeMap::new();
        for file in files {
            let relative = file.strip_prefix(root).unwrap().with_extension("");
            let mut module: Module = relative.iter().map(|s| s.to_string_lossy().into_owned()).collect();
            if module.last().is_some_and(|s| s == "mod") {
                module.pop();
            }
            let text = std::fs::read_to_string(&file).unwrap();
            all.insert(module, Source { code: without_tests(&blank(&text)) });
        }
        // The modules the build compiles: declared by their parent outside test code.
        let mut modules = BTreeMap::new();
        let mut pending = vec![Module::new()];
        while let Some(m) = pending.pop() {
            let Some(source) = all.remove(&m) else { continue };
            for child in declared(&source.code) {
                let mut path = m.clone();
                path.push(child);
                pending.push(path);
            }
            modules.insert(m, source);
        }
        let mut graph = Graph { modules, edges: BTreeMap::new() };
        let exports: BTreeMap<Module, BTreeMap<String, Module>> =
            graph.modules.keys().map(|m| (m.clone(), graph.exports(m))).collect();
        for (m, source) in &graph.modules {
            let mut edges = BTreeMap::new();
            for (path, public, line) in references(&source.code, &graph.children(m)) {
                let Some(target) = graph.resolve(m, &path, &exports) else { continue };
                let reexport = public && target.len() > m.len() && target.starts_with(m);
                if target != *m && !reexport {
                    edges.entry(target).or_insert(line);
                }
            }
            graph.edges.insert(m.clone(), edges);
        }
        graph
    }

    fn children(&self, m: &Module) -> BTreeSet<String> {
        self.modules.keys().filter(|k| k.len() == m.len() + 1 && k.starts_with(m)).map(|k| k[m.len()].clone()).collect()
    }

    /// The names module `m` re-exports (`pub use child::Name`), with the module defining each.
    fn exports(&self, m: &Module) -> BTreeMap<String, Module> {
        let Some(source) = self.modules.get(m) else { return BTreeMap::new() };
        let mut out = BTreeMap::new();
        for (path, public, _) in references(&source.code, &self.children(m)) {
            let Some(last) = path.last().filter(|_| public) else { continue };
            if let Some(target) = self.resolve(m, &path, &BTreeMap::new()).filter(|t| t.len() > m.len()) {
                out.insert(last.clone(), target);
            }
        }
        out
    }

    /// The module of `src/compact/` that `path`, written in module `from`, leads to (the module
    /// defining the item, through re-exports); `None` for a path outside it.
    fn resolve(
        &self,
        from: &Module,
        path: &[String],
        exports: &BTreeMap<Module, BTreeMap<String, Module>>,
    ) -> Option<Module> {
        let mut segments = path.iter().peekable();
        let mut at = from.clone();
        match segments.peek().map(|s| s.as_str()) {
            Some("crate") => {
                segments.next();
                if segments.next().map(String::as_str) != Some("compact") {
                    return None;
                }
                at = Module::new();
            }
            Some("self") => {
                segments.next();
            }
            Some("super") => {
                while segments.peek().is_some_and(|s| *s == "super") {
                    segments.next();
                    at.pop()?;
                }
            }
            _ => {}
        }
        for segment in segments {
            let mut child = at.clone();
            child.push(segment.clone());
            if self.modules.contains_key(&child) {
                at = child;
                continue;
            }
            // An item of `at`, or a name it re-exports.
            if let Some(target) = exports.get(&at).and_then(|e| e.get(segment)) {
                return Some(target.clone());
            }
            return Some(at);
        }
        Some(at)
    }

    /// The strongly connected components of more than one module (Tarjan's algorithm).
    fn cycles(&self) -> Vec<Vec<Module>> {
        struct State<'g> {
            graph: &'g Graph,
            index: BTreeMap<&'g Module, usize>,
            low: BTreeMap<&'g Module, usize>,
            stack: Vec<&'g Module>,
            on_stack: BTreeSet<&'g Module>,
            found: Vec<Vec<Module>>,
        }
        fn visit<'g>(s: &mut State<'g>, v: &'g Module) {
            let n = s.index.len();
            s.index.insert(v, n);
            s.low.insert(v, n);
            s.stack.push(v);
            s.on_stack.insert(v);
            let graph = s.graph;
            for w in graph.edges.get(v).into_iter().flat_map(|e| e.keys()) {
                if !s.index.contains_key(w) {
                    visit(s, w);
                    let low = s.low[v].min(s.low[w]);
                    s.low.insert(v, low);
                } else if s.on_stack.contains(w) {
                    let low = s.low[v].min(s.index[w]);
                    s.low.insert(v, low);
                }
            }
            if s.low[v] == s.index[v] {
                let mut component = Vec::new();
                while let Some(w) = s.stack.pop() {
                    s.on_stack.remove(w);
                    component.push(w.clone());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    s.found.push(component);
                }
            }
        }
        let mut state = State {
            graph: self,
            index: BTreeMap::new(),
            low: BTreeMap::new(),
            stack: Vec::new(),
            on_stack: BTreeSet::new(),
            found: Vec::new(),
        };
        for m in self.modules.keys() {
            if !state.index.contains_key(m) {
                visit(&mut state, m);
            }
        }
        state.found
    }

    fn describe(&self, component: &[Module]) -> String {
        let inside: BTreeSet<&Module> = component.iter().collect();
        let mut lines =
            vec![format!("{} modules: {}", component.len(), component.iter().map(name).collect::<Vec<_>>().join(", "))];
        for m in component {
            for (to, line) in self.edges.get(m).into_iter().flatten().filter(|(to, _)| inside.contains(to)) {
                lines.push(format!("  {} -> {}: {line}", name(m), name(to)));
            }
        }
        lines.join("\n")
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            collect(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `text` with its comments, strings and character literals blanked (newlines kept).
fn blank(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let keep_lines = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(keep_lines(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            // A raw string: r"…", r#"…"#.
            let mut j = i + 1;
            while chars.get(j) == Some(&'#') {
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            j += 1;
            while j < chars.len() && !(chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#'))) {
                out.push(keep_lines(chars[j]));
                j += 1;
            }
            i = j + 1 + hashes;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if let Some(&c) = chars.get(i) {
                    out.push(keep_lines(c));
                }
                i += 1;
            }
            i += 1;
        } else if c == '\'' && (next == Some('\\') || chars.get(i + 2) == Some(&'\'')) {
            // A character literal ('x', '\n', '\u{…}'); a lifetime ('a) has no closing quote.
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && chars.get(i - 1).is_some_and(|c| c.is_alphanumeric() || *c == '_')
}

/// `code` without the items marked `#[cfg(test)]` (newlines kept).
fn without_tests(code: &str) -> String {
    const MARK: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(MARK) {
        out.push_str(&rest[..at]);
        let item = &rest[at + MARK.len()..];
        let end = item_end(item);
        out.extend(item[..end].chars().filter(|c| *c == '\n'));
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

/// Where the item at the start of `text` ends: after its `;` or its closing brace.
fn item_end(text: &str) -> usize {
    let mut depth = 0usize;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' | b'[' | b'(' => depth += 1,
            b'}' | b']' | b')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && bytes[i] == b'}' {
                    let after = text[i + 1..].trim_start();
                    return match after.starts_with(';') {
                        true => text.len() - after.len() + 1,
                        false => i + 1,
                    };
                }
            }
            b';' | b',' if depth == 0 => return i + 1,
            _ => {}
        }
        i += 1;
    }
    text.len()
}

/// The child modules `code` declares (`mod name;`).
fn declared(code: &str) -> Vec<String> {
    let words: Vec<&str> = code.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == ';')).collect();
    let mut out = Vec::new();
    for pair in words.windows(2) {
        if pair[0] == "mod" {
            if let Some(name) = pair[1].strip_suffix(';') {
                out.push(name.to_string());
            }
        }
    }
    out
}

/// The paths `code` names into other modules: each `use` tree expanded (with whether the `use`
/// is public), then the paths in the rest of the code that start at `super`, `self`, `crate` or
/// a child module; each with its line.
fn references(code: &str, children: &BTreeSet<String>) -> Vec<(Vec<String>, bool, String)> {
    let tokens = tokenize(code);
    let mut out = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (token, line) = &tokens[i];
        if token == "use" && (i == 0 || tokens[i - 1].0 != "::") {
            let public = visibility_before(&tokens, i);
            let mut j = i + 1;
            let mut paths = Vec::new();
            use_tree(&tokens, &mut j, Vec::new(), &mut paths);
            for path in paths {
                let text = format!("line {line}: use {}", path.join("::"));
                out.push((path, public, text));
            }
            i = j;
            continue;
        }
        let starts = matches!(token.as_str(), "super" | "self" | "crate") || children.contains(token);
        let after_path = i > 0 && tokens[i - 1].0 == "::";
        if starts && !after_path && tokens.get(i + 1).is_some_and(|t| t.0 == "::") {
            let mut path = vec![token.clone()];
            let mut j = i + 1;
            while tokens.get(j).is_some_and(|t| t.0 == "::") && tokens.get(j + 1).is_some_and(|t| is_ident(&t.0)) {
                path.push(tokens[j + 1].0.clone());
                j += 2;
            }
            out.push((path.clone(), false, format!("line {line}: {}", path.join("::"))));
            i = j;
            continue;
        }
        i += 1;
    }
    out
}

fn visibility_before(tokens: &[(String, usize)], i: usize) -> bool {
    match i.checked_sub(1).map(|k| tokens[k].0.as_str()) {
        Some("pub") => true,
        Some(")") => (1..=4).any(|back| i.checked_sub(back).is_some_and(|k| tokens[k].0 == "pub")),
        _ => false,
    }
}

/// Expands the `use` tree at `tokens[*at]` into its paths (after `prefix`), leaving `*at` after it.
fn use_tree(tokens: &[(String, usize)], at: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    loop {
        let Some((token, _)) = tokens.get(*at) else { return };
        match token.as_str() {
            "{" => {
                *at += 1;
                loop {
                    use_tree(tokens, at, path.clone(), out);
                    match tokens.get(*at).map(|t| t.0.as_str()) {
                        Some(",") => {
                            *at += 1;
                            if tokens.get(*at).is_some_and(|t| t.0 == "}") {
                                *at += 1;
                                return;
                            }
                        }
                        Some("}") => {
                            *at += 1;
                            return;
                        }
                        _ => return,
                    }
                }
            }
            "::" => *at += 1,
            "as" => {
                *at += 2;
            }
            ";" | "," | "}" => {
                if *tokens.get(*at).map_or("", |t| t.0.as_str()) == *";" {
                    *at += 1;
                }
                if !path.is_empty() {
                    // `self` in a group names the module before it.
                    if path.last().is_some_and(|s| s == "self") && path.len() > 1 {
                        path.pop();
                    }
                    out.push(path);
                }
                return;
            }
            "*" => {
                *at += 1;
            }
            word => {
                path.push(word.to_string());
                *at += 1;
            }
        }
    }
}

fn is_ident(token: &str) -> bool {
    token.chars().next().is_some_and(|c| c.is_alphabetic() || c == '_')
}

/// Identifiers, `::` and single punctuation, each with its line.
fn tokenize(code: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut line = 1;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            out.push((chars[start..i].iter().collect(), line));
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push(("::".to_string(), line));
            i += 2;
        } else {
            out.push((c.to_string(), line));
            i += 1;
        }
    }
    out
}
