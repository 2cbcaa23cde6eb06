// Chat counts by OpenAI's published rules, whole message lists in one call across the boundary:
// the cookbook's example conversation is 124 tokens for gpt-4o (o200k_base) and 129 for gpt-4
// (cl100k_base); with its one tool, 101 and 105.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tokenizer } from "context-compactor";
import { cookbook, airlineRuns } from "./fixtures.mjs";

const book = cookbook();
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

function checkShape(count, n) {
  assert.deepEqual(Object.keys(count).sort(), ["basis", "estimate", "messages", "replyPriming", "tools", "total"]);
  assert.equal(count.basis, "exact");
  assert.equal(count.messages.length, n);
  assert.equal(count.replyPriming, 3);
  assert.equal(count.total, sum(count.messages) + count.tools + count.replyPriming, "total = messages + tools + priming");
}

for (const [encoding, model, expected] of [
  ["o200k_base", "gpt-4o", 124],
  ["cl100k_base", "gpt-4", 129],
]) {
  test(`cookbook example conversation: ${expected} prompt tokens for ${model} (${encoding})`, () => {
    const tok = new Tokenizer(encoding);
    const messages = book.chat_example_messages;
    assert.equal(book.chat_expected_prompt_tokens.current_notebook[model], expected);
    const count = tok.countMessages(messages);
    checkShape(count, messages.length);
    assert.equal(count.tools, 0);
    assert.equal(count.total, expected);
    assert.equal(count.estimate, false, "OpenAI's rules are exact");
    // Each message: 3 + tokens of every value (role, content, name) + 1 per name.
    for (const [i, m] of messages.entries()) {
      const byHand = 3 + tok.count(m.role) + tok.count(m.content) + (m.name ? tok.count(m.name) + 1 : 0);
      assert.equal(count.messages[i], byHand, `message ${i}`);
    }
    assert.deepEqual(tok.countMessages(messages, { format: "openai" }), count, "explicit format");
    console.log(`# ${model}: ${count.total} = [${count.messages}] + ${count.replyPriming}`);
  });
}

for (const [encoding, model, expected] of [
  ["o200k_base", "gpt-4o", 101],
  ["cl100k_base", "gpt-4", 105],
]) {
  test(`cookbook tool example: ${expected} prompt tokens for ${model} (${encoding})`, () => {
    const tok = new Tokenizer(encoding);
    const { tools, messages, expected_prompt_tokens } = book.tools_example;
    assert.equal(expected_prompt_tokens[model], expected);
    const count = tok.countMessages(messages, { tools });
    checkShape(count, messages.length);
    assert.ok(count.tools > 0, "the tool definition costs tokens");
    assert.equal(count.total, expected);
    assert.equal(count.total - count.tools, tok.countMessages(messages).total, "tools add only their own cost");
    console.log(`# ${model} with 1 tool: ${count.total} (tools ${count.tools})`);
  });
}

test("a whole airline run is counted in one call, message by message", () => {
  const tok = new Tokenizer("o200k_base");
  const runs = airlineRuns();
  let messages = 0;
  let total = 0;
  for (const run of runs.slice(0, 20)) {
    const count = tok.countMessages(run.traj);
    checkShape(count, run.traj.length);
    // The list count is the sum of single-message counts: nothing depends on the neighbours.
    for (const i of [0, run.traj.length - 1]) {
      assert.equal(count.messages[i], tok.countMessages([run.traj[i]]).messages[0]);
    }
    messages += run.traj.length;
    total += count.total;
  }
  console.log(`# 20 runs, ${messages} messages, ${total} tokens`);
});

test("Anthropic messages are counted too (format: anthropic)", () => {
  const tok = new Tokenizer("o200k_base");
  const request = { system: "Be brief.", messages: [{ role: "user", content: [{ type: "text", text: "Hello there" }] }] };
  const count = tok.countMessages(request, { format: "anthropic" });
  assert.equal(count.total, sum(count.messages) + count.tools + count.replyPriming);
  assert.ok(count.total > 3);
  assert.equal(count.estimate, true, "Claude's tokenizer is not public: the count says it is an estimate");
});
