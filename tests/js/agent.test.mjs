// Sessions, the memory module, recall_context, sub-agents and the
// session export, through the package as a user imports it.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import {
  Session,
  ConversationHistory,
  recallContextTool,
  recordTurn,
  answerRecall,
  openAICompatibleSummarizer,
  anthropicSummarizer,
  InvalidArgumentError,
  NotFoundError,
  SummarizerError,
  Tokenizer,
} from "context-compactor";
import { startFakeProviders } from "../support/fake-providers.mjs";

const fake = await startFakeProviders({ reply: "Looked up reservation ABC123; it flies to Seattle." });
after(() => fake.close());

function agentWithTurns() {
  const session = new Session({ id: "trip", memory: true, maxLoops: 5 });
  const { history, memory } = session;
  history.appendMany([
    { role: "user", content: "Find reservation ABC123" },
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "get_reservation", arguments: '{"id":"ABC123"}' } }] },
    { role: "tool", tool_call_id: "c1", content: '{"id":"ABC123","destination":"SEA"}' },
    { role: "assistant", content: "ABC123 flies to Seattle." },
  ]);
  memory.recordTurn({ workspaceContext: "Files: [trip.md]\nState: { found: true }" });
  history.appendMany([{ role: "user", content: "Cancel it" }, { role: "assistant", content: "Cancelled ABC123." }]);
  memory.recordTurn({ workspaceContext: "State: { cancelled: true }", summary: "cancelled the reservation", insights: ["refund pending"] });
  return session;
}

const state = (session) => JSON.stringify(session.export());

test("the memory keeps its snapshots, summaries and cumulative summary", () => {
  const session = agentWithTurns();
  const { memory } = session;
  assert.deepEqual(memory.turns, [1, 2]);
  const [first, second] = memory.contexts;
  assert.equal(first.turnNumber, 1);
  assert.match(first.id, /^ctx_1_[0-9a-f]{8}$/);
  assert.equal(first.fullContext, "Files: [trip.md]\nState: { found: true }");
  assert.deepEqual(first.messages, { from: "m1", until: "m4" });
  assert.equal(first.summary, "asked: Find reservation ABC123; answered: ABC123 flies to Seattle.; tools: get_reservation");
  assert.deepEqual(second.messages, { from: "m5", until: "m6" });
  assert.deepEqual(memory.summaries[1], { id: `sum_${second.id}`, contextId: second.id, turnNumber: 2, summary: "cancelled the reservation", insights: ["refund pending"] });
  assert.equal(memory.cumulativeSummary(), `[Turn 1] ${first.summary}\n[Turn 2] cancelled the reservation`);
  const tight = memory.cumulativeSummary({ maxTokens: 30 });
  assert.equal(tight, "[Turn 1 omitted for space: recall_context brings them back]\n[Turn 2] cancelled the reservation");
  assert.ok(new Tokenizer("o200k_base").count(tight) <= 30, "counted exactly");
  assert.equal(memory.cumulativeSummary({ maxTokens: 5 }), "", "nothing fits");
  assert.equal(new Session().memory, undefined, "memory is off unless configured");
});

test("recall_context: tool definitions, recall by turn and by query, typed refusals", () => {
  const session = agentWithTurns();
  const { memory } = session;
  assert.equal(recallContextTool("openai").function.name, "recall_context");
  assert.deepEqual(recallContextTool("openai").function.parameters, recallContextTool("anthropic").input_schema);

  const byTurn = memory.recall({ turnNumbers: [1] });
  assert.equal(byTurn.turns[0].fullContext, "Files: [trip.md]\nState: { found: true }");
  assert.deepEqual(byTurn.turns[0].messages.map((m) => m.id), ["m1", "m2", "m3", "m4"]);
  const byQuery = memory.recall('{"query": "cancel"}');
  assert.equal(byQuery.results[0].id, "m5");
  assert.equal(byQuery.results[0].turnNumber, 2);
  assert.deepEqual(memory.search("Seattle", { limit: 1 }).map((h) => h.id), ["m4"]);
  const small = memory.recall({ turnNumbers: [1, 2] }, { maxTokens: 30 });
  assert.equal(small.truncated, true);

  const before = state(session);
  assert.throws(() => memory.recall({ turnNumbers: [7] }), (e) => e instanceof NotFoundError && /turn 7 is not in memory \(recorded turns: 1–2\)/.test(e.message));
  assert.throws(() => memory.recall({ depth: 2 }), InvalidArgumentError);
  assert.throws(() => memory.recall("{oops"), /not valid JSON/);
  assert.throws(() => memory.recall({ query: "x" }, { maxTokens: 0 }), InvalidArgumentError);
  assert.equal(state(session), before, "refused recalls change nothing");

  const openai = answerRecall(memory, { id: "call_9", type: "function", function: { name: "recall_context", arguments: '{"turnNumbers":[2]}' } });
  assert.equal(openai.role, "tool");
  assert.equal(JSON.parse(openai.content).turns[0].summary, "cancelled the reservation");
  const refused = answerRecall(memory, { id: "toolu_9", type: "tool_use", name: "recall_context", input: { turnNumbers: [9] } });
  assert.equal(refused.content[0].is_error, true);
  assert.match(refused.content[0].content, /^Error: turn 9 is not in memory/);
});

