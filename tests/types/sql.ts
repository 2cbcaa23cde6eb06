// The SQL adapters take the drivers' own objects as they are: a pg.Pool (node-postgres) and a
// better-sqlite3 Database fit the structural types the adapters declare (they import neither).
import pg from "pg";
import Database from "better-sqlite3";
import { SessionStore, StorageError, type StorageAdapter } from "context-compactor";
import { PostgresAdapter, type PgPool } from "context-compactor/storage/postgres";
import { SqliteAdapter, type SqliteDatabase } from "context-compactor/storage/sqlite";

export async function server(): Promise<string[]> {
  const pool = new pg.Pool({ connectionString: "postgres://localhost/app" });
  const asPgPool: PgPool = pool;
  const adapter: StorageAdapter = await PostgresAdapter.open({ pool: asPgPool, schema: "sessions", lockTimeoutMs: 5_000 });
  const store = await SessionStore.open(adapter, { autosave: false });
  const chat = await store.open("s-1");
  const ids: string[] = await chat.append({ role: "user", content: "hi" }, { key: "request-1" });
  await chat.compact({ format: "openai", leaseMs: 30_000, summarize: async () => "summary" });
  const db: SqliteDatabase = new Database(":memory:");
  const local = await SqliteAdapter.open({ database: db, table: "cc" });
  const transactional: boolean | undefined = local.transactional;
  try {
    await local.load(["x"]);
  } catch (error) {
    if (error instanceof StorageError && (error.reason === "unavailable" || error.reason === "version")) return [];
  }
  return transactional ? ids : [];
}
