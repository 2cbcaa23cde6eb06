//! A session's artifacts and agent state: saved, read, answered to `file_reader`, and shown
//! whole with the session's own fields (`AppState`).

use serde_json::Value;

use super::Session;
use crate::error::{ErrorKind, Result};
use crate::message::{Format, Message};
use crate::state::artifacts::{self, Artifact, ArtifactInput, SavedArtifact};
use crate::state::{AgentState, AppState};

impl Session {
    /// Saves an artifact: checked whole first; on error nothing changes.
    pub fn save_artifact(&mut self, input: ArtifactInput) -> Result<SavedArtifact> {
        let (artifact, fallback) = self.artifacts.prepare(input)?;
        Ok(self.artifacts.commit(artifact, fallback))
    }

    pub fn artifact(&self, id: &str) -> Result<&Artifact> {
        self.artifacts.get(id)
    }

    pub fn artifacts(&self) -> &[Artifact] {
        self.artifacts.list()
    }

    /// Answers a model's `file_reader` call (OpenAI's tool call, or Anthropic's `tool_use` block)
    /// with the tool result to append: the artifact whole, or, for a file the session does not
    /// have or bad arguments, the error marked as one so the model can correct itself. In
    /// `format`, or the call's own.
    pub fn answer_file_reader(&self, call: &Value, format: Option<Format>) -> Result<Message> {
        let (input, own_format, id) = crate::message::tool_call_input(call, artifacts::FILE_READER_TOOL)?;
        let read =
            artifacts::requested_path(input).and_then(|path| self.artifacts.find(&path).map(artifacts::reader_text));
        let (content, is_error) = match read {
            Ok(text) => (text, false),
            Err(error) if error.kind == ErrorKind::Internal => return Err(error),
            Err(error) => (format!("Error: {error}"), true),
        };
        Ok(Message::tool_result(id, Some(artifacts::FILE_READER_TOOL), content, is_error, format.unwrap_or(own_format)))
    }

    pub fn agent_state(&self) -> &AgentState {
        &self.agent
    }

    /// Replaces the agent state, checked first (an import checks it alike); on error nothing changes.
    pub fn set_agent_state(&mut self, state: AgentState) -> Result<()> {
        state.validate()?;
        self.agent = state;
        Ok(())
    }

    /// The agent state with the session's context ids and loop counter.
    pub fn app_state(&self) -> AppState {
        AppState {
            state: self.agent.clone(),
            context_id: self.id.clone(),
            parent_context: self.parent_id.clone(),
            thread_id: self.id.clone(),
            loops: self.loops,
            max_loops: self.max_loops,
        }
    }

