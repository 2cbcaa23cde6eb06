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
 * parse is a `StorageError`. Writers in other processes are kept apart by a lock per log (see
 * `acquireTurn`: a lock whose process is gone, or that showed no sign of life for `staleLockMs`,
 * is taken over by exactly one process, and its old holder writes nothing more under it).
 *
 * Keys and values are refused (`InvalidArgumentError`) if they hold a lone UTF-16 surrogate, which
 * UTF-8 files cannot carry. Entry `context-compactor/storage/fs`: Node only.
 */
import { open, link, mkdir, readdir, readFile, rename, rm, rmdir, stat, unlink, utimes, writeFile, type FileHandle } from "node:fs/promises";
import { readFileSync, readlinkSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
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
  /**
   * A lock whose holder showed no sign of life for this long is taken over (default 30,000 ms; a
   * holder touches its lock every third of it, so only a process stalled this long loses its lock).
   */
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

/**
 * Where each entry of a log is, as of `size` bytes of the file `ino` made at `born` (file systems
 * reuse a removed file's inode number at once: a log removed and written again by another process
 * may have its old inode number, even its old size).
 */
interface LogIndex {
  ino: number;
  born: number;
  size: number;
  entries: Map<string, LogEntry>;
  /** Bytes of the live entries (headers included). */
  live: number;
}

/**
 * The indexes an adapter keeps, least recently used first, are dropped past this many entries in
 * all (a few MB): a process that lists or opens hundreds of sessions does not keep every one's
 * index, and a dropped one costs one read of its file when next used.
 */
const INDEXED_ENTRIES = 50_000;

/** An adapter's indexes by file, the least recently used dropped past `INDEXED_ENTRIES` entries. */
class IndexCache {
  readonly #byFile = new Map<string, LogIndex>();

  get(file: string): LogIndex | undefined {
    const index = this.#byFile.get(file);
    if (index) {
      // The most recently used last.
      this.#byFile.delete(file);
      this.#byFile.set(file, index);
    }
    return index;
  }

  set(file: string, index: LogIndex): void {
    this.#byFile.delete(file);
    this.#byFile.set(file, index);
    let entries = 0;
    for (const kept of this.#byFile.values()) entries += kept.entries.size;
    for (const [old, kept] of this.#byFile) {
      if (entries <= INDEXED_ENTRIES || old === file) break;
      entries -= kept.entries.size;
      this.#byFile.delete(old);
    }
  }

  delete(file: string): void {
    this.#byFile.delete(file);
  }

  clear(): void {
    this.#byFile.clear();
  }
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

/** A Node error's `code` (`ENOENT`, …), if it has one. */
const code = (error: unknown) => (error as NodeJS.ErrnoException)?.code;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return code(error) === "EPERM";
  }
}

/*
 * A lock across processes needs no kernel lock (Node has none): the directory `<path>.lock.d`
 * holds numbered turns, each made by a call that fails if the name exists (`link`, `mkdir`), so
 * that only one process can make turn n. A held turn is a file of its own holding its maker's
 * owner record (host, pid, the process's start time), written to a temporary file first and
 * linked into place whole, so that no turn is ever without its owner, whatever point a crash
 * stops the maker at. A free turn, made by the holder of the turn before it to release the lock,
 * is a hard link to the directory's empty file `free` (one call, and `stat` tells it by its link
 * count and size), or an empty directory where the file system has no hard links. The maker of
 * the highest turn holds the lock, unless that turn is free. To take the lock, a process makes
 * the turn after a free or stale highest one: processes that find the same stale turn race to
 * make the same next number, and only one can (where a stale lock file's takeover by
 * unlink-and-create lets the later one remove the lock the earlier just made). Nothing is removed
 * on the evidence of an earlier read: a holder removes only the turns below its own, and releases
 * by making the next turn, which fails if another process took the lock over meanwhile. A held
 * turn is stale at once when its owner is gone (same host and pid namespace: no process of that
 * pid, or one started at another time), or when its mtime, which its holder touches every
 * `staleLockMs / 3`, is older than `staleLockMs`.
 */

/**
 * Where a pid means something: the host, and on Linux the pid namespace (containers that share a
 * volume and a host name still have their own pids).
 */
const HOST = (() => {
  try {
    return `${hostname()} ${readlinkSync("/proc/self/ns/pid")}`;
  } catch {
    return hostname();
  }
})();
const TURN = /^[0-9]+$/;
/** The temporary files owner records are written to before they are linked into place as a turn. */
const OWNER_TEMPORARY = /^owner-[0-9]+-[0-9a-f]+$/;

/** When process `pid` started (clock ticks since boot, from /proc/<pid>/stat), or "" where /proc cannot tell. */
function startTimeIn(stat: string): string {
  // The fields after the command name (which may hold spaces and parentheses); starttime is the 22nd.
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
}

const START_TIME = (() => {
  try {
    return startTimeIn(readFileSync("/proc/self/stat", "utf8"));
  } catch {
    return "";
  }
})();

async function startTime(pid: number): Promise<string> {
  try {
    return startTimeIn(await readFile(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return "";
  }
}

/** The turns in `dir` (made if missing), lowest first, and the owner records' temporary files. */
async function listing(dir: string): Promise<{ turns: number[]; temporaries: string[] }> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (code(error) !== "ENOENT") throw error;
    await mkdir(dir, { recursive: true });
    return { turns: [], temporaries: [] };
  }
  const turns = names
    .filter((name) => TURN.test(name))
    .map(Number)
    .sort((a, b) => a - b);
  return { turns, temporaries: names.filter((name) => OWNER_TEMPORARY.test(name)) };
}

async function turns(dir: string): Promise<number[]> {
  return (await listing(dir)).turns;
}

/** Whether turn `file` lets another process take the lock (`free`, `stale`) or not (`held`); `gone`: removed meanwhile. */
async function turnState(file: string, staleLockMs: number): Promise<"free" | "held" | "stale" | "gone"> {
  let record: string;
  try {
    const found = await stat(file);
    // A held turn is never empty: its owner record was written before it was linked into place.
    if ((found.nlink > 1 && found.size === 0) || found.isDirectory()) return "free";
    const { mtimeMs } = found;
    if (Date.now() - mtimeMs > staleLockMs) return "stale";
    record = await readFile(file, "utf8");
  } catch (error) {
    if (code(error) === "ENOENT") return "gone";
    throw error;
  }
  // A record cut short (a crash while an earlier version, or a file system without hard links,
  // wrote it in place) is stale once its mtime is.
  const lines = record.split("\n");
  if (lines.length < 3 || lines.at(-1) !== "" || lines[0] !== HOST) return "held";
  const pid = Number(lines[1]);
  if (!alive(pid)) return "stale";
  // The pid was given to another process since (its start time differs).
  const started = lines.length > 3 ? lines[2] : "";
  if (started !== "") {
    const now = await startTime(pid);
    if (now !== "" && now !== started) return "stale";
  }
  return "held";
}

/** Makes the held turn `file` in `dir`; an `EEXIST` error if another process made that turn first. */
async function makeHeldTurn(dir: string, file: string): Promise<void> {
  const record = `${HOST}\n${process.pid}\n${START_TIME}\n`;
  const temporary = join(dir, `owner-${process.pid}-${randomBytes(6).toString("hex")}`);
  await writeFile(temporary, record, { flag: "wx" });
  try {
    await link(temporary, file);
    return;
  } catch (error) {
    if (!NO_HARD_LINKS.has(code(error) ?? "")) throw error;
  } finally {
    await unlink(temporary).catch(() => {});
  }
  // No hard links on this file system (FAT, some network shares): the record is written in place,
  // and a crash between making the file and writing it leaves a turn that is stale only once its
  // mtime is.
  const fh = await open(file, "wx");
  let written = false;
  try {
    await fh.writeFile(record);
    written = true;
  } finally {
    await fh.close().catch(() => {});
    // Nobody can hold a turn this process made and did not write: it is still this process's to remove.
    if (!written) await unlink(file).catch(() => {});
  }
}

/** What `link` fails with where the file system has no hard links. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK"]);

/** Removes owner records' temporary files left by processes that died before linking them (older than `staleLockMs`). */
async function removeTemporaries(dir: string, names: readonly string[], staleLockMs: number): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const file = join(dir, name);
      try {
        if (Date.now() - (await stat(file)).mtimeMs > staleLockMs) await unlink(file);
      } catch {
        // Gone meanwhile, or linked and removed by its maker.
      }
    }),
  );
}

