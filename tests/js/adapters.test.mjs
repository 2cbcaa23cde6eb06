// The drop-in adapters against the real frameworks, no network: an AI SDK agent loop
// (generateText and streamText with tools, stopWhen and prepareStep, on `ai/test`'s
// MockLanguageModelV4) and an OpenAI Agents SDK loop (Runner with a Model of our own) run 200
// model calls through the adapters. Every request the model receives must be valid for its
// format and within the budget, and the history must keep everything whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, Tokenizer, validateMessages } from "context-compactor";
import { compactMessages, compactingPrepareStep } from "context-compactor/ai-sdk";
import { CompactingSession, fromResponsesItem, toResponsesItem } from "context-compactor/openai-agents";
import { generateText, streamText, stepCountIs, tool, jsonSchema } from "ai";
import { MockLanguageModelV4, convertArrayToReadableStream } from "ai/test";
import { Agent, Runner, tool as agentTool } from "@openai/agents";
// The SDK's own converter (what its OpenAIResponsesModel sends), not exported by the package root.
import { getInputItems } from "../../node_modules/@openai/agents-openai/dist/openaiResponsesConverter.mjs";

const STEPS = 200;
const BUDGET = 6000;
const tokenizer = new Tokenizer("o200k_base");
const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};
/** A tool output of a few hundred tokens: 200 of them are far over the budget. */
const lookup = (i) => `order ${i}: ` + Array.from({ length: 60 }, (_, k) => `item-${i}-${k} shipped`).join(", ");

const searchTool = tool({
  description: "Looks an order up",
  inputSchema: jsonSchema({ type: "object", properties: { order: { type: "number" } }, required: ["order"] }),
  execute: async ({ order }) => lookup(order),
});

/** The model's turn `i`: a call of the tool (with some reasoning), or, at the end, the answer. */
function reply(i, last) {
  if (last) return [{ type: "text", text: `All ${i} orders looked up.` }];
  return [
    { type: "reasoning", text: `I should look up order ${i}.` },
    { type: "text", text: `Looking up order ${i}.` },
    { type: "tool-call", toolCallId: `call_${i}`, toolName: "search", input: JSON.stringify({ order: i }) },
  ];
}

function checkStep(prepare, prompt, calls) {
  const step = prepare.last;
  assert.ok(step, `call ${calls}: prepareStep ran`);
  assert.deepEqual(validateMessages(step.messages, "ai-sdk"), [], `call ${calls}: valid ModelMessages`);
  assert.ok(step.receipt.withinBudget, `call ${calls}: within budget`);
  assert.ok(step.receipt.tokensAfter <= BUDGET, `call ${calls}: ${step.receipt.tokensAfter} ≤ ${BUDGET}`);
  // The model receives what prepareStep returned (the SDK's prompt form of it).
  assert.equal(prompt.length, step.messages.length, `call ${calls}: the prompt is the compacted list`);
  assert.deepEqual(validateMessages(prompt, "ai-sdk"), [], `call ${calls}: the prompt as received is valid`);
  const counted = tokenizer.countMessages(prompt, { format: "ai-sdk" });
  assert.ok(counted.total <= BUDGET, `call ${calls}: the prompt counts ${counted.total} ≤ ${BUDGET}`);
}

