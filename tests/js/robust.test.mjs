// Surviving the worst. A trap inside the wasm (here a JS stack overflow while a call
// is in the wasm) never leaves a session unusable; the wasm memory grows in large steps; every
// error the package throws is a ContextCompactorError; an import checks what the live API checks.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  ConversationHistory,
  Session,
  MemoryModule,
  ContextCompactorError,
  InvalidArgumentError,
  ResourceError,
  SummarizerError,
  loadRanks,
  compact,
  recordTurn,
  answerRecall,
} from "context-compactor";

const BUILD = { budget: { contextWindow: 8_000 } };

function chat(n) {
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  for (let i = 0; i < n; i++) history.append({ role: i % 2 ? "assistant" : "user", content: `message ${i} `.repeat(50) });
  return history;
}

// A call in every frame on the way back from the JS stack limit until one call returns: the first
// frames have no stack left at all, the next ones run out of it inside the wasm (a trap that
// unwinds no Rust frame). The call is written out in each test's recursion: through a closure or
// a spread, V8 refused that frame until there was stack enough for the whole call, and nothing
// reached the wasm.

test("a build that runs out of stack inside the wasm leaves the history whole and usable", () => {
  const history = chat(2_000);
  const before = history.build(BUILD);
  // A budget never asked before each time: the build does all its work.
  let budget = 8_000;
  const thrown = [];
  let done = false;
  const deep = () => {
    try {
      deep();
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
    }
    if (done) return;
    try {
      history.build({ budget: { contextWindow: ++budget } });
      done = true;
    } catch (error) {
      thrown.push(error);
    }
  };
  deep();
  const trapped = thrown.filter((e) => e instanceof ResourceError && /ran out of stack/.test(e.message));
  assert.ok(trapped.length > 0, "some build ran out of stack inside the wasm");
  // Besides those, only the engine's own RangeError, thrown before the library was entered.
  for (const error of thrown) assert.ok(error instanceof ContextCompactorError || error instanceof RangeError, String(error));
  assert.equal(history.length, 2_000);
  assert.deepEqual(history.build(BUILD).messages, before.messages, "the next build gives what the last consistent one did");
  assert.equal(history.export().history.messages.length, 2_000, "export() works");
  assert.equal(history.append({ role: "user", content: "after" }), "m2001");
  history.free();
});

test("an append that runs out of stack is done whole or not at all; the session's export still works", () => {
  const session = new Session({ id: "deep", memory: true });
  const { history, memory } = session;
  history.appendMany([{ role: "user", content: "Find flight ABC123" }, { role: "assistant", content: "Found it." }]);
  memory.recordTurn({ workspaceContext: "State: { found: true }" });
  let sent = 0;
  const thrown = [];
  let done = false;
  const deep = () => {
    try {
      deep();
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
    }
    if (done) return;
    try {
      history.append({ role: "user", content: `deep ${++sent}` });
      done = true;
    } catch (error) {
      thrown.push(error);
    }
  };
  deep();
  const appended = 1;
  assert.ok(thrown.some((e) => e instanceof ResourceError), "some append ran out of stack inside the wasm");
  const exported = session.export();
  const ids = exported.history.messages.map((m) => m.id);
  assert.deepEqual(ids, Array.from({ length: ids.length }, (_, i) => `m${i + 1}`), "the log has no gap nor a torn message");
  assert.ok(ids.length >= 2 + appended, "every append that returned is kept");
  const copy = Session.import(exported);
  assert.equal(copy.history.length, history.length);
  assert.deepEqual(copy.export(), exported, "the export imports back losslessly");
  assert.equal(memory.recall({ turnNumbers: [1] }).turns.length, 1, "the memory still answers");
  assert.ok(history.build(BUILD).messages.length > 0);
});

