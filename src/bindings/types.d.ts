// Written by hand: what has no Rust type (the providers' message shapes, which the codecs read
// and write as JSON) and the overloads. The declarations of the Rust types are generated
// (generated.d.ts, src/bindings/typescript.rs).
export type EncodingName = "o200k_base" | "cl100k_base" | "estimate";

export interface OpenAITextPart { type: "text"; text: string; [key: string]: unknown }
export interface OpenAIImagePart { type: "image_url"; image_url: { url: string; detail?: "auto" | "low" | "high"; [key: string]: unknown }; [key: string]: unknown }
export type OpenAIContentPart = OpenAITextPart | OpenAIImagePart | { type: string; [key: string]: unknown };
export interface OpenAIToolCall { id: string; type: "function"; function: { name: string; arguments: string; [key: string]: unknown }; [key: string]: unknown }
export type OpenAIMessage =
  | { role: "system" | "developer"; content: string | OpenAITextPart[]; name?: string; [key: string]: unknown }
  | { role: "user"; content: string | OpenAIContentPart[]; name?: string; [key: string]: unknown }
  | { role: "assistant"; content?: string | OpenAIContentPart[] | null; tool_calls?: OpenAIToolCall[]; function_call?: { name: string; arguments: string }; name?: string; [key: string]: unknown }
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
/** Anthropic's `{ system?, messages }` as the SDK's params type it, or as a build hands it over. */
export type AnthropicMessagesInput = AnthropicRequest | AnthropicOutputRequest;

export type Message = OpenAIMessage | AnthropicMessage;
/** A message in any of the formats: OpenAI Chat, Anthropic, an OpenAI Responses item, an AI SDK `ModelMessage`. */
export type AnyMessage = Message | ResponsesInputItem | AiSdkModelMessage;
/** What append and conversion take: a message in any format, as the SDKs type it (checked at run time). */
export type MessageInput = AnyMessage | object;
/** A message list in any format (Anthropic's as `{ system?, messages }` or an array). */
export type AnyMessages = OpenAIMessage[] | AnthropicRequest | ResponsesInputItem[] | AiSdkModelMessage[];
export type ToolDefinition =
  | { type: "function"; function: { name: string; description?: string; parameters?: Record<string, unknown> } }
  | { name: string; description?: string; input_schema: Record<string, unknown> };

/** OpenAI's legacy function result: counted by `countRequest`/`countMessages`, refused by a history. */
export interface OpenAIFunctionMessage { role: "function"; name: string; content: string | null; [key: string]: unknown }
export type CountableMessage = Message | OpenAIFunctionMessage;
/** Any message shape: this package's, or either SDK's parameter types (counting reads what it knows). */
export interface MessageLike { role: string; content?: unknown }
export type ToolChoice =
  | "auto" | "none" | "required"
  | { type: "function"; function: { name: string } }
  | { type: "auto" | "any" | "none"; disable_parallel_tool_use?: boolean }
  | { type: "tool"; name: string; disable_parallel_tool_use?: boolean }
  | { type: string };
/**
 * A request as sent to the provider: an OpenAI `ChatCompletionCreateParams` or an Anthropic
 * `MessageCreateParams` is accepted as it stands (fields that do not change the prompt, such as
 * `temperature`, are ignored).
 */
export interface TokenCountRequest {
  messages: ReadonlyArray<CountableMessage | MessageLike>;
  /** Anthropic's top-level system prompt; for OpenAI, a system message before the others. */
  system?: string | ReadonlyArray<{ type: "text"; text: string }>;
  tools?: ReadonlyArray<ToolDefinition | object>;
  tool_choice?: ToolChoice;
  /** OpenAI's legacy function definitions and forcing. */
  functions?: ReadonlyArray<{ name: string; description?: string; parameters?: object }>;
  function_call?: "auto" | "none" | { name: string };
  /** Used when `options.model` is not given. */
  model?: string;
}
/**
 * A Responses request (`format: "openai-responses"`): `client.responses.create`'s params are
 * accepted as they stand. Always an estimate: OpenAI publishes no counting rule for it.
 */
export interface ResponsesCountRequest {
  input?: string | ReadonlyArray<MessageInput>;
  instructions?: string | null;
  tools?: ReadonlyArray<object>;
  tool_choice?: unknown;
  model?: string;
}
/** Read by the core (src/tokens/request.rs `RequestOptions::read`), unknown keys refused. */
export interface RequestCountOptions {
  format?: Format;
  /** Picks the image rule (OpenAI's tiles or patches by model) and Anthropic's tool-use prompt. */
  model?: string;
  /** Pixel sizes of images given by URL (base64 images are measured from their bytes). */
  imageSizes?: Record<string, { width: number; height: number }>;
  /** Image data that cannot be read throws instead of being counted at the default size. */
  strictImages?: boolean;
}
/**
 * A usage object as either provider reports it: Chat Completions', the Responses API's,
 * Anthropic's. No index signature: the SDKs' usage interfaces (`CompletionUsage`, Anthropic's
 * `Usage`) are assignable only to a type without one; their other fields are ignored.
 */
