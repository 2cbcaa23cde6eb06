// What a reader of the README already has where a block uses a name it does not make: their
// model, tools, API key, messages… typed as the SDKs type them, so that each block is checked as
// it would be in the reader's code (scripts/readme-types.mjs). A block that uses a package export
// without importing it (it was imported in a block above) finds it here too.
import type OpenAI from "openai";
import type Anthropic from "@anthropic-ai/sdk";
import type { LanguageModel, ModelMessage, ToolSet, UIMessage as AiUIMessage } from "ai";
import type { Agent } from "@openai/agents";
import type * as cc from "context-compactor";
import type * as aiSdk from "context-compactor/ai-sdk";

declare global {
  const apiKey: string;
  const task: string;
  const callId: string;
  const code: string;
  const i: number;
  const file: File;
  const workspace: { render(): string };
  const myTools: OpenAI.Chat.ChatCompletionTool[];
  const claudeRequest: Anthropic.MessageCreateParams;
  const reply: OpenAI.Chat.ChatCompletion;
  const resumedLog: object[];
  const items: OpenAI.Responses.ResponseInputItem[];
  const mySummariser: (messages: cc.SummaryRequest["messages"], maxTokens: number) => Promise<string>;
  const runTool: (call: OpenAI.Chat.ChatCompletionMessageFunctionToolCall) => Promise<OpenAI.Chat.ChatCompletionToolMessageParam>;
  const call: Parameters<cc.Session["answerFileReader"]>[0];
  // An Anthropic agent's tools and the code that runs them.
  const claudeTools: Anthropic.Tool[];
  const runClaudeTool: (call: Anthropic.ToolUseBlock) => Promise<Anthropic.ToolResultBlockParam>;
  // The AI SDK's.
  const model: LanguageModel;
  const tools: ToolSet;
  const messages: ModelMessage[];
  const modelMessages: ModelMessage[];
  const uiMessages: AiUIMessage[];
  type UIMessage = AiUIMessage;
  // The Agents SDK's.
  const agent: Agent;
  // A server's: its web framework (an Express-like app), its PostgreSQL pool, its summariser.
  const app: {
    post(path: string, handler: (req: { params: Record<string, string>; body: { message: cc.MessageInput; requestId: string } }, res: { json(body: unknown): void }) => Promise<void>): void;
  };
  const pool: import("pg").Pool;
  const summarize: cc.Summarizer;
  // A conversation loaded from a file, the issue a harness's first message is not.
  const loaded: cc.LoadedConversation;
  const issue: string;
  // The package's, imported in an earlier block.
  const ConversationHistory: typeof cc.ConversationHistory;
  type ConversationHistory = cc.ConversationHistory;
  const SessionStore: typeof cc.SessionStore;
  const validateMessages: typeof cc.validateMessages;
  const fromUIMessages: typeof aiSdk.fromUIMessages;
  const toUIMessages: typeof aiSdk.toUIMessages;
}
