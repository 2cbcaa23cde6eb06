// StoredSession.compact as a server calls it: every option of its type works (the JS-only ones
// stay in JS), and calls on one session from one process queue rather than refuse each other.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SessionStore, MemoryStorageAdapter, SummarizerError, LeaseHeldError } from "context-compactor";

const options = { format: "openai", budget: { maxTokens: 800 } };

async function longSession(store, id) {
  const chat = await store.create({ id, format: "openai" });
  const messages = Array.from({ length: 30 }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `m${i} ` + "blah ".repeat(40) }));
  await chat.append(messages);
  return chat;
}

test("StoredSession.compact takes summaryTimeoutMs, hands the summariser its signal, and takes leaseMs", async () => {
  const store = await SessionStore.open(new MemoryStorageAdapter(), { autosave: false, broadcast: false });
  const chat = await longSession(store, "opts");
  const signals = [];
  const hung = (request, call) => (signals.push(call?.signal), new Promise(() => {}));
  await assert.rejects(chat.compact({ ...options, summaryTimeoutMs: 200, summarize: hung }), (e) => e instanceof SummarizerError && /within 200 ms/.test(e.message));
  assert.ok(signals[0] instanceof AbortSignal && signals[0].aborted, "the summariser's signal aborted at the timeout");
  assert.equal(chat.history.summaryState().inProgress ?? null, null, "nothing left in progress");
  let seen;
  const result = await chat.compact({ ...options, leaseMs: 5_000, summaryTimeoutMs: 5_000, summarize: async (request, call) => ((seen = call?.signal), "A summary.") });
  assert.ok(seen instanceof AbortSignal && !seen.aborted);
  assert.equal(result.receipt.summary?.tokens > 0, true);
  assert.equal(chat.history.summaryState().current.text, "A summary.");
  // Without a summariser, summaryTimeoutMs is accepted too (and checked).
  await chat.compact({ ...options, summaryTimeoutMs: 1_000 });
  await assert.rejects(chat.compact({ ...options, summaryTimeoutMs: -1, summarize: hung }), /summaryTimeoutMs must be a positive number/);
});
