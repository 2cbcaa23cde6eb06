/**
 * The session store: sessions that survive a reload, over any `StorageAdapter`. A chat app opens
 * one store, creates or opens sessions by id, and uses them as it would a `Session`: the calls
 * made through a `StoredSession` are saved automatically (what changed: an appended message writes
 * that message's record, and every 16th the session's meta record), or at `await store.flush()`.
 *
 * Each save runs under the session's lock (Web Locks across tabs, lock files across processes):
 * it first reads the stored meta record and the record after this session's last message, and if
 * another tab or process saved since, applies what it saved (this session's unsaved messages then
 * follow theirs: `onchange` reports the new ids).
 * A save that fails (a full quota, a closed database) throws a `StorageError`, leaves the stored
 * session as it was, and keeps the unsaved changes in memory for the next save.
 */
import { Session } from "./guarded.js";
import type { SessionOptions, StoredRecord } from "./wasm.js";
import { ConflictError, ContextCompactorError, InvalidArgumentError, NotFoundError, StorageError } from "./errors.js";
import type { StorageAdapter, StorageKey } from "./storage/adapter.js";
import { withLock } from "./storage/locks.js";
import { SaveAnnouncements, type StoreMessage } from "./store-announce.js";
import { readSessionFile, sameExport, sessionFile } from "./store-files.js";
import { readOn, withStorageErrors, write, writeChecked } from "./store-io.js";
import { listSessions, parentCycle, type StoredSessionInfo } from "./store-listing.js";
import { checkId, dataPrefix, metaKey, newId, newScope, scopeKey, SIDE_SPACES, storedStorageId } from "./store-records.js";
import { StoredSession } from "./stored-session.js";

export { StoredSession } from "./stored-session.js";
export type { StoredSessionEvent } from "./stored-session.js";
export type { StoredSessionInfo } from "./store-listing.js";

const DAY_MS = 86_400_000;

export interface SessionStoreOptions {
  /**
   * Save what changed after the calls made through a `StoredSession`: `true` (the default) once
   * the current task's calls are done, `{ delayMs }` at most that often, `false` only at `flush()`.
   */
  autosave?: boolean | { delayMs: number };
  /** Tell other tabs (and workers) of each save through a `BroadcastChannel`, so that their copies catch up (default true). */
  broadcast?: boolean;
  /** Called with an automatic save's error (default: `console.error`); the next `flush()` throws it again if it persists. */
  onError?: (error: unknown, session: StoredSession) => void;
  /** The clock (milliseconds since the Unix epoch) for `createdAt`, `updatedAt` and `cleanup`. */
  now?: () => number;
}

export interface CreateSessionOptions extends SessionOptions {
  title?: string;
}

export class SessionStore {
  readonly adapter: StorageAdapter;
  /** @internal The adapter as the store uses it (`withStorageErrors`). */
  readonly io: StorageAdapter;
  readonly #options: SessionStoreOptions;
  readonly #open = new Map<string, StoredSession>();
  readonly #opening = new Map<string, Promise<StoredSession>>();
  readonly #announcements: SaveAnnouncements;
  #closed = false;

  private constructor(adapter: StorageAdapter, options: SessionStoreOptions) {
    this.adapter = adapter;
    this.io = withStorageErrors(adapter);
    this.#options = options;
    this.#announcements = new SaveAnnouncements(this.name, options.broadcast !== false, (message) => this.#heard(message));
  }

  /** A store over `adapter` (an `IndexedDBAdapter`, `LocalStorageAdapter`, `FileSystemAdapter`, `MemoryStorageAdapter` or your own). */
  static async open(adapter: StorageAdapter, options: SessionStoreOptions = {}): Promise<SessionStore> {
    for (const method of ["load", "save", "remove", "loadRange", "removeRange"] as const) {
      if (typeof adapter?.[method] !== "function") throw new InvalidArgumentError(`a storage adapter needs a ${method}() method`);
    }
    return new SessionStore(adapter, options);
  }

  /** The storage's name (the adapter's), which names the locks and the broadcast channel. */
  get name(): string {
    return this.adapter.name ?? "default";
  }

