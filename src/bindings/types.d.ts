export type Format = "openai" | "anthropic";
export type EncodingName = "o200k_base" | "cl100k_base" | "estimate";

export interface OpenAITextPart { type: "text"; text: string; [key: string]: unknown }
export interface OpenAIImagePart { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high"; [key: string]: unknown }; [key: string]: unknown }
export type OpenAIContentPart = OpenAITextPart | OpenAIImagePart | { type: string; [key: string]: unknown };
export interface OpenAIToolCall { id: string; type: "function"; function: { name: string; arguments: string; [key: string]: unknown }; [key: string]: unknown }
export type OpenAIMessage =
  | { role: "system" | "developer"; content: string | OpenAITextPart[]; name?: string; [key: string]: unknown }
  | { role: "user"; content: string | OpenAIContentPart[]; name?: string; [key: string]: unknown }
  | { role: "assistant"; content?: string | OpenAIContentPart[] | null; tool_calls?: OpenAIToolCall[]; name?: string; [key: string]: unknown }
  | { role: "tool"; tool_call_id: string; content: string | OpenAITextPart[]; [key: string]: unknown };

export interface AnthropicTextBlock { type: "text"; text: string; [key: string]: unknown }
export interface AnthropicImageBlock { type: "image"; source: { type: "base64"; media_type: string; data: string } | { type: "url"; url: string }; [key: string]: unknown }
export interface AnthropicToolUseBlock { type: "tool_use"; id: string; name: string; input: Record<string, unknown>; [key: string]: unknown }
export interface AnthropicToolResultBlock { type: "tool_result"; tool_use_id: string; content?: string | Array<AnthropicTextBlock | AnthropicImageBlock>; is_error?: boolean; [key: string]: unknown }
export interface AnthropicThinkingBlock { type: "thinking"; thinking: string; signature?: string; [key: string]: unknown }
export interface AnthropicRedactedThinkingBlock { type: "redacted_thinking"; data: string; [key: string]: unknown }
export type AnthropicBlock = AnthropicTextBlock | AnthropicImageBlock | AnthropicToolUseBlock | AnthropicToolResultBlock | AnthropicThinkingBlock | AnthropicRedactedThinkingBlock;
export interface AnthropicMessage { role: "user" | "assistant"; content: string | AnthropicBlock[]; [key: string]: unknown }
export interface AnthropicRequest { system?: string | AnthropicTextBlock[]; messages: AnthropicMessage[] }

export type Message = OpenAIMessage | AnthropicMessage;
export type ToolDefinition =
  | { type: "function"; function: { name: string; description?: string; parameters?: Record<string, unknown> } }
  | { name: string; description?: string; input_schema: Record<string, unknown> };

export interface CountOptions { format?: Format; tools?: ToolDefinition[] }
export interface HistoryOptions { encoding?: EncodingName; format?: Format }
export interface ChatTokenCount { total: number; messages: number[]; tools: number; replyPriming: number }
export interface TokenReport {
  total: number;
  messages: number;
  replyPriming: number;
  byRole: Partial<Record<"system" | "developer" | "user" | "assistant" | "tool", number>>;
  byPart: Partial<Record<"overhead" | "text" | "image" | "toolCall" | "toolResult" | "thinking" | "other", number>>;
}
export type ErrorKind = "InvalidMessage" | "InvalidArgument" | "NotFound" | "Conflict" | "Internal";

export interface BudgetOptions { contextWindow: number; targetRatio?: number; summaryRatio?: number; recentRatio?: number; minMessages?: number }
export interface CompressOptions { maxTokens?: number; arrayKeep?: number; stringMaxChars?: number; maxDepth?: number; textMode?: "headTail" | "truncate"; textMaxChars?: number; textHead?: number; textTail?: number }
export interface SummaryOptions {
  summarizer?: "extractive" | "external";
  /** @deprecated Spelled `summarizer` now; still read. */
  summariser?: "extractive" | "external";
  triggerTokens?: number; targetTokens?: number; minMessages?: number; minNewMessages?: number; newTokenRatio?: number;
  maxTokens?: number; prompt?: string; requiredKeys?: string[]; placement?: "auto" | "system" | "exchange";
}
export interface Profile {
  name: string; contextWindow: number; triggerFraction: number; targetFraction?: number;
  keepRecentSteps: number; encoding: EncodingName; format?: Format;
}
/**
 * Options of `history.build`: a built-in profile's name (or a profile) and/or explicit settings,
 * which win field by field: a section given replaces only the fields it names, `null` turns it off.
 */
export interface BuildOptions {
  profile?: string | Profile;
  format?: Format;
  maxMessages?: number;
  budget?: BudgetOptions | null;
  keepRecentSteps?: number;
  dedupeSystem?: boolean;
  compress?: CompressOptions | null;
  digest?: { tools?: string[] } | null;
  thin?: boolean;
  summary?: SummaryOptions | null;
  /** A session with memory: summaries of recorded turns the context does not wholly hold, in the summary section within what the summary budget leaves (newest turns first); `null` leaves them out. */
  memory?: { maxTokens?: number } | null;
  now?: string;
}
export type Action = "kept" | "compressed" | "digested" | "thinned" | "summarised" | "dropped";
export interface TokensByPart { system: number; summary: number; recent: number; total: number }
export type DropReason = "repair" | "thinning" | "window" | "budget";
/** Messages `from`..`to` (ids, inclusive; `count` of them) all had `action` (and `reason`); tokens are the run's sums. */
export interface ReceiptRun { from: string; to: string; count: number; action: Action; reason?: DropReason; tokensBefore: number; tokensAfter: number }
/** One stored message's line of a receipt (`history.receiptEntries()`). */
export interface ReceiptEntry { id: string; action: Action; reason?: DropReason; tokensBefore: number; tokensAfter: number }
export interface Receipt {
  tokensBefore: number; tokensAfter: number; messagesBefore: number; messagesAfter: number;
  byPart: TokensByPart;
  budget: { maxTokens: number; systemTokens: number; summaryBudget: number; recentBudget: number } | null;
  withinBudget: boolean;
  /** What happened to every stored message, by id: runs of consecutive messages that fared alike, in history order. */
  runs: Array<Readonly<ReceiptRun>>;
  repairs: Array<{ id: string; kind: string; callId?: string }>;
  summary: { requestId: string; summarisedUntil: string; tokens: number; fresh: boolean } | null;
  /** The memory's turn summaries in the context (a session with memory): the turns in, their tokens, and the turns left out for space. */
  memory: { turns: number[]; tokens: number; omitted: number[] } | null;
  placeholder: boolean;
  notes: string[];
}
export interface SummaryRequest {
  id: string; from: string; until: string; messageIds: string[];
  /** Ready to send, in the build's format, the compact prompt last. */
  messages: OpenAIMessage[] | AnthropicRequest;
  prompt: string; previousSummary: string | null; maxTokens: number; requiredKeys: string[];
  originalTokens: number; messageCount: number;
}
export interface SummaryRecord {
  requestId: string; summarisedUntil: string; untilIndex: number; text: string; tokens: number;
  originalTokens: number; compressionRate: number; messageCount: number; createdAt: string; source: "extractive" | "external";
}
export interface SummaryState { current: SummaryRecord | null; inProgress: object | null; generation: number }
export interface BuildResult {
  /**
   * What to send: validated against the provider's rules. The list is new on every build; the
   * message objects in it are frozen (deeply) and shared with later builds that emit them unchanged.
   */
  messages: OpenAIMessage[] | AnthropicRequest;
  /** Where each message comes from; the entries, like `receipt.runs`, are frozen and shared as the messages are. */
  layout: Array<Readonly<{ sources: readonly string[]; section: "system" | "summary" | "recent"; action: Action }>>;
  tokens: TokensByPart;
  receipt: Receipt;
  /** Compaction is due: summarise these messages and hand the text to `completeSummary`. */
  summaryRequest: SummaryRequest | null;
  newSummary: SummaryRecord | null;
}
export interface Violation { index: number | null; rule: string; message: string }
/**
 * What a build hands over, by format: request-mode messages, with only the fields each API
 * accepts in a request (response-only and unknown fields are stripped), so that they type-check
 * against the providers' own SDK parameter types.
 */
export interface OpenAIOutputText { type: "text"; text: string }
export interface OpenAIOutputImage { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high" } }
export interface OpenAIOutputToolCall { id: string; type: "function"; function: { name: string; arguments: string } }
export type OpenAIOutputMessage =
  | { role: "system"; content: string | OpenAIOutputText[]; name?: string }
  | { role: "developer"; content: string | OpenAIOutputText[]; name?: string }
  | { role: "user"; content: string | Array<OpenAIOutputText | OpenAIOutputImage>; name?: string }
  | { role: "assistant"; content?: string | OpenAIOutputText[] | null; tool_calls?: OpenAIOutputToolCall[]; name?: string; refusal?: string | null }
  | { role: "tool"; tool_call_id: string; content: string | OpenAIOutputText[] };
export interface AnthropicOutputText { type: "text"; text: string }
export interface AnthropicOutputImage { type: "image"; source: { type: "base64"; media_type: "image/jpeg" | "image/png" | "image/gif" | "image/webp"; data: string } | { type: "url"; url: string } }
export type AnthropicOutputBlock =
  | AnthropicOutputText
  | AnthropicOutputImage
  | { type: "tool_use"; id: string; name: string; input: unknown }
  | { type: "tool_result"; tool_use_id: string; content?: string | Array<AnthropicOutputText | AnthropicOutputImage>; is_error?: boolean }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string };
export interface AnthropicOutputRequest {
  system?: string | AnthropicOutputText[];
  messages: Array<{ role: "user" | "assistant"; content: string | AnthropicOutputBlock[] }>;
}
export type BuildResultIn<F extends Format> = Omit<BuildResult, "messages"> & {
  messages: F extends "anthropic" ? AnthropicOutputRequest : OpenAIOutputMessage[];
};
// Declaration merging adds this overload after the class's own (which takes no `format`), so a
// build that names its format gets messages typed for that provider's SDK.
export interface ConversationHistory {
  /** With the format named, the messages are typed for that provider's SDK. */
  build<F extends Format>(options: BuildOptions & { format: F }): BuildResultIn<F>;
  build(options?: BuildOptions): BuildResult;
}
export interface SessionOptions extends HistoryOptions {
  /** Letters, digits, '-', '_', '.' or ':' (default "main"). */
  id?: string;
  /** Agent loops allowed (default 10). */
  maxLoops?: number;
  /** Switches the memory module on (seed 003: only when configured). */
  memory?: boolean | { maxSnapshotChars?: number };
}
export interface ContextSnapshot {
  id: string; turnNumber: number; fullContext: string; summary: string;
  /** The first and last id of the turn's messages. */
  messages?: { from: string; until: string };
}
export interface MemorySummary { id: string; contextId: string; turnNumber: number; summary: string; insights: string[] }
export interface TurnInput {
  /** The workspace the agent rendered this turn. */
  workspaceContext: string;
  /** Default: the turn after the last one recorded. */
  turnNumber?: number;
  /** Default: the built-in summary of the turn's messages. */
  summary?: string;
  insights?: string[];
  /** Refuse a given summary longer than this many tokens (what a summariser was asked for). */
  maxSummaryTokens?: number;
}
export interface TurnSummaryRequest {
  id: string; turnNumber: number; messageIds: string[];
  /** One user message holding the turn's transcript and the instruction, in the requested format. */
  messages: OpenAIMessage[] | AnthropicRequest;
  prompt: string; maxTokens: number; requiredKeys: string[];
}
export interface SearchHit { kind: "snapshot" | "summary" | "message"; id: string; turnNumber: number | null; score: number }
export type RecallInput = { turnNumbers: number[] } | { query: string; limit?: number };
export interface RecalledTurn {
  turnNumber: number; summary: string; fullContext: string;
  messages: Array<{ id: string; role: string; text: string }>;
}
export type RecallResult =
  | { turns: RecalledTurn[]; truncated: boolean }
  | { query: string; results: Array<SearchHit & { text: string }>; truncated: boolean };
export interface SubagentResult { ok: boolean; result: string; context_id: string; loops: number }
export interface MemoryExport { format: "context-compactor/memory"; version: 1; contexts: ContextSnapshot[]; summaries: MemorySummary[] }
export interface SessionExport {
  format: "context-compactor/session"; version: 1;
  id: string; parentId: string | null; messageFormat: Format;
  loops: number; maxLoops: number; subagentsSpawned: number; turnStart: number;
  metadata: Record<string, unknown>;
  history: { encoding: EncodingName; messages: Array<{ id: string; format: Format; message: Message }>; summary: SummaryState };
  memory: MemoryExport | null;
  maxSnapshotChars: number | null;
}
export interface RecallContextToolOpenAI { type: "function"; function: { name: "recall_context"; description: string; parameters: { [key: string]: unknown } } }
export interface RecallContextToolAnthropic { name: "recall_context"; description: string; input_schema: { type: "object"; [key: string]: unknown } }
export type RecallContextTool = RecallContextToolOpenAI | RecallContextToolAnthropic;
/** The `recall_context` tool definition, typed for the named provider. */
export function recallContextTool(format: "openai"): RecallContextToolOpenAI;
export function recallContextTool(format: "anthropic"): RecallContextToolAnthropic;