test("the wasm memory grows in large steps, not a page at a time", async () => {
  // The glue's initSync returns the instance the entry made: its memory is the package's.
  const wasm = (await import("../../pkg/context_compactor.js")).initSync();
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  const sizes = new Set([wasm.memory.buffer.byteLength]);
  for (let i = 0; i < 4_000; i++) {
    history.append({ role: i % 2 ? "assistant" : "user", content: `turn ${i}: ${"a fairly ordinary sentence. ".repeat(200)}` });
    sizes.add(wasm.memory.buffer.byteLength);
  }
  history.build(BUILD);
  sizes.add(wasm.memory.buffer.byteLength);
  const grown = Math.max(...sizes) - Math.min(...sizes);
  // ~22 MB of text: how much of it needs new memory depends on what the earlier tests in this
  // process left free, so the check asks only for growth enough to matter (128 pages and more).
  assert.ok(grown >= 8 * 2 ** 20, `the memory grew by ${grown} bytes`);
  // Page by page, this took hundreds of steps (each a full GC of the JS heap in V8).
  assert.ok(sizes.size <= 12, `the memory grew in ${sizes.size - 1} steps: ${[...sizes].slice(0, 16).map((s) => (s / 2 ** 20).toFixed(1)).join(", ")}… MB`);
});

test("past 128 MB the wasm memory grows by at most 32 MB at a step, past 256 MB by 16 MB: what it reserves ahead is never given back", async () => {
  const wasm = (await import("../../pkg/context_compactor.js")).initSync();
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  const text = "a fairly ordinary sentence. ".repeat(36_000); // ~1 MB
  const sizes = [wasm.memory.buffer.byteLength];
  for (let i = 0; wasm.memory.buffer.byteLength < 320 * 2 ** 20; i++) {
    history.append({ role: i % 2 ? "assistant" : "user", content: `${i} ${text}` });
    if (wasm.memory.buffer.byteLength !== sizes.at(-1)) sizes.push(wasm.memory.buffer.byteLength);
  }
  const steps = sizes.slice(1).map((size, i) => [sizes[i], size - sizes[i]]).filter(([from]) => from >= 160 * 2 ** 20);
  assert.ok(steps.length > 0);
  const mb = (b) => (b / 2 ** 20).toFixed(1);
  // A quarter of 160 MB or more would be 40 MB or more; one message adds ~1 MB (its text, its copy).
  for (const [from, step] of steps) {
    const most = from >= 256 * 2 ** 20 ? 20 : 36;
    assert.ok(step <= most * 2 ** 20, `from ${mb(from)} MB the memory grew by ${mb(step)} MB (at most ${most})`);
  }
  assert.ok(steps.some(([from]) => from >= 256 * 2 ** 20), "the memory passed 256 MB");
  history.free();
});

test("every error is a ContextCompactorError: freed objects, rank tables, summarisers, recall calls", async () => {
  const typed = (cls, pattern) => (e) => e instanceof cls && e instanceof ContextCompactorError && (!pattern || pattern.test(e.message));
  const history = chat(2);
  history.free();
  assert.throws(() => history.length, typed(InvalidArgumentError, /freed/));
  assert.throws(() => history.build(BUILD), typed(InvalidArgumentError, /freed/));
  history.free(); // a second free does nothing, as disposal should
  history[Symbol.dispose]();
  const disposed = chat(2);
  disposed[Symbol.dispose]();
  disposed[Symbol.dispose]();
  assert.throws(() => disposed.append({ role: "user", content: "x" }), typed(InvalidArgumentError, /freed/));
  assert.throws(() => ConversationHistory.prototype.build.call({}, BUILD), typed(InvalidArgumentError, /not a ConversationHistory/));
  // MemoryModule has no constructor in the wasm: `new` is refused rather than making an empty shell.
  assert.throws(() => new MemoryModule(), typed(InvalidArgumentError, /cannot be made with `new`.*session\.memory/));

  assert.throws(() => loadRanks("o200k_base", null), typed(InvalidArgumentError, /Uint8Array/));
  assert.throws(() => loadRanks("o200k_base", { length: 2 ** 40 }), typed(InvalidArgumentError));
  assert.throws(() => loadRanks("o200k_base", { length: -1, 0: 1 }), typed(InvalidArgumentError));
  assert.throws(() => loadRanks("o200k_base", new Uint8Array(12)), typed(InvalidArgumentError, /rank table/));

  const unprintable = Object.create(null);
  const session = new Session({ memory: true });
  session.history.appendMany([{ role: "user", content: "Find flight ABC123" }, { role: "assistant", content: "Found it." }]);
  await assert.rejects(
    recordTurn(session.memory, { workspaceContext: "x", summarize: async () => { throw unprintable; } }),
    typed(SummarizerError, /the summariser failed/),
  );
  const long = new ConversationHistory({ format: "openai" });
  for (let i = 0; i < 40; i++) long.append({ role: i % 2 ? "assistant" : "user", content: `point ${i}: ${"we looked at the seat map again. ".repeat(20)}` });
  const due = { budget: { contextWindow: 3_000 }, summary: { triggerTokens: 1_000, targetTokens: 500, minMessages: 4, maxTokens: 300 } };
  await assert.rejects(compact(long, { ...due, summarize: async () => { throw unprintable; } }), typed(SummarizerError, /the summariser failed/));
  assert.equal(long.summaryState().inProgress ?? null, null, "the failed compaction was cancelled");

  assert.throws(() => answerRecall(session.memory, { id: "call_1", function: null }), typed(InvalidArgumentError, /function/));
  assert.throws(() => answerRecall(null, { id: "call_1", function: { name: "recall_context", arguments: "{}" } }), typed(InvalidArgumentError));
});

