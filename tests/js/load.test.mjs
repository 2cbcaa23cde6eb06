// loadConversation from JS: every fixture, read as a user hands it over (the whole file),
// goes straight into appendMany; malformed files throw typed errors naming the line and field.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { loadConversation, ConversationHistory, InvalidMessageError, InvalidArgumentError, validateMessages } from "context-compactor";
import { FIXTURES, AIRLINE_RUNS, SWE_AGENT, airlineRuns, sweAgent } from "./fixtures.mjs";

const read = (path) => readFileSync(new URL(path, FIXTURES), "utf8");

function appendAll(loaded) {
  const history = new ConversationHistory({ format: loaded.format });
  const ids = history.appendMany(loaded.messages);
  assert.equal(ids.length, loaded.origins.length, "one origin per appended message");
  return history;
}

test("every fixture loads and appends as it is; the name is only a hint", () => {
  const cases = [
    [AIRLINE_RUNS, "tau-bench", "openai"],
    [SWE_AGENT, "swe-agent", "openai"],
    ["anthropic/claude-code-short.jsonl", "claude-code", "anthropic"],
    ["anthropic/claude-code-tool-heavy.jsonl", "claude-code", "anthropic"],
  ];
  for (const [path, source, format] of cases) {
    const text = read(path);
    const loaded = loadConversation(text, { name: path.split("/").pop() });
    assert.equal(loaded.source, source, path);
    assert.equal(loaded.format, format, path);
    const history = appendAll(loaded);
    const { messages } = history.build({ format });
    assert.deepEqual(validateMessages(messages, format), [], path);
    assert.deepEqual(loadConversation(text, { name: "renamed.txt" }).messages, loaded.messages, `${path}: same content, same result`);
    console.log(`# ${path}: ${source}, ${history.length} messages, ${loaded.skipped.length} skipped, notes: ${loaded.notes.join("; ")}`);
  }
});

test("tau-bench layout: one run at a time, losslessly, and how many there are", () => {
  const text = read(AIRLINE_RUNS);
  const runs = airlineRuns();
  for (const run of [0, 7, 39]) {
    const loaded = loadConversation(text, { run });
    assert.deepEqual(loaded.messages, runs[run].traj);
    assert.deepEqual(loaded.run, { index: run, count: 40, taskId: runs[run].task_id });
    assert.equal(loaded.origins[1].record, `[${run}].traj[1]`);
  }
  assert.throws(() => loadConversation(text, { run: 40 }), (e) => e instanceof InvalidArgumentError && /run 40 does not exist: the file has 40 runs/.test(e.message));
  assert.throws(() => loadConversation(text, { run: 1.5 }), InvalidArgumentError);
  assert.throws(() => loadConversation(text, { runs: 1 }), /unknown field "runs"; the fields are name, run, repair/);
});

test("SWE-agent: tool_call_ids read as tool_call_id, every other key kept", () => {
  const loaded = loadConversation(read(SWE_AGENT));
  assert.deepEqual(loaded.messages, sweAgent());
});

test("Claude Code: split responses merged, noise skipped with its line, meta messages marked", () => {
  const loaded = loadConversation(read("anthropic/claude-code-tool-heavy.jsonl"));
  const list = loaded.messages.messages;
  assert.equal(list.length, 23);
  assert.equal(new Set(list.filter((m) => m.id).map((m) => m.id)).size, list.filter((m) => m.id).length, "one message per API response");
  assert.ok(loaded.skipped.every((s) => Number.isInteger(s.line) && s.reason.length > 0));
  assert.deepEqual(loaded.marks.map((m) => [m.kind, m.line]), [["meta", 23], ["localCommand", 24], ["localCommand", 25]]);
  assert.deepEqual(loaded.origins.find((o) => o.lines)?.lines, [11, 12]);
});

test("a file's text or its bytes; an Anthropic { system, messages } comes back as it was", () => {
  const request = { system: "Be brief.", messages: [{ role: "user", content: [{ type: "text", text: "hi" }] }, { role: "assistant", content: "hello" }] };
  const text = JSON.stringify(request);
  const loaded = loadConversation(new TextEncoder().encode(text));
  assert.deepEqual(loaded.messages, request);
  assert.equal(loaded.format, "anthropic");
  assert.deepEqual(loaded.origins.map((o) => o.record), ["system", "messages[0]", "messages[1]"]);
  assert.equal(appendAll(loaded).length, 3);
});

test("malformed files: typed errors naming the line or record and the field", () => {
  const line = (record) => JSON.stringify(record);
  const user = { type: "user", message: { role: "user", content: "hi" } };
  const cases = [
    [`${line(user)}\n${line({ type: "user", uuid: "x" })}\n`, InvalidMessageError, 'line 2: record has no "message" (at line 2.message)', "line 2.message"],
    [`${line(user)}\n${line({ type: "assistant", message: { role: "assistant", content: 7 } })}\n`, InvalidMessageError, /^line 2: .*\(at line 2\.message\.content\)$/, "line 2.message.content"],
    [`${line(user)}\n{"type": "user", "mess\n${line(user)}\n`, InvalidArgumentError, /^line 2: not valid JSON/, "line 2"],
    ['[{"role": "tool", "content": "x"}]', InvalidMessageError, "[0]: tool message has no tool_call_id (at [0].tool_call_id)", "[0].tool_call_id"],
    ['{"history": [{"role": "tool", "content": "x", "tool_call_ids": "c1"}]}', InvalidMessageError, /^history\[0\]: `tool_call_ids` must be an array/, "history[0].tool_call_ids"],
    ['[{"role": "user", "content": "hi"},', InvalidArgumentError, /not valid JSON: EOF while parsing .* at line 1/, undefined],
    ["", InvalidArgumentError, "the file is empty", undefined],
    ["\u0000\u0001\u0002garbage", InvalidArgumentError, /binary data/, "line 1"],
    ['{"foo": 1}', InvalidArgumentError, /got an object with keys `foo`/, undefined],
  ];
  for (const [text, cls, message, path] of cases) {
    assert.throws(() => loadConversation(text), (error) => {
      assert.ok(error instanceof cls, `${JSON.stringify(text)}: ${error.name}: ${error.message}`);
      if (typeof message === "string") assert.equal(error.message, message);
      else assert.match(error.message, message);
      assert.equal(error.path, path);
      return true;
    });
  }
  assert.throws(() => loadConversation(42), InvalidArgumentError);
});
