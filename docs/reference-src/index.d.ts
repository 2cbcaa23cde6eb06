/**
 * The options the package's calls take and the results they return, as the built package
 * declares them. This file only selects what the reference shows (`npm run docs:reference`
 * writes docs/reference/ from it); the declarations are the package's own.
 *
 * @packageDocumentation
 */
export type {
  HistoryOptions,
  AppendOptions,
  AppendOneOptions,
  BuildOptions,
  BudgetOptions,
  SummaryOptions,
  CompressOptions,
  DigestOptions,
  MemoryOptions,
  StateOptions,
  RequestParts,
  CacheOptions,
  CountOptions,
  RecordUsageOptions,
  LoadOptions,
  SessionOptions,
  BuildResult,
  Receipt,
  ReceiptRun,
  BudgetReport,
  CacheUse,
  TokensByPart,
  LayoutEntry,
  SummaryRequest,
  UsageReport,
  TokenReport,
  RequestTokenCount,
  CompactOptions,
  EndpointOptions,
  SessionStoreOptions,
  CreateSessionOptions,
  StoredSessionInfo,
} from "../../dist/index.js";
export { DEFAULT_SUMMARY_TIMEOUT_MS } from "../../dist/index.js";
