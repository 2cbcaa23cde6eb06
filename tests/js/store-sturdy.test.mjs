// Four failure cases of the session store that lost or refused work: an import whose
// write landed and then threw, sessions in a cycle of parents that cleanup never removed, two
// storages of one name whose announcements interfered, and a turnStart shown wrapped on wasm32;
// then what the fixes left: tabs of one storage that scoped their announcements apart.
// Each test names what it did on the code before the fix.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Session, SessionStore, MemoryStorageAdapter, StorageError, ConflictError, ContextCompactorError, CorruptRecordError } from "context-compactor";
import { seal, sealCurrent, bodyOf, failing, wrapping, listingAtMost, hookedLocks } from "./failing-storage.mjs";

const msg = (i) => ({ role: i % 2 ? "assistant" : "user", content: `message number ${i} with some words in it` });
const contents = (handle) => handle.history.messages().map((m) => m.content);
const DAY = 86_400_000;

/** `exportSession`'s file of a session of `n` messages. */
async function exportedFile(n, id = "h", options = {}) {
  const store = await SessionStore.open(new MemoryStorageAdapter(), options);
  const chat = await store.create({ id, title: `session ${id}` });
  chat.history.appendMany(Array.from({ length: n }, (_, i) => msg(i)));
  await chat.flush();
  const text = await store.exportSession(id);
  await store.close();
  return text;
}

/**
 * A memory adapter whose next batch with a session's meta record lands and then throws, and whose reads then fail as well
 * until `up()`: a connection that dropped after the commit.
 */
function droppingAfterCommit(data = new Map()) {
  const inner = new MemoryStorageAdapter({ data });
  let down = false;
  let drop = false;
  const read = (method) => (...args) => {
    if (down) return Promise.reject(new Error("the connection dropped"));
    return inner[method](...args);
  };
  const adapter = wrapping(inner, {
    load: read("load"),
    loadRange: read("loadRange"),
    saveBatch: async (writes) => {
      if (down) throw new Error("the connection dropped");
      await inner.saveBatch(writes);
      if (drop && writes.some((w) => w.key[0] === "s")) {
        drop = false;
        down = true;
        throw new Error("the connection dropped");
      }
    },
  });
  return { adapter, data, dropNext: () => (drop = true), up: () => (down = false) };
}

test("[ConflictError on retry] an import whose write landed before the connection dropped succeeds when retried", async () => {
  const file = await exportedFile(5);
  const { adapter, data, dropNext, up } = droppingAfterCommit();
  const store = await SessionStore.open(adapter, { autosave: false });
  dropNext();
  await assert.rejects(store.importSession(file), (e) => e instanceof StorageError && e.cause?.message === "the connection dropped");
  up();
  // The stored session is the file's, record for record: the retry opens it.
  const retried = await store.importSession(file);
  assert.deepEqual(contents(retried), [0, 1, 2, 3, 4].map((i) => msg(i).content));
  assert.equal(retried.title, "session h");
  const { records } = JSON.parse(file);
  assert.deepEqual(new Map([...data].filter(([key]) => JSON.parse(key)[0] !== "storage")), new Map(records.map((r) => [JSON.stringify(r.key), r.value])), "stored as in the file, once");
  // Once changed, the stored session is no longer the file's.
  retried.history.append(msg(5));
  await retried.flush();
  await retried.close();
  await assert.rejects(store.importSession(file), ConflictError);
  await store.close();
});

for (const [mode, what] of [
  ["landed", "[StorageError] an import whose write landed but whose promise rejected is read back: it succeeds"],
  ["fail", "an import that did not land still fails, and its retry then imports"],
]) {
  test(what, async () => {
    const file = await exportedFile(3);
    let fail = true;
    const store = await SessionStore.open(failing(new Map(), () => (fail ? mode : undefined)), { autosave: false });
    if (mode === "fail") {
      await assert.rejects(store.importSession(file), StorageError);
      fail = false; // the retry
    }
    const imported = await store.importSession(file);
    fail = false;
    assert.deepEqual(contents(imported), [0, 1, 2].map((i) => msg(i).content));
    await store.close();
  });
}

test("a different session under the imported id stays a ConflictError, unless replace: true", async () => {
  const file = await exportedFile(3);
  const other = await exportedFile(4); // same id "h", other messages
  const sameMessagesOtherTitle = JSON.stringify({
    ...JSON.parse(file),
    records: JSON.parse(file).records.map((r) => (r.key.length === 2 ? seal(r.key, { ...bodyOf(r), title: "renamed" }) : r)),
  });
  const store = await SessionStore.open(new MemoryStorageAdapter(), { autosave: false });
  await (await store.importSession(file)).close();
  await assert.rejects(store.importSession(other), ConflictError);
  await assert.rejects(store.importSession(sameMessagesOtherTitle), ConflictError);
  const replaced = await store.importSession(other, { replace: true });
  assert.equal(replaced.history.length, 4);
  await store.close();
});

