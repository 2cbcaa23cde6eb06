// Listing many sessions: `store.list()` reads sessions concurrently (a bounded number at a time)
// and each session's tail keys together, with the result of reading them one by one (a tail stops
// at its first absent key, and a read that fails after it does not count); the file-system
// adapter reads a log file once for many loads of it (concurrent ones too), sees other processes'
// appends at the next load, and drops least recently used indexes past its budget.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { open as openFile } from "node:fs/promises";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { SessionStore, MemoryStorageAdapter, StorageError } from "context-compactor";
import { FileSystemAdapter } from "context-compactor/storage/fs";

const roots = [];
after(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));
const freshRoot = () => {
  const root = mkdtempSync(join(tmpdir(), "cc-list-"));
  roots.push(root);
  return root;
};

/** `adapter` whose loads count how many sessions (`key[1]`) and keys are being read at once. */
function watched(adapter) {
  const reading = new Map();
  const seen = { sessions: 0, loads: 0, inFlight: 0 };
  return {
    seen,
    adapter: {
      name: adapter.name,
      loadRange: (prefix) => adapter.loadRange(prefix),
      save: (key, value) => adapter.save(key, value),
      remove: (key) => adapter.remove(key),
      removeRange: (prefix) => adapter.removeRange(prefix),
      saveBatch: (writes) => adapter.saveBatch(writes),
      async load(key) {
        const id = key[1];
        reading.set(id, (reading.get(id) ?? 0) + 1);
        seen.inFlight++;
        seen.sessions = Math.max(seen.sessions, reading.size);
        seen.loads = Math.max(seen.loads, seen.inFlight);
        try {
          await new Promise((resolve) => setTimeout(resolve, 1)); // a storage round trip
          return await adapter.load(key);
        } finally {
          seen.inFlight--;
          if (reading.get(id) === 1) reading.delete(id);
          else reading.set(id, reading.get(id) - 1);
        }
      },
    },
  };
}

/** `count` sessions in `adapter`, session i with 2 + i % 12 messages, each appended and saved alone (a tail after the meta record). */
async function fill(adapter, count) {
  const store = await SessionStore.open(adapter, { autosave: false, broadcast: false, now: () => 1_000 });
  for (let i = 0; i < count; i++) {
    const s = await store.create({ id: `s${String(i).padStart(3, "0")}`, title: `chat ${i}` });
    for (let j = 0; j < 2 + (i % 12); j++) {
      s.history.append({ role: j % 2 ? "assistant" : "user", content: `message ${j} of chat ${i}` });
      await s.flush();
    }
  }
  await store.close();
}

test("list reads sessions concurrently, at most 8 at a time, each session's tail keys together", async () => {
  const data = new Map();
  await fill(new MemoryStorageAdapter({ data }), 40);
  const { adapter, seen } = watched(new MemoryStorageAdapter({ data }));
  const store = await SessionStore.open(adapter, { broadcast: false });
  const list = await store.list();
  assert.equal(list.length, 40);
  assert.deepEqual(
    list.map((s) => s.messages),
    list.map((s) => 2 + (Number(s.id.slice(1)) % 12)),
    "every message of every tail counted",
  );
  assert.equal(seen.sessions, 8, "8 sessions read at once, never more");
  assert.ok(seen.loads > seen.sessions, `a session's tail keys are read together (${seen.loads} loads at once)`);
  await store.close();
});

