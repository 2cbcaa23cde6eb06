/**
 * An adapter over PostgreSQL (`context-compactor/storage/postgres`), for servers that run many
 * Node processes: hand it the `pg.Pool` your app already has.
 *
 * ```ts
 * import pg from "pg";
 * import { SessionStore } from "context-compactor";
 * import { PostgresAdapter } from "context-compactor/storage/postgres";
 * const store = await SessionStore.open(await PostgresAdapter.open({ pool: new pg.Pool() }));
 * ```
 *
 * Everything lives in one table of the schema named by `schema` (default `context_compactor`),
 * made and migrated by `open` under an advisory lock; a schema written by a newer version is a
 * `StorageError` with `reason: "version"`. Keys and values are bytes (see `sql.ts`). The session
 * store's lock is `lock(name, fn)`: a transaction holding `pg_advisory_xact_lock`, in which every
 * call `fn` makes on this storage runs (routed to the transaction's client), committed when `fn`
 * resolves and rolled back when it throws: the lock and the writes made under it end together,
 * with the transaction, also when the process dies or its connection is cut. No session-level
 * advisory lock is taken, so a transaction-mode pooler (PgBouncer) in front of the server keeps it
 * working. A lock not granted within `lockTimeoutMs` is a `StorageError` with `reason: "blocked"`;
 * a server that cannot be reached, or restarts, one with `reason: "unavailable"`.
 */
import { AsyncLocalStorage } from "node:async_hooks";
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

/** What this adapter needs of a `pg` query result. */
export interface PgResult {
  rows: Array<Record<string, unknown>>;
  command?: string;
}

type PgQuery = { text: string; values?: unknown[] };

/** What this adapter needs of a `pg.PoolClient`. */
export interface PgClient {
  query(query: PgQuery): Promise<PgResult>;
  release(error?: Error | boolean): void;
  on?(event: "error", listener: (error: Error) => void): unknown;
  removeListener?(event: "error", listener: (error: Error) => void): unknown;
}

/** What this adapter needs of a `pg.Pool` (the `pg` package's; `pg` itself is not imported). */
export interface PgPool {
  query(query: PgQuery): Promise<PgResult>;
  connect(): Promise<PgClient>;
  options?: { host?: string; port?: number; database?: string; connectionString?: string };
}

export interface PostgresOptions {
  /** The pool to take connections from (yours: `close()` leaves it open). */
  pool: PgPool;
  /** The schema holding the table (made if missing; default `context_compactor`). */
  schema?: string;
  /** How long `lock` waits for another holder, and for a connection, before a `StorageError` (default 10,000 ms). */
  lockTimeoutMs?: number;
  /** Names the storage for the session store (default `postgres:<host>:<port>/<database>/<schema>`). */
  name?: string;
}

/** A transaction a `lock` call holds: the calls made inside it go to its client. */
interface Frame {
  pool: PgPool;
  schema: string;
  client: PgClient;
  /** Until `fn` settled: a call made later from what it started goes to the pool. */
  active: boolean;
  /** A statement failed: the transaction is aborted, and rolled back at the end. */
  failed?: unknown;
  /** The statement last sent: a client runs one at a time (loads made together queue here). */
  last: Promise<unknown>;
}

const frames = new AsyncLocalStorage<Frame>();

/** SQLSTATE codes and Node errors that mean the server is not there (or not any more). */
const UNAVAILABLE = new Set(["57P01", "57P02", "57P03", "53300", "ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENOTFOUND", "EAI_AGAIN"]);

/** The storage failure a `pg` error is. */
function failureOf(error: unknown): StorageFailure {
  const code = String((error as { code?: unknown })?.code ?? "");
  const message = String((error as { message?: unknown })?.message ?? "");
  if (code === "55P03") return "blocked";
  if (code === "53100") return "quota";
  if (code === "40001" || code === "40P01" || code === "25P02") return "aborted";
  if (UNAVAILABLE.has(code) || code.startsWith("08")) return "unavailable";
  if (/Connection terminated|connection error|not queryable|timeout exceeded when trying to connect|Client was closed/i.test(message)) return "unavailable";
  return "failed";
}

