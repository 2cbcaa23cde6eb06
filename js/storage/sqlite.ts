/**
 * An adapter over SQLite (`context-compactor/storage/sqlite`), for servers on one machine: one
 * database file that every process of the machine opens, on `better-sqlite3` (an optional peer
 * dependency: `npm install better-sqlite3`). Node 20 has no `node:sqlite` (Node 22.5 brought it,
 * behind a flag until 22.13), and `better-sqlite3` is synchronous, which suits a database that
 * answers in microseconds.
 *
 * ```ts
 * import { SqliteAdapter } from "context-compactor/storage/sqlite";
 * const store = await SessionStore.open(await SqliteAdapter.open({ path: "sessions.db" }));
 * ```
 *
 * The schema and its migrations are the PostgreSQL adapter's (`sql.ts`), in tables named
 * `<table>_entries` and `<table>_schema_version` (default `context_compactor_…`). The file is in
 * WAL mode with `synchronous = FULL` (a write is on disk when its promise resolves). The session
 * store's lock is a write transaction (`BEGIN IMMEDIATE`): it holds the whole file against other
 * processes' writers (SQLite has one writer at a time anyway) and not their readers; what `fn`
 * writes is committed when it resolves and rolled back when it throws, also when the process dies.
 * Waiting for another process's writer is asynchronous (the event loop keeps running), up to
 * `lockTimeoutMs`, then a `StorageError` with `reason: "blocked"`.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { ContextCompactorError, InvalidArgumentError, StorageError, type StorageFailure } from "../errors.js";
import {
  checkKey,
  checkPrefix,
  checkValue,
  compareKeys,
  type StorageAdapter,
  type StorageEntry,
  type StorageKey,
  type StorageWrite,
} from "./adapter.js";
import { serially } from "./locks.js";
import {
  SCHEMA_VERSION,
  checkIdentifier,
  checkMs,
  collapseBatch,
  decodeKey,
  decodeValue,
  encodeKey,
  encodeValue,
  migrations,
  newerSchema,
  prefixBounds,
  versionTable,
  type Dialect,
} from "./sql.js";

/** What this adapter needs of a `better-sqlite3` statement. */
export interface SqliteStatement {
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  run(...params: unknown[]): unknown;
}

/** What this adapter needs of a `better-sqlite3` database (`better-sqlite3` itself is imported only by `open({ path })`). */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  pragma(sql: string, options?: { simple?: boolean }): unknown;
  close(): unknown;
  readonly name?: string;
  readonly inTransaction?: boolean;
}

export interface SqliteOptions {
  /** The database file (made if missing). */
  path?: string;
  /** Or a database already open (`new Database(file)` of `better-sqlite3`): yours, `close()` leaves it open. */
  database?: SqliteDatabase;
  /** The tables' prefix (default `context_compactor`: `context_compactor_entries`). */
  table?: string;
  /** How long to wait for another process's writer before a `StorageError` (default 10,000 ms). */
  lockTimeoutMs?: number;
}

/** A write transaction a `lock` call holds on one connection. */
interface Frame {
  connection: object;
  active: boolean;
}

const frames = new AsyncLocalStorage<Frame>();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const code = (error: unknown) => String((error as { code?: unknown })?.code ?? "");
const isBusy = (error: unknown) => /^SQLITE_(BUSY|LOCKED)/.test(code(error));

function failureOf(error: unknown): StorageFailure {
  const c = code(error);
  if (isBusy(error)) return "blocked";
  if (c.startsWith("SQLITE_FULL")) return "quota";
  if (c.startsWith("SQLITE_ABORT")) return "aborted";
  return "failed";
}

function sqliteError(action: string, error: unknown): ContextCompactorError {
  if (error instanceof ContextCompactorError) return error;
  const detail = (error as { message?: unknown })?.message ?? String(error);
  return new StorageError(`${action} failed: ${detail}${code(error) ? ` (${code(error)})` : ""}`, { reason: failureOf(error), cause: error });
}

let connections = 0;

export class SqliteAdapter implements StorageAdapter {
  readonly name: string;
  /** Writes made inside `lock(name, fn)` are committed together when it resolves. */
  readonly transactional = true;
  readonly #db: SqliteDatabase;
  readonly #owned: boolean;
  readonly #lockTimeoutMs: number;
  /** This connection, as `serially` names its queue: a connection runs one transaction at a time. */
  readonly #queue = `sqlite-connection-${++connections}`;
  readonly #identity = {};
  #statements!: Record<"load" | "save" | "remove" | "range" | "all" | "removeRange" | "removeAll", SqliteStatement>;
  #closed = false;

  private constructor(db: SqliteDatabase, owned: boolean, name: string, lockTimeoutMs: number) {
    this.#db = db;
    this.#owned = owned;
    this.name = name;
    this.#lockTimeoutMs = lockTimeoutMs;
  }

