//! The options of a build as a caller gives them (`BuildSpec`): a profile and explicit settings,
//! merged field by field into the `BuildOptions` the core takes (`BuildSpec::resolve`).

use serde::Deserialize;
use serde_json::Value;

use super::options::{window_share, BudgetOptions, BuildOptions, RequestParts};
use super::profile::Profile;
use super::reduce::compress::CompressOptions;
use super::reduce::digest::DigestOptions;
use super::state_sections::StateOptions;
use super::summary_state::{Summarizer, SummaryOptions, SummaryPlacement};
use super::turn_summaries::MemoryOptions;
use crate::error::{Error, Result};
use crate::message::Format;
use crate::tokens::Encoding;

/// A field of the options as given: left out, `null` (the section is off), or a value.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Patch<T> {
    #[default]
    Unset,
    Null,
    Set(T),
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        Ok(Option::<T>::deserialize(deserializer)?.map_or(Patch::Null, Patch::Set))
    }
}

impl<T> Patch<T> {
    /// The section after this patch: unchanged when left out, off when `null`, else the section
    /// (the profile's, or the default one) with the given fields replaced by `apply`.
    fn merge<S: Default>(self, section: Option<S>, apply: impl FnOnce(T, &mut S)) -> Option<S> {
        match self {
            Patch::Unset => section,
            Patch::Null => None,
            Patch::Set(patch) => {
                let mut section = section.unwrap_or_default();
                apply(patch, &mut section);
                Some(section)
            }
        }
    }
}