function pgError(action: string, error: unknown): ContextCompactorError {
  if (error instanceof ContextCompactorError) return error;
  const reason = failureOf(error);
  const detail = (error as { message?: unknown })?.message ?? String(error);
  const code = (error as { code?: unknown })?.code;
  return new StorageError(`${action} failed: ${detail}${code ? ` (${String(code)})` : ""}`, { reason, cause: error });
}

/** Two 32-bit halves of the FNV-1a 64 hash of `text` (the two-key form of the advisory lock functions). */
function lockKeys(text: string): [number, number] {
  let hash = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(text, "utf8")) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  return [Number(BigInt.asIntN(32, hash >> 32n)), Number(BigInt.asIntN(32, hash))];
}

const quote = (name: string) => `"${name}"`;

export class PostgresAdapter implements StorageAdapter {
  readonly name: string;
  /** Writes made inside `lock(name, fn)` are committed together when it resolves. */
  readonly transactional = true;
  readonly #pool: PgPool;
  readonly #schema: string;
  readonly #lockTimeoutMs: number;
  readonly #table: string;
  /** The loads waiting to be read together, by where they run (a lock's transaction, or the pool). */
  readonly #loads = new Map<Frame | PgPool, Array<{ key: Buffer; resolve: (value: string | undefined) => void; reject: (error: unknown) => void }>>();
  #closed = false;

  private constructor(options: PostgresOptions, schema: string) {
    this.#pool = options.pool;
    this.#schema = schema;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
    this.#table = `${quote(schema)}.${quote("entries")}`;
    const o = options.pool.options ?? {};
    let where = `${o.host ?? ""}:${o.port ?? ""}/${o.database ?? ""}`;
    if (o.connectionString) {
      try {
        const url = new URL(o.connectionString);
        where = `${url.hostname}:${url.port}${url.pathname}`;
      } catch {
        where = "";
      }
    }
    this.name = options.name ?? `postgres:${where}/${schema}`;
  }

  /** Opens the storage in `options.pool`'s database, making or migrating its schema first. */
  static async open(options: PostgresOptions): Promise<PostgresAdapter> {
    if (!options || typeof options !== "object") throw new InvalidArgumentError("PostgresAdapter.open takes { pool, schema? }");
    const pool = options.pool;
    if (!pool || typeof pool.query !== "function" || typeof pool.connect !== "function") {
      throw new InvalidArgumentError("PostgresAdapter.open needs a `pool`: a pg.Pool (from the `pg` package)");
    }
    const schema = options.schema ?? "context_compactor";
    checkIdentifier(schema, "the schema name");
    checkMs(options.lockTimeoutMs, "lockTimeoutMs");
    if (options.name !== undefined && (typeof options.name !== "string" || options.name === "")) throw new InvalidArgumentError("name must be a non-empty string");
    const adapter = new PostgresAdapter(options, schema);
    await adapter.#migrate();
    return adapter;
  }

