/**
 * The storage-adapter interface the session store writes through, and the helpers every adapter
 * shares. An adapter is a small async key-value store: keys are arrays of strings, values are
 * strings (the store's records are JSON text, and localStorage holds nothing but strings).
 * Write your own for any backend and check it with `runStorageAdapterSuite`
 * (`context-compactor/storage-test`).
 */
import { InvalidArgumentError, StorageError, type StorageFailure } from "../errors.js";

/** A key: one or more strings. Prefixes match whole segments: `["a"]` holds `["a", "x"]`, never `["ab"]`. */
export type StorageKey = string[];

export interface StorageEntry {
  key: StorageKey;
  value: string;
}

/** One write of a batch: `value: undefined` removes the key. */
export interface StorageWrite {
  key: StorageKey;
  value: string | undefined;
}

export interface StorageAdapter {
  /**
   * Names the storage this adapter opens (e.g. `indexeddb:<database>`): two adapters with the same
   * name share data, so the store coordinates them with one lock and one change channel per session.
   */
  readonly name?: string;
  /** The value at `key`, or `undefined`. */
  load(key: StorageKey): Promise<string | undefined>;
  /** Stores `value` at `key`, replacing what was there; durable once the promise resolves. */
  save(key: StorageKey, value: string): Promise<void>;
  /** Removes `key` (nothing happens if it is absent). */
  remove(key: StorageKey): Promise<void>;
  /** Every entry whose key starts with `prefix` (whole segments; the key equal to it included), in key order. */
  loadRange(prefix: StorageKey): Promise<StorageEntry[]>;
  /** Removes every entry `loadRange(prefix)` would return. */
  removeRange(prefix: StorageKey): Promise<void>;
  /**
   * Optional: writes (and removes) in order as one operation. If it fails, or the process dies
   * part-way, what is stored is a prefix of the batch, never a later write without the earlier
   * ones; adapters with transactions store all or nothing. The store writes a session's meta
   * record last, so that a batch cut short is never part of the session. Without it, the store
   * calls `save` and `remove` one at a time, in the same order.
   */
  saveBatch?(writes: StorageWrite[]): Promise<void>;
  /**
   * Optional: runs `fn` while holding the lock `name` against every other holder of this storage
   * (other processes too). Without it the store uses Web Locks where the platform has them
   * (`navigator.locks`: every tab of the origin), else a lock within this JS realm.
   */
  lock?<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /**
   * Optional: `true` when `lock(name, fn)` runs `fn` in one transaction (the SQL adapters): what
   * `fn` writes through the adapter is stored when `lock` resolves, and nothing of it when `lock`
   * rejects, unless the connection broke as it committed (then the outcome is unknown). The store
   * then counts a save as done only once `lock` resolved, and marks each save so that it can tell
   * later whether one whose outcome was unknown landed.
   */
  readonly transactional?: boolean;
  /** Optional: releases what the adapter holds (a database connection). Later calls throw a `StorageError`. */
  close?(): Promise<void>;
}

/** Throws an `InvalidArgumentError` unless `key` is a non-empty array of strings. */
export function checkKey(key: unknown, what = "the key"): asserts key is StorageKey {
  if (!Array.isArray(key) || key.length === 0 || !key.every((segment) => typeof segment === "string")) {
    throw new InvalidArgumentError(`${what} must be a non-empty array of strings, got ${describe(key)}`);
  }
}

/** Throws an `InvalidArgumentError` unless `prefix` is an array of strings (empty: everything). */
export function checkPrefix(prefix: unknown): asserts prefix is StorageKey {
  if (!Array.isArray(prefix) || !prefix.every((segment) => typeof segment === "string")) {
    throw new InvalidArgumentError(`the prefix must be an array of strings, got ${describe(prefix)}`);
  }
}

export function checkValue(value: unknown): asserts value is string {
  if (typeof value !== "string") throw new InvalidArgumentError(`a stored value must be a string, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map((v) => typeof v).join(", ")}]`;
  return value === null ? "null" : typeof value;
}

/** Whether `key` starts with the segments of `prefix`. */
export function hasPrefix(key: StorageKey, prefix: StorageKey): boolean {
  return prefix.length <= key.length && prefix.every((segment, i) => key[i] === segment);
}

/** Orders keys segment by segment, each compared by UTF-16 code units (IndexedDB's order). */
export function compareKeys(a: StorageKey, b: StorageKey): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    if (a[i] !== b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return a.length - b.length;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Whether `text` holds half of a UTF-16 surrogate pair alone (text that UTF-8 cannot carry). */
export function hasLoneSurrogate(text: string): boolean {
  const wellFormed = (text as { isWellFormed?: () => boolean }).isWellFormed;
  return typeof wellFormed === "function" ? !wellFormed.call(text) : LONE_SURROGATE.test(text);
}

/** The name of a DOMException-like error, if it has one. */
export function errorName(error: unknown): string | undefined {
  return error && typeof error === "object" && "name" in error && typeof error.name === "string" ? error.name : undefined;
}

/** The storage's own error as a `StorageError` (a quota error as `reason: "quota"`). */
export function storageError(action: string, error: unknown, reason?: StorageFailure): StorageError {
  if (error instanceof StorageError) return error;
  const name = errorName(error);
  const found: StorageFailure =
    reason ??
    (name === "QuotaExceededError" || (error as { code?: unknown })?.code === "ENOSPC" || (error as { code?: unknown })?.code === "EDQUOT"
      ? "quota"
      : name === "InvalidStateError"
        ? "closed"
        : name === "AbortError"
          ? "aborted"
          : "failed");
  const detail = error instanceof Error || (error && typeof error === "object" && "message" in error) ? (error as Error).message : String(error);
  const what = found === "quota" ? "the storage is full" : found === "closed" ? "the database is closed" : detail;
  return new StorageError(`${action} failed: ${what}${what === detail ? "" : ` (${name ?? "error"}: ${detail})`}`, { reason: found, cause: error });
}