test(`an AI SDK generateText loop of ${STEPS} steps through compactingPrepareStep`, async () => {
  const history = new ConversationHistory({ format: "ai-sdk" });
  const prepare = compactingPrepareStep(history, { budget: { maxTokens: BUDGET } });
  let calls = 0;
  const model = new MockLanguageModelV4({
    doGenerate: async ({ prompt }) => {
      checkStep(prepare, prompt, calls);
      calls += 1;
      return { content: reply(calls, calls === STEPS), finishReason: { unified: calls === STEPS ? "stop" : "tool-calls", raw: undefined }, usage, warnings: [] };
    },
  });
  const result = await generateText({
    model,
    tools: { search: searchTool },
    stopWhen: stepCountIs(STEPS),
    prepareStep: prepare,
    messages: [{ role: "user", content: "Look up every order, one at a time." }],
  });
  assert.equal(calls, STEPS);
  assert.equal(result.steps.length, STEPS);
  // Lossless: the history holds every message the run made, whole.
  // (The user's message, then each step's assistant and tool messages; the last step's answer
  // comes after the last prepareStep.)
  assert.equal(history.length, 1 + 2 * (STEPS - 1));
  const stored = history.messages("ai-sdk");
  const calledFor = stored.flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((p) => p.type === "tool-call").map((p) => p.input.order);
  assert.deepEqual(calledFor, Array.from({ length: STEPS - 1 }, (_, i) => i + 1));
  const results = stored.filter((m) => m.role === "tool").map((m) => m.content[0].output.value);
  assert.deepEqual(results, Array.from({ length: STEPS - 1 }, (_, i) => lookup(i + 1)), "every tool output whole");
  assert.ok(history.tokenCount().total > 10 * BUDGET, "the run was far over the budget");
  const dropped = prepare.last.receipt.runs.filter((r) => r.action !== "kept").length;
  assert.ok(dropped > 0, "the receipt says what was left out");
  console.log(`# ai-sdk generateText: ${calls} calls, history ${history.tokenCount().total} tokens, last context ${prepare.last.receipt.tokensAfter}`);
  history.free();
});

test("an AI SDK streamText loop through compactingPrepareStep", async () => {
  const history = new ConversationHistory({ format: "ai-sdk" });
  const prepare = compactingPrepareStep(history, { budget: { maxTokens: BUDGET } });
  const steps = 60;
  let calls = 0;
  const model = new MockLanguageModelV4({
    doStream: async ({ prompt }) => {
      checkStep(prepare, prompt, calls);
      calls += 1;
      const last = calls === steps;
      const chunks = last
        ? [{ type: "text-start", id: "t" }, { type: "text-delta", id: "t", delta: "done" }, { type: "text-end", id: "t" }]
        : [
            { type: "text-start", id: "t" },
            { type: "text-delta", id: "t", delta: `Looking up order ${calls}.` },
            { type: "text-end", id: "t" },
            { type: "tool-call", toolCallId: `call_${calls}`, toolName: "search", input: JSON.stringify({ order: calls }) },
          ];
      chunks.push({ type: "finish", finishReason: { unified: last ? "stop" : "tool-calls", raw: undefined }, usage });
      return { stream: convertArrayToReadableStream(chunks) };
    },
  });
  const result = streamText({
    model,
    tools: { search: searchTool },
    stopWhen: stepCountIs(steps),
    prepareStep: prepare,
    messages: [{ role: "user", content: "Look up every order." }],
  });
  assert.equal(await result.text, "done");
  assert.equal(calls, steps);
  history.free();
});

test("compactMessages appends what the list holds beyond the history, then builds", () => {
  const history = new ConversationHistory({ format: "ai-sdk" });
  const conversation = [{ role: "user", content: "hi" }];
  const first = compactMessages(history, conversation);
  assert.equal(history.length, 1);
  assert.deepEqual(first.messages, conversation);
  conversation.push({ role: "assistant", content: "hello" }, { role: "user", content: "again" });
  const second = compactMessages(history, conversation);
  assert.equal(history.length, 3);
  assert.deepEqual(second.messages, conversation);
  assert.equal(second.receipt.runs.length, 1);
  history.free();
});