/** A session with a summary in force and two recorded turns, and its export. */
function summarisedSession() {
  const session = new Session({ id: "trip", memory: true });
  const { history, memory } = session;
  history.appendMany([{ role: "user", content: "Find flight ABC123" }, { role: "assistant", content: "Found it: Seattle." }]);
  memory.recordTurn({ workspaceContext: "State: { found: true }" });
  history.appendMany([{ role: "user", content: "Cancel it" }, { role: "assistant", content: "Cancelled." }]);
  memory.recordTurn({ workspaceContext: "State: { cancelled: true }", summary: "cancelled the reservation" });
  for (let i = 0; i < 40; i++) history.append({ role: i % 2 ? "assistant" : "user", content: `point ${i}: ${"we looked at the seat map again. ".repeat(20)}` });
  const result = history.build({ budget: { contextWindow: 3_000 }, summary: { triggerTokens: 1_000, targetTokens: 500, minMessages: 4 } });
  assert.ok(result.receipt.summary, "the build made a summary");
  assert.ok(history.summaryState().current, "a summary is in force");
  return session;
}

test("import refuses what the live API refuses: an empty summary, a backwards turn, a createdAt that is no date", () => {
  const session = summarisedSession();
  const exported = session.export();
  Session.import(exported);
  const refused = (edit, pattern) => {
    const copy = structuredClone(exported);
    edit(copy);
    assert.throws(() => Session.import(copy), (e) => e instanceof InvalidArgumentError && pattern.test(e.message));
  };
  refused((e) => (e.history.summary.current.text = ""), /the summary is empty/);
  refused((e) => (e.history.summary.current.createdAt = "last tuesday"), /is not a date/);
  refused((e) => (e.memory.contexts[1].messages = { from: e.memory.contexts[1].messages.until, until: e.memory.contexts[1].messages.from }), /first to last/);
  refused((e) => (e.memory.contexts[0].messages = { from: "m2", until: "m1" }), /first to last/);

  const state = session.history.summaryState();
  assert.throws(
    () => session.history.setSummaryState({ ...state, current: { ...state.current, text: "" } }),
    (e) => e instanceof InvalidArgumentError && /the summary is empty/.test(e.message),
  );
  assert.throws(
    () => session.history.setSummaryState({ ...state, current: { ...state.current, createdAt: "soon" } }),
    (e) => e instanceof InvalidArgumentError && /is not a date/.test(e.message),
  );
  assert.deepEqual(session.history.summaryState(), state, "a refused state changes nothing");
  const request = session.history.build({ budget: { contextWindow: 3_000 }, summary: { triggerTokens: 1_000, targetTokens: 500, minMessages: 4, summarizer: "external" }, now: "2025-11-23T10:00:00Z" });
  assert.ok(request.messages.length > 0);
});