test("[ConflictError on retry] a Session.export() file whose import landed is imported by its retry, later", async () => {
  const session = new Session({ id: "legacy" });
  session.history.appendMany([msg(0), msg(1)]);
  const text = JSON.stringify(session.export());
  session.free();
  const { adapter, dropNext, up } = droppingAfterCommit();
  let now = 1_000;
  const store = await SessionStore.open(adapter, { autosave: false, now: () => now });
  dropNext();
  await assert.rejects(store.importSession(text), StorageError);
  up();
  now = 9_000; // its records would carry another time: the session's export is compared
  const retried = await store.importSession(text);
  assert.deepEqual(contents(retried), [msg(0).content, msg(1).content]);
  assert.equal((await store.list())[0].createdAt, 1_000, "the session first stored, not another");
  retried.history.append(msg(2));
  await retried.close();
  await assert.rejects(store.importSession(text), ConflictError);
  await store.close();
});

test("[ConflictError hid it] a retried Session.export() import over a damaged stored session is a CorruptRecordError", async () => {
  const session = new Session({ id: "legacy" });
  session.history.appendMany([msg(0), msg(1)]);
  const text = JSON.stringify(session.export());
  session.free();
  const data = new Map();
  const store = await SessionStore.open(new MemoryStorageAdapter({ data }), { autosave: false });
  await (await store.importSession(text)).close();
  const key = [...data.keys()].find((k) => JSON.parse(k)[0] === "r");
  data.set(key, data.get(key).replace("message number", "massage number"));
  await assert.rejects(store.importSession(text), (e) => e instanceof CorruptRecordError && e.message.includes(key));
  await store.close();
});

/** Imports into `store` sessions of `[id, parentId, updatedAt]`, their meta records rewritten so. */
async function importTree(store, sessions) {
  for (const [id, parentId, updatedAt] of sessions) {
    const file = JSON.parse(await exportedFile(1, id, { now: () => updatedAt }));
    const records = file.records.map((r) => (r.key.length === 2 ? seal(r.key, { ...bodyOf(r), parentId }) : r));
    await (await store.importSession(JSON.stringify({ ...file, records }))).close();
  }
}

test("[kept forever] cleanup removes old sessions in a cycle of parents, and keeps a cycle with a recent one", async () => {
  const store = await SessionStore.open(listingAtMost(100));
  const old = 1_000;
  const recent = 30 * DAY;
  await importTree(store, [
    ["self", "self", old], // its own parent
    ["a", "b", old], // a -> b -> a
    ["b", "a", old],
    ["a-child", "a", recent], // a sub-agent goes with its parent, however recent
    ["x", "y", old], // x -> y -> z -> x, with z recent: kept
    ["y", "z", old],
    ["z", "x", recent],
    ["lone", null, old],
    ["kept", null, recent],
  ]);
  const deleted = await store.cleanup({ olderThanMs: 7 * DAY, now: recent + DAY });
  assert.deepEqual(deleted.sort(), ["a", "a-child", "b", "lone", "self"]);
  assert.deepEqual((await store.list()).map((s) => s.id).sort(), ["kept", "x", "y", "z"]);
  // Once the whole cycle is old, it goes too; delete of a member takes the rest of its cycle.
  assert.deepEqual((await store.cleanup({ olderThanMs: 7 * DAY, now: recent + 8 * DAY })).sort(), ["kept", "x", "y", "z"]);
  await importTree(store, [
    ["p", "q", old],
    ["q", "p", old],
    ["q-child", "q", old],
    ["other", null, old],
  ]);
  assert.equal(await store.delete("q"), true);
  assert.deepEqual((await store.list()).map((s) => s.id), ["other"]);
  await store.close();
});

