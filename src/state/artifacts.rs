//! The artifact store: the files an agent writes (or a user uploads) kept beside the messages,
//! each with an id (`code_sales_analysis`), a language checked against the supported list and
//! mapped to its extension, a description, its line and character counts and its creation time.
//! The context lists them (`- code_sales_analysis (python) - 销售数据分析`); the model reads one
//! in full with `file_reader`, whose result later builds digest to one line.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};

/// The most characters one artifact may hold (1 MiB of text: a file, not a data set).
pub const MAX_ARTIFACT_CHARS: usize = 1_048_576;
/// The most artifacts a session holds.
pub const MAX_ARTIFACTS: usize = 10_000;
/// An unsupported language falls back to python (unless `strictLanguage`).
pub const FALLBACK_LANGUAGE: &str = "python";

/// The supported languages: the name stored, the names accepted for it, its extension.
const LANGUAGES: [(&str, &[&str], &str); 20] = [
    ("python", &["python", "py", "python3"], "py"),
    ("javascript", &["javascript", "js", "node"], "js"),
    ("typescript", &["typescript", "ts"], "ts"),
    ("html", &["html", "htm"], "html"),
    ("css", &["css"], "css"),
    ("sql", &["sql"], "sql"),
    ("shell", &["shell", "bash", "sh", "zsh"], "sh"),
    ("markdown", &["markdown", "md"], "md"),
    ("json", &["json"], "json"),
    ("yaml", &["yaml", "yml"], "yaml"),
    ("xml", &["xml"], "xml"),
    ("r", &["r"], "r"),
    ("java", &["java"], "java"),
    ("c", &["c"], "c"),
    ("cpp", &["cpp", "c++", "cxx", "cc"], "cpp"),
    ("go", &["go", "golang"], "go"),
    ("rust", &["rust", "rs"], "rs"),
    ("php", &["php"], "php"),
    ("ruby", &["ruby", "rb"], "rb"),
    ("text", &["text", "txt", "plain", "plaintext"], "txt"),
];

/// The supported language names, as stored.
pub fn supported_languages() -> Vec<&'static str> {
    LANGUAGES.iter().map(|(name, _, _)| *name).collect()
}

/// A language's stored name and extension, if it is supported (any accepted spelling, any case).
pub fn language(name: &str) -> Option<(&'static str, &'static str)> {
    let wanted = name.trim().to_ascii_lowercase();
    LANGUAGES.iter().find(|(_, names, _)| names.contains(&wanted.as_str())).map(|(n, _, ext)| (*n, *ext))
}

/// A stored artifact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Artifact {
    pub id: String,
    /// A supported language's name (`supportedLanguages()`).
    pub language: String,
    pub description: String,
    pub content: String,
    pub line_count: u32,
    pub char_count: u32,
    /// An ISO 8601 date or `seq:N` (the core has no clock).
    pub created_at: String,
}

impl Artifact {
    /// `{id}.{extension}`: the file it is (`file_reader` finds an artifact by it too).
    pub fn file_name(&self) -> String {
        let extension = language(&self.language).map_or("txt", |(_, ext)| ext);
        format!("{}.{extension}", self.id)
    }
}

/// What `saveArtifact` takes.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct ArtifactInput {
    /// Letters, digits, '_', '-' or '.', at most 128 (e.g. `code_sales_analysis`).
    pub id: String,
    pub language: String,
    /// Given, or made from the first line of the content.
    pub description: Option<String>,
    pub content: String,
    /// Default: `seq:N`, N the artifact's number in the session.
    pub created_at: Option<String>,
    /// Refuse an unsupported language instead of falling back to python (default false).
    pub strict_language: Option<bool>,
}

/// An unsupported language replaced by the fallback (python).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LanguageFallback {
    pub requested: String,
    pub used: String,
}

/// What `saveArtifact` returns: the artifact as stored (without its content), its file name, and
/// the language fallback when there was one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SavedArtifact {
    pub id: String,
    pub language: String,
    pub file_name: String,
    pub description: String,
    pub line_count: u32,
    pub char_count: u32,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub language_fallback: Option<LanguageFallback>,
}

