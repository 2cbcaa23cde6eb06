// Sessions in PostgreSQL and SQLite across real processes (tests/js/sql-child.mjs): concurrent
// appends, processes killed with SIGKILL inside their lock and at random moments, the server
// restarted mid-run, a reply to COMMIT lost on the way (a TCP proxy that cuts the connection after
// forwarding it), and the compaction lease. PostgreSQL is a real server started for this file
// (tests/support/postgres.mjs). The sleeps only shape the interleavings: nothing here asserts a time.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { SessionStore, StorageError, LeaseHeldError, validateMessages } from "context-compactor";
import { PostgresAdapter } from "context-compactor/storage/postgres";
import { SqliteAdapter } from "context-compactor/storage/sqlite";
import { usePostgres } from "../support/postgres.mjs";
import { chain } from "./sql-chain.mjs";

const CHILD = new URL("./sql-child.mjs", import.meta.url).pathname;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

let pool;
const server = usePostgres(
  { before, after },
  {
    started: (s) => {
      pool = new pg.Pool({ connectionString: s.connectionString, max: 6 });
      pool.on("error", () => {});
    },
    stopping: () => pool?.end(),
  },
);
const scratch = mkdtempSync(join(tmpdir(), "cc-sql-store-"));
after(() => rmSync(scratch, { recursive: true, force: true }));

let serial = 0;
/** Where a test's processes meet: a PostgreSQL schema of its own, or an SQLite file of its own. */
function place(kind) {
  const n = ++serial;
  return kind === "postgres" ? { kind, connectionString: server.connectionString, schema: `t${n}` } : { kind, path: join(scratch, `t${n}.db`) };
}

async function openAdapter(where) {
  return where.kind === "postgres" ? PostgresAdapter.open({ pool, schema: where.schema }) : SqliteAdapter.open({ path: where.path });
}

/** Runs the child with `task`; `.process` is the child, the promise its exit. */
function run(task) {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(task)], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (data) => (stderr += data));
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, stderr })));
  exited.process = child;
  return exited;
}

const lines = (log) => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : []);

async function until(condition, running, what) {
  let ended;
  running?.then((result) => (ended = result));
  for (let waited = 0; !condition(); waited += 10) {
    if (ended) assert.fail(`the process ended (${ended.code ?? ended.signal}) before ${what}: ${ended.stderr}`);
    if (waited > 60_000) assert.fail(`waited a minute for ${what}`);
    await sleep(10);
  }
}

/** Makes session `id` in `where`, with `chains` tool chains tagged `seed-k`. */
async function makeSession(where, id, chains = 0, text = "") {
  const adapter = await openAdapter(where);
  const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
  const chat = await store.create({ id, format: "openai" });
  for (let k = 0; k < chains; k++) chat.history.appendMany(chain(`seed-${k}${text}`));
  await chat.flush();
  await store.close();
  await adapter.close();
}

/**
 * The stored session's messages as the tags of whole chains, in order; fails if a chain is split,
 * broken, or interleaved with another, or if the messages are not valid for OpenAI.
 */
async function storedChains(where, id) {
  const adapter = await openAdapter(where);
  const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
  try {
    const chat = await store.open(id);
    const messages = chat.history.messages("openai");
    if (messages.length > 0) assert.deepEqual(validateMessages(messages, "openai"), [], "the stored messages are valid");
    assert.equal(messages.length % 3, 0, `whole chains only (${messages.length} messages)`);
    const tags = [];
    for (let i = 0; i < messages.length; i += 3) {
      const tag = messages[i].content.replace(/^question /, "");
      assert.deepEqual(messages.slice(i, i + 3), chain(tag).map((m) => ({ ...m })), `chain ${tag} is whole, at ${i}`);
      tags.push(tag);
    }
    return tags;
  } finally {
    await store.close();
    await adapter.close();
  }
}

const byProcess = (tags, id) => tags.filter((t) => t.startsWith(`${id}-`)).map((t) => Number(t.slice(id.length + 1)));
const range = (n, from = 0) => Array.from({ length: n - from }, (_, i) => from + i);