test("bad turns are refused and nothing is recorded", () => {
  const session = agentWithTurns();
  const before = state(session);
  assert.throws(() => session.memory.recordTurn({ turnNumber: 2, workspaceContext: "x" }), /not after the last recorded turn/);
  assert.throws(() => session.memory.recordTurn({ workspaceContext: "x", summary: "  " }), /empty/);
  assert.throws(() => session.memory.recordTurn({ workspace: "x" }), (e) => e instanceof InvalidArgumentError && /unknown field "workspace"/.test(e.message));
  const small = new Session({ memory: { maxSnapshotChars: 10 } });
  assert.throws(() => small.memory.recordTurn({ workspaceContext: "x".repeat(11) }), /over the limit of 10/);
  assert.throws(() => new Session({ memory: "yes" }), InvalidArgumentError);
  assert.throws(() => new Session({ id: "a/b" }), /session id/);
  assert.equal(state(session), before);
});

// A generous timeout where the fake answers (a loaded machine can take a second or more); a short
// one for "slow", where it never does.
for (const [name, adapter, format] of [
  ["OpenAI-compatible", (timeoutMs) => openAICompatibleSummarizer({ baseURL: `${fake.baseURL}/v1`, model: "m", apiKey: "test-key", timeoutMs }), "openai"],
  ["Anthropic", (timeoutMs) => anthropicSummarizer({ baseURL: fake.baseURL, model: "m", apiKey: "test-key", timeoutMs }), "anthropic"],
]) {
  const summarize = adapter(30_000);
  const impatient = adapter(500);
  test(`a turn summarised by the ${name} adapter; a failing summariser records nothing`, async () => {
    const session = agentWithTurns();
    session.history.appendMany([{ role: "user", content: "Rebook to Portland" }, { role: "assistant", content: "Rebooked." }]);
    fake.state.behaviour = "ok";
    const sent = fake.requests.length;
    const snapshot = await recordTurn(session.memory, { workspaceContext: "State: { rebooked: true }", summarize, format });
    assert.equal(fake.requests.length, sent + 1);
    assert.deepEqual(fake.requests.at(-1).violations, [], "the fake API accepted the request");
    assert.equal(snapshot.summary, "Looked up reservation ABC123; it flies to Seattle.");
    assert.deepEqual(snapshot.messages, { from: "m7", until: "m8" });

    session.history.append({ role: "user", content: "And a hotel?" });
    for (const behaviour of ["http-500", "not-json", "empty", "slow"]) {
      fake.state.behaviour = behaviour;
      const before = state(session);
      const failing = behaviour === "slow" ? impatient : summarize;
      await assert.rejects(recordTurn(session.memory, { workspaceContext: "x", summarize: failing, format }), SummarizerError);
      assert.equal(state(session), before, `${behaviour}: nothing recorded`);
    }
    const before = state(session);
    await assert.rejects(recordTurn(session.memory, { workspaceContext: "x", summarize: async () => "word ".repeat(400) }), (e) => e instanceof SummarizerError && /over its budget of 300/.test(e.message));
    await assert.rejects(recordTurn(session.memory, { workspaceContext: "x", summarize: async () => 42 }), SummarizerError);
    await assert.rejects(recordTurn(session.memory, { workspaceContext: "x", summarize: async () => { throw new Error("boom"); } }), /the summariser failed: boom/);
    assert.equal(state(session), before);
    fake.state.behaviour = "ok";
  });
}

