//! Profiles: per model, the window, the compaction trigger as a fraction of it, the
//! target after compaction, the recent steps kept whole, and the encoding. Two agent profiles
//! are built in beside the models' (`init`, `execute`); users define their own.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::options::{BudgetOptions, BuildOptions};
use super::summary_state::SummaryOptions;
use crate::error::{Error, Result};
use crate::message::Format;
use crate::tokens::Encoding;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Profile {
    pub name: String,
    pub context_window: u32,
    /// Compaction is due past this fraction of the window (Init 0.75, Execute 0.70).
    pub trigger_fraction: f64,
    /// After compaction, aim below this fraction (default: the trigger: the recent messages fill
    /// what the summary leaves).
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub target_fraction: Option<f64>,
    /// Recent steps kept whole (Init 3, Execute 5).
    pub keep_recent_steps: usize,
    /// `o200k_base`, `cl100k_base` or `estimate`.
    #[cfg_attr(test, ts(type = "EncodingName"))]
    pub encoding: Encoding,
    #[serde(default)]
    #[cfg_attr(test, ts(optional))]
    pub format: Option<Format>,
}

impl Profile {
    pub fn validate(&self) -> Result<()> {
        if self.name.trim().is_empty() {
            return Err(Error::invalid_argument("a profile needs a name"));
        }
        if self.context_window < 1000 {
            return Err(Error::invalid_argument(format!(
                "profile {:?}: contextWindow must be at least 1000",
                self.name
            )));
        }
        if !(self.trigger_fraction > 0.0 && self.trigger_fraction <= 1.0) {
            return Err(Error::invalid_argument(format!(
                "profile {:?}: triggerFraction must be in (0, 1], got {}",
                self.name, self.trigger_fraction
            )));
        }
        if let Some(target) = self.target_fraction {
            if !(target > 0.0 && target < self.trigger_fraction) {
                return Err(Error::invalid_argument(format!(
                    "profile {:?}: targetFraction must be in (0, triggerFraction), got {target}",
                    self.name
                )));
            }
        }
        if !(1..=1000).contains(&self.keep_recent_steps) {
            return Err(Error::invalid_argument(format!(
                "profile {:?}: keepRecentSteps must be between 1 and 1000",
                self.name
            )));
        }
        Ok(())
    }

    pub fn from_value(value: Value) -> Result<Profile> {
        let profile: Profile = crate::error::from_json(value, "invalid profile")?;
        profile.validate()?;
        Ok(profile)
    }

    pub fn encoding(&self) -> Encoding {
        self.encoding
    }

    pub fn trigger_tokens(&self) -> u32 {
        (f64::from(self.context_window) * self.trigger_fraction).floor() as u32
    }

    /// The target after compaction: `targetFraction` of the window if given, else the trigger (the
    /// recent messages fill what the summary leaves).
    pub fn target_tokens(&self) -> u32 {
        let target = self.target_fraction.unwrap_or(self.trigger_fraction);
        (f64::from(self.context_window) * target).floor() as u32
    }

    /// Build options for this profile: the budget is the window up to the trigger, and compaction
    /// is due past it (the summary's trigger and target derive from the budget; the target is
    /// explicit only with `targetFraction`); older turns thinned when no summary is configured;
    /// the recent steps whole.
    pub fn to_options(&self) -> Result<BuildOptions> {
        self.validate()?;
        let options = BuildOptions {
            format: self.format.unwrap_or(Format::OpenAi),
            budget: Some(BudgetOptions {
                context_window: self.context_window,
                target_ratio: self.trigger_fraction,
                low_water_ratio: self.target_fraction.map(|target| target / self.trigger_fraction),
                ..BudgetOptions::default()
            }),
            keep_recent_steps: self.keep_recent_steps,
            thin: true,
            summary: Some(SummaryOptions::default()),
            pricing: super::PricingOptions { model: Some(self.name.clone()), ..super::PricingOptions::default() },
            ..BuildOptions::default()
        };
        options.validate()?;
        Ok(options)
    }
}

