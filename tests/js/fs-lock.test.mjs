// The file system adapter's lock across real processes (tests/js/fs-lock-child.mjs), with stale
// locks left by processes killed while holding them and interleavings forced by pausing the
// processes between file system calls. The delays only shape the interleaving: nothing here
// asserts a time, and mutual exclusion must hold however the processes are scheduled.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileSystemAdapter } from "context-compactor/storage/fs";
import { InvalidArgumentError, SessionStore } from "context-compactor";

const CHILD = new URL("./fs-lock-child.mjs", import.meta.url).pathname;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs the child with `task`; resolves to its exit code, signal and stderr. */
function run(task) {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(task)], { stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (data) => (stderr += data));
  return new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal, stderr })));
}

const lines = (log) => (existsSync(log) ? readFileSync(log, "utf8").split("\n").filter(Boolean) : []);

/** Waits until `line` is in `log`; fails if the process `running` that should write it ends first. */
async function until(log, line, running) {
  let ended;
  running.then((result) => (ended = result));
  while (!lines(log).includes(line)) {
    if (ended) assert.fail(`the process ended (${ended.code ?? ended.signal}) before it logged "${line}": ${ended.stderr}`);
    await sleep(5);
  }
}

/** Asserts that the holders logged to `log` never overlapped: each `enter i` is followed by its `exit i`. */
function assertOneAtATime(log, ids) {
  const seen = lines(log).filter((line) => /^(enter|exit) /.test(line));
  for (let i = 0; i < seen.length; i += 2) {
    const [what, who] = seen[i].split(" ");
    assert.equal(what, "enter", `line ${i} of ${JSON.stringify(seen)}`);
    assert.equal(seen[i + 1], `exit ${who}`, `${who} held the lock alone: ${JSON.stringify(seen)}`);
  }
  assert.deepEqual(seen.filter((l) => l.startsWith("enter")).map((l) => l.split(" ")[1]).sort(), [...ids].sort(), "every process held the lock once");
}

