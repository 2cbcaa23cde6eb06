/**
 * Vercel AI SDK adapter (`context-compactor/ai-sdk`): the compacted `ModelMessage[]` for a step
 * of `generateText`/`streamText`, within the model's budget, with the build's receipt.
 *
 * The history is the lossless record: the helper appends to it what the SDK's list holds beyond
 * it, then builds. In `prepareStep` that list is `initialMessages` + `responseMessages` (never
 * the step's `messages`, which after the first override are the compacted ones), so nothing the
 * model said is lost when a step is sent less. Types only come from `ai`: nothing of it is
 * bundled or imported at run time.
 */
import type { ModelMessage } from "ai";
import type { BuildOptions, BuildResult, ConversationHistory, Receipt } from "../api.js";

/** Build options for the AI SDK (the format is always `"ai-sdk"`). */
export type AiSdkCompactOptions = Omit<BuildOptions, "format">;

export interface CompactedMessages {
  /** The messages to send, as the AI SDK types them. */
  messages: ModelMessage[];
  /** What became of every stored message. */
  receipt: Receipt;
  /** The whole build result (layout, summary request, violations…). */
  result: BuildResult;
}

/**
 * Appends the messages of `conversation` the history does not hold yet (the history must hold a
 * prefix of it: the helper owns the history) and returns the compacted list.
 */
export function compactMessages(
  history: ConversationHistory,
  conversation: readonly ModelMessage[],
  options: AiSdkCompactOptions = {},
): CompactedMessages {
  const held = history.length;
  if (conversation.length > held) history.appendMany(conversation.slice(held), "ai-sdk");
  const result = history.build({ ...options, format: "ai-sdk" });
  // The package's ModelMessage type is a subset of the SDK's (tests/types/formats.ts checks it).
  const messages: ModelMessage[] = result.messages;
  return { messages, receipt: result.receipt, result };
}

/** What `prepareStep` is given that the helper reads (a subset of the SDK's options). */
export interface PrepareStepInput {
  stepNumber: number;
  initialMessages: ModelMessage[];
  responseMessages: ReadonlyArray<ModelMessage>;
}

export interface CompactingPrepareStep {
  (input: PrepareStepInput): { messages: ModelMessage[] };
  /** The last step's build: its receipt, budget and layout. */
  readonly last: CompactedMessages | undefined;
}

/**
 * A `prepareStep` for `generateText`/`streamText`/`ToolLoopAgent` that sends each step the
 * compacted conversation. One history per run: `history` starts empty (or holding earlier turns
 * that `initialMessages` repeats).
 */
export function compactingPrepareStep(
  history: ConversationHistory,
  options: AiSdkCompactOptions & { onStep?: (step: CompactedMessages, stepNumber: number) => void } = {},
): CompactingPrepareStep {
  const { onStep, ...build } = options;
  let last: CompactedMessages | undefined;
  const prepare = (input: PrepareStepInput) => {
    last = compactMessages(history, [...input.initialMessages, ...input.responseMessages], build);
    onStep?.(last, input.stepNumber);
    return { messages: last.messages };
  };
  return Object.defineProperty(prepare, "last", { get: () => last }) as CompactingPrepareStep;
}
