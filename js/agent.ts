/**
 * The agent side of the memory module: a turn summarised by the caller's model, and a model's
 * `recall_context` call answered with the tool result to append.
 */
import type { ContextSnapshot, Format, MemoryModule, Message, ToolCallInput, TurnInput } from "./wasm.js";
import { ContextCompactorError, InvalidArgumentError, SummarizerError, describe } from "./errors.js";
import { summarizeWithin, summaryTimeout } from "./summarize.js";
import type { Summarizer } from "./summarize.js";

export interface RecordTurnOptions extends TurnInput {
  /** Summarises the turn with the caller's model; without it (or with `summary`), the built-in summary is used. */
  summarize?: Summarizer;
  /** The format of the summariser's request (default: the session's). */
  format?: Format;
  /** The summary's budget (default 300 tokens). */
  maxTokens?: number;
  /**
   * How long to wait for `summarize`, in milliseconds (default 120,000; `Infinity`: no limit).
   * Past it the summariser's signal aborts and `recordTurn` throws a `SummarizerError`, nothing
   * recorded.
   */
  summaryTimeoutMs?: number;
}

/**
 * Ends a turn in the memory. A summariser that throws, returns something other than text, or
 * returns more than `maxTokens` is a `SummarizerError`, and nothing is recorded.
 */
export async function recordTurn(memory: MemoryModule, options: RecordTurnOptions): Promise<ContextSnapshot> {
  if (options === null || typeof options !== "object") {
    throw new InvalidArgumentError(`recordTurn's options must be an object, got ${options === null ? "null" : typeof options}`);
  }
  checkMemory(memory, "recordTurn");
  const { summarize, format, maxTokens, summaryTimeoutMs, ...turn } = options;
  if (summarize !== undefined && typeof summarize !== "function") {
    throw new InvalidArgumentError(`recordTurn's summarize must be a function, got ${summarize === null ? "null" : typeof summarize}`);
  }
  const timeoutMs = summaryTimeout(summaryTimeoutMs, "recordTurn");
  if (!summarize || turn.summary !== undefined) return memory.recordTurn(turn);
  const request = memory.turnSummaryRequest(turn.workspaceContext, { format, maxTokens });
  let text: unknown;
  try {
    text = await summarizeWithin(summarize, request, timeoutMs);
  } catch (error) {
    if (error instanceof SummarizerError) throw error;
    throw new SummarizerError(`the summariser failed: ${describe(error)}`, { cause: error });
  }
  if (typeof text !== "string") throw new SummarizerError(`the summariser returned ${typeof text}, not a string`);
  try {
    return memory.recordTurn({ ...turn, summary: text.trim(), maxSummaryTokens: request.maxTokens });
  } catch (error) {
    if (error instanceof ContextCompactorError && error.code === "InvalidArgument") {
      throw new SummarizerError(`the summariser's answer was refused: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

/** A `recall_context` call as the model made it: OpenAI's tool call or Anthropic's `tool_use` block. */
export type RecallCall = ToolCallInput;

/**
 * Runs a model's `recall_context` call and returns the message that answers it, ready to append.
 * A call the memory refuses (an unknown turn, bad arguments) is answered with the error, marked
 * as one, so that the model can correct itself. The message is built by the core, as a
 * sub-agent's tool result is.
 */
export function answerRecall(memory: MemoryModule, call: RecallCall, options: { format?: Format; maxTokens?: number } = {}): Message {
  checkMemory(memory, "answerRecall");
  return memory.answerRecall(call, options);
}

/** A memory module where one is needed (its methods check the rest). */
function checkMemory(memory: MemoryModule, what: string): void {
  if (memory === null || typeof memory !== "object" || typeof (memory as { answerRecall?: unknown }).answerRecall !== "function") {
    throw new InvalidArgumentError(`${what} needs a session's MemoryModule (session.memory, with the memory option on)`);
  }
}
