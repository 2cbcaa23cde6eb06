// A message comes back exactly as appended, byte for byte once stringified: every object's keys
// in the order they were given (the tool call's own, its arguments', the message's), from get(),
// from messages() in its own format, after export/import, and from a reopened store (single
// records and a chunk). A prompt cache keyed on those bytes needs it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, SessionStore, MemoryStorageAdapter } from "context-compactor";

const input = { zeta: 1, alpha: { yy: 2, bb: [{ q: 1, a: 2 }] }, mid: "x", "10": "ten", "2": "two" };
const args = JSON.stringify(input);

// Per format: a call in the API's own key order, and the same call with every object's keys reversed.
const cases = {
  openai: (reversed) => {
    const call = reversed
      ? { function: { arguments: args, name: "search" }, type: "function", id: "c1" }
      : { id: "c1", type: "function", function: { name: "search", arguments: args } };
    return [
      reversed ? { content: "find it", role: "user" } : { role: "user", content: "find it" },
      reversed ? { tool_calls: [call], content: null, role: "assistant" } : { role: "assistant", content: null, tool_calls: [call] },
      reversed ? { content: "found", tool_call_id: "c1", role: "tool" } : { role: "tool", tool_call_id: "c1", content: "found" },
    ];
  },
  anthropic: (reversed) => [
    { role: "user", content: "find it" },
    reversed
      ? { content: [{ input, name: "search", id: "c1", type: "tool_use" }], role: "assistant" }
      : { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "search", input }] },
    { role: "user", content: [reversed ? { content: "found", tool_use_id: "c1", type: "tool_result" } : { type: "tool_result", tool_use_id: "c1", content: "found" }] },
  ],
  "ai-sdk": (reversed) => [
    { role: "user", content: "find it" },
    reversed
      ? { content: [{ input, toolName: "search", toolCallId: "c1", type: "tool-call" }], role: "assistant" }
      : { role: "assistant", content: [{ type: "tool-call", toolCallId: "c1", toolName: "search", input }] },
    { role: "tool", content: [{ type: "tool-result", toolCallId: "c1", toolName: "search", output: { type: "text", value: "found" } }] },
  ],
  "openai-responses": (reversed) => [
    { role: "user", content: "find it" },
    reversed
      ? { arguments: args, name: "search", call_id: "c1", type: "function_call" }
      : { type: "function_call", call_id: "c1", name: "search", arguments: args },
    reversed ? { output: "found", call_id: "c1", type: "function_call_output" } : { type: "function_call_output", call_id: "c1", output: "found" },
  ],
};

async function reopened(format, list, copies) {
  const adapter = new MemoryStorageAdapter();
  const store = await SessionStore.open(adapter);
  const session = await store.create({ id: "order", format });
  for (let i = 0; i < copies; i++) {
    const renamed = JSON.parse(JSON.stringify(list).replaceAll('"c1"', `"c${i + 1}"`));
    session.history.appendMany(renamed);
  }
  await session.flush();
  return (await (await SessionStore.open(adapter)).open("order")).history;
}

for (const [format, make] of Object.entries(cases)) {
  test(`${format}: every object's key order survives get(), messages(), export/import and a reopened store`, async () => {
    for (const reversed of [false, true]) {
      const list = make(reversed);
      const want = list.map((m) => JSON.stringify(m));
      const history = new ConversationHistory({ format });
      const ids = history.appendMany(list);
      const what = `${format}${reversed ? ", keys reversed" : ""}`;
      assert.deepEqual(ids.map((id) => JSON.stringify(history.get(id))), want, `${what}: get()`);
      const own = history.messages(format);
      assert.deepEqual((Array.isArray(own) ? own : own.messages).map((m) => JSON.stringify(m)), want, `${what}: messages()`);
      const imported = ConversationHistory.import(JSON.stringify(history.export()));
      assert.deepEqual(ids.map((id) => JSON.stringify(imported.get(id))), want, `${what}: export/import`);
      const stored = await reopened(format, list, 1);
      assert.deepEqual(ids.map((id) => JSON.stringify(stored.get(id))), want, `${what}: reopened store`);
      // 1,002 messages: the first thousand are stored as one chunk record.
      const chunked = await reopened(format, list, 334);
      assert.deepEqual(["m1", "m2", "m3"].map((id) => JSON.stringify(chunked.get(id))), want, `${what}: a reopened chunk`);
    }
  });
}
