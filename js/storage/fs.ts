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
 * parse is a `StorageError`. Writers in other processes are kept apart by lock files (`*.lock`,
 * holding the pid and a token; a lock whose process is gone, or older than `staleLockMs`, is taken
 * over, and its first holder then leaves it be).
 *
 * Keys and values are refused (`InvalidArgumentError`) if they hold a lone UTF-16 surrogate, which
 * UTF-8 files cannot carry. Entry `context-compactor/storage/fs`: Node only.
 */
import { open, mkdir, readdir, rename, rm, unlink, readFile, type FileHandle } from "node:fs/promises";
import { join, dirname, resolve } from "node:path";
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
  /** A lock older than this is taken over (default 30,000 ms). */
  staleLockMs?: number;
}

/** One live entry: its header starts at `start`, its value's bytes at `offset`. */
interface LogEntry {
  key: StorageKey;
  start: number;
  offset: number;
  length: number;
}

const entryBytes = (e: LogEntry) => e.offset + e.length + 1 - e.start;

/** Where each entry of a log is, as of `size` bytes of the file `ino`. */
interface LogIndex {
  ino: number;
  size: number;
  entries: Map<string, LogEntry>;
  /** Bytes of the live entries (headers included). */
  live: number;
}

const NEWLINE = 0x0a;
const SAFE = /^[A-Za-z0-9_-]$/;

