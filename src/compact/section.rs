//! The summary section's messages: how a summary (or a bridge) is carried in a context, by
//! format and `summary.placement`.

use super::options::BuildOptions;
use super::summary_state::{self, SummaryPlacement};
use crate::message::{Content, Format, Message, Role};

/// The summary in force as the context carries it: a system message (OpenAI; or wherever
/// `placement: "system"` asks), a user message (Anthropic: never an assistant message, which the
/// recent messages could merge into), or with `placement: "exchange"` the compact prompt
/// and the summary as a user/assistant exchange.
pub(crate) fn summary_messages(options: &BuildOptions, text: &str, until: &str) -> Vec<Message> {
    let placement = options.summary.as_ref().map_or(SummaryPlacement::Auto, |s| s.placement);
    if placement == SummaryPlacement::Exchange {
        let prompt = options.summary.as_ref().map_or(summary_state::DEFAULT_COMPACT_PROMPT, |s| s.prompt());
        return vec![
            Message::new(Role::User, Content::text(prompt), options.format),
            Message::new(Role::Assistant, Content::text(text.to_string()), options.format),
        ];
    }
    vec![section_message(options, format!("Summary of the earlier conversation (up to message {until}):\n{text}"))]
}

/// A message of the summary section: a system message, or for Anthropic (unless `placement` is
/// `system`) a user message.
pub(crate) fn section_message(options: &BuildOptions, text: String) -> Message {
    let placement = options.summary.as_ref().map_or(SummaryPlacement::Auto, |s| s.placement);
    let role = match (placement, options.format) {
        (SummaryPlacement::System, _) | (_, Format::OpenAi) => Role::System,
        _ => Role::User,
    };
    Message::new(role, Content::text(text), options.format)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::summary_state::SummaryOptions;

    #[test]
    fn the_summary_is_a_system_message_a_user_message_or_an_exchange() {
        let openai = summary_messages(&BuildOptions::default(), "{\"done\": 1}", "m4");
        assert_eq!(openai.len(), 1);
        assert_eq!(openai[0].role, Role::System);
        assert!(openai[0].content.joined_text().contains("(up to message m4)"));
        let anthropic = BuildOptions { format: Format::Anthropic, ..BuildOptions::default() };
        let list = summary_messages(&anthropic, "{\"done\": 1}", "m4");
        assert_eq!(list.iter().map(|m| m.role).collect::<Vec<_>>(), [Role::User], "never an assistant message");
        let system = BuildOptions {
            summary: Some(SummaryOptions { placement: SummaryPlacement::System, ..SummaryOptions::default() }),
            ..anthropic.clone()
        };
        assert_eq!(summary_messages(&system, "x", "m4")[0].role, Role::System);
        let exchange = BuildOptions {
            summary: Some(SummaryOptions { placement: SummaryPlacement::Exchange, ..SummaryOptions::default() }),
            ..anthropic
        };
        let list = summary_messages(&exchange, "{\"done\": 1}", "m4");
        assert_eq!(list.iter().map(|m| m.role).collect::<Vec<_>>(), [Role::User, Role::Assistant]);
        assert_eq!(list[1].content.joined_text(), "{\"done\": 1}");
    }
}
