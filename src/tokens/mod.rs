//! Exact token counts: the tiktoken encodings, OpenAI's published per-message rules, and an
//! explicit estimate that is only ever used when asked for by name.

mod chat;

pub use chat::{count_message, count_messages, count_part, count_tools, message_overhead, ChatCount, MessageTokens, REPLY_PRIMING, TOKENS_PER_MESSAGE};

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Encoding {
    /// GPT-4o, GPT-4.1, o-series, GPT-5.
    O200kBase,
    /// GPT-4, GPT-3.5-turbo, text-embedding-3.
    Cl100kBase,
    /// Not a tokenizer: one token per four characters, for when speed matters more than exactness.
    Estimate,
}

impl Encoding {
    pub fn parse(name: &str) -> Result<Encoding> {
        match name {
            "o200k_base" => Ok(Encoding::O200kBase),
            "cl100k_base" => Ok(Encoding::Cl100kBase),
            "estimate" => Ok(Encoding::Estimate),
            other => Err(Error::invalid_argument(format!(
                "unknown encoding {other:?}: expected \"o200k_base\", \"cl100k_base\" or \"estimate\""
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Encoding::O200kBase => "o200k_base",
            Encoding::Cl100kBase => "cl100k_base",
            Encoding::Estimate => "estimate",
        }
    }

    /// Tokens in `text`, as tiktoken's `encode_ordinary` counts them: special-token text such as
    /// `<|endoftext|>` is ordinary text here, as it is in a chat message.
    pub fn count(self, text: &str) -> usize {
        match self {
            Encoding::O200kBase => tiktoken_rs::o200k_base_singleton().count_ordinary(text),
            Encoding::Cl100kBase => tiktoken_rs::cl100k_base_singleton().count_ordinary(text),
            Encoding::Estimate => estimate(text),
        }
    }

    /// The token ids of `text`; the estimate has none.
    pub fn encode(self, text: &str) -> Result<Vec<u32>> {
        match self {
            Encoding::O200kBase => Ok(tiktoken_rs::o200k_base_singleton().encode_ordinary(text)),
            Encoding::Cl100kBase => Ok(tiktoken_rs::cl100k_base_singleton().encode_ordinary(text)),
            Encoding::Estimate => Err(Error::invalid_argument(
                "the \"estimate\" encoding counts without tokenizing, so it has no token ids: use o200k_base or cl100k_base",
            )),
        }
    }
}

/// One token per four characters, rounded up: the usual rule of thumb for English prose.
fn estimate(text: &str) -> usize {
    text.chars().count().div_ceil(4)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings_round_trip_their_names() {
        for encoding in [Encoding::O200kBase, Encoding::Cl100kBase, Encoding::Estimate] {
            assert_eq!(Encoding::parse(encoding.as_str()), Ok(encoding));
        }
        let error = Encoding::parse("p50k_base").unwrap_err();
        assert!(error.message.contains("p50k_base"), "{error}");
    }

    #[test]
    fn the_estimate_is_explicit_and_has_no_ids() {
        assert_eq!(Encoding::Estimate.count("abcdefgh"), 2);
        assert_eq!(Encoding::Estimate.count("abcdefghi"), 3);
        assert!(Encoding::Estimate.encode("abc").is_err());
    }

    #[test]
    fn special_token_text_is_ordinary_text() {
        assert!(Encoding::O200kBase.count("<|endoftext|>") > 1);
    }
}
