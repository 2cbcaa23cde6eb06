/**
 * The public surface shared by the Node and browser entries, full and lite. The entries
 * (`node.ts`, `browser.ts`) instantiate the wasm module and install the error factory and the
 * guard before any of this can be used. Every class and function of the wasm module is exported
 * guarded (`guard.ts`: typed errors only, and a trap never loses a session); the classes are the
 * glue's own (`instanceof` holds for every object the package hands out). The wasm module's
 * `default`/`initSync` (instantiation), `setErrorFactory` (owned by the entries) and
 * `recoverAfterTrap` (owned by the guard) stay internal; tests/js/exports.test.mjs fails when a
 * new binding is neither exported here nor listed there as internal. `loadRanks` is needed by the
 * lite entry only; the full one accepts the same tables, so code written for the lite entry runs
 * unchanged on the full one. The guarded bindings are made in `guarded.ts`, which the package's own
 * modules import rather than this one.
 */
export {
  Tokenizer,
  ConversationHistory,
  Session,
  MemoryModule,
  recallContextTool,
  fileReaderTool,
  supportedLanguages,
  convertMessages,
  validateMessages,
  profileNames,
  resolveProfile,
  loadConversation,
  loadRanks,
} from "./guarded.js";

export { rankFile } from "./ranks.js";

// Every type the bindings declare (messages, options, results), as types only.
export type * from "./wasm.js";

export {
  ContextCompactorError,
  InvalidMessageError,
  InvalidArgumentError,
  NotFoundError,
  ConflictError,
  LeaseHeldError,
  ResourceError,
  SummarizerError,
  CorruptRecordError,
  StorageError,
  InternalError,
} from "./errors.js";
export type { ErrorCode, ErrorDetails, StorageFailure } from "./errors.js";

export { compact, openAICompatibleSummarizer, anthropicSummarizer, DEFAULT_SUMMARY_TIMEOUT_MS } from "./summarize.js";
export type { Summarizer, SummarizeCallOptions, CompactOptions, EndpointOptions } from "./summarize.js";

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
