// AI SDK UIMessages through `context-compactor/ai-sdk`'s fromUIMessages/toUIMessages, against the
// real `ai` package (no network): exact round trips (also through a history), agreement with
// `ai`'s own convertToModelMessages, UIMessages made by streamText's UI message stream, a
// compacted long chat that `ai`'s validateUIMessages accepts, and typed errors for bad input.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, InvalidMessageError, validateMessages } from "context-compactor";
import { fromUIMessages, toUIMessages } from "context-compactor/ai-sdk";
import { convertToModelMessages, readUIMessageStream, stepCountIs, streamText, tool, jsonSchema, validateUIMessages } from "ai";
import { MockLanguageModelV4, convertArrayToReadableStream } from "ai/test";

const pm = { openai: { itemId: "it_1" } };
/** Every part kind and tool state a UIMessage can hold. */
const chat = [
  { id: "s1", role: "system", parts: [{ type: "text", text: "You are terse.", providerMetadata: { anthropic: { cacheControl: { type: "ephemeral" } } } }] },
  { id: "s2", role: "system", parts: [{ type: "text", text: "Rule one. " }, { type: "text", text: "Rule two." }] },
  {
    id: "u1", role: "user", metadata: { createdAt: 1700000000000, author: "ann" },
    parts: [
      { type: "text", text: "What is in this file, and the weather?" },
      { type: "file", mediaType: "image/png", filename: "a.png", url: "https://example.com/a.png" },
      { type: "data-weather", id: "w1", data: { city: "Oslo", temp: -3 } },
    ],
  },
  {
    id: "a1", role: "assistant", metadata: { model: "gpt-x", tokens: 42 },
    parts: [
      { type: "step-start" },
      { type: "reasoning", text: "Look at the image, then call the tools.", providerMetadata: pm },
      { type: "text", text: "Checking.", state: "done", providerMetadata: pm },
      { type: "source-url", sourceId: "src1", url: "https://example.com/doc", title: "Doc" },
      { type: "source-document", sourceId: "src2", mediaType: "application/pdf", title: "Manual", filename: "m.pdf" },
      { type: "tool-weather", toolCallId: "c1", state: "output-available", input: { city: "Oslo" }, output: { temp: -3, sky: "snow" }, callProviderMetadata: pm },
      { type: "tool-echo", toolCallId: "c2", state: "output-available", input: { say: "hi" }, output: "hi", title: "Echo" },
      { type: "dynamic-tool", toolName: "lookup", toolCallId: "c3", state: "output-error", input: { q: 1 }, errorText: "not found" },
      { type: "tool-weather", toolCallId: "c4", state: "output-available", input: { city: "Rome" }, output: { temp: 20 }, preliminary: false },
      { type: "step-start" },
      { type: "tool-search", toolCallId: "c5", state: "output-available", input: { q: "news" }, output: { hits: 3 }, providerExecuted: true, resultProviderMetadata: pm },
      { type: "tool-delete", toolCallId: "c6", state: "output-denied", input: { path: "/" }, approval: { id: "ap1", approved: false, reason: "no" } },
      { type: "tool-delete", toolCallId: "c12", state: "approval-requested", input: { path: "/x" }, approval: { id: "ap5" } },
      { type: "data-progress", data: { done: 1 }, transient: false },
      { type: "reasoning-file", mediaType: "image/png", url: "https://example.com/sketch.png", providerMetadata: pm },
      { type: "custom", kind: "openai.compaction", providerMetadata: pm },
      { type: "step-start" },
      { type: "text", text: "Oslo is -3 and snowing." },
    ],
  },
  { id: "u2", role: "user", parts: [{ type: "text", text: "Delete the temp files, and stream the log." }] },
  {
    id: "a2", role: "assistant",
    parts: [
      { type: "step-start" },
      { type: "tool-delete", toolCallId: "c7", state: "approval-responded", input: { path: "/tmp" }, approval: { id: "ap2", approved: true } },
      { type: "tool-delete", toolCallId: "c8", state: "approval-responded", input: { path: "/etc" }, approval: { id: "ap3", approved: false, reason: "system dir" } },
      { type: "tool-delete", toolCallId: "c9", state: "approval-requested", input: { path: "/var" }, approval: { id: "ap4" } },
      { type: "tool-log", toolCallId: "c10", state: "input-available", input: { follow: true } },
      { type: "tool-log", toolCallId: "c11", state: "input-streaming", input: { fol: true } },
    ],
  },
];

