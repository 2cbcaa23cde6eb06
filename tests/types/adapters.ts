// Compiled with `tsc --noEmit` against each supported major of `ai` (tests/types/tsconfig.json:
// `ai` 7; tsconfig.ai-v5.json and tsconfig.ai-v6.json map `ai` to the npm aliases): the AI SDK
// adapter's `prepareStep` is accepted by that major's `generateText` with the system prompt and
// tools given to it, and the Agents SDK filter and its `providerData` by a `Runner`.
import { generateText, jsonSchema, stepCountIs, tool } from "ai";
import type { LanguageModel } from "ai";
import { Agent, Runner } from "@openai/agents";
import { ConversationHistory } from "context-compactor";
import { compactingPrepareStep } from "context-compactor/ai-sdk";
import { compactingInputFilter } from "context-compactor/openai-agents";

declare const model: LanguageModel;

const tools = { search: tool({ description: "Looks an order up", inputSchema: jsonSchema<{ order: number }>({ type: "object", properties: { order: { type: "number" } } }), execute: async ({ order }) => `order ${order}` }) };
const history = new ConversationHistory({ format: "ai-sdk" });
const prepareStep = compactingPrepareStep(history, { budget: { maxTokens: 8_000 }, system: "You are a clerk.", tools });
await generateText({ model, tools, messages: [{ role: "user", content: "hi" }], stopWhen: stepCountIs(20), prepareStep });

// The request's parts are each optional.
history.build({ format: "ai-sdk", request: { system: "You are a clerk." } });
history.build({ format: "ai-sdk", request: { tools: [] } });

const filter = compactingInputFilter(new ConversationHistory({ format: "openai-responses" }), { build: { budget: { maxTokens: 8_000 } } });
const runner = new Runner({ callModelInputFilter: filter, modelSettings: { providerData: filter.providerData } });
await runner.run(new Agent({ name: "clerk", instructions: "Look orders up." }), "hi");
const key: string | undefined = filter.promptCacheKey;

// The checker must refuse a mismatch, which proves this file tests something.
// @ts-expect-error a system prompt is a string or system messages
compactingPrepareStep(history, { system: [{ role: "user", content: "hi" }] });

void key;
