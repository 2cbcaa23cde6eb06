// A real PostgreSQL server for the tests and the benchmark: Debian's binaries (scripts/ensure-tools.sh
// installs the `postgresql` package), a throwaway data directory, 127.0.0.1 on a free port, stopped
// (and removed) after. PostgreSQL refuses to run as root: as root, the server runs as the
// unprivileged `postgres` user the package creates. Anything missing is an error that says what
// to do: the tests never pass without a server.
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";

/** The directory of PostgreSQL's server binaries (initdb, pg_ctl), the newest installed. */
export function postgresBinaries() {
  const candidates = [];
  if (process.env.PG_BINDIR) candidates.push(process.env.PG_BINDIR);
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian)) {
    for (const version of readdirSync(debian).sort((a, b) => Number(b) - Number(a))) candidates.push(join(debian, version, "bin"));
  }
  try {
    candidates.push(execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim());
  } catch {
    // no pg_config on the PATH
  }
  const found = candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")));
  if (!found) {
    throw new Error(
      "PostgreSQL's server binaries (initdb, pg_ctl) are not installed: run `bash scripts/ensure-tools.sh --postgres` " +
        "(Debian's postgresql package), or set PG_BINDIR. The PostgreSQL tests cannot pass without a real server.",
    );
  }
  return found;
}

/** A free TCP port on 127.0.0.1. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const asRoot = userInfo().uid === 0;

/** Runs a server binary as the user that owns the data directory. */
function runAs(bin, args, options = {}) {
  const [cmd, argv] = asRoot ? ["runuser", ["-u", "postgres", "--", bin, ...args]] : [bin, args];
  const result = spawnSync(cmd, argv, { encoding: "utf8", ...options });
  if (result.status !== 0) {
    throw new Error(`${bin} ${args.join(" ")} failed (${result.status ?? result.signal}): ${result.stderr || result.stdout || result.error}`);
  }
  return result.stdout;
}

/**
 * Starts a server; resolves to `{ host, port, user, database, connectionString, stop, restart, kill }`.
 * `settings` are extra `postgresql.conf` lines (`{ fsync: "off" }`).
 */
export async function startPostgres(settings = {}) {
  const bin = postgresBinaries();
  if (asRoot) {
    const check = spawnSync("id", ["-u", "postgres"], { encoding: "utf8" });
    if (check.status !== 0) throw new Error("running as root, PostgreSQL needs the unprivileged `postgres` user (Debian's postgresql package makes it)");
  }
  const base = mkdtempSync(join(tmpdir(), "cc-pg-"));
  chmodSync(base, 0o755);
  const data = join(base, "data");
  const sockets = join(base, "run");
  for (const dir of [data, sockets]) {
    execFileSync("mkdir", ["-p", dir]);
    if (asRoot) {
      const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }));
      const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }));
      chownSync(dir, uid, gid);
    }
    chmodSync(dir, 0o700);
  }
  const user = "cc";
  const password = "cc-test";
  const pwfile = join(base, "pw");
  writeFileSync(pwfile, password);
  if (asRoot) chownSync(pwfile, Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" })), 0);
  runAs(join(bin, "initdb"), ["-D", data, "-U", user, `--pwfile=${pwfile}`, "-A", "scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync"]);
  const port = await freePort();
  const conf = {
    listen_addresses: "'127.0.0.1'",
    port: String(port),
    unix_socket_directories: `'${sockets}'`,
    max_connections: "100",
    shared_buffers: "64MB",
    log_min_messages: "warning",
    ...settings,
  };
  writeFileSync(join(data, "postgresql.auto.conf"), Object.entries(conf).map(([k, v]) => `${k} = ${v}`).join("\n") + "\n");
  const log = join(sockets, "server.log");
  const start = () => runAs(join(bin, "pg_ctl"), ["-D", data, "-l", log, "-w", "-t", "60", "start"]);
  start();
  const server = {
    host: "127.0.0.1",
    port,
    user,
    password,
    database: "postgres",
    connectionString: `postgres://${user}:${password}@127.0.0.1:${port}/postgres`,
    data,
    log,
    /** Stops the server (`mode`: smart, fast or immediate: immediate is a crash, recovered at the next start). */
    stop(mode = "fast") {
      runAs(join(bin, "pg_ctl"), ["-D", data, "-m", mode, "-w", "stop"]);
    },
    start,
    /** Stops and starts it again (every connection is cut). */
    restart(mode = "fast") {
      server.stop(mode);
      start();
    },
    /** Stops the server and removes its data directory. */
    dispose() {
      try {
        if (existsSync(join(data, "postmaster.pid"))) server.stop("immediate");
      } finally {
        rmSync(base, { recursive: true, force: true });
      }
    },
  };
  return server;
}

/**
 * `startPostgres` for a node:test file: started before its tests (then `started(server)` runs),
 * disposed after them (after `stopping(server)`). One hook each: Node 20 does not wait for an
 * async top-level `before` hook before running the next one.
 */
export function usePostgres(hooks, { started = async () => {}, stopping = async () => {}, settings = { fsync: "off", full_page_writes: "off" } } = {}) {
  const handle = {};
  hooks.before(async () => {
    Object.assign(handle, await startPostgres(settings));
    await started(handle);
  });
  hooks.after(async () => {
    try {
      // (A pool whose client a failed test left checked out never ends: the server stops anyway.)
      await Promise.race([stopping(handle), new Promise((resolve) => setTimeout(resolve, 5_000).unref())]);
    } finally {
      handle.dispose?.();
    }
  });
  return handle;
}