    pub(crate) fn restore_state(&mut self, artifacts: Vec<Artifact>, state: AgentState) -> Result<()> {
        state.validate()?;
        self.artifacts = crate::state::ArtifactStore::restore(artifacts)?;
        self.agent = state;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::{BudgetOptions, BuildOptions, Section, StatePart};
    use crate::error::ErrorKind;
    use crate::state::{Todo, TodoStatus, UploadedFile};
    use crate::tokens::{self, Encoding};
    use serde_json::json;

    const SALES: &str = "import pandas as pd\n\ndef load_data(path):\n    return pd.read_csv(path)\n\n\
                         def clean_data(df):\n    return df.dropna()\n\ndef visualize(df):\n    df.plot()\n";

    /// Three artifacts (two Python, one HTML) in a session with a system prompt and one request.
    fn seed_002() -> Session {
        let mut session = Session::new("main", Encoding::O200kBase, 10).unwrap();
        session
            .history
            .append_values(
                json!([{"role": "system", "content": "Answer as JSON."}, {"role": "user", "content": "分析销售数据"}]),
                Format::OpenAi,
            )
            .unwrap();
        for (id, language, description, content) in [
            ("code_sales_analysis", "python", "销售数据分析", SALES),
            ("code_visualization_chart", "python", "趋势图表", "import matplotlib\n"),
            ("code_report_template", "html", "报告模板", "<html><body>{{report}}</body></html>\n"),
        ] {
            let input = ArtifactInput {
                id: id.into(),
                language: language.into(),
                description: Some(description.into()),
                content: content.into(),
                ..Default::default()
            };
            session.save_artifact(input).unwrap();
        }
        session
    }

    fn read_call(call_id: &str, path: &str) -> Value {
        json!({"role": "assistant", "content": null, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "file_reader", "arguments": json!({"path": path}).to_string()}}]})
    }

    #[test]
    fn the_artifact_list_follows_the_system_prompt_as_seed_002_shows_it() {
        let mut session = seed_002();
        let options = BuildOptions {
            budget: Some(BudgetOptions { max_tokens: Some(4_000), ..BudgetOptions::default() }),
            ..BuildOptions::default()
        };
        let outcome = session.build(&options).unwrap();
        let context = &outcome.context;
        let sections: Vec<Section> = context.messages.iter().map(|m| m.section).collect();
        assert_eq!(sections[..2], [Section::System, Section::State]);
        let list = context.messages[1].message.content.joined_text();
        assert_eq!(
            list,
            "Available code files:\n\
             - code_sales_analysis (python) - 销售数据分析\n\
             - code_visualization_chart (python) - 趋势图表\n\
             - code_report_template (html) - 报告模板\n\n\
             Read one in full with the file_reader tool ({\"path\": \"<id>\"}). Reference one in your final report \
             with <code_ref>{code_id}</code_ref>."
        );
        let state = context.receipt.state.as_ref().unwrap();
        assert_eq!(state.sections.len(), 1);
        assert_eq!(
            (state.sections[0].part, state.sections[0].lines, state.sections[0].omitted),
            (StatePart::Artifacts, 3, 0)
        );
        let exact = tokens::count_message(Encoding::O200kBase, &context.messages[1].message).total as usize;
        assert_eq!((state.tokens, context.tokens.state), (exact, exact));
        assert_eq!(context.receipt.budget.unwrap().state_tokens, exact);
        assert!(context.receipt.within_budget && context.tokens.total <= 4_000);
        let request = session.compactor.request_value(context).unwrap();
        assert!(crate::compact::validate(&request, Format::OpenAi).is_ok());
        // Off with `state: null`.
        let off = session.build(&BuildOptions { state: None, ..options }).unwrap();
        assert!(off.context.receipt.state.is_none() && off.context.tokens.state == 0);
    }

    #[test]
    fn file_reader_returns_an_artifact_whole_and_a_later_event_digests_it() {
        let mut session = seed_002();
        session.history.append_value(read_call("call_1", "code_sales_analysis"), Format::OpenAi).unwrap();
        let call = json!({"id": "call_1", "type": "function", "function": {"name": "file_reader", "arguments": "{\"path\":\"code_sales_analysis\"}"}});
        let answer = session.answer_file_reader(&call, None).unwrap();
        let text = answer.readable_text();
        assert!(text.starts_with("code_sales_analysis.py (python, 10 lines, 149 characters)\n\n"), "{text}");
        assert!(text.ends_with(SALES), "{text}");
        session.history.append_all(vec![answer]).unwrap();
        // Anthropic's tool_use, by file name; an unknown file is an error result the model reads.
        let by_name = json!({"type": "tool_use", "id": "toolu_1", "name": "file_reader", "input": {"path": "code_report_template.html"}});
        assert!(session.answer_file_reader(&by_name, None).unwrap().readable_text().contains("<html>"));
        let unknown =
            json!({"type": "tool_use", "id": "toolu_2", "name": "file_reader", "input": {"path": "code_nope"}});
        let refused = session.answer_file_reader(&unknown, None).unwrap();
        assert!(refused.readable_text().contains("no artifact \"code_nope\""));
        assert!(session.answer_file_reader(&json!({"function": 3, "id": "x"}), None).is_err());

        // While recent the read is whole; turns later it is the one-line digest.
        let recent = session.build(&BuildOptions { summary: None, ..BuildOptions::default() }).unwrap();
        assert!(recent.context.messages().any(|m| m.readable_text().contains("def clean_data")));
        for turn in 0..4 {
            session
                .history
                .append_values(
                    json!([{"role": "user", "content": format!("next {turn}")}, {"role": "assistant", "content": "done"}]),
                    Format::OpenAi,
                )
                .unwrap();
        }
        // Between compaction events the read stays as it was sent; an event digests it.
        let appended = session.build(&BuildOptions { summary: None, ..BuildOptions::default() }).unwrap();
        assert!(appended.context.messages().any(|m| m.readable_text().contains("def clean_data")));
        let later =
            session.build(&BuildOptions { summary: None, compact_now: true, ..BuildOptions::default() }).unwrap();
        let texts: Vec<String> = later.context.messages().map(|m| m.readable_text()).collect();
        assert!(!texts.iter().any(|t| t.contains("def clean_data")));
        assert!(
            texts.iter().any(|t| {
                t
                == "[file read] code_sales_analysis.py (python, 10 lines, functions: load_data, clean_data, visualize)"
            }),
            "{texts:?}"
        );
    }

    fn full_state() -> AgentState {
        AgentState {
            todos: vec![
                Todo { content: "load the data".into(), status: TodoStatus::Completed },
                Todo { content: "draw the trend chart".into(), status: TodoStatus::InProgress },
                Todo { content: "write the report".into(), status: TodoStatus::Pending },
            ],
            allowed_tools: vec!["read_file".into(), "run_bash_command".into()],
            persistent_tools: vec!["now".into()],
            active_skill: Some("pdf".into()),
            mentioned_agents: vec!["@pdf".into()],
            model_pref: Some("code".into()),
            workspace_path: Some("/workspace/s1".into()),
            user_id: Some("u1".into()),
            uploaded_files: vec![UploadedFile {
                name: "sales.csv".into(),
                path: Some("uploads/sales.csv".into()),
                media_type: Some("text/csv".into()),
                size: Some(5_000),
                description: None,
            }],
        }
    }

    #[test]
    fn seed_000s_state_fields_and_a_subagent_starts_fresh() {
        let mut main = seed_002();
        main.set_agent_state(full_state()).unwrap();
        main.next_loop().unwrap();
        let app = serde_json::to_value(main.app_state()).unwrap();
        for key in [
            "todos",
            "allowedTools",
            "persistentTools",
            "activeSkill",
            "mentionedAgents",
            "modelPref",
            "workspacePath",
            "userId",
            "uploadedFiles",
            "contextId",
            "parentContext",
            "threadId",
            "loops",
            "maxLoops",
        ] {
            assert!(app.get(key).is_some(), "{key}");
        }
        assert_eq!(
            (app["contextId"].as_str(), app["threadId"].as_str(), app["loops"].as_u64()),
            (Some("main"), Some("main"), Some(1))
        );

        let child = main.spawn_subagent("convert the PDF", 5).unwrap();
        let fresh = child.app_state();
        assert_eq!(fresh.state, AgentState::default(), "no todos, tools, skill, mentions or uploads");
        assert!(child.artifacts().is_empty());
        assert_eq!(fresh.context_id, child.id());
        assert_eq!(fresh.thread_id, fresh.context_id, "its own thread: a sub-agent is isolated");
        assert_eq!((fresh.parent_context.as_deref(), fresh.loops, fresh.max_loops), (Some("main"), 0, 5));
        assert_eq!(main.agent_state(), &full_state(), "the parent's state is untouched");
    }

    #[test]
    fn the_prompt_shows_the_skill_open_todos_and_uploads_in_seed_order() {
        let mut session = seed_002();
        session.set_agent_state(full_state()).unwrap();
        let outcome = session.build(&BuildOptions::default()).unwrap();
        let state: Vec<String> = outcome
            .context
            .messages
            .iter()
            .filter(|m| m.section == Section::State)
            .map(|m| m.message.content.joined_text())
            .collect();
        assert_eq!(state.len(), 4);
        assert_eq!(state[0], "Active skill:\n- pdf");
        assert_eq!(state[1], "Open todos:\n- draw the trend chart (in progress)\n- write the report");
        assert!(state[2].starts_with("Available code files:"));
        assert_eq!(
            state[3],
            "Files the user uploaded:\n- sales.csv (text/csv, 5000 bytes, at uploads/sales.csv)\n\n\
             Reference one with <file_ref>{name}</file_ref>."
        );
        let parts: Vec<StatePart> =
            outcome.context.receipt.state.as_ref().unwrap().sections.iter().map(|s| s.part).collect();
        assert_eq!(parts, [StatePart::Skill, StatePart::Todos, StatePart::Artifacts, StatePart::Uploads]);
        // A small cap: the skill and todos go in, the rest is reported as omitted.
        let capped = BuildOptions {
            state: Some(crate::compact::StateOptions { max_tokens: Some(40) }),
            ..BuildOptions::default()
        };
        let used = session.build(&capped).unwrap().context.receipt.state.unwrap();
        assert!(used.tokens <= 40);
        assert!(used.sections.iter().any(|s| s.omitted > 0));
    }

    #[test]
    fn open_todos_are_the_summarys_pending_work() {
        let mut session = seed_002();
        session.set_agent_state(full_state()).unwrap();
        for i in 0..30 {
            session
                .history
                .append_values(
                    json!([{"role": "user", "content": format!("step {i}: {}", "look at the numbers again. ".repeat(30))},
                           {"role": "assistant", "content": format!("numbers {i} checked. {}", "all fine. ".repeat(30))}]),
                    Format::OpenAi,
                )
                .unwrap();
        }
        // Compacted to the budget itself (a low-water mark of the whole budget): room for the summary.
        let options = BuildOptions {
            budget: Some(BudgetOptions {
                max_tokens: Some(3_000),
                low_water_ratio: Some(1.0),
                ..BudgetOptions::default()
            }),
            ..BuildOptions::default()
        };
        let outcome = session.build(&options).unwrap();
        let summary = outcome.new_summary.expect("the build summarised");
        assert!(summary.text.contains("draw the trend chart (in progress)"), "{}", summary.text);
        assert!(
            summary.text.contains("write the report") && !summary.text.contains("load the data"),
            "{}",
            summary.text
        );
        assert!(outcome.context.tokens.total <= 3_000);
    }

    #[test]
    fn bad_state_and_artifacts_are_refused_and_change_nothing() {
        let mut session = seed_002();
        session.set_agent_state(full_state()).unwrap();
        let before = session.export().unwrap();
        let save = |session: &mut Session, id: &str, language: &str, content: String| {
            session.save_artifact(ArtifactInput {
                id: id.into(),
                language: language.into(),
                content,
                ..Default::default()
            })
        };
        assert_eq!(
            save(&mut session, "code_sales_analysis", "python", "x".into()).unwrap_err().kind,
            ErrorKind::Conflict
        );
        let big = "y".repeat(crate::state::artifacts::MAX_ARTIFACT_CHARS + 1);
        assert!(save(&mut session, "code_big", "python", big)
            .unwrap_err()
            .message
            .contains("over the limit of 1048576"));
        let strict = ArtifactInput {
            strict_language: Some(true),
            ..ArtifactInput { id: "c".into(), language: "cobol".into(), ..Default::default() }
        };
        assert_eq!(session.save_artifact(strict).unwrap_err().kind, ErrorKind::InvalidArgument);
        assert_eq!(session.artifact("code_nope").unwrap_err().kind, ErrorKind::NotFound);
        let mut twice = full_state();
        twice.allowed_tools.push("now".into());
        twice.allowed_tools.push("now".into());
        assert!(session.set_agent_state(twice).unwrap_err().message.contains("twice"));
        let mut empty = full_state();
        empty.todos[0].content = " ".into();
        assert!(session.set_agent_state(empty).unwrap_err().message.contains("todos[0].content is empty"));
        assert_eq!(session.export().unwrap(), before);
    }

    #[test]
    fn artifacts_and_state_travel_with_the_export() {
        let mut session = seed_002();
        session.set_agent_state(full_state()).unwrap();
        let exported = serde_json::to_value(session.export().unwrap()).unwrap();
        assert_eq!(exported["artifacts"].as_array().unwrap().len(), 3);
        let restored = Session::import(exported.clone()).unwrap();
        assert_eq!(serde_json::to_value(restored.export().unwrap()).unwrap(), exported);
        assert_eq!(restored.agent_state(), &full_state());
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut value = exported.clone();
            edit(&mut value);
            Session::import(value).unwrap_err().into_details().message
        };
        assert!(with(&|v| v["artifacts"][0]["content"] = "x".into()).contains("says 10 lines"));
        assert!(with(&|v| v["artifacts"][1]["id"] = "code_sales_analysis".into()).contains("exists already"));
        assert!(with(&|v| v["artifacts"][0]["language"] = "cobol".into()).contains("not supported"));
        assert!(with(&|v| v["state"]["activeSkill"] = "".into()).contains("activeSkill is empty"));
        assert!(with(&|v| v["state"]["todos"][0]["status"] = "later".into()).contains("must be one of"));
        // An export without them (written before they existed) imports with none.
        let mut old = exported.clone();
        old.as_object_mut().unwrap().remove("artifacts");
        old.as_object_mut().unwrap().remove("state");
        let plain = Session::import(old).unwrap();
        assert!(plain.artifacts().is_empty() && plain.agent_state() == &AgentState::default());
    }
}
