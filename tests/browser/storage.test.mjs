// Storage in headless Chromium, on a plain page served from localhost (tests/browser/storage.html,
// whose import map resolves the package's entries and idb): the conformance suite, unchanged, on
// the IndexedDB and localStorage adapters; a full quota (localStorage's own; IndexedDB's set low
// through the DevTools protocol); closed and blocked databases; a transaction that fails half-way;
// a reload in the middle of a large write; two tabs appending to one session under Web Locks;
// IndexedDB's loads made together read in one transaction; two storages behind adapters of one
// name, a session of the same id and creation time in each.
// Each scenario renders on the page; the screenshots are saved in tests/browser/screenshots/.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serve, withContext } from "./harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SHOTS = fileURLToPath(new URL("./screenshots/", import.meta.url));
let server;

before(async () => {
  server = await serve({ "/": ROOT });
  mkdirSync(SHOTS, { recursive: true });
});
after(() => server?.close());

async function page(context, log) {
  const tab = await context.newPage();
  tab.on("console", (m) => log.push(`console.${m.type()}: ${m.text()}`));
  tab.on("pageerror", (e) => log.push(`pageerror: ${e.message}`));
  await tab.goto(`${server.url}/tests/browser/storage.html`);
  await tab.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });
  return tab;
}

async function shot(tab, name) {
  const path = `${SHOTS}${name}.png`;
  await tab.screenshot({ path, fullPage: true });
  console.log(`# screenshot: ${path}`);
}

for (const kind of ["indexeddb", "localStorage"]) {
  test(`${kind}: the conformance suite passes unchanged in Chromium`, async () => {
    await withContext(async (context, log) => {
      const tab = await page(context, log);
      const { results, lines } = await tab.evaluate((k) => window.cc.suite(k), kind);
      for (const r of results) console.log(`#   ${r.ok ? "✓" : "✗"} ${r.name} (${r.ms} ms)${r.ok ? "" : `: ${r.error}`}`);
      for (const line of lines) console.log(`# ${line}`);
      await tab.evaluate((ok) => window.cc.done(ok), results.every((r) => r.ok));
      await shot(tab, `storage-suite-${kind}`);
      assert.deepEqual(results.filter((r) => !r.ok), []);
      assert.ok(results.length >= 11);
    });
  });
}

test("localStorage and IndexedDB: a full quota is a typed error, the stored session stays, a later flush saves", async () => {
  await withContext(async (context, log) => {
    const tab = await page(context, log);
    // IndexedDB's quota is most of the disk: the DevTools protocol sets this origin's lower.
    const cdp = await context.newCDPSession(tab);
    await cdp.send("Storage.overrideQuotaForOrigin", { origin: server.url, quotaSize: 12 * 1024 * 1024 });
    for (const kind of ["localStorage", "indexeddb"]) {
      assert.equal(await tab.evaluate(([k]) => window.cc.seed(k, "quota", 40), [kind]), 40);
      const result = await tab.evaluate(([k]) => window.cc.quota(k, "quota"), [kind]);
      console.log(`# ${kind}: ${JSON.stringify(result)}`);
      assert.equal(result.error?.name, "StorageError");
      assert.equal(result.error.reason, "quota");
      assert.equal(result.error.code, "Storage");
      assert.equal(result.stored, 40, "the stored session is as it was");
      assert.equal(result.retried, 46, "the unsaved messages were kept and saved later");
    }
    await tab.reload();
    await tab.waitForFunction(() => window.ready === true);
    for (const kind of ["localStorage", "indexeddb"]) {
      assert.equal((await tab.evaluate(([k]) => window.cc.inspect(k, "quota"), [kind])).length, 46, `${kind} after a reload`);
    }
    await tab.evaluate(() => window.cc.done(true));
    await shot(tab, "storage-quota");
    assert.deepEqual(log.filter((l) => /pageerror/.test(l)), []);
  });
});

