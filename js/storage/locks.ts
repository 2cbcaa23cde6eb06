/**
 * Mutual exclusion for the session store: the adapter's own lock where it has one (the file
 * system adapter's lock files reach other processes), Web Locks where the platform has them
 * (every tab and worker of the origin), else a lock within this JS realm.
 */
import type { StorageAdapter } from "./adapter.js";

const queues = new Map<string, Promise<unknown>>();

/** Runs `fn` once every earlier call with the same `name` in this realm has finished. */
export async function serially<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const before = queues.get(name) ?? Promise.resolve();
  const run = before.then(fn, fn);
  const settled = run.catch(() => {});
  queues.set(name, settled);
  try {
    return await run;
  } finally {
    if (queues.get(name) === settled) queues.delete(name);
  }
}

interface WebLocks {
  request<T>(name: string, options: { mode: "exclusive" }, fn: () => Promise<T>): Promise<T>;
}

function webLocks(): WebLocks | undefined {
  const locks = (globalThis as { navigator?: { locks?: WebLocks } }).navigator?.locks;
  return locks && typeof locks.request === "function" ? locks : undefined;
}

/** Runs `fn` holding the lock `name`: a Web Lock where the platform has them, else a lock of this realm. */
export function platformLock<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const locks = webLocks();
  if (locks) return locks.request(name, { mode: "exclusive" }, fn);
  return serially(name, fn);
}

/** Runs `fn` holding the lock `name` of `adapter`'s storage. */
export function withLock<T>(adapter: StorageAdapter, name: string, fn: () => Promise<T>): Promise<T> {
  if (typeof adapter.lock === "function") return adapter.lock(name, fn);
  return platformLock(name, fn);
}

/** Which kind of lock `withLock` uses for `adapter`. */
export function lockKind(adapter: StorageAdapter): "adapter" | "web-locks" | "realm" {
  return typeof adapter.lock === "function" ? "adapter" : webLocks() ? "web-locks" : "realm";
}
