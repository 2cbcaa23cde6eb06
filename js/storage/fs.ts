/**
 * An adapter over the Node file system (`node:fs/promises`), append-friendly: the keys that share
 * their first segments (by default two: `["r", sessionId]`, or `["s"]` for the sessions' meta
 * records) live in one log file that each write appends to, so that saving a message writes that
 * message once, with one `fsync`. A removal appends a tombstone; a log with more dead entries than
 * live ones is rewritten (to a temporary file, synced, renamed over the log, the directory synced).
 *
 * An entry is a header line, `[key, byteLength]` (`-1`: removed), then the value's UTF-8 bytes and
 * a newline. A write cut short by a crash leaves an incomplete last entry: it was never
 * acknowledged, so it is not read, and the next write cuts it off. Anything else that does not
 * parse is a `StorageError`. Writers in other processes are kept apart by a lock per log
 * (`fs-lock.ts`: a lock whose process is gone, or that showed no sign of life for `staleLockMs`,
 * is taken over by exactly one process, and its old holder writes nothing more under it). The
 * file layout and the entry format are in `fs-log.ts`.
 *
 * Keys and values are refused (`InvalidArgumentError`) if they hold a lone UTF-16 surrogate, which
 * UTF-8 files cannot carry. Entry `context-compactor/storage/fs`: Node only.
 */
import { open, mkdir, rename, rm, unlink, type FileHandle } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { InvalidArgumentError, StorageError } from "../errors.js";
import {
  checkKey,
  checkPrefix,
  checkValue,
  compareKeys,
  hasLoneSurrogate,
  hasPrefix,
  storageError,
  type StorageAdapter,
  type StorageEntry,
  type StorageKey,
  type StorageWrite,
} from "./adapter.js";
import { code } from "./fs-errno.js";
import { acquireTurn } from "./fs-lock.js";
import { encodeEntries, IndexCache, LogFiles, scanLog, type LogEntry, type LogIndex } from "./fs-log.js";
import { serially } from "./locks.js";

export interface FileSystemOptions {
  /** The directory to keep everything in (made if missing). */
  root: string;
  /** How many leading key segments name a log file (default 2). */
  partitionDepth?: number;
  /** `fsync` files and directories after writes (default true; false only for throwaway data). */
  sync?: boolean;
  /** How long to wait for another process's lock before a `StorageError` (default 10,000 ms). */
  lockTimeoutMs?: number;
  /**
   * A lock whose holder showed no sign of life for this long is taken over (default 30,000 ms; a
   * holder touches its lock every third of it, so only a process stalled this long loses its lock).
   */
  staleLockMs?: number;
}

interface PendingWrites {
  waiting: Array<{ writes: StorageWrite[]; done: (error?: unknown) => void }>;
  writing: boolean;
}

/** Writes waiting for their file, by path (shared by the adapters of this process). */
const pending = new Map<string, PendingWrites>();

export class FileSystemAdapter implements StorageAdapter {
  readonly name: string;
  readonly #root: string;
  readonly #log: LogFiles;
  readonly #sync: boolean;
  readonly #lockTimeoutMs: number;
  readonly #staleLockMs: number;
  readonly #indexes = new IndexCache();
  /** The loads made in this turn of the event loop, by file, read together at its end. */
  readonly #loads = new Map<string, Array<{ id: string; resolve: (value: string | undefined) => void; reject: (error: unknown) => void }>>();
  #closed = false;

  private constructor(options: FileSystemOptions) {
    this.#root = resolve(options.root);
    this.#log = new LogFiles(this.#root, options.partitionDepth ?? 2);
    this.#sync = options.sync ?? true;
    this.#lockTimeoutMs = options.lockTimeoutMs ?? 10_000;
    this.#staleLockMs = options.staleLockMs ?? 30_000;
    this.name = `fs:${this.#root}`;
  }