for (const kind of ["postgres", "sqlite"]) {
  test(`${kind}: three processes appending tool chains to one session at once: each stored once, whole, in its order`, async () => {
    const where = place(kind);
    await makeSession(where, "shared");
    const log = join(scratch, `log-${serial}`);
    const ids = ["a", "b", "c"];
    const results = await Promise.all(ids.map((id) => run({ ...where, role: "append", session: "shared", id, chains: 15, log })));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    const tags = await storedChains(where, "shared");
    assert.equal(tags.length, 45);
    for (const id of ids) assert.deepEqual(byProcess(tags, id), range(15), `${id}'s chains, once each, in order`);
  });

  test(`${kind}: a process killed (SIGKILL) in its lock after writing leaves the session as before that append; a retry applies it once`, async () => {
    const where = place(kind);
    await makeSession(where, "killed");
    const log = join(scratch, `log-${serial}`);
    // Its first write is the chain of a-0, its third that of a-2: it stops there, inside the lock.
    const running = run({ ...where, role: "append", session: "killed", id: "a", chains: 5, log, hangAfterWrite: 3 });
    await until(() => lines(log).includes("written"), running, "the third write");
    running.process.kill("SIGKILL");
    assert.equal((await running).signal, "SIGKILL");
    assert.deepEqual(await storedChains(where, "killed"), ["a-0", "a-1"], "the killed append is not stored, not even in part");
    // Another process sends the same appends again, with the same keys.
    const again = await run({ ...where, role: "append", session: "killed", id: "a", chains: 5, log });
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(await storedChains(where, "killed"), ["a-0", "a-1", "a-2", "a-3", "a-4"]);
    // The first two were acknowledged to both processes with the same ids.
    const acked = lines(log).filter((l) => l.startsWith("acked a-0 "));
    assert.equal(acked.length, 2);
    assert.equal(acked[0], acked[1]);
  });

  test(`${kind}: processes killed at random moments, restarted with the same keys: every append stored once, in order`, async () => {
    const where = place(kind);
    await makeSession(where, "random");
    const log = join(scratch, `log-${serial}`);
    let kills = 0;
    const acked = () => lines(log).filter((l) => l.startsWith("acked r-")).map((l) => Number(l.split(" ")[1].slice(2)));
    for (let round = 0; ; round++) {
      assert.ok(round < 60, "the appends finish");
      // A restarted process sends again the append it may have been in the middle of.
      const from = Math.max(-1, ...acked()) + 1;
      const before = acked().length;
      const running = run({ ...where, role: "append", session: "random", id: "r", chains: 30, from, log });
      // Killed once it made progress, a moment later (0 to 40 ms: inside or between appends).
      let ended;
      running.then((result) => (ended = result));
      while (!ended && acked().length <= before) await sleep(2);
      if (!ended) await sleep((round * 13) % 41);
      if (ended) {
        assert.equal(ended.code, 0, ended.stderr);
        break;
      }
      running.process.kill("SIGKILL");
      const killed = await running;
      if (killed.signal !== "SIGKILL") {
        assert.equal(killed.code, 0, killed.stderr);
        break;
      }
      kills++;
      // After each kill the session is whole: chains only, none twice, every acknowledged one in it.
      const tags = await storedChains(where, "random");
      assert.deepEqual(byProcess(tags, "r"), range(tags.length));
      assert.ok(tags.length >= Math.max(...acked()) + 1, "every acknowledged append is stored");
    }
    assert.ok(kills > 0, "at least one process was killed mid-run");
    assert.deepEqual(byProcess(await storedChains(where, "random"), "r"), range(30));
  });

  test(`${kind}: a build sees what another process committed before it`, async () => {
    const where = place(kind);
    await makeSession(where, "seen", 1);
    const adapter = await openAdapter(where);
    const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
    try {
      const chat = await store.open("seen");
      const log = join(scratch, `log-${serial}`);
      const other = await run({ ...where, role: "append", session: "seen", id: "o", chains: 1, log });
      assert.equal(other.code, 0, other.stderr);
      await chat.sync();
      const built = chat.history.build({ format: "openai" });
      assert.ok(built.messages.some((m) => m.content === "result o-0"), "the other process's chain is in the build");
      // And an append here goes after it.
      await chat.append(chain("here-0"));
    } finally {
      await store.close();
      await adapter.close();
    }
    assert.deepEqual(await storedChains(where, "seen"), ["seed-0", "o-0", "here-0"]);
  });

  test(`${kind}: two processes compacting one session at once: one runs, the other gets a LeaseHeldError; a killed holder's lease lapses`, async () => {
    const where = place(kind);
    await makeSession(where, "lease", 40, " with a longer text to count, so that the history is well over the budget of this build");
    const options = { format: "openai", budget: { contextWindow: 3_000 }, summary: { triggerTokens: 1_000, targetTokens: 600, minMessages: 2, maxTokens: 500 }, keepRecentSteps: 1 };
    const log = join(scratch, `log-${serial}`);
    const release = join(scratch, `release-${serial}`);
    const first = run({ ...where, role: "compact", session: "lease", id: "first", log, options, releaseFile: release, leaseMs: 30_000 });
    await until(() => lines(log).includes("summarising"), first, "the first compaction asked for its summary");
    const second = await run({ ...where, role: "compact", session: "lease", id: "second", log, options, leaseMs: 30_000 });
    assert.equal(second.code, 0, second.stderr);
    writeFileSync(release, "");
    assert.equal((await first).code, 0);
    assert.deepEqual(lines(log).filter((l) => !l.startsWith("summarising")).map((l) => l.split(" ")[0] + " " + l.split(" ")[1]), ["refused LeaseHeldError", "compacted with-summary"]);

    // A holder killed while its model works: the others are refused until its lease lapses, then
    // one compacts, cancelling the compaction the dead one left under way. The lease outlasts a
    // process start on a loaded machine (the refused run starts one).
    const LAPSE_MS = 6_000;
    await makeSession(where, "lease-killed", 40, " with a longer text to count, so that the history is well over the budget of this build");
    const log2 = join(scratch, `log2-${serial}`);
    const holder = run({ ...where, role: "compact", session: "lease-killed", id: "dead", log: log2, options, releaseFile: join(scratch, "never"), leaseMs: LAPSE_MS });
    await until(() => lines(log2).includes("summarising"), holder, "the holder asked for its summary");
    holder.process.kill("SIGKILL");
    await holder;
    const refused = await run({ ...where, role: "compact", session: "lease-killed", id: "early", log: log2, options, leaseMs: LAPSE_MS });
    assert.equal(refused.code, 0, refused.stderr);
    assert.match(lines(log2).at(-1), /^refused LeaseHeldError/);
    // Lapsed by now, unless the holder renewed it just before it died (every third of the lease):
    // then within a few seconds more.
    await sleep(LAPSE_MS + 100);
    for (let attempt = 0; ; attempt++) {
      const later = await run({ ...where, role: "compact", session: "lease-killed", id: `later-${attempt}`, log: log2, options, leaseMs: LAPSE_MS });
      assert.equal(later.code, 0, later.stderr);
      if (!/^refused LeaseHeldError/.test(lines(log2).at(-1))) break;
      assert.ok(attempt < 4, `the dead holder's lease never lapsed: ${lines(log2).at(-1)}`);
      await sleep(LAPSE_MS / 3);
    }
    // The dead holder's build stored its frame and the summary request it made: the later one
    // asks for that summary again and compacts with it.
    assert.match(lines(log2).at(-1), /^compacted with-summary /, lines(log2).join("\n"));
  });
}

