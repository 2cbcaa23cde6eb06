//! Calibration against the usage a provider reports.
//!
//! Claude's tokenizer is not public: counting Anthropic messages by Claude's rule still misses
//! by a margin that depends on the content. So each time a provider reports what a request cost
//! (`input_tokens` plus cache reads and writes; OpenAI's `prompt_tokens`) and the package counted
//! that whole request (its system prompt and tools too), the ratio of the two is kept, per model,
//! over the last few requests. The factor is their median; the band their range, widened by 2%.
//! Budgets use the top of the band, so that what the provider bills stays within them; before
//! any usage, counts are estimates. A ratio against a count of the messages alone would learn the
//! size of what the count left out, as a factor on everything: it is never recorded
//! (`Compactor::record_usage` anchors such a bill instead, see `anchor`).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};
use crate::message::json::type_name;

/// Observations kept per model: recent enough to follow a change of tokenizer or prompt.
pub const DEFAULT_WINDOW: usize = 20;
/// The observed range of ratios, widened by this much on each side.
pub const BAND_MARGIN: f64 = 0.02;

/// The lowest billed/counted ratio taken as one request's. A provider bills at least what the
/// messages hold (our Claude estimate can be high by a few tens of percent), so a usage below a
/// quarter of the count is another request's, and recording it would scale every later budget up
/// by that factor.
pub const LOWEST_PLAUSIBLE_RATIO: f64 = 0.25;

/// The highest billed/counted ratio learnt as a factor. Claude's estimate misses its bill by at
/// most a few tens of percent, and OpenAI's counts are exact; a bill above twice the count holds
/// parts the count did not see (a `response_format` schema, tools not passed), an amount added
/// to the request, not a scale: learnt as a factor it shrank a small history's next budget 40×.
pub const HIGHEST_PLAUSIBLE_RATIO: f64 = 2.0;

/// What a provider reported for one request, and the model it names (if it was given the whole
/// response).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReportedUsage {
    /// The billed size of the prompt: Anthropic's `input_tokens + cache_creation_input_tokens +
    /// cache_read_input_tokens`, OpenAI's `prompt_tokens` or `input_tokens` (cached included).
    pub prompt: u64,
    /// Of `prompt`, the tokens billed at the full input price (neither read from nor written to
    /// the cache).
    pub uncached: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    /// The response's tokens (`output_tokens`, `completion_tokens`), when reported.
    pub output: Option<u64>,
    /// Of `output`, the reasoning tokens OpenAI reports (`reasoning_tokens` in the details).
    pub reasoning: u64,
    pub provider: UsageShape,
    pub model: Option<String>,
}

/// Whose usage object it is, by its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UsageShape {
    /// `input_tokens` with `cache_creation_input_tokens` / `cache_read_input_tokens`.
    Anthropic,
    /// Chat Completions' `prompt_tokens`, or the Responses API's `input_tokens` with `input_tokens_details`.
    OpenAi,
}

