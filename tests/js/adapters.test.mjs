// The drop-in adapters against the real frameworks, no network: an AI SDK agent loop
// (generateText and streamText with tools, stopWhen and prepareStep, on each supported major of
// `ai`, installed side by side as npm aliases, with its own `ai/test` mock model) and an OpenAI
// Agents SDK loop (Runner with a Model of our own) run 200 model calls through the adapters.
// Every request the model receives must be valid for its format and within the budget, and the
// history must keep everything whole.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { ConversationHistory, InvalidArgumentError, Tokenizer, convertMessages, validateMessages } from "context-compactor";
import { compactMessages, compactingPrepareStep, toolDefinitions } from "context-compactor/ai-sdk";
import { CompactingSession, agentToolDefinitions, compactingInputFilter, fromResponsesItem, toResponsesItem } from "context-compactor/openai-agents";
import * as ai5 from "ai-v5";
import * as ai5test from "ai-v5/test";
import * as ai6 from "ai-v6";
import * as ai6test from "ai-v6/test";
import * as ai7 from "ai";
import * as ai7test from "ai/test";
import { Agent, Runner, handoff, tool as agentTool } from "@openai/agents";
// The SDK's own converter (what its OpenAIResponsesModel sends), not exported by the package root.
import { getInputItems } from "../../node_modules/@openai/agents-openai/dist/openaiResponsesConverter.mjs";
import { convertTool } from "../../node_modules/@openai/agents-openai/dist/openaiResponsesModel.mjs";
/** A handoff as the Responses function tool the SDK's OpenAI model sends. */
const convertHandoffTool = (h) => ({ type: "function", name: h.toolName, description: h.toolDescription, parameters: h.inputJsonSchema, strict: h.strictJsonSchema });

const STEPS = 200;
const BUDGET = 6000;
/** The Agents SDK agent's instructions, long enough to matter. */
const INSTRUCTIONS = "Look orders up, one at a time. " + Array.from({ length: 120 }, (_, k) => `Rule ${k}: never guess a status.`).join(" ");
/** A system prompt of some length: the budget must cover it on every call. */
const SYSTEM = "You are an order clerk. " + Array.from({ length: 40 }, (_, k) => `Rule ${k}: check the order's status before you answer.`).join(" ");
const tokenizer = new Tokenizer("o200k_base");
/** A tool output of a few hundred tokens: 200 of them are far over the budget. */
const lookup = (i) => `order ${i}: ` + Array.from({ length: 60 }, (_, k) => `item-${i}-${k} shipped`).join(", ");

const require = createRequire(import.meta.url);
const version = (name) => require(`${name}/package.json`).version;

/**
 * Each supported major of `ai` with what differs between them for a mock model: its mock class
 * (language model spec v2, v3, v4), and the finish reason and usage shapes of that spec.
 */
const MAJORS = [
  { major: 5, ai: ai5, Mock: ai5test.MockLanguageModelV2, stream: ai5test.convertArrayToReadableStream, pkg: "ai-v5" },
  { major: 6, ai: ai6, Mock: ai6test.MockLanguageModelV3, stream: ai6test.convertArrayToReadableStream, pkg: "ai-v6" },
  { major: 7, ai: ai7, Mock: ai7test.MockLanguageModelV4, stream: ai7test.convertArrayToReadableStream, pkg: "ai" },
].map((m) => ({
  ...m,
  finish: (reason) => (m.major === 5 ? reason : { unified: reason, raw: undefined }),
  usage:
    m.major === 5
      ? { inputTokens: 10, outputTokens: 5, totalTokens: 15 }
      : { inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: 5, text: 5, reasoning: undefined } },
}));

test("the AI SDK majors under test are the ones installed: ai 5, 6 and 7", () => {
  assert.deepEqual(MAJORS.map((m) => Number(version(m.pkg).split(".")[0])), [5, 6, 7]);
  const peer = require("../../package.json").peerDependencies?.ai;
  assert.equal(peer, "^5.0.0 || ^6.0.0 || ^7.0.0", "the peer range names the same majors");
  assert.equal(require("../../package.json").peerDependenciesMeta?.ai?.optional, true);
});

