/**
 * An endpoint of the user's own (OpenAI-compatible or Anthropic), for summaries by a model and
 * for chatting on from where the replay ends. The key lives in this module's memory only.
 */
import {
  anthropicSummarizer,
  openAICompatibleSummarizer,
  recallContextTool,
  type AnthropicOutputRequest,
  type Format,
  type Message,
  type OpenAIOutputMessage,
  type Summarizer,
} from "context-compactor/lite";
import type { Replay } from "./replay";

export interface Endpoint {
  api: Format;
  baseURL: string;
  model: string;
  apiKey: string;
}

/** Anthropic refuses calls from a page unless it is told the key is the user's own. */
const browserFetch: typeof fetch = (input, init) => {
  const headers = new Headers(init?.headers);
  headers.set("anthropic-dangerous-direct-browser-access", "true");
  return fetch(input, { ...init, headers });
};

export function summarizerFor(endpoint: Endpoint): Summarizer {
  const options = { baseURL: endpoint.baseURL, model: endpoint.model, apiKey: endpoint.apiKey };
  return endpoint.api === "anthropic" ? anthropicSummarizer({ ...options, fetch: browserFetch }) : openAICompatibleSummarizer(options);
}

async function post(url: string, headers: Record<string, string>, body: unknown): Promise<Record<string, unknown>> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await response.text();
  if (!response.ok) throw new Error(`${url} answered HTTP ${response.status}: ${text.slice(0, 300)}`);
  try {
    return JSON.parse(text) as Record<string, unknown>;
  } catch {
    throw new Error(`${url} answered with something that is not JSON: ${text.slice(0, 100)}`);
  }
}

/** One model call on the replay's context; returns the assistant's message and the usage object. */
async function call(endpoint: Endpoint, messages: OpenAIOutputMessage[] | AnthropicOutputRequest): Promise<{ message: Message; reply: Record<string, unknown> }> {
  const base = endpoint.baseURL.replace(/\/+$/, "");
  if (endpoint.api === "openai") {
    const reply = await post(`${base}/chat/completions`, { authorization: `Bearer ${endpoint.apiKey}` },
      { model: endpoint.model, messages, tools: [recallContextTool("openai")] });
    const message = (reply.choices as Array<{ message?: Message }> | undefined)?.[0]?.message;
    if (!message) throw new Error("the reply has no choices[0].message");
    return { message, reply };
  }
  const { system, messages: list } = messages as AnthropicOutputRequest;
  const reply = await post(`${base}/v1/messages`, { "x-api-key": endpoint.apiKey, "anthropic-version": "2023-06-01", "anthropic-dangerous-direct-browser-access": "true" },
    { model: endpoint.model, max_tokens: 1024, ...(system === undefined ? {} : { system }), messages: list, tools: [recallContextTool("anthropic")] });
  if (!Array.isArray(reply.content)) throw new Error("the reply has no content array");
  return { message: { role: "assistant", content: reply.content } as Message, reply };
}

/**
 * The user's message, then model calls until the model stops calling tools: `recall_context`
 * is answered from the memory; any other tool is answered as unavailable. At most 4 calls.
 */
export async function chatTurn(replay: Replay, endpoint: Endpoint, text: string): Promise<void> {
  const format = endpoint.api;
  replay.appendLive([{ role: "user", content: text } as Message], format);
  for (let calls = 0; calls < 4; calls += 1) {
    const result = await replay.buildFor(format);
    const { message, reply } = await call(endpoint, result.messages as OpenAIOutputMessage[] | AnthropicOutputRequest);
    replay.appendLive([message], format);
    replay.session.history.recordUsage(reply as never);
    const answers = replay.answerToolCalls(message, format);
    if (answers.length === 0) break;
    replay.appendLive(answers, format);
  }
  replay.endLiveTurn(`Chat with ${endpoint.model}: ${text.slice(0, 200)}`);
  await replay.build();
}
