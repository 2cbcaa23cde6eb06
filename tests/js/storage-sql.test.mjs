// The storage-adapter conformance suite (context-compactor/storage-test), unchanged, on the SQL
// adapters: PostgreSQL (a real server started for this file: tests/support/postgres.mjs) and
// SQLite (a file), and what is theirs alone: schema versions and migrations, names, bad options.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import pg from "pg";
import Database from "better-sqlite3";
import { InvalidArgumentError, StorageError } from "context-compactor";
import { PostgresAdapter } from "context-compactor/storage/postgres";
import { SqliteAdapter } from "context-compactor/storage/sqlite";
import { runStorageAdapterSuite } from "context-compactor/storage-test";
import { usePostgres } from "../support/postgres.mjs";

const log = (line) => console.log(`# ${line}`);
let pool;
const server = usePostgres(
  { before, after },
  {
    started: (s) => (pool = new pg.Pool({ connectionString: s.connectionString, max: 8 })),
    stopping: () => pool?.end(),
  },
);

runStorageAdapterSuite({ name: "postgres", open: () => PostgresAdapter.open({ pool, schema: "suite" }), test, log });

const root = mkdtempSync(join(tmpdir(), "cc-sqlite-suite-"));
after(() => rmSync(root, { recursive: true, force: true }));
runStorageAdapterSuite({ name: "sqlite", open: () => SqliteAdapter.open({ path: join(root, "suite.db") }), test, log, appends: 2_000 });

test("postgres: a schema of a newer version is refused with a typed error, and nothing is changed", async () => {
  await PostgresAdapter.open({ pool, schema: "newer" });
  await pool.query('UPDATE "newer"."schema_version" SET version = 99');
  await assert.rejects(PostgresAdapter.open({ pool, schema: "newer" }), (error) => error instanceof StorageError && error.reason === "version" && /99/.test(error.message));
  assert.equal((await pool.query('SELECT version FROM "newer"."schema_version"')).rows[0].version, 99);
});

test("postgres: processes opening a new schema at once migrate it once", async () => {
  const pools = Array.from({ length: 4 }, () => new pg.Pool({ connectionString: server.connectionString, max: 2 }));
  try {
    const adapters = await Promise.all(pools.map((p) => PostgresAdapter.open({ pool: p, schema: "together" })));
    await adapters[0].save(["k"], "v");
    assert.equal(await adapters[3].load(["k"]), "v");
    assert.deepEqual((await pool.query('SELECT version FROM "together"."schema_version"')).rows, [{ version: 1 }]);
  } finally {
    await Promise.all(pools.map((p) => p.end()));
  }
});

test("postgres: values are bytes and keys sort bytewise, whatever the database's collation", async () => {
  const a = await PostgresAdapter.open({ pool, schema: "types" });
  const { rows } = await pool.query(
    "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = 'types' AND table_name = 'entries' ORDER BY column_name",
  );
  assert.deepEqual(rows, [{ column_name: "key", data_type: "bytea" }, { column_name: "value", data_type: "bytea" }]);
  // JSON text comes back byte for byte (jsonb would reorder these keys and drop the spaces).
  const json = '{"z": 1, "a":  [2 ,3], "m": "\\u00e9"}';
  await a.save(["j"], json);
  assert.equal(await a.load(["j"]), json);
  // UTF-16 order: U+FF5E sorts after U+1F600's high surrogate (U+D83D)? No: code units, so 😀 (D83D) < ～ (FF5E).
  const keys = [["～"], ["😀"], ["a"], ["B"], ["a", ""], ["\u0000"]];
  for (const key of keys) await a.save(["order", ...key], "x");
  assert.deepEqual((await a.loadRange(["order"])).map((e) => e.key.slice(1)), [["\u0000"], ["B"], ["a"], ["a", ""], ["😀"], ["～"]]);
});

test("postgres: bad options are typed errors", async () => {
  await assert.rejects(PostgresAdapter.open({}), InvalidArgumentError);
  await assert.rejects(PostgresAdapter.open({ pool, schema: "bad; drop" }), InvalidArgumentError);
  await assert.rejects(PostgresAdapter.open({ pool, lockTimeoutMs: -1 }), InvalidArgumentError);
});

test("postgres: an unreachable server is a StorageError with reason unavailable", async () => {
  const dead = new pg.Pool({ host: "127.0.0.1", port: 1, user: "cc", password: "x", database: "postgres", connectionTimeoutMillis: 2000 });
  try {
    await assert.rejects(PostgresAdapter.open({ pool: dead }), (error) => error instanceof StorageError && error.reason === "unavailable");
  } finally {
    await dead.end();
  }
});

test("sqlite: a database of a newer schema is refused with a typed error", async () => {
  const path = join(root, "newer.db");
  (await SqliteAdapter.open({ path })).close();
  const db = new Database(path);
  db.exec('UPDATE "context_compactor_schema_version" SET version = 7');
  db.close();
  await assert.rejects(SqliteAdapter.open({ path }), (error) => error instanceof StorageError && error.reason === "version" && /7/.test(error.message));
});

test("sqlite: the file is in WAL mode, and a database handed over stays open after close()", async () => {
  const path = join(root, "handed.db");
  const db = new Database(path);
  const a = await SqliteAdapter.open({ database: db });
  await a.save(["x"], "y");
  assert.equal(db.pragma("journal_mode", { simple: true }), "wal");
  await a.close();
  await assert.rejects(a.load(["x"]), StorageError);
  assert.equal(db.prepare('SELECT count(*) AS n FROM "context_compactor_entries"').get().n, 1);
  db.close();
  await assert.rejects(SqliteAdapter.open({}), InvalidArgumentError);
  await assert.rejects(SqliteAdapter.open({ path, table: "1x" }), InvalidArgumentError);
});
