// The storage page: loads the package and the IndexedDB adapter by their bare names, then waits
// for tests/browser/storage.test.mjs to call the helpers on window.cc (through playwright); each
// helper renders what it did, so that the screenshots show the runs.
import { SessionStore, LocalStorageAdapter, MemoryStorageAdapter, StorageError, persist } from "context-compactor";
import { IndexedDBAdapter } from "context-compactor/storage/indexeddb";
import { runStorageAdapterSuite } from "context-compactor/storage-test";

const out = document.getElementById("out");
const status = document.getElementById("status");
const el = (tag, attrs = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), attrs);
  node.append(...children.map((c) => (c instanceof Node ? c : String(c))));
  return node;
};
const section = (title) => out.appendChild(el("section", {}, el("h2", {}, title)));
const row = (table, ...cells) => table.append(el("tr", {}, ...cells.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", { className: typeof c === "number" ? "num" : "" }, c)))));
const mark = (ok) => el("span", { className: ok ? "ok" : "bad" }, ok ? "✓" : "✗");
const describe = (error) => (error ? `${error.name}${error.reason ? ` (${error.reason})` : ""}: ${error.message}` : "");

const adapters = {
  indexeddb: (options = {}) => IndexedDBAdapter.open({ database: "cc-test", ...options }),
  localStorage: async (options = {}) => new LocalStorageAdapter({ prefix: "cc-test", ...options }),
};

/** The conformance suite, unchanged, on one of the browser's adapters. */
async function suite(kind) {
  const part = section(`Conformance suite: ${kind}`);
  const table = el("table");
  part.append(table);
  const lines = [];
  const results = await runStorageAdapterSuite({ name: kind, open: () => adapters[kind](), log: (line) => lines.push(line) });
  for (const r of results) row(table, mark(r.ok), r.name, `${r.ms} ms`, describe(r.error));
  for (const line of lines) part.append(el("div", {}, el("code", {}, line)));
  return { results: results.map((r) => ({ name: r.name, ok: r.ok, ms: r.ms, error: describe(r.error) })), lines };
}

/** A store on `kind`, and a line on the page for each step of a scenario. */
async function scenario(title) {
  const part = section(title);
  const list = el("ul");
  part.append(list);
  return (text, ok = true) => list.append(el("li", {}, mark(ok), " ", text));
}

const sample = (n, tag = "m") =>
  Array.from({ length: n }, (_, i) => (i % 2 === 0 ? { role: "user", content: `${tag} question ${i}: ${"the flight to Seattle ".repeat(4)}` } : { role: "assistant", content: `${tag} answer ${i}` }));

window.cc = {
  suite,
  persist: async () => {
    const report = await persist();
    (await scenario("persist()"))(`navigator.storage.persist() → ${JSON.stringify(report)}`);
    return report;
  },
  /** Makes (or tops up) session `id` with `count` messages; returns its message count. */
  async seed(kind, id, count, tag = "m") {
    const store = await SessionStore.open(await adapters[kind]());
    let session;
    try {
      session = await store.open(id);
    } catch {
      session = await store.create({ id, title: `${kind} session` });
    }
    session.history.appendMany(sample(count, tag));
    await store.flush();
    const length = session.history.length;
    await store.close();
    (await scenario(`seed ${kind} ${id}`))(`${length} messages saved`);
    return length;
  },
  /** Opens session `id` in a fresh store: its message count and last message, or the error. */
  async inspect(kind, id) {
    try {
      const store = await SessionStore.open(await adapters[kind]());
      const session = await store.open(id);
      const result = { length: session.history.length, last: session.history.messages().at(-1)?.content, ids: session.history.ids() };
      await store.close();
      (await scenario(`open ${kind} ${id} after a reload`))(`${result.length} messages, the last: ${String(result.last).slice(0, 60)}`);
      return result;
    } catch (error) {
      (await scenario(`open ${kind} ${id}`))(describe(error), false);
      return { error: describe(error) };
    }
  },
  /**
   * Fills the storage with a blob until it is full, appends to `id` and flushes: the typed error,
   * then what a fresh store reads, then after the blob is gone, the retry.
   */
  async quota(kind, id) {
    const log = await scenario(`${kind}: the quota is full`);
    const store = await SessionStore.open(await adapters[kind](), { autosave: false });
    const session = await store.open(id);
    const before = session.history.length;
    const filler = await adapters[kind]({ prefix: "filler", database: "cc-filler" });
    let blobs = 0;
    for (let size = 4 << 20; size >= 1024; ) {
      try {
        await filler.save(["blob", String(blobs)], "x".repeat(size));
        blobs++;
      } catch (error) {
        if (!(error instanceof StorageError && error.reason === "quota")) throw error;
        size >>= 1;
      }
    }
    log(`filled the ${kind} quota with ${blobs} blobs`);
    session.history.appendMany(sample(6, "after the quota"));
    let failure;
    try {
      await session.flush();
    } catch (error) {
      failure = error;
    }
    log(`flush(): ${describe(failure)}`, failure instanceof StorageError && failure.reason === "quota");
    const fresh = await SessionStore.open(await adapters[kind]());
    const stored = (await fresh.open(id)).history.length;
    await fresh.close();
    log(`a fresh store reads ${stored} messages (${before} before the append)`, stored === before);
    await filler.removeRange(["blob"]);
    await filler.close?.();
    await session.flush();
    const fresh2 = await SessionStore.open(await adapters[kind]());
    const retried = (await fresh2.open(id)).history.length;
    await fresh2.close();
    log(`blob removed, flush() again: ${retried} messages stored`, retried === before + 6);
    await store.close();
    return { before, error: failure && { name: failure.name, reason: failure.reason, code: failure.code, message: failure.message }, stored, retried, unsaved: session.closed };
  },
  /** A database closed under the store (close(), then another tab's upgrade), and one blocked on open. */
  async closedAndBlocked(id) {
    const log = await scenario("IndexedDB: closed and blocked databases");
    const results = {};
    const adapter = await adapters.indexeddb();
    const store = await SessionStore.open(adapter, { autosave: false });
    const session = await store.open(id);
    session.history.append({ role: "user", content: "while the database is closed" });
    await adapter.close();
    try {
      await session.flush();
    } catch (error) {
      results.closed = { name: error.name, reason: error.reason };
      log(`after close(): ${describe(error)}`, error.reason === "closed");
    }
    // Another tab opens a newer version: this connection lets go, and says so.
    const second = await adapters.indexeddb();
    const upgrade = await new Promise((resolve, reject) => {
      const request = indexedDB.open("cc-test", 1000);
      request.onsuccess = () => resolve(request.result);
      request.onerror = () => reject(request.error);
    });
    try {
      await second.load(["s", id]);
    } catch (error) {
      results.versionchange = { name: error.name, reason: error.reason };
      log(`after another tab's upgrade: ${describe(error)}`, error.reason === "closed");
    }
    upgrade.close();
    // A database of that name held open at an older version by a tab that does not let go.
    const holder = await new Promise((resolve) => {
      const request = indexedDB.open("cc-blocked", 1);
      request.onsuccess = () => resolve(request.result);
    });
    holder.onversionchange = () => {}; // an old tab that ignores upgrades
    const t0 = performance.now();
    try {
      await IndexedDBAdapter.open({ database: "cc-blocked", blockedTimeoutMs: 300 });
    } catch (error) {
      results.blocked = { name: error.name, reason: error.reason, ms: Math.round(performance.now() - t0) };
      log(`open while an old tab holds it: ${describe(error)}`, error.reason === "blocked");
    }
    holder.close();
    return results;
  },
  /** A write that fails in the middle of its transaction: nothing of the batch is stored. */
  async failingTransaction(id) {
    const log = await scenario("IndexedDB: a write fails in the middle of its transaction");
    const store = await SessionStore.open(await adapters.indexeddb(), { autosave: false });
    const session = await store.open(id);
    const before = session.history.length;
    session.history.appendMany(sample(10, "doomed"));
    const put = IDBObjectStore.prototype.put;
    let calls = 0;
    IDBObjectStore.prototype.put = function (...args) {
      if (++calls === 4) throw new DOMException("injected failure", "DataError");
      return put.apply(this, args);
    };
    let failure;
    try {
      await session.flush();
    } catch (error) {
      failure = error;
    } finally {
      IDBObjectStore.prototype.put = put;
    }
    log(`flush() with the 4th put failing: ${describe(failure)}`, failure?.reason === "aborted");
    const fresh = await SessionStore.open(await adapters.indexeddb());
    const stored = (await fresh.open(id)).history.length;
    await fresh.close();
    log(`a fresh store reads ${stored} messages (${before} before)`, stored === before);
    await session.flush();
    await store.close();
    return { before, stored, reason: failure?.reason };
  },
  /** The contents of session `id`'s messages, from a fresh store. */
  async texts(kind, id) {
    const store = await SessionStore.open(await adapters[kind]());
    const texts = (await store.open(id)).history.messages().map((m) => m.content);
    await store.close();
    const turns = texts.filter((t, i) => i % 2 === 0 && /^[AB] /.test(t)).map((t) => t[0]).join("");
    (await scenario(`${kind} ${id}: whose pair each saved turn is`))(`${turns} (${texts.length} messages: each pair whole, each tab's in order)`);
    return texts;
  },
  /** Appends `count` messages and starts a flush that the test interrupts with a reload. */
  async startLargeFlush(kind, id, count) {
    const store = await SessionStore.open(await adapters[kind](), { autosave: false });
    const session = await store.open(id);
    const before = session.history.length;
    session.history.appendMany(sample(count, "reload"));
    window.flushStarted = performance.now();
    session.flush().then(() => (window.flushDone = performance.now()), (e) => (window.flushError = describe(e)));
    return before;
  },
  /** One tab of two: appends `rounds` pairs to `id`, flushing each, and reports what it saw. */
  async tab(kind, id, who, rounds) {
    const store = await SessionStore.open(await adapters[kind](), { autosave: false });
    const session = await store.open(id);
    const pulls = [];
    session.onchange = (event) => event.type === "pulled" && pulls.push(event.report);
    for (let i = 0; i < rounds; i++) {
      session.history.appendMany([{ role: "user", content: `${who} asks ${i}` }, { role: "assistant", content: `${who} answers ${i}` }]);
      await session.flush();
      await new Promise((r) => setTimeout(r, Math.random() * 5));
    }
    await session.sync();
    const texts = session.history.messages().map((m) => m.content);
    (await scenario(`tab ${who}`))(`${rounds} rounds appended; sees ${texts.length} messages; ${pulls.length} pulls of the other tab's saves, ${pulls.reduce((n, r) => n + r.renumbered.length, 0)} of its messages renumbered`);
    await store.close();
    return { texts, pulls: pulls.length, renumbered: pulls.reduce((n, r) => n + r.renumbered.length, 0), locks: typeof navigator.locks?.request === "function" };
  },
  /**
   * An IndexedDB database and a localStorage prefix behind adapters without names (both
   * "default": one channel, one set of save beacons), one file imported into both (a session of
   * the same id and creation time): saves in the first, then a save and an open in the second.
   */
  async twoStorages() {
    const unnamed = (adapter) => {
      const wrapper = {};
      for (const method of ["load", "save", "remove", "loadRange", "removeRange", "saveBatch", "lock"]) {
        if (typeof adapter[method] === "function") wrapper[method] = adapter[method].bind(adapter);
      }
      return wrapper;
    };
    const source = await SessionStore.open(new MemoryStorageAdapter(), { now: () => 1_000 });
    const made = await source.create({ id: "shared" });
    made.history.append(sample(1, "file")[0]);
    await made.flush();
    const file = await source.exportSession("shared");
    await source.close();
    const one = await SessionStore.open(unnamed(await adapters.indexeddb({ database: "cc-test-one" })), { autosave: false });
    const two = await SessionStore.open(unnamed(await adapters.localStorage({ prefix: "cc-test-two" })), { autosave: false });
    await one.delete("shared");
    await two.delete("shared");
    const a = await one.importSession(file);
    const b = await two.importSession(file);
    for (const message of sample(5, "one")) {
      a.history.append(message);
      await a.flush();
    }
    await new Promise((resolve) => setTimeout(resolve, 50)); // the announcements arrive
    const started = performance.now();
    let error;
    try {
      b.history.append(sample(1, "two")[0]);
      await b.flush();
      await b.close();
      await (await two.open("shared")).close();
    } catch (e) {
      error = describe(e);
    }
    const ms = Math.round(performance.now() - started);
    const stored = { one: (await one.list())[0]?.messages, two: (await two.list())[0]?.messages };
    await one.close();
    await two.close();
    (await scenario("two storages of one name, one file imported into both"))(`the second storage's save and open took ${ms} ms${error ? `: ${error}` : ""}; stored messages ${JSON.stringify(stored)}`, !error && ms < 1000);
    return { ms, error, stored };
  },
  done(ok) {
    status.textContent = ok ? "all storage checks passed" : "some storage checks failed";
    status.dataset.status = ok ? "pass" : "fail";
  },
};
status.textContent = "ready";
window.ready = true;
