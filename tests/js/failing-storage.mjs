// Storage that fails on a schedule, and records sealed as the core seals them (for hostile files):
// helpers of tests/js/store-adversarial.test.mjs.
import { MemoryStorageAdapter } from "context-compactor";

/** FNV-1a 64 over UTF-8 bytes, as src/util/ids.rs computes the records' checksums. */
function fnv1a64(text) {
  let hash = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(text, "utf8")) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  return hash.toString(16).padStart(16, "0");
}

/** A record of version 2 at `key` holding `body`, with a checksum that verifies (anyone can compute one). */
export function seal(key, body) {
  const text = JSON.stringify(body);
  const sum = fnv1a64(`${key.map((s) => `${s}\x1f`).join("")}\x1e2\x1e${text}`);
  return { key, value: `{"v":2,"sum":"${sum}","body":${text}}` };
}

const MASK = (1n << 64n) - 1n;
const [P1, P2, P3, P4, P5] = [0x9e3779b185ebca87n, 0xc2b2ae3d27d4eb4fn, 0x165667b19e3779f9n, 0x85ebca77c2b2ae63n, 0x27d4eb2f165667c5n];
const rotl = (x, r) => ((x << BigInt(r)) | (x >> BigInt(64 - r))) & MASK;
const round = (acc, lane) => (rotl((acc + lane * P2) & MASK, 31) * P1) & MASK;

/** XXH64 (seed 0) of `bytes`, as src/session/records computes the checksums of version 3. */
function xxh64(bytes) {
  const le = (at, n) => bytes.subarray(at, at + n).reduceRight((v, byte) => (v << 8n) | BigInt(byte), 0n);
  let i = 0;
  let h = P5;
  if (bytes.length >= 32) {
    const v = [(P1 + P2) & MASK, P2, 0n, (0n - P1) & MASK];
    for (; i + 32 <= bytes.length; i += 32) for (let k = 0; k < 4; k++) v[k] = round(v[k], le(i + 8 * k, 8));
    h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & MASK;
    for (const lane of v) h = (((h ^ round(0n, lane)) * P1) + P4) & MASK;
  }
  h = (h + BigInt(bytes.length)) & MASK;
  for (; i + 8 <= bytes.length; i += 8) h = (rotl(h ^ round(0n, le(i, 8)), 27) * P1 + P4) & MASK;
  if (i + 4 <= bytes.length) (h = (rotl(h ^ ((le(i, 4) * P1) & MASK), 23) * P2 + P3) & MASK), (i += 4);
  for (; i < bytes.length; i++) h = (rotl(h ^ ((BigInt(bytes[i]) * P5) & MASK), 11) * P1) & MASK;
  h = ((h ^ (h >> 33n)) * P2) & MASK;
  h = ((h ^ (h >> 29n)) * P3) & MASK;
  return (h ^ (h >> 32n)).toString(16).padStart(16, "0");
}

/** The record version the core writes (`RECORD_VERSION`). */
export const CURRENT_VERSION = 5;

/** A record of the current version at `key` holding `body`, with a checksum that verifies. */
export function sealCurrent(key, body) {
  const text = JSON.stringify(body);
  const sum = xxh64(Buffer.from(`${key.map((s) => `${s}\x1f`).join("")}\x1e${CURRENT_VERSION}\x1e${text}`, "utf8"));
  return { key, value: `{"v":${CURRENT_VERSION},"sum":"${sum}","body":${text}}` };
}

/** The body of a record. */
export const bodyOf = (record) => JSON.parse(record.value).body;

/** An adapter that passes each call to `inner`, except the methods `overrides` replaces. */
export function wrapping(inner, overrides = {}) {
  const adapter = { name: inner.name };
  for (const method of ["load", "save", "remove", "loadRange", "removeRange", "saveBatch"]) adapter[method] = (...args) => inner[method](...args);
  return Object.assign(adapter, overrides);
}

/** A memory adapter that throws once the sessions were listed `limit` times: a loop over them ends. */
export function listingAtMost(limit) {
  const inner = new MemoryStorageAdapter();
  let listings = 0;
  return wrapping(inner, {
    loadRange: async (prefix) => {
      if (prefix.length === 1 && prefix[0] === "s" && ++listings > limit) throw new Error(`listed the sessions ${limit} times`);
      return inner.loadRange(prefix);
    },
  });
}

/**
 * A memory adapter whose writes fail on a schedule: `plan(n, op)` for the n-th write operation
 * (a save, a remove or a batch) says what happens: undefined (it works), "fail" (nothing lands,
 * it throws), "landed" (everything lands, then it throws: a commit whose answer was lost),
 * { prefix: k } (the first k writes land, then it throws), or "hang" (the first writes land and
 * the promise never settles: a page closed during the write).
 */
export function failing(data, plan, { batch = true } = {}) {
  const inner = new MemoryStorageAdapter({ data });
  let n = 0;
  const boom = () => Object.assign(new Error("the storage refused the write"), { name: "QuotaExceededError" });
  const apply = async (writes) => {
    const what = plan(++n, writes);
    if (what === undefined) return inner.saveBatch(writes);
    if (what === "fail") throw boom();
    if (what === "landed") {
      await inner.saveBatch(writes);
      throw boom();
    }
    if (what === "hang") {
      await inner.saveBatch(writes.slice(0, Math.max(0, writes.length - 1)));
      return new Promise(() => {});
    }
    await inner.saveBatch(writes.slice(0, what.prefix));
    throw boom();
  };
  const adapter = wrapping(inner, { save: (key, value) => apply([{ key, value }]), remove: (key) => apply([{ key, value: undefined }]) });
  if (batch) adapter.saveBatch = (writes) => apply(writes);
  else delete adapter.saveBatch;
  return adapter;
}

/** A record of version 2 at `key` whose body is `text`, exactly (numbers JS cannot hold). */
export function sealRaw(key, text) {
  const sum = fnv1a64(`${key.map((s) => `${s}\x1f`).join("")}\x1e2\x1e${text}`);
  return { key, value: `{"v":2,"sum":"${sum}","body":${text}}` };
}

/**
 * `inner` with locks that first run the hook last given to `beforeNextLock` (once): another tab
 * that saves, or takes the lock, right before this one does.
 */
export async function hookedLocks(inner) {
  const { serially } = await import("../../dist/storage/locks.js");
  let hook;
  const adapter = wrapping(inner, {
    lock: async (name, fn) => {
      const other = hook;
      hook = undefined;
      await other?.();
      return serially(name, fn);
    },
  });
  return { adapter, beforeNextLock: (fn) => (hook = fn) };
}