test("a session exports to one versioned document and imports losslessly", () => {
  const session = agentWithTurns();
  session.nextLoop();
  session.metadata = { title: "trip", tags: ["travel"] };
  session.history.build({ budget: { contextWindow: 4_000 } });
  const exported = session.export();
  assert.equal(exported.format, "context-compactor/session");
  assert.equal(exported.version, 1);
  for (const data of [exported, JSON.stringify(exported)]) {
    const restored = Session.import(data);
    assert.deepEqual(restored.export(), exported);
    assert.deepEqual(restored.history.messages(), session.history.messages());
    assert.deepEqual(restored.memory.recall({ query: "Seattle" }), session.memory.recall({ query: "Seattle" }));
    assert.equal(restored.loops, 1);
    assert.deepEqual(restored.metadata, { title: "trip", tags: ["travel"] });
  }
  const history = ConversationHistory.import(new ConversationHistory().export());
  assert.equal(history.length, 0);
});

test("corrupt, truncated or newer exports are typed errors and build nothing", () => {
  const text = JSON.stringify(agentWithTurns().export());
  const cases = [
    [text.slice(0, text.length / 2), /the export is not valid JSON/],
    [{ ...JSON.parse(text), version: 2 }, /newer than this library reads \(1\): upgrade context-compactor/],
    [{ ...JSON.parse(text), format: "other" }, /not a session export/],
    [{ ...JSON.parse(text), loops: "many" }, /corrupt session export: loops must be a whole number from 0 to 4294967295, got "many"/],
    [text.replace('"m3"', '"m33"'), /corrupt export/],
    [text.replace('"tool_call_id":"c1"', '"tool_call_id":"c2"'), /which no earlier assistant message made/],
    [42, /corrupt session export|not a session export/],
  ];
  for (const [data, reason] of cases) {
    assert.throws(() => Session.import(data), (e) => e instanceof InvalidArgumentError && reason.test(e.message), String(reason));
  }
});

test("sub-agents: isolated histories, a loop limit, one compact result for the parent", () => {
  const parent = new Session({ memory: true });
  parent.history.append({ role: "assistant", content: null, tool_calls: [{ id: "call_sub", type: "function", function: { name: "call_subagent", arguments: '{"task":"convert the PDF"}' } }] });
  const child = parent.spawnSubagent("convert the PDF", { maxLoops: 2 });
  assert.match(child.id, /^subagent-[0-9a-f]{8}$/);
  assert.equal(child.parentId, "main");
  assert.equal(child.maxLoops, 2);
  assert.deepEqual(child.history.messages(), [{ role: "user", content: "convert the PDF" }]);
  assert.equal(child.nextLoop(), 1);
  assert.equal(child.nextLoop(), 2);
  assert.throws(() => child.nextLoop(), /reached its limit of 2 loops/);
  child.history.append({ role: "assistant", content: "Converted: outputs/report.md" });
  assert.equal(parent.history.length, 1, "the parent's history is untouched");
  assert.deepEqual(child.subagentResult(), { ok: true, result: "Converted: outputs/report.md", context_id: child.id, loops: 2 });
  parent.history.append(child.subagentToolResult("call_sub"));
  assert.deepEqual(JSON.parse(parent.history.get("m2").content), child.subagentResult());
  assert.notEqual(parent.spawnSubagent("convert the PDF").id, child.id);
  assert.equal(Session.import(child.export()).parentId, "main");
});

test("the session's history and memory are views of one session", () => {
  const session = new Session({ memory: true });
  const a = session.history;
  const b = session.history;
  a.append({ role: "user", content: "hi" });
  assert.equal(b.length, 1);
  // A message whose toJSON calls back into the same history cannot corrupt it.
  const sneaky = { role: "user", content: "x", toJSON() { a.append({ role: "user", content: "inner" }); return { role: "user", content: "outer" }; } };
  a.append(sneaky);
  assert.deepEqual(a.messages().map((m) => m.content), ["hi", "inner", "outer"]);
});

test("tsc: built contexts and tools type-check against the openai and @anthropic-ai/sdk parameter types", () => {
  const tsc = spawnSync(process.execPath, ["node_modules/typescript/bin/tsc", "-p", "tests/types/tsconfig.json"], { encoding: "utf8" });
  assert.equal(tsc.status, 0, tsc.stdout + tsc.stderr);
});