/** A key segment as a file name: letters, digits, `_` and `-` as they are, other bytes `%XX`; long ones hashed. */
function fileName(segment: string): string {
  let out = "";
  for (const char of segment) {
    if (SAFE.test(char)) out += char;
    else for (const byte of Buffer.from(char, "utf8")) out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  if (out.length <= 150) return out;
  // Entries carry their whole keys, so two partitions sharing a file stay apart: a hash is enough.
  let hash = 0xcbf29ce484222325n;
  for (const byte of Buffer.from(segment, "utf8")) hash = BigInt.asUintN(64, (hash ^ BigInt(byte)) * 0x100000001b3n);
  return `${out.slice(0, 100)}~${hash.toString(16)}`;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

interface PendingWrites {
  waiting: Array<{ writes: StorageWrite[]; done: (error?: unknown) => void }>;
  writing: boolean;
}

/** Writes waiting for their file, by path (shared by the adapters of this process). */
const pending = new Map<string, PendingWrites>();

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FileSystemAdapter implements StorageAdapter {
  readonly name: string;
  readonly #root: string;
  readonly #depth: number;
  readonly #sync: boolean;
  readonly #lockTimeoutMs: number;
  readonly #staleLockMs: number;
  readonly #indexes = new Map<string, LogIndex>();
  #closed = false;

  private constructor(options: FileSystemOptions) {
    this.#root = resolve(options.root);
    this.#depth = options.partitionDepth ?? 2;
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

  /** The log file of the partition `segments`. */
  #file(segments: StorageKey): string {
    return segments.length === 0 ? join(this.#root, "@.log") : join(this.#root, ...segments.slice(0, -1).map(fileName), `${fileName(segments[segments.length - 1])}.log`);
  }

  #partition(key: StorageKey): StorageKey {
    return key.slice(0, Math.min(this.#depth, key.length - 1));
  }

  /** Every log file that may hold keys starting with `prefix`. */
  async #files(prefix: StorageKey): Promise<string[]> {
    const files = new Set<string>();
    for (let i = 0; i <= Math.min(prefix.length, this.#depth); i++) files.add(this.#file(prefix.slice(0, i)));
    if (prefix.length < this.#depth) {
      const walk = async (dir: string, depth: number): Promise<void> => {
        let names: string[];
        try {
          names = await readdir(dir);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === "ENOENT" || (error as NodeJS.ErrnoException).code === "ENOTDIR") return;
          throw storageError(`listing ${dir}`, error);
        }
        for (const name of names) {
          if (name.endsWith(".log")) files.add(join(dir, name));
          else if (!name.includes(".") && depth < this.#depth) await walk(join(dir, name), depth + 1);
        }
      };
      await walk(prefix.length === 0 ? this.#root : join(this.#root, ...prefix.map(fileName)), prefix.length + 1);
    }
    return [...files];
  }

  /**
   * Reads the entries in `chunk` (the file's bytes from `base` on) into `index`; returns where the
   * complete entries end (an incomplete last entry is a write that never finished).
   */
  #scan(chunk: Buffer, base: number, index: LogIndex, file: string): number {
    let at = 0;
    while (at < chunk.length) {
      const newline = chunk.indexOf(NEWLINE, at);
      if (newline < 0) break;
      let header: unknown;
      try {
        header = JSON.parse(chunk.toString("utf8", at, newline));
      } catch {
        header = undefined;
      }
      if (!Array.isArray(header) || header.length !== 2 || !Array.isArray(header[0]) || typeof header[1] !== "number") {
        throw new StorageError(`${file} is damaged at byte ${base + at}: not an entry header`, { reason: "failed" });
      }
      const [key, length] = header as [StorageKey, number];
      const start = newline + 1;
      const end = start + Math.max(length, 0);
      if (end >= chunk.length) break;
      if (chunk[end] !== NEWLINE) throw new StorageError(`${file} is damaged at byte ${base + at}: the entry's length does not match`, { reason: "failed" });
      const id = JSON.stringify(key);
      const previous = index.entries.get(id);
      if (previous) index.live -= entryBytes(previous);
      if (length < 0) index.entries.delete(id);
      else {
        const entry = { key, start: base + at, offset: base + start, length };
        index.entries.set(id, entry);
        index.live += entryBytes(entry);
      }
      at = end + 1;
    }
    return base + at;
  }

  /** The index of `file`, brought up to date with what is on disk (undefined if there is no file). */
  async #index(file: string, handle?: FileHandle): Promise<{ index: LogIndex; buffer?: Buffer; fileSize: number } | undefined> {
    let fh = handle;
    try {
      fh ??= await open(file, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        this.#indexes.delete(file);
        return undefined;
      }
      throw storageError(`opening ${file}`, error);
    }
    try {
      const { ino, size } = await fh.stat();
      let index = this.#indexes.get(file);
      if (index && index.ino === ino && index.size === size) return { index, fileSize: size };
      const from = index && index.ino === ino && index.size < size ? index.size : 0;
      if (!index || from === 0) index = { ino, size: 0, entries: new Map(), live: 0 };
      const buffer = Buffer.alloc(size - from);
      await fh.read(buffer, 0, buffer.length, from);
      index.size = this.#scan(buffer, from, index, file);
      this.#indexes.set(file, index);
      return { index, buffer: from === 0 ? buffer : undefined, fileSize: size };
    } finally {
      if (!handle) await fh.close();
    }
  }

  async #read(file: string, keys: (key: StorageKey) => boolean): Promise<StorageEntry[]> {
    let fh: FileHandle;
    try {
      fh = await open(file, "r");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return [];
      throw storageError(`opening ${file}`, error);
    }
    try {
      const found = await this.#index(file, fh);
      if (!found) return [];
      const wanted = [...found.index.entries.values()].filter((e) => keys(e.key));
      let buffer = found.buffer;
      if (!buffer && wanted.length > 8) {
        // Many entries: one read of the file beats one per entry.
        buffer = Buffer.alloc(found.index.size);
        await fh.read(buffer, 0, buffer.length, 0);
      }
      const entries: StorageEntry[] = [];
      for (const entry of wanted) {
        let bytes: Buffer;
        if (buffer) bytes = buffer.subarray(entry.offset, entry.offset + entry.length);
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

  async load(key: StorageKey): Promise<string | undefined> {
    checkKey(key);
    this.#check();
    const id = JSON.stringify(key);
    const [entry] = await this.#read(this.#file(this.#partition(key)), (k) => JSON.stringify(k) === id);
    return entry?.value;
  }

  async loadRange(prefix: StorageKey): Promise<StorageEntry[]> {
    checkPrefix(prefix);
    this.#check();
    const entries: StorageEntry[] = [];
    for (const file of await this.#files(prefix)) entries.push(...(await this.#read(file, (k) => hasPrefix(k, prefix))));
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
    for (const file of await this.#files(prefix)) {
      await this.#locked(file, async () => {
        const found = await this.#index(file);
        if (!found) return;
        const keys = [...found.index.entries.values()].map((e) => e.key);
        const doomed = keys.filter((k) => hasPrefix(k, prefix));
        if (doomed.length === 0) return;
        if (doomed.length === keys.length) {
          await unlink(file).catch((error) => {
            if (error.code !== "ENOENT") throw storageError(`removing ${file}`, error);
          });
          this.#indexes.delete(file);
          await this.#syncDir(dirname(file));
        } else {
          await this.#append(file, doomed.map((key) => ({ key, value: undefined })));
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
      const file = this.#file(this.#partition(writes[i].key));
      let j = i + 1;
      while (j < writes.length && this.#file(this.#partition(writes[j].key)) === file) j++;
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
        await this.#locked(file, () => this.#append(file, taken.flatMap((t) => t.writes)));
        for (const t of taken) t.done();
      } catch (error) {
        for (const t of taken) t.done(error);
      }
    }
    group.writing = false;
    if (pending.get(file) === group) pending.delete(file);
  }

  /** Appends `writes` to `file` (the caller holds its lock), then compacts it if mostly dead. */
  async #append(file: string, writes: StorageWrite[]): Promise<void> {
    const parts: Buffer[] = [];
    for (const { key, value } of writes) {
      const bytes = value === undefined ? undefined : Buffer.from(value, "utf8");
      parts.push(Buffer.from(`${JSON.stringify([key, bytes ? bytes.length : -1])}\n`, "utf8"));
      if (bytes) parts.push(bytes);
      parts.push(Buffer.from("\n"));
    }
    const data = Buffer.concat(parts);
    let fh: FileHandle | undefined;
    let created = false;
    try {
      try {
        fh = await open(file, "r+");
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
        await mkdir(dirname(file), { recursive: true });
        fh = await open(file, "wx+");
        created = true;
      }
      const found = await this.#index(file, fh);
      const index = found?.index ?? { ino: 0, size: 0, entries: new Map(), live: 0 };
      if (found?.fileSize !== index.size) await fh.truncate(index.size); // an unfinished write's remains
      await fh.write(data, 0, data.length, index.size);
      // fdatasync: the data and the file's new size (what reading it back needs), not its times.
      if (this.#sync) await fh.datasync();
      // Bring the index up to date with what was just written.
      index.size = this.#scan(data, index.size, index, file);
      this.#indexes.set(file, index);
    } catch (error) {
      this.#indexes.delete(file);
      throw storageError(`writing ${file}`, error);
    } finally {
      await fh?.close();
    }
    if (created) await this.#syncDir(dirname(file));
    const index = this.#indexes.get(file);
    if (index && index.size > 65_536 && index.size > 2 * index.live) await this.#compact(file);
  }

  /** Rewrites `file` with its live entries only (the caller holds its lock). */
  async #compact(file: string): Promise<void> {
    const live = await this.#read(file, () => true);
    const temporary = `${file}.${process.pid}.tmp`;
    const parts: Buffer[] = [];
    for (const { key, value } of live) {
      const bytes = Buffer.from(value, "utf8");
      parts.push(Buffer.from(`${JSON.stringify([key, bytes.length])}\n`, "utf8"), bytes, Buffer.from("\n"));
    }
    const data = Buffer.concat(parts);
    try {
      const fh = await open(temporary, "w");
      try {
        await fh.write(data, 0, data.length, 0);
        if (this.#sync) await fh.sync();
      } finally {
        await fh.close();
      }
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
      if (!["EISDIR", "EINVAL", "EPERM", "EBADF"].includes((error as NodeJS.ErrnoException).code ?? "")) throw storageError(`syncing ${dir}`, error);
    }
  }

  /** Runs `fn` holding `path`'s lock: in this process, then across processes through `path.lock`. */
  async #locked<T>(path: string, fn: () => Promise<T>): Promise<T> {
    return serially(path, async () => {
      const lockFile = `${path}.lock`;
      await mkdir(dirname(lockFile), { recursive: true });
      const deadline = Date.now() + this.#lockTimeoutMs;
      let delay = 1;
      let mine = "";
      for (;;) {
        try {
          const fh = await open(lockFile, "wx");
          mine = `${process.pid}\n${Date.now()}\n${Math.random().toString(36).slice(2)}\n`;
          await fh.writeFile(mine);
          await fh.close();
          break;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw storageError(`locking ${path}`, error);
        }
        const [pid, at] = (await readFile(lockFile, "utf8").catch(() => "")).split("\n").map(Number);
        if (pid > 0 && (!alive(pid) || Date.now() - at > this.#staleLockMs)) {
          await unlink(lockFile).catch(() => {});
          continue;
        }
        if (Date.now() > deadline) {
          throw new StorageError(`${path} is locked by process ${pid || "?"} for more than ${this.#lockTimeoutMs} ms`, { reason: "blocked" });
        }
        await sleep(delay);
        delay = Math.min(delay * 2, 25);
      }
      try {
        return await fn();
      } finally {
        // Only while it is still this holder's: another process may have taken it over as stale.
        if ((await readFile(lockFile, "utf8").catch(() => "")) === mine) await unlink(lockFile).catch(() => {});
      }
    });
  }

  /** The store's lock `name`, held against other processes too (a lock file under `root/locks`). */
  lock<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return this.#locked(join(this.#root, "locks", fileName(name)), fn);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#indexes.clear();
  }
}