test("[deleted live session] cleanup keeps a cycle of parents one of whose sessions was saved after the listing", async () => {
  const data = new Map();
  const inner = new MemoryStorageAdapter({ data });
  // The cleaning tab: another tab saves session "b" right before it takes its first lock.
  const { adapter, beforeNextLock } = await hookedLocks(inner);
  let now = 1_000;
  const tab = await SessionStore.open(new MemoryStorageAdapter({ data }), { now: () => now, autosave: false });
  await importTree(tab, [
    ["a", "b", 1_000],
    ["b", "a", 1_000],
  ]);
  now = 30 * DAY;
  const cleaner = await SessionStore.open(adapter, { now: () => now });
  beforeNextLock(async () => {
    const b = await tab.open("b");
    b.history.append(msg(1));
    await b.close();
  });
  assert.deepEqual(await cleaner.cleanup({ olderThanMs: 7 * DAY }), [], "b was saved just now");
  assert.deepEqual((await cleaner.list()).map((s) => s.id).sort(), ["a", "b"]);
  assert.deepEqual(contents(await cleaner.open("b")), [msg(0).content, msg(1).content]);
  await Promise.all([tab.close(), cleaner.close()]);
});

test("[2 s then StorageError] two storages of one name, a session of the same id made in the same millisecond, do not wait for each other", async () => {
  const unnamed = (data) => {
    const adapter = wrapping(new MemoryStorageAdapter({ data }));
    delete adapter.name; // both "default": one channel, as two storages of one origin behind adapters of one name
    return adapter;
  };
  const [dataOne, dataTwo] = [new Map(), new Map()];
  // One file imported into both: the same id and creation time.
  const file = await exportedFile(1, "main", { now: () => 1_000 });
  const one = await SessionStore.open(unnamed(dataOne), { now: () => 1_000, autosave: false });
  const two = await SessionStore.open(unnamed(dataTwo), { now: () => 1_000, autosave: false });
  const a = await one.importSession(file);
  const b = await two.importSession(file);
  for (let i = 1; i <= 5; i++) {
    a.history.append(msg(i));
    await a.flush();
  }
  await new Promise((resolve) => setTimeout(resolve, 20)); // the announcements arrive
  const started = Date.now();
  b.history.append(msg(9));
  await b.flush();
  await b.close();
  const again = await two.open("main");
  assert.ok(Date.now() - started < 1000, `saved and opened after ${Date.now() - started} ms`);
  assert.deepEqual(contents(again), [msg(0).content, msg(9).content]);
  // A third store over the first storage (another tab) still hears it and catches up.
  const three = await SessionStore.open(unnamed(dataOne), { now: () => 1_000, autosave: false });
  const c = await three.open("main");
  const pulled = new Promise((resolve) => (c.onchange = (event) => event.type === "pulled" && resolve(event)));
  a.history.append(msg(6));
  await a.flush();
  // (The channels do not keep the process alive: a timer does, and bounds the wait.)
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(() => resolve("no pulled event in 2 s"), 2000)));
  assert.equal((await Promise.race([pulled, late])).type, "pulled");
  clearTimeout(timer);
  assert.deepEqual(contents(c), [0, 1, 2, 3, 4, 5, 6].map((i) => msg(i).content));
  for (const store of [one, two, three]) await store.close();
});

/**
 * Two tabs' copies of one localStorage: a tab's writes reach the other tab's copy `lagMs` later, in
 * order (a tab's copy catches up with the others' writes only as it runs the events that carry them).
 */
function laggingTabs(lagMs) {
  const copies = [new Map(), new Map()];
  const tabs = copies.map((copy, i) => {
    const own = new MemoryStorageAdapter({ data: copy, name: "lagging" });
    const other = new MemoryStorageAdapter({ data: copies[1 - i], name: "lagging" });
    const spread = (method) => async (...args) => {
      await own[method](...args);
      setTimeout(() => other[method](...args), lagMs);
    };
    return wrapping(own, { save: spread("save"), remove: spread("remove"), removeRange: spread("removeRange"), saveBatch: spread("saveBatch") });
  });
  return { tabs, copies };
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("[lost save] two tabs whose copies lag, their first sessions made at once, wait for each other's saves", async () => {
  const { tabs, copies } = laggingTabs(100);
  const [one, two] = await Promise.all(tabs.map((tab) => SessionStore.open(tab, { autosave: false })));
  // At once: neither tab's copy shows what the other wrote first.
  const [, theirs] = await Promise.all([one.create({ id: "mine" }), two.create({ id: "theirs" })]);
  await sleep(250); // both copies show both sessions
  const shared = await one.open("theirs");
  const pulled = new Promise((resolve) => (shared.onchange = (event) => event.type === "pulled" && resolve(event)));
  theirs.history.append(msg(1));
  await theirs.flush();
  await sleep(20); // the announcement arrives; tab one's copy does not show the save yet
  shared.history.append(msg(2));
  await shared.flush();
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(() => resolve({ type: "no pulled event in 1 s" }), 1000)));
  assert.equal((await Promise.race([pulled, late])).type, "pulled", "tab one heard tab two's save");
  clearTimeout(timer);
  await sleep(250); // each copy shows every write
  for (const copy of copies) {
    const store = await SessionStore.open(new MemoryStorageAdapter({ data: copy }), { broadcast: false });
    assert.deepEqual(contents(await store.open("theirs")), [msg(1).content, msg(2).content], "neither save lost");
    await store.close();
  }
  await Promise.all([one.close(), two.close()]);
});

