/**
 * An adapter that keeps everything in a `Map`: for tests, for sessions that need not outlive the
 * process, and as the reference the conformance suite's other adapters are compared with. Two
 * adapters given the same `data` map share their contents (as two handles on one storage).
 */
import { StorageError } from "../errors.js";
import {
  checkKey,
  checkPrefix,
  checkValue,
  compareKeys,
  hasPrefix,
  type StorageAdapter,
  type StorageEntry,
  type StorageKey,
  type StorageWrite,
} from "./adapter.js";

export interface MemoryStorageOptions {
  /** The map to keep entries in (keyed by the key's JSON text); share it to share the storage. */
  data?: Map<string, string>;
  /** Defaults to a name unique to `data`. */
  name?: string;
}

let unnamed = 0;
const names = new WeakMap<Map<string, string>, string>();

export class MemoryStorageAdapter implements StorageAdapter {
  readonly name: string;
  readonly #data: Map<string, string>;
  #closed = false;

  constructor(options: MemoryStorageOptions = {}) {
    this.#data = options.data ?? new Map();
    let name = names.get(this.#data);
    if (name === undefined) names.set(this.#data, (name = `memory:${++unnamed}`));
    this.name = options.name ?? name;
  }

  #open(): Map<string, string> {
    if (this.#closed) throw new StorageError("this memory adapter is closed", { reason: "closed" });
    return this.#data;
  }

  async load(key: StorageKey): Promise<string | undefined> {
    checkKey(key);
    return this.#open().get(JSON.stringify(key));
  }

  async save(key: StorageKey, value: string): Promise<void> {
    checkKey(key);
    checkValue(value);
    this.#open().set(JSON.stringify(key), value);
  }

  async remove(key: StorageKey): Promise<void> {
    checkKey(key);
    this.#open().delete(JSON.stringify(key));
  }

  async loadRange(prefix: StorageKey): Promise<StorageEntry[]> {
    checkPrefix(prefix);
    const entries: StorageEntry[] = [];
    for (const [encoded, value] of this.#open()) {
      const key = JSON.parse(encoded) as StorageKey;
      if (hasPrefix(key, prefix)) entries.push({ key, value });
    }
    return entries.sort((a, b) => compareKeys(a.key, b.key));
  }

  async removeRange(prefix: StorageKey): Promise<void> {
    checkPrefix(prefix);
    const data = this.#open();
    for (const encoded of [...data.keys()]) {
      if (hasPrefix(JSON.parse(encoded) as StorageKey, prefix)) data.delete(encoded);
    }
  }

  /** All or nothing: every write is checked before any is applied. */
  async saveBatch(writes: StorageWrite[]): Promise<void> {
    for (const write of writes) {
      checkKey(write.key);
      if (write.value !== undefined) checkValue(write.value);
    }
    const data = this.#open();
    for (const { key, value } of writes) {
      if (value === undefined) data.delete(JSON.stringify(key));
      else data.set(JSON.stringify(key), value);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
  }
}