impl ReportedUsage {
    /// Reads a usage object or a whole response (`{model, usage}`): OpenAI Chat Completions'
    /// `prompt_tokens` (cached tokens included), the Responses API's `input_tokens`, Anthropic's
    /// `input_tokens + cache_creation_input_tokens + cache_read_input_tokens`.
    pub fn read(value: &Value) -> Result<ReportedUsage> {
        let (usage, model) = match value.get("usage") {
            Some(usage) => (usage, value.get("model").and_then(Value::as_str).map(str::to_string)),
            None => (value, None),
        };
        if !usage.is_object() {
            return Err(Error::invalid_argument(format!("usage must be an object, got {}", type_name(usage))));
        }
        let number = |value: Option<&Value>, key: &str| -> Result<Option<u64>> {
            match value {
                None | Some(Value::Null) => Ok(None),
                Some(Value::Number(n)) => n.as_u64().map(Some).ok_or_else(|| {
                    Error::invalid_argument(format!("usage.{key} must be a whole number of tokens, got {n}"))
                }),
                Some(other) => {
                    Err(Error::invalid_argument(format!("usage.{key} must be a number, got {}", type_name(other))))
                }
            }
        };
        let field = |key: &str| number(usage.get(key), key);
        let cached = |details: &str| number(usage.get(details).and_then(|d| d.get("cached_tokens")), details);
        let reasoning = |details: &str| {
            number(usage.get(details).and_then(|d| d.get("reasoning_tokens")), details).map(Option::unwrap_or_default)
        };
        if let Some(prompt) = field("prompt_tokens")? {
            let cache_read = cached("prompt_tokens_details")?.unwrap_or(0).min(prompt);
            return Ok(ReportedUsage {
                prompt,
                uncached: prompt - cache_read,
                cache_read,
                cache_write: 0,
                output: field("completion_tokens")?,
                reasoning: reasoning("completion_tokens_details")?,
                provider: UsageShape::OpenAi,
                model,
            });
        }
        let Some(input) = field("input_tokens")? else {
            return Err(Error::invalid_argument(
                "usage has neither `prompt_tokens` (OpenAI) nor `input_tokens` (Anthropic, OpenAI Responses)",
            ));
        };
        let output = field("output_tokens")?;
        if usage.get("input_tokens_details").is_some() || usage.get("output_tokens_details").is_some() {
            let cache_read = cached("input_tokens_details")?.unwrap_or(0).min(input);
            return Ok(ReportedUsage {
                prompt: input,
                uncached: input - cache_read,
                cache_read,
                cache_write: 0,
                output,
                reasoning: reasoning("output_tokens_details")?,
                provider: UsageShape::OpenAi,
                model,
            });
        }
        let cache_write = field("cache_creation_input_tokens")?.unwrap_or(0);
        let cache_read = field("cache_read_input_tokens")?.unwrap_or(0);
        Ok(ReportedUsage {
            prompt: input.saturating_add(cache_write).saturating_add(cache_read),
            uncached: input,
            cache_read,
            cache_write,
            output,
            reasoning: 0,
            provider: UsageShape::Anthropic,
            model,
        })
    }
}

/// One request: what we counted for it and what the provider reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Observation {
    pub counted: u64,
    pub reported: u64,
}

impl Observation {
    pub(crate) fn ratio(self) -> f64 {
        self.reported as f64 / self.counted as f64
    }

    /// The tokens billed beyond the count, when the bill is too far above it to be a counting
    /// error (`HIGHEST_PLAUSIBLE_RATIO`): such a bill is reported, not learnt.
    pub fn unseen_tokens(self) -> Option<u64> {
        (self.counted > 0 && self.ratio() > HIGHEST_PLAUSIBLE_RATIO).then(|| self.reported - self.counted)
    }
}

/// A model's calibration: `factor` turns our count into the provider's, `low`..`high` is the
/// band the observed requests fell in (widened by `BAND_MARGIN`).
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "CalibrationFactor"))]
pub struct Factor {
    pub model: String,
    pub factor: f64,
    pub low: f64,
    pub high: f64,
    pub observations: usize,
}

impl Factor {
    /// What the provider will likely bill for `counted` tokens.
    pub fn calibrated(&self, counted: usize) -> usize {
        (counted as f64 * self.factor).round() as usize
    }

    /// The most it should bill for `counted` tokens: the count a budget must hold.
    pub fn upper(&self, counted: usize) -> usize {
        (counted as f64 * self.high).ceil() as usize
    }

    /// How many of our tokens fit a budget of `budget` billed tokens.
    pub fn counted_budget(&self, budget: usize) -> usize {
        (budget as f64 / self.high).floor() as usize
    }

    /// `counted` tokens as the provider will likely bill them, and at most.
    pub fn apply(&self, counted: usize) -> Calibrated {
        Calibrated { factor: self.clone(), counted, tokens: self.calibrated(counted), upper: self.upper(counted) }
    }

