// Lossless: every fixture conversation, appended to a ConversationHistory and read back in its own
// format, is the same JSON (unknown fields kept); so is every message read back by its id.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, convertMessages } from "context-compactor";
import { airlineRuns, sweAgent, claudeCode, CLAUDE_CODE_LOGS } from "./fixtures.mjs";

function roundTripOpenAI(messages, label) {
  const history = new ConversationHistory({ format: "openai" });
  const ids = history.appendMany(messages);
  assert.equal(ids.length, messages.length, `${label}: one id per message`);
  assert.deepEqual(history.ids(), ids);
  assert.equal(history.length, messages.length);
  assert.deepEqual(history.messages(), messages, `${label}: messages()`);
  assert.deepEqual(history.messages("openai"), messages, `${label}: messages("openai")`);
  for (const [i, id] of ids.entries()) assert.deepEqual(history.get(id), messages[i], `${label}: get(${id})`);
  // One at a time gives the same ids and the same JSON.
  const single = new ConversationHistory();
  assert.deepEqual(messages.map((m) => single.append(m)), ids, `${label}: append ids`);
  assert.deepEqual(single.messages(), messages, `${label}: append round trip`);
  history.free();
  single.free();
}

test("airline runs: each of the 40 runs round-trips through ConversationHistory (openai)", () => {
  const runs = airlineRuns();
  assert.equal(runs.length, 40);
  let messages = 0;
  let calls = 0;
  for (const [i, run] of runs.entries()) {
    roundTripOpenAI(run.traj, `run ${i} (${run.task_id})`);
    messages += run.traj.length;
    calls += run.traj.reduce((n, m) => n + (m.tool_calls?.length ?? 0), 0);
  }
  console.log(`# 40 runs, ${messages} messages, ${calls} tool calls: identical JSON`);
});

test("SWE-agent trajectory (tool_call_ids mapped) round-trips with its extra keys (openai)", () => {
  const history = sweAgent();
  const extra = new Set(history.flatMap(Object.keys));
  for (const key of ["message_type", "agent", "thought", "action"]) assert.ok(extra.has(key), `fixture has ${key}`);
  roundTripOpenAI(history, "swe-agent");
  console.log(`# swe-agent: ${history.length} messages, keys ${[...extra].sort().join(",")}`);
});

for (const name of CLAUDE_CODE_LOGS) {
  test(`Claude Code ${name}: every .message record round-trips (anthropic)`, () => {
    const messages = claudeCode(name);
    const history = new ConversationHistory({ format: "anthropic" });
    const ids = history.appendMany(messages);
    assert.equal(ids.length, messages.length);
    const out = history.messages();
    assert.deepEqual(out.messages, messages);
    assert.equal(out.system, undefined, "no system prompt in the log");
    assert.deepEqual(history.messages("anthropic"), out);
    for (const [i, id] of ids.entries()) assert.deepEqual(history.get(id), messages[i], `get(${id})`);
    // Also as a request object, and one message at a time.
    const again = new ConversationHistory({ format: "anthropic" });
    again.appendMany({ messages });
    assert.deepEqual(again.messages().messages, messages);
    const single = new ConversationHistory();
    for (const m of messages) single.append(m, "anthropic");
    assert.deepEqual(single.messages("anthropic").messages, messages);
    const blocks = messages.flatMap((m) => (Array.isArray(m.content) ? m.content.map((b) => b.type) : ["string"]));
    console.log(`# ${name}: ${messages.length} messages, blocks ${JSON.stringify(count(blocks))}: identical JSON`);
  });
}

test("an Anthropic system prompt round-trips, string or blocks", () => {
  for (const system of ["You are terse.", [{ type: "text", text: "You are terse.", cache_control: { type: "ephemeral" } }]]) {
    const request = { system, messages: [{ role: "user", content: "hi" }, { role: "assistant", content: [{ type: "text", text: "hello" }] }] };
    const history = new ConversationHistory({ format: "anthropic" });
    history.appendMany(request);
    assert.deepEqual(history.messages(), request);
    assert.deepEqual(convertMessages(convertMessages(request, "anthropic", "anthropic"), "anthropic", "anthropic"), request);
  }
});

test("the same history reads back in the other format: the airline runs as Anthropic equal convertMessages", () => {
  const run = airlineRuns()[0].traj;
  const history = new ConversationHistory();
  history.appendMany(run);
  assert.deepEqual(history.messages("anthropic"), convertMessages(run, "openai", "anthropic"));
});

function count(xs) {
  const out = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