test("IndexedDB: closed and blocked databases and a transaction failing half-way are typed errors, nothing half-stored", async () => {
  await withContext(async (context, log) => {
    const tab = await page(context, log);
    await tab.evaluate(() => window.cc.seed("indexeddb", "failures", 20));
    const closed = await tab.evaluate(() => window.cc.closedAndBlocked("failures"));
    console.log(`# ${JSON.stringify(closed)}`);
    assert.deepEqual(closed.closed, { name: "StorageError", reason: "closed" });
    assert.deepEqual(closed.versionchange, { name: "StorageError", reason: "closed" });
    assert.equal(closed.blocked.name, "StorageError");
    assert.equal(closed.blocked.reason, "blocked");
    const failing = await tab.evaluate(() => window.cc.failingTransaction("failures"));
    console.log(`# ${JSON.stringify(failing)}`);
    assert.equal(failing.reason, "aborted");
    assert.equal(failing.stored, failing.before, "nothing of the failed batch");
    const persisted = await tab.evaluate(() => window.cc.persist());
    assert.equal(persisted.supported, true);
    assert.equal(typeof persisted.persisted, "boolean");
    assert.ok(persisted.quota > 0);
    await tab.evaluate(() => window.cc.done(true));
    await shot(tab, "storage-failures");
    assert.deepEqual(log.filter((l) => /pageerror/.test(l)), []);
  });
});

test("IndexedDB: the loads made together are read in one transaction, each with its own value", async () => {
  await withContext(async (context, log) => {
    const tab = await page(context, log);
    const found = await tab.evaluate(async () => {
      const { IndexedDBAdapter } = await import("context-compactor/storage/indexeddb");
      const adapter = await IndexedDBAdapter.open({ database: "cc-loads-together" });
      await adapter.saveBatch(Array.from({ length: 20 }, (_, i) => ({ key: ["r", "a", String(i)], value: `v${i}` })));
      const transaction = IDBDatabase.prototype.transaction;
      let transactions = 0;
      IDBDatabase.prototype.transaction = function (...args) {
        transactions++;
        return transaction.apply(this, args);
      };
      try {
        const keys = Array.from({ length: 25 }, (_, i) => ["r", "a", String(i)]);
        const together = await Promise.all(keys.map((key) => adapter.load(key)));
        const inOne = transactions;
        const oneByOne = [];
        for (const key of keys.slice(0, 3)) oneByOne.push(await adapter.load(key));
        const after = transactions - inOne;
        await adapter.close();
        const closed = await Promise.allSettled([adapter.load(keys[0]), adapter.load(keys[1])]);
        return { together, inOne, oneByOne, after, closed: closed.map((c) => c.status === "rejected" && c.reason.reason) };
      } finally {
        IDBDatabase.prototype.transaction = transaction;
      }
    });
    assert.deepEqual(found.together, [...Array.from({ length: 20 }, (_, i) => `v${i}`), ...Array(5).fill(null)].map((v) => v ?? undefined));
    assert.equal(found.inOne, 1, "25 loads made together: one transaction");
    assert.deepEqual(found.oneByOne, ["v0", "v1", "v2"]);
    assert.equal(found.after, 3, "loads made one after another: one transaction each");
    assert.deepEqual(found.closed, ["closed", "closed"]);
    assert.deepEqual(log.filter((l) => /pageerror/.test(l)), []);
  });
});