export type ProviderUsage =
  | { prompt_tokens: number; completion_tokens?: number | null; prompt_tokens_details?: { cached_tokens?: number | null } | null }
  | { input_tokens: number; output_tokens?: number | null; input_tokens_details?: { cached_tokens?: number | null } | null }
  | { input_tokens: number; output_tokens?: number | null; cache_creation_input_tokens?: number | null; cache_read_input_tokens?: number | null };
/** A whole response with its `usage` (`ChatCompletion`, `Response`, Anthropic's `Message`). */
export interface ProviderResponse {
  model?: string;
  usage?: ProviderUsage | null;
}
/** What `recordUsage` reads: a usage object, or a whole response with its `usage` (and `model`). */
export type ProviderUsageInput = ProviderUsage | ProviderResponse;
/**
 * A model's tool call as either SDK types it: OpenAI's function tool call, or Anthropic's
 * `tool_use` block (what `answerRecall` and `answerFileReader` read).
 */
export type ToolCallInput =
  | { id: string; type: "function"; function: { name: string; arguments: string } }
  | { type: "tool_use"; id: string; name: string; input: unknown };

/** A conversation read from a file: `history.appendMany(loaded.messages, loaded.format)` takes it as it is. */
export type LoadedConversation =
  | (Omit<LoadedConversationBase, "format" | "messages"> & { format: "openai"; messages: OpenAIMessage[] })
  | (Omit<LoadedConversationBase, "format" | "messages"> & { format: "anthropic"; messages: AnthropicRequest });

export type ErrorKind = "InvalidMessage" | "InvalidArgument" | "NotFound" | "Conflict" | "Corrupt" | "Internal" | "Resource" | "Summarizer";

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

/** JSON as the AI SDK's `providerOptions` and `json` outputs hold it. */
export type JSONValue = null | string | number | boolean | { [key: string]: JSONValue | undefined } | JSONValue[];
export type AiSdkProviderOptions = Record<string, Record<string, JSONValue | undefined>>;
export interface AiSdkTextPart { type: "text"; text: string; providerOptions?: AiSdkProviderOptions }
export interface AiSdkImagePart { type: "image"; image: string; mediaType?: string; providerOptions?: AiSdkProviderOptions }
export interface AiSdkFilePart { type: "file"; data: string; mediaType: string; filename?: string; providerOptions?: AiSdkProviderOptions }
export interface AiSdkReasoningPart { type: "reasoning"; text: string; providerOptions?: AiSdkProviderOptions }
export interface AiSdkToolCallPart { type: "tool-call"; toolCallId: string; toolName: string; input: unknown; providerOptions?: AiSdkProviderOptions; providerExecuted?: boolean }
export type AiSdkToolOutput =
  | { type: "text" | "error-text"; value: string; providerOptions?: AiSdkProviderOptions }
  | { type: "json" | "error-json"; value: JSONValue; providerOptions?: AiSdkProviderOptions }
  | { type: "execution-denied"; reason?: string; providerOptions?: AiSdkProviderOptions }
  | { type: "content"; value: Array<{ type: "text"; text: string; providerOptions?: AiSdkProviderOptions }>; providerOptions?: AiSdkProviderOptions };
export interface AiSdkToolResultPart { type: "tool-result"; toolCallId: string; toolName: string; output: AiSdkToolOutput; providerOptions?: AiSdkProviderOptions }
export interface AiSdkToolApprovalRequest { type: "tool-approval-request"; approvalId: string; toolCallId: string; reason?: string; isAutomatic?: boolean; signature?: string }
export interface AiSdkToolApprovalResponse { type: "tool-approval-response"; approvalId: string; approved: boolean; reason?: string; providerExecuted?: boolean }
/** An AI SDK `ModelMessage` (what `generateText`/`streamText` take as `messages`). */
export type AiSdkModelMessage =
  | { role: "system"; content: string; providerOptions?: AiSdkProviderOptions }
  | { role: "user"; content: string | Array<AiSdkTextPart | AiSdkImagePart | AiSdkFilePart>; providerOptions?: AiSdkProviderOptions }
  | { role: "assistant"; content: string | Array<AiSdkTextPart | AiSdkFilePart | AiSdkReasoningPart | AiSdkToolCallPart | AiSdkToolResultPart | AiSdkToolApprovalRequest>; providerOptions?: AiSdkProviderOptions }
  | { role: "tool"; content: Array<AiSdkToolResultPart | AiSdkToolApprovalResponse>; providerOptions?: AiSdkProviderOptions };