for (const kind of ["postgres", "sqlite"]) {
  test(`${kind}: a turn served by another process sends the byte-identical prefix`, async () => {
    const where = place(kind);
    // Over the budget: the first build is a compaction event, which drops the early chains.
    await makeSession(where, "served", 30, " with a longer text to count, so that the history passes the budget");
    const options = { format: "openai", budget: { maxTokens: 1_500 }, keepRecentSteps: 1 };
    const adapter = await openAdapter(where);
    const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
    try {
      const chat = await store.open("served");
      const first = chat.history.build(options);
      assert.equal(first.receipt.cache.event, true, "the history passes the budget");
      await chat.flush();
      // The next turns are served by other processes, each opening the session afresh.
      const log = join(scratch, `log-${serial}`);
      let before = first.messages;
      for (const id of ["b", "c"]) {
        const served = await run({ ...where, role: "serve", session: "served", id, options, log });
        assert.equal(served.code, 0, served.stderr);
        const built = JSON.parse(lines(log).at(-1).replace(/^built /, ""));
        assert.equal(built.event, false, `${id}: an append to the context sent before, not a compaction event`);
        assert.deepEqual(built.notes, []);
        assert.equal(JSON.stringify(built.messages.slice(0, before.length)), JSON.stringify(before), `${id}: the prefix sent before, byte for byte`);
        assert.ok(built.messages.length > before.length);
        // What this process, had it served the turn, would have sent.
        await chat.sync();
        const here = chat.history.build(options);
        assert.equal(JSON.stringify(here.messages), JSON.stringify(built.messages), `${id}: the live session's request`);
        before = built.messages;
      }
    } finally {
      await store.close();
      await adapter.close();
    }
  });
}

