// Compiled with `tsc --noEmit` (tests/types/tsconfig.json): fromUIMessages/toUIMessages take and
// give `ai`'s own UIMessage and ModelMessage types, also for a UIMessage typed with its tools.
import type { InferUITools, ModelMessage, UIMessage } from "ai";
import { tool, jsonSchema } from "ai";
import { ConversationHistory } from "context-compactor";
import { compactMessages, fromUIMessages, toUIMessages } from "context-compactor/ai-sdk";

const tools = { weather: tool({ inputSchema: jsonSchema<{ city: string }>({ type: "object" }), execute: async () => 1 }) };
type ChatMessage = UIMessage<{ createdAt: number }, { progress: { done: number } }, InferUITools<typeof tools>>;

declare const chat: ChatMessage[];
const history = new ConversationHistory({ format: "ai-sdk" });
const model: ModelMessage[] = fromUIMessages(chat);
const compacted: ModelMessage[] = compactMessages(history, model).messages;
const fromList: UIMessage[] = toUIMessages(compacted);
const fromHistory: UIMessage[] = toUIMessages(history);

// @ts-expect-error a UIMessage needs parts
fromUIMessages([{ id: "x", role: "user" }]);
// @ts-expect-error toUIMessages gives UIMessages, not ModelMessages
const wrong: ModelMessage[] = toUIMessages(model);

void [fromList, fromHistory, wrong];