export interface ResponsesInputText { type: "input_text"; text: string }
export interface ResponsesInputImage { type: "input_image"; detail: "low" | "high" | "auto"; image_url?: string | null; file_id?: string | null }
export interface ResponsesInputFile { type: "input_file"; file_id?: string | null; file_data?: string; file_url?: string; filename?: string }
export type ResponsesInputContent = ResponsesInputText | ResponsesInputImage | ResponsesInputFile;
type ResponsesStatus = "in_progress" | "completed" | "incomplete";
/**
 * An OpenAI Responses input item (what `client.responses.create({ input })` takes, and what the
 * Agents SDK's model receives): messages, function and custom tool calls with their outputs,
 * reasoning (with `encrypted_content`), compaction items, item references. Hosted tool items
 * (web search, computer, MCP…) are passed on as they were appended.
 */
export type ResponsesInputItem =
  | { type?: "message"; role: "user" | "assistant" | "system" | "developer"; content: string | ResponsesInputContent[]; phase?: "commentary" | "final_answer" | null }
  | { type: "function_call"; call_id: string; name: string; arguments: string; id?: string; status?: ResponsesStatus }
  | { type: "function_call_output"; call_id: string; output: string | ResponsesInputContent[]; id?: string | null; status?: ResponsesStatus | null }
  | { type: "custom_tool_call"; call_id: string; name: string; input: string; id?: string }
  | { type: "custom_tool_call_output"; call_id: string; output: string | ResponsesInputContent[]; id?: string }
  | { type: "reasoning"; id: string; summary: Array<{ type: "summary_text"; text: string }>; encrypted_content?: string | null; content?: Array<{ type: "reasoning_text"; text: string }>; status?: ResponsesStatus }
  | { type: "compaction"; encrypted_content: string; id?: string | null }
  | { type?: "item_reference" | null; id: string };

/** The messages of a build, a conversion or `messages(format)`, by format. */
export type MessagesIn<F extends Format> = F extends "anthropic"
  ? AnthropicOutputRequest
  : F extends "openai-responses"
    ? ResponsesInputItem[]
    : F extends "ai-sdk"
      ? AiSdkModelMessage[]
      : OpenAIOutputMessage[];
export type BuildResultIn<F extends Format> = Omit<BuildResult, "messages"> & { messages: MessagesIn<F> };
// Declaration merging adds this overload after the class's own (which takes no `format`), so a
// build that names its format gets messages typed for that provider's SDK.
export interface ConversationHistory {
  /** With the format named, the messages are typed for that provider's SDK. */
  build<F extends Format>(options: BuildOptions & { format: F }): BuildResultIn<F>;
  build(options?: BuildOptions): BuildResult;
  /** Every message, typed for the named format. */
  messages<F extends Format>(format: F): MessagesIn<F>;
  /** Lenient: what the strict append refuses is repaired, and the repairs are returned. */
  appendMany(messages: AnthropicMessagesInput | ReadonlyArray<MessageInput>, options: AppendOptions & { repair: true }): RepairedAppend;
  appendMany(messages: AnthropicMessagesInput | ReadonlyArray<MessageInput>, options?: Format | AppendOptions): string[];
}
/** Converts a message list between formats, typed for the target. */
export function convertMessages<F extends Format>(messages: AnthropicMessagesInput | ReadonlyArray<MessageInput>, from: Format, to: F): MessagesIn<F>;
export type RecallInput = { turnNumbers: number[] } | { query: string; limit?: number };
export interface RecallContextToolOpenAI { type: "function"; function: { name: "recall_context"; description: string; parameters: { [key: string]: unknown } } }
export interface RecallContextToolAnthropic { name: "recall_context"; description: string; input_schema: { type: "object"; [key: string]: unknown } }
export interface RecallContextToolResponses { type: "function"; name: "recall_context"; description: string; parameters: { [key: string]: unknown }; strict?: boolean }
export interface RecallContextToolAiSdk { name: "recall_context"; description: string; inputSchema: { [key: string]: unknown } }
export type RecallContextTool = RecallContextToolOpenAI | RecallContextToolAnthropic | RecallContextToolResponses | RecallContextToolAiSdk;
/** The `recall_context` tool definition, typed for the named provider. */
export function recallContextTool(format: "openai"): RecallContextToolOpenAI;
export function recallContextTool(format: "anthropic"): RecallContextToolAnthropic;
export function recallContextTool(format: "openai-responses"): RecallContextToolResponses;
export function recallContextTool(format: "ai-sdk"): RecallContextToolAiSdk;
export interface FileReaderToolOpenAI { type: "function"; function: { name: "file_reader"; description: string; parameters: { [key: string]: unknown } } }
export interface FileReaderToolAnthropic { name: "file_reader"; description: string; input_schema: { type: "object"; [key: string]: unknown } }
export type FileReaderTool = FileReaderToolOpenAI | FileReaderToolAnthropic;
/** The `file_reader` tool definition, typed for the named provider. */
export function fileReaderTool(format: "openai"): FileReaderToolOpenAI;
export function fileReaderTool(format: "anthropic"): FileReaderToolAnthropic;
