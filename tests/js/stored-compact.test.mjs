// StoredSession.compact as a server calls it: every option of its type works (the JS-only ones
// stay in JS), and calls on one session from one process queue rather than refuse each other.
import { test } from "node:test";
import assert from "node:assert/strict";
import { SessionStore, MemoryStorageAdapter, SummarizerError, LeaseHeldError, NotFoundError } from "context-compactor";

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

test("a server's concurrent requests on one session (SQLite, one process) queue: none is refused", async () => {
  const { SqliteAdapter } = await import("context-compactor/storage/sqlite");
  const store = await SessionStore.open(await SqliteAdapter.open({ path: ":memory:" }), { autosave: false });
  let summaries = 0;
  const summarize = async () => (summaries++, await new Promise((resolve) => setTimeout(resolve, 20)), "The user and the agent discussed flights.");
  await store.create({ id: "s1", format: "openai" });
  const handle = async (i) => {
    const chat = await store.open("s1");
    await chat.append({ role: i % 2 ? "assistant" : "user", content: `msg ${i} ` + "blah ".repeat(30) }, { key: `r${i}` });
    return chat.compact({ ...options, summarize });
  };
  const results = await Promise.allSettled(Array.from({ length: 29 }, (_, i) => handle(i + 1)));
  const failed = results.filter((r) => r.status === "rejected").map((r) => `${r.reason?.name}: ${r.reason?.message}`);
  assert.deepEqual(failed, [], "every request served");
  assert.ok(summaries >= 1, "a summary was made");
  for (const r of results) assert.ok(r.value.receipt.withinBudget);
  const chat = await store.open("s1");
  assert.equal(chat.history.length, 29);
  // The README's server: a new id is created by the first request, opened by those at the same time.
  const openOrCreate = (id) =>
    store.open(id).catch((e) => (e instanceof NotFoundError ? store.create({ id, format: "openai" }).catch(() => store.open(id)) : Promise.reject(e)));
  const fresh = await Promise.all(Array.from({ length: 5 }, async (_, i) => {
    const handle = await openOrCreate("new-thread");
    await handle.append({ role: "user", content: `q${i}` }, { key: `n${i}` });
    return handle;
  }));
  assert.ok(fresh.every((handle) => handle === fresh[0]), "one handle");
  assert.equal(fresh[0].history.length, 5);
  await store.close();
});

test("a lease held by another process says so; one held by this process says another holder", async () => {
  const data = new Map();
  const adapter = new MemoryStorageAdapter({ data });
  const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
  const chat = await longSession(store, "leased");
  const summarize = async () => "A summary.";
  await adapter.save(["lease", "leased"], JSON.stringify({ holder: "elsewhere", process: "p-elsewhere", until: Date.now() + 60_000 }));
  await assert.rejects(chat.compact({ ...options, summarize }), (e) => e instanceof LeaseHeldError && /by another process/.test(e.message));
  await adapter.remove(["lease", "leased"]);
  // Another handle of this process (a store over the same records under another name) holds it.
  const other = await SessionStore.open(new MemoryStorageAdapter({ data, name: "other-name" }), { autosave: false, broadcast: false });
  let release;
  const holding = (await other.open("leased")).compact({ ...options, summarize: () => new Promise((resolve) => (release = resolve)) });
  while (!release) await new Promise((resolve) => setTimeout(resolve, 5));
  await assert.rejects(chat.compact({ ...options, summarize }), (e) => e instanceof LeaseHeldError && /by another holder in this process/.test(e.message));
  release("A summary.");
  await holding;
});
