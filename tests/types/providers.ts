// Compiled with `tsc --noEmit` by tests/js/types.test.mjs: what the package hands over must be
// accepted, as typed, by the providers' own SDK parameter types.
import type OpenAI from "openai";
import type Anthropic from "@anthropic-ai/sdk";
import { ConversationHistory, Session, Tokenizer, compact, recallContextTool, answerRecall, fileReaderTool } from "context-compactor";
import type { AppState, SavedArtifact } from "context-compactor";
import type { RequestTokenCount, UsageReport } from "context-compactor";

const history = new ConversationHistory({ format: "openai" });

const forOpenAI = history.build({ format: "openai", profile: "gpt-4o" });
const chat: OpenAI.Chat.Completions.ChatCompletionCreateParamsNonStreaming = {
  model: "gpt-4o",
  messages: forOpenAI.messages,
  tools: [recallContextTool("openai"), fileReaderTool("openai")],
};

// Artifacts and agent state, typed.
const analyst = new Session({ id: "analyst" });
const saved: SavedArtifact = analyst.saveArtifact({ id: "code_sales_analysis", language: "python", content: "x = 1\n" });
const fileName: string = saved.fileName;
analyst.setState({ todos: [{ content: "plot", status: "in_progress" }], activeSkill: "analysis" });
const appState: AppState = analyst.state();
const threadId: string = appState.threadId;
const stateTokens: number = analyst.history.build({ state: { maxTokens: 500 } }).tokens.state;
void [fileName, threadId, stateTokens];

const forAnthropic = history.build({ format: "anthropic" });
const request: Anthropic.MessageCreateParamsNonStreaming = {
  model: "claude-sonnet-4-5",
  max_tokens: 1024,
  ...forAnthropic.messages,
  tools: [recallContextTool("anthropic"), fileReaderTool("anthropic")],
};

async function later(session: Session): Promise<void> {
  const compacted = await compact(session.history, { format: "anthropic" });
  const messages: Anthropic.MessageParam[] = compacted.messages.messages;
  const answer = answerRecall(session.memory!, { id: "toolu_1", type: "tool_use", name: "recall_context", input: { turnNumbers: [1] } });
  session.history.append(answer);
  void messages;
}

void chat;
void request;
void later;

// Without a format the messages may be either provider's: the checker must refuse them here,
// which proves this file really tests something.
const loose = history.build();
// @ts-expect-error the messages may be Anthropic's `{ system, messages }`
const notChat: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = loose.messages;
void notChat;

// A request typed by either SDK is counted as it stands.
const tokenizer = new Tokenizer("o200k_base");
const openAICount: RequestTokenCount = tokenizer.countRequest(chat);
const anthropicCount: RequestTokenCount = tokenizer.countRequest(request, { format: "anthropic", model: request.model });
void openAICount.toolChoice;
void anthropicCount.estimates;

// appendMany: the ids, strictly; { ids, repairs } with { repair: true }.
const strictIds: string[] = history.appendMany([{ role: "user", content: "hi" }]);
const withFormat: string[] = history.appendMany([{ role: "user", content: "hi" }], { format: "openai" });
const lenient = history.appendMany([{ role: "tool", tool_call_id: "cut", content: "x" }], { repair: true });
const repairKinds: string[] = lenient.repairs.map((r) => `${r.index} ${r.kind} ${r.what}`);
const layoutOfSystem: readonly string[] | undefined = forAnthropic.systemLayout?.sources;
void [strictIds, withFormat, lenient.ids, repairKinds, layoutOfSystem];

// recordUsage takes what the SDKs return, as typed, under --strict: the whole response (its
// `usage` is optional in OpenAI's types) or its usage with the model; it reports what it made of it.
declare const claudeReply: Anthropic.Message;
declare const chatReply: OpenAI.Chat.Completions.ChatCompletion;
declare const responsesReply: OpenAI.Responses.Response;
const usageReport: UsageReport = history.recordUsage(claudeReply);
history.recordUsage(claudeReply.usage, { model: claudeReply.model });
history.recordUsage(chatReply);
history.recordUsage(responsesReply);
if (chatReply.usage) history.recordUsage(chatReply.usage, { model: chatReply.model, counted: openAICount.total });
const basis: "exact" | "anchored" | "estimated" = history.tokenCount().basis;
void [usageReport.cacheRead, usageReport.anchored, basis];