  /** The schema version stored, 0 when there is none yet. */
  async #storedVersion(client: PgClient | PgPool): Promise<number> {
    try {
      const { rows } = await client.query({ text: `SELECT max(version) AS version FROM ${quote(this.#schema)}.${quote("schema_version")}` });
      return Number(rows[0]?.version ?? 0);
    } catch (error) {
      if ((error as { code?: unknown })?.code === "42P01" || (error as { code?: unknown })?.code === "3F000") return 0; // no table, no schema
      throw error;
    }
  }

  /** Brings the schema to `SCHEMA_VERSION`, one process at a time (an advisory lock in the migrating transaction). */
  async #migrate(): Promise<void> {
    const where = `the PostgreSQL schema ${JSON.stringify(this.#schema)}`;
    let version: number;
    try {
      version = await this.#storedVersion(this.#pool);
    } catch (error) {
      throw pgError(`reading ${where}'s version`, error);
    }
    if (version > SCHEMA_VERSION) throw newerSchema(where, version);
    if (version === SCHEMA_VERSION) return;
    const dialect: Dialect = { bytes: "bytea", tableOptions: "", table: (name) => `${quote(this.#schema)}.${quote(name)}` };
    const { client, release } = await this.#checkOut();
    let broken: Error | undefined;
    try {
      await client.query({ text: "BEGIN" });
      const [a, b] = lockKeys(`context-compactor migrate ${this.#schema}`);
      await client.query({ text: `SET LOCAL lock_timeout = ${Math.ceil(this.#lockTimeoutMs)}` });
      await client.query({ text: "SELECT pg_advisory_xact_lock($1::int4, $2::int4)", values: [a, b] });
      await client.query({ text: `CREATE SCHEMA IF NOT EXISTS ${quote(this.#schema)}` });
      await client.query({ text: versionTable(dialect) });
      const now = await this.#storedVersion(client);
      if (now > SCHEMA_VERSION) throw newerSchema(where, now);
      const steps = migrations(dialect);
      for (let v = now; v < SCHEMA_VERSION; v++) for (const statement of steps[v]) await client.query({ text: statement });
      if (now < SCHEMA_VERSION) {
        await client.query({ text: `DELETE FROM ${dialect.table("schema_version")}` });
        await client.query({ text: `INSERT INTO ${dialect.table("schema_version")} (version) VALUES ($1)`, values: [SCHEMA_VERSION] });
      }
      await client.query({ text: "COMMIT" });
    } catch (error) {
      await client.query({ text: "ROLLBACK" }).catch((e: Error) => (broken = e));
      throw pgError(`migrating ${where}`, error);
    } finally {
      release(broken);
    }
  }

  /**
   * A client of the pool, within `lockTimeoutMs`, and the release that hands it back. A checked
   * out client whose connection breaks emits `error`, which would end the process unheard: it is
   * heard here, and the client dropped from the pool when released.
   */
  async #checkOut(): Promise<{ client: PgClient; release: (broken?: Error) => void }> {
    const client = await this.#connect();
    let failure: Error | undefined;
    const heard = (error: Error) => (failure = error);
    client.on?.("error", heard);
    return {
      client,
      release: (broken) => {
        client.removeListener?.("error", heard);
        client.release(broken ?? failure ?? false);
      },
    };
  }

  /** A client of the pool, within `lockTimeoutMs`. */
  async #connect(): Promise<PgClient> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const connecting = this.#pool.connect();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        connecting.then((client) => client.release(), () => {});
        reject(new StorageError(`no PostgreSQL connection within ${this.#lockTimeoutMs} ms (the pool is exhausted, or the server does not answer)`, { reason: "blocked" }));
      }, this.#lockTimeoutMs);
    });
    try {
      return await Promise.race([connecting, timeout]);
    } catch (error) {
      throw pgError("connecting to PostgreSQL", error);
    } finally {
      clearTimeout(timer);
    }
  }

  #check(): void {
    if (this.#closed) throw new StorageError(`the PostgreSQL adapter ${this.name} is closed`, { reason: "closed" });
  }

  /** The transaction of the `lock` this call runs in, if it is on this storage. */
  #frame(): Frame | undefined {
    const frame = frames.getStore();
    return frame && frame.active && frame.pool === this.#pool && frame.schema === this.#schema ? frame : undefined;
  }

  /** Runs one statement: in the transaction of the lock it runs under, else on the pool (a transaction of its own). */
  async #query(action: string, text: string, values: unknown[] = []): Promise<PgResult> {
    this.#check();
    return this.#send(this.#frame(), action, text, values);
  }

  /** Runs one statement in `frame`'s transaction, or on the pool. */
  async #send(frame: Frame | undefined, action: string, text: string, values: unknown[]): Promise<PgResult> {
    if (!frame?.active) {
      try {
        return await this.#pool.query({ text, values });
      } catch (error) {
        throw pgError(action, error);
      }
    }
    const run = async () => {
      if (frame.failed) throw new StorageError(`${action} failed: an earlier statement of the lock's transaction failed, which PostgreSQL then aborted`, { reason: "aborted", cause: frame.failed });
      try {
        return await frame.client.query({ text, values });
      } catch (error) {
        frame.failed = error;
        throw pgError(action, error);
      }
    };
    const result = frame.last.then(run, run);
    frame.last = result.catch(() => {});
    return result;
  }

  /**
   * Loads made in the same turn of the event loop (a session's tail, a listing's sessions) are
   * read together, in one statement: one round trip, not one each.
   */
  load(key: StorageKey): Promise<string | undefined> {
    checkKey(key);
    this.#check();
    const frame = this.#frame();
    const encoded = encodeKey(key);
    return new Promise((resolve, reject) => {
      let waiting = this.#loads.get(frame ?? this.#pool);
      if (!waiting) {
        this.#loads.set(frame ?? this.#pool, (waiting = []));
        queueMicrotask(() => this.#readLoads(frame));
      }
      waiting.push({ key: encoded, resolve, reject });
    });
  }

  #readLoads(frame: Frame | undefined): void {
    const waiting = this.#loads.get(frame ?? this.#pool) ?? [];
    this.#loads.delete(frame ?? this.#pool);
    const reading =
      waiting.length === 1
        ? this.#send(frame, "reading a key", `SELECT key, value FROM ${this.#table} WHERE key = $1`, [waiting[0].key])
        : this.#send(frame, `reading ${waiting.length} keys`, `SELECT key, value FROM ${this.#table} WHERE key = ANY($1::bytea[])`, [waiting.map((w) => w.key)]);
    reading.then(
      ({ rows }) => {
        const values = new Map(rows.map((row) => [(row.key as Buffer).toString("latin1"), row.value as Buffer]));
        for (const load of waiting) {
          const value = values.get(load.key.toString("latin1"));
          load.resolve(value === undefined ? undefined : decodeValue(value));
        }
      },
      (error) => waiting.forEach((load) => load.reject(error)),
    );
  }

  async save(key: StorageKey, value: string): Promise<void> {
    checkKey(key);
    checkValue(value);
    await this.#query(
      `saving ${JSON.stringify(key)}`,
      `INSERT INTO ${this.#table} (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [encodeKey(key), encodeValue(value)],
    );
  }

  async remove(key: StorageKey): Promise<void> {
    checkKey(key);
    await this.#query(`removing ${JSON.stringify(key)}`, `DELETE FROM ${this.#table} WHERE key = $1`, [encodeKey(key)]);
  }

  async loadRange(prefix: StorageKey): Promise<StorageEntry[]> {
    checkPrefix(prefix);
    const bounds = prefixBounds(prefix);
    const { rows } = bounds
      ? await this.#query(`reading the keys under ${JSON.stringify(prefix)}`, `SELECT key, value FROM ${this.#table} WHERE key >= $1 AND key < $2 ORDER BY key`, bounds)
      : await this.#query("reading every key", `SELECT key, value FROM ${this.#table} ORDER BY key`);
    const entries = rows.map((row) => ({ key: decodeKey(row.key as Buffer), value: decodeValue(row.value as Buffer) }));
    // (Already in this order: the bytes sort as the keys do. A check costs one pass.)
    for (let i = 1; i < entries.length; i++) if (compareKeys(entries[i - 1].key, entries[i].key) >= 0) return entries.sort((a, b) => compareKeys(a.key, b.key));
    return entries;
  }

  async removeRange(prefix: StorageKey): Promise<void> {
    checkPrefix(prefix);
    const bounds = prefixBounds(prefix);
    if (bounds) await this.#query(`removing the keys under ${JSON.stringify(prefix)}`, `DELETE FROM ${this.#table} WHERE key >= $1 AND key < $2`, bounds);
    else await this.#query("removing every key", `DELETE FROM ${this.#table}`);
  }

  /** All or nothing: one statement (its own transaction, or part of the lock's). */
  async saveBatch(writes: StorageWrite[]): Promise<void> {
    if (!Array.isArray(writes)) throw new InvalidArgumentError("saveBatch takes an array of writes");
    for (const write of writes) {
      checkKey(write?.key);
      if (write.value !== undefined) checkValue(write.value);
    }
    const { keys, values, removed } = collapseBatch(writes);
    if (keys.length === 0 && removed.length === 0) return;
    await this.#query(
      `saving a batch of ${writes.length} writes`,
      `WITH removed AS (DELETE FROM ${this.#table} WHERE key = ANY($1::bytea[]))
       INSERT INTO ${this.#table} (key, value) SELECT * FROM unnest($2::bytea[], $3::bytea[])
       ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
      [removed, keys, values],
    );
  }

  /**
   * Runs `fn` in a transaction holding the advisory lock `name` of this schema (every holder of
   * this database waits for it), with this storage's calls made inside `fn` in that transaction;
   * commits when `fn` resolves, rolls back when it throws. Each call takes its own transaction,
   * also inside another's (the session store takes several sessions' locks in one order).
   */
  lock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    this.#check();
    if (typeof name !== "string") throw new InvalidArgumentError("a lock's name must be a string");
    if (typeof fn !== "function") throw new InvalidArgumentError("lock takes a function to run");
    // One waiter per name in this process: the others queue here, not on pool connections, as
    // long as they would wait for the server.
    return frames.exit(() => {
      let started = false;
      let abandoned = false;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const running = serially(`${this.name}\u0000${name}`, () => {
        if (abandoned) return Promise.resolve(undefined as T);
        started = true;
        return this.#locked(name, fn);
      });
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          if (started) return;
          abandoned = true;
          reject(new StorageError(`the lock ${JSON.stringify(name)} is held by another call of this process for more than ${this.#lockTimeoutMs} ms`, { reason: "blocked" }));
        }, this.#lockTimeoutMs);
      });
      return Promise.race([running, timeout]).finally(() => clearTimeout(timer));
    });
  }

  async #locked<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const { client, release } = await this.#checkOut();
    let broken: Error | undefined;
    const frame: Frame = { pool: this.#pool, schema: this.#schema, client, active: false, last: Promise.resolve() };
    try {
      try {
        // One round trip (the simple protocol runs the three in order; the keys are numbers).
        const [a, b] = lockKeys(`${this.#schema}\u0000${name}`);
        await client.query({ text: `BEGIN; SET LOCAL lock_timeout = ${Math.ceil(this.#lockTimeoutMs)}; SELECT pg_advisory_xact_lock(${a}, ${b})` });
      } catch (error) {
        if (failureOf(error) === "blocked") {
          throw new StorageError(`the lock ${JSON.stringify(name)} is held by another process for more than ${this.#lockTimeoutMs} ms`, { reason: "blocked", cause: error });
        }
        throw pgError(`taking the lock ${JSON.stringify(name)}`, error);
      }
      frame.active = true;
      let result: T;
      try {
        result = await frames.run(frame, fn);
      } finally {
        frame.active = false;
        await frame.last; // a statement fn did not wait for
      }
      if (frame.failed) {
        throw new StorageError(`a statement under the lock ${JSON.stringify(name)} failed, so nothing written under it was stored: ${(frame.failed as Error)?.message ?? frame.failed}`, {
          reason: "aborted",
          cause: frame.failed,
        });
      }
      let done: PgResult;
      try {
        done = await client.query({ text: "COMMIT" });
      } catch (error) {
        broken = error as Error;
        throw pgError(`committing what was written under the lock ${JSON.stringify(name)}`, error);
      }
      // (A transaction that failed commits as a rollback, without an error.)
      if (done.command !== undefined && done.command !== "COMMIT") {
        throw new StorageError(`the transaction under the lock ${JSON.stringify(name)} was rolled back`, { reason: "aborted" });
      }
      return result;
    } catch (error) {
      if (!broken) {
        await client.query({ text: "ROLLBACK" }).catch((e: Error) => (broken = e));
      }
      throw error;
    } finally {
      // A client whose connection broke is dropped from the pool, not handed out again.
      release(broken);
    }
  }

  /** Stops using the pool (which stays open: it is yours). Later calls throw a `StorageError`. */
  async close(): Promise<void> {
    this.#closed = true;
  }
}