/** Our ModelMessages without the keys that keep the UIMessage, as JSON. */
const plain = (messages) =>
  JSON.parse(JSON.stringify(messages, (key, value) => (key === "uiMessage" || key === "uiPart" ? undefined : value)));

test("UIMessages of every part kind and tool state round-trip exactly, also through a history", () => {
  const model = fromUIMessages(chat);
  assert.deepEqual(toUIMessages(model), chat);
  const history = new ConversationHistory({ format: "ai-sdk" });
  history.appendMany(model, "ai-sdk");
  assert.deepEqual(history.messages("ai-sdk"), model, "the codec keeps uiMessage and uiPart");
  assert.deepEqual(toUIMessages(history), chat);
  history.free();
});

test("fromUIMessages agrees with ai's convertToModelMessages on what both convert", async () => {
  const theirs = JSON.parse(JSON.stringify(await convertToModelMessages(chat)));
  assert.deepEqual(plain(fromUIMessages(chat)), theirs);
  // The only rule broken is the one the chat breaks itself: `c10` waits for its output.
  const broken = validateMessages(fromUIMessages(chat), "ai-sdk");
  assert.deepEqual(broken.map((v) => [v.rule, v.message]), [["toolCallsAnswered", 'tool calls ["c10"] are never answered']]);
});

/** One UIMessage as a UI built it from streamText's UI message stream (two steps, a tool). */
async function streamedMessage(i) {
  let calls = 0;
  const model = new MockLanguageModelV4({
    doStream: async () => {
      calls += 1;
      const chunks = calls === 1
        ? [
            { type: "reasoning-start", id: "r" }, { type: "reasoning-delta", id: "r", delta: `Think ${i}.` }, { type: "reasoning-end", id: "r" },
            { type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: `Looking up ${i}.` }, { type: "text-end", id: "t" },
            { type: "tool-call", toolCallId: `call_${i}`, toolName: "search", input: JSON.stringify({ order: i }) },
          ]
        : [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: `Order ${i} shipped.` }, { type: "text-end", id: "t" }];
      chunks.push({ type: "finish", finishReason: { unified: calls === 1 ? "tool-calls" : "stop", raw: undefined }, usage: { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } } });
      return { stream: convertArrayToReadableStream(chunks) };
    },
  });
  const search = tool({
    inputSchema: jsonSchema({ type: "object", properties: { order: { type: "number" } } }),
    execute: async ({ order }) => ({ order, lines: Array.from({ length: 40 }, (_, k) => `item ${order}-${k} shipped`) }),
  });
  const result = streamText({ model, tools: { search }, stopWhen: stepCountIs(2), prompt: `Look up order ${i}` });
  let last;
  for await (const message of readUIMessageStream({ stream: result.toUIMessageStream({ messageMetadata: () => ({ turn: i }) }) })) last = message;
  return JSON.parse(JSON.stringify(last)); // as an app stores it
}

test("UIMessages from streamText's UI message stream round-trip and convert as ai converts them", async () => {
  const assistant = await streamedMessage(1);
  assert.ok(assistant.parts.some((p) => p.type === "tool-search" && p.state === "output-available"), "a finished tool part");
  const ui = [{ id: "u", role: "user", parts: [{ type: "text", text: "Look up order 1" }] }, assistant];
  assert.deepEqual(toUIMessages(fromUIMessages(ui)), ui);
  assert.deepEqual(plain(fromUIMessages(ui)), JSON.parse(JSON.stringify(await convertToModelMessages(ui))));
});

test("a compacted long UIMessage chat comes back as UIMessages ai's validateUIMessages accepts", async () => {
  const ui = [];
  for (let i = 1; i <= 30; i++) {
    ui.push({ id: `u${i}`, role: "user", parts: [{ type: "text", text: `Look up order ${i}` }] }, { ...(await streamedMessage(i)), id: `a${i}` });
  }
  const history = new ConversationHistory({ format: "ai-sdk" });
  history.appendMany(fromUIMessages(ui), "ai-sdk");
  assert.deepEqual(toUIMessages(history), ui, "the history gives the chat back whole");
  const built = history.build({ format: "ai-sdk", budget: { maxTokens: 3000 } });
  assert.ok(built.receipt.withinBudget, `within budget: ${built.receipt.tokensAfter} of ${history.tokenCount().total}`);
  assert.ok(built.receipt.runs.some((run) => run.action !== "kept"), "compaction changed the context");
  const back = toUIMessages(built.messages);
  assert.ok(back.length > 0 && back.length <= ui.length);
  const outputs = back.flatMap((m) => m.parts).filter((p) => p.type === "tool-search").map((p) => JSON.stringify(p.output));
  assert.ok(outputs.some((o) => o.includes("omitted")), "the UIMessages show the compacted tool outputs");
  assert.deepEqual(await validateUIMessages({ messages: back }), back);
  assert.deepEqual(back.at(-1), ui.at(-1), "the last turn is kept whole");
  history.free();
});

