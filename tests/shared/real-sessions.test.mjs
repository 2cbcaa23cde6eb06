// The shared real-world fixtures through the package's Node entry: real agent logs and published
// token vectors that are not this repository's to ship (../shared/fixtures, or $CC_SHARED/fixtures).
// scripts/test.sh runs this suite when they are there and says so when they are not; run alone
// without them, every test here is skipped with the path it looked at.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ConversationHistory, Tokenizer, loadConversation, validateMessages } from "context-compactor";
import { SHARED_FIXTURES, sharedPresent, tokenVectors, sweAgent, claudeCode } from "../js/fixtures.mjs";

const skip = sharedPresent() ? false : `shared fixtures not found at ${fileURLToPath(SHARED_FIXTURES)}`;
const read = (path) => readFileSync(new URL(path, SHARED_FIXTURES), "utf8");
const TAU_BENCH = "openai/tau-bench-gpt-4o-airline.json";
const MARSHMALLOW = "openai/swe-agent-marshmallow-1867.traj";

test("gpt-tokenizer's TestPlans.txt: every cl100k_base and o200k_base vector, id for id", { skip }, () => {
  const vectors = tokenVectors(["cl100k_base", "o200k_base"], read("tokens/gpt-tokenizer-TestPlans.txt"));
  for (const [encoding, count] of [["cl100k_base", 64], ["o200k_base", 57]]) {
    const tok = new Tokenizer(encoding);
    const mine = vectors.filter((v) => v.encoding === encoding);
    assert.equal(mine.length, count);
    for (const v of mine) assert.deepEqual([...tok.encode(v.sample)], v.ids, JSON.stringify(v.sample.slice(0, 40)));
    tok.free();
  }
});

test("tau-bench: the 200 real runs load one by one and round-trip through a history", { skip }, () => {
  const text = read(TAU_BENCH);
  const runs = JSON.parse(text);
  assert.equal(runs.length, 200);
  let messages = 0;
  for (const [index, run] of runs.entries()) {
    const loaded = loadConversation(text, { run: index });
    assert.deepEqual(loaded.run, { index, count: 200, taskId: run.task_id });
    const history = new ConversationHistory({ format: "openai" });
    history.appendMany(loaded.messages);
    assert.deepEqual(history.messages(), run.traj, `run ${index}`);
    messages += run.traj.length;
  }
  assert.equal(messages, 5308);
});

test("tau-bench: the 5,308 messages as one conversation build to a 100k budget, valid for both providers", { skip }, () => {
  const history = new ConversationHistory();
  history.appendMany(JSON.parse(read(TAU_BENCH)).flatMap((run) => run.traj));
  for (const format of ["openai", "anthropic"]) {
    const result = history.build({ format, budget: { contextWindow: 100_000, targetRatio: 1 } });
    assert.deepEqual(validateMessages(result.messages, format), []);
    assert.ok(result.tokens.total <= 100_000, `${result.tokens.total} tokens`);
  }
});

test("SWE-agent: the marshmallow trajectory loads, its issue pinned", { skip }, () => {
  const loaded = loadConversation(read(MARSHMALLOW));
  assert.equal(loaded.source, "swe-agent");
  assert.deepEqual(loaded.messages, sweAgent(read(MARSHMALLOW)));
  assert.equal(loaded.messages.length, 24);
  assert.match(loaded.messages[loaded.pinned[0]].content, /TimeDelta serialization precision/);
});

test("Claude Code: the real logs load, split responses merged, meta messages marked", { skip }, () => {
  for (const name of ["claude-code-short.jsonl", "claude-code-tool-heavy.jsonl", "claude-code-subagent.jsonl"]) {
    const text = read(`anthropic/${name}`);
    const loaded = loadConversation(text, { name });
    assert.equal(loaded.source, "claude-code", name);
    const records = claudeCode(name, text);
    const blocks = (list) => list.flatMap((m) => (Array.isArray(m.content) ? m.content : [m.content])).map((b) => JSON.stringify(b)).sort();
    assert.deepEqual(blocks(loaded.messages.messages), blocks(records), `${name}: every block once`);
    const history = new ConversationHistory({ format: "anthropic" });
    history.appendMany(loaded.messages);
    assert.deepEqual(validateMessages(history.build({ format: "anthropic" }).messages, "anthropic"), [], name);
  }
  const heavy = loadConversation(read("anthropic/claude-code-tool-heavy.jsonl"));
  assert.equal(heavy.messages.messages.length, 17);
  assert.deepEqual(heavy.marks.map((m) => [m.kind, m.line]), [["meta", 20], ["localCommand", 21], ["localCommand", 22]]);
});