/// The artifacts of a session, in the order they were saved.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ArtifactStore {
    items: Vec<Artifact>,
}

fn check_id(id: &str) -> Result<()> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_argument(format!(
            "artifact id {id:?} must be 1 to 128 characters of letters, digits, '_', '-' or '.'"
        )))
    }
}

fn counts(content: &str) -> (u32, u32) {
    let chars = content.chars().count();
    let lines = if content.is_empty() { 0 } else { content.lines().count().max(1) };
    (u32::try_from(lines).unwrap_or(u32::MAX), u32::try_from(chars).unwrap_or(u32::MAX))
}

/// The description made when none is given: the content's first non-empty line, short.
fn default_description(content: &str, language: &str) -> String {
    let first = content.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let first = first.trim_start_matches(['#', '/', '*', '-', '<', '!', ' ']).trim();
    if first.is_empty() {
        format!("{language} file")
    } else {
        crate::extract::head_tail(first, 40, 0).replace('\n', " ")
    }
}

impl ArtifactStore {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn list(&self) -> &[Artifact] {
        &self.items
    }

    pub fn get(&self, id: &str) -> Result<&Artifact> {
        self.items.iter().find(|a| a.id == id).ok_or_else(|| {
            let known: Vec<&str> = self.items.iter().rev().take(20).map(|a| a.id.as_str()).collect();
            Error::not_found(format!(
                "no artifact {id:?} in this session{}",
                if known.is_empty() { String::new() } else { format!(" (it has: {})", known.join(", ")) }
            ))
        })
    }

    /// Finds an artifact by its id or its file name (`code_sales_analysis.py`).
    pub fn find(&self, name: &str) -> Result<&Artifact> {
        let name = name.trim();
        match self.items.iter().find(|a| a.id == name || a.file_name() == name) {
            Some(artifact) => Ok(artifact),
            None => self.get(name),
        }
    }

    /// Checks `input` and makes the artifact it describes; nothing is stored.
    pub fn prepare(&self, input: ArtifactInput) -> Result<(Artifact, Option<LanguageFallback>)> {
        check_id(&input.id)?;
        if self.items.iter().any(|a| a.id == input.id) {
            return Err(Error::conflict(format!(
                "an artifact {:?} exists already: artifacts are written once, save a new one under another id",
                input.id
            )));
        }
        if self.items.len() >= MAX_ARTIFACTS {
            return Err(Error::invalid_argument(format!("a session holds at most {MAX_ARTIFACTS} artifacts")));
        }
        let requested = input.language.trim();
        if requested.is_empty() || requested.len() > 32 || requested.chars().any(char::is_whitespace) {
            return Err(Error::invalid_argument(format!(
                "artifact {:?}: language {:?} must be one word of 1 to 32 characters",
                input.id, input.language
            )));
        }
        let (language, fallback) = match language(requested) {
            Some((name, _)) => (name, None),
            None if input.strict_language == Some(true) => {
                return Err(Error::invalid_argument(format!(
                    "artifact {:?}: language {requested:?} is not supported ({})",
                    input.id,
                    supported_languages().join(", ")
                )))
            }
            None => (
                FALLBACK_LANGUAGE,
                Some(LanguageFallback { requested: requested.to_string(), used: FALLBACK_LANGUAGE.to_string() }),
            ),
        };
        let chars = input.content.chars().count();
        if chars > MAX_ARTIFACT_CHARS {
            return Err(Error::invalid_argument(format!(
                "artifact {:?} has {chars} characters, over the limit of {MAX_ARTIFACT_CHARS}",
                input.id
            )));
        }
        let description = match input.description {
            Some(d) if d.trim().is_empty() => {
                return Err(Error::invalid_argument(format!("artifact {:?}: the description is empty", input.id)))
            }
            Some(d) if d.chars().count() > 500 || d.contains(['\n', '\r']) => {
                return Err(Error::invalid_argument(format!(
                    "artifact {:?}: a description is one line of at most 500 characters",
                    input.id
                )))
            }
            Some(d) => d,
            None => default_description(&input.content, language),
        };
        let created_at = match input.created_at {
            Some(at) => {
                crate::compact::summary_state::check_created_at(&at, "createdAt")?;
                at
            }
            None => format!("seq:{}", self.items.len() + 1),
        };
        let (line_count, char_count) = counts(&input.content);
        let artifact = Artifact {
            id: input.id,
            language: language.to_string(),
            description,
            content: input.content,
            line_count,
            char_count,
            created_at,
        };
        Ok((artifact, fallback))
    }