  /** @internal */
  now(): number {
    return this.#options.now?.() ?? Date.now();
  }

  /** @internal */
  get options(): SessionStoreOptions {
    return this.#options;
  }

  /** @internal Runs `fn` holding session `id`'s lock. */
  locked<T>(id: string, fn: () => Promise<T>): Promise<T> {
    return withLock(this.adapter, this.#lockName(id), fn);
  }

  /**
   * Makes `id` free for a new session (the caller holds its lock): a `ConflictError` if it is
   * stored (unless `isSame`, given its meta record, says the stored one is the session to write:
   * then it resolves to `false`); else any records left under it (a delete cut short) are removed
   * first, since a tail of the old session's message records would otherwise follow the new meta record.
   */
  async #claim(id: string, isSame?: (meta: string) => Promise<boolean>): Promise<boolean> {
    const meta = await this.io.load(metaKey(id));
    if (meta === undefined) {
      await this.io.removeRange(dataPrefix(id));
      // A deleted session's keys must not make a new one's appends look made already.
      for (const space of SIDE_SPACES) await this.io.removeRange([space, id]);
      // Before the session's first record: whoever sees the session sees its id.
      await writeChecked(this.io, [newScope(id)], `saving session ${id}'s storage id`);
      return true;
    }
    if (isSame && (await isSame(meta))) return false;
    throw new ConflictError(`a session ${JSON.stringify(id)} is already stored`);
  }