  /** Opens (or makes) the database, in WAL mode, and brings its schema up to date. */
  static async open(options: SqliteOptions): Promise<SqliteAdapter> {
    if (!options || typeof options !== "object" || (typeof options.path !== "string" && !options.database) || (options.path === "" && !options.database)) {
      throw new InvalidArgumentError("SqliteAdapter.open needs a `path` (the database file) or a `database` (better-sqlite3's)");
    }
    const table = options.table ?? "context_compactor";
    checkIdentifier(table, "the table prefix");
    checkMs(options.lockTimeoutMs, "lockTimeoutMs");
    let db = options.database;
    const owned = !db;
    if (!db) {
      let Database: new (path: string) => SqliteDatabase;
      try {
        Database = createRequire(import.meta.url)("better-sqlite3");
      } catch (error) {
        throw new StorageError(`the SQLite adapter needs the better-sqlite3 package: npm install better-sqlite3 (${(error as Error).message})`, { reason: "failed", cause: error });
      }
      try {
        db = new Database(options.path as string);
      } catch (error) {
        throw sqliteError(`opening ${options.path}`, error);
      }
    }
    const file = db.name ?? options.path ?? "";
    const adapter = new SqliteAdapter(db, owned, `sqlite:${file === ":memory:" || file === "" ? `memory-${connections + 1}` : resolve(file)}/${table}`, options.lockTimeoutMs ?? 10_000);
    try {
      await adapter.#setUp(table);
    } catch (error) {
      if (owned) db.close();
      throw error;
    }
    return adapter;
  }

