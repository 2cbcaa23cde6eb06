// store.list() over N sessions (default 50; session i holds 2 + i % 12 messages, each appended and
// saved alone, so 2 to 13 of them are a tail after its meta record, as a chat page leaves them),
// beside the listing it replaces: each session, then each of its tail keys, read one after
// another (the same store.io, Session.tailKeys and Session.info; the old list() loop). Prints the
// median of ROUNDS runs of each and their ratio, on:
//   - the Node file system: a fresh adapter each run ("cold": a new process's, no log indexed
//     yet; its read of each session's log file is in the time), then the same adapter again;
//   - IndexedDB and localStorage in headless Chromium, each run in a page just reloaded (the
//     first listing after a reload), then again in the same page.
// Run: node bench/list.mjs (after scripts/build.sh). N=…, ROUNDS=…, KINDS=fs,indexeddb,localStorage.
import { fileURLToPath } from "node:url";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { SessionStore, Session } from "context-compactor";
import { FileSystemAdapter } from "context-compactor/storage/fs";
import { serve, launch } from "../tests/browser/harness.mjs";

const N = Number(process.env.N ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 7);
const KINDS = (process.env.KINDS ?? "fs,indexeddb,localStorage").split(",");

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/*
 * The two functions below also run in the page (passed as text): they use only their arguments.
 */

/** Makes `n` sessions in `store`, session i with 2 + i % 12 messages, each saved alone. */
async function fill(store, n) {
  for (let i = 0; i < n; i++) {
    const s = await store.create({ id: `s${i}`, title: `chat ${i}` });
    for (let j = 0; j < 2 + (i % 12); j++) {
      s.history.append({ role: j % 2 ? "assistant" : "user", content: `message ${j} of chat ${i}: ${"lorem ipsum ".repeat(20)}` });
      await s.flush();
    }
  }
}

/** The old list(): each session, then each of its tail keys, one after another. */
async function listOneByOne(store, Session) {
  const sessions = [];
  for (const entry of await store.io.loadRange(["s"])) {
    if (entry.key.length !== 2) continue;
    const tail = [];
    for (const key of Session.tailKeys(entry)) {
      const value = await store.io.load(key);
      if (value === undefined) break;
      tail.push({ key, value });
    }
    sessions.push(Session.info(entry, tail));
  }
  return sessions.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1));
}

/** Times `fn` twice: the first call and the one after it. */
async function twice(fn) {
  let t = performance.now();
  const result = await fn();
  const first = performance.now() - t;
  t = performance.now();
  await fn();
  return { first, again: performance.now() - t, result };
}

const report = (where, runs) => {
  for (const when of ["first", "again"]) {
    const before = median(runs.oneByOne.map((r) => r[when]));
    const after = median(runs.list.map((r) => r[when]));
    const label = when === "first" ? runs.firstLabel : "again, same store";
    const line = `${where.padEnd(30)} ${label.padEnd(26)} one by one ${before.toFixed(1).padStart(6)} ms   list() ${after.toFixed(1).padStart(6)} ms   ${(before / after).toFixed(2)} x`;
    console.log(line);
  }
};

console.log(`store.list() of ${N} sessions (2-13 tail messages each), median of ${ROUNDS} runs`);

if (KINDS.includes("fs")) {
  const root = mkdtempSync(join(tmpdir(), "cc-list-bench-"));
  try {
    const store = await SessionStore.open(await FileSystemAdapter.open({ root, sync: false }), { broadcast: false });
    await fill(store, N);
    await store.close();
    const runs = { oneByOne: [], list: [], firstLabel: "fresh adapter (cold)" };
    for (let r = 0; r < ROUNDS; r++) {
      for (const way of r % 2 ? ["list", "oneByOne"] : ["oneByOne", "list"]) {
        const fresh = await SessionStore.open(await FileSystemAdapter.open({ root }), { broadcast: false });
        const timed = await twice(() => (way === "list" ? fresh.list() : listOneByOne(fresh, Session)));
        if (timed.result.length !== N) throw new Error(`${way} found ${timed.result.length} sessions, not ${N}`);
        runs[way].push(timed);
      }
    }
    report("Node file system", runs);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const browserKinds = KINDS.filter((k) => k !== "fs");
if (browserKinds.length > 0) {
  const ROOT = fileURLToPath(new URL("../", import.meta.url));
  const server = await serve({ "/": ROOT });
  try {
    for (const kind of browserKinds) {
      const profile = mkdtempSync(join(tmpdir(), "cc-list-chromium-"));
      const { page, log, close } = await launch(profile);
      try {
        const inPage = async (body, arg) => {
          await page.goto(`${server.url}/tests/browser/storage.html`);
          await page.waitForFunction(() => window.ready === true);
          return page.evaluate(
            async ({ body, fill, listOneByOne, twice, kind, arg }) => {
              const { SessionStore, Session, LocalStorageAdapter } = await import("context-compactor");
              const adapter =
                kind === "indexeddb"
                  ? await (await import("context-compactor/storage/indexeddb")).IndexedDBAdapter.open({ database: "cc-list-bench" })
                  : new LocalStorageAdapter({ prefix: "cc-list-bench" });
              const store = await SessionStore.open(adapter, { broadcast: false });
              const helpers = { fill: eval(`(${fill})`), listOneByOne: eval(`(${listOneByOne})`), twice: eval(`(${twice})`) };
              try {
                return await eval(`(${body})`)(store, Session, helpers, arg);
              } finally {
                await store.close();
              }
            },
            { body: body.toString(), fill: fill.toString(), listOneByOne: listOneByOne.toString(), twice: twice.toString(), kind, arg },
          );
        };
        await inPage(async (store, _Session, { fill }, n) => fill(store, n), N);
        const runs = { oneByOne: [], list: [], firstLabel: "page just reloaded" };
        for (let r = 0; r < ROUNDS; r++) {
          for (const way of r % 2 ? ["list", "oneByOne"] : ["oneByOne", "list"]) {
            const timed = await inPage(
              async (store, Session, { listOneByOne, twice }, way) => {
                const { first, again, result } = await twice(() => (way === "list" ? store.list() : listOneByOne(store, Session)));
                return { first, again, result: result.length };
              },
              way,
            );
            if (timed.result !== N) throw new Error(`${kind} ${way} found ${timed.result} sessions, not ${N}`);
            runs[way].push(timed);
          }
        }
        report(`Chromium ${kind}`, runs);
      } catch (error) {
        console.error(log.join("\n"));
        throw error;
      } finally {
        await close();
        rmSync(profile, { recursive: true, force: true });
      }
    }
  } finally {
    await server.close();
  }
}