    pub fn save(&mut self, input: ArtifactInput) -> Result<SavedArtifact> {
        let (artifact, fallback) = self.prepare(input)?;
        Ok(self.commit(artifact, fallback))
    }

    /// Stores an artifact `prepare` made.
    pub fn commit(&mut self, artifact: Artifact, fallback: Option<LanguageFallback>) -> SavedArtifact {
        let saved = SavedArtifact {
            id: artifact.id.clone(),
            language: artifact.language.clone(),
            file_name: artifact.file_name(),
            description: artifact.description.clone(),
            line_count: artifact.line_count,
            char_count: artifact.char_count,
            created_at: artifact.created_at.clone(),
            language_fallback: fallback,
        };
        self.items.push(artifact);
        saved
    }

    /// Restores artifacts from an export or the stored records, each checked as `save` checks it
    /// (a supported language, the counts its content gives): all or nothing.
    pub fn restore(artifacts: Vec<Artifact>) -> Result<ArtifactStore> {
        let mut store = ArtifactStore::default();
        for artifact in artifacts {
            let input = ArtifactInput {
                id: artifact.id.clone(),
                language: artifact.language.clone(),
                description: Some(artifact.description.clone()),
                content: artifact.content.clone(),
                created_at: Some(artifact.created_at.clone()),
                strict_language: Some(true),
            };
            let (checked, _) = store.prepare(input).map_err(|e| {
                Error::invalid_argument(format!("artifact {:?} does not hold together: {}", artifact.id, e.message))
            })?;
            if checked != artifact {
                return Err(Error::invalid_argument(format!(
                    "artifact {:?} says {} lines and {} characters in {:?}, but its content has {} and {} in {:?}",
                    artifact.id,
                    artifact.line_count,
                    artifact.char_count,
                    artifact.language,
                    checked.line_count,
                    checked.char_count,
                    checked.language
                )));
            }
            store.items.push(artifact);
        }
        Ok(store)
    }
}

// ---------------------------------------------------------------------------------------------
// `file_reader`: the tool the model reads an artifact with.

pub const FILE_READER_TOOL: &str = "file_reader";

const FILE_READER_DESCRIPTION: &str =
    "Read a file of this session in full: an artifact from the list of available files \
     (by its id, e.g. code_sales_analysis) or an uploaded file. The content is returned whole; \
     in later turns it is shortened to a one-line digest, so read it again when you need it.";

fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "The file's id as listed (e.g. code_sales_analysis), or its file name (code_sales_analysis.py)."}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

/// The tool's definition in `format`'s `tools` shape.
pub fn tool(format: crate::message::Format) -> Value {
    crate::message::tool_definition(format, FILE_READER_TOOL, FILE_READER_DESCRIPTION, parameters())
}

/// The file a `file_reader` call names (Anthropic's `input` object or OpenAI's `arguments` text).
pub fn requested_path(input: &Value) -> Result<String> {
    let object = crate::message::tool_arguments(input, FILE_READER_TOOL, &["path", "id"])?;
    match object.get("path").or_else(|| object.get("id")).and_then(Value::as_str) {
        Some(path) if !path.trim().is_empty() => Ok(path.trim().to_string()),
        _ => Err(Error::invalid_argument("file_reader needs a non-empty `path`")),
    }
}