/** Makes the free turn `file` in `dir`; an `EEXIST` error if another process made that turn first. */
async function makeFreeTurn(dir: string, file: string): Promise<void> {
  const free = join(dir, "free");
  for (let attempt = 0; ; attempt++) {
    try {
      return await link(free, file);
    } catch (error) {
      if (code(error) === "EEXIST") throw error;
      if (code(error) !== "ENOENT" || attempt > 0) break;
      await (await open(free, "a")).close(); // the first release in this directory
    }
  }
  // No hard links on this file system (FAT, some network shares): an empty directory is free too.
  await mkdir(file);
}

/** Removes turn `n` of `dir` (a file, a link, or a directory), if it is still there. */
async function removeTurn(dir: string, n: number): Promise<void> {
  const file = join(dir, String(n));
  await unlink(file).catch(() => rmdir(file).catch(() => {}));
}

/** A turn this process holds. */
interface HeldTurn {
  /** Throws a `StorageError` if another process has taken the lock over (this one looked stale to it). */
  check(): Promise<void>;
  /** Releases the lock (a warning if another process had taken it over). */
  release(): Promise<void>;
}

/** Takes the lock kept in `dir` (of `what`), waiting up to `timeoutMs` for its holder. */
async function acquireTurn(dir: string, what: string, timeoutMs: number, staleLockMs: number): Promise<HeldTurn> {
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  let turn = 0;
  try {
    for (;;) {
      const highest = (await turns(dir)).at(-1) ?? 0;
      const state = highest === 0 ? "free" : await turnState(join(dir, String(highest)), staleLockMs);
      if (state === "held") {
        if (Date.now() > deadline) throw new StorageError(`${what} is locked by another process for more than ${timeoutMs} ms`, { reason: "blocked" });
        await sleep(delay);
        delay = Math.min(delay * 2, 25);
        continue;
      }
      if (state === "gone") continue; // removed by the holder of a higher turn: look again
      try {
        await makeHeldTurn(dir, join(dir, String(highest + 1)));
      } catch (error) {
        if (code(error) === "EEXIST") continue; // another process made it first
        throw error;
      }
      const now = await listing(dir);
      if (now.turns.at(-1) !== highest + 1) {
        // What this process read was long gone (removed by a later holder): its turn is not the highest.
        await removeTurn(dir, highest + 1);
        continue;
      }
      turn = highest + 1;
      await Promise.all(now.turns.slice(0, -1).map((old) => removeTurn(dir, old)));
      if (now.temporaries.length > 0) await removeTemporaries(dir, now.temporaries, staleLockMs);
      break;
    }
  } catch (error) {
    throw storageError(`locking ${what}`, error);
  }
  const file = join(dir, String(turn));
  const heartbeat = setInterval(() => {
    const now = new Date();
    utimes(file, now, now).catch(() => {});
  }, Math.max(1, Math.floor(staleLockMs / 3)));
  heartbeat.unref();
  const lost = () =>
    `the lock of ${what} was taken over by another process while this one held it (to that process, it looked stale: this one had stalled, or their staleLockMs or clocks differ)`;
  return {
    async check() {
      let highest: number | undefined;
      try {
        highest = (await turns(dir)).at(-1);
      } catch (error) {
        throw storageError(`checking the lock of ${what}`, error);
      }
      if (highest !== turn) throw new StorageError(`${lost()}: nothing written`, { reason: "failed" });
    },
    async release() {
      clearInterval(heartbeat);
      try {
        await makeFreeTurn(dir, join(dir, String(turn + 1)));
      } catch (error) {
        // The write is done: nothing to undo, but say so.
        process.emitWarning(
          code(error) === "EEXIST" ? `${lost()}; what it wrote may have interleaved with that process's writes` : `releasing the lock of ${what} failed (other processes take it over after ${staleLockMs} ms): ${(error as Error).message}`,
          { code: "CONTEXT_COMPACTOR_LOCK" },
        );
      }
    },
  };
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
  readonly #indexes = new IndexCache();
  /** The loads made in this turn of the event loop, by file, read together at its end. */
  readonly #loads = new Map<string, Array<{ id: string; resolve: (value: string | undefined) => void; reject: (error: unknown) => void }>>();
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
          if (code(error) === "ENOENT" || code(error) === "ENOTDIR") return;
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
        index.size = this.#scan(buffer, from, index, file);
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
    const file = this.#file(this.#partition(key));
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
    for (const file of await this.#files(prefix)) {
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
    for (const file of await this.#files(prefix)) {
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
        index.size = this.#scan(data, base, index, file);
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
   * Runs `fn` holding `path`'s lock: in this process, then across processes (see `acquireTurn`).
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
    return this.#locked(join(this.#root, "locks", fileName(name)), fn);
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#indexes.clear();
  }
}
