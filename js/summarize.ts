/**
 * Summaries from any model: `compact()` runs a build, hands a due compaction to the caller's
 * async summariser, and stores the text the core accepts; `openAICompatibleSummarizer` and
 * `anthropicSummarizer` are ready summarisers over `fetch`. A summariser that fails leaves the
 * history as it was, and the next build asks again.
 */
import { convertMessages } from "./wasm.js";
import type {
  AnthropicRequest,
  BuildOptions,
  BuildResult,
  BuildResultIn,
  ConversationHistory,
  Format,
  OpenAIMessage,
  SummaryRequest,
  TurnSummaryRequest,
} from "./wasm.js";
import { ContextCompactorError, InvalidArgumentError, SummarizerError, describe } from "./errors.js";

/** What a summariser is handed beside the request. */
export interface SummarizeCallOptions {
  /** Aborted when the caller stops waiting (`summaryTimeoutMs`): stop the request then. */
  signal: AbortSignal;
}

/**
 * Turns a summary request (a compaction's, or a memory turn's) into the summary's text. `compact`
 * and `recordTurn` hand it a `signal` that aborts once they stop waiting for it.
 */
export type Summarizer = (request: SummaryRequest | TurnSummaryRequest, options?: SummarizeCallOptions) => Promise<string>;

/**
 * How long `compact` and `recordTurn` wait for a summariser by default (2 minutes): a model
 * summarising a long history answers well within it, and a summariser that never answers does not
 * hold the agent up for good.
 */
export const DEFAULT_SUMMARY_TIMEOUT_MS = 120_000;

export interface CompactOptions extends BuildOptions {
  /** Called when compaction is due; without it, the built-in extractive summary is used. */
  summarize?: Summarizer;
  /**
   * How long to wait for `summarize`, in milliseconds (default {@link DEFAULT_SUMMARY_TIMEOUT_MS};
   * `Infinity`: no limit). Past it the summariser's signal aborts and `compact` throws a
   * `SummarizerError`, the history as it was.
   */
  summaryTimeoutMs?: number;
}

/** `summaryTimeoutMs` checked, or the default. */
export function summaryTimeout(value: unknown, what: string): number {
  if (value === undefined) return DEFAULT_SUMMARY_TIMEOUT_MS;
  if (typeof value !== "number" || Number.isNaN(value) || value <= 0) {
    throw new InvalidArgumentError(`${what}: summaryTimeoutMs must be a positive number of milliseconds (Infinity: no limit), got ${String(value)}`);
  }
  return value;
}

/** setTimeout fires at once past this delay (a 32-bit count of milliseconds). */
const LONGEST_TIMER_MS = 2 ** 31 - 1;

/**
 * Calls `summarize` with a signal, and stops waiting after `timeoutMs`: the signal aborts and a
 * `SummarizerError` is thrown (what the summariser answers later is ignored).
 */
