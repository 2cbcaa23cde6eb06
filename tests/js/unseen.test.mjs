// Through the package, shapes of real sessions the shared fixtures lack (hand-made, small):
// each loads, appends, and builds a request every provider's validator accepts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { loadConversation, ConversationHistory, Tokenizer, validateMessages, convertMessages } from "context-compactor";

const FORMATS = ["openai", "anthropic", "openai-responses", "ai-sdk"];

function buildsEverywhere(loaded) {
  const history = new ConversationHistory({ format: loaded.format });
  history.appendMany(loaded.messages);
  for (const format of FORMATS) {
    const result = history.build({ format, budget: { contextWindow: 100_000, targetRatio: 1 } });
    assert.deepEqual(validateMessages(result.messages, format), [], `${loaded.format} -> ${format}`);
  }
}

const jsonl = (records) => records.map((r) => JSON.stringify(r)).join("\n") + "\n";
const record = (type, uuid, parentUuid, message, more = {}) =>
  ({ parentUuid, isSidechain: false, sessionId: "s", type, message, uuid, timestamp: "2025-08-01T10:00:00.000Z", ...more });

test("a Claude Code sub-agent transcript (every record isSidechain) is the sub-agent's conversation", () => {
  const side = { isSidechain: true, agentId: "a1" };
  const loaded = loadConversation(jsonl([
    record("user", "s1", null, { role: "user", content: "find the bug" }, side),
    record("assistant", "s2", "s1", { id: "msg_1", role: "assistant", content: [{ type: "tool_use", id: "toolu_1", name: "Grep", input: { pattern: "x" } }] }, side),
    record("user", "s3", "s2", { role: "user", content: [{ type: "tool_result", tool_use_id: "toolu_1", content: "a.rs:1" }] }, side),
    record("assistant", "s4", "s3", { id: "msg_2", role: "assistant", content: [{ type: "text", text: "a.rs line 1" }] }, side),
  ]), { name: "agent-a1.jsonl" });
  assert.equal(loaded.source, "claude-code");
  assert.equal(loaded.messages.messages.length, 4);
  assert.ok(loaded.notes.some((n) => n.includes("sub-agent's conversation")), loaded.notes.join("; "));
  buildsEverywhere(loaded);
});

test("Responses items and AI SDK messages load by their content", () => {
  const items = [
    { type: "message", role: "user", content: [{ type: "input_text", text: "hi" }] },
    { type: "reasoning", id: "rs_1", summary: [], encrypted_content: "gAAAA" },
    { type: "function_call", id: "fc_1", call_id: "call_1", name: "f", arguments: "{}" },
    { type: "function_call_output", call_id: "call_1", output: "1" },
    { type: "local_shell_call", id: "lsh_1", call_id: "call_sh", action: { type: "exec", command: ["ls"], env: {} }, status: "completed" },
    { type: "local_shell_call_output", id: "call_sh", output: "a" },
  ];
  const responses = loadConversation(JSON.stringify(items), { name: "items.json" });
  assert.deepEqual([responses.source, responses.format], ["openai-responses", "openai-responses"]);
  assert.deepEqual(responses.messages, items, "as it was given");
  buildsEverywhere(responses);
  const messages = [
    { role: "user", content: "hi" },
    { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "f", input: {} }] },
    { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "f", output: { type: "json", value: { ok: true } } }] },
  ];
  const aiSdk = loadConversation(JSON.stringify(messages));
  assert.deepEqual([aiSdk.source, aiSdk.format], ["ai-sdk", "ai-sdk"]);
  buildsEverywhere(aiSdk);
});

test("a Chat custom tool call round-trips and converts", () => {
  const list = [
    { role: "user", content: "count rows" },
    { role: "assistant", content: null, tool_calls: [{ id: "call_1", type: "custom", custom: { name: "sql", input: "SELECT count(*) FROM t" } }] },
    { role: "tool", tool_call_id: "call_1", content: "3" },
  ];
  assert.deepEqual(convertMessages(list, "openai", "openai"), list);
  assert.deepEqual(validateMessages(list, "openai"), []);
  for (const to of ["anthropic", "openai-responses", "ai-sdk"]) {
    assert.deepEqual(validateMessages(convertMessages(list, "openai", to), to), [], to);
  }
});

test("audio and file parts make a count an estimate, and say where", () => {
  const count = new Tokenizer("o200k_base").countRequest({ messages: [{ role: "user", content: [
    { type: "input_audio", input_audio: { data: "UklGRiQAAABXQVZF", format: "wav" } },
    { type: "file", file: { file_id: "file-abc" } },
  ] }] });
  assert.equal(count.estimate, true);
  assert.deepEqual(count.estimates.map((e) => e.split(":")[0]), ["messages[0].content[0]", "messages[0].content[1]"]);
});
