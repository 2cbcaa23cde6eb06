/**
 * What each model call of a replay costs in input, as the provider's prompt cache bills it, and
 * what the same calls would cost sending the whole uncompacted history every time.
 *
 * The compacted side is the receipt's own estimate (`receipt.cost`), made with the pricing the
 * demo builds with (`PRICING`). The uncompacted side has no receipt (nothing builds it), so
 * `priced` applies the same pricing by the same rules: Anthropic reads back what the previous
 * request's last breakpoint covered and writes the rest; OpenAI reads the shared prefix in
 * 128-token steps and bills no write; neither caches below the minimum length.
 */
import type { CostEstimate, Format, PricingOptions, Receipt } from "context-compactor/lite";

/**
 * The pricing of every build and of the uncompacted calls beside them, in uncached-input-token
 * units: a cache read 0.1× (Anthropic's, and OpenAI's newest models'), a five-minute write 1.25×
 * (Anthropic; OpenAI bills none), nothing cached below 1,024 tokens. The provider whose cache
 * rules apply is the one the context's format is for: the model is named for it, since the
 * package would otherwise take the profile's name (the demo's "budget 3000") for the model.
 */
export function pricingFor(format: Format): PricingOptions & { read: number; write5m: number; minTokens: number } {
  const anthropic = format === "anthropic";
  return { model: anthropic ? "claude-sonnet-4" : "gpt-4o", read: 0.1, write5m: anthropic ? 1.25 : 1, minTokens: 1024 };
}

/** OpenAI caches prefixes in steps of this many tokens. */
const OPENAI_CACHE_STEP = 128;

/** One step of the replay (one model call): the compacted context and the whole history beside it. */
export interface StepCost {
  /** The replay's step (1-based; live chat calls carry the step under way). */
  step: number;
  /** Tokens of the request's input, in the units its cost is in (for Claude, billed tokens). */
  input: number;
  cost: CostEstimate;
  /** The build was a compaction event, and why. */
  event?: string;
  /** The whole history as one prompt, in the same units: what a call without compaction sends. */
  uncompactedInput: number;
  uncompactedCost: CostEstimate;
  /** The whole history was scaled to Claude's billed tokens by the context's ratio: an estimate. */
  uncompactedScaled?: boolean;
  /** Where the context is compacted (`receipt.budget`), for the chart's lines. */
  triggerTokens?: number;
  lowWaterTokens?: number;
}

/**
 * A request of `total` tokens whose first `shared` are the previous request's, priced with
 * `pricingFor(format)`: Anthropic with a breakpoint at the end of every request, OpenAI automatic.
 */
export function priced(total: number, shared: number, format: Format): CostEstimate {
  const { read, write5m, minTokens } = pricingFor(format);
  let cachedTokens = 0;
  let writtenTokens = 0;
  if (format === "anthropic") {
    cachedTokens = shared >= minTokens ? Math.min(shared, total) : 0;
    writtenTokens = total >= minTokens ? total - cachedTokens : 0;
  } else if (shared >= minTokens && total >= minTokens) {
    cachedTokens = Math.min(Math.floor(shared / OPENAI_CACHE_STEP) * OPENAI_CACHE_STEP, total);
  }
  const uncachedTokens = total - cachedTokens - writtenTokens;
  return { cachedTokens, writtenTokens, uncachedTokens, units: cachedTokens * read + writtenTokens * write5m + uncachedTokens };
}

/** What a build's result carries that the figures come from. */
interface Built {
  receipt: Receipt;
  tokens: { total: number; system: number; state: number; summary: number; recent: number; request: number };
}

/** Tokens after the messages (the reply priming): not part of the prefix the next call can reuse. */
const primingOf = (tokens: Built["tokens"]) =>
  Math.max(0, tokens.total - tokens.system - tokens.state - tokens.summary - tokens.recent - tokens.request);

/**
 * The step's figures. `previous` is the step before it in the same session (none: the first
 * call, nothing cached yet). The uncompacted history only grows, so each call's shared prefix
 * is the previous call's whole history less its reply priming. A Claude budget is in billed
 * tokens: the whole history is scaled to them by the context's own billed-to-counted ratio
 * (an estimate, as Claude's count of the context is).
 */
export function stepCost(step: number, { receipt, tokens }: Built, format: Format, previous?: StepCost): StepCost {
  const billed = receipt.budget?.billedTokens;
  const scale = billed !== undefined && tokens.total > 0 ? billed / tokens.total : 1;
  const cost = receipt.cost ?? priced(billed ?? tokens.total, Math.round((receipt.cache?.prefixTokens ?? 0) * scale), format);
  const uncompactedInput = Math.round(receipt.tokensBefore * scale);
  const shared = previous ? previous.uncompactedInput - Math.round(primingOf(tokens) * scale) : 0;
  return {
    step,
    input: cost.cachedTokens + cost.writtenTokens + cost.uncachedTokens,
    cost,
    ...(receipt.cache?.event ? { event: receipt.cache.reason ?? "event" } : {}),
    uncompactedInput,
    uncompactedCost: priced(uncompactedInput, shared, format),
    ...(scale !== 1 ? { uncompactedScaled: true } : {}),
    ...(receipt.budget ? { triggerTokens: receipt.budget.triggerTokens, lowWaterTokens: receipt.budget.lowWaterTokens } : {}),
  };
}

export interface SessionCost {
  calls: number;
  units: number;
  uncompactedUnits: number;
  inputTokens: number;
  cachedTokens: number;
}

export function sessionCost(steps: readonly StepCost[]): SessionCost {
  const total: SessionCost = { calls: steps.length, units: 0, uncompactedUnits: 0, inputTokens: 0, cachedTokens: 0 };
  for (const s of steps) {
    total.units += s.cost.units;
    total.uncompactedUnits += s.uncompactedCost.units;
    total.inputTokens += s.input;
    total.cachedTokens += s.cost.cachedTokens;
  }
  return total;
}
