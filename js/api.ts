/**
 * The public surface shared by the Node and browser entries. It only re-exports: the entries
 * (`node.ts`, `browser.ts`) instantiate the wasm module and install the error factory before
 * any of this can be used. The wasm module's `default`/`initSync` (instantiation) and
 * `setErrorFactory` (owned by the entries) stay internal; tests/js/exports.test.mjs fails when a
 * new binding is neither re-exported here nor listed there as internal.
 */
export {
  Tokenizer,
  ConversationHistory,
  Session,
  MemoryModule,
  recallContextTool,
  convertMessages,
  validateMessages,
  profileNames,
  resolveProfile,
} from "../pkg/context_compactor.js";

// Every type the bindings declare (messages, options, results), as types only.
export type * from "../pkg/context_compactor.js";

export {
  ContextCompactorError,
  InvalidMessageError,
  InvalidArgumentError,
  NotFoundError,
  ConflictError,
  SummarizerError,
  InternalError,
} from "./errors.js";
export type { ErrorCode, ErrorDetails } from "./errors.js";

export { compact, openAICompatibleSummarizer, anthropicSummarizer } from "./summarize.js";
export type { Summarizer, CompactOptions, EndpointOptions } from "./summarize.js";

export { recordTurn, answerRecall } from "./agent.js";
export type { RecordTurnOptions, RecallCall } from "./agent.js";