    fn from_window(model: &str, window: &VecDeque<Observation>) -> Option<Factor> {
        let mut ratios: Vec<f64> = window.iter().map(|o| o.ratio()).collect();
        crate::util::sort::sort_by(&mut ratios, f64::total_cmp);
        let (first, last) = (*ratios.first()?, *ratios.last()?);
        // `ratios` is not empty (`first` above), so `mid` and, for an even length, `mid - 1` index it.
        let mid = ratios.len() / 2;
        let factor = if ratios.len() % 2 == 1 { ratios[mid] } else { (ratios[mid - 1] + ratios[mid]) / 2.0 };
        Some(Factor {
            model: model.to_string(),
            factor,
            low: first * (1.0 - BAND_MARGIN),
            high: last * (1.0 + BAND_MARGIN),
            observations: ratios.len(),
        })
    }
}

/// A count with its calibration: `tokens` is what the provider will likely bill for `counted`,
/// `upper` the most it should.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "CalibratedCount"))]
pub struct Calibrated {
    #[serde(flatten)]
    pub factor: Factor,
    pub counted: usize,
    pub tokens: usize,
    pub upper: usize,
}

/// Recent observations per model.
#[derive(Clone, Debug)]
pub struct Calibration {
    window: usize,
    models: Vec<(String, VecDeque<Observation>)>,
    /// The model usage was last recorded for: the one budgets use unless told otherwise.
    latest: Option<usize>,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration::new(DEFAULT_WINDOW)
    }
}

impl Calibration {
    pub fn new(window: usize) -> Self {
        Calibration { window: window.max(1), models: Vec::new(), latest: None }
    }

    /// Records that a request we counted as `counted` tokens was billed `reported` input tokens.
    pub fn record(&mut self, model: &str, counted: usize, reported: u64) -> Result<Factor> {
        if model.is_empty() {
            return Err(Error::invalid_argument("usage must name its model (pass `model`, or the whole response)"));
        }
        if counted == 0 {
            return Err(Error::invalid_argument(
                "nothing was counted for this request: a calibration needs the tokens counted for it",
            ));
        }
        if reported == 0 {
            return Err(Error::invalid_argument("the usage reports no input tokens"));
        }
        let ratio = Observation { counted: counted as u64, reported }.ratio();
        if ratio < LOWEST_PLAUSIBLE_RATIO {
            return Err(Error::invalid_argument(format!(
                "the usage reports {reported} input tokens for a request counted at {counted} (×{ratio:.3}): \
                 a provider bills at least what it was sent, so that is another request's usage"
            )));
        }
        let slot = match self.models.iter().position(|(m, _)| m == model) {
            Some(slot) => slot,
            None => {
                self.models.push((model.to_string(), VecDeque::new()));
                self.models.len() - 1
            }
        };
        // `slot` was just found or pushed.
        let window = &mut self.models[slot].1;
        if window.len() == self.window {
            window.pop_front();
        }
        window.push_back(Observation { counted: counted as u64, reported });
        self.latest = Some(slot);
        Factor::from_window(model, window)
            .ok_or_else(|| Error::internal("a calibration window was empty after a record"))
    }

    /// The calibration of `model`, once usage was recorded for it.
    pub fn factor(&self, model: &str) -> Option<Factor> {
        self.models.iter().find(|(m, _)| m == model).and_then(|(m, window)| Factor::from_window(m, window))
    }

    /// The calibration of the model usage was last recorded for.
    pub fn latest(&self) -> Option<Factor> {
        let (model, window) = self.models.get(self.latest?)?;
        Factor::from_window(model, window)
    }

    pub fn observations(&self, model: &str) -> Vec<Observation> {
        self.models.iter().find(|(m, _)| m == model).map(|(_, w)| w.iter().copied().collect()).unwrap_or_default()
    }

    /// No usage recorded yet.
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// What storage keeps: every model's observations, and which one budgets use.
    pub fn state(&self) -> CalibrationState {
        CalibrationState {
            window: self.window,
            models: self
                .models
                .iter()
                .map(|(model, window)| ModelObservations {
                    model: model.clone(),
                    observations: window.iter().map(|o| [o.counted, o.reported]).collect(),
                })
                .collect(),
            latest: self.latest.and_then(|slot| self.models.get(slot)).map(|(model, _)| model.clone()),
        }
    }