test("list gives what reading each tail and settings record one key at a time gives: ordering, gaps, damage, sub-agents", async () => {
  const data = new Map();
  const memory = new MemoryStorageAdapter({ data });
  await fill(memory, 20);
  const store = await SessionStore.open(memory, { autosave: false, broadcast: false, now: () => 5_000 });
  const parent = await store.open("s013");
  const child = await parent.spawnSubagent("look up the baggage rules");
  child.history.append({ role: "user", content: "the rules" });
  await child.flush();
  await store.close();
  // s005 (7 messages, its meta record at the 1st save): its 4th message lost, so the 5th to 7th,
  // after the gap, are not part of it; s007's meta record damaged.
  await memory.remove(["r", "s005", "m", "000000000004"]);
  data.set(JSON.stringify(["s", "s007"]), "{ not a record");
  const sequential = async (adapter) => {
    const io = (await SessionStore.open(adapter, { broadcast: false })).io;
    const { Session } = await import("context-compactor");
    const found = [];
    for (const entry of (await io.loadRange(["s"])).filter((e) => e.key.length === 2)) {
      try {
        const tail = [];
        for (const key of Session.tailKeys(entry)) {
          const value = await io.load(key);
          if (value === undefined) break;
          tail.push({ key, value });
        }
        const settingsKey = Session.settingsKey(entry);
        const settings = settingsKey && (await io.load(settingsKey));
        if (settings !== undefined) tail.push({ key: settingsKey, value: settings });
        found.push(Session.info(entry, tail));
      } catch (error) {
        found.push({ id: entry.key[1], problem: error.constructor.name });
      }
    }
    return found.sort((a, b) => (b.updatedAt ?? 0) - (a.updatedAt ?? 0) || (a.id < b.id ? -1 : 1));
  };
  const listed = await (await SessionStore.open(memory, { broadcast: false })).list();
  const expected = await sequential(memory);
  assert.deepEqual(
    listed.map((s) => (s.problem ? { id: s.id, problem: s.problem.constructor.name } : s)),
    expected,
  );
  assert.equal(listed.find((s) => s.id === "s005").messages, 3, "the tail stops at its gap");
  assert.equal(listed.find((s) => s.id === child.id).parentId, "s013");
  assert.equal(listed.find((s) => s.id === "s007").problem.constructor.name, "CorruptRecordError");
  assert.ok(listed.every((s) => s.problem || s.encoding === "o200k_base"), "each sound session's encoding, from its settings record");
});

test("a tail read that fails counts only before the tail's first absent key", async () => {
  const data = new Map();
  await fill(new MemoryStorageAdapter({ data }), 1); // s000: 2 messages
  const failing = (bad) => {
    const memory = new MemoryStorageAdapter({ data });
    const load = memory.load.bind(memory);
    memory.load = async (key) => {
      if (JSON.stringify(key) === JSON.stringify(bad)) throw new Error("disk on fire");
      return load(key);
    };
    return memory;
  };
  const store = await SessionStore.open(new MemoryStorageAdapter({ data }), { broadcast: false });
  const [meta] = (await store.io.loadRange(["s"])).filter((e) => e.key.length === 2);
  const { Session } = await import("context-compactor");
  const keys = Session.tailKeys(meta);
  const present = (await store.readOn(keys)).length;
  assert.ok(present >= 1 && present + 2 <= keys.length, `a tail of ${present} of ${keys.length} keys`);
  // After the gap: not read one by one, so not an error.
  const afterGap = await SessionStore.open(failing(keys[present + 1]), { broadcast: false });
  assert.equal((await afterGap.readOn(keys)).length, present);
  assert.equal((await afterGap.list())[0].messages, 2);
  // Before it: the error, as a StorageError naming the key (list: the session's problem).
  const beforeGap = await SessionStore.open(failing(keys[0]), { broadcast: false });
  await assert.rejects(beforeGap.readOn(keys), (error) => error instanceof StorageError && error.message.includes(JSON.stringify(keys[0])));
  assert.ok((await beforeGap.list())[0].problem instanceof StorageError);
});

/** Counts the bytes read through every `FileHandle` of this process while `fn` runs (and the reads, in `bytesRead.reads`). */
async function bytesRead(fn) {
  const probe = await openFile(import.meta.filename ?? new URL(import.meta.url).pathname, "r");
  const proto = Object.getPrototypeOf(probe);
  await probe.close();
  const read = proto.read;
  let total = 0;
  bytesRead.reads = 0;
  proto.read = async function (...args) {
    const result = await read.apply(this, args);
    bytesRead.reads++;
    total += result.bytesRead;
    return result;
  };
  try {
    await fn();
  } finally {
    proto.read = read;
  }
  return total;
}