test("postgres: the server restarted mid-run: typed errors, nothing half-written, every append stored once", async () => {
  const where = place("postgres");
  await makeSession(where, "restart");
  const log = join(scratch, `log-${serial}`);
  const ids = ["a", "b"];
  const running = ids.map((id) => run({ ...where, role: "append", session: "restart", id, chains: 60, log }));
  await until(() => lines(log).filter((l) => l.startsWith("acked")).length >= 10, Promise.race(running), "ten appends");
  server.restart("immediate");
  const results = await Promise.all(running);
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  const retries = lines(log).filter((l) => l.startsWith("retry"));
  assert.ok(retries.length > 0, "the restart failed some appends");
  assert.ok(retries.every((l) => / (unavailable|aborted|blocked|failed)$/.test(l)), `typed reasons: ${retries.slice(0, 3)}`);
  const tags = await storedChains(where, "restart");
  for (const id of ids) assert.deepEqual(byProcess(tags, id), range(60), `${id}'s appends, once each, in order`);
});

/**
 * A TCP proxy to the server that, when armed, forwards the next COMMIT, and drops the server's
 * reply to it (the commit is done) and the client's connection.
 */
async function commitCutter() {
  const state = { armed: false, cut: 0 };
  const proxy = createServer((client) => {
    const upstream = connect(server.port, "127.0.0.1");
    let cutting = false;
    client.on("data", (chunk) => {
      if (state.armed && chunk.includes(Buffer.from("COMMIT\0"))) {
        state.armed = false;
        cutting = true;
      }
      upstream.write(chunk);
    });
    upstream.on("data", (chunk) => {
      if (!cutting) return client.write(chunk);
      state.cut++;
      client.destroy();
      upstream.end();
    });
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
    client.on("close", () => upstream.end());
    upstream.on("close", () => client.destroy());
  });
  await new Promise((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  state.port = proxy.address().port;
  state.close = () => new Promise((resolve) => proxy.close(resolve));
  return state;
}

/** A store on session `id` of `where` whose connections go through `cutter`; `fn(chat)`, then everything closed. */
async function throughCutter(where, id, cutter, fn) {
  const viaProxy = new pg.Pool({ host: "127.0.0.1", port: cutter.port, user: server.user, password: server.password, database: server.database, max: 2 });
  viaProxy.on("error", () => {});
  const adapter = await PostgresAdapter.open({ pool: viaProxy, schema: where.schema });
  const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
  try {
    await fn(await store.open(id));
  } finally {
    await store.close();
    await adapter.close();
    await viaProxy.end();
    await cutter.close();
  }
}

test("postgres: a reply to COMMIT lost on the way: the append retried with its key is stored once", async () => {
  const where = place("postgres");
  await makeSession(where, "lost", 1);
  const cutter = await commitCutter();
  await throughCutter(where, "lost", cutter, async (chat) => {
    cutter.armed = true;
    await assert.rejects(chat.append(chain("keyed"), { key: "keyed" }), (error) => error instanceof StorageError && error.reason === "unavailable");
    assert.equal(cutter.cut, 1, "the COMMIT's reply was cut");
    assert.deepEqual(await storedChains(where, "lost"), ["seed-0", "keyed"], "the commit landed");
    assert.deepEqual(await chat.append(chain("keyed"), { key: "keyed" }), ["m4", "m5", "m6"]);
    assert.deepEqual(await storedChains(where, "lost"), ["seed-0", "keyed"], "the retried append stored nothing more");
  });
});

test("postgres: a reply to COMMIT lost on the way: the retried flush does not store the messages again", async () => {
  // A plain save (autosave's, or flush()) whose commit landed unseen: the next flush settles it,
  // instead of taking its records for another process's and appending its messages after them.
  const where = place("postgres");
  await makeSession(where, "lost-flush", 1);
  const cutter = await commitCutter();
  await throughCutter(where, "lost-flush", cutter, async (chat) => {
    chat.history.appendMany(chain("flushed"));
    cutter.armed = true;
    await assert.rejects(chat.flush(), (error) => error instanceof StorageError && error.reason === "unavailable");
    assert.deepEqual(await storedChains(where, "lost-flush"), ["seed-0", "flushed"], "the commit landed");
    await chat.flush();
    chat.history.appendMany(chain("after"));
    await chat.flush();
    assert.equal(chat.history.length, 9);
    assert.deepEqual(await storedChains(where, "lost-flush"), ["seed-0", "flushed", "after"]);
  });
});

test("postgres: a lock held past lockTimeoutMs is a StorageError with reason blocked", async () => {
  const a = await PostgresAdapter.open({ pool, schema: "blocking", lockTimeoutMs: 300 });
  let release;
  const held = a.lock("x", () => new Promise((resolve) => (release = resolve)));
  await sleep(50);
  const other = new pg.Pool({ connectionString: server.connectionString, max: 2 });
  try {
    const b = await PostgresAdapter.open({ pool: other, schema: "blocking", lockTimeoutMs: 300 });
    await assert.rejects(b.lock("x", async () => "never"), (error) => error instanceof StorageError && error.reason === "blocked");
    assert.equal(await b.lock("y", async () => "another lock is free"), "another lock is free");
  } finally {
    release();
    await held;
    await other.end();
  }
});

test("postgres: what a lock's function writes is rolled back when it throws", async () => {
  const a = await PostgresAdapter.open({ pool, schema: "rollback" });
  await assert.rejects(
    a.lock("x", async () => {
      await a.save(["k"], "written under the lock");
      assert.equal(await a.load(["k"]), "written under the lock", "seen inside the transaction");
      throw new Error("the function failed");
    }),
    /the function failed/,
  );
  assert.equal(await a.load(["k"]), undefined);
  assert.equal(await a.lock("x", async () => (await a.save(["k"], "v"), "done")), "done");
  assert.equal(await a.load(["k"]), "v");
});

test("postgres: compact() takes the lease only when a summary is due", async () => {
  const where = place("postgres");
  await makeSession(where, "small", 1);
  await makeSession(where, "large", 40, " with a longer text to count, so that the history is well over the budget of this build");
  const adapter = await openAdapter(where);
  const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
  try {
    // Another holder's lease, on both sessions.
    for (const id of ["small", "large"]) await adapter.save(["lease", id], JSON.stringify({ holder: "elsewhere", until: Date.now() + 60_000 }));
    const options = { format: "openai", budget: { contextWindow: 3_000 }, summary: { triggerTokens: 1_000, targetTokens: 600, minMessages: 2, maxTokens: 500 }, keepRecentSteps: 1 };
    let asked = 0;
    const summarize = async () => (asked++, "a summary");
    const small = await (await store.open("small")).compact({ ...options, summarize });
    assert.equal(small.messages.length, 3, "built, with no summary due and no lease taken");
    await assert.rejects((await store.open("large")).compact({ ...options, summarize }), (error) => error instanceof LeaseHeldError && error.expiresAt > Date.now());
    assert.equal(asked, 0, "the model was not asked");
  } finally {
    await store.close();
    await adapter.close();
  }
});
