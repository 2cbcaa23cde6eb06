/**
 * What each model call of a replay costs in input, as the provider's prompt cache bills it, and
 * what the same calls would cost sending the whole uncompacted history every time.
 *
 * Costs are in units of one uncached input token: a cache read bills 0.1× (Anthropic, and
 * OpenAI's newer models), an Anthropic cache write 1.25× (a 5-minute entry; OpenAI writes at
 * the base price). The compacted side is the receipt's own figure when the package reports one
 * (`receipt.cost`); until then `callCost` derives it from `receipt.cache.prefixTokens` with the
 * same multipliers. The uncompacted side has no receipt (nothing builds it), so it is priced here.
 */
import type { Format, Receipt, TokensByPart } from "context-compactor/lite";

export const CACHE_READ = 0.1;
export const ANTHROPIC_CACHE_WRITE = 1.25;

/** One call's input as the provider bills it. */
export interface CallCost {
  /** Input tokens read from the cache (the prefix identical to the previous call's). */
  cachedTokens: number;
  /** Input tokens written to the cache (Anthropic: what follows the cached prefix, up to the last breakpoint). */
  writtenTokens: number;
  /** Input tokens billed at the base price. */
  uncachedTokens: number;
  /** The call's input cost in uncached-input-token units. */
  units: number;
}

/** One step of the replay (one model call): the compacted context and the whole history beside it. */
export interface StepCost {
  /** The replay's step (1-based; live chat calls carry the step under way). */
  step: number;
  /** Tokens of the context sent. */
  input: number;
  cost: CallCost;
  /** The build was a compaction event, and why. */
  event?: string;
  /** Tokens of the whole history as one prompt: what a call without compaction sends. */
  uncompactedInput: number;
  uncompactedCost: CallCost;
  /** Where the context is compacted (`receipt.budget`), for the chart's lines. */
  triggerTokens?: number;
  lowWaterTokens?: number;
}

/** `cached` tokens read, the rest of `input` written (Anthropic's breakpoint on the last message) or sent uncached. */
export function priced(input: number, cached: number, format: Format): CallCost {
  const cachedTokens = Math.max(0, Math.min(cached, input));
  const rest = input - cachedTokens;
  const writtenTokens = format === "anthropic" ? rest : 0;
  const uncachedTokens = rest - writtenTokens;
  return { cachedTokens, writtenTokens, uncachedTokens, units: cachedTokens * CACHE_READ + writtenTokens * ANTHROPIC_CACHE_WRITE + uncachedTokens };
}

/** The receipt's cost, once the package reports one (it prices with the profile's own cache rules). */
type WithCost = Receipt & { cost?: CallCost | null };

/** The call's cost: the receipt's, else priced from the prefix the receipt says is unchanged. */
export function callCost(receipt: Receipt, tokens: TokensByPart, format: Format): CallCost {
  const reported = (receipt as WithCost).cost;
  if (reported) return reported;
  return priced(tokens.total, receipt.cache?.prefixTokens ?? 0, format);
}

/** Tokens after the messages (the reply priming): not part of the prefix the next call can reuse. */
export const primingOf = (tokens: TokensByPart) =>
  Math.max(0, tokens.total - tokens.system - tokens.state - tokens.summary - tokens.recent - tokens.request);

/**
 * The step's figures. `previous` is the step before it in the same session (none: the first
 * call, nothing cached yet). The uncompacted history only grows, so each call's prefix is the
 * previous call's whole history less its reply priming.
 */
export function stepCost(step: number, receipt: Receipt, tokens: TokensByPart, format: Format, previous?: StepCost): StepCost {
  const uncompactedInput = receipt.tokensBefore;
  const reusable = previous ? previous.uncompactedInput - primingOf(tokens) : 0;
  return {
    step,
    input: tokens.total,
    cost: callCost(receipt, tokens, format),
    ...(receipt.cache?.event ? { event: receipt.cache.reason ?? "event" } : {}),
    uncompactedInput,
    uncompactedCost: priced(uncompactedInput, reusable, format),
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