/** A log file of `count` keys under ["r", id] with 1 kB values; its size. */
async function logOf(adapter, id, count) {
  const value = "x".repeat(1000);
  await adapter.saveBatch(Array.from({ length: count }, (_, i) => ({ key: ["r", id, "m", String(i).padStart(6, "0")], value })));
}

test("fs: concurrent loads from a log not yet indexed read the file once, not once each", async () => {
  const root = freshRoot();
  await logOf(await FileSystemAdapter.open({ root, sync: false }), "big", 200);
  const adapter = await FileSystemAdapter.open({ root, sync: false });
  const keys = Array.from({ length: 20 }, (_, i) => ["r", "big", "m", String(180 + i).padStart(6, "0")]);
  let values;
  const bytes = await bytesRead(async () => {
    values = await Promise.all(keys.map((key) => adapter.load(key)));
  });
  assert.ok(values.every((v) => v === "x".repeat(1000)));
  const fileSize = 200 * 1000;
  assert.ok(bytes >= fileSize && bytes < 1.5 * fileSize, `${bytes} bytes read for 20 loads from a ${fileSize}-byte log`);
  // Indexed: a load reads its value alone.
  const again = await bytesRead(() => adapter.load(keys[0]));
  assert.equal(again, 1000);
  // A tail, some of it absent, loaded together: one read of the values, from the first to the last.
  const tail = Array.from({ length: 16 }, (_, i) => ["r", "big", "m", String(190 + i).padStart(6, "0")]);
  let found;
  const span = await bytesRead(async () => {
    found = await Promise.all(tail.map((key) => adapter.load(key)));
  });
  assert.deepEqual(found, [...Array(10).fill("x".repeat(1000)), ...Array(6).fill(undefined)]);
  assert.equal(bytesRead.reads, 1, "one read for the 10 values");
  assert.ok(span >= 10_000 && span < 11_000, `${span} bytes read for 10 values of 1,000`);
});

test("fs: another process's append and removal are seen by the next load despite the index", async () => {
  const root = freshRoot();
  const mine = await FileSystemAdapter.open({ root, sync: false });
  const theirs = await FileSystemAdapter.open({ root, sync: false }); // its own index, as another process's
  await mine.saveBatch([
    { key: ["r", "a", "m", "1"], value: "one" },
    { key: ["r", "a", "m", "2"], value: "two" },
  ]);
  assert.equal(await mine.load(["r", "a", "m", "1"]), "one");
  await theirs.saveBatch([
    { key: ["r", "a", "m", "3"], value: "three" },
    { key: ["r", "a", "m", "1"], value: "ONE" },
    { key: ["r", "a", "m", "2"], value: undefined },
  ]);
  assert.deepEqual(
    await Promise.all(["1", "2", "3"].map((n) => mine.load(["r", "a", "m", n]))),
    ["ONE", undefined, "three"],
  );
  // Rewritten whole (their removal of most of it compacts the file: a new inode).
  await theirs.removeRange(["r", "a"]);
  await theirs.save(["r", "a", "m", "9"], "nine");
  assert.deepEqual(await Promise.all(["1", "3", "9"].map((n) => mine.load(["r", "a", "m", n]))), [undefined, undefined, "nine"]);
});

test("fs: least recently used indexes are dropped past 50,000 entries in all", async () => {
  const root = freshRoot();
  const writer = await FileSystemAdapter.open({ root, sync: false });
  await writer.saveBatch([{ key: ["r", "small", "m", "1"], value: "s".repeat(1000) }]);
  await writer.saveBatch(Array.from({ length: 50_000 }, (_, i) => ({ key: ["r", "huge", "m", String(i)], value: "h" })));
  const adapter = await FileSystemAdapter.open({ root, sync: false });
  const small = ["r", "small", "m", "1"];
  assert.ok((await bytesRead(() => adapter.load(small))) > 1000, "the first load indexes the file");
  assert.equal(await bytesRead(() => adapter.load(small)), 1000, "then reads the value alone");
  await adapter.load(["r", "huge", "m", "7"]);
  assert.ok((await bytesRead(() => adapter.load(small))) > 1000, "its index was dropped for the huge log's");
  assert.equal(await bytesRead(() => adapter.load(small)), 1000, "and indexed again, kept as the most recent");
});