  #lockName(id: string): string {
    return `context-compactor:${this.name}:${id}`;
  }

  #check(): void {
    if (this.#closed) throw new ConflictError("this session store is closed");
  }

  /**
   * @internal Runs `read` (the caller holds session `id`'s lock) until the commit it finds
   * reaches the latest save other tabs announced: a tab's copy of localStorage catches up with
   * theirs only as it runs the events that carry their writes. `read` resolves to the commit
   * and creation time of what it found (`undefined`: the session is not stored). Resolves to the
   * id of the storage's copy of the session (`scopeKey`), read with `read`'s first reads: only
   * saves announced of that copy (or of one unknown) are waited for.
   */
  async caughtUp(id: string, read: () => Promise<{ commit: number; createdAt: number } | undefined>): Promise<string | undefined> {
    // Read once: the copy a tab sees the session in shows the id written before its first record.
    const scoping = this.io.load(scopeKey(id)).then(storedStorageId, () => undefined);
    let announced: number | undefined;
    for (let waited = 0; ; waited += 5) {
      const found = await read();
      const storage = await scoping;
      if (found === undefined) return storage;
      announced ??= await this.#announcements.latest(this.#lockName(id), id, found.createdAt, storage);
      if (found.commit >= announced) return storage;
      if (waited >= 2000) {
        throw new StorageError(`this tab's storage does not show save ${announced} of session ${JSON.stringify(id)}, which another tab announced`, { reason: "failed" });
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /**
   * @internal The records of `keys` up to the first absent one (a session's tail), read together
   * (`readOn` of `store-io.ts`).
   */
  readOn(keys: StorageKey[]): Promise<StoredRecord[]> {
    return readOn(this.io, keys);
  }

  /** A new session (`new Session(options)`) with a title, saved at once. Its id must not be stored yet (default: a random one). */
  async create(options: CreateSessionOptions = {}): Promise<StoredSession> {
    this.#check();
    const { title, ...sessionOptions } = options;
    const session = new Session({ ...sessionOptions, id: sessionOptions.id ?? newId() });
    try {
      if (title !== undefined) session.title = title;
      return await this.add(session);
    } catch (error) {
      session.free();
      throw error;
    }
  }

  /**
   * Stores a `Session` made elsewhere (a sub-agent from `spawnSubagent`, one from `Session.import`)
   * under its own id, which must not be stored yet; from then on it is saved like the others.
   */
  async add(session: Session): Promise<StoredSession> {
    this.#check();
    const id = session.id;
    if (this.#open.has(id) || this.#opening.has(id)) throw new ConflictError(`session ${JSON.stringify(id)} is already open in this store`);
    const handle = new StoredSession(this, session);
    const adding = this.locked(id, async () => {
      await this.#claim(id);
      return handle.saveLocked();
    }).then((finish) => {
      finish();
      return handle;
    });
    this.#opening.set(id, adding);
    try {
      await adding;
      this.#open.set(id, handle);
      return handle;
    } finally {
      this.#opening.delete(id);
    }
  }

  /** The stored session `id` (the thread id), loaded and checked; the same object while it is open. */
  async open(id: string): Promise<StoredSession> {
    this.#check();
    checkId(id);
    const open = this.#open.get(id) ?? this.#opening.get(id);
    if (open) return open;
    const opening = this.locked(id, async () => {
      let session: Session | undefined;
      try {
        await this.caughtUp(id, async () => {
          session?.free();
          session = undefined;
          // Both at once (one round trip, not two): the lock keeps other tabs' writes out between them.
          const [meta, data] = await Promise.all([this.io.load(metaKey(id)), this.io.loadRange(dataPrefix(id))]);
          if (meta === undefined) throw new NotFoundError(`no session ${JSON.stringify(id)} is stored`);
          session = Session.load([...data, { key: metaKey(id), value: meta }]);
          return { commit: session.savedCommit, createdAt: session.createdAt ?? 0 };
        });
      } catch (error) {
        session?.free();
        throw error;
      }
      return new StoredSession(this, session as Session);
    });
    this.#opening.set(id, opening);
    try {
      const handle = await opening;
      this.#open.set(id, handle);
      return handle;
    } finally {
      this.#opening.delete(id);
    }
  }

  /** The sessions open in this store. */
  get openSessions(): StoredSession[] {
    return [...this.#open.values()];
  }

  /** Every stored session, most recently updated first, from their meta records and the few message records after them. */
  async list(): Promise<StoredSessionInfo[]> {
    this.#check();
    return listSessions(this.io);
  }

  /**
   * Removes session `id` (its meta record, then its other records) and, unless `children: false`, its
   * sub-agents. Resolves to whether it was stored.
   */
  async delete(id: string, options: { children?: boolean } = {}): Promise<boolean> {
    this.#check();
    checkId(id);
    if (options.children !== false) {
      // Its sub-agents and theirs, from one listing: a set, since an imported meta record may name
      // any parent (itself, a child of its own).
      const sessions = await this.list();
      const tree = new Set([id]);
      for (const parent of tree) for (const session of sessions) if (session.parentId === parent) tree.add(session.id);
      tree.delete(id);
      for (const child of [...tree].reverse()) await this.#remove([child]);
    }
    return (await this.#remove([id])).length > 0;
  }

  /**
   * Removes sessions `ids` (a session, or a cycle of parents), each one's meta record, then its other
   * records (a delete cut short leaves records no meta record names: nothing lists them, and
   * `#claim` clears them), holding all their locks, unless `keep`, called with each stored meta
   * record, says one of them is to be kept: then none is removed. Resolves to the ids removed.
   */
  async #remove(ids: string[], keep?: (meta: StoredRecord) => Promise<boolean>): Promise<string[]> {
    const found = await this.#lockedAll(ids, async () => {
      const stored = await Promise.all(
        ids.map(async (id) => {
          const [meta, scope] = await Promise.all([this.io.load(metaKey(id)), this.io.load(scopeKey(id))]);
          return { id, meta, storage: storedStorageId(scope) };
        }),
      );
      if (keep) for (const { id, meta } of stored) if (meta !== undefined && (await keep({ key: metaKey(id), value: meta }))) return [];
      for (const { id } of stored) {
        await this.io.remove(metaKey(id));
        await this.io.removeRange(dataPrefix(id));
        for (const space of SIDE_SPACES) await this.io.removeRange([space, id]);
        await this.io.remove(scopeKey(id));
      }
      return stored;
    });
    for (const { id, meta, storage } of found) {
      if (keep && meta === undefined) continue;
      this.#open.get(id)?.forget("deleted");
      this.#announcements.post({ id, deleted: true, storage });
    }
    return found.filter((s) => s.meta !== undefined).map((s) => s.id);
  }

  /** Runs `fn` holding the locks of sessions `ids`, taken in one order (sorted) so that two callers never wait for each other. */
  #lockedAll<T>(ids: string[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(ids)].sort();
    const take = (i: number): Promise<T> => (i === sorted.length ? fn() : this.locked(sorted[i], () => take(i + 1)));
    return take(0);
  }

  /** Sets session `id`'s title (what `list()` shows), and saves it. */
  async rename(id: string, title: string): Promise<void> {
    const wasOpen = this.#open.has(id);
    const handle = await this.open(id);
    try {
      handle.session.title = title;
      await handle.flush();
    } finally {
      if (!wasOpen) await handle.close();
    }
  }

  /**
   * Deletes the sessions not updated for `olderThanMs` (default 7 days) and
   * not open in this store, with their sub-agents; resolves to the ids deleted.
   */
  async cleanup(options: { olderThanMs?: number; now?: number } = {}): Promise<string[]> {
    const olderThanMs = options.olderThanMs ?? 7 * DAY_MS;
    const now = options.now ?? this.now();
    // (A NaN cutoff would find every session old.)
    if (typeof olderThanMs !== "number" || !(olderThanMs >= 0)) throw new InvalidArgumentError(`olderThanMs must be a number of milliseconds, got ${String(olderThanMs)}`);
    if (typeof now !== "number" || !Number.isFinite(now)) throw new InvalidArgumentError(`now must be a time in milliseconds since 1970, got ${String(now)}`);
    const cutoff = now - olderThanMs;
    const sessions = await this.list();
    const stored = new Set(sessions.map((s) => s.id));
    const deleted: string[] = [];
    // Still old once its lock is held: another tab may have saved it since the listing.
    // (Damaged since: kept, as the listing keeps one with a `problem`.)
    const updatedSince = async (meta: StoredRecord) => {
      try {
        return Session.info(meta, await this.readOn(Session.tailKeys(meta))).updatedAt >= cutoff;
      } catch (error) {
        if (error instanceof ContextCompactorError) return true;
        throw error;
      }
    };
    // A cycle's sessions are removed together, each re-read under its lock; their sub-agents go
    // with them, however recent.
    const remove = async (ids: string[], keep?: typeof updatedSince) => {
      const removed = await this.#remove(ids, keep);
      if (keep && removed.length === 0) return;
      const gone = keep ? removed : ids;
      deleted.push(...gone);
      for (const id of gone) for (const child of sessions) if (child.parentId === id && !deleted.includes(child.id) && !ids.includes(child.id)) await remove([child.id]);
    };
    // A sub-agent goes with its parent; on its own only when its parent is gone. An imported meta
    // record may name any parent: a tree whose top is a cycle of parents (a session its own parent)
    // has no such root, so each session of the cycle is one, old when they all are.
    const parentOf = new Map(sessions.map((s) => [s.id, s.parentId]));
    const byId = new Map(sessions.map((s) => [s.id, s]));
    for (const session of sessions) {
      const roots = session.parentId === null || !stored.has(session.parentId) ? [session.id] : parentCycle(session.id, parentOf);
      if (roots.length === 0 || deleted.includes(session.id)) continue;
      const removable = (s: StoredSessionInfo | undefined) => s !== undefined && !s.problem && s.updatedAt < cutoff && !this.#open.has(s.id);
      if (!roots.every((root) => removable(byId.get(root)))) continue;
      await remove(roots, updatedSince);
    }
    return deleted;
  }

  /** Session `id` as one file (JSON text): its records as stored, checksums included. */
  async exportSession(id: string): Promise<string> {
    checkId(id);
    await this.#open.get(id)?.flush();
    const records = await this.locked(id, async () => {
      const [meta, data] = await Promise.all([this.io.load(metaKey(id)), this.io.loadRange(dataPrefix(id))]);
      if (meta === undefined) throw new NotFoundError(`no session ${JSON.stringify(id)} is stored`);
      return [...data, { key: metaKey(id), value: meta }];
    });
    Session.load(records).free(); // what is exported loads
    return sessionFile(id, records);
  }

  /**
   * Stores a session from a file: `exportSession`'s, or the JSON of `Session.export()` (what was
   * kept in localStorage before this store). Checked whole first: its records, its token counts
   * against a fresh count, its commit. A session with the same id already stored is a
   * `ConflictError`, unless `replace: true`: then it is replaced in one batch (its sub-agents
   * stay), and a failed write leaves it as it was where the adapter's `saveBatch` is all or nothing.
   */
  async importSession(text: string, options: { replace?: boolean } = {}): Promise<StoredSession> {
    this.#check();
    const { id, records, legacy } = readSessionFile(text, () => this.now());
    const meta = records.filter((r) => r.key.length === 2);
    const data = records.filter((r) => r.key.length !== 2);
    // A retry of an import whose write landed though it was reported failed finds this file's
    // session stored: the import is done. (A `Session.export()` file's records carry the time of
    // import, so there the session's export is compared.)
    const isSame = async (storedMeta: string): Promise<boolean> => {
      const stored = [...(await this.io.loadRange(dataPrefix(id))), { key: metaKey(id), value: storedMeta }];
      if (legacy) return sameExport(stored, text);
      const values = new Map(stored.map((r) => [JSON.stringify(r.key), r.value]));
      return values.size === records.length && records.every((r) => values.get(JSON.stringify(r.key)) === r.value);
    };
    await this.locked(id, async () => {
      if (!options.replace) {
        // Read back when the write fails: one that landed all the same is an import done.
        if (await this.#claim(id, isSame)) await writeChecked(this.io, [...data, ...meta], `importing session ${id}`);
        return;
      }
      // The stored session's meta record first (a batch cut short then leaves no half session),
      // and every record of it the file does not overwrite (a tail of its would follow the new one);
      // the new session's storage id before its records, as `#claim` writes it.
      const writing = new Set(records.map((r) => JSON.stringify(r.key)));
      const stale = (await this.io.loadRange(dataPrefix(id))).filter((e) => !writing.has(JSON.stringify(e.key)));
      const removals = [metaKey(id), ...stale.map((e) => e.key)].map((key) => ({ key, value: undefined }));
      await write(this.io, [...removals, newScope(id), ...data, ...meta], `importing session ${id} over the stored one`);
    });
    if (options.replace) {
      this.#open.get(id)?.forget("deleted");
      this.#announcements.post({ id, deleted: true });
    }
    return this.open(id);
  }

  /** Saves every open session's changes. */
  async flush(): Promise<void> {
    await Promise.all([...this.#open.values()].map((s) => s.flush()));
  }

  /** Saves and closes every open session; the adapter stays open (it is yours). */
  async close(): Promise<void> {
    if (this.#closed) return;
    try {
      await Promise.all([...this.#open.values()].map((s) => s.close()));
    } finally {
      this.#closed = true;
      this.#announcements.close();
    }
  }

  /** @internal */
  forget(handle: StoredSession): void {
    if (this.#open.get(handle.id) === handle) this.#open.delete(handle.id);
  }

  /**
   * @internal Tells the other tabs (the caller holds session `id`'s lock); `createdAt` tells a
   * session from one deleted and made again, `storage` (what `caughtUp` read) its copy in this storage.
   */
  async saved(id: string, createdAt: number, storage: string | undefined, commit: number): Promise<void> {
    await this.#announcements.publish(this.#lockName(id), id, createdAt, storage, commit);
  }

  /** Another store announced `message` (what it says is recorded): this store's copy of the session catches up. */
  #heard(message: StoreMessage): void {
    // What was saved or deleted may be another storage's session of the same id: a sync reads this
    // one's (and closes the handle if the session is gone from it), and waits only for saves of its copy.
    const handle = this.#open.get(message.id);
    if (handle && (message.deleted || (typeof message.commit === "number" && message.commit > handle.savedCommit))) handle.sync().catch((error) => handle.report(error));
  }
}