/// What `file_reader` returns for an artifact: a header naming its file (which the file-read
/// digest takes the file's name and language from), then the content whole.
pub fn reader_text(artifact: &Artifact) -> String {
    format!(
        "{} ({}, {} lines, {} characters)\n\n{}",
        artifact.file_name(),
        artifact.language,
        artifact.line_count,
        artifact.char_count,
        artifact.content
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(id: &str, language: &str, content: &str) -> ArtifactInput {
        ArtifactInput { id: id.into(), language: language.into(), content: content.into(), ..Default::default() }
    }

    #[test]
    fn languages_map_to_extensions_and_aliases() {
        assert_eq!(language("Python"), Some(("python", "py")));
        assert_eq!(language("bash"), Some(("shell", "sh")));
        assert_eq!(language("C++"), Some(("cpp", "cpp")));
        assert_eq!(language("yml"), Some(("yaml", "yaml")));
        assert_eq!(language("cobol"), None);
        for name in ["python", "javascript", "typescript", "html", "css", "sql", "shell", "markdown", "json"] {
            assert!(supported_languages().contains(&name), "{name}");
        }
        for name in ["yaml", "xml", "r", "java", "c", "cpp", "go", "rust", "php", "ruby"] {
            assert!(supported_languages().contains(&name), "{name}");
        }
    }

    #[test]
    fn a_save_counts_and_reports_a_fallback() {
        let mut store = ArtifactStore::default();
        let saved = store
            .save(ArtifactInput {
                description: Some("销售数据分析".into()),
                ..input("code_sales_analysis", "py", "import pandas\n\ndef load_data():\n    pass\n")
            })
            .unwrap();
        assert_eq!((saved.language.as_str(), saved.file_name.as_str()), ("python", "code_sales_analysis.py"));
        assert_eq!((saved.line_count, saved.char_count, saved.created_at.as_str()), (4, 41, "seq:1"));
        assert_eq!(saved.language_fallback, None);
        let fallback = store.save(input("code_job", "cobol", "DISPLAY 'HI'.")).unwrap();
        assert_eq!(fallback.language, "python");
        assert_eq!(
            fallback.language_fallback,
            Some(LanguageFallback { requested: "cobol".into(), used: "python".into() })
        );
        assert_eq!(fallback.description, "DISPLAY 'HI'.");
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn bad_input_is_refused_and_nothing_changes() {
        let mut store = ArtifactStore::default();
        store.save(input("code_a", "python", "x = 1")).unwrap();
        let before = store.clone();
        let kind = |r: Result<SavedArtifact>| r.unwrap_err().kind;
        use crate::error::ErrorKind::*;
        assert_eq!(kind(store.save(input("code_a", "python", "y"))), Conflict);
        assert_eq!(kind(store.save(input("a/b", "python", "y"))), InvalidArgument);
        assert_eq!(kind(store.save(input("big", "python", &"x".repeat(MAX_ARTIFACT_CHARS + 1)))), InvalidArgument);
        let strict = ArtifactInput { strict_language: Some(true), ..input("code_b", "cobol", "y") };
        let refused = store.save(strict).unwrap_err();
        assert!(refused.message.contains("not supported"), "{refused}");
        assert_eq!(kind(store.save(input("code_c", "two words", "y"))), InvalidArgument);
        let bad_date = ArtifactInput { created_at: Some("yesterday".into()), ..input("code_d", "go", "y") };
        assert_eq!(kind(store.save(bad_date)), InvalidArgument);
        assert_eq!(store.get("code_z").unwrap_err().kind, NotFound);
        assert_eq!(store, before);
        assert_eq!(store.find("code_a.py").unwrap().id, "code_a");
    }

    #[test]
    fn restore_checks_what_save_checks() {
        let mut store = ArtifactStore::default();
        store.save(input("code_a", "python", "x = 1\ny = 2")).unwrap();
        let list = store.list().to_vec();
        assert_eq!(ArtifactStore::restore(list.clone()).unwrap(), store);
        let mut edited = list.clone();
        edited[0].line_count = 7;
        assert!(ArtifactStore::restore(edited).unwrap_err().message.contains("says 7 lines"));
        let mut twice = list.clone();
        twice.extend(list);
        assert!(ArtifactStore::restore(twice).unwrap_err().message.contains("exists already"));
    }
}
