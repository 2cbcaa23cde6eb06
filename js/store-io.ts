/**
 * How the session store reads and writes its storage: every adapter error as a `StorageError`
 * that says what was being done, writes in order, and a write whose outcome is unknown read back.
 */
import type { StoredRecord } from "./wasm.js";
import { ContextCompactorError } from "./errors.js";
import { storageError, type StorageAdapter, type StorageKey, type StorageWrite } from "./storage/adapter.js";

/**
 * `adapter` with the errors of its reads and removals as `StorageError`s (the errors of its writes
 * `write` turns into ones that say what was being saved): an adapter of the app's own may throw
 * anything, synchronously too. What the store does with its storage goes through this.
 */
export function withStorageErrors(adapter: StorageAdapter): StorageAdapter {
  const guard =
    <M extends "load" | "loadRange" | "remove" | "removeRange">(method: M, action: string) =>
    async (key: StorageKey): Promise<Awaited<ReturnType<StorageAdapter[M]>>> => {
      try {
        return (await adapter[method](key)) as Awaited<ReturnType<StorageAdapter[M]>>;
      } catch (error) {
        throw error instanceof ContextCompactorError ? error : storageError(`${action} ${JSON.stringify(key)}`, error);
      }
    };
  return {
    name: adapter.name,
    transactional: adapter.transactional === true,
    load: guard("load", "reading"),
    loadRange: guard("loadRange", "reading the records under"),
    remove: guard("remove", "removing"),
    removeRange: guard("removeRange", "removing the records under"),
    save: (key, value) => adapter.save(key, value),
    get saveBatch() {
      return typeof adapter.saveBatch === "function" ? (writes: StorageWrite[]) => (adapter.saveBatch as NonNullable<StorageAdapter["saveBatch"]>)(writes) : undefined;
    },
  };
}

/** Writes in order (`saveBatch` when the adapter has it); adapter errors become `StorageError`s. */
export async function write(adapter: StorageAdapter, writes: StorageWrite[], action: string): Promise<void> {
  try {
    if (typeof adapter.saveBatch === "function") await adapter.saveBatch(writes);
    else {
      for (const { key, value } of writes) {
        if (value === undefined) await adapter.remove(key);
        else await adapter.save(key, value);
      }
    }
  } catch (error) {
    if (error instanceof ContextCompactorError) throw error;
    throw storageError(action, error);
  }
}

/**
 * Writes `records` as `write` does; when that throws, reads the last record back: a storage whose
 * writes land in order holds the whole batch if it holds the last, so a batch that landed before
 * the error (an fsync that failed after the write, a transaction whose success was not reported)
 * counts as written, and is not written again after the messages of the next save renumbered.
 */
export async function writeChecked(adapter: StorageAdapter, records: StoredRecord[], action: string): Promise<void> {
  try {
    await write(adapter, records, action);
  } catch (error) {
    const last = records[records.length - 1];
    const stored = await adapter.load(last.key).catch(() => undefined);
    if (stored !== last.value) throw error;
  }
}

/**
 * The records of `keys` up to the first absent one (a session's tail). They are read together (a
 * few absent keys cost less than a round trip each), then taken in order: a read that failed
 * counts only if it comes before the first absent key, as if read one by one.
 */
export async function readOn(io: StorageAdapter, keys: StorageKey[]): Promise<StoredRecord[]> {
  const reads = await Promise.allSettled(keys.map((key) => io.load(key)));
  const records: StoredRecord[] = [];
  for (const [i, read] of reads.entries()) {
    if (read.status === "rejected") throw read.reason;
    if (read.value === undefined) break;
    records.push({ key: keys[i], value: read.value });
  }
  return records;
}