const searchTool = (ai) =>
  ai.tool({
    description: "Looks an order up",
    inputSchema: ai.jsonSchema({ type: "object", properties: { order: { type: "number" } }, required: ["order"] }),
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

/** The language model's tools (`doGenerate`'s `tools`) as the Chat function definitions they are sent as. */
const chatTools = (tools = []) =>
  tools.map((t) => ({ type: "function", function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.inputSchema } }));

/**
 * The request the model received (`doGenerate`'s or `doStream`'s options: the prompt with its system
 * message, and the tools), counted as the build counts an AI SDK request: by Chat Completions' rules.
 */
function countReceived({ prompt, tools }) {
  return tokenizer.countRequest({ messages: convertMessages(prompt, "ai-sdk", "openai"), ...(tools?.length ? { tools: chatTools(tools) } : {}) });
}

function checkStep(prepare, options, calls, system = undefined) {
  const { prompt } = options;
  const step = prepare.last;
  assert.ok(step, `call ${calls}: prepareStep ran`);
  assert.deepEqual(validateMessages(step.messages, "ai-sdk"), [], `call ${calls}: valid ModelMessages`);
  assert.ok(step.receipt.withinBudget, `call ${calls}: within budget`);
  assert.ok(step.receipt.tokensAfter <= BUDGET, `call ${calls}: ${step.receipt.tokensAfter} ≤ ${BUDGET}`);
  // The model receives what prepareStep returned (the SDK's prompt form of it), after the system prompt.
  const messages = system === undefined ? prompt : prompt.slice(1);
  if (system !== undefined) assert.deepEqual([prompt[0].role, prompt[0].content], ["system", system], `call ${calls}: the system prompt is sent`);
  assert.equal(messages.length, step.messages.length, `call ${calls}: the prompt is the compacted list`);
  assert.deepEqual(validateMessages(prompt, "ai-sdk"), [], `call ${calls}: the prompt as received is valid`);
  // The whole request as billed: the system prompt, the messages and the tool definitions.
  const counted = countReceived(options);
  assert.ok(counted.total <= BUDGET, `call ${calls}: the request counts ${counted.total} ≤ ${BUDGET}`);
  return counted;
}

for (const { major, ai, Mock, stream, finish, usage } of MAJORS) {
  test(`ai ${major}: a generateText loop of ${STEPS} steps through compactingPrepareStep, the system prompt and tools counted`, async () => {
    const history = new ConversationHistory({ format: "ai-sdk" });
    const tools = { search: searchTool(ai) };
    const prepare = compactingPrepareStep(history, { budget: { maxTokens: BUDGET }, system: SYSTEM, tools });
    let calls = 0;
    let fullest = 0;
    const model = new Mock({
      doGenerate: async (options) => {
        const counted = checkStep(prepare, options, calls, SYSTEM);
        fullest = Math.max(fullest, counted.total);
        // What the build took out of the budget for them is what they count in the request.
        assert.equal(prepare.last.receipt.budget.requestTokens, counted.system + counted.tools, `call ${calls}: the request's parts as counted`);
        calls += 1;
        return { content: reply(calls, calls === STEPS), finishReason: finish(calls === STEPS ? "stop" : "tool-calls"), usage, warnings: [] };
      },
    });
    const result = await ai.generateText({
      model,
      tools,
      stopWhen: ai.stepCountIs(STEPS),
      prepareStep: prepare,
      messages: [{ role: "user", content: "Look up every order, one at a time." }],
    });
    assert.equal(calls, STEPS);
    // The budget was used: the requests filled it close to the top between compaction events.
    assert.ok(fullest > BUDGET * 0.9, `the fullest request counts ${fullest}`);
    assert.equal(result.steps.length, STEPS);
    // Lossless: the history holds every message the run made, whole, once.
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
    console.log(`# ai ${major} generateText: ${calls} calls, history ${history.tokenCount().total} tokens, fullest request ${fullest}, last context ${prepare.last.receipt.tokensAfter}`);
    history.free();
  });

  test(`ai ${major}: a streamText loop through compactingPrepareStep`, async () => {
    const history = new ConversationHistory({ format: "ai-sdk" });
    const tools = { search: searchTool(ai) };
    const prepare = compactingPrepareStep(history, { budget: { maxTokens: BUDGET }, system: SYSTEM, tools });
    const steps = 60;
    let calls = 0;
    const model = new Mock({
      doStream: async (options) => {
        checkStep(prepare, options, calls, SYSTEM);
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
        chunks.push({ type: "finish", finishReason: finish(last ? "stop" : "tool-calls"), usage });
        return { stream: stream(chunks) };
      },
    });
    const result = ai.streamText({
      model,
      tools,
      stopWhen: ai.stepCountIs(steps),
      prepareStep: prepare,
      messages: [{ role: "user", content: "Look up every order." }],
    });
    assert.equal(await result.text, "done");
    assert.equal(calls, steps);
    assert.equal(history.length, 1 + 2 * (steps - 1), "every step's messages, once");
    history.free();
  });
}

test("ai 7: messages added by experimental_steering during a run are kept, in order, and sent", async () => {
  const { ai, Mock, finish, usage } = MAJORS[2];
  const history = new ConversationHistory({ format: "ai-sdk" });
  const prepare = compactingPrepareStep(history, { budget: { maxTokens: BUDGET } });
  const steering = ai.experimental_createSteering();
  const steps = 12;
  let calls = 0;
  const outcomes = [];
  const model = new Mock({
    doGenerate: async (options) => {
      const { prompt } = options;
      checkStep(prepare, options, calls);
      calls += 1;
      // The user steers while the model works on step 5: the message joins at the next step.
      if (calls === 5) outcomes.push(steering.steer("Skip order 7, it was cancelled."));
      if (calls === 6) {
        const last = prompt.at(-1);
        assert.equal(last.role, "user", "the steering message is sent at the next step");
        assert.match(JSON.stringify(last.content), /Skip order 7/);
      }
      return { content: reply(calls, calls === steps), finishReason: finish(calls === steps ? "stop" : "tool-calls"), usage, warnings: [] };
    },
  });
  await ai.generateText({
    model,
    tools: { search: searchTool(ai) },
    stopWhen: ai.stepCountIs(steps),
    prepareStep: prepare,
    experimental_steering: steering,
    messages: [{ role: "user", content: "Look up every order." }],
  });
  assert.equal(calls, steps);
  const outcome = await outcomes[0];
  assert.equal(outcome.type, "delivered", JSON.stringify(outcome));
  const stored = history.messages("ai-sdk");
  const users = stored.map((m, i) => [i, m]).filter(([, m]) => m.role === "user");
  assert.equal(users.length, 2, "the steering message is in the history");
  // After step 5's assistant and tool messages: 1 + 2 * 5.
  assert.equal(users[1][0], 1 + 2 * 5);
  assert.match(JSON.stringify(users[1][1].content), /Skip order 7/);
  assert.equal(history.length, 1 + 2 * (steps - 1) + 1);
  history.free();
});

/** Anthropic's cache breakpoints in a received prompt: the indexes of the messages marked. */
const marked = (prompt) => prompt.flatMap((m, i) => (m.providerOptions?.anthropic?.cacheControl ? [i] : []));

test("the cache hints reach the model: the system prompt marked where the SDK takes a mark (ai 6, 7), at most 4 marks", async () => {
  for (const { major, ai, Mock, finish, usage } of MAJORS) {
    for (const cache of [undefined, { ttl: "1h" }, { maxBreakpoints: 1 }, null]) {
      const history = new ConversationHistory({ format: "ai-sdk" });
      const tools = { search: searchTool(ai) };
      const prepare = compactingPrepareStep(history, { budget: { maxTokens: BUDGET }, system: SYSTEM, tools, ...(cache !== undefined ? { cache } : {}) });
      const steps = 40;
      let calls = 0;
      const what = `ai ${major}, cache ${JSON.stringify(cache)}`;
      const model = new Mock({
        doGenerate: async (options) => {
          const { prompt } = options;
          checkStep(prepare, options, calls, SYSTEM);
          calls += 1;
          const marks = marked(prompt);
          if (cache === null) assert.deepEqual(marks, [], `${what}: no hints on request`);
          else {
            assert.ok(marks.length >= 1 && marks.length <= (cache?.maxBreakpoints ?? 4), `${what}, call ${calls}: ${marks.length} marks`);
            assert.ok(marks.includes(prompt.length - 1), `${what}, call ${calls}: the last message is marked`);
            // ai 5 takes the system prompt as a string: no mark; a single breakpoint goes to the last message.
            const systemMarked = major !== 5 && cache?.maxBreakpoints !== 1;
            assert.equal(marks.includes(0), systemMarked, `${what}, call ${calls}: the system prompt's mark`);
            const control = prompt[marks[0]].providerOptions.anthropic.cacheControl;
            assert.deepEqual(control, cache?.ttl === "1h" ? { type: "ephemeral", ttl: "1h" } : { type: "ephemeral" }, `${what}: the build's ttl`);
          }
          return { content: reply(calls, calls === steps), finishReason: finish(calls === steps ? "stop" : "tool-calls"), usage, warnings: [] };
        },
      });
      await ai.generateText({ model, tools, stopWhen: ai.stepCountIs(steps), prepareStep: prepare, messages: [{ role: "user", content: "Look up every order." }] });
      assert.equal(calls, steps, what);
      history.free();
    }
  }
});

test("ai 7: the instructions given to generateText are counted and sent with their cache mark, without the system option", async () => {
  const { ai, Mock, finish, usage } = MAJORS[2];
  const history = new ConversationHistory({ format: "ai-sdk" });
  const tools = { search: searchTool(ai) };
  const prepare = compactingPrepareStep(history, { budget: { maxTokens: BUDGET }, tools });
  const steps = 60;
  let calls = 0;
  const model = new Mock({
    doGenerate: async (options) => {
      const counted = checkStep(prepare, options, calls, SYSTEM);
      assert.equal(prepare.last.receipt.budget.requestTokens, counted.system + counted.tools, `call ${calls}: the instructions are counted`);
      assert.ok(marked(options.prompt).includes(0), `call ${calls}: the instructions carry the mark`);
      calls += 1;
      return { content: reply(calls, calls === steps), finishReason: finish(calls === steps ? "stop" : "tool-calls"), usage, warnings: [] };
    },
  });
  await ai.generateText({ model, instructions: SYSTEM, tools, stopWhen: ai.stepCountIs(steps), prepareStep: prepare, messages: [{ role: "user", content: "Look up every order." }] });
  assert.equal(calls, steps);
  history.free();
});

test("compactingPrepareStep refuses a system prompt that is not one, by name", () => {
  const history = new ConversationHistory({ format: "ai-sdk" });
  assert.throws(() => compactingPrepareStep(history, { system: [{ role: "user", content: "hi" }] }), (e) => e instanceof InvalidArgumentError && /system\[0\]/.test(e.message));
  assert.throws(() => compactingPrepareStep(history, { system: 42 }), (e) => e instanceof InvalidArgumentError && /compactingPrepareStep: system/.test(e.message));
  history.free();
});

test("prepareStep from an AI SDK outside ai 5-7 is a clear InvalidArgumentError, not a TypeError", () => {
  const history = new ConversationHistory({ format: "ai-sdk" });
  const prepare = compactingPrepareStep(history);
  // ai 4's experimental_prepareStep had no messages.
  assert.throws(
    () => prepare({ model: {}, stepNumber: 0, maxSteps: 5, steps: [] }),
    (e) => e instanceof InvalidArgumentError && /ai`\) 5, 6 and 7/.test(e.message) && /maxSteps, model, stepNumber, steps/.test(e.message),
  );
  assert.throws(() => prepare(undefined), InvalidArgumentError);
  assert.equal(history.length, 0);
  history.free();
});

test("compactMessages appends what the list holds beyond the history, then builds", () => {
  const history = new ConversationHistory({ format: "ai-sdk" });
  const conversation = [{ role: "user", content: "hi" }];
  // The pinned task (which survives compaction events) and the last message carry the cache hint
  // Anthropic's provider reads; the rest is as given.
  const hinted = (list) =>
    list.map((m, i) => (i === 0 || i === list.length - 1 ? { ...m, providerOptions: { anthropic: { cacheControl: { type: "ephemeral" } } } } : m));
  const first = compactMessages(history, conversation);
  assert.equal(history.length, 1);
  assert.deepEqual(first.messages, hinted(conversation));
  conversation.push({ role: "assistant", content: "hello" }, { role: "user", content: "again" });
  const second = compactMessages(history, conversation);
  assert.equal(history.length, 3);
  assert.deepEqual(second.messages, hinted(conversation));
  assert.deepEqual(compactMessages(history, conversation, { cache: null }).messages, conversation, "hints off on request");
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

for (const streamed of [false, true]) {
  test(`an OpenAI Agents SDK run of ${STEPS} model calls${streamed ? ", streamed," : ""} through compactingInputFilter`, async () => {
    const history = new ConversationHistory({ format: "openai-responses" });
    const builds = [];
    const callModelInputFilter = compactingInputFilter(history, { build: { budget: { maxTokens: BUDGET } }, onBuild: (b) => builds.push(b) });
    let calls = 0;
    let buildsBefore = 0;
    let fullest = 0;
    let keyed = 0;
    /** The model's answer to `request`: a function call until the last call, then the answer. */
    const respond = (request) => {
      calls += 1;
      const input = getInputItems(request.input);
      assert.deepEqual(validateMessages(input, "openai-responses"), [], `call ${calls}: the request is valid`);
      assert.equal(request.systemInstructions, INSTRUCTIONS, `call ${calls}: the instructions are sent`);
      // The whole request as its OpenAI model sends it: the instructions, the input and the tool
      // definitions (the agent's function tool and its handoff), by the Responses counting rule.
      const tools = [...request.tools.map((t) => convertTool(t).tool), ...request.handoffs.map((h) => convertHandoffTool(h))];
      assert.deepEqual(tools.map((t) => t.name), ["search", "transfer_to_billing", "transfer_to_returns_desk"]);
      const counted = tokenizer.countRequest(
        { instructions: request.systemInstructions, input: input.filter((i) => i.type !== "reasoning"), tools },
        { format: "openai-responses" },
      );
      assert.ok(counted.total <= BUDGET, `call ${calls}: ${counted.total} ≤ ${BUDGET} tokens`);
      fullest = Math.max(fullest, counted.total);
      assert.equal(builds.length, buildsBefore + calls, "the filter built the input of every call");
      const build = builds.at(-1);
      assert.equal(build.receipt.budget.requestTokens, counted.system + counted.tools, `call ${calls}: the request's parts as counted`);
      // The conversation's prompt_cache_key, in the model settings, from the conversation's second call on.
      const key = request.modelSettings.providerData?.prompt_cache_key;
      if (builds.length > 1) assert.equal(key, build.promptCacheKey, `call ${calls}: prompt_cache_key`);
      if (key !== undefined) keyed += 1;
      const output = calls === STEPS
        ? [{ type: "message", role: "assistant", status: "completed", id: `msg_${calls}`, content: [{ type: "output_text", text: "All orders done." }] }]
        : [
            { type: "reasoning", id: `rs_${calls}`, content: [], providerData: { encryptedContent: `enc-${calls}` } },
            { type: "function_call", id: `fc_${calls}`, callId: `call_${calls}`, name: "search", arguments: JSON.stringify({ order: calls }), status: "completed" },
          ];
      return { output, usage: { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }, responseId: `resp_${calls}` };
    };
    const model = {
      async getResponse(request) {
        return respond(request);
      },
      async *getStreamedResponse(request) {
        const { output, usage, responseId } = respond(request);
        yield { type: "response_started" };
        yield { type: "response_done", response: { id: responseId, usage, output } };
      },
    };
    const search = agentTool({
      name: "search",
      description: "Looks an order up",
      parameters: { type: "object", properties: { order: { type: "number" } }, required: ["order"], additionalProperties: false },
      strict: true,
      execute: async ({ order }) => lookup(order),
    });
    const billing = handoff(new Agent({ name: "billing", instructions: "Bills.", model }));
    // A handoff made with handoff(), and an agent given as one (the SDK makes its handoff).
    const returns = new Agent({ name: "returns desk", handoffDescription: "Takes returned orders back.", instructions: "Returns.", model });
    const agent = new Agent({ name: "clerk", instructions: INSTRUCTIONS, model, tools: [search], handoffs: [billing, returns] });
    const runner = new Runner({ tracingDisabled: true, callModelInputFilter, modelSettings: { providerData: callModelInputFilter.providerData } });
    const result = await runner.run(agent, "Look up every order.", { maxTurns: STEPS + 1, stream: streamed });
    if (streamed) await result.completed;
    assert.equal(result.finalOutput, "All orders done.");
    assert.equal(calls, STEPS);
    // Lossless: the user's message, and each call's reasoning, function call and its output, once.
    assert.equal(history.length, 1 + 3 * (STEPS - 1));
    const outputs = history.messages("openai-responses").filter((m) => m.type === "function_call_output").map((m) => m.output);
    assert.deepEqual(outputs, Array.from({ length: STEPS - 1 }, (_, i) => lookup(i + 1)), "every tool output whole");
    assert.ok(history.tokenCount().total > 5 * BUDGET, "the run was far over the budget");
    assert.equal(callModelInputFilter.lastBuild, builds.at(-1));
    // A second run that repeats the conversation (result.history) continues the same history.
    calls = STEPS - 1;
    buildsBefore = builds.length - calls;
    const again = await runner.run(agent, [...result.history, { role: "user", content: "And order 500?" }], { maxTurns: 3 });
    assert.equal(again.finalOutput, "All orders done.");
    assert.equal(history.length, 1 + 3 * (STEPS - 1) + 2, "the first run's answer and the new question, nothing twice");
    assert.equal(keyed, calls + 2 - 1, "every call but the conversation's first carries the key");
    assert.equal(callModelInputFilter.promptCacheKey, builds.at(-1).promptCacheKey);
    console.log(`# openai-agents filter${streamed ? " (streamed)" : ""}: ${STEPS} calls in one run, history ${history.tokenCount().total} tokens, fullest request ${fullest}, last input ${builds.at(-1).receipt.tokensAfter}`);
    history.free();
  });
}

