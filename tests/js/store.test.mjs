// The session store in Node: over the memory and file-system adapters, sessions survive a
// "reload" (a new store on the same storage), an append writes one message record and the meta
// record, two stores (two tabs, two processes) appending to one session lose nothing, failures
// keep the unsaved changes, damaged records are reported with their keys.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, readFileSync, writeFileSync } from "node:fs";
import { execFile } from "node:child_process";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import {
  Session,
  SessionStore,
  MemoryStorageAdapter,
  StorageError,
  CorruptRecordError,
  ConflictError,
  NotFoundError,
  InvalidArgumentError,
  persist,
} from "context-compactor";
import { FileSystemAdapter } from "context-compactor/storage/fs";
import { airlineRuns } from "./fixtures.mjs";

const roots = [];
after(() => roots.forEach((root) => rmSync(root, { recursive: true, force: true })));
const freshRoot = () => {
  const root = mkdtempSync(join(tmpdir(), "cc-store-"));
  roots.push(root);
  return root;
};

const messages = airlineRuns().flatMap((run) => run.traj).slice(0, 120);

/** Two kinds of storage, each opened twice as two "tabs" or two runs of the app would. */
const storages = {
  memory: () => {
    const data = new Map();
    return () => new MemoryStorageAdapter({ data });
  },
  "file system": () => {
    const root = freshRoot();
    return () => FileSystemAdapter.open({ root });
  },
};

/** An adapter that records what the store asks it to write, and the keys it reads one by one. */
function recording(adapter) {
  const writes = [];
  const reads = [];
  return {
    writes,
    reads,
    adapter: {
      name: adapter.name,
      load: (k) => (reads.push(k), adapter.load(k)),
      save: (k, v) => (writes.push([k, v]), adapter.save(k, v)),
      remove: (k) => (writes.push([k, undefined]), adapter.remove(k)),
      loadRange: (p) => adapter.loadRange(p),
      removeRange: (p) => adapter.removeRange(p),
      saveBatch: (batch) => (writes.push(...batch.map((w) => [w.key, w.value])), adapter.saveBatch(batch)),
    },
  };
}