  /** Opens the store under `root`, making the directory if needed. */
  static async open(options: FileSystemOptions): Promise<FileSystemAdapter> {
    if (!options || typeof options.root !== "string" || options.root === "") throw new InvalidArgumentError("FileSystemAdapter.open needs a `root` directory");
    const depth = options.partitionDepth ?? 2;
    if (!Number.isInteger(depth) || depth < 1) throw new InvalidArgumentError(`partitionDepth must be a whole number from 1, got ${depth}`);
    for (const option of ["lockTimeoutMs", "staleLockMs"] as const) {
      const ms = options[option];
      if (ms !== undefined && !(typeof ms === "number" && ms > 0 && Number.isFinite(ms))) throw new InvalidArgumentError(`${option} must be a positive number of milliseconds, got ${ms}`);
    }
    const adapter = new FileSystemAdapter(options);
    try {
      await mkdir(adapter.#root, { recursive: true });
    } catch (error) {
      throw storageError(`making ${adapter.#root}`, error);
    }
    return adapter;
  }

  #check(key?: StorageKey, value?: string) {
    if (this.#closed) throw new StorageError(`the file system adapter on ${this.#root} is closed`, { reason: "closed" });
    if (key === undefined) return;
    if (key.some(hasLoneSurrogate)) throw new InvalidArgumentError("a key segment holds a lone UTF-16 surrogate, which a file cannot store");
    if (value !== undefined && hasLoneSurrogate(value)) throw new InvalidArgumentError("the value holds a lone UTF-16 surrogate, which a file cannot store");
  }

  /**
   * The index of `file`, brought up to date with what is on disk (undefined if there is no file):
   * checked against the file's `fstat` on each call, so that other processes' appends are seen;
   * read again (the new bytes, or the whole file if it was replaced) one call at a time per file,
   * so that concurrent loads of a file not yet indexed read it once, not once each.
   */
  async #index(file: string, handle?: FileHandle): Promise<{ index: LogIndex; buffer?: Buffer; fileSize: number } | undefined> {
    let fh = handle;
    try {
      fh ??= await open(file, "r");
    } catch (error) {
      if (code(error) === "ENOENT") {
        this.#indexes.delete(file);
        return undefined;
      }
      throw storageError(`opening ${file}`, error);
    }
    const opened = fh;
    const current = async () => {
      const { ino, birthtimeMs: born, size } = await opened.stat();
      const index = this.#indexes.get(file);
      const same = index !== undefined && index.ino === ino && index.born === born;
      return { ino, born, size, same, index: same && index.size === size ? index : undefined };
    };
    try {
      const found = await current();
      if (found.index) return { index: found.index, fileSize: found.size };
      return await serially(`${file}#index`, async () => {
        const { ino, born, size, same, index: fresh } = await current(); // another call may have read it meanwhile
        if (fresh) return { index: fresh, fileSize: size };
        let index = this.#indexes.get(file);
        const from = index && same && index.size < size ? index.size : 0;
        if (!index || from === 0) index = { ino, born, size: 0, entries: new Map(), live: 0 };
        const buffer = Buffer.alloc(size - from);
        await opened.read(buffer, 0, buffer.length, from);
        index.size = scanLog(buffer, from, index, file);
        this.#indexes.set(file, index);
        return { index, buffer: from === 0 ? buffer : undefined, fileSize: size };
      });
    } finally {
      if (!handle) await fh.close();
    }
  }

