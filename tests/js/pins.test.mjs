// Explicit pins: a user message pinned at append (`{ pin: true }`, `appendMany(list, { pin: [i] })`)
// or later (`pin(id)`) stays in every context, is listed in the receipt, survives export/import and
// a reopened store, and stands for the task (the summary's primary request) instead of the first
// user message. The SWE-agent loader pins the instance's own issue, not the demonstration before it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import {
  ConversationHistory,
  SessionStore,
  MemoryStorageAdapter,
  loadConversation,
  InvalidArgumentError,
  NotFoundError,
} from "context-compactor";
import { FIXTURES, SWE_AGENT } from "./fixtures.mjs";

const read = (path) => readFileSync(new URL(path, FIXTURES), "utf8");

const DEMO = "Here is a demonstration of how to solve another issue:\n" + "edit the parser, run the tests, submit. ".repeat(300);
const ISSUE = "ISSUE: TimeDelta serialization precision: 345 ms serialises to 344.";

/** A system prompt, a long demonstration, the real task, then `steps` tool steps. */
function harnessLog(steps) {
  const log = [
    { role: "system", content: "You are an autonomous programmer." },
    { role: "user", content: DEMO },
    { role: "user", content: ISSUE },
  ];
  for (let i = 0; i < steps; i++) {
    const id = `call_${i}`;
    log.push({ role: "assistant", content: `step ${i}`, tool_calls: [{ id, type: "function", function: { name: "bash", arguments: JSON.stringify({ command: `cat src/file_${i}.py` }) } }] });
    log.push({ role: "tool", tool_call_id: id, content: `line ${i} `.repeat(200) });
  }
  return log;
}

const inContext = (build, id) => build.layout.some((entry) => entry.sources.includes(id));

test("a message pinned at append stays in the context and is the task; the demonstration is not pinned", () => {
  const history = new ConversationHistory({ format: "openai" });
  const log = harnessLog(30);
  history.appendMany(log.slice(0, 2));
  const issue = history.append(log[2], { pin: true });
  history.appendMany(log.slice(3));
  assert.deepEqual(history.pinned, [issue]);
  const build = history.build({ budget: { maxTokens: 3000 }, summary: null });
  assert.ok(build.receipt.withinBudget, JSON.stringify(build.tokens));
  assert.ok(inContext(build, issue), "the pinned issue is in the context");
  assert.ok(!inContext(build, "m2"), "the demonstration is not pinned as the task");
  const pinned = build.receipt.pinned.map((p) => `${p.id}:${p.role}`);
  assert.ok(pinned.includes(`${issue}:pinned`), pinned.join(", "));
  assert.ok(!pinned.some((p) => p.endsWith(":task")), `no task pin besides the explicit one: ${pinned.join(", ")}`);
});

test("pin and unpin by id; appendMany pins by position; only user messages can be pinned", () => {
  const history = new ConversationHistory({ format: "openai" });
  const ids = history.appendMany(harnessLog(2), { pin: [2] });
  assert.deepEqual(history.pinned, ["m3"]);
  history.pin("m2");
  assert.deepEqual(history.pinned, ["m2", "m3"]);
  history.unpin("m3");
  assert.deepEqual(history.pinned, ["m2"]);
  assert.throws(() => history.pin(ids[3]), (e) => e instanceof InvalidArgumentError && /only a user message can be pinned/.test(e.message));
  assert.throws(() => history.pin("m99"), NotFoundError);
  assert.throws(() => history.appendMany([{ role: "user", content: "x" }], { pin: [1] }), InvalidArgumentError);
  assert.equal(history.length, ids.length, "a refused appendMany appends nothing");
  assert.throws(() => history.append({ role: "assistant", content: "x" }, { pin: true }), InvalidArgumentError);
  assert.equal(history.length, ids.length, "a refused pin appends nothing");
});

