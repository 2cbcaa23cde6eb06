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
// The guarded class (js/guard.ts): objects `new Session` makes here must pass its checks.
import { Session } from "./api.js";
import type { ConversationHistory, MemoryModule, PullReport, SessionInfo, SessionOptions, StoredRecord } from "./wasm.js";
import { ConflictError, ContextCompactorError, CorruptRecordError, InvalidArgumentError, LeaseHeldError, NotFoundError, StorageError } from "./errors.js";
import { compact, type CompactOptions } from "./summarize.js";
import type { BuildResult, Format, MessageInput } from "./wasm.js";
import { storageError, type StorageAdapter, type StorageKey, type StorageWrite } from "./storage/adapter.js";
import { SaveBeacon, withLock, type Announced } from "./storage/locks.js";

/** Where the store keeps each session's records (the layout is the core's: see `src/session/records`). */
const metaKey = (id: string): StorageKey => ["s", id];
const dataPrefix = (id: string): StorageKey => ["r", id];
const DAY_MS = 86_400_000;
/**
 * The records the store keeps beside a session's (none is read by the core, each removed with
 * the session): the marks of its last saves, its appends made with a key, its compaction lease.
 */
const SIDE_SPACES = ["w", "k", "lease"] as const;
/**
 * Where a save to a transactional adapter leaves its mark (a random id), in the same transaction:
 * a save whose outcome was unknown (the connection broke as it committed) landed if and only if
 * its mark is there. Slots go round: a mark stays readable for this many saves of the session.
 */
const MARK_SLOTS = 64;
const markKey = (id: string, commit: number): StorageKey => ["w", id, String(commit % MARK_SLOTS).padStart(2, "0")];
/** The record of an append made with the caller's key: the ids its messages got. */
const appendKey = (id: string, key: string): StorageKey => ["k", id, key];
/** The compaction lease of a session: who holds it, until when. */
const leaseKey = (id: string): StorageKey => ["lease", id];
/** How long a compaction lease lasts unless renewed (its holder renews it every third of this). */
const LEASE_MS = 60_000;
/** `exportSession`'s file: every record of one session, as stored. */
const EXPORT_FORMAT = "context-compactor/stored-session";

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

/** A stored session as `list()` shows it; `problem` is set (and the counts are 0) when its meta record is damaged. */
export interface StoredSessionInfo extends SessionInfo {
  problem?: ContextCompactorError;
}

export type StoredSessionEvent =
  /** This session's changes were saved as `commit`. */
  | { type: "saved"; commit: number }
  /** Another tab or process saved this session; its changes are now here (`report.renumbered`: this session's unsaved messages that moved after them). */
  | { type: "pulled"; report: PullReport }
  /** The session was deleted from the storage (here or elsewhere). */
  | { type: "deleted" };

interface StoreMessage {
  id: string;
  commit?: number;
  /** The saved session's creation time: a session deleted and made again under the same id is another. */
  createdAt?: number;
  /**
   * The id of the storage's copy of the session saved or deleted (its `scopeKey` record; absent:
   * unknown): another storage behind an adapter of the same name ("default" when unnamed) may
   * hold a session of the same id and creation time, one file imported into both.
   */
  storage?: string;
  deleted?: boolean;
}

/** Where `#announced` keeps the latest save announced of session `id` made at `createdAt` in `storage`. */
const announcedKey = (id: string, createdAt: number | undefined, storage: string | undefined) => JSON.stringify([id, createdAt ?? null, storage ?? null]);
/**
 * The record holding the id (random) of the storage's copy of session `id`: written before the
 * session's first record when a store adds or imports it, never while it is stored, and removed
 * with it. A tab that sees the session reads the id every other tab reads (one storage-wide id
 * could differ between two tabs whose copies of localStorage lag); a session of the same id and
 * creation time in another storage (one file imported into both) has another.
 */