/// Declares the partial form of an options section (every field optional) and how it applies.
macro_rules! partial {
    ($(#[$meta:meta])* $name:ident as $ts:literal for $target:ty { $($(#[$fmeta:meta])* $field:ident: $ty:ty),* $(,)? }
     $($(#[$xmeta:meta])* extra $extra:ident: $xty:ty)*) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Deserialize)]
        #[serde(rename_all = "camelCase", default, deny_unknown_fields)]
        #[cfg_attr(test, derive(ts_rs::TS))]
        #[cfg_attr(test, ts(rename = $ts, optional_fields))]
        pub struct $name {
            $($(#[$fmeta])* pub $field: Option<$ty>,)*
            $($(#[$xmeta])* pub $extra: Option<$xty>,)*
        }

        impl $name {
            /// Replaces the fields given, keeps the others.
            pub fn apply(self, target: &mut $target) {
                $(if let Some(value) = self.$field {
                    target.$field = value;
                })*
            }
        }
    };
}

partial!(
    /// `budget` as given: `maxTokens`, or the window and the share of it the context may use.
    BudgetPatch as "BudgetOptions" for BudgetOptions {
        context_window: u32,
        target_ratio: f64,
        summary_ratio: f64,
        recent_ratio: f64,
        min_messages: usize,
    }
    /// The most tokens the context may have; with `contextWindow` or `targetRatio` too, they must agree.
    extra max_tokens: u32
    /// What a compaction event compacts down to: the system prompt and this share of what the
    /// budget leaves beside it (default: a quarter, at most 1,500 tokens, at least a tenth).
    extra low_water_ratio: f64
);

impl BudgetPatch {
    /// The budget after this patch: `maxTokens` wins over the window and ratio it is merged with;
    /// given together with either of them in the same options, the three must agree.
    fn merge_into(self, budget: &mut BudgetOptions) -> Result<()> {
        let max = self.max_tokens;
        if let Some(ratio) = self.low_water_ratio {
            budget.low_water_ratio = Some(ratio);
        }
        let explicit_window = self.context_window.is_some() || self.target_ratio.is_some();
        self.apply(budget);
        if let Some(max) = max {
            if explicit_window && window_share(budget.context_window, budget.target_ratio) != max as usize {
                return Err(Error::invalid_argument(format!(
                    "budget.maxTokens ({max}) disagrees with budget.contextWindow × budget.targetRatio ({} × {} = {}): give one or the other",
                    budget.context_window,
                    budget.target_ratio,
                    window_share(budget.context_window, budget.target_ratio)
                )));
            }
            budget.max_tokens = Some(max);
        } else if explicit_window {
            budget.max_tokens = None;
        }
        Ok(())
    }
}

partial!(
    /// `compress` as given.
    CompressPatch as "CompressOptions" for CompressOptions {
        max_tokens: u32,
        array_keep: usize,
        string_max_chars: usize,
        max_depth: usize,
        text_mode: super::reduce::compress::TextMode,
        text_max_chars: usize,
        text_head: usize,
        text_tail: usize,
    }
);

partial!(
    /// `digest` as given.
    DigestPatch as "DigestOptions" for DigestOptions { tools: Vec<String> }
);

/// `summary` as given.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "SummaryOptions", optional_fields))]
pub struct SummaryPatch {
    /// Who writes the summary: the built-in extractive summary, or the caller's model (the build
    /// returns a `summaryRequest`).
    pub summarizer: Option<Summarizer>,
    /// @deprecated Spelled `summarizer` now; still read.
    pub summariser: Option<Summarizer>,
    /// Compaction is due past this many tokens (default: the budget's `maxTokens`; without a
    /// budget, 50,000).
    pub trigger_tokens: Option<u32>,
    /// After compaction the context aims below this (default: the budget's `maxTokens`, the recent
    /// messages filling what the summary leaves; without a budget, 0.6 × the trigger).
    pub target_tokens: Option<u32>,
    /// The first summary needs at least this many messages (20).
    pub min_messages: Option<usize>,
    /// A new summary needs at least this many new messages (10)…
    pub min_new_messages: Option<usize>,
    /// …whose tokens exceed this fraction of the current summary's (0.5).
    pub new_token_ratio: Option<f64>,
    /// The most tokens a summary may have (4,000).
    pub max_tokens: Option<u32>,
    /// The compact instruction; the built-in one by default.
    pub prompt: Option<String>,
    /// Words a summary must contain (case-insensitive).
    pub required_keys: Option<Vec<String>>,
    pub placement: Option<SummaryPlacement>,
}

impl SummaryPatch {
    /// Replaces the fields given, keeps the others.
    pub fn apply(self, target: &mut SummaryOptions) {
        if let Some(summarizer) = self.summarizer.or(self.summariser) {
            target.summarizer = summarizer;
        }
        macro_rules! set {
            ($($field:ident),*) => {$(if let Some(value) = self.$field { target.$field = value; })*};
        }
        if let Some(trigger) = self.trigger_tokens {
            target.trigger_tokens = Some(trigger);
        }
        if let Some(goal) = self.target_tokens {
            target.target_tokens = Some(goal);
        }
        set!(min_messages, min_new_messages, new_token_ratio, max_tokens, required_keys, placement);
        if self.prompt.is_some() {
            target.prompt = self.prompt;
        }
    }
}

/// `profile`: a built-in's name, or a profile of the caller's own.
#[derive(Clone, Debug, PartialEq)]
pub enum ProfileRef {
    Named(String),
    Custom(Box<Profile>),
}

impl<'de> Deserialize<'de> for ProfileRef {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        match Value::deserialize(deserializer)? {
            Value::String(name) => Ok(ProfileRef::Named(name)),
            other => Profile::from_value(other)
                .map(|p| ProfileRef::Custom(Box::new(p)))
                .map_err(|e| serde::de::Error::custom(e.into_details().message)),
        }
    }
}

/// The options of a build as a caller gives them (`history.build(options)`): a profile, and
/// explicit settings that win over it field by field. A section left out keeps the profile's
/// (or the default) settings, a section given replaces only the fields it names, and `null`
/// turns a section off.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "BuildOptions", optional_fields))]
pub struct BuildSpec {
    /// A built-in profile's name (`profileNames()`), or a profile of your own.
    #[cfg_attr(test, ts(type = "string | Profile", optional))]
    pub profile: Option<ProfileRef>,
    /// The format of the context (default: the history's; with a profile, the profile's).
    pub format: Option<Format>,
    /// A count window: the last N messages (10 to 100), tool chains whole.
    #[cfg_attr(test, ts(as = "Option<usize>", optional = nullable))]
    pub max_messages: Patch<usize>,
    /// The token budget.
    #[cfg_attr(test, ts(as = "Option<BudgetPatch>", optional = nullable))]
    pub budget: Patch<BudgetPatch>,
    /// The last N steps stay whole and are never summarised (default 3).
    pub keep_recent_steps: Option<usize>,
    /// Identical system messages are kept once (default true).
    pub dedupe_system: Option<bool>,
    /// Tool-output compression (on by default).
    #[cfg_attr(test, ts(as = "Option<CompressPatch>", optional = nullable))]
    pub compress: Patch<CompressPatch>,
    /// File-read digests in later turns (on by default).
    #[cfg_attr(test, ts(as = "Option<DigestPatch>", optional = nullable))]
    pub digest: Patch<DigestPatch>,
    /// History thinning of older turns (default false; profiles turn it on).
    pub thin: Option<bool>,
    /// Summary compaction (on by default, with the extractive summariser).
    #[cfg_attr(test, ts(as = "Option<SummaryPatch>", optional = nullable))]
    pub summary: Patch<SummaryPatch>,
    /// A session with memory: summaries of recorded turns the context does not wholly hold, in the
    /// summary section within what the summary budget leaves (newest turns first); `null` leaves
    /// them out.
    #[cfg_attr(test, ts(as = "Option<MemoryOptions>", optional = nullable))]
    pub memory: Patch<MemoryOptions>,
    /// A session's state after the system prompt, in this order: the active skill, the open
    /// todos, the available artifacts (with `<code_ref>`), the uploaded files; `null` leaves it out.
    #[cfg_attr(test, ts(as = "Option<StateOptions>", optional = nullable))]
    pub state: Patch<StateOptions>,
    /// Once an image was sent in an earlier turn, the context shows it as a one-line
    /// placeholder (`[image: png, 1024×768, sent in turn 3, message m5]`; default false). The
    /// stored message keeps the image.
    pub images_sent_once: Option<bool>,
    /// Timestamp recorded on a summary made during this build (the core has no clock).
    pub now: Option<String>,
    /// The parts of the request sent beside the messages (system prompt, tool definitions, tool
    /// choice): the budget covers them too, and `receipt.byPart.request` says what they took.
    pub request: Option<RequestParts>,
    /// A compaction event now, whatever the budget: the context is rebuilt down to the
    /// low-water mark (a user's "/compact"). Default false: events come when the budget needs one.
    pub compact_now: Option<bool>,
    /// Provider cache hints (on by default): Anthropic `cache_control` breakpoints at the end of
    /// the system prompt, of the summary section and of the last message (and where the last call
    /// ended when a wide turn passes the provider's lookback); in the AI SDK format as Anthropic
    /// provider options. `null` leaves them out.
    #[cfg_attr(test, ts(as = "Option<super::request::hints::CacheOptions>", optional = nullable))]
    pub cache: Patch<super::request::hints::CacheOptions>,
    /// The input pricing `receipt.cost` is estimated with: cache read and write multipliers, the
    /// shortest cached prefix, and a price per million input tokens for dollars. What is left out
    /// is the provider's published pricing for the model (`pricing.model`, `request.model` or the
    /// profile's).
    pub pricing: Option<super::cost::PricingOptions>,
}

impl BuildSpec {
    /// Parses camelCase JSON options, refusing unknown keys.
    pub fn from_value(value: Value) -> Result<BuildSpec> {
        crate::error::from_json(value, "invalid build options")
    }

    /// The options to build with, for a history counted with `encoding` whose messages are in
    /// `format` unless the options or the profile say otherwise. A profile of another encoding
    /// is refused.
    pub fn resolve(self, encoding: Encoding, format: Format) -> Result<BuildOptions> {
        let mut options = match self.profile {
            None => BuildOptions { format, ..BuildOptions::default() },
            Some(profile) => {
                let profile = match profile {
                    ProfileRef::Named(name) => super::profile::resolve(&name)?,
                    ProfileRef::Custom(profile) => *profile,
                };
                if profile.encoding() != encoding {
                    return Err(Error::invalid_argument(format!(
                        "profile {:?} counts with {} but this history counts with {}",
                        profile.name,
                        profile.encoding().as_str(),
                        encoding.as_str()
                    )));
                }
                profile.to_options()?
            }
        };
        if let Some(format) = self.format {
            options.format = format;
        }
        options.max_messages = match self.max_messages {
            Patch::Unset => options.max_messages,
            Patch::Null => None,
            Patch::Set(n) => Some(n),
        };
        options.budget = match self.budget {
            Patch::Unset => options.budget,
            Patch::Null => None,
            Patch::Set(patch) => {
                let mut budget = options.budget.unwrap_or_default();
                patch.merge_into(&mut budget)?;
                Some(budget)
            }
        };
        if let Some(steps) = self.keep_recent_steps {
            options.keep_recent_steps = steps;
        }
        if let Some(dedupe) = self.dedupe_system {
            options.dedupe_system = dedupe;
        }
        options.compress = self.compress.merge(options.compress, CompressPatch::apply);
        options.digest = self.digest.merge(options.digest, DigestPatch::apply);
        if let Some(thin) = self.thin {
            options.thin = thin;
        }
        options.summary = self.summary.merge(options.summary, SummaryPatch::apply);
        options.memory = self.memory.merge(options.memory, |given, memory| *memory = given);
        options.state = self.state.merge(options.state, |given, state| *state = given);
        if let Some(once) = self.images_sent_once {
            options.images_sent_once = once;
        }
        if self.now.is_some() {
            options.now = self.now;
        }
        if self.request.is_some() {
            options.request = self.request;
        }
        if let Some(now) = self.compact_now {
            options.compact_now = now;
        }
        options.cache = self.cache.merge(options.cache, |given, cache| *cache = given);
        if let Some(pricing) = self.pricing {
            options.pricing = pricing.or(&options.pricing);
        }
        options.validate()?;
        Ok(options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compact::Summarizer;
    use serde_json::json;

    fn resolve(value: Value) -> Result<BuildOptions> {
        BuildSpec::from_value(value)?.resolve(Encoding::O200kBase, Format::Anthropic)
    }

    #[test]
    fn explicit_fields_win_and_the_profiles_other_fields_stay() {
        // compact(history, { profile: "gpt-4o", summarize }) asks for an external summariser:
        // the profile's trigger (0.75 × 128,000) must stay, not fall to the default 50,000.
        let options = resolve(json!({"profile": "gpt-4o", "summary": {"summarizer": "external"}})).unwrap();
        let summary = options.summary.clone().unwrap();
        assert_eq!(summary.summarizer, Summarizer::External);
        let max = options.budget.as_ref().map(BudgetOptions::max_tokens);
        assert_eq!((summary.trigger(max), summary.target(max)), (96_000, 96_000));
        // The deprecated spelling is read too.
        let old = resolve(json!({"profile": "gpt-4o", "summary": {"summariser": "external"}})).unwrap();
        assert_eq!(old.summary.unwrap().summarizer, Summarizer::External);
        // A partial budget keeps the profile's window and ratio.
        let budget = resolve(json!({"profile": "gpt-4o", "budget": {"minMessages": 4}})).unwrap().budget.unwrap();
        assert_eq!((budget.context_window, budget.target_ratio, budget.min_messages), (128_000, 0.75, 4));
        // Scalars win; the rest is the profile's.
        let options = resolve(json!({"profile": "gpt-4o", "keepRecentSteps": 7, "format": "anthropic"})).unwrap();
        assert_eq!((options.keep_recent_steps, options.format, options.thin), (7, Format::Anthropic, true));
    }

    #[test]
    fn null_turns_a_section_off_and_no_profile_means_the_defaults() {
        let options =
            resolve(json!({"profile": "gpt-4o", "summary": null, "compress": null, "maxMessages": null})).unwrap();
        assert!(options.summary.is_none() && options.compress.is_none() && options.max_messages.is_none());
        assert!(options.budget.is_some() && options.digest.is_some());
        let plain = resolve(json!({"summary": {"triggerTokens": 10_000, "targetTokens": 6_000}})).unwrap();
        assert_eq!(plain.format, Format::Anthropic, "the history's format");
        let summary = plain.summary.unwrap();
        assert_eq!(
            (summary.trigger_tokens, summary.min_messages),
            (Some(10_000), SummaryOptions::default().min_messages)
        );
        // Without a budget, 50k/30k; an explicit trigger alone keeps its 0.6.
        assert_eq!((SummaryOptions::default().trigger(None), SummaryOptions::default().target(None)), (50_000, 30_000));
        let only_trigger = SummaryOptions { trigger_tokens: Some(10_000), ..SummaryOptions::default() };
        assert_eq!((only_trigger.target(None), only_trigger.target(Some(60_000))), (6_000, 10_000));
        assert_eq!(plain.budget, None);
        assert_eq!(
            BuildSpec::from_value(json!({})).unwrap().resolve(Encoding::O200kBase, Format::OpenAi).unwrap(),
            BuildOptions::default()
        );
    }

    #[test]
    fn unknown_fields_bad_values_and_other_encodings_are_refused() {
        assert!(resolve(json!({"sumary": {}})).unwrap_err().message.contains("sumary"));
        assert!(resolve(json!({"summary": {"trigger": 1}})).unwrap_err().message.contains("trigger"));
        assert!(resolve(json!({"profile": "no-such-model"})).is_err());
        let error = resolve(json!({"profile": "gpt-4"})).unwrap_err();
        assert!(error.message.contains("counts with cl100k_base"), "{error}");
        // The merged options are validated: a target above the trigger is refused.
        assert!(resolve(json!({"profile": "gpt-4o", "summary": {"triggerTokens": 10_000, "targetTokens": 20_000}}))
            .unwrap_err()
            .message
            .contains("targetTokens"));
        assert!(resolve(json!({"profile": "gpt-4o", "summary": {"triggerTokens": 10_000}})).is_ok());
    }

    #[test]
    fn the_budget_is_max_tokens_or_the_window_times_the_ratio() {
        let max = |value: Value| resolve(value).map(|o| o.budget.unwrap().max_tokens());
        assert_eq!(max(json!({"budget": {"maxTokens": 5_000}})).unwrap(), 5_000);
        assert_eq!(max(json!({"budget": {"contextWindow": 10_000, "targetRatio": 1}})).unwrap(), 10_000);
        // maxTokens wins over a profile's window; given with a window and ratio, they must agree.
        assert_eq!(max(json!({"profile": "gpt-4o", "budget": {"maxTokens": 50_000}})).unwrap(), 50_000);
        assert_eq!(
            max(json!({"budget": {"contextWindow": 10_000, "targetRatio": 0.5, "maxTokens": 5_000}})).unwrap(),
            5_000
        );
        let error = max(json!({"budget": {"contextWindow": 10_000, "maxTokens": 5_000}})).unwrap_err();
        assert!(error.message.contains("disagrees"), "{error}");
        assert!(max(json!({"budget": {"maxTokens": 0}})).unwrap_err().message.contains("maxTokens"));
        // A window given later replaces a maxTokens given before (a profile has none).
        let options = resolve(json!({"budget": {"maxTokens": 5_000}})).unwrap();
        assert_eq!(options.budget.unwrap().describe(), "budget.maxTokens 5000");
    }
}
