//! What a request is expected to cost with the provider's prompt cache: the tokens read back from
//! the cache, written to it, and sent uncached, priced by the provider's multipliers.
//!
//! Anthropic reads a prefix only at a breakpoint an earlier request wrote (so a build remembers
//! where its breakpoints ended) and only with `cache_control` hints; OpenAI caches every prompt
//! of 1,024 tokens or more by itself, in 128-token steps of the exact prefix, and bills no
//! writes. Under the provider's minimum nothing is cached.

use serde::{Deserialize, Serialize};

use super::request::hints::CacheTtl;
use crate::error::{Error, Result};
use crate::message::Format;

/// `build({ pricing })`: the input pricing a receipt's `cost` uses. Every field is optional: what
/// is left out is the provider's published pricing for the model (`model`, else the request's
/// model, else the profile's; without one, the format's provider).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(rename = "PricingOptions", optional_fields))]
pub struct PricingOptions {
    /// The model whose pricing applies (e.g. `"claude-sonnet-4-5"`, `"gpt-4o"`).
    pub model: Option<String>,
    /// A cache read, as a multiple of the input price (Anthropic 0.1; OpenAI 0.1 to 0.5 by model).
    pub read: Option<f64>,
    /// A five-minute cache write (Anthropic 1.25; OpenAI bills none: 1).
    #[serde(rename = "write5m")]
    pub write_5m: Option<f64>,
    /// A one-hour cache write (Anthropic 2).
    #[serde(rename = "write1h")]
    pub write_1h: Option<f64>,
    /// The shortest prefix the provider caches (1,024 to 4,096 tokens by model).
    pub min_tokens: Option<u32>,
    /// Dollars per million uncached input tokens: with it, `receipt.cost.price` is in dollars.
    pub input_price: Option<f64>,
}