test("fs: a log removed and written again to the same size (its inode number reused) is read again", async (t) => {
  const root = freshRoot();
  const log = join(root, "r", "a.log");
  const mine = await FileSystemAdapter.open({ root, sync: false });
  const theirs = await FileSystemAdapter.open({ root, sync: false });
  await mine.save(["r", "a", "m", "1"], "one");
  assert.equal(await mine.load(["r", "a", "m", "1"]), "one");
  const before = statSync(log);
  await theirs.removeRange(["r", "a"]);
  await theirs.save(["r", "a", "m", "2"], "two"); // the same bytes but one
  const after = statSync(log);
  // The same size and the same inode number (where the file system reuses it at once): only the
  // birth time tells the new log from the old one.
  assert.equal(after.size, before.size);
  if (after.ino !== before.ino) {
    t.skip(`the file system gave the new log another inode number (${before.ino}, then ${after.ino}): nothing to test`);
    return;
  }
  assert.deepEqual(await Promise.all(["1", "2"].map((n) => mine.load(["r", "a", "m", n]))), [undefined, "two"]);
});

test("fs: a load while an append syncs leaves the index as the file is, and another process's append of as many bytes is read", async () => {
  const root = freshRoot();
  const mine = await FileSystemAdapter.open({ root }); // sync: true, so each append awaits its fdatasync
  const theirs = await FileSystemAdapter.open({ root, sync: false });
  await mine.save(["r", "a", "m", "1"], "one");
  assert.equal(await mine.load(["r", "a", "m", "1"]), "one");
  const probe = await openFile(join(root, "r", "a.log"), "r");
  const proto = Object.getPrototypeOf(probe);
  await probe.close();
  const datasync = proto.datasync;
  let during;
  proto.datasync = async function (...args) {
    proto.datasync = datasync;
    during = await mine.load(["r", "a", "m", "2"]); // this process reads the log while the append syncs
    return datasync.apply(this, args);
  };
  try {
    await mine.save(["r", "a", "m", "2"], "two");
  } finally {
    proto.datasync = datasync;
  }
  assert.equal(during, "two");
  // As many bytes as that append: an index that counted it twice would pass for this file.
  await theirs.save(["r", "a", "m", "3"], "six");
  assert.deepEqual(await Promise.all(["1", "2", "3"].map((n) => mine.load(["r", "a", "m", n]))), ["one", "two", "six"]);
});

test("fs: a log of 200,000 live entries is read whole and compacted (no spread of its entries into Math.min)", async () => {
  const root = freshRoot();
  const log = join(root, "r", "big.log");
  const adapter = await FileSystemAdapter.open({ root, sync: false });
  const keys = Array.from({ length: 200_000 }, (_, i) => ["r", "big", "m", String(i)]);
  await adapter.saveBatch(keys.map((key) => ({ key, value: "a" })));
  const { size } = statSync(log);
  // Indexed by the append: the range is read through the index, every entry at once.
  assert.equal((await adapter.loadRange(["r", "big"])).length, keys.length);
  // Written twice more: two thirds dead, so the second of them compacts the log, reading every entry.
  await adapter.saveBatch(keys.map((key) => ({ key, value: "b" })));
  await adapter.saveBatch(keys.map((key) => ({ key, value: "c" })));
  assert.equal(statSync(log).size, size, "compacted to one entry a key");
  assert.ok((await adapter.loadRange(["r", "big"])).every((e) => e.value === "c"));
});
