// ConversationHistory's token cache and report: recounting a history after one append tokenizes
// that one message (history.countedMessages proves it), and the numbers agree with Tokenizer.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, Tokenizer } from "context-compactor";
import { airlineRuns, claudeCode } from "./fixtures.mjs";

const sum = (xs) => xs.reduce((a, b) => a + b, 0);
const longestRun = () => airlineRuns().reduce((a, b) => (b.traj.length > a.traj.length ? b : a)).traj;

test("after one append, recounting tokenizes only that message and adds exactly its count", () => {
  const run = longestRun();
  const [last, earlier] = [run.at(-1), run.slice(0, -1)];
  const history = new ConversationHistory({ encoding: "o200k_base" });
  history.appendMany(earlier);
  const before = history.tokenCount();
  const countedBefore = history.countedMessages;
  assert.equal(countedBefore, earlier.length, "the first count tokenizes every message once");
  assert.deepEqual(history.tokenCount(), before, "a recount without changes");
  assert.equal(history.countedMessages, countedBefore, "a recount without changes tokenizes nothing");

  history.append(last);
  const after = history.tokenCount();
  assert.equal(history.countedMessages - countedBefore, 1, "only the appended message was tokenized");
  const alone = new Tokenizer("o200k_base").countMessages([last]).messages[0];
  assert.equal(after.total - before.total, alone, "the total grows by exactly that message's count");
  assert.deepEqual(after.messages.slice(0, -1), before.messages);
  assert.equal(after.messages.at(-1), alone);
  console.log(`# ${run.length}-message run: ${before.total} -> ${after.total} tokens (+${alone}); tokenized ${countedBefore} then 1 message`);
});

test("the cached count equals a fresh Tokenizer.countMessages over the same messages", () => {
  for (const encoding of ["o200k_base", "cl100k_base"]) {
    const run = longestRun();
    const history = new ConversationHistory({ encoding });
    assert.equal(history.encoding, encoding);
    for (const m of run) history.append(m); // counted lazily, one by one
    assert.deepEqual(history.tokenCount(), new Tokenizer(encoding).countMessages(run));
  }
});

test("tokenReport adds up: per role and per part kind", () => {
  const history = new ConversationHistory();
  history.appendMany(longestRun());
  const report = history.tokenReport();
  const count = history.tokenCount();
  assert.equal(report.total, count.total);
  assert.equal(report.messages, history.length);
  assert.equal(report.replyPriming, 3);
  assert.equal(sum(Object.values(report.byRole)) + report.replyPriming, report.total, "byRole + priming = total");
  assert.equal(sum(Object.values(report.byPart)) + report.replyPriming, report.total, "byPart + priming = total");
  for (const key of ["text", "toolCall", "toolResult", "overhead"]) assert.ok(report.byPart[key] > 0, `byPart.${key}`);
  for (const key of ["system", "user", "assistant", "tool"]) assert.ok(report.byRole[key] > 0, `byRole.${key}`);
  console.log(`# report ${JSON.stringify(report)}`);
});

test("tokenReport on a Claude Code log has thinking, toolCall and toolResult parts", () => {
  const history = new ConversationHistory({ format: "anthropic" });
  history.appendMany(claudeCode("claude-code-tool-heavy.jsonl"));
  const report = history.tokenReport();
  for (const key of ["thinking", "toolCall", "toolResult", "text"]) assert.ok(report.byPart[key] > 0, `byPart.${key}`);
  assert.equal(sum(Object.values(report.byPart)) + report.replyPriming, report.total);
});

test("ids are stable and sequential; get of an unknown id is undefined", () => {
  const history = new ConversationHistory();
  assert.deepEqual(history.appendMany([{ role: "user", content: "a" }, { role: "assistant", content: "b" }]), ["m1", "m2"]);
  assert.equal(history.append({ role: "user", content: "c" }), "m3");
  assert.deepEqual(history.ids(), ["m1", "m2", "m3"]);
  assert.equal(history.get("m9"), undefined);
  assert.deepEqual(history.get("m2"), { role: "assistant", content: "b" });
});