test("toolDefinitions: the AI SDK's tools as the function definitions each major sends (jsonSchema, zodSchema, zod 4)", async () => {
  const { z } = await import("zod");
  for (const { major, ai, Mock, finish, usage } of MAJORS) {
    const tools = {
      search: searchTool(ai),
      refund: ai.tool({ description: "Refunds an order", inputSchema: z.object({ order: z.number().describe("the order"), items: z.array(z.object({ sku: z.string() })).optional() }) }),
      wrapped: ai.tool({ inputSchema: ai.zodSchema(z.object({ note: z.string() })) }),
    };
    let sent;
    const model = new Mock({
      doGenerate: async (options) => {
        sent = options.tools;
        return { content: [{ type: "text", text: "ok" }], finishReason: finish("stop"), usage, warnings: [] };
      },
    });
    await ai.generateText({ model, tools, messages: [{ role: "user", content: "hi" }] });
    const theirs = sent.map((t) => ({ type: "function", function: { name: t.name, ...(t.description ? { description: t.description } : {}), parameters: t.inputSchema } }));
    assert.deepEqual(toolDefinitions(tools), theirs, `ai ${major}: what the model is sent`);
  }
  assert.throws(() => toolDefinitions({ bad: { inputSchema: { parse() {} } } }), (e) => e instanceof InvalidArgumentError && /tools\.bad\.inputSchema/.test(e.message));
});

test("agentToolDefinitions: an agent's function tools as the Responses tools its OpenAI model sends", () => {
  const search = agentTool({
    name: "search",
    description: "Looks an order up",
    parameters: { type: "object", properties: { order: { type: "number" } }, required: ["order"], additionalProperties: false },
    strict: true,
    execute: async () => "",
  });
  const theirs = convertTool(search).tool;
  const [mine] = agentToolDefinitions([search]);
  assert.deepEqual(mine, { type: theirs.type, name: theirs.name, description: theirs.description, parameters: theirs.parameters, strict: theirs.strict });
  assert.throws(() => agentToolDefinitions([{ type: "function", name: "x" }]), InvalidArgumentError);
});