impl PricingOptions {
    pub fn validate(&self) -> Result<()> {
        for (name, value) in [
            ("read", self.read),
            ("write5m", self.write_5m),
            ("write1h", self.write_1h),
            ("inputPrice", self.input_price),
        ] {
            if let Some(value) = value {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(Error::invalid_argument(format!(
                        "pricing.{name} must be a finite number of at least 0, got {value}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Fields given here win; the rest are `fallback`'s.
    pub(crate) fn or(self, fallback: &PricingOptions) -> PricingOptions {
        PricingOptions {
            model: self.model.or_else(|| fallback.model.clone()),
            read: self.read.or(fallback.read),
            write_5m: self.write_5m.or(fallback.write_5m),
            write_1h: self.write_1h.or(fallback.write_1h),
            min_tokens: self.min_tokens.or(fallback.min_tokens),
            input_price: self.input_price.or(fallback.input_price),
        }
    }
}

/// Which provider's cache rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CacheRules {
    /// Read at breakpoints an earlier request wrote; writes billed.
    Breakpoints,
    /// Every prefix of the minimum or more, in 128-token steps; no write billed.
    Automatic,
}

/// The pricing in force: the options' fields over the provider's published figures.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Pricing {
    pub(crate) rules: CacheRules,
    read: f64,
    write_5m: f64,
    write_1h: f64,
    min_tokens: usize,
    input_price: Option<f64>,
}

impl Pricing {
    /// `model`: the options' model, else the request's, else none.
    pub(crate) fn resolve(options: &PricingOptions, format: Format, model: Option<&str>) -> Pricing {
        let model = options.model.as_deref().or(model).map(str::to_ascii_lowercase);
        // A model of another name (a profile of one's own) goes by the format's provider.
        let openai = ["gpt-", "o1", "o3", "o4", "chatgpt", "codex"];
        let claude = match &model {
            Some(model) if model.starts_with("claude") => true,
            Some(model) if openai.iter().any(|p| model.starts_with(p)) => false,
            _ => format == Format::Anthropic,
        };
        let published = if claude {
            let min_tokens = match model.as_deref() {
                Some(m)
                    if ["claude-opus-4-5", "claude-opus-4-6", "claude-haiku-4-5"].iter().any(|p| m.starts_with(p)) =>
                {
                    4096
                }
                Some(m) if m.starts_with("claude-3-5-haiku") || m.starts_with("claude-3-haiku") => 2048,
                _ => 1024,
            };
            Pricing {
                rules: CacheRules::Breakpoints,
                read: 0.1,
                write_5m: 1.25,
                write_1h: 2.0,
                min_tokens,
                input_price: None,
            }
        } else {
            // OpenAI's cached-input discount by model family (the longest matching prefix).
            let read = match model.as_deref() {
                Some(m) if m.starts_with("gpt-5") => 0.1,
                Some(m) if m.starts_with("gpt-4.1") || m.starts_with("o3") || m.starts_with("o4") => 0.25,
                _ => 0.5,
            };
            Pricing {
                rules: CacheRules::Automatic,
                read,
                write_5m: 1.0,
                write_1h: 1.0,
                min_tokens: 1024,
                input_price: None,
            }
        };
        Pricing {
            rules: published.rules,
            read: options.read.unwrap_or(published.read),
            write_5m: options.write_5m.unwrap_or(published.write_5m),
            write_1h: options.write_1h.unwrap_or(published.write_1h),
            min_tokens: options.min_tokens.map_or(published.min_tokens, |n| n as usize),
            input_price: options.input_price,
        }
    }
}

/// `receipt.cost`: what this request is expected to bill for its input, with the prompt cache.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CostEstimate {
    /// Input tokens read back from the cache (the prefix the previous request shares with this
    /// one, as far as the provider caches it).
    pub cached_tokens: usize,
    /// Input tokens written to the cache (Anthropic, with hints: the rest up to the last
    /// breakpoint).
    pub written_tokens: usize,
    /// Input tokens billed at the plain input price.
    pub uncached_tokens: usize,
    /// The input's cost in uncached-input-token units: reads and writes at their multipliers.
    pub units: f64,
    /// In dollars, when `pricing.inputPrice` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub price: Option<f64>,
}

/// The figures a cost is estimated from, in the units the budget is in.
pub(crate) struct Sent {
    /// The whole request's input.
    pub(crate) total: usize,
    /// Its leading tokens identical to the previous request's.
    pub(crate) shared: usize,
    /// Where the previous request's breakpoints ended (token offsets), for `Breakpoints` rules.
    pub(crate) written_before: Vec<usize>,
    /// This request carries cache hints (`Breakpoints` rules cache nothing without them).
    pub(crate) hinted: bool,
    pub(crate) ttl: CacheTtl,
}

pub(crate) fn estimate(pricing: &Pricing, sent: &Sent) -> CostEstimate {
    let (cached, written) = match pricing.rules {
        CacheRules::Breakpoints if !sent.hinted => (0, 0),
        CacheRules::Breakpoints => {
            let read = sent.written_before.iter().copied().filter(|&end| end <= sent.shared).max().unwrap_or(0);
            let read = if read >= pricing.min_tokens { read } else { 0 };
            let written = if sent.total >= pricing.min_tokens { sent.total - read } else { 0 };
            (read, written)
        }
        CacheRules::Automatic => {
            let read = if sent.shared >= pricing.min_tokens && sent.total >= pricing.min_tokens {
                sent.shared / 128 * 128
            } else {
                0
            };
            (read.min(sent.total), 0)
        }
    };
    let uncached = sent.total - cached - written;
    let write = match sent.ttl {
        CacheTtl::FiveMinutes => pricing.write_5m,
        CacheTtl::OneHour => pricing.write_1h,
    };
    let units = cached as f64 * pricing.read + written as f64 * write + uncached as f64;
    CostEstimate {
        cached_tokens: cached,
        written_tokens: written,
        uncached_tokens: uncached,
        units,
        price: pricing.input_price.map(|price| units * price / 1_000_000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(total: usize, shared: usize, written_before: Vec<usize>) -> Sent {
        Sent { total, shared, written_before, hinted: true, ttl: CacheTtl::FiveMinutes }
    }

    #[test]
    fn anthropic_reads_only_what_an_earlier_breakpoint_wrote() {
        let pricing = Pricing::resolve(&PricingOptions::default(), Format::Anthropic, Some("claude-sonnet-4-5"));
        // The previous request ended at 5,000 and this one appends 1,000 to it.
        let cost = estimate(&pricing, &sent(6_000, 5_000, vec![1_200, 5_000]));
        assert_eq!((cost.cached_tokens, cost.written_tokens, cost.uncached_tokens), (5_000, 1_000, 0));
        assert!((cost.units - (500.0 + 1_250.0)).abs() < 1e-9);
        // An event changed the context after the system prompt: only its breakpoint is read.
        let cost = estimate(&pricing, &sent(3_000, 2_000, vec![1_200, 5_000]));
        assert_eq!((cost.cached_tokens, cost.written_tokens), (1_200, 1_800));
        // Under the model's minimum nothing is cached; without hints nothing either.
        let cost = estimate(&pricing, &sent(900, 800, vec![800]));
        assert_eq!((cost.cached_tokens, cost.written_tokens, cost.uncached_tokens), (0, 0, 900));
        let cost = estimate(&pricing, &Sent { hinted: false, ..sent(6_000, 5_000, vec![5_000]) });
        assert_eq!((cost.cached_tokens, cost.uncached_tokens), (0, 6_000));
        // A profile of one's own name goes by its format.
        let own = Pricing::resolve(&PricingOptions::default(), Format::Anthropic, Some("budget 3000"));
        assert_eq!(own.rules, CacheRules::Breakpoints);
        // A later Haiku caches from 4,096 tokens.
        let haiku = Pricing::resolve(&PricingOptions::default(), Format::Anthropic, Some("claude-haiku-4-5-20251001"));
        assert_eq!(estimate(&haiku, &sent(4_000, 3_500, vec![3_500])).cached_tokens, 0);
    }

    #[test]
    fn openai_caches_128_token_steps_of_long_prefixes_and_bills_no_writes() {
        let pricing = Pricing::resolve(&PricingOptions::default(), Format::OpenAi, Some("gpt-4o-2024-08-06"));
        let cost = estimate(&pricing, &sent(3_000, 2_000, vec![]));
        assert_eq!((cost.cached_tokens, cost.written_tokens, cost.uncached_tokens), (1_920, 0, 1_080));
        assert!((cost.units - (960.0 + 1_080.0)).abs() < 1e-9);
        let gpt5 = Pricing::resolve(&PricingOptions::default(), Format::OpenAi, Some("gpt-5-mini"));
        assert!((estimate(&gpt5, &sent(3_000, 2_000, vec![])).units - (192.0 + 1_080.0)).abs() < 1e-9);
        assert_eq!(estimate(&pricing, &sent(3_000, 1_000, vec![])).cached_tokens, 0);
    }

    #[test]
    fn given_fields_win_and_a_price_gives_dollars() {
        let options = PricingOptions { read: Some(0.2), input_price: Some(3.0), ..PricingOptions::default() };
        let pricing = Pricing::resolve(&options, Format::Anthropic, None);
        let cost = estimate(&pricing, &Sent { ttl: CacheTtl::OneHour, ..sent(2_000_000, 1_000_000, vec![1_000_000]) });
        // 1M read at 0.2, 1M written at 2.
        assert!((cost.units - 2_200_000.0).abs() < 1e-6);
        assert!((cost.price.unwrap_or_default() - 6.6).abs() < 1e-9);
        assert!(PricingOptions { read: Some(f64::NAN), ..PricingOptions::default() }.validate().is_err());
    }
}
