//! What a session keeps beside its messages: its artifacts (`ArtifactStore`) and the agent
//! state (`AgentState`), and how they appear in the context (`notes`: the sections the builder
//! puts after the system prompt, `compact::state_sections`).

pub mod agent;
pub mod artifacts;

pub use agent::{AgentState, AppState, Todo, TodoStatus, UploadedFile};
pub use artifacts::{Artifact, ArtifactInput, ArtifactStore, LanguageFallback, SavedArtifact};

use crate::compact::{StateNote, StatePart};

/// The state's sections in a fixed order, after the system prompt: the active skill, the open
/// todos, the available artifacts with how to read and reference them, the uploaded files.
pub fn notes(state: &AgentState, artifacts: &ArtifactStore) -> Vec<StateNote> {
    let mut notes = Vec::new();
    if let Some(skill) = &state.active_skill {
        notes.push(StateNote {
            part: StatePart::Skill,
            header: "Active skill:".to_string(),
            lines: vec![format!("- {skill}")],
            footer: None,
            keep_last: false,
        });
    }
    let todos: Vec<String> = state.open_todos().map(|t| format!("- {}", t.line())).collect();
    if !todos.is_empty() {
        notes.push(StateNote {
            part: StatePart::Todos,
            header: "Open todos:".to_string(),
            lines: todos,
            footer: None,
            keep_last: false,
        });
    }
    if !artifacts.is_empty() {
        notes.push(StateNote {
            part: StatePart::Artifacts,
            header: "Available code files:".to_string(),
            lines: artifacts
                .list()
                .iter()
                .map(|a| format!("- {} ({}) - {}", a.id, a.language, a.description))
                .collect(),
            footer: Some(format!(
                "Read one in full with the {} tool ({{\"path\": \"<id>\"}}). Reference one in your final report with \
                 <code_ref>{{code_id}}</code_ref>.",
                artifacts::FILE_READER_TOOL
            )),
            keep_last: true,
        });
    }
    if !state.uploaded_files.is_empty() {
        notes.push(StateNote {
            part: StatePart::Uploads,
            header: "Files the user uploaded:".to_string(),
            lines: state.uploaded_files.iter().map(upload_line).collect(),
            footer: Some("Reference one with <file_ref>{name}</file_ref>.".to_string()),
            keep_last: true,
        });
    }
    notes
}

fn upload_line(file: &UploadedFile) -> String {
    let mut details: Vec<String> = Vec::new();
    details.extend(file.media_type.clone());
    details.extend(file.size.map(|n| format!("{n} bytes")));
    details.extend(file.path.as_ref().map(|p| format!("at {p}")));
    let mut line = format!("- {}", file.name);
    if !details.is_empty() {
        line.push_str(&format!(" ({})", details.join(", ")));
    }
    if let Some(description) = &file.description {
        line.push_str(&format!(" - {description}"));
    }
    line
}
