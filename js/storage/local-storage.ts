/**
 * An adapter over `localStorage` (or any `Storage`): each entry is one item, its key the prefix and
 * the key's segments joined with `/` (a `/` or `%` inside a segment is escaped, so segment
 * boundaries are kept). A batch is all or nothing: when an item does not fit (the browser's quota,
 * about 5 MB an origin), the items the batch already wrote are put back as they were and a
 * `StorageError` with `reason: "quota"` is thrown.
 *
 * Tabs do not read one localStorage: each keeps a copy that catches up with the others' writes
 * when it runs the events that carry them (as the HTML standard leaves it). So the lock first lets
 * the events already queued run, and the store then waits for a save another tab announced to
 * show; IndexedDB, which every tab reads alike, is the adapter for a session open in several tabs.
 */
import { StorageError } from "../errors.js";
import {
  checkKey,
  checkPrefix,
  checkValue,
  compareKeys,
  storageError,
  type StorageAdapter,
  type StorageEntry,
  type StorageKey,
  type StorageWrite,
} from "./adapter.js";
import { platformLock } from "./locks.js";

/** Two turns of the event loop: the storage events queued before now have run. */
const settle = () => new Promise<void>((resolve) => setTimeout(() => setTimeout(resolve, 0), 0));

export interface LocalStorageOptions {
  /** What every item's key starts with (default `"cc"`); adapters with different prefixes do not meet. */
  prefix?: string;
  /** The storage to use (default `globalThis.localStorage`). */
  storage?: Storage;
}

const escapeSegment = (segment: string) => segment.replace(/%/g, "%25").replace(/\//g, "%2F");
const unescapeSegment = (segment: string) => segment.replace(/%2F/g, "/").replace(/%25/g, "%");

export class LocalStorageAdapter implements StorageAdapter {
  readonly name: string;
  readonly #prefix: string;
  readonly #storage: Storage;

  constructor(options: LocalStorageOptions = {}) {
    const storage = options.storage ?? (globalThis as { localStorage?: Storage }).localStorage;
    if (!storage) throw new StorageError("there is no localStorage here (pass `storage`)", { reason: "failed" });
    this.#storage = storage;
    this.#prefix = escapeSegment(options.prefix ?? "cc");
    this.name = `localStorage:${this.#prefix}`;
  }

  #item(key: StorageKey): string {
    return `${this.#prefix}/${key.map(escapeSegment).join("/")}`;
  }

  #key(item: string): StorageKey | undefined {
    if (!item.startsWith(`${this.#prefix}/`)) return undefined;
    return item.slice(this.#prefix.length + 1).split("/").map(unescapeSegment);
  }

  /** The platform's lock (Web Locks across tabs), then the other tabs' queued writes applied here. */
  lock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return platformLock(name, async () => {
      await settle();
      return fn();
    });
  }

  async load(key: StorageKey): Promise<string | undefined> {
    checkKey(key);
    return this.#storage.getItem(this.#item(key)) ?? undefined;
  }

  async save(key: StorageKey, value: string): Promise<void> {
    checkKey(key);
    checkValue(value);
    try {
      this.#storage.setItem(this.#item(key), value);
    } catch (error) {
      throw storageError("localStorage.setItem", error);
    }
  }

  async remove(key: StorageKey): Promise<void> {
    checkKey(key);
    this.#storage.removeItem(this.#item(key));
  }

  #items(prefix: StorageKey): Array<{ item: string; key: StorageKey }> {
    const base = prefix.length === 0 ? this.#prefix : this.#item(prefix);
    const found = [];
    for (let i = 0; i < this.#storage.length; i++) {
      const item = this.#storage.key(i);
      if (item === null || (item !== base && !item.startsWith(`${base}/`))) continue;
      const key = this.#key(item);
      if (key) found.push({ item, key });
    }
    return found;
  }

  async loadRange(prefix: StorageKey): Promise<StorageEntry[]> {
    checkPrefix(prefix);
    const entries: StorageEntry[] = [];
    for (const { item, key } of this.#items(prefix)) {
      const value = this.#storage.getItem(item);
      if (value !== null) entries.push({ key, value });
    }
    return entries.sort((a, b) => compareKeys(a.key, b.key));
  }

  async removeRange(prefix: StorageKey): Promise<void> {
    checkPrefix(prefix);
    for (const { item } of this.#items(prefix)) this.#storage.removeItem(item);
  }

  async saveBatch(writes: StorageWrite[]): Promise<void> {
    for (const write of writes) {
      checkKey(write.key);
      if (write.value !== undefined) checkValue(write.value);
    }
    const undo: Array<[string, string | null]> = [];
    try {
      for (const { key, value } of writes) {
        const item = this.#item(key);
        undo.push([item, this.#storage.getItem(item)]);
        if (value === undefined) this.#storage.removeItem(item);
        else this.#storage.setItem(item, value);
      }
    } catch (error) {
      // Put back what this batch changed, last first: each item had fit before.
      for (const [item, previous] of undo.reverse()) {
        if (previous === null) this.#storage.removeItem(item);
        else this.#storage.setItem(item, previous);
      }
      throw storageError("localStorage.setItem", error);
    }
  }
}