/// (name, window, trigger fraction, recent steps, encoding, format)
const BUILTINS: &[(&str, u32, f64, usize, Encoding, Format)] = &[
    // Two agents: one that explores (a 200k window), one that executes (a 1M window).
    ("init", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    ("execute", 1_000_000, 0.70, 5, Encoding::O200kBase, Format::Anthropic),
    // Anthropic (no public tokenizer: o200k_base is the stand-in).
    ("claude-opus-4-5", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    ("claude-sonnet-4-5", 1_000_000, 0.70, 5, Encoding::O200kBase, Format::Anthropic),
    ("claude-opus-4-6", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    ("claude-opus-4-1", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    ("claude-opus-4", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    ("claude-sonnet-4", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    ("claude-haiku-4-5", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    ("claude-3-7-sonnet", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    ("claude-3-5-haiku", 200_000, 0.75, 3, Encoding::O200kBase, Format::Anthropic),
    // OpenAI.
    ("gpt-5", 272_000, 0.75, 3, Encoding::O200kBase, Format::OpenAi),
    ("gpt-5-mini", 272_000, 0.75, 3, Encoding::O200kBase, Format::OpenAi),
    ("gpt-5-nano", 272_000, 0.75, 3, Encoding::O200kBase, Format::OpenAi),
    ("gpt-4.1", 1_047_576, 0.70, 5, Encoding::O200kBase, Format::OpenAi),
    ("gpt-4.1-mini", 1_047_576, 0.70, 5, Encoding::O200kBase, Format::OpenAi),
    ("gpt-4.1-nano", 1_047_576, 0.70, 5, Encoding::O200kBase, Format::OpenAi),
    ("gpt-4o", 128_000, 0.75, 3, Encoding::O200kBase, Format::OpenAi),
    ("gpt-4o-mini", 128_000, 0.75, 3, Encoding::O200kBase, Format::OpenAi),
    ("o3", 200_000, 0.75, 3, Encoding::O200kBase, Format::OpenAi),
    ("o4-mini", 200_000, 0.75, 3, Encoding::O200kBase, Format::OpenAi),
    ("o1", 200_000, 0.75, 3, Encoding::O200kBase, Format::OpenAi),
    ("gpt-4-turbo", 128_000, 0.75, 3, Encoding::Cl100kBase, Format::OpenAi),
    ("gpt-4", 8_192, 0.75, 3, Encoding::Cl100kBase, Format::OpenAi),
    ("gpt-3.5-turbo", 16_385, 0.75, 3, Encoding::Cl100kBase, Format::OpenAi),
];

/// The names of the built-in profiles.
pub fn builtin_names() -> Vec<&'static str> {
    BUILTINS.iter().map(|b| b.0).collect()
}

/// The built-in profile for a model name: exact, else the longest built-in name the model name
/// starts with followed by `-` (so `gpt-4o-2024-08-06` is `gpt-4o`, and `gpt-4o` is not `gpt-4`).
pub fn builtin(model: &str) -> Option<Profile> {
    let model = model.trim().to_ascii_lowercase();
    let found = BUILTINS
        .iter()
        .filter(|b| {
            model == b.0 || model.strip_prefix(b.0).is_some_and(|rest| rest.starts_with('-') || rest.starts_with('@'))
        })
        .max_by_key(|b| b.0.len())?;
    let (name, window, trigger, steps, encoding, format) = *found;
    Some(Profile {
        name: name.to_string(),
        context_window: window,
        trigger_fraction: trigger,
        target_fraction: None,
        keep_recent_steps: steps,
        encoding,
        format: Some(format),
    })
}

/// A built-in by model name, or a `NotFound` error that lists them.
pub fn resolve(model: &str) -> Result<Profile> {
    builtin(model).ok_or_else(|| {
        Error::not_found(format!("no built-in profile for model {model:?}; built-ins: {}", builtin_names().join(", ")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seed_004_agents() {
        let init = resolve("init").unwrap();
        assert_eq!((init.context_window, init.trigger_tokens(), init.keep_recent_steps), (200_000, 150_000, 3));
        let execute = resolve("execute").unwrap();
        assert_eq!(
            (execute.context_window, execute.trigger_tokens(), execute.keep_recent_steps),
            (1_000_000, 700_000, 5)
        );
        let options = init.to_options().unwrap();
        let summary = options.summary.as_ref().unwrap();
        assert_eq!((summary.trigger(Some(150_000)), summary.target(Some(150_000))), (150_000, 150_000));
        assert_eq!(options.budget.as_ref().unwrap().max_tokens(), 150_000);
        assert!(options.thin);
    }

    #[test]
    fn model_names_match_by_prefix() {
        assert_eq!(builtin("gpt-4o-2024-08-06").unwrap().name, "gpt-4o");
        assert_eq!(builtin("gpt-4o-mini-2024-07-18").unwrap().name, "gpt-4o-mini");
        assert_eq!(builtin("gpt-4-0613").unwrap().name, "gpt-4");
        assert_eq!(builtin("claude-sonnet-4-5-20250929").unwrap().name, "claude-sonnet-4-5");
        assert_eq!(builtin("claude-sonnet-4-20250514").unwrap().name, "claude-sonnet-4");
        assert!(builtin("llama-3").is_none());
        assert_eq!(resolve("llama-3").unwrap_err().kind, crate::ErrorKind::NotFound);
    }

    #[test]
    fn user_profiles_are_validated() {
        let ok = json!({"name": "mine", "contextWindow": 32000, "triggerFraction": 0.8, "keepRecentSteps": 4, "encoding": "cl100k_base"});
        assert_eq!(Profile::from_value(ok.clone()).unwrap().trigger_tokens(), 25_600);
        let mut bad = ok.clone();
        bad["encoding"] = json!("p50k_base");
        let error = Profile::from_value(bad).unwrap_err();
        assert_eq!(error.kind, crate::ErrorKind::InvalidArgument);
        assert!(error.message.contains("p50k_base"), "{error}");
        let mut bad = ok.clone();
        bad["triggerFraction"] = json!(1.5);
        assert!(Profile::from_value(bad).unwrap_err().message.contains("triggerFraction"));
        let mut bad = ok;
        bad["extra"] = json!(1);
        assert!(Profile::from_value(bad).is_err());
    }
}