for (const [kind, storage] of Object.entries(storages)) {
  test(`${kind}: a session survives a reload, and list, rename, cleanup and delete work from meta records`, async () => {
    const open = storage();
    const store = await SessionStore.open(await open(), { now: () => 1_000 });
    const chat = await store.create({ id: "user-session-123", title: "Flights", memory: true });
    chat.history.appendMany(messages.slice(0, 60));
    chat.history.build({ profile: "gpt-4o" });
    await chat.memory.recordTurn({ workspaceContext: "reservations: [ABC123]" });
    chat.session.metadata = { user: "ann" };
    await store.flush();
    const child = await chat.spawnSubagent("check the baggage allowance", { maxLoops: 3 });
    child.history.append({ role: "assistant", content: "2 bags" });
    const old = await store.create({ id: "old", title: "Last week" });
    const before = chat.session.export();
    await store.close();

    // The reload: a new store over the same storage.
    const reloaded = await SessionStore.open(await open(), { now: () => 1_000 + 8 * 86_400_000 });
    const again = await reloaded.open("user-session-123");
    assert.deepEqual(again.session.export(), before);
    assert.equal(again.history.length, 60);
    assert.deepEqual(again.history.ids(), Array.from({ length: 60 }, (_, i) => `m${i + 1}`));
    assert.equal(again.title, "Flights");
    assert.deepEqual(again.session.metadata, { user: "ann" });
    assert.deepEqual(again.memory.turns, [1]);
    assert.ok(again.history.build({ profile: "gpt-4o" }).messages.length > 0);
    const list = await reloaded.list();
    assert.deepEqual(list.map((s) => [s.id, s.title, s.messages, s.parentId]).sort(), [
      ["old", "Last week", 0, null],
      [child.id, null, 2, "user-session-123"],
      ["user-session-123", "Flights", 60, null],
    ].sort());
    const info = list.find((s) => s.id === "user-session-123");
    assert.equal(info.tokens, again.history.tokenCount().total);
    assert.equal(info.createdAt, 1_000);

    // Cleanup: sessions not updated for 7 days go, with their sub-agents; open ones stay.
    assert.deepEqual(await reloaded.cleanup(), ["old"]);
    await reloaded.rename(child.id, "Baggage");
    assert.equal((await reloaded.list()).find((s) => s.id === child.id).title, "Baggage");
    assert.deepEqual((await reloaded.list()).map((s) => s.id).sort(), [child.id, "user-session-123"].sort());
    await assert.rejects(reloaded.open("old"), NotFoundError);
    // Deleting the parent deletes its sub-agent.
    assert.equal(await reloaded.delete("user-session-123"), true);
    assert.deepEqual(await reloaded.list(), []);
    assert.equal(again.closed, true);
    await reloaded.close();
    assert.equal(old.closed, true);
  });

  test(`${kind}: an append writes that message's record only (every 16th the meta record too), after one read past it`, async () => {
    const open = storage();
    const recorded = recording(await open());
    const store = await SessionStore.open(recorded.adapter);
    const chat = await store.create({ id: "chat" });
    for (const message of messages.slice(0, 30)) {
      chat.history.append(message);
      await chat.flush();
    }
    recorded.writes.length = 0;
    recorded.reads.length = 0;
    const message = messages[30];
    chat.history.append(message);
    await chat.flush();
    assert.deepEqual(recorded.writes.map(([key]) => key), [["r", "chat", "m", "000000000031"]]);
    assert.deepEqual(
      recorded.reads,
      [["storage", "chat"], ["s", "chat"], ["r", "chat", "m", "000000000031"]],
      "the session's storage id with the meta record, and where another tab would have written its next message",
    );
    const [, value] = recorded.writes[0];
    const size = JSON.stringify(message).length;
    // The envelope (version, checksum), the tail mark (commit, end, tokens, time) and the
    // message's own count (who counted it, its parts): under 160 B.
    assert.ok(value.length < size + 160, `${value.length} bytes written for a ${size}-byte message`);
    // What list shows is exact: the meta record (of the 16th append) and the tail after it.
    let [info] = await store.list();
    assert.deepEqual([info.messages, info.tokens, info.commit], [31, chat.history.tokenCount().total, 32]);
    // The 32nd: the tail would reach 16 past the meta record, which is written again.
    recorded.writes.length = 0;
    chat.history.append(messages[31]);
    await chat.flush();
    assert.deepEqual(recorded.writes.map(([key]) => key), [["r", "chat", "m", "000000000032"], ["s", "chat"]]);
    [info] = await store.list();
    assert.deepEqual([info.messages, info.tokens, info.commit], [32, chat.history.tokenCount().total, 33]);
    // Nothing changed: nothing written.
    recorded.writes.length = 0;
    chat.history.tokenCount();
    await chat.flush();
    assert.deepEqual(recorded.writes, []);
    await store.close();
  });

  test(`${kind}: records after the tail that no whole batch holds are ignored, then written over`, async () => {
    const open = storage();
    const adapter = await open();
    let store = await SessionStore.open(adapter, { autosave: false });
    const chat = await store.create({ id: "stale" });
    chat.history.appendMany(messages.slice(0, 3));
    await chat.flush();
    const before = chat.session.export();
    chat.history.appendMany(messages.slice(3, 5));
    await chat.flush();
    await store.close();
    // The first record of the last batch lost: its second is left alone after the tail.
    await adapter.remove(["r", "stale", "m", "000000000004"]);
    store = await SessionStore.open(adapter, { autosave: false });
    const again = await store.open("stale");
    assert.deepEqual(again.session.export(), before);
    assert.equal((await store.list())[0].messages, 3);
    again.history.appendMany(messages.slice(5, 7));
    await again.flush();
    const reopened = await (await SessionStore.open(await open())).open("stale");
    assert.deepEqual(reopened.session.export(), again.session.export());
    assert.deepEqual(reopened.history.messages().slice(3), messages.slice(5, 7));
    await store.close();
  });

  test(`${kind}: a session made again under an id whose records were left behind starts empty`, async () => {
    const open = storage();
    const adapter = await open();
    const store = await SessionStore.open(adapter, { autosave: false });
    const old = await store.create({ id: "again" });
    for (const message of messages.slice(0, 5)) {
      old.history.append(message);
      await old.flush();
    }
    await store.close();
    // A delete that removed the meta record and left the message records (their tail marks
    // would follow any new meta record's commit).
    await adapter.remove(["s", "again"]);
    const next = await SessionStore.open(adapter, { autosave: false });
    const made = await next.create({ id: "again" });
    const fresh = { role: "user", content: "a new conversation" };
    made.history.append(fresh);
    await made.flush();
    const reopened = await (await SessionStore.open(await open())).open("again");
    assert.deepEqual(reopened.history.messages(), [fresh]);
    assert.equal((await next.list())[0].messages, 1);
    await next.close();
  });

  test(`${kind}: long texts of every UTF-8 width survive a reload, stored as ASCII`, async () => {
    // Long enough to enter the wasm through TextEncoder.encodeInto (1,024 UTF-16 units or more),
    // whose first pass has room for one byte a unit: the multi-byte characters finish in the second.
    const texts = ["é".repeat(3000), "😀".repeat(1500), `${"a".repeat(1023)}東${"京".repeat(2000)}`, `${"x".repeat(4000)}😀`];
    const open = storage();
    let store = await SessionStore.open(await open());
    const chat = await store.create({ id: "wide", title: "café — 東京" });
    for (const content of texts) chat.history.append({ role: "user", content });
    await store.close();
    const adapter = await open();
    const stored = await adapter.loadRange([]);
    for (const { key, value } of stored) assert.match(value, /^[\x20-\x7e]*$/, `record ${key.join("/")} is ASCII`);
    store = await SessionStore.open(adapter);
    const reopened = await store.open("wide");
    assert.deepEqual(reopened.history.messages(), texts.map((content) => ({ role: "user", content })));
    assert.equal(reopened.title, "café — 東京");
    await store.close();
  });

  test(`${kind}: two stores (two tabs) append to one session: nothing lost, nothing interleaved`, async () => {
    const open = storage();
    const first = await SessionStore.open(await open(), { autosave: false });
    const second = await SessionStore.open(await open(), { autosave: false });
    const a = await first.create({ id: "shared" });
    a.history.append({ role: "user", content: "start" });
    await a.flush();
    const b = await second.open("shared");
    const pulled = [];
    b.onchange = (event) => event.type === "pulled" && pulled.push(event.report);
    for (let round = 0; round < 5; round++) {
      a.history.appendMany([{ role: "user", content: `A asks ${round}` }, { role: "assistant", content: `A answer ${round}` }]);
      b.history.appendMany([{ role: "user", content: `B asks ${round}` }, { role: "assistant", content: `B answer ${round}` }]);
      await Promise.all([a.flush(), b.flush()]);
    }
    await a.sync();
    await b.sync();
    assert.deepEqual(a.session.export(), b.session.export());
    const texts = a.history.messages().map((m) => m.content);
    assert.equal(texts.length, 21);
    for (const who of ["A", "B"]) {
      const mine = texts.filter((t) => t.startsWith(who));
      assert.deepEqual(mine, Array.from({ length: 5 }, (_, r) => [`${who} asks ${r}`, `${who} answer ${r}`]).flat(), `${who}'s messages, in order`);
    }
    for (let i = 1; i < texts.length; i += 2) {
      assert.equal(texts[i].split(" ")[0], texts[i + 1].split(" ")[0], "each flush's pair stays together");
    }
    assert.ok(pulled.length > 0 && pulled.some((r) => r.renumbered.length > 0), "B's messages were renumbered after A's");
    const reloaded = await (await SessionStore.open(await open())).open("shared");
    assert.deepEqual(reloaded.session.export(), a.session.export());
    await first.close();
    await second.close();
  });

  test(`${kind}: a failed save keeps the stored session and the unsaved changes`, async () => {
    const open = storage();
    const inner = await open();
    let failing = false;
    const adapter = {
      name: inner.name,
      load: (k) => inner.load(k),
      save: (k, v) => inner.save(k, v),
      remove: (k) => inner.remove(k),
      loadRange: (p) => inner.loadRange(p),
      removeRange: (p) => inner.removeRange(p),
      saveBatch: async (batch) => {
        if (failing) {
          // What a full disk does half-way: the first write lands, then the storage refuses.
          await inner.saveBatch(batch.slice(0, 1));
          const error = new Error("no space left on device");
          error.code = "ENOSPC";
          throw error;
        }
        return inner.saveBatch(batch);
      },
    };
    const errors = [];
    const store = await SessionStore.open(adapter, { onError: (error) => errors.push(error) });
    const chat = await store.create({ id: "full" });
    chat.history.appendMany(messages.slice(0, 10));
    await chat.flush();
    failing = true;
    chat.history.appendMany(messages.slice(10, 14));
    for (let waited = 0; errors.length === 0 && waited < 5000; waited += 10) await new Promise((r) => setTimeout(r, 10));
    assert.ok(errors[0] instanceof StorageError && errors[0].reason === "quota", `${errors[0]}`);
    await assert.rejects(chat.flush(), (e) => e instanceof StorageError && e.reason === "quota" && e.cause.code === "ENOSPC");
    const other = await SessionStore.open(await open());
    const meanwhile = await other.open("full");
    assert.equal(meanwhile.history.length, 10, "the stored session is as it was");
    assert.equal((await other.list())[0].messages, 10, "the batch cut short is not listed either");
    failing = false;
    await chat.flush();
    assert.equal(chat.history.length, 14);
    const after = await (await SessionStore.open(await open())).open("full");
    assert.deepEqual(after.session.export(), chat.session.export());
    await store.close();
  });

  test(`${kind}: damaged records are reported with their keys, by open and by list`, async () => {
    const open = storage();
    const adapter = await open();
    const store = await SessionStore.open(adapter);
    const chat = await store.create({ id: "damaged", title: "x" });
    chat.history.appendMany(messages.slice(0, 5));
    await store.close();
    const key = ["r", "damaged", "m", "000000000003"];
    await adapter.save(key, (await adapter.load(key)).replace(/"content":"./, '"content":"X'));
    const reloaded = await SessionStore.open(await open());
    await assert.rejects(reloaded.open("damaged"), (e) => e instanceof CorruptRecordError && e.code === "Corrupt" && e.key.join("/") === key.join("/") && /fails its checksum/.test(e.message));
    await adapter.save(["s", "damaged"], "{not json");
    const [entry] = await reloaded.list();
    assert.equal(entry.id, "damaged");
    assert.ok(entry.problem instanceof CorruptRecordError, "the damaged meta record is listed with its problem");
    assert.deepEqual(entry.problem.key, ["s", "damaged"]);
    assert.equal(await reloaded.delete("damaged"), true, "and it can be deleted");
    assert.deepEqual(await reloaded.list(), []);
  });

  test(`${kind}: export and import one session as a file, and the Session.export() of before`, async () => {
    const open = storage();
    const store = await SessionStore.open(await open());
    const chat = await store.create({ id: "trip", title: "Trip" });
    chat.history.appendMany(messages.slice(0, 25));
    const file = await store.exportSession("trip");
    assert.equal(JSON.parse(file).format, "context-compactor/stored-session");
    // The file of the session stored imports as that session (a retry of an import that landed);
    // once the stored one changed, it is another session of the same id.
    assert.equal(await store.importSession(file), chat);
    const other = await SessionStore.open(new MemoryStorageAdapter());
    const imported = await other.importSession(file);
    assert.deepEqual(imported.session.export(), chat.session.export());
    chat.history.append(messages[25]);
    await chat.flush();
    await assert.rejects(store.importSession(file), ConflictError);
    assert.equal(imported.title, "Trip");
    const tampered = file.replace("Trip", "Trap");
    await assert.rejects(other.importSession(tampered, { replace: true }), CorruptRecordError);
    // What apps kept in localStorage before the store: Session.export()'s JSON (version 0).
    const legacy = new Session({ id: "legacy", memory: true });
    legacy.history.appendMany(messages.slice(0, 8));
    const migrated = await store.importSession(JSON.stringify(legacy.export()));
    assert.deepEqual(migrated.session.export(), legacy.export());
    const reopened = await (await SessionStore.open(await open())).open("legacy");
    assert.deepEqual(reopened.session.export(), legacy.export());
    await assert.rejects(store.importSession("{}"), InvalidArgumentError);
    await store.close();
  });

  test(`${kind}: the context a build sent travels with exportSession and importSession: the next build extends it`, async () => {
    const open = storage();
    const store = await SessionStore.open(await open());
    const chat = await store.create({ id: "framed" });
    chat.history.appendMany(messages.slice(0, 40));
    const options = { format: "anthropic", budget: { maxTokens: 4_000, lowWaterRatio: 0.5 } };
    assert.equal(chat.history.build(options).receipt.cache.event, true, "the history passes the budget");
    await chat.flush();
    const file = await store.exportSession("framed");
    // As the stored records, and as the Session.export() document.
    const files = [file, JSON.stringify(chat.session.export())];
    const copies = await Promise.all(files.map(async (text) => (await SessionStore.open(new MemoryStorageAdapter())).importSession(text)));
    for (const session of [chat, ...copies]) session.history.appendMany(messages.slice(40, 42));
    const live = chat.history.build(options);
    for (const [i, copy] of copies.entries()) {
      const built = copy.history.build(options);
      assert.equal(built.receipt.cache.event, false, `file ${i}: an append to the context sent before`);
      assert.deepEqual(built.receipt.notes, []);
      assert.equal(JSON.stringify(built.messages), JSON.stringify(live.messages), `file ${i}: the live session's request`);
    }
    await store.close();
  });

  test(`${kind}: a session deleted elsewhere is a NotFoundError on the next save, its changes kept in memory`, async () => {
    const open = storage();
    const first = await SessionStore.open(await open(), { autosave: false });
    const second = await SessionStore.open(await open(), { autosave: false, broadcast: false });
    const a = await first.create({ id: "gone" });
    const b = await second.open("gone");
    await first.delete("gone");
    b.history.append({ role: "user", content: "still here" });
    await assert.rejects(b.flush(), NotFoundError);
    assert.equal(b.session.history.length, 1);
    assert.equal(a.closed, true);
    // Its data can be saved anew, as a new session.
    const copy = Session.import(b.session.export());
    await assert.rejects(first.create({ id: "bad id!" }), InvalidArgumentError);
    await first.add(copy).then((s) => s.close());
    await first.close();
  });
}

test("file system: two processes append to one session through lock files", async () => {
  const root = freshRoot();
  const store = await SessionStore.open(await FileSystemAdapter.open({ root }));
  await (await store.create({ id: "proc" })).close();
  const worker = join(root, "worker.mjs");
  writeFileSync(
    worker,
    `import { SessionStore } from "context-compactor";
import { FileSystemAdapter } from "context-compactor/storage/fs";
const [root, who] = process.argv.slice(2);
const store = await SessionStore.open(await FileSystemAdapter.open({ root }), { autosave: false });
const s = await store.open("proc");
for (let i = 0; i < 15; i++) {
  s.history.appendMany([{ role: "user", content: who + " asks " + i }, { role: "assistant", content: who + " answers " + i }]);
  await s.flush();
}
await store.close();
`,
  );
  const resolveFrom = fileURLToPath(new URL("../../", import.meta.url));
  const run = (who) =>
    new Promise((resolve, reject) =>
      execFile(process.execPath, [worker, root, who], { cwd: resolveFrom, env: { ...process.env, NODE_PATH: join(resolveFrom, "node_modules") } }, (error, stdout, stderr) =>
        error ? reject(new Error(`${who}: ${stderr}`)) : resolve(stdout),
      ),
    );
  // The worker imports the package by name: give it the repository's package through a link.
  rmSync(join(root, "node_modules"), { recursive: true, force: true });
  const { symlinkSync, mkdirSync } = await import("node:fs");
  mkdirSync(join(root, "node_modules"));
  symlinkSync(resolveFrom, join(root, "node_modules", "context-compactor"));
  await Promise.all([run("P"), run("Q")]);
  const session = await (await SessionStore.open(await FileSystemAdapter.open({ root }))).open("proc");
  const texts = session.history.messages().map((m) => m.content);
  assert.equal(texts.length, 60);
  for (const who of ["P", "Q"]) {
    assert.deepEqual(texts.filter((t) => t.startsWith(who)), Array.from({ length: 15 }, (_, i) => [`${who} asks ${i}`, `${who} answers ${i}`]).flat());
  }
  for (let i = 0; i < texts.length; i += 2) assert.equal(texts[i].split(" ")[0], texts[i + 1].split(" ")[0], "pairs stay together");
  console.log(`# order of the two processes' turns: ${texts.filter((_, i) => i % 2 === 0).map((t) => t[0]).join("")}`);
});

test("file system: an unfinished write is not read, and the next write cuts it off", async () => {
  const root = freshRoot();
  const adapter = await FileSystemAdapter.open({ root });
  await adapter.save(["r", "x", "a"], "one");
  const file = join(root, "r", "x.log");
  const whole = readFileSync(file);
  writeFileSync(file, Buffer.concat([whole, Buffer.from('[["r","x","b"],100]\nhalf a val')]));
  const fresh = await FileSystemAdapter.open({ root });
  assert.deepEqual(await fresh.loadRange(["r", "x"]), [{ key: ["r", "x", "a"], value: "one" }]);
  await fresh.save(["r", "x", "c"], "three");
  assert.deepEqual((await (await FileSystemAdapter.open({ root })).loadRange(["r"])).map((e) => e.value), ["one", "three"]);
  writeFileSync(file, Buffer.concat([Buffer.from("garbage\n"), readFileSync(file)]));
  await assert.rejects((await FileSystemAdapter.open({ root })).loadRange(["r"]), (e) => e instanceof StorageError && /damaged at byte 0/.test(e.message));
});

test("persist() says when the platform has no persistent storage to ask for", async () => {
  assert.deepEqual(await persist(), { supported: false, persisted: false });
});
