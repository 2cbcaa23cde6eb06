/**
 * Where the session store keeps each session's records, and the records it keeps beside them.
 * The layout of a session's own records is the core's (`src/session/records`).
 */
import type { StoredRecord } from "./wasm.js";
import { InvalidArgumentError } from "./errors.js";
import type { StorageKey } from "./storage/adapter.js";

export const metaKey = (id: string): StorageKey => ["s", id];
export const dataPrefix = (id: string): StorageKey => ["r", id];
/**
 * The records the store keeps beside a session's (none is read by the core, each removed with
 * the session): the marks of its last saves, its appends made with a key, its compaction lease.
 */
export const SIDE_SPACES = ["w", "k", "lease"] as const;
/**
 * Where a save to a transactional adapter leaves its mark (a random id), in the same transaction:
 * a save whose outcome was unknown (the connection broke as it committed) landed if and only if
 * its mark is there. Slots go round: a mark stays readable for this many saves of the session.
 */
export const MARK_SLOTS = 64;
export const markKey = (id: string, commit: number): StorageKey => ["w", id, String(commit % MARK_SLOTS).padStart(2, "0")];
/** The record of an append made with the caller's key: the ids its messages got. */
export const appendKey = (id: string, key: string): StorageKey => ["k", id, key];
/** The compaction lease of a session: who holds it, until when. */
export const leaseKey = (id: string): StorageKey => ["lease", id];
/** How long a compaction lease lasts unless renewed (its holder renews it every third of this). */
export const LEASE_MS = 60_000;
/**
 * The record holding the id (random) of the storage's copy of session `id`: written before the
 * session's first record when a store adds or imports it, never while it is stored, and removed
 * with it. A tab that sees the session reads the id every other tab reads (one storage-wide id
 * could differ between two tabs whose copies of localStorage lag); a session of the same id and
 * creation time in another storage (one file imported into both) has another.
 */
export const scopeKey = (id: string): StorageKey => ["storage", id];
/** A new id for `scopeKey`'s record (JSON text, as every record's value is). */
export const newScope = (id: string): StoredRecord => ({ key: scopeKey(id), value: JSON.stringify(newId().replace(/^s-/, "storage-")) });
/** The id a `scopeKey` record holds, or `undefined`: absent or not an id. */
export function storedStorageId(value: string | undefined): string | undefined {
  try {
    const id: unknown = value === undefined ? undefined : JSON.parse(value);
    return typeof id === "string" && id !== "" ? id : undefined;
  } catch {
    return undefined; // damaged: unscoped, as one never made
  }
}

export function newId(): string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  const random = crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;
  return `s-${random}`;
}

export function checkId(id: unknown): asserts id is string {
  if (typeof id !== "string" || id === "") throw new InvalidArgumentError(`a session id must be a non-empty string, got ${JSON.stringify(id)}`);
}