test("ModelMessages that never were UIMessages become UIMessages: tool calls and results merged", async () => {
  const model = [
    { role: "system", content: "Be brief." },
    { role: "user", content: "Weather in Oslo and Rome?" },
    { role: "assistant", content: [{ type: "text", text: "Checking." }, { type: "tool-call", toolCallId: "a", toolName: "weather", input: { city: "Oslo" } }, { type: "tool-call", toolCallId: "b", toolName: "weather", input: { city: "Rome" } }] },
    { role: "tool", content: [
      { type: "tool-result", toolCallId: "a", toolName: "weather", output: { type: "json", value: { temp: -3 } } },
      { type: "tool-result", toolCallId: "b", toolName: "weather", output: { type: "error-text", value: "timeout" } },
    ] },
    { role: "assistant", content: [{ type: "text", text: "Oslo is -3." }] },
  ];
  const ui = toUIMessages(model);
  assert.deepEqual(ui, [
    { id: "msg-0", role: "system", parts: [{ type: "text", text: "Be brief." }] },
    { id: "msg-1", role: "user", parts: [{ type: "text", text: "Weather in Oslo and Rome?" }] },
    { id: "msg-2", role: "assistant", parts: [
      { type: "step-start" },
      { type: "text", text: "Checking." },
      { type: "tool-weather", toolCallId: "a", state: "output-available", input: { city: "Oslo" }, output: { temp: -3 } },
      { type: "tool-weather", toolCallId: "b", state: "output-error", input: { city: "Rome" }, errorText: "timeout" },
      { type: "step-start" },
      { type: "text", text: "Oslo is -3." },
    ] },
  ]);
  assert.deepEqual(toUIMessages(model), ui, "deterministic");
  assert.deepEqual(await validateUIMessages({ messages: ui }), ui);
  assert.deepEqual(plain(fromUIMessages(ui)), JSON.parse(JSON.stringify(await convertToModelMessages(ui))));
  assert.deepEqual(plain(fromUIMessages(ui)).slice(2), model.slice(2), "the same steps as the ModelMessages");
});

test("a malformed UIMessage is an InvalidMessageError naming the message index and field", () => {
  const cases = [
    [[chat[2], { id: "x", role: "user", parts: [{ type: "text" }] }], 1, "uiMessages[1].parts[0].text"],
    [[{ id: "x", role: "tool", parts: [] }], 0, "uiMessages[0].role"],
    [[chat[2], chat[3], { role: "user", parts: [] }], 2, "uiMessages[2].id"],
    [[{ id: "x", role: "assistant", parts: [{ type: "tool-x", state: "input-available" }] }], 0, "uiMessages[0].parts[0].toolCallId"],
    [[{ id: "x", role: "user" }], 0, "uiMessages[0].parts"],
  ];
  for (const [list, index, path] of cases) {
    assert.throws(() => fromUIMessages(list), (error) => error instanceof InvalidMessageError && error.index === index && error.path === path && error.message.includes(path), path);
  }
  assert.throws(() => fromUIMessages("nope"), InvalidMessageError);
});

test("toUIMessages refuses what is not a ModelMessage list, and reads a foreign uiMessage key as plain", async () => {
  assert.throws(() => toUIMessages("nope"), (error) => error.name === "InvalidArgumentError");
  assert.throws(() => toUIMessages([{ role: "user", content: "hi" }, null]), (error) => error instanceof InvalidMessageError && error.index === 1);
  const odd = [{ role: "user", content: "hi", uiMessage: { id: "x", parts: "not a list" } }];
  assert.deepEqual(toUIMessages(odd), [{ id: "msg-0", role: "user", parts: [{ type: "text", text: "hi" }] }]);
});
