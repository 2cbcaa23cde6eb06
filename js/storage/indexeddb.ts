/**
 * An adapter over IndexedDB, through `idb` (a small wrapper over the raw API's requests): one
 * object store whose keys are the storage keys themselves (IndexedDB orders arrays segment by
 * segment, so a prefix is one key range), one transaction per batch, and one for the loads
 * made in the same turn of the event loop (a session list reads dozens of keys at once: a
 * transaction each costs more than the reads themselves). Entry
 * `context-compactor/storage/indexeddb`, apart from the package's main entry, so that pages that
 * do not use it do not load `idb`.
 *
 * Failures are `StorageError`s: a full quota (`reason: "quota"`, and the transaction is rolled
 * back), a database closed by `close()`, by another tab opening a newer version or by the browser
 * (`"closed"`), an open that other tabs block past `blockedTimeoutMs` (`"blocked"`), a write that
 * fails part-way (`"aborted"`: nothing of the batch is stored).
 */
import { openDB, type IDBPDatabase } from "idb";
import { StorageError } from "../errors.js";
import {
  checkKey,
  checkPrefix,
  checkValue,
  storageError,
  type StorageAdapter,
  type StorageEntry,
  type StorageKey,
  type StorageWrite,
} from "./adapter.js";

const STORE = "records";

export interface IndexedDBOptions {
  /** The database's name (default `"context-compactor"`). */
  database?: string;
  /** How long an open may wait for other tabs to close an older version (default 5,000 ms). */
  blockedTimeoutMs?: number;
  /**
   * Transactions' durability: `"strict"` waits for the disk (slower), `"relaxed"` for the
   * browser's own write; `"default"` (the default) is the browser's choice.
   */
  durability?: IDBTransactionDurability;
}

function rangeOf(prefix: StorageKey): IDBKeyRange | undefined {
  // An array sorts after every string: [...prefix, []] bounds every key that extends prefix.
  return prefix.length === 0 ? undefined : IDBKeyRange.bound(prefix, [...prefix, []], false, true);
}

export class IndexedDBAdapter implements StorageAdapter {
  readonly name: string;
  readonly #database: string;
  readonly #durability: IDBTransactionDurability;
  #db: IDBPDatabase | undefined;
  #closed: string | undefined;
  /** The loads made in this turn of the event loop, read together in one transaction at its end. */
  #loads: Array<{ key: StorageKey; resolve: (value: string | undefined) => void; reject: (error: unknown) => void }> | undefined;

  private constructor(database: string, durability: IDBTransactionDurability) {
    this.#database = database;
    this.#durability = durability;
    this.name = `indexeddb:${database}`;
  }

  /** Opens (or creates) the database. */
  static async open(options: IndexedDBOptions = {}): Promise<IndexedDBAdapter> {
    if (typeof indexedDB === "undefined") throw new StorageError("there is no IndexedDB here", { reason: "failed" });
    const adapter = new IndexedDBAdapter(options.database ?? "context-compactor", options.durability ?? "default");
    const timeout = options.blockedTimeoutMs ?? 5000;
    let db = await adapter.#connect(undefined, timeout);
    if (!db.objectStoreNames.contains(STORE)) {
      // A database of that name without our object store (another schema): add it in a new version.
      const version = db.version + 1;
      db.close();
      db = await adapter.#connect(version, timeout);
    }
    adapter.#db = db;
    return adapter;
  }

