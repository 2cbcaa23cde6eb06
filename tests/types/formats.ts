// Compiled with `tsc --noEmit` (tests/types/tsconfig.json): a context built, converted or read in
// the AI SDK's or the OpenAI Responses format is accepted, as typed, by `ai`'s `ModelMessage` and
// `openai`'s `ResponseInputItem`.
import type { ModelMessage } from "ai";
import type OpenAI from "openai";
import { ConversationHistory, Tokenizer, convertMessages } from "context-compactor";
import type { RequestTokenCount } from "context-compactor";

const history = new ConversationHistory({ format: "ai-sdk" });

const forAiSdk = history.build({ format: "ai-sdk", profile: "gpt-4o" });
const modelMessages: ModelMessage[] = forAiSdk.messages;

const forResponses = history.build({ format: "openai-responses" });
const input: OpenAI.Responses.ResponseInputItem[] = forResponses.messages;
const request: OpenAI.Responses.ResponseCreateParamsNonStreaming = { model: "gpt-5", input: forResponses.messages };

const stored: ModelMessage[] = history.messages("ai-sdk");
const items: OpenAI.Responses.ResponseInputItem[] = history.messages("openai-responses");
const converted: ModelMessage[] = convertMessages(items, "openai-responses", "ai-sdk");

// What the SDKs hand over can be appended as it is.
history.appendMany(modelMessages, "ai-sdk");
history.appendMany(input, "openai-responses");

// A Responses request as the SDK types it is counted as it stands.
const counted: RequestTokenCount = new Tokenizer("o200k_base").countRequest(request, { format: "openai-responses" });

// The checker must refuse a mismatch, which proves this file tests something.
// @ts-expect-error Responses items are not ModelMessages
const wrong: ModelMessage[] = forResponses.messages;

void [modelMessages, input, request, stored, items, converted, wrong, counted];

// What a build hands over, in every format, is what validateMessages, appendMany and
// convertMessages take back.
import { validateMessages, type Format } from "context-compactor";
for (const format of ["openai", "anthropic", "openai-responses", "ai-sdk"] as const satisfies readonly Format[]) {
  validateMessages(history.build({ format }).messages, format);
}
const builtAnthropic = history.build({ format: "anthropic", profile: "claude-sonnet-4" });
validateMessages(builtAnthropic.messages, "anthropic");
history.appendMany(builtAnthropic.messages, "anthropic");
convertMessages(builtAnthropic.messages, "anthropic", "openai");
validateMessages(history.build({ format: "openai" }).messages, "openai");
validateMessages(history.messages("anthropic"), "anthropic");