test("pins survive export/import and a reopened store", async () => {
  const history = new ConversationHistory({ format: "openai" });
  history.appendMany(harnessLog(3), { pin: [2] });
  const imported = ConversationHistory.import(JSON.stringify(history.export()));
  assert.deepEqual(imported.pinned, ["m3"]);

  const adapter = new MemoryStorageAdapter();
  const store = await SessionStore.open(adapter);
  const stored = await store.create({ id: "pins", format: "openai" });
  stored.history.appendMany(harnessLog(3));
  stored.history.pin("m3");
  await stored.flush();
  const reopened = await (await SessionStore.open(adapter)).open("pins");
  assert.deepEqual(reopened.history.pinned, ["m3"]);
  reopened.history.unpin("m3");
  await reopened.flush();
  const again = await (await SessionStore.open(adapter)).open("pins");
  assert.deepEqual(again.history.pinned, []);
});

test("the summary's primary request follows the pin", () => {
  const history = new ConversationHistory({ format: "openai" });
  history.appendMany(harnessLog(40), { pin: [2] });
  const build = history.build({ budget: { maxTokens: 4000 } });
  const summary = build.newSummary ?? build.receipt.summary;
  assert.ok(build.newSummary, "the extractive summary was made");
  const primary = JSON.parse(build.newSummary.text).primaryRequest;
  assert.ok(primary.startsWith(ISSUE), `primaryRequest: ${primary.slice(0, 120)}`);
  assert.ok(summary);
});

/** The SWE-agent trajectory with a demonstration before the instance's issue, as SWE-agent logs one. */
function withDemonstration(inHistory) {
  const traj = JSON.parse(read(SWE_AGENT));
  const [system, ...rest] = traj.history;
  const demo = inHistory
    ? [
        { role: "user", content: DEMO, agent: "main", is_demo: true, message_type: "observation" },
        { role: "assistant", content: "I will edit the parser.", agent: "main", is_demo: true, message_type: "action" },
      ]
    : [{ role: "user", content: DEMO, agent: "main", is_demo: true, message_type: "demonstration" }];
  return { traj, text: JSON.stringify({ ...traj, history: [system, ...demo, ...rest] }), issueIndex: 1 + demo.length };
}

test("the SWE-agent loader pins the instance's issue, after any demonstration", () => {
  const plain = loadConversation(read(SWE_AGENT));
  assert.deepEqual(plain.pinned, [1], "no demonstration: the first user message is the issue");
  for (const inHistory of [false, true]) {
    const { text, issueIndex } = withDemonstration(inHistory);
    const loaded = loadConversation(text, { name: "run.traj" });
    assert.deepEqual(loaded.pinned, [issueIndex], `demonstration ${inHistory ? "in the history" : "as one message"}`);
    assert.match(loaded.messages[issueIndex].content, /DurationField rounds down/);
    const history = new ConversationHistory({ format: loaded.format });
    const ids = history.appendMany(loaded.messages, { pin: loaded.pinned });
    const build = history.build({ budget: { maxTokens: 3000 }, summary: null });
    assert.ok(inContext(build, ids[issueIndex]), "the issue is in the context");
    assert.ok(!inContext(build, ids[1]), "the demonstration is not");
  }
});

test("a pinned request of 100,000 content parts is cut to fit, and the receipt says so", () => {
  const history = new ConversationHistory({ format: "openai" });
  history.append({ role: "system", content: "Be brief." });
  const parts = Array.from({ length: 100_000 }, (_, i) => ({ type: "text", text: `part ${i} of the task` }));
  const task = history.append({ role: "user", content: parts });
  history.append({ role: "assistant", content: "Working on it." });
  history.append({ role: "user", content: "How far along are you?" });
  for (const maxTokens of [2000, 8000]) {
    const build = history.build({ budget: { maxTokens } });
    assert.ok(build.tokens.total <= maxTokens, `${build.tokens.total} tokens within ${maxTokens}`);
    const pin = build.receipt.pinned.find((p) => p.id === task);
    assert.ok(pin && pin.truncated, JSON.stringify(build.receipt.pinned));
    assert.ok(pin.tokensAfter < pin.tokensBefore);
    const sent = build.messages.find((m, i) => build.layout[i].sources.includes(task));
    assert.match(JSON.stringify(sent.content), /part 0 of the task/, "its head is kept");
    assert.match(JSON.stringify(sent.content), /part 99999 of the task/, "its tail is kept");
  }
});
