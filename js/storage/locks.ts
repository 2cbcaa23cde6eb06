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
  request<T>(name: string, options: { mode: "exclusive" | "shared" }, fn: () => Promise<T>): Promise<T>;
  query(): Promise<{ held?: Array<{ name?: string }> }>;
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

/** A save another tab announced: its commit, and the id of the storage it was made in (`undefined`: unknown). */
export interface Announced {
  storage: string | undefined;
  commit: number;
}

/**
 * The latest save of a lock's holder, published through the lock manager itself. A tab's copy of
 * localStorage catches up with another tab's writes only as it runs the events that carry them,
 * and a BroadcastChannel message can arrive after the lock it was sent under has passed to this
 * tab: a tab that then wrote from its stale copy would overwrite the other's save. So a writer,
 * still holding the session's lock, takes a shared lock named after its save (`name#saved:T:S:N`,
 * T the session's creation time, S the id of the storage it was saved in),
 * and the next holder reads the newest N from `navigator.locks.query()`, which the lock manager
 * answers in order with the grants. It is held until this realm publishes a newer save of the
 * same name, or goes away: a store closed right after its save must still tell the next holder.
 */
export class SaveBeacon {
  readonly #held = new Map<string, () => void>();

  /**
   * Publishes save `commit` of `name` (call it holding `name`'s lock); a no-op without Web Locks.
   * `incarnation` tells a session apart from one deleted and made again under the same id, and
   * `storage` (the store's id of its storage, `undefined` when unknown) a session of another storage.
   */
  async publish(name: string, incarnation: number, storage: string | undefined, commit: number): Promise<void> {
    const locks = webLocks();
    if (!locks) return;
    const previous = this.#held.get(name);
    await new Promise<void>((granted) => {
      locks
        .request(`${name}#saved:${incarnation}:${storage ?? ""}:${commit}`, { mode: "shared" }, () => {
          granted();
          return new Promise<void>((release) => this.#held.set(name, release));
        })
        .catch(() => granted());
    });
    previous?.();
  }

  /** The saves of `name` (of that incarnation) any tab or worker published, and the storage of each (none without Web Locks). */
  static async saves(name: string, incarnation: number): Promise<Announced[]> {
    const locks = webLocks();
    if (!locks || typeof locks.query !== "function") return [];
    const prefix = `${name}#saved:${incarnation}:`;
    const saves: Announced[] = [];
    for (const lock of (await locks.query()).held ?? []) {
      if (!lock.name?.startsWith(prefix)) continue;
      // `S:N`, or `N` alone from a version that did not scope its saves (`name#saved:T:N`).
      const rest = lock.name.slice(prefix.length);
      const at = rest.lastIndexOf(":");
      saves.push({ storage: at < 0 ? undefined : rest.slice(0, at) || undefined, commit: Number(rest.slice(at + 1)) || 0 });
    }
    return saves;
  }
}