function scratch(t) {
  const root = mkdtempSync(join(tmpdir(), "cc-fs-lock-"));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

test("fs lock: processes that find the same stale lock take it over one at a time", async (t) => {
  const root = scratch(t);
  for (let round = 0; round < 4; round++) {
    const crashed = await run({ root, role: "crash", name: "shared" });
    assert.equal(crashed.signal, "SIGKILL", crashed.stderr);
    // The three wait at their first change to the lock until all three read the stale one, then
    // go 30 ms apart: on main, each unlinked the lock the one before had just made, and held it too.
    const barrier = { dir: join(root, `barrier-${round}`), count: 3 };
    mkdirSync(barrier.dir);
    const log = join(root, `log-${round}`);
    const ids = ["a", "b", "c"];
    const results = await Promise.all(ids.map((id, i) => run({ root, role: "hold", name: "shared", id, log, barrier, afterBarrierMs: 30 * i, holdMs: 100 })));
    for (const r of results) assert.equal(r.code, 0, r.stderr);
    assertOneAtATime(log, ids);
  }
});

test("fs lock: a holder that releases late does not release the lock another took over", async (t) => {
  const root = scratch(t);
  const log = join(root, "log");
  const staleLockMs = 1_000;
  // A holds the lock, then takes 1.5 s to release it: to B its lock is stale after 1 s, so B
  // takes it over and holds it for 0.8 s. On main A's release then deleted B's lock by path and
  // C, waiting, took it while B still held it.
  const a = run({ root, role: "hold", name: "shared", id: "a", log, staleLockMs, holdMs: 0, releaseDelayMs: 1_500 });
  await until(log, "exit a", a);
  const b = run({ root, role: "hold", name: "shared", id: "b", log, staleLockMs, holdMs: 800 });
  await until(log, "enter b", b);
  const c = run({ root, role: "hold", name: "shared", id: "c", log, staleLockMs, holdMs: 0 });
  const results = await Promise.all([a, b, c]);
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  assertOneAtATime(log, ["a", "b", "c"]);
});

test("fs lock: a process that read the lock long ago and made its next turn late does not hold it", async (t) => {
  const root = scratch(t);
  const log = join(root, "log");
  const go = join(root, "go");
  // P finds the lock free and stops right before it takes it; Q takes it and releases it, R takes
  // it and holds it (the turns P read are gone by then, so the one P makes is free to make).
  const p = run({ root, role: "hold", name: "shared", id: "p", log, firstChangeAfter: go, holdMs: 0 });
  await until(log, "paused p", p);
  const q = await run({ root, role: "hold", name: "shared", id: "q", log, holdMs: 0 });
  assert.equal(q.code, 0, q.stderr);
  const r = run({ root, role: "hold", name: "shared", id: "r", log, holdMs: 500 });
  await until(log, "enter r", r);
  writeFileSync(go, "");
  const results = await Promise.all([p, r]);
  for (const result of results) assert.equal(result.code, 0, result.stderr);
  assertOneAtATime(log, ["p", "q", "r"]);
});

test("fs lock: three processes append to one session past a stale lock: every message once, in order", async (t) => {
  const root = scratch(t);
  const crashed = await run({ root, role: "crash-in-session", session: "shared" });
  assert.equal(crashed.signal, "SIGKILL", crashed.stderr);
  const barrier = { dir: join(root, "barrier"), count: 3 };
  mkdirSync(barrier.dir);
  const ids = ["a", "b", "c"];
  const messages = 8;
  // As above, on a slow disk (each write 20 ms): on main the writers, all holding the session's
  // lock at once, each wrote their next message in the same place, and all but one were lost.
  const results = await Promise.all(ids.map((id, i) => run({ root, role: "write", session: "shared", id, messages, barrier, afterBarrierMs: 10 * i, writeDelayMs: 20 })));
  for (const r of results) assert.equal(r.code, 0, r.stderr);
  const store = await SessionStore.open(await FileSystemAdapter.open({ root }), { autosave: false, broadcast: false });
  const texts = (await store.open("shared")).history.messages().map((m) => m.content);
  assert.equal(texts[0], "start");
  assert.equal(texts.length, 1 + ids.length * messages, JSON.stringify(texts));
  for (const id of ids) {
    assert.deepEqual(
      texts.filter((text) => text.startsWith(`${id} `)),
      Array.from({ length: messages }, (_, k) => `${id} ${k}`),
      `${id}'s messages, each once and in order`,
    );
  }
  await store.close();
});

test("fs lock: a writer that stalled until another took its lock over writes nothing and says so", async (t) => {
  const root = scratch(t);
  const log = join(root, "log");
  const done = join(root, "b-done");
  // A takes the log's lock, then stalls (no timers: its lock shows no sign of life) until B, for
  // which A's lock is stale after 300 ms, has taken it over and saved.
  const a = run({ root, role: "save", id: "a", key: ["r", "x", "1"], value: "from a", log, blockUntil: done });
  await until(log, "stalled a", a);
  const b = await run({ root, role: "save", id: "b", key: ["r", "x", "2"], value: "from b", log, staleLockMs: 300, done });
  assert.equal(b.code, 0, b.stderr);
  const stalled = await a;
  assert.equal(stalled.code, 0, stalled.stderr);
  assert.match(stalled.stderr, /CONTEXT_COMPACTOR_LOCK.*taken over by another process/, "its release said the lock had been taken over");
  const failed = lines(log).find((line) => line.startsWith("failed a"));
  assert.match(failed ?? lines(log).join("\n"), /^failed a StorageError failed: the lock of .* was taken over by another process .*: nothing written$/);
  const adapter = await FileSystemAdapter.open({ root });
  assert.equal(await adapter.load(["r", "x", "2"]), "from b");
  assert.equal(await adapter.load(["r", "x", "1"]), undefined, "A wrote nothing once its lock was gone");
});

test("fs lock: lockTimeoutMs and staleLockMs must be positive numbers", async (t) => {
  const root = scratch(t);
  for (const option of ["lockTimeoutMs", "staleLockMs"]) {
    for (const bad of [0, -1, Number.NaN, Infinity, "10"]) {
      await assert.rejects(FileSystemAdapter.open({ root, [option]: bad }), (e) => e instanceof InvalidArgumentError && e.message.includes(option), `${option}: ${bad}`);
    }
  }
});

test("fs lock: released where the file system makes no hard links", async (t) => {
  const root = scratch(t);
  // A directory where the file that free turns link to goes: link() fails (EPERM), as on FAT.
  mkdirSync(join(root, "locks", "x.lock.d", "free"), { recursive: true });
  const adapter = await FileSystemAdapter.open({ root, lockTimeoutMs: 1_000 });
  for (let i = 0; i < 3; i++) await adapter.lock("x", async () => {});
  const turns = readdirSync(join(root, "locks", "x.lock.d")).filter((name) => name !== "free").map(Number).sort((a, b) => a - b);
  assert.deepEqual(turns, [5, 6], "the last holder's turn and the free one after it: the ones before are gone");
  assert.ok(statSync(join(root, "locks", "x.lock.d", "6")).isDirectory(), "the free turn is a directory");
});

test("fs lock: 100 writers killed at random points: no false 'locked' error, no acknowledged message lost", async (t) => {
  const root = scratch(t);
  const log = join(root, "log");
  const setup = await SessionStore.open(await FileSystemAdapter.open({ root }), { autosave: false, broadcast: false });
  const first = await setup.create({ id: "shared" });
  first.history.append({ role: "user", content: "start" });
  await setup.close();
  const messages = 3;
  // How many kill points (two per file system call; or per call on the lock's files) a writer that
  // is not killed passes.
  const count = async (id, killOnLock) => {
    const whole = await run({ root, role: "killed-writer", session: "shared", id, messages, killAt: -1, killOnLock, log });
    assert.equal(whole.code, 0, whole.stderr);
    return Number(lines(log).find((line) => line.startsWith(`points ${id} `)).split(" ")[2]);
  };
  const points = { any: await count("whole-any", false), lock: await count("whole-lock", true) };
  assert.ok(points.lock > 20, `${JSON.stringify(points)} kill points`);
  // Writers four at a time (they contend for the lock), each killed at a random point of its run
  // (half of them at a point of the lock's files): in the lock's turns, in the log's writes, or
  // not at all.
  const writers = 100;
  const killed = [];
  for (let start = 0; start < writers; start += 4) {
    const batch = Array.from({ length: Math.min(4, writers - start) }, (_, i) => start + i);
    const results = await Promise.all(
      batch.map((w) => {
        const killOnLock = w % 2 === 0;
        const killAt = Math.floor(Math.random() * (killOnLock ? points.lock : points.any) * 1.05);
        return run({ root, role: "killed-writer", session: "shared", id: `w${w}`, messages, killAt, killOnLock, log }).then((result) => ({ w, killAt, result }));
      }),
    );
    for (const { w, killAt, result } of results) {
      if (result.signal === "SIGKILL") killed.push(w);
      else assert.equal(result.code, 0, `w${w} (killAt ${killAt}): ${result.stderr}`);
    }
    // A writer that is not killed, after each batch: what the killed ones left must not stop it
    // (a writer that waited for a lock nobody held would be killed before it said so).
    const survivor = await run({ root, role: "killed-writer", session: "shared", id: `s${start}`, messages, killAt: -1, log });
    assert.equal(survivor.code, 0, survivor.stderr);
  }
  const failures = lines(log).filter((line) => line.startsWith("failed "));
  assert.deepEqual(failures, [], "no writer was refused (a lock whose owner is gone is taken over at once)");
  assert.ok(killed.length >= 80, `${killed.length} of ${writers} writers were killed`);
  const survivors = lines(log).filter((line) => /^acked s[0-9]+ /.test(line));
  assert.equal(survivors.length, messages * Math.ceil(writers / 4), "every writer that was not killed wrote all its messages");
  const store = await SessionStore.open(await FileSystemAdapter.open({ root }), { autosave: false, broadcast: false });
  const texts = (await store.open("shared")).history.messages().map((m) => m.content);
  const acked = lines(log).filter((line) => line.startsWith("acked ")).map((line) => line.slice("acked ".length));
  const missing = acked.filter((text) => !texts.includes(text));
  assert.deepEqual(missing, [], "every acknowledged message is stored");
  assert.equal(new Set(texts).size, texts.length, "each message once");
  console.log(`# ${killed.length} of ${writers} writers killed; ${acked.length} acknowledged messages, ${texts.length} stored`);
  await store.close();
});