    /// A calibration from its stored state, checked as `record` checks what it is given.
    pub fn from_state(state: CalibrationState) -> Result<Calibration> {
        let mut calibration = Calibration::new(state.window);
        for ModelObservations { model, observations } in state.models {
            if observations.is_empty() || observations.len() > calibration.window {
                return Err(Error::invalid_argument(format!(
                    "the calibration of {model:?} holds {} observations, expected 1 to {}",
                    observations.len(),
                    calibration.window
                )));
            }
            if calibration.models.iter().any(|(m, _)| *m == model) {
                return Err(Error::invalid_argument(format!("the calibration names {model:?} twice")));
            }
            for [counted, reported] in observations {
                calibration.record(&model, counted as usize, reported)?;
            }
        }
        calibration.latest = match state.latest {
            Some(model) => Some(calibration.models.iter().position(|(m, _)| *m == model).ok_or_else(|| {
                Error::invalid_argument(format!("the calibration's latest model {model:?} has no observations"))
            })?),
            None => None,
        };
        Ok(calibration)
    }
}

/// A calibration as stored: per model, `[counted, reported]` pairs, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CalibrationState {
    pub window: usize,
    pub models: Vec<ModelObservations>,
    pub latest: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelObservations {
    pub model: String,
    pub observations: Vec<[u64; 2]>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn usage_is_read_from_every_provider_shape() {
        let anthropic = json!({"input_tokens": 3, "cache_creation_input_tokens": 13835, "cache_read_input_tokens": 11515, "output_tokens": 13});
        assert_eq!(
            ReportedUsage::read(&anthropic).unwrap(),
            ReportedUsage {
                prompt: 25353,
                uncached: 3,
                cache_read: 11515,
                cache_write: 13835,
                output: Some(13),
                reasoning: 0,
                provider: UsageShape::Anthropic,
                model: None
            }
        );
        let chat = json!({"model": "gpt-4o-2024-08-06", "usage": {"prompt_tokens": 101, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 64}}});
        assert_eq!(
            ReportedUsage::read(&chat).unwrap(),
            ReportedUsage {
                prompt: 101,
                uncached: 37,
                cache_read: 64,
                cache_write: 0,
                output: Some(5),
                reasoning: 0,
                provider: UsageShape::OpenAi,
                model: Some("gpt-4o-2024-08-06".into())
            }
        );
        let responses = json!({"input_tokens": 86, "input_tokens_details": {"cached_tokens": 64}, "output_tokens": 25,
            "output_tokens_details": {"reasoning_tokens": 16}});
        let read = ReportedUsage::read(&responses).unwrap();
        assert_eq!(
            (read.prompt, read.cache_read, read.output, read.reasoning, read.provider),
            (86, 64, Some(25), 16, UsageShape::OpenAi)
        );
        for (bad, says) in [
            (json!("x"), "must be an object"),
            (json!({"output_tokens": 3}), "neither"),
            (json!({"prompt_tokens": -1}), "whole number"),
            (json!({"input_tokens": "12"}), "must be a number"),
            (json!({"input_tokens": 1.5}), "whole number"),
            (json!({"prompt_tokens": 5, "prompt_tokens_details": {"cached_tokens": "x"}}), "prompt_tokens_details"),
        ] {
            let error = ReportedUsage::read(&bad).unwrap_err();
            assert!(error.message.contains(says), "{error}");
        }
    }

    #[test]
    fn a_usage_far_from_the_count_is_refused_and_changes_nothing() {
        let mut calibration = Calibration::new(5);
        calibration.record("gpt-4o", 1000, 1010).unwrap();
        for reported in [1, 100, 249] {
            let error = calibration.record("gpt-4o", 1000, reported).unwrap_err();
            assert!(error.message.contains("another request's usage"), "{error}");
        }
        let factor = calibration.latest().unwrap();
        assert_eq!((factor.factor, factor.observations), (1.01, 1));
        calibration.record("gpt-4o", 1000, 250).unwrap();
        // Far above is learnt: a whole request counted by the "estimate" encoding can be (text
        // in scripts it splits finely); counts of part of a request never get here.
        calibration.record("gpt-4o", 8, 36).unwrap();
    }

    #[test]
    fn the_factor_is_the_median_ratio_and_the_band_its_range() {
        let mut calibration = Calibration::new(5);
        let first = calibration.record("claude", 100, 120).unwrap();
        assert_eq!((first.factor, first.observations), (1.2, 1));
        assert!((first.low - 1.2 * 0.98).abs() < 1e-12 && (first.high - 1.2 * 1.02).abs() < 1e-12);
        calibration.record("claude", 200, 220).unwrap();
        let third = calibration.record("claude", 100, 150).unwrap();
        assert_eq!(third.factor, 1.2);
        assert!((third.high - 1.5 * 1.02).abs() < 1e-12);
        assert_eq!(third.upper(1000), 1530);
        assert_eq!(third.calibrated(1000), 1200);
        assert_eq!(third.counted_budget(1530), 1000);
        // Only the last five requests count.
        for _ in 0..5 {
            calibration.record("claude", 100, 100).unwrap();
        }
        assert_eq!(calibration.factor("claude").map(|f| (f.factor, f.observations)), Some((1.0, 5)));
        assert_eq!(calibration.observations("claude").len(), 5);
    }

    #[test]
    fn models_are_kept_apart_and_the_latest_is_remembered() {
        let mut calibration = Calibration::default();
        assert!(calibration.latest().is_none());
        calibration.record("a", 10, 20).unwrap();
        calibration.record("b", 10, 5).unwrap();
        assert_eq!(calibration.factor("a").map(|f| f.factor), Some(2.0));
        assert_eq!(calibration.latest().map(|f| f.model), Some("b".to_string()));
        assert!(calibration.factor("c").is_none());
        assert!(calibration.record("", 1, 1).is_err());
        assert!(calibration.record("a", 0, 1).is_err());
        assert!(calibration.record("a", 1, 0).is_err());
        assert_eq!(calibration.observations("a").len(), 1, "refused records change nothing");
    }

    #[test]
    fn a_calibration_round_trips_through_its_state_and_bad_states_are_refused() {
        let mut calibration = Calibration::new(3);
        for (model, counted, reported) in [("a", 10, 12), ("b", 100, 90), ("a", 10, 13), ("a", 10, 11), ("a", 10, 14)] {
            calibration.record(model, counted, reported).unwrap();
        }
        let state = calibration.state();
        assert_eq!(state.models[0].observations, [[10, 13], [10, 11], [10, 14]]);
        assert_eq!(state.latest.as_deref(), Some("a"));
        let restored = Calibration::from_state(state.clone()).unwrap();
        assert_eq!(restored.state(), state);
        assert_eq!(restored.latest(), calibration.latest());
        assert_eq!(restored.factor("b"), calibration.factor("b"));
        for (edit, says) in [
            (
                &(|s: &mut CalibrationState| s.models[0].observations.push([1, 1])) as &dyn Fn(&mut CalibrationState),
                "expected 1 to 3",
            ),
            (&|s| s.models[1].model = "a".into(), "twice"),
            (&|s| s.latest = Some("c".into()), "no observations"),
            (&|s| s.models[0].observations[0] = [0, 5], "nothing was counted"),
        ] {
            let mut bad = state.clone();
            edit(&mut bad);
            let error = Calibration::from_state(bad).unwrap_err();
            assert!(error.message.contains(says), "{error}");
        }
    }

    #[test]
    fn every_recorded_request_fits_under_the_top_of_the_band() {
        let mut calibration = Calibration::default();
        let observed = [(1000, 1180), (5000, 6100), (200, 265), (12_000, 14_300), (800, 930)];
        for (counted, reported) in observed {
            calibration.record("m", counted, reported).unwrap();
        }
        let factor = calibration.latest().unwrap();
        for (counted, reported) in observed {
            assert!(factor.upper(counted) as u64 >= reported, "{counted} -> {reported}: {}", factor.upper(counted));
            assert!((factor.low * counted as f64) <= reported as f64);
        }
    }
}