  async #setUp(prefix: string): Promise<void> {
    const db = this.#db;
    const where = `the SQLite database ${this.name}`;
    const dialect: Dialect = { bytes: "BLOB", tableOptions: " WITHOUT ROWID", table: (name) => `"${prefix}_${name}"` };
    try {
      // Waits are this adapter's (asynchronous); SQLite itself answers SQLITE_BUSY at once.
      db.pragma("busy_timeout = 0");
      await this.#retry("setting WAL mode", () => db.pragma("journal_mode = WAL"));
      db.pragma("synchronous = FULL");
    } catch (error) {
      throw sqliteError(`setting up ${where}`, error);
    }
    const version = () => {
      const exists = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(`${prefix}_schema_version`);
      if (!exists) return 0;
      const row = db.prepare(`SELECT max(version) AS version FROM ${dialect.table("schema_version")}`).get() as { version: number | null };
      return Number(row?.version ?? 0);
    };
    let stored: number;
    try {
      stored = version();
    } catch (error) {
      throw sqliteError(`reading ${where}'s version`, error);
    }
    if (stored > SCHEMA_VERSION) throw newerSchema(where, stored);
    if (stored < SCHEMA_VERSION) {
      // One process migrates: the write transaction keeps the others out, and they read the version again after it.
      await this.#write("migrating", () => {
        db.exec(versionTable(dialect));
        const now = version();
        if (now > SCHEMA_VERSION) throw newerSchema(where, now);
        const steps = migrations(dialect);
        for (let v = now; v < SCHEMA_VERSION; v++) for (const statement of steps[v]) db.exec(statement);
        if (now < SCHEMA_VERSION) {
          db.exec(`DELETE FROM ${dialect.table("schema_version")}`);
          db.prepare(`INSERT INTO ${dialect.table("schema_version")} (version) VALUES (?)`).run(SCHEMA_VERSION);
        }
      });
    }
    const t = dialect.table("entries");
    this.#statements = {
      load: db.prepare(`SELECT value FROM ${t} WHERE key = ?`),
      save: db.prepare(`INSERT INTO ${t} (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`),
      remove: db.prepare(`DELETE FROM ${t} WHERE key = ?`),
      range: db.prepare(`SELECT key, value FROM ${t} WHERE key >= ? AND key < ? ORDER BY key`),
      all: db.prepare(`SELECT key, value FROM ${t} ORDER BY key`),
      removeRange: db.prepare(`DELETE FROM ${t} WHERE key >= ? AND key < ?`),
      removeAll: db.prepare(`DELETE FROM ${t}`),
    };
  }

  #check(): void {
    if (this.#closed) throw new StorageError(`the SQLite adapter ${this.name} is closed`, { reason: "closed" });
  }

  /** Runs `fn` again while another process holds the file's write lock, up to `lockTimeoutMs`. */
  async #retry<T>(action: string, fn: () => T): Promise<T> {
    const deadline = Date.now() + this.#lockTimeoutMs;
    for (let delay = 1; ; delay = Math.min(delay * 2, 20)) {
      try {
        return fn();
      } catch (error) {
        if (!isBusy(error)) throw sqliteError(action, error);
        if (Date.now() > deadline) {
          throw new StorageError(`${action} waited more than ${this.#lockTimeoutMs} ms for another process's write to the database`, { reason: "blocked", cause: error });
        }
        await sleep(delay);
      }
    }
  }

  #inFrame(): boolean {
    const frame = frames.getStore();
    return frame !== undefined && frame.active && frame.connection === this.#identity;
  }

  /** Runs `read` on this connection: at once inside its lock, else after the transaction under way. */
  async #read<T>(action: string, read: () => T): Promise<T> {
    this.#check();
    if (this.#inFrame()) return this.#retry(action, read);
    return serially(this.#queue, () => {
      this.#check();
      return this.#retry(action, read);
    });
  }

  /** Runs `write` in a write transaction: the lock's, or one of its own. */
  async #write(action: string, write: () => void): Promise<void> {
    this.#check();
    if (this.#inFrame()) {
      try {
        return write();
      } catch (error) {
        throw sqliteError(action, error);
      }
    }
    await serially(this.#queue, async () => {
      this.#check();
      await this.#retry(action, () => this.#db.exec("BEGIN IMMEDIATE"));
      try {
        write();
        this.#db.exec("COMMIT");
      } catch (error) {
        if (this.#db.inTransaction !== false) {
          try {
            this.#db.exec("ROLLBACK");
          } catch {
            // rolled back already
          }
        }
        throw sqliteError(action, error);
      }
    });
  }

  async load(key: StorageKey): Promise<string | undefined> {
    checkKey(key);
    const encoded = encodeKey(key);
    const row = await this.#read(`reading ${JSON.stringify(key)}`, () => this.#statements.load.get(encoded) as { value: Buffer } | undefined);
    return row === undefined ? undefined : decodeValue(row.value);
  }

  async save(key: StorageKey, value: string): Promise<void> {
    checkKey(key);
    checkValue(value);
    const [k, v] = [encodeKey(key), encodeValue(value)];
    await this.#write(`saving ${JSON.stringify(key)}`, () => this.#statements.save.run(k, v));
  }

  async remove(key: StorageKey): Promise<void> {
    checkKey(key);
    const k = encodeKey(key);
    await this.#write(`removing ${JSON.stringify(key)}`, () => this.#statements.remove.run(k));
  }

  async loadRange(prefix: StorageKey): Promise<StorageEntry[]> {
    checkPrefix(prefix);
    const bounds = prefixBounds(prefix);
    const rows = await this.#read(`reading the keys under ${JSON.stringify(prefix)}`, () =>
      (bounds ? this.#statements.range.all(...bounds) : this.#statements.all.all()) as Array<{ key: Buffer; value: Buffer }>,
    );
    const entries = rows.map((row) => ({ key: decodeKey(row.key), value: decodeValue(row.value) }));
    for (let i = 1; i < entries.length; i++) if (compareKeys(entries[i - 1].key, entries[i].key) >= 0) return entries.sort((a, b) => compareKeys(a.key, b.key));
    return entries;
  }

  async removeRange(prefix: StorageKey): Promise<void> {
    checkPrefix(prefix);
    const bounds = prefixBounds(prefix);
    await this.#write(`removing the keys under ${JSON.stringify(prefix)}`, () => (bounds ? this.#statements.removeRange.run(...bounds) : this.#statements.removeAll.run()));
  }

  /** All or nothing: one transaction (its own, or the lock's). */
  async saveBatch(writes: StorageWrite[]): Promise<void> {
    if (!Array.isArray(writes)) throw new InvalidArgumentError("saveBatch takes an array of writes");
    for (const write of writes) {
      checkKey(write?.key);
      if (write.value !== undefined) checkValue(write.value);
    }
    const { keys, values, removed } = collapseBatch(writes);
    await this.#write(`saving a batch of ${writes.length} writes`, () => {
      for (const key of removed) this.#statements.remove.run(key);
      for (let i = 0; i < keys.length; i++) this.#statements.save.run(keys[i], values[i]);
    });
  }

  /**
   * Runs `fn` in a write transaction of the file (`BEGIN IMMEDIATE`), so holding `name` and every
   * other lock against the other processes and connections; what `fn` writes through this
   * adapter is committed when it resolves, rolled back when it throws. A `lock` inside `fn` runs
   * in the same transaction (it already holds the file).
   */
  lock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    this.#check();
    if (typeof name !== "string") throw new InvalidArgumentError("a lock's name must be a string");
    if (typeof fn !== "function") throw new InvalidArgumentError("lock takes a function to run");
    if (this.#inFrame()) return fn();
    return serially(this.#queue, async () => {
      this.#check();
      await this.#retry(`taking the lock ${JSON.stringify(name)}`, () => this.#db.exec("BEGIN IMMEDIATE"));
      const frame: Frame = { connection: this.#identity, active: true };
      let result: T;
      try {
        result = await frames.run(frame, fn);
      } catch (error) {
        frame.active = false;
        try {
          this.#db.exec("ROLLBACK");
        } catch {
          // SQLite rolled it back itself (a failed statement can)
        }
        throw error;
      }
      frame.active = false;
      try {
        this.#db.exec("COMMIT");
      } catch (error) {
        try {
          this.#db.exec("ROLLBACK");
        } catch {
          // nothing to roll back
        }
        throw sqliteError(`committing what was written under the lock ${JSON.stringify(name)}`, error);
      }
      return result;
    });
  }

  /** Closes the database (one handed over as `database` stays open); later calls throw a `StorageError`. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await serially(this.#queue, async () => {
      this.#closed = true;
      if (this.#owned) this.#db.close();
    });
  }
}