  #connect(version: number | undefined, timeoutMs: number): Promise<IDBPDatabase> {
    const name = this.#database;
    return new Promise((resolve, reject) => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      let settled = false;
      const fail = (error: StorageError) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(error);
      };
      openDB(name, version, {
        upgrade(db) {
          if (!db.objectStoreNames.contains(STORE)) db.createObjectStore(STORE);
        },
        blocked: () => {
          timer ??= setTimeout(
            () => fail(new StorageError(`opening the IndexedDB database ${JSON.stringify(name)} is blocked: another tab holds an older version open`, { reason: "blocked" })),
            timeoutMs,
          );
        },
        blocking: (_current, _next, event) => {
          // Another tab wants a newer version: let it have the database.
          (event.target as IDBDatabase).close();
          this.#closed = "another tab opened a newer version of the database";
        },
        terminated: () => {
          this.#closed = "the browser closed the database";
        },
      }).then(
        (db) => {
          clearTimeout(timer);
          if (settled) db.close();
          else {
            settled = true;
            resolve(db);
          }
        },
        (error) => fail(storageError(`opening the IndexedDB database ${JSON.stringify(name)}`, error)),
      );
    });
  }

  #open(): IDBPDatabase {
    if (this.#closed !== undefined || !this.#db) {
      throw new StorageError(`the IndexedDB database ${JSON.stringify(this.#database)} is closed: ${this.#closed ?? "not open"}`, { reason: "closed" });
    }
    return this.#db;
  }

  async #run<T>(action: string, fn: (db: IDBPDatabase) => Promise<T>): Promise<T> {
    const db = this.#open();
    try {
      return await fn(db);
    } catch (error) {
      if (this.#closed !== undefined) throw storageError(action, error, "closed");
      throw storageError(action, error);
    }
  }

  async load(key: StorageKey): Promise<string | undefined> {
    checkKey(key);
    return new Promise((resolve, reject) => {
      if (!this.#loads) {
        this.#loads = [];
        queueMicrotask(() => this.#readLoads());
      }
      this.#loads.push({ key, resolve, reject });
    });
  }

  /** Reads the loads waiting in one transaction (if it fails, each of them fails with its error). */
  #readLoads(): void {
    const loads = this.#loads ?? [];
    this.#loads = undefined;
    this.#run("reading from IndexedDB", async (db) => {
      const tx = db.transaction(STORE, "readonly");
      // The values are there once the reads succeed: the transaction's end is not waited for
      // (nor was it by idb's db.get, which each load was before).
      tx.done.catch(() => {});
      const reads = loads.map(({ key }) => tx.store.get(key));
      try {
        return await Promise.all(reads);
      } finally {
        reads.forEach((read) => read.catch(() => {}));
      }
    }).then(
      (values) => loads.forEach((load, i) => load.resolve(values[i] as string | undefined)),
      (error) => loads.forEach((load) => load.reject(error)),
    );
  }

  async save(key: StorageKey, value: string): Promise<void> {
    checkKey(key);
    checkValue(value);
    await this.saveBatch([{ key, value }]);
  }

  async remove(key: StorageKey): Promise<void> {
    checkKey(key);
    await this.saveBatch([{ key, value: undefined }]);
  }

  async loadRange(prefix: StorageKey): Promise<StorageEntry[]> {
    checkPrefix(prefix);
    return this.#run("reading from IndexedDB", async (db) => {
      const tx = db.transaction(STORE, "readonly");
      const range = rangeOf(prefix);
      const [keys, values] = await Promise.all([tx.store.getAllKeys(range), tx.store.getAll(range), tx.done]);
      return keys.map((key, i) => ({ key: key as StorageKey, value: values[i] as string }));
    });
  }

  async removeRange(prefix: StorageKey): Promise<void> {
    checkPrefix(prefix);
    await this.#run("removing from IndexedDB", async (db) => {
      const tx = db.transaction(STORE, "readwrite", { durability: this.#durability });
      const range = rangeOf(prefix);
      await Promise.all([range ? tx.store.delete(range) : tx.store.clear(), tx.done]);
    });
  }

  /** One transaction: all or nothing. */
  async saveBatch(writes: StorageWrite[]): Promise<void> {
    for (const write of writes) {
      checkKey(write.key);
      if (write.value !== undefined) checkValue(write.value);
    }
    if (writes.length === 0) return;
    await this.#run("writing to IndexedDB", async (db) => {
      const tx = db.transaction(STORE, "readwrite", { durability: this.#durability });
      const requests: Promise<unknown>[] = [];
      try {
        for (const { key, value } of writes) requests.push(value === undefined ? tx.store.delete(key) : tx.store.put(value, key));
      } catch (error) {
        // A write refused before it was queued: roll back the ones that were.
        requests.forEach((request) => request.catch(() => {}));
        tx.done.catch(() => {});
        try {
          tx.abort();
        } catch {
          // Already finished: it was not committed with this error pending.
        }
        throw storageError("writing to IndexedDB", error, "aborted");
      }
      try {
        await Promise.all([...requests, tx.done]);
      } catch (error) {
        requests.forEach((request) => request.catch(() => {}));
        tx.done.catch(() => {});
        throw error;
      }
    });
  }

  async close(): Promise<void> {
    this.#closed ??= "close() was called";
    this.#db?.close();
  }
}
