//! Exact token counts: the tiktoken encodings, OpenAI's published per-message rules, tool
//! definitions as OpenAI renders them, images by their size, whole requests in one call, a
//! calibration against the usage providers report, and an explicit estimate that is only ever
//! used when asked for by name.

pub mod anchor;
pub mod calibration;
mod chat;
pub mod claude;
pub mod images;
mod request;
pub mod tools;

pub use chat::{
    count_message, count_message_with, count_messages, count_part, count_tools, message_overhead, ChatCount, CountNote,
    Estimated, ImageCounting, MessageTokens, REPLY_PRIMING, TOKENS_PER_MESSAGE,
};
pub use request::{count_message_list, count_request, RequestCount, RequestOptions};

use crate::bpe::{BpeEncoder, BpeEncoding, EncodeFailure};
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
    /// The encoding called `name`, ready to count with (in the lite build, its ranks loaded).
    /// The one place encoding names are read: options, profiles and exports deserialise through
    /// it (see the `Deserialize` impl below).
    pub fn parse(name: &str) -> Result<Encoding> {
        let encoding = Encoding::named(name)?;
        encoding.ready()?;
        Ok(encoding)
    }

    /// The encoding called `name`, whether or not it is ready (`loadRanks` names one that is not).
    pub fn named(name: &str) -> Result<Encoding> {
        Ok(match name {
            "o200k_base" => Encoding::O200kBase,
            "cl100k_base" => Encoding::Cl100kBase,
            "estimate" => Encoding::Estimate,
            other => {
                return Err(Error::invalid_argument(format!(
                    "unknown encoding {other:?}: expected \"o200k_base\", \"cl100k_base\" or \"estimate\""
                )))
            }
        })
    }

    /// The BPE table behind the encoding (none for the estimate).
    pub fn bpe(self) -> Option<BpeEncoding> {
        match self {
            Encoding::O200kBase => Some(BpeEncoding::O200kBase),
            Encoding::Cl100kBase => Some(BpeEncoding::Cl100kBase),
            Encoding::Estimate => None,
        }
    }

    /// Says whether the encoding can count, without building its encoder: in the lite build, not
    /// when its ranks were not loaded with `bpe::load_ranks`. The embedded build decodes a table
    /// (~15 ms for o200k_base, several times that before the engine has optimised the wasm) on
    /// the first count, not here: a session loaded with the counts it stored may need none.
    pub fn ready(self) -> Result<()> {
        match self.bpe() {
            Some(bpe) => BpeEncoder::available(bpe).map_err(|e| Error::invalid_argument(e.to_string())),
            None => Ok(()),
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
    /// `<|endoftext|>` is ordinary text here, as it is in a chat message. Any length is counted
    /// exactly, but for a run the merge could not split exactly, counted at an upper bound
    /// (`count_bounded` says when: see `bpe::merge::Windows`).
    ///
    /// Every `Encoding` that reaches here from outside came through `parse`, which checked that
    /// its encoder can be had (the embedded build builds it here, on the first count), and loaded
    /// ranks stay loaded; an encoder that cannot be had counts nothing rather than guess (the
    /// embedded build cannot get there at all: its tables were checked when it was built).
    pub fn count(self, text: &str) -> usize {
        match self.bpe() {
            Some(bpe) => BpeEncoder::get(bpe).map_or(0, |encoder| encoder.count(text)),
            None => estimate(text),
        }
    }

    /// `count`, and whether it is an upper bound rather than tiktoken's count (a run the merge
    /// could not split exactly: see `bpe::merge::Windows`).
    pub fn count_bounded(self, text: &str) -> (usize, bool) {
        match self.bpe() {
            Some(bpe) => BpeEncoder::get(bpe).map_or((0, false), |encoder| {
                let (n, exact) = encoder.count_exact(text);
                (n, !exact)
            }),
            None => (estimate(text), false),
        }
    }

    /// The token ids of `text`; the estimate has none.
    pub fn encode(self, text: &str) -> Result<Vec<u32>> {
        match self.bpe() {
            Some(bpe) => {
                let encoder = BpeEncoder::get(bpe).map_err(|e| Error::invalid_argument(e.to_string()))?;
                encoder.encode_exact(text).map_err(|failure| match failure {
                    EncodeFailure::OutOfMemory => Error::out_of_memory("the token ids", text.len().saturating_mul(4)),
                    EncodeFailure::Inexact => Error::invalid_argument(
                        "the text holds an unbroken run the tokenizer could not split exactly (it is counted at an \
                         upper bound): its token ids are unknown",
                    ),
                })
            }
            None => Err(Error::invalid_argument(
                "the \"estimate\" encoding counts without tokenizing, so it has no token ids: use o200k_base or cl100k_base",
            )),
        }
    }
}

impl serde::Serialize for Encoding {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for Encoding {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Encoding, D::Error> {
        let name = String::deserialize(deserializer)?;
        Encoding::parse(&name).map_err(|e| serde::de::Error::custom(&e.message))
    }
}

/// An encoding's name in stored records, read whether or not its ranks are loaded: a session
/// stored with cl100k_base is not damaged because this page loaded only o200k_base. Its reader
/// says what is missing (`ready`) in words of its own.
pub fn deserialize_named<'de, D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Encoding, D::Error> {
    let name = <String as serde::Deserialize>::deserialize(deserializer)?;
    Encoding::named(&name).map_err(|e| serde::de::Error::custom(&e.message))
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