export async function summarizeWithin(summarize: Summarizer, request: SummaryRequest | TurnSummaryRequest, timeoutMs: number): Promise<unknown> {
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    if (timeoutMs > LONGEST_TIMER_MS) return;
    timer = setTimeout(() => {
      const error = new SummarizerError(`the summariser did not answer within ${timeoutMs} ms (summaryTimeoutMs)`);
      controller.abort(error);
      reject(error);
    }, timeoutMs);
    // Kept ref'd: a summariser whose work keeps nothing alive (a promise that never settles)
    // would otherwise let Node exit mid-await, the caller's error never thrown. Cleared below.
  });
  try {
    return await Promise.race([summarize(request, { signal: controller.signal }), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Builds the next context. When compaction is due and `summarize` is given, the summary is
 * requested, checked and stored, and the context rebuilt on it. Throws a `SummarizerError` if
 * the summariser fails (the history is unchanged; the next call tries again).
 */
export async function compact<F extends Format>(history: ConversationHistory, options: CompactOptions & { format: F }): Promise<BuildResultIn<F>>;
export async function compact(history: ConversationHistory, options?: CompactOptions): Promise<BuildResult>;
export async function compact(history: ConversationHistory, options: CompactOptions = {}): Promise<BuildResult | BuildResultIn<Format>> {
  if (options === null || typeof options !== "object") {
    throw new InvalidArgumentError(`compact's options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  const { summarize, summaryTimeoutMs, ...build } = options;
  if (summarize !== undefined && typeof summarize !== "function") {
    throw new InvalidArgumentError(`compact's summarize must be a function, got ${summarize === null ? "null" : typeof summarize}`);
  }
  const timeoutMs = summaryTimeout(summaryTimeoutMs, "compact");
  if (history === null || typeof history !== "object" || typeof (history as { build?: unknown }).build !== "function") {
    throw new InvalidArgumentError("compact needs a ConversationHistory (a session's history)");
  }
  if (!summarize) return history.build(build);
  const external: BuildOptions = { ...build, summary: { ...(build.summary ?? {}), summarizer: "external" } };
  const first = history.build(external);
  const request = first.summaryRequest;
  if (!request) return first;
  history.beginSummary(request.id);
  let text: unknown;
  try {
    text = await summarizeWithin(summarize, request, timeoutMs);
    if (typeof text !== "string") throw new SummarizerError(`the summariser returned ${typeof text}, not a string`);
    history.completeSummary(request.id, text, build.now);
  } catch (error) {
    history.cancelSummary(request.id);
    if (error instanceof ContextCompactorError) throw error;
    throw new SummarizerError(`the summariser failed: ${describe(error)}`, { cause: error });
  }
  return history.build(external);
}

export interface EndpointOptions {
  /** OpenAI-compatible: the API root with its version, e.g. `https://api.openai.com/v1`. Anthropic: `https://api.anthropic.com`. */
  baseURL: string;
  model: string;
  apiKey: string;
  /** Abort after this many milliseconds (default 60,000). */
  timeoutMs?: number;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof fetch;
}

async function post(
  url: string,
  headers: Record<string, string>,
  body: unknown,
  options: EndpointOptions,
  signal: AbortSignal | undefined,
): Promise<unknown> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  // The caller's signal (compact's summaryTimeoutMs) stops the request too.
  const stop = () => controller.abort(signal?.reason);
  if (signal?.aborted) stop();
  signal?.addEventListener("abort", stop, { once: true });
  let response: Response;
  try {
    response = await (options.fetch ?? fetch)(url, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: controller.signal,
    });
  } catch (error) {
    if (signal?.aborted) throw new SummarizerError(`${url}: the request was aborted (${describe(signal.reason)})`, { cause: error });
    const timedOut = controller.signal.aborted;
    throw new SummarizerError(timedOut ? `${url} did not answer within ${timeoutMs} ms` : `${url} could not be reached: ${describe(error)}`, {
      cause: error,
    });
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", stop);
  }
  const text = await response.text();
  if (!response.ok) {
    throw new SummarizerError(`${url} answered HTTP ${response.status}: ${text.slice(0, 300)}`, { status: response.status });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new SummarizerError(`${url} answered with something that is not JSON: ${text.slice(0, 100)}`, { status: response.status });
  }
}

function nonEmpty(text: unknown, url: string): string {
  if (typeof text !== "string" || text.trim() === "") throw new SummarizerError(`${url} answered without summary text`);
  return text;
}

/** Checks an endpoint's options where they are given, not at the first summary. */
function endpoint(options: EndpointOptions, what: string): void {
  if (options === null || typeof options !== "object") {
    throw new InvalidArgumentError(`${what}'s options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  for (const key of ["baseURL", "model", "apiKey"] as const) {
    if (typeof options[key] !== "string") throw new InvalidArgumentError(`${what}: options.${key} must be a string`);
  }
  if (options.timeoutMs !== undefined && !(typeof options.timeoutMs === "number" && options.timeoutMs > 0)) {
    throw new InvalidArgumentError(`${what}: options.timeoutMs must be a positive number of milliseconds`);
  }
  if (options.fetch !== undefined && typeof options.fetch !== "function") {
    throw new InvalidArgumentError(`${what}: options.fetch must be a function`);
  }
}

/** A summariser over any OpenAI-compatible Chat Completions endpoint. */
export function openAICompatibleSummarizer(options: EndpointOptions): Summarizer {
  endpoint(options, "openAICompatibleSummarizer");
  return async (request, call) => {
    const messages = (Array.isArray(request.messages)
      ? request.messages
      : convertMessages(request.messages, "anthropic", "openai")) as OpenAIMessage[];
    const url = `${options.baseURL.replace(/\/+$/, "")}/chat/completions`;
    const reply = (await post(url, { authorization: `Bearer ${options.apiKey}` }, { model: options.model, messages, max_tokens: request.maxTokens }, options, call?.signal)) as {
      choices?: Array<{ message?: { content?: unknown } }>;
    };
    return nonEmpty(reply?.choices?.[0]?.message?.content, url);
  };
}

/** A summariser over the Anthropic Messages API. */
export function anthropicSummarizer(options: EndpointOptions & { anthropicVersion?: string }): Summarizer {
  endpoint(options, "anthropicSummarizer");
  if (options.anthropicVersion !== undefined && typeof options.anthropicVersion !== "string") {
    throw new InvalidArgumentError("anthropicSummarizer: options.anthropicVersion must be a string");
  }
  return async (request, call) => {
    const { system, messages } = (Array.isArray(request.messages)
      ? convertMessages(request.messages, "openai", "anthropic")
      : request.messages) as AnthropicRequest;
    const url = `${options.baseURL.replace(/\/+$/, "")}/v1/messages`;
    const body = { model: options.model, max_tokens: request.maxTokens, ...(system === undefined ? {} : { system }), messages };
    const headers = { "x-api-key": options.apiKey, "anthropic-version": options.anthropicVersion ?? "2023-06-01" };
    const reply = (await post(url, headers, body, options, call?.signal)) as { content?: Array<{ type?: string; text?: unknown }> };
    if (!Array.isArray(reply?.content)) throw new SummarizerError(`${url} answered without a content array`);
    return nonEmpty(reply.content.filter((b) => b?.type === "text").map((b) => b.text).join(""), url);
  };
}