const scopeKey = (id: string): StorageKey => ["storage", id];
/** A new id for `scopeKey`'s record (JSON text, as every record's value is). */
const newScope = (id: string): StoredRecord => ({ key: scopeKey(id), value: JSON.stringify(newId().replace(/^s-/, "storage-")) });
/** The id a `scopeKey` record holds, or `undefined`: absent or not an id. */
function storedStorageId(value: string | undefined): string | undefined {
  try {
    const id: unknown = value === undefined ? undefined : JSON.parse(value);
    return typeof id === "string" && id !== "" ? id : undefined;
  } catch {
    return undefined; // damaged: unscoped, as one never made
  }
}
/** The latest of `saves` made in the storage `storage` (`undefined`: any) or in one unknown. */
const latestOf = (saves: Announced[], storage?: string) =>
  Math.max(0, ...saves.filter((save) => storage === undefined || save.storage === undefined || save.storage === storage).map((save) => save.commit));

/**
 * How many sessions `list()` reads at a time: enough to overlap the storage's round trips, few
 * enough that a store of hundreds of sessions does not open hundreds of requests at once (each
 * session's tail keys are read together, a few per session).
 */
const LIST_CONCURRENCY = 8;

/** `fn` of each item, at most `limit` running at once; the results in the items' order. */
async function mapConcurrently<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

function newId(): string {
  const crypto = (globalThis as { crypto?: { randomUUID?: () => string } }).crypto;
  const random = crypto?.randomUUID?.() ?? `${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 12)}`;
  return `s-${random}`;
}

function checkId(id: unknown): asserts id is string {
  if (typeof id !== "string" || id === "") throw new InvalidArgumentError(`a session id must be a non-empty string, got ${JSON.stringify(id)}`);
}

/**
 * `adapter` with the errors of its reads and removals as `StorageError`s (the errors of its writes
 * `write` turns into ones that say what was being saved): an adapter of the app's own may throw
 * anything, synchronously too. What the store does with its storage goes through this.
 */
