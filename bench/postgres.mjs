// Load on sessions in PostgreSQL: worker processes append messages to shared sessions, building
// each session's context between appends (catching up with the other processes first, as a
// server does per turn), while one worker is killed (SIGKILL) and restarted midway and the
// database server is restarted once (an immediate shutdown: a crash, recovered at start). Prints
// appends per second, build latency (median, p99), lock waits, and checks at the end that every
// session holds exactly the acknowledged messages, each once, in each worker's order. Writes
// its figures into docs/benchmarks.md between its markers.
//
//   npm run build && node bench/postgres.mjs
//   BENCH_PG_WORKERS=4 BENCH_PG_APPENDS=2000 BENCH_PG_SESSIONS=50 node bench/postgres.mjs   (the defaults)
//
// PostgreSQL is Debian's (scripts/ensure-tools.sh --postgres), started on 127.0.0.1 with a
// throwaway data directory and its durable defaults (fsync on), and stopped after.
import { spawn } from "node:child_process";
import { appendFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { cpus, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";

const SELF = fileURLToPath(import.meta.url);
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const env = (name, fallback) => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a positive whole number`);
  return value;
};
const sessionId = (s) => `bench-${String(s).padStart(3, "0")}`;

if (process.argv[2] === "worker") await worker(JSON.parse(process.argv[3]));
else await main();

/** One worker: appends `appends` messages (from `from` on) to the sessions in turn, building after each. */
async function worker(task) {
  const { SessionStore, StorageError } = await import("context-compactor");
  const { PostgresAdapter } = await import("context-compactor/storage/postgres");
  const log = (line) => appendFileSync(task.log, `${line}\n`);
  const pool = new pg.Pool({ connectionString: task.connectionString, max: 4, connectionTimeoutMillis: 5_000 });
  pool.on("error", () => {});
  let adapter;
  for (;;) {
    try {
      adapter = await PostgresAdapter.open({ pool, schema: "bench", lockTimeoutMs: 30_000 });
      break;
    } catch (error) {
      if (!(error instanceof StorageError)) throw error;
      await sleep(50);
    }
  }
  // Lock waits: the time from asking for a session's lock to holding it.
  const lock = adapter.lock.bind(adapter);
  const waits = [];
  adapter.lock = (name, fn) => {
    const asked = performance.now();
    return lock(name, () => {
      waits.push(performance.now() - asked);
      return fn();
    });
  };
  const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
  const open = new Map();
  const retrying = async (what) => {
    for (let attempt = 0; ; attempt++) {
      try {
        return await what();
      } catch (error) {
        if (!(error instanceof StorageError) || attempt > 2_000) throw error;
        await sleep(20);
      }
    }
  };
  const builds = [];
  let retries = 0;
  for (let i = task.from; i < task.appends; i++) {
    const id = sessionId((i * 7 + task.worker * 13) % task.sessions);
    let chat = open.get(id);
    if (!chat) open.set(id, (chat = await retrying(() => store.open(id))));
    const key = `w${task.worker}-${i}`;
    for (let attempt = 0; ; attempt++) {
      try {
        await chat.append({ role: "user", content: `worker ${task.worker} message ${i}: ${"lorem ipsum ".repeat(8)}` }, { key });
        break;
      } catch (error) {
        if (!(error instanceof StorageError) || attempt > 2_000) throw error;
        retries++;
        await sleep(20);
      }
    }
    log(`acked ${i}`);
    // A turn: catch up with what the other processes committed, then build.
    const t0 = performance.now();
    await retrying(() => chat.sync());
    chat.history.build({ format: "openai", budget: { contextWindow: 8_000 } });
    builds.push(performance.now() - t0);
  }
  writeFileSync(task.stats, JSON.stringify({ builds, waits, retries }));
  await store.close();
  await adapter.close();
  await pool.end();
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const { startPostgres } = await import("../tests/support/postgres.mjs");
  const { SessionStore } = await import("context-compactor");
  const { PostgresAdapter } = await import("context-compactor/storage/postgres");
  const workers = env("BENCH_PG_WORKERS", 4);
  const appends = env("BENCH_PG_APPENDS", 2000);
  const sessions = env("BENCH_PG_SESSIONS", 50);
  const work = mkdtempSync(join(tmpdir(), "cc-bench-pg-"));
  const server = await startPostgres({ max_connections: "100", shared_buffers: "128MB" });
  let pool;
  try {
    pool = new pg.Pool({ connectionString: server.connectionString, max: 4 });
    pool.on("error", () => {});
    const version = (await pool.query("SELECT current_setting('server_version') AS v")).rows[0].v;
    const adapter = await PostgresAdapter.open({ pool, schema: "bench" });
    const store = await SessionStore.open(adapter, { autosave: false, broadcast: false });
    for (let s = 0; s < sessions; s++) await (await store.create({ id: sessionId(s), format: "openai" })).close();
    await store.close();
    console.log(`postgres bench: ${workers} processes × ${appends} appends over ${sessions} sessions, PostgreSQL on 127.0.0.1:${server.port} (fsync on), ${cpus().length} cores`);

    const logOf = (w) => join(work, `worker-${w}.log`);
    const acked = (w) => (existsSync(logOf(w)) ? readFileSync(logOf(w), "utf8").split("\n").filter(Boolean).map((l) => Number(l.split(" ")[1])) : []);
    const start = (w, from) => {
      const task = { worker: w, from, appends, sessions, connectionString: server.connectionString, log: logOf(w), stats: join(work, `stats-${w}-${from}.json`) };
      const child = spawn(process.execPath, [SELF, "worker", JSON.stringify(task)], { stdio: ["ignore", "inherit", "inherit"] });
      const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
      return { child, exited, task };
    };
    const t0 = performance.now();
    const running = Array.from({ length: workers }, (_, w) => start(w, 0));
    const total = workers * appends;
    const done = () => running.reduce((n, _, w) => n + new Set(acked(w)).size, 0);

    // Midway, one worker is killed and restarted: it sends its last append again (same key).
    while (acked(0).length < appends * 0.4) await sleep(20);
    running[0].child.kill("SIGKILL");
    await running[0].exited;
    const from = Math.max(-1, ...acked(0)) + 1;
    console.log(`killed worker 0 after ${from} acknowledged appends; restarted from ${from}`);
    running.push(start(0, from));
    running[0] = running.pop();

    // The database server, once: an immediate shutdown, then a start.
    while (done() < total * 0.6) await sleep(20);
    const down = performance.now();
    server.restart("immediate");
    console.log(`restarted PostgreSQL (immediate shutdown) at ${done()} of ${total} appends, down ${(performance.now() - down).toFixed(0)} ms`);

    const exits = await Promise.all(running.map((r) => r.exited));
    const seconds = (performance.now() - t0) / 1000;
    for (const [w, exit] of exits.entries()) if (exit.code !== 0) throw new Error(`worker ${w} failed (${exit.code ?? exit.signal})`);

    // (The killed worker wrote none.)
    const stats = readdirSync(work).filter((name) => name.startsWith("stats-"));
    const merged = { builds: [], waits: [], retries: 0 };
    for (const name of stats) {
      const s = JSON.parse(readFileSync(join(work, name), "utf8"));
      for (const b of s.builds) merged.builds.push(b);
      for (const x of s.waits) merged.waits.push(x);
      merged.retries += s.retries;
    }

    // Exactly once: each session holds the acknowledged messages, each once, in each worker's order.
    const checkAdapter = await PostgresAdapter.open({ pool, schema: "bench" });
    const checkStore = await SessionStore.open(checkAdapter, { autosave: false, broadcast: false });
    const seen = new Map();
    let stored = 0;
    let problems = 0;
    for (let s = 0; s < sessions; s++) {
      const chat = await checkStore.open(sessionId(s));
      const last = new Map();
      for (const message of chat.history.messages("openai")) {
        const [, w, i] = /^worker (\d+) message (\d+):/.exec(message.content) ?? [];
        const key = `${w}-${i}`;
        if (seen.has(key)) problems++;
        seen.set(key, sessionId(s));
        if ((last.get(w) ?? -1) >= Number(i)) problems++;
        last.set(w, Number(i));
        stored++;
      }
      await chat.close();
    }
    await checkStore.close();
    for (let w = 0; w < workers; w++) {
      for (const i of new Set(acked(w))) if (!seen.has(`${w}-${i}`)) problems++;
    }
    const acknowledged = running.reduce((n, _, w) => n + new Set(acked(w)).size, 0);
    const exact = problems === 0 && stored === acknowledged && acknowledged === total;

    const lines = [
      `${total} appends in ${seconds.toFixed(1)} s: ${(total / seconds).toFixed(0)} appends/s (${workers} processes, each append a transaction under the session's lock)`,
      `build (catch-up read + build), ${merged.builds.length} builds: median ${percentile(merged.builds, 50).toFixed(1)} ms, p99 ${percentile(merged.builds, 99).toFixed(1)} ms`,
      `lock waits (asked to held), ${merged.waits.length} locks: median ${percentile(merged.waits, 50).toFixed(1)} ms, p99 ${percentile(merged.waits, 99).toFixed(1)} ms, ${merged.waits.filter((w) => w > 10).length} over 10 ms; ${merged.retries} appends retried after a StorageError`,
      `exactly once: ${exact ? "yes" : "NO"}: ${stored} messages stored, ${acknowledged} acknowledged, ${problems} duplicates, missing or out of order`,
    ];
    for (const line of lines) console.log(line);

    const doc = fileURLToPath(new URL("../docs/benchmarks.md", import.meta.url));
    const [open, close] = ["<!-- bench/postgres.mjs: start -->", "<!-- bench/postgres.mjs: end -->"];
    const command = `BENCH_PG_WORKERS=${workers} BENCH_PG_APPENDS=${appends} BENCH_PG_SESSIONS=${sessions} node bench/postgres.mjs`;
    const block = `${open}\n\`${command}\` (${new Date().toISOString().slice(0, 10)}, ${cpus().length} cores, PostgreSQL ${version.split(" ")[0]} on 127.0.0.1, fsync on; one worker killed and restarted, the server restarted once):\n\n${lines.map((l) => `- ${l}`).join("\n")}\n${close}`;
    let text = existsSync(doc) ? readFileSync(doc, "utf8") : "# Benchmarks\n";
    text = text.includes(open) ? text.replace(new RegExp(`${open}[\\s\\S]*?${close}`), block) : `${text.trimEnd()}\n\n## Sessions in PostgreSQL\n\n${block}\n`;
    writeFileSync(doc, text);
    if (!exact) process.exitCode = 1;
  } finally {
    await pool?.end();
    server.dispose();
    rmSync(work, { recursive: true, force: true });
  }
}