test("Agents SDK items map to Responses items and back unchanged", () => {
  const items = [
    { role: "user", content: "hi" },
    { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text: "calling" }] },
    { type: "reasoning", id: "rs_1", content: [], providerData: { encryptedContent: "gAAA" } },
    { type: "function_call", callId: "c1", name: "search", arguments: "{}", status: "completed", id: "fc_1" },
    { type: "function_call_result", callId: "c1", name: "search", status: "completed", output: { type: "text", text: "ok" } },
    { type: "function_call_result", callId: "c2", name: "search", status: "completed", output: "plain" },
  ];
  for (const item of items) assert.deepEqual(fromResponsesItem(toResponsesItem(item)), item);
  // What the history stores is what the real SDK sends to the Responses API, for what matters.
  const mine = items.map(toResponsesItem);
  const theirs = getInputItems(items);
  assert.equal(mine[4].type, theirs[4].type);
  assert.equal(mine[4].call_id, theirs[4].call_id);
  assert.equal(mine[3].call_id, theirs[3].call_id);
});

test(`an OpenAI Agents SDK loop of ${STEPS} model calls through CompactingSession`, async () => {
  const history = new ConversationHistory({ format: "openai-responses" });
  const builds = [];
  const session = new CompactingSession({ history, build: { budget: { maxTokens: BUDGET } }, onBuild: (b) => builds.push(b) });
  let calls = 0;
  let turn = 0;
  // A Model of the Agents SDK's interface: a function call first, the answer once its output came.
  const model = {
    async getResponse(request) {
      calls += 1;
      const input = getInputItems(request.input);
      assert.deepEqual(validateMessages(input, "openai-responses"), [], `call ${calls}: the request is valid`);
      const counted = tokenizer.countMessages(input.filter((i) => i.type !== "reasoning"), { format: "openai-responses" });
      // The session's items are within the budget; the run's own items (this turn) come on top.
      assert.ok(counted.total <= BUDGET + 1200, `call ${calls}: ${counted.total} tokens`);
      const last = input.at(-1);
      const output = last.type === "function_call_output"
        ? [{ type: "message", role: "assistant", status: "completed", id: `msg_${calls}`, content: [{ type: "output_text", text: `Order ${turn} done.` }] }]
        : [
            { type: "reasoning", id: `rs_${calls}`, content: [], providerData: { encryptedContent: `enc-${calls}` } },
            { type: "function_call", id: `fc_${calls}`, callId: `call_${calls}`, name: "search", arguments: JSON.stringify({ order: turn }), status: "completed" },
          ];
      return { output, usage: { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }, responseId: `resp_${calls}` };
    },
    async *getStreamedResponse() {
      throw new Error("not streamed in this test");
    },
  };
  const search = agentTool({
    name: "search",
    description: "Looks an order up",
    parameters: { type: "object", properties: { order: { type: "number" } }, required: ["order"], additionalProperties: false },
    strict: true,
    execute: async ({ order }) => lookup(order),
  });
  const agent = new Agent({ name: "clerk", instructions: "Look orders up.", model, tools: [search] });
  const runner = new Runner({ tracingDisabled: true });
  while (calls < STEPS) {
    turn += 1;
    const result = await runner.run(agent, `Look up order ${turn}.`, { session });
    assert.equal(result.finalOutput, `Order ${turn} done.`);
  }
  assert.equal(calls, STEPS);
  // Lossless: every item of every turn is in the history (user, reasoning, call, output, answer).
  assert.equal(session.history.length, 5 * turn);
  for (const build of builds) {
    assert.deepEqual(validateMessages(build.messages, "openai-responses"), [], "each build is valid");
    assert.ok(build.receipt.tokensAfter <= BUDGET, `${build.receipt.tokensAfter} ≤ ${BUDGET}`);
  }
  assert.ok(session.history.tokenCount().total > 5 * BUDGET, "the run was far over the budget");
  // popItem and clearSession act on the whole history.
  const popped = await session.popItem();
  assert.equal(popped.role, "assistant");
  assert.equal(session.history.length, 5 * turn - 1);
  await session.clearSession();
  assert.equal(session.history.length, 0);
  assert.deepEqual(await session.getItems(), []);
  console.log(`# openai-agents: ${calls} calls over ${turn} runs, ${builds.length} builds`);
});
