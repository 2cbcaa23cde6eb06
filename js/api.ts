/**
 * The public surface shared by the Node and browser entries, full and lite. It only re-exports:
 * the entries (`node.ts`, `browser.ts`) instantiate the wasm module and install the error
 * factory before any of this can be used. The wasm module's `default`/`initSync`
 * (instantiation) and `setErrorFactory` (owned by the entries) stay internal;
 * tests/js/exports.test.mjs fails when a new binding is neither re-exported here nor listed
 * there as internal. `loadRanks` is needed by the lite entry only; the full one accepts the same
 * tables, so code written for the lite entry runs unchanged on the full one.
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
  loadConversation,
  loadRanks,
} from "./wasm.js";

export { rankFile } from "./ranks.js";

// Every type the bindings declare (messages, options, results), as types only.
export type * from "./wasm.js";

export {
  ContextCompactorError,
  InvalidMessageError,
  InvalidArgumentError,
  NotFoundError,
  ConflictError,
  SummarizerError,
  CorruptRecordError,
  StorageError,
  InternalError,
} from "./errors.js";
export type { ErrorCode, ErrorDetails, StorageFailure } from "./errors.js";

export { compact, openAICompatibleSummarizer, anthropicSummarizer } from "./summarize.js";
export type { Summarizer, CompactOptions, EndpointOptions } from "./summarize.js";

export { recordTurn, answerRecall } from "./agent.js";
export type { RecordTurnOptions, RecallCall } from "./agent.js";

export { SessionStore, StoredSession } from "./store.js";
export type { SessionStoreOptions, CreateSessionOptions, StoredSessionInfo, StoredSessionEvent } from "./store.js";
export { MemoryStorageAdapter } from "./storage/memory.js";
export type { MemoryStorageOptions } from "./storage/memory.js";
export { LocalStorageAdapter } from "./storage/local-storage.js";
export type { LocalStorageOptions } from "./storage/local-storage.js";
export type { StorageAdapter, StorageKey, StorageEntry, StorageWrite } from "./storage/adapter.js";
export { persist } from "./storage/persist.js";
export type { PersistReport } from "./storage/persist.js";
