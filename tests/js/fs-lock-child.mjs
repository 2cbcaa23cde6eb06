// One process of tests/js/fs-lock.test.mjs: argv[2] is its task as JSON. Before it loads the
// adapter it wraps node:fs/promises, so that the test can force the interleavings of processes
// that lock races need, whatever the lock's files are (any path holding ".lock"): the first call
// that changes them (unlink, rename, rm, rmdir, mkdir, link, open to write) after one that read them
// waits at a barrier until every process of the round is there, then `afterBarrierMs`; each call
// that changes them after the process left its critical section waits `releaseDelayMs`; opening
// any other file to write waits `writeDelayMs` (a slow disk: writers hold their locks longer), or
// blocks the whole process until the file `blockUntil` exists (a stalled process: no timers run).
// With `firstChangeAfter`, the first call that changes the lock's files waits for that file.
import { appendFileSync, existsSync, readdirSync, writeFileSync } from "node:fs";
import { createRequire, syncBuiltinESMExports } from "node:module";
import { join } from "node:path";

const task = JSON.parse(process.argv[2]);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line) => task.log && appendFileSync(task.log, `${line}\n`);

const fsp = createRequire(import.meta.url)("node:fs/promises");
let read = false;
let waited = false;
let released = false;
let changed = false;
async function beforeChange() {
  if (!changed && task.firstChangeAfter) {
    log(`paused ${task.id}`);
    while (!existsSync(task.firstChangeAfter)) await sleep(5);
  }
  changed = true;
  if (read && !waited && task.barrier) {
    waited = true;
    writeFileSync(join(task.barrier.dir, String(process.pid)), "");
    while (readdirSync(task.barrier.dir).length < task.barrier.count) await sleep(5);
    await sleep(task.afterBarrierMs ?? 0);
  }
  if (released && task.releaseDelayMs) await sleep(task.releaseDelayMs);
}
// With `killAt`, the process SIGKILLs itself at that point of its file system calls (two points a
// call: before it, and once it has returned), wherever that falls: a crash at a random point. With
// `killOnLock`, only calls on the lock's files count.
let points = 0;
const killPoint = (path) => {
  if (task.killOnLock && !String(path).includes(".lock")) return;
  if (points++ === task.killAt) process.kill(process.pid, "SIGKILL");
};
if (task.killAt !== undefined) {
  for (const name of ["stat", "readdir", "utimes", "writeFile", "appendFile", "copyFile"]) {
    const original = fsp[name];
    fsp[name] = async (...args) => {
      killPoint(args[0]);
      const result = await original(...args);
      killPoint(args[0]);
      return result;
    };
  }
}
for (const name of ["unlink", "rename", "rm", "rmdir", "mkdir", "link", "open", "readFile"]) {
  const original = fsp[name];
  fsp[name] = async (...args) => {
    if (task.killAt !== undefined) {
      killPoint(args[0]);
      const result = await original(...args);
      killPoint(args[0]);
      return result;
    }
    if (String(args[0]).includes(".lock")) {
      const reads = name === "readFile" || (name === "open" && !/[wax+]/.test(String(args[1] ?? "r")));
      if (reads) read = true;
      else await beforeChange();
    } else if (name === "open" && /[wa+]/.test(String(args[1] ?? "r"))) {
      if (task.writeDelayMs) await sleep(task.writeDelayMs);
      if (task.blockUntil) {
        log(`stalled ${task.id}`);
        while (!existsSync(task.blockUntil));
      }
    }
    return original(...args);
  };
}
syncBuiltinESMExports();

const { FileSystemAdapter } = await import("context-compactor/storage/fs");
const adapter = await FileSystemAdapter.open({ root: task.root, ...(task.staleLockMs ? { staleLockMs: task.staleLockMs } : {}) });

if (task.role === "crash") {
  // Dies holding the lock: what it leaves is a stale lock.
  await adapter.lock(task.name, async () => process.kill(process.pid, "SIGKILL"));
} else if (task.role === "hold") {
  await adapter.lock(task.name, async () => {
    log(`enter ${task.id}`);
    await sleep(task.holdMs);
    log(`exit ${task.id}`);
    released = true;
  });
} else if (task.role === "save") {
  try {
    await adapter.save(task.key, task.value);
    log(`saved ${task.id}`);
  } catch (error) {
    log(`failed ${task.id} ${error.name} ${error.reason}: ${error.message}`);
  }
  if (task.done) writeFileSync(task.done, "");
} else {
  const { SessionStore } = await import("context-compactor");
  const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
  if (task.role === "crash-in-session") {
    const chat = await store.create({ id: task.session });
    chat.history.append({ role: "user", content: "start" });
    await chat.flush();
    // Dies holding the session's lock.
    await store.locked(task.session, async () => process.kill(process.pid, "SIGKILL"));
  }
  try {
    const chat = await store.open(task.session);
    for (let k = 0; k < task.messages; k++) {
      chat.history.append({ role: "user", content: `${task.id} ${k}` });
      await chat.flush();
      log(`acked ${task.id} ${k}`);
    }
    await store.close();
  } catch (error) {
    if (task.role !== "killed-writer") throw error;
    log(`failed ${task.id} ${error.name} ${error.reason}: ${error.message}`);
  }
  log(`points ${task.id} ${points}`);
}
