// Storage that fails on a schedule, and records sealed as the core seals them (for hostile files):
// helpers of tests/js/store-adversarial.test.mjs.
import { MemoryStorageAdapter } from "context-compactor";

/** FNV-1a 64 over UTF-8 bytes, as src/ids.rs computes the records' checksums. */
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

/** The body of a version 2 record. */
export const bodyOf = (record) => JSON.parse(record.value).body;

/** An adapter that passes each call to `inner`, except the methods `overrides` replaces. */
export function wrapping(inner, overrides = {}) {
  const adapter = { name: inner.name };
  for (const method of ["load", "save", "remove", "loadRange", "removeRange", "saveBatch"]) adapter[method] = (...args) => inner[method](...args);
  return Object.assign(adapter, overrides);
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
