// One process of tests/js/sql-store.test.mjs: argv[2] is its task as JSON. It opens a session
// store on PostgreSQL (`kind: "postgres"`) or SQLite (`kind: "sqlite"`) and plays a role; it logs
// what it did, one line at a time, to `task.log` (appended with a synchronous write, so a line is
// there before the process can be killed after it).
import { appendFileSync, existsSync } from "node:fs";
import pg from "pg";
import { SessionStore, StorageError, LeaseHeldError } from "context-compactor";
import { PostgresAdapter } from "context-compactor/storage/postgres";
import { chain } from "./sql-chain.mjs";
import { SqliteAdapter } from "context-compactor/storage/sqlite";

const task = JSON.parse(process.argv[2]);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line) => appendFileSync(task.log, `${line}\n`);

let pool;
let adapter;
if (task.kind === "postgres") {
  pool = new pg.Pool({ connectionString: task.connectionString, max: 4, connectionTimeoutMillis: 5_000 });
  pool.on("error", () => {}); // an idle client cut by a server restart
  adapter = await PostgresAdapter.open({ pool, schema: task.schema, lockTimeoutMs: task.lockTimeoutMs ?? 20_000 });
} else {
  adapter = await SqliteAdapter.open({ path: task.path, lockTimeoutMs: task.lockTimeoutMs ?? 20_000 });
}
if (task.hangAfterWrite) {
  // Stops for good inside the session's lock, right after its write went out: the parent kills
  // the process there (the write's transaction never commits).
  const saveBatch = adapter.saveBatch.bind(adapter);
  let writes = 0;
  adapter.saveBatch = async (batch) => {
    await saveBatch(batch);
    if (batch.some((w) => w.key[0] === "r" || w.key[0] === "s") && ++writes === task.hangAfterWrite) {
      log("written");
      for (;;) await sleep(1_000);
    }
  };
}
const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });

async function openSession(id) {
  for (;;) {
    try {
      return await store.open(id);
    } catch (error) {
      if (!(error instanceof StorageError)) throw error;
      await sleep(50);
    }
  }
}

if (task.role === "append") {
  const chat = await openSession(task.session);
  for (let k = task.from ?? 0; k < task.chains; k++) {
    const tag = `${task.id}-${k}`;
    // Retried with the same key until stored: a StorageError (the server restarting) leaves the
    // outcome to the next call, which makes the append once.
    for (let attempt = 0; ; attempt++) {
      try {
        const ids = await chat.append(chain(tag), { key: tag });
        log(`acked ${tag} ${ids.join(",")}`);
        break;
      } catch (error) {
        if (!(error instanceof StorageError)) throw error;
        log(`retry ${tag} ${error.reason}`);
        if (attempt > 400) throw error;
        await sleep(25);
      }
    }
  }
} else if (task.role === "serve") {
  // Serves a turn: the user's message appended, then the build of the model call, logged as JSON.
  const chat = await openSession(task.session);
  await chat.append(chain(task.id), { key: task.id });
  const built = chat.history.build(task.options);
  log(`built ${JSON.stringify({ messages: built.messages, event: built.receipt.cache?.event, notes: built.receipt.notes })}`);
} else if (task.role === "compact") {
  const chat = await openSession(task.session);
  try {
    const result = await chat.compact({
      ...task.options,
      leaseMs: task.leaseMs,
      summarize: async () => {
        log("summarising");
        while (task.releaseFile && !existsSync(task.releaseFile)) await sleep(10);
        return task.summary ?? "The user asked questions; the tool looked each one up.";
      },
    });
    log(`compacted ${chat.history.summaryState().current ? "with-summary" : "without-summary"} ${result.messages.length}`);
  } catch (error) {
    log(`refused ${error instanceof LeaseHeldError ? "LeaseHeldError" : error.name} ${error.message}`);
  }
}
await store.close();
await adapter.close();
await pool?.end();