function guarded(adapter: StorageAdapter): StorageAdapter {
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
async function write(adapter: StorageAdapter, writes: StorageWrite[], action: string): Promise<void> {
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
async function writeChecked(adapter: StorageAdapter, records: StoredRecord[], action: string): Promise<void> {
  try {
    await write(adapter, records, action);
  } catch (error) {
    const last = records[records.length - 1];
    const stored = await adapter.load(last.key).catch(() => undefined);
    if (stored !== last.value) throw error;
  }
}

/**
 * What `Session.load` does not check in an imported file's records: that the token counts its
 * chunks and its summary record carry are the ones counting gives (`build` budgets with them), and
 * that its commit leaves room for the saves to come.
 */
function checkImported(session: Session, records: StoredRecord[]): void {
  const meta = metaKey(session.id);
  // (The core refuses a commit at or past 2^53; this keeps room for 2^32 saves after it.)
  if (!Number.isSafeInteger(session.savedCommit + 2 ** 32)) {
    throw new CorruptRecordError(`record ${JSON.stringify(meta)} holds commit ${session.savedCommit}, past what the saves to come can count`, { path: meta.join("/") });
  }
  const counted = session.history.tokenCount().messages;
  let recount: Session;
  try {
    recount = Session.import(session.export());
  } catch (error) {
    // What loaded imports unless a count it took as stored is not its text's: the summary's
    // (the messages' are counted again below).
    const summary = records.map((r) => r.key).filter((key) => key[2] === "summary").pop() ?? meta;
    throw new CorruptRecordError(`record ${JSON.stringify(summary)}: ${(error as Error).message}`, { path: summary.join("/") });
  }
  try {
    const fresh = recount.history.tokenCount().messages;
    const at = fresh.findIndex((tokens, i) => tokens !== counted[i]);
    if (at < 0) return;
    // The record holding it: the first chunk whose last message is at or past it, or its own.
    const keys = records.map((r) => r.key);
    const holder = keys.find((key) => key[2] === "c" && Number(key[3]) > at) ?? keys.find((key) => key[2] === "m" && Number(key[3]) === at + 1) ?? meta;
    throw new CorruptRecordError(`record ${JSON.stringify(holder)} counts message m${at + 1} as ${counted[at]} tokens, where counting gives ${fresh[at]}`, { path: holder.join("/") });
  } finally {
    recount.free();
  }
}

/** The sessions of the cycle of parents `id` is on (`parentOf` gives each stored session's parent), or none. */
function parentCycle(id: string, parentOf: Map<string, string | null>): string[] {
  const path = [id];
  for (let at = parentOf.get(id); at != null && path.length <= parentOf.size; at = parentOf.get(at)) {
    if (at === id) return path;
    path.push(at);
  }
  return [];
}

/** Whether `stored` (a session's records) loads as the session of `text`, a `Session.export()` file. */
function sameExport(stored: StoredRecord[], text: string): boolean {
  const exportOf = (records: StoredRecord[]) => {
    const session = Session.load(records);
    try {
      return JSON.stringify(session.export());
    } finally {
      session.free();
    }
  };
  try {
    return exportOf(stored) === exportOf([{ key: ["import"], value: text }]);
  } catch (error) {
    // One of a newer version is not the file's; a damaged one is reported, not hidden behind the
    // ConflictError of another session stored under the id.
    if (error instanceof ContextCompactorError && !(error instanceof CorruptRecordError)) return false;
    throw error;
  }
}

/** A proxy of `target` that calls `changed` after each method call and property set. */
function autosaving<T extends object>(target: T, changed: () => void, nested: Record<string, () => unknown> = {}): T {
  return new Proxy(target, {
    get(object, property) {
      if (typeof property === "string" && Object.prototype.hasOwnProperty.call(nested, property)) return nested[property]();
      const value = Reflect.get(object, property, object);
      if (typeof value !== "function" || property === "constructor") return value;
      return (...args: unknown[]) => {
        try {
          return (value as (...a: unknown[]) => unknown).apply(object, args);
        } finally {
          changed();
        }
      };
    },
    set(object, property, value) {
      const done = Reflect.set(object, property, value, object);
      changed();
      return done;
    },
  });
}

export class SessionStore {
  readonly adapter: StorageAdapter;
  /** @internal The adapter as the store uses it (`guarded`). */
  readonly io: StorageAdapter;
  readonly #options: SessionStoreOptions;
  readonly #open = new Map<string, StoredSession>();
  readonly #opening = new Map<string, Promise<StoredSession>>();
  /** The latest save of each session other tabs announced (by `announcedKey`). */
  readonly #announced = new Map<string, number>();
  readonly #beacon = new SaveBeacon();
  #channel: BroadcastChannel | undefined;
  #closed = false;

  private constructor(adapter: StorageAdapter, options: SessionStoreOptions) {
    this.adapter = adapter;
    this.io = guarded(adapter);
    this.#options = options;
    const Channel = (globalThis as { BroadcastChannel?: typeof BroadcastChannel }).BroadcastChannel;
    if (options.broadcast !== false && Channel) {
      this.#channel = new Channel(`context-compactor:${this.name}`);
      // Node: a channel must not keep the process alive.
      (this.#channel as unknown as { unref?: () => void }).unref?.();
      this.#channel.onmessage = (event: MessageEvent<StoreMessage>) => this.#heard(event.data);
    }
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
      announced ??= latestOf([...this.#announcedOf(id, found.createdAt), ...(await SaveBeacon.saves(this.#lockName(id), found.createdAt))], storage);
      if (found.commit >= announced) return storage;
      if (waited >= 2000) {
        throw new StorageError(`this tab's storage does not show save ${announced} of session ${JSON.stringify(id)}, which another tab announced`, { reason: "failed" });
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }

  /**
   * @internal The records of `keys` up to the first absent one (a session's tail). They are read
   * together (a few absent keys cost less than a round trip each), then taken in order: a read
   * that failed counts only if it comes before the first absent key, as if read one by one.
   */
  async readOn(keys: StorageKey[]): Promise<StoredRecord[]> {
    const reads = await Promise.allSettled(keys.map((key) => this.io.load(key)));
    const records: StoredRecord[] = [];
    for (const [i, read] of reads.entries()) {
      if (read.status === "rejected") throw read.reason;
      if (read.value === undefined) break;
      records.push({ key: keys[i], value: read.value });
    }
    return records;
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

  /** The stored session `id` (seed 000's thread id), loaded and checked; the same object while it is open. */
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
    const entries = (await this.io.loadRange(["s"])).filter((entry) => entry.key.length === 2);
    const sessions = await mapConcurrently(entries, LIST_CONCURRENCY, async (entry): Promise<StoredSessionInfo> => {
      try {
        // The settings record too, for the session's encoding (which ranks to load before opening it).
        const settingsKey = Session.settingsKey(entry);
        const [tail, settings] = await Promise.all([this.readOn(Session.tailKeys(entry)), settingsKey ? this.readOn([settingsKey]) : []]);
        return Session.info(entry, [...settings, ...tail]);
      } catch (error) {
        if (!(error instanceof ContextCompactorError)) throw error;
        return { id: entry.key[1], parentId: null, title: null, createdAt: 0, updatedAt: 0, messages: 0, tokens: 0, commit: 0, encoding: null, problem: error };
      }
    });
    return sessions.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1));
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
      this.#post({ id, deleted: true, storage });
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
   * Deletes the sessions not updated for `olderThanMs` (default 7 days, as seed 000 cleans up) and
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
    return JSON.stringify({ format: EXPORT_FORMAT, version: 1, id, records });
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
    if (typeof text !== "string") throw new InvalidArgumentError("importSession takes the file's text");
    let document: { format?: unknown; version?: unknown; records?: unknown };
    try {
      document = JSON.parse(text);
    } catch (error) {
      throw new InvalidArgumentError(`the file is not JSON: ${(error as Error).message}`);
    }
    let records: StoredRecord[];
    let id: string;
    const legacy = document?.format !== EXPORT_FORMAT;
    if (legacy) {
      // The whole-session export of Session.export(): migrated by the core (a version 0 record),
      // then stored as the records its first save writes.
      const session = Session.load([{ key: ["import"], value: text }]);
      try {
        id = session.id;
        records = session.changes({ now: this.now() }).records;
      } finally {
        session.free();
      }
    } else {
      if (typeof document.version === "number" && document.version > 1) {
        throw new InvalidArgumentError(`this session file is version ${document.version}, newer than this library reads (1): upgrade context-compactor`);
      }
      if (document.version !== 1) throw new InvalidArgumentError(`this session file's version is ${JSON.stringify(document.version)}, not a version of the format (1)`);
      records = document.records as StoredRecord[];
      const session = Session.load(records); // checks every record before anything is written
      try {
        id = session.id;
        checkImported(session, records);
      } finally {
        session.free();
      }
    }
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
      this.#post({ id, deleted: true });
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
      this.#channel?.close();
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
    await this.#beacon.publish(this.#lockName(id), createdAt, storage, commit);
    this.#post({ id, commit, createdAt, storage });
  }

  /** The saves of session `id` made at `createdAt` that other stores announced on the channel. */
  #announcedOf(id: string, createdAt: number): Announced[] {
    const saves: Announced[] = [];
    for (const [key, commit] of this.#announced) {
      const [known, at, storage] = JSON.parse(key) as [string, number | null, string | null];
      if (known === id && at === createdAt) saves.push({ storage: storage ?? undefined, commit });
    }
    return saves;
  }

  #post(message: StoreMessage): void {
    try {
      this.#channel?.postMessage(message);
    } catch {
      // A closed channel: the others catch up at their next save.
    }
  }

  #heard(message: StoreMessage): void {
    if (!message || typeof message.id !== "string") return;
    const storage = typeof message.storage === "string" ? message.storage : undefined;
    const key = announcedKey(message.id, message.createdAt, storage);
    if (typeof message.commit === "number") this.#announced.set(key, Math.max(message.commit, this.#announced.get(key) ?? 0));
    if (message.deleted) {
      for (const known of [...this.#announced.keys()]) {
        const [id, , from] = JSON.parse(known) as [string, unknown, string | null];
        if (id === message.id && (storage === undefined || from === null || from === storage)) this.#announced.delete(known);
      }
    }
    // What was saved or deleted may be another storage's session of the same id: a sync reads this
    // one's (and closes the handle if the session is gone from it), and waits only for saves of its copy.
    const handle = this.#open.get(message.id);
    if (handle && (message.deleted || (typeof message.commit === "number" && message.commit > handle.savedCommit))) handle.sync().catch((error) => handle.report(error));
  }
}

/**
 * A session open in a store: `session`, `history` and `memory` are the `Session`'s own, and every
 * call made through them schedules a save (see `SessionStoreOptions.autosave`).
 */
export class StoredSession {
  readonly store: SessionStore;
  readonly id: string;
  /** The session; calls through this object are saved automatically. */
  readonly session: Session;
  /** Called after a save, after another tab's changes arrived, and when the session was deleted. */
  onchange: ((event: StoredSessionEvent) => void) | undefined;
  /** Called with an automatic save's error (else the store's `onError`, else `console.error`). */
  onerror: ((error: unknown) => void) | undefined;
  readonly #raw: Session;
  #history: ConversationHistory | undefined;
  #memory: MemoryModule | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #scheduled = false;
  #closed: "closed" | "deleted" | undefined;
  /** The save whose outcome is unknown (`#settleDoubt`): its commit, the record that tells, the keys it stored. */
  #doubt: { commit: number; probe?: StoredRecord; keys: string[] } | undefined;
  /** Appends made with a key (`append`) not stored yet: their ids. */
  readonly #keyed = new Map<string, string[]>();

  /** @internal */
  constructor(store: SessionStore, session: Session) {
    this.store = store;
    this.#raw = session;
    this.id = session.id;
    const changed = () => this.changed();
    this.session = autosaving(session, changed, { history: () => this.history, memory: () => this.memory });
  }

  /** The history; appends and builds through it are saved automatically. */
  get history(): ConversationHistory {
    this.#history ??= autosaving(this.#raw.history, () => this.changed());
    return this.#history;
  }

  /** The memory module (or `undefined`); turns recorded through it are saved automatically. */
  get memory(): MemoryModule | undefined {
    if (this.#memory) return this.#memory;
    const memory = this.#raw.memory;
    this.#memory = memory && autosaving(memory, () => this.changed());
    return this.#memory;
  }

  get title(): string | undefined {
    return this.#raw.title;
  }

  set title(title: string | undefined) {
    this.session.title = title;
  }

  /** The commit of the last save (or load). */
  get savedCommit(): number {
    return this.#raw.savedCommit;
  }

  /** Whether the session was closed (`close()`) or deleted. */
  get closed(): boolean {
    return this.#closed !== undefined;
  }

  /** Schedules a save (calls made on `session`, `history` and `memory` do it themselves). */
  changed(): void {
    const autosave = this.store.options.autosave ?? true;
    if (this.#closed || autosave === false || this.#scheduled) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      this.flush().catch((error) => this.report(error));
    };
    if (typeof autosave === "object" && autosave.delayMs > 0) setTimeout(run, autosave.delayMs);
    else queueMicrotask(run);
  }

  /** @internal */
  report(error: unknown): void {
    if (this.onerror) this.onerror(error);
    else if (this.store.options.onError) this.store.options.onError(error, this);
    else console.error(`context-compactor: saving session ${this.id} failed:`, error);
  }

  #serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Saves what changed, after applying what other tabs or processes saved in the meantime. A
   * `StorageError` leaves the stored session as it was and the changes unsaved (a later flush
   * tries again); a `NotFoundError` says the session was deleted elsewhere.
   */
  flush(): Promise<void> {
    return this.#serially(async () => {
      if (this.#closed) return;
      // (In doubt, `changes()` must wait: the save in doubt is the one it would replace.)
      if (!this.#doubt) {
        const probe = this.#raw.changes({ now: this.store.now() });
        if (probe.records.length === 0 && probe.remove.length === 0) return;
      }
      const finish = await this.store.locked(this.id, () => this.saveLocked());
      finish();
    });
  }

  /**
   * @internal The save itself; the caller holds the session's lock. `before` runs once this
   * session caught up with the stored one, before its changes are taken. Resolves to what the
   * caller does once the lock is released: only then is a transactional adapter's write stored.
   */
  async saveLocked(before?: () => Promise<void>): Promise<() => void> {
    const adapter = this.store.io;
    const { stored, storage } = await this.#catchUp();
    if (!stored && this.#raw.savedCommit > 0) {
      this.forget("deleted");
      throw new NotFoundError(`session ${JSON.stringify(this.id)} was deleted from the storage by another tab or process; its unsaved changes are only in memory`);
    }
    await before?.();
    const changes = this.#raw.changes({ now: this.store.now() });
    const keyed = [...this.#keyed];
    if (changes.records.length > 0) {
      // Another process stored an append of one of these keys (its caller retried there): this
      // session's copy of it must not be stored too.
      const elsewhere = (await Promise.all(keyed.map(async ([key]) => ((await adapter.load(appendKey(this.id, key))) === undefined ? [] : [key])))).flat();
      if (elsewhere.length > 0) {
        this.forget("deleted");
        throw new ConflictError(
          `session ${JSON.stringify(this.id)}: the append of key ${JSON.stringify(elsewhere[0])} made here was stored by another process meanwhile; this handle's unsaved changes are dropped: open the session again`,
        );
      }
      const records: StoredRecord[] = [...changes.records, ...keyed.map(([key, ids]) => ({ key: appendKey(this.id, key), value: JSON.stringify({ ids }) }))];
      const mark = adapter.transactional ? { key: markKey(this.id, changes.commit), value: JSON.stringify(newId()) } : undefined;
      if (mark) records.push(mark);
      // Until the lock is released, whether this save is stored is unknown (see `#settleDoubt`).
      this.#doubt = { commit: changes.commit, probe: mark ?? records[records.length - 1], keys: keyed.map(([key]) => key) };
      await writeChecked(adapter, records, `saving session ${this.id}`);
    } else {
      this.#doubt = { commit: changes.commit, keys: [] };
    }
    if (changes.remove.length > 0) {
      // Records nothing names any more: if removing them fails, the next load finds them again.
      await write(adapter, changes.remove.map((key) => ({ key, value: undefined })), "removing superseded records").catch(() => {});
    }
    if (changes.records.length > 0 && !adapter.transactional) await this.store.saved(this.id, this.#raw.createdAt ?? 0, storage, changes.commit);
    return () => {
      this.#saved(changes.commit, this.#doubt?.keys ?? []);
      if (changes.records.length > 0) {
        if (adapter.transactional) this.store.saved(this.id, this.#raw.createdAt ?? 0, storage, changes.commit).catch(() => {});
        this.onchange?.({ type: "saved", commit: changes.commit });
      }
    };
  }

  /** The save of `commit` is stored, with the appends of `keys`. */
  #saved(commit: number, keys: string[]): void {
    this.#doubt = undefined;
    this.#raw.markSaved(commit);
    for (const key of keys) this.#keyed.delete(key);
  }

  /**
   * Settles a save whose outcome is unknown (its write or its transaction's commit failed, and
   * reading it back failed too), before anything else reads or writes the session: if it landed,
   * it is this session's, not another writer's to pull (which would append its messages again).
   * A transactional adapter's save is stored if and only if its mark is; another's if its last
   * record is (its writes land in order). The caller holds the lock.
   */
  async #settleDoubt(): Promise<void> {
    const doubt = this.#doubt;
    if (!doubt) return;
    const landed = doubt.probe === undefined || (await this.store.io.load(doubt.probe.key)) === doubt.probe.value;
    if (landed) this.#saved(doubt.commit, doubt.keys);
    else this.#doubt = undefined;
  }

  /**
   * Applies what other tabs or processes saved since this session's last save or load (the
   * caller holds the lock): what the stored meta record names, then the records after this
   * session's last message (one read when there are none), up to the latest save announced.
   */
  async #catchUp(): Promise<{ stored: boolean; report?: PullReport; storage?: string }> {
    await this.#settleDoubt();
    const adapter = this.store.io;
    const key = metaKey(this.id);
    let stored = false;
    let report: PullReport | undefined;
    const storage = await this.store.caughtUp(this.id, async () => {
      const meta = await adapter.load(key);
      stored = meta !== undefined;
      if (meta === undefined) return undefined;
      const plan = this.#raw.pullPlan({ key, value: meta });
      const records: StoredRecord[] = [];
      for (const named of plan.keys) {
        const value = await adapter.load(named);
        if (value !== undefined) records.push({ key: named, value });
      }
      const tail = await this.store.readOn(plan.tail);
      if (!plan.current || tail.length > 0) {
        const before = this.#raw.savedCommit;
        const pulled = this.#raw.pull([...records, ...tail, { key, value: meta }]);
        if (pulled.commit !== before) {
          report = pulled;
          // Unsaved appends made with a key moved after the other writer's messages.
          const moved = new Map(pulled.renumbered.map((r) => [r.from, r.to]));
          for (const [k, ids] of this.#keyed) this.#keyed.set(k, ids.map((id) => moved.get(id) ?? id));
          this.onchange?.({ type: "pulled", report: pulled });
        }
      }
      return { commit: this.#raw.savedCommit, createdAt: this.#raw.createdAt ?? 0 };
    });
    return { stored, report, storage };
  }

  /** Applies what other tabs or processes saved since this session's last save or load; `undefined` when there was nothing. */
  sync(): Promise<PullReport | undefined> {
    return this.#serially(async () => {
      if (this.#closed) return undefined;
      return this.store.locked(this.id, async () => {
        const { stored, report } = await this.#catchUp();
        if (!stored && this.#raw.savedCommit > 0) this.forget("deleted");
        return report;
      });
    });
  }

  /**
   * Appends `messages` and saves them, after what other processes saved: resolves to their ids
   * once they are stored. With `key` (yours: a request id, say) an append is made once: a call
   * with a key whose append is stored already (by this process or another, before a crash or a
   * lost reply) resolves to the ids it got and appends nothing. Where the adapter is transactional
   * (PostgreSQL, SQLite) the key is stored with the messages, in one transaction; elsewhere just
   * after them, so that a process killed between the two leaves the messages without their key.
   */
  append(messages: MessageInput | readonly MessageInput[], options: { key?: string; format?: Format } = {}): Promise<string[]> {
    const list = Array.isArray(messages) ? [...(messages as readonly MessageInput[])] : [messages as MessageInput];
    const { key, format } = options ?? {};
    if (key !== undefined && (typeof key !== "string" || key === "")) throw new InvalidArgumentError(`an append's key must be a non-empty string, got ${JSON.stringify(key)}`);
    return this.#serially(async () => {
      if (this.#closed) throw new ConflictError(`session ${JSON.stringify(this.id)} is ${this.#closed}`);
      let ids: string[] | undefined;
      const finish = await this.store.locked(this.id, () =>
        this.saveLocked(async () => {
          if (key !== undefined && this.#keyed.has(key)) {
            ids = this.#keyed.get(key); // appended here by a call whose save failed: saved now
            return;
          }
          const stored = key === undefined ? undefined : await this.store.io.load(appendKey(this.id, key));
          if (stored !== undefined) {
            ids = (JSON.parse(stored) as { ids: string[] }).ids;
            return;
          }
          ids = this.#raw.history.appendMany(list, format);
          if (key !== undefined) this.#keyed.set(key, ids);
        }),
      );
      const appended = ids ?? [];
      finish();
      return appended;
    });
  }

  /**
   * `compact(history, options)` (a build that asks `options.summarize` for a summary when one is
   * due, and stores it) holding the session's compaction lease: no other process or store runs a
   * compaction of this session meanwhile. A lease held elsewhere is a `LeaseHeldError`. It lasts
   * `leaseMs` (default 60 s) and is renewed every third of that while the summariser works, so a
   * holder that died blocks the others for at most `leaseMs`; a compaction its holder left
   * under way is cancelled by the next one. Without `summarize` (the built-in extractive summary,
   * made in the call), or when no summary is due, no lease is taken. The session catches up
   * first, and is saved after.
   */
  async compact(options: CompactOptions & { leaseMs?: number } = {}): Promise<BuildResult> {
    const { leaseMs = LEASE_MS, ...rest } = options ?? {};
    if (!(typeof leaseMs === "number" && leaseMs > 0 && Number.isFinite(leaseMs))) throw new InvalidArgumentError(`leaseMs must be a positive number of milliseconds, got ${String(leaseMs)}`);
    await this.sync();
    const summarize = rest.summarize;
    if (!summarize) {
      const result = compact(this.history, rest);
      await this.flush();
      return result;
    }
    // Most turns need no summary: then no lease is taken (a build, as compact() makes first).
    const { summarize: _, ...build } = rest;
    const probe = this.history.build({ ...build, summary: { ...(build.summary ?? {}), summarizer: "external" } });
    if (!probe.summaryRequest) {
      await this.flush();
      return probe;
    }
    const holder = newId().replace(/^s-/, "lease-");
    const io = this.store.io;
    let lost: LeaseHeldError | undefined;
    /** Takes or renews the lease (under the session's lock): a `LeaseHeldError` if another holds it. */
    const claim = (first: boolean) =>
      this.#serially(() =>
        this.store.locked(this.id, async () => {
          if (this.#closed) throw new ConflictError(`session ${JSON.stringify(this.id)} is ${this.#closed}`);
          const now = this.store.now();
          let current: { holder?: unknown; until?: unknown } | undefined;
          try {
            const text = await io.load(leaseKey(this.id));
            current = text === undefined ? undefined : JSON.parse(text);
          } catch (error) {
            if (error instanceof ContextCompactorError) throw error;
            current = undefined; // damaged: as none
          }
          const until = typeof current?.until === "number" ? current.until : 0;
          if (current && current.holder !== holder && until > now) {
            throw new LeaseHeldError(`session ${JSON.stringify(this.id)} is being compacted by another process (its lease lasts until ${new Date(until).toISOString()})`, until);
          }
          if (!first && current?.holder !== holder) throw new LeaseHeldError(`the compaction lease of session ${JSON.stringify(this.id)} lapsed and was taken over`, until);
          if (first) {
            await this.#catchUp();
            // A compaction under way that no live lease covers: its holder is gone.
            const pending = this.#raw.history.summaryState().inProgress;
            if (pending) {
              this.#raw.history.cancelSummary(pending.requestId);
              this.changed();
            }
          }
          await write(io, [{ key: leaseKey(this.id), value: JSON.stringify({ holder, until: now + leaseMs }) }], `taking the compaction lease of session ${this.id}`);
        }),
      );
    await claim(true);
    const renewing = setInterval(() => {
      claim(false).catch((error) => {
        if (error instanceof LeaseHeldError) lost = error;
      });
    }, Math.max(1, Math.floor(leaseMs / 3)));
    (renewing as { unref?: () => void }).unref?.();
    try {
      const result = await compact(this.history, {
        ...rest,
        summarize: async (request) => {
          const text = await summarize(request);
          // Stored only while the lease is this call's: renewed now, or refused.
          if (lost) throw lost;
          await claim(false);
          return text;
        },
      });
      await this.flush();
      return result;
    } finally {
      clearInterval(renewing);
      await this.#serially(() =>
        this.store.locked(this.id, async () => {
          const text = await io.load(leaseKey(this.id));
          if (text !== undefined && (JSON.parse(text) as { holder?: unknown }).holder === holder) await io.remove(leaseKey(this.id));
        }),
      ).catch(() => {}); // left to lapse
    }
  }

  /** A sub-agent (`Session.spawnSubagent`), stored as a session of its own with this one as its parent. */
  async spawnSubagent(task: string, options?: { maxLoops?: number }): Promise<StoredSession> {
    const child = this.session.spawnSubagent(task, options);
    try {
      return await this.store.add(child);
    } catch (error) {
      child.free();
      throw error;
    }
  }

  /** Saves, then closes: the session is freed and this object unusable. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.forget("closed");
  }

  /** @internal */
  forget(why: "closed" | "deleted"): void {
    if (this.#closed) return;
    this.#closed = why;
    this.store.forget(this);
    if (why === "deleted") this.onchange?.({ type: "deleted" });
    else this.#raw.free();
  }
}