  /** The values of the entries `select` picks from `file`'s index. */
  async #read(file: string, select: (index: LogIndex) => LogEntry[]): Promise<StorageEntry[]> {
    let fh: FileHandle;
    try {
      fh = await open(file, "r");
    } catch (error) {
      if (code(error) === "ENOENT") return [];
      throw storageError(`opening ${file}`, error);
    }
    try {
      const found = await this.#index(file, fh);
      if (!found) return [];
      const wanted = select(found.index);
      let buffer = found.buffer;
      let base = 0;
      if (!buffer && wanted.length > 1) {
        // Many entries, or entries close together (a session's tail): one read from the first to
        // the last beats one read each. (A loop: Math.min(...offsets) of a large log's entries,
        // every one when it is compacted, is a RangeError past about 125,000 arguments.)
        base = Infinity;
        let end = 0;
        let bytes = 0;
        for (const e of wanted) {
          base = Math.min(base, e.offset);
          end = Math.max(end, e.offset + e.length);
          bytes += e.length;
        }
        if (wanted.length > 8 || end - base <= 2 * bytes + 65_536) {
          buffer = Buffer.alloc(end - base);
          await fh.read(buffer, 0, buffer.length, base);
        } else base = 0;
      }
      const entries: StorageEntry[] = [];
      for (const entry of wanted) {
        let bytes: Buffer;
        if (buffer) bytes = buffer.subarray(entry.offset - base, entry.offset - base + entry.length);
        else {
          bytes = Buffer.alloc(entry.length);
          await fh.read(bytes, 0, entry.length, entry.offset);
        }
        entries.push({ key: entry.key, value: bytes.toString("utf8") });
      }
      return entries;
    } catch (error) {
      throw storageError(`reading ${file}`, error);
    } finally {
      await fh.close();
    }
  }

  /**
   * Loads made in the same turn of the event loop are read together, file by file: one open,
   * one `fstat` and one read of a session's tail, not one of each per key.
   */
  async load(key: StorageKey): Promise<string | undefined> {
    checkKey(key);
    this.#check();
    const file = this.#log.of(key);
    return new Promise((resolve, reject) => {
      let waiting = this.#loads.get(file);
      if (!waiting) {
        this.#loads.set(file, (waiting = []));
        queueMicrotask(() => this.#readLoads(file));
      }
      waiting.push({ id: JSON.stringify(key), resolve, reject });
    });
  }

  /** Reads the loads waiting for `file` (if that fails, each of them fails with its error). */
  #readLoads(file: string): void {
    const waiting = this.#loads.get(file) ?? [];
    this.#loads.delete(file);
    const ids = [...new Set(waiting.map((load) => load.id))];
    let present: LogEntry[] = [];
    this.#read(file, (index) => (present = ids.flatMap((id) => index.entries.get(id) ?? []))).then(
      (entries) => {
        // (#read gives the values of `present`, in its order.)
        const values = new Map(present.map((entry, i) => [JSON.stringify(entry.key), entries[i].value]));
        waiting.forEach((load) => load.resolve(values.get(load.id)));
      },
      (error) => waiting.forEach((load) => load.reject(error)),
    );
  }

  async loadRange(prefix: StorageKey): Promise<StorageEntry[]> {
    checkPrefix(prefix);
    this.#check();
    const entries: StorageEntry[] = [];
    for (const file of await this.#log.files(prefix)) {
      // (Not push(...read): a spread of a large log's entries is a RangeError.)
      for (const entry of await this.#read(file, (index) => [...index.entries.values()].filter((e) => hasPrefix(e.key, prefix)))) entries.push(entry);
    }
    return entries.sort((a, b) => compareKeys(a.key, b.key));
  }

  async save(key: StorageKey, value: string): Promise<void> {
    checkKey(key);
    checkValue(value);
    await this.saveBatch([{ key, value }]);
  }

  async remove(key: StorageKey): Promise<void> {
    checkKey(key);
    await this.saveBatch([{ key, value: undefined }]);
  }

  async removeRange(prefix: StorageKey): Promise<void> {
    checkPrefix(prefix);
    this.#check();
    for (const file of await this.#log.files(prefix)) {
      await this.#locked(file, async (stillHeld) => {
        const found = await this.#index(file);
        if (!found) return;
        const keys = [...found.index.entries.values()].map((e) => e.key);
        const doomed = keys.filter((k) => hasPrefix(k, prefix));
        if (doomed.length === 0) return;
        await stillHeld();
        if (doomed.length === keys.length) {
          await unlink(file).catch((error) => {
            if (code(error) !== "ENOENT") throw storageError(`removing ${file}`, error);
          });
          this.#indexes.delete(file);
          await this.#syncDir(dirname(file));
        } else {
          await this.#append(file, doomed.map((key) => ({ key, value: undefined })), stillHeld);
        }
      });
    }
  }

  /**
   * Writes in order, file by file: each file's writes in one append and one `fsync` before the
   * next file's, so that what a crash leaves is a prefix of the batch.
   */
  async saveBatch(writes: StorageWrite[]): Promise<void> {
    for (const write of writes) {
      checkKey(write.key);
      if (write.value !== undefined) checkValue(write.value);
      this.#check(write.key, write.value);
    }
    let i = 0;
    while (i < writes.length) {
      const file = this.#log.of(writes[i].key);
      let j = i + 1;
      while (j < writes.length && this.#log.of(writes[j].key) === file) j++;
      await this.#enqueue(file, writes.slice(i, j));
      i = j;
    }
  }

  /**
   * Group commit: writes to a file that arrive while it is being written (from this adapter or
   * another in this process) go out together in the next append, with one `fsync`.
   */
  #enqueue(file: string, writes: StorageWrite[]): Promise<void> {
    return new Promise((resolve, reject) => {
      let group = pending.get(file);
      if (!group) pending.set(file, (group = { waiting: [], writing: false }));
      group.waiting.push({ writes, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (!group.writing) void this.#drain(file, group);
    });
  }

  async #drain(file: string, group: PendingWrites): Promise<void> {
    group.writing = true;
    while (group.waiting.length > 0) {
      const taken = group.waiting.splice(0);
      try {
        await this.#locked(file, (stillHeld) => this.#append(file, taken.flatMap((t) => t.writes), stillHeld));
        for (const t of taken) t.done();
      } catch (error) {
        for (const t of taken) t.done(error);
      }
    }
    group.writing = false;
    if (pending.get(file) === group) pending.delete(file);
  }

  /**
   * Appends `writes` to `file` (the caller holds its lock, which `stillHeld` checks right before
   * the write), then compacts it if mostly dead.
   */
  async #append(file: string, writes: StorageWrite[], stillHeld: () => Promise<void>): Promise<void> {
    const data = encodeEntries(writes);
    let fh: FileHandle | undefined;
    let created = false;
    try {
      try {
        fh = await open(file, "r+");
      } catch (error) {
        if (code(error) !== "ENOENT") throw error;
        await mkdir(dirname(file), { recursive: true });
        fh = await open(file, "wx+");
        created = true;
      }
      const found = await this.#index(file, fh);
      const index = found?.index ?? { ino: 0, born: 0, size: 0, entries: new Map(), live: 0 };
      await stillHeld();
      const base = index.size;
      if (found?.fileSize !== base) await fh.truncate(base); // an unfinished write's remains
      await fh.write(data, 0, data.length, base);
      // fdatasync: the data and the file's new size (what reading it back needs), not its times.
      if (this.#sync) await fh.datasync();
      // Bring the index up to date with what was just written, unless a load in this process read
      // it meanwhile (scanned again from its new size, it would index entries past the file's end).
      if (index.size === base) {
        index.size = scanLog(data, base, index, file);
        this.#indexes.set(file, index);
      } else this.#indexes.delete(file);
    } catch (error) {
      this.#indexes.delete(file);
      throw storageError(`writing ${file}`, error);
    } finally {
      await fh?.close();
    }
    if (created) await this.#syncDir(dirname(file));
    const index = this.#indexes.get(file);
    if (index && index.size > 65_536 && index.size > 2 * index.live) await this.#compact(file, stillHeld);
  }

  /** Rewrites `file` with its live entries only (the caller holds its lock). */
  async #compact(file: string, stillHeld: () => Promise<void>): Promise<void> {
    const live = await this.#read(file, (index) => [...index.entries.values()]);
    const temporary = `${file}.${process.pid}.tmp`;
    const data = encodeEntries(live);
    try {
      const fh = await open(temporary, "w");
      try {
        await fh.write(data, 0, data.length, 0);
        if (this.#sync) await fh.sync();
      } finally {
        await fh.close();
      }
      await stillHeld();
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      throw storageError(`compacting ${file}`, error);
    }
    this.#indexes.delete(file);
    await this.#syncDir(dirname(file));
  }

  async #syncDir(dir: string): Promise<void> {
    if (!this.#sync) return;
    try {
      const fh = await open(dir, "r");
      try {
        await fh.sync();
      } finally {
        await fh.close();
      }
    } catch (error) {
      // Some platforms cannot fsync a directory (EISDIR, EINVAL, EPERM): the rename is as durable as they make it.
      if (!["EISDIR", "EINVAL", "EPERM", "EBADF"].includes(code(error) ?? "")) throw storageError(`syncing ${dir}`, error);
    }
  }

  /**
   * Runs `fn` holding `path`'s lock: in this process, then across processes (`fs-lock.ts`).
   * `fn` gets `stillHeld`, which throws a `StorageError` if another process took the lock over.
   */
  async #locked<T>(path: string, fn: (stillHeld: () => Promise<void>) => Promise<T>): Promise<T> {
    return serially(path, async () => {
      const held = await acquireTurn(`${path}.lock.d`, path, this.#lockTimeoutMs, this.#staleLockMs);
      try {
        return await fn(() => held.check());
      } finally {
        await held.release();
      }
    });
  }

  /** The store's lock `name`, held against other processes too (a lock file under `root/locks`). */
  lock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.#locked(this.#log.lock(name), fn);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#indexes.clear();
  }
}