test("[no live updates] a tab hears another's saves after the records of storage ids were removed", async () => {
  const data = new Map();
  const one = await SessionStore.open(new MemoryStorageAdapter({ data }), { autosave: false });
  const mine = await one.create({ id: "s" });
  mine.history.append(msg(0));
  await mine.flush();
  for (const key of [...data.keys()]) if (JSON.parse(key)[0] === "storage") data.delete(key);
  const two = await SessionStore.open(new MemoryStorageAdapter({ data }), { autosave: false });
  const theirs = await two.open("s");
  const pulled = new Promise((resolve) => (mine.onchange = (event) => event.type === "pulled" && resolve(event)));
  theirs.history.append(msg(1));
  await theirs.flush();
  let timer;
  const late = new Promise((resolve) => (timer = setTimeout(() => resolve({ type: "no pulled event in 1 s" }), 1000)));
  assert.equal((await Promise.race([pulled, late])).type, "pulled");
  clearTimeout(timer);
  assert.deepEqual(contents(mine), [msg(0).content, msg(1).content]);
  await Promise.all([one.close(), two.close()]);
});

test("[wrapped on wasm32] a turnStart past 2^32 is shown as stored", () => {
  const session = new Session({ id: "t" });
  session.history.appendMany([msg(0), msg(1)]);
  const { records } = session.changes({ now: 1_000 });
  session.free();
  const turnStart = 2 ** 32 + 2; // 2 on a 32-bit usize: the session's own turn start
  const forged = records.map((r) => (r.key.length === 2 ? sealCurrent(r.key, { ...bodyOf(r), turnStart }) : r));
  assert.throws(
    () => Session.load(forged),
    (e) => e instanceof ContextCompactorError && e.message.includes(String(turnStart)),
  );
});

test("every record the store writes is JSON text, the session's storage id included; a damaged id only unscopes", async () => {
  const adapter = new MemoryStorageAdapter();
  const store = await SessionStore.open(adapter);
  const chat = await store.create({ id: "j", title: "json" });
  chat.history.append(msg(0));
  await chat.flush();
  const records = await adapter.loadRange([]);
  assert.match(JSON.parse(await adapter.load(["storage", "j"])), /^storage-/, "the session's storage id is stored");
  for (const { key, value } of records) assert.doesNotThrow(() => JSON.parse(value), `record ${JSON.stringify(key)} is JSON`);
  // An id that is not JSON (written by hand, or damaged) counts as none: the session still saves and opens.
  await adapter.save(["storage", "j"], "not json");
  chat.history.append(msg(1));
  await chat.flush();
  await store.close();
  const again = await SessionStore.open(adapter);
  assert.deepEqual(contents(await again.open("j")), [msg(0).content, msg(1).content]);
  // Deleted with its session; a session stored again under the id gets a new one.
  await again.delete("j");
  assert.equal(await adapter.load(["storage", "j"]), undefined);
  await again.create({ id: "j" });
  assert.match(JSON.parse(await adapter.load(["storage", "j"])), /^storage-/);
  await again.close();
});

test("[bogus storage id] a save beacon of a version that did not scope its saves counts for every storage", async () => {
  const { SaveBeacon } = await import("../../dist/storage/locks.js");
  const name = "context-compactor:default:s";
  const held = [`${name}#saved:1000:12`, `${name}#saved:1000:storage-a:7`, `${name}#saved:1000::3`, `${name}#saved:2000:99`].map((lock) => ({ name: lock }));
  const navigator = Object.getOwnPropertyDescriptor(globalThis, "navigator");
  Object.defineProperty(globalThis, "navigator", { value: { locks: { request: () => Promise.resolve(), query: async () => ({ held }) } }, configurable: true });
  try {
    assert.deepEqual(await SaveBeacon.saves(name, 1000), [
      { storage: undefined, commit: 12 },
      { storage: "storage-a", commit: 7 },
      { storage: undefined, commit: 3 },
    ]);
  } finally {
    if (navigator) Object.defineProperty(globalThis, "navigator", navigator);
    else delete globalThis.navigator;
  }
});