for (const kind of ["indexeddb", "localStorage"]) {
  test(`${kind}: a reload in the middle of a large write leaves all of it or none of it`, async () => {
    await withContext(async (context, log) => {
      const tab = await page(context, log);
      const base = await tab.evaluate(([k]) => window.cc.seed(k, "reload", 10), [kind]);
      const outcomes = [];
      // The last: a batch short of the tail's limit, which writes its message records alone.
      for (const [count, delayMs] of [[3000, 0], [3000, 5], [3000, 20], [600, 2], [12, 0]]) {
        const before = await tab.evaluate(([k, n]) => window.cc.startLargeFlush(k, "reload", n), [kind, count]);
        if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
        const done = await tab.evaluate(() => window.flushDone !== undefined);
        await tab.reload();
        await tab.waitForFunction(() => window.ready === true);
        const after = await tab.evaluate(([k]) => window.cc.inspect(k, "reload"), [kind]);
        assert.equal(after.error, undefined, `the session opens after the reload: ${after.error}`);
        assert.ok(after.length === before || after.length === before + count, `${after.length} messages: not ${before} (none of the batch) or ${before + count} (all of it)`);
        assert.deepEqual(after.ids, Array.from({ length: after.length }, (_, i) => `m${i + 1}`));
        outcomes.push(after.length === before ? "none" : "all");
        console.log(`# ${kind}: ${count} messages, reload after ${delayMs} ms (flush ${done ? "done" : "under way"}): ${after.length === before ? "none" : "all"} of the batch`);
      }
      assert.ok(base >= 10);
      await tab.evaluate(() => window.cc.done(true));
      await shot(tab, `storage-reload-${kind}`);
    });
  });
}

for (const kind of ["indexeddb", "localStorage"]) {
  test(`${kind}: two tabs append to one session under Web Locks: nothing lost or interleaved`, async () => {
    await withContext(async (context, log) => {
      const [first, second] = [await page(context, log), await page(context, log)];
      await first.evaluate(([k]) => window.cc.seed(k, "tabs", 2, "start"), [kind]);
      const rounds = 12;
      const [a, b] = await Promise.all([
        first.evaluate(([k, n]) => window.cc.tab(k, "tabs", "A", n), [kind, rounds]),
        second.evaluate(([k, n]) => window.cc.tab(k, "tabs", "B", n), [kind, rounds]),
      ]);
      console.log(`# ${kind}: tab A pulled ${a.pulls} times (${a.renumbered} renumbered), tab B ${b.pulls} times (${b.renumbered} renumbered); Web Locks: ${a.locks}`);
      assert.equal(a.locks, true);
      const third = await page(context, log);
      const stored = await third.evaluate(([k]) => window.cc.inspect(k, "tabs"), [kind]);
      assert.equal(stored.length, 2 + 4 * rounds);
      const texts = (await third.evaluate(([k]) => window.cc.texts(k, "tabs"), [kind])) ?? [];
      for (const who of ["A", "B"]) {
        assert.deepEqual(texts.filter((t) => t.startsWith(who)), Array.from({ length: rounds }, (_, i) => [`${who} asks ${i}`, `${who} answers ${i}`]).flat());
      }
      for (let i = 2; i < texts.length; i += 2) assert.equal(texts[i][0], texts[i + 1][0], "each flush's pair stays together");
      assert.ok(b.texts.length === stored.length || a.texts.length === stored.length, "the tab that finished last saw everything");
      await third.evaluate(() => window.cc.done(true));
      await shot(third, `storage-tabs-${kind}`);
      assert.deepEqual(log.filter((l) => /pageerror/.test(l)), []);
    });
  });
}

test("IndexedDB and localStorage behind adapters of one name: a session of the same id and creation time in each does not wait for the other's saves", async () => {
  await withContext(async (context, log) => {
    const tab = await page(context, log);
    const result = await tab.evaluate(() => window.cc.twoStorages());
    console.log(`# two storages of one name: ${JSON.stringify(result)}`);
    assert.equal(result.error, undefined);
    assert.ok(result.ms < 1000, `the second storage's save and open took ${result.ms} ms`);
    assert.deepEqual(result.stored, { one: 6, two: 2 });
    await tab.evaluate(() => window.cc.done(true));
    await shot(tab, "storage-two-storages");
    assert.deepEqual(log.filter((l) => /pageerror/.test(l)), []);
  });
});
