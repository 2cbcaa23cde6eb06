// Conversion between the formats for what both can express: openai -> anthropic -> openai keeps
// the roles, the texts, the tool calls (ids, names, arguments) and which call each result answers.
import { test } from "node:test";
import assert from "node:assert/strict";
import { convertMessages, ConversationHistory, InvalidArgumentError, ContextCompactorError } from "context-compactor";
import { airlineRuns, claudeCode, CLAUDE_CODE_LOGS } from "./fixtures.mjs";

const text = (content) =>
  content == null ? "" : typeof content === "string" ? content : content.filter((p) => p.type === "text").map((p) => p.text).join("");
const parse = (args) => {
  try {
    return JSON.parse(args);
  } catch {
    return args;
  }
};

/** What both formats express, per OpenAI message. */
const essentials = (messages) =>
  messages.map((m) => ({
    role: m.role,
    text: text(m.content),
    calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: parse(c.function.arguments) })),
    answers: m.tool_call_id ?? null,
  }));

test("airline runs: openai -> anthropic -> openai keeps roles, texts, tool calls and tool ids (40 runs)", () => {
  let messages = 0;
  let results = 0;
  for (const [i, run] of airlineRuns().entries()) {
    const anthropic = convertMessages(run.traj, "openai", "anthropic");
    assert.ok(Array.isArray(anthropic.messages), "anthropic side is { system?, messages }");
    const system = run.traj.filter((m) => m.role === "system").map((m) => m.content);
    if (system.length) assert.deepEqual(typeof anthropic.system === "string" ? [anthropic.system] : anthropic.system.map((b) => b.text), system);
    for (const m of anthropic.messages) {
      assert.ok(m.role === "user" || m.role === "assistant", `run ${i}: anthropic role ${m.role}`);
      for (const b of Array.isArray(m.content) ? m.content : []) {
        if (b.type === "tool_use") assert.equal(typeof b.input, "object", "tool_use input is an object");
        if (b.type === "tool_result") results++;
      }
    }
    const back = convertMessages(anthropic, "anthropic", "openai");
    assert.ok(Array.isArray(back));
    assert.deepEqual(essentials(back), essentials(run.traj), `run ${i}`);
    messages += run.traj.length;
  }
  console.log(`# 40 runs, ${messages} messages, ${results} tool results: same roles, texts and ids after the round trip`);
});

test("airline runs: tool results become user tool_result blocks answering the tool_use ids", () => {
  const run = airlineRuns()[0].traj;
  const { messages } = convertMessages(run, "openai", "anthropic");
  const uses = new Set();
  for (const m of messages) {
    for (const b of Array.isArray(m.content) ? m.content : []) {
      if (b.type === "tool_use") {
        assert.equal(m.role, "assistant");
        uses.add(b.id);
      }
      if (b.type === "tool_result") {
        assert.equal(m.role, "user");
        assert.ok(uses.has(b.tool_use_id), `result ${b.tool_use_id} follows its tool_use`);
      }
    }
  }
  assert.ok(uses.size > 0);
});

for (const name of CLAUDE_CODE_LOGS) {
  test(`Claude Code ${name}: anthropic -> openai -> anthropic keeps texts and tool ids`, () => {
    const messages = claudeCode(name);
    const openai = convertMessages(messages, "anthropic", "openai");
    assert.ok(Array.isArray(openai));
    const ids = (ms) => ms.flatMap((m) => (Array.isArray(m.content) ? m.content : []).map((b) => b.id ?? b.tool_use_id).filter(Boolean));
    const openaiIds = openai.flatMap((m) => [...(m.tool_calls ?? []).map((c) => c.id), ...(m.tool_call_id ? [m.tool_call_id] : [])]);
    assert.deepEqual(openaiIds, ids(messages), "the same tool ids in the same order");
    const back = convertMessages(openai, "openai", "anthropic");
    assert.deepEqual(ids(back.messages), ids(messages));
    const texts = (ms) => ms.flatMap((m) => (typeof m.content === "string" ? [m.content] : m.content.filter((b) => b.type === "text").map((b) => b.text)));
    assert.deepEqual(texts(back.messages).join(""), texts(messages).join(""), "the same text");
    console.log(`# ${name}: ${messages.length} anthropic -> ${openai.length} openai -> ${back.messages.length} anthropic messages`);
  });
}

test("convertMessages refuses unknown formats", () => {
  assert.throws(() => convertMessages([], "openai", "gemini"), InvalidArgumentError);
  assert.throws(() => convertMessages([], "OpenAI", "anthropic"), InvalidArgumentError);
  assert.throws(() => convertMessages([{ role: "robot", content: "x" }], "openai", "anthropic"), ContextCompactorError);
});

test("tool arguments that are not a JSON object convert instead of failing, so no history gets stuck", () => {
  const history = new ConversationHistory({ format: "anthropic" });
  history.append({ role: "user", content: "weather?" }, "anthropic");
  history.append(
    { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "weather", arguments: '{"city": "Par' } }] },
    "openai",
  );
  history.append({ role: "tool", tool_call_id: "c1", content: "18°C" }, "openai");
  const { messages } = history.messages();
  assert.deepEqual(messages[1].content, [{ type: "tool_use", id: "c1", name: "weather", input: { arguments: '{"city": "Par' } }]);
  assert.equal(messages[2].content[0].tool_use_id, "c1");
  const converted = convertMessages([{ role: "assistant", content: null, tool_calls: [{ id: "c2", type: "function", function: { name: "f", arguments: "[1]" } }] }], "openai", "anthropic");
  assert.deepEqual(converted.messages[0].content[0].input, { arguments: "[1]" });
});
