/**
 * The log files of `FileSystemAdapter`: which file holds a key (the keys that share their first
 * `partitionDepth` segments share one), and the format of an entry, a header line `[key,
 * byteLength]` (`-1`: removed) then the value's UTF-8 bytes and a newline, as written and as read
 * into an index of where each live entry is.
 */
import { readdir } from "node:fs/promises";
import { join } from "node:path";
import { StorageError } from "../errors.js";
import { storageError, type StorageKey, type StorageWrite } from "./adapter.js";
import { code } from "./fs-errno.js";

/** One live entry: its header starts at `start`, its value's bytes at `offset`. */
export interface LogEntry {
  key: StorageKey;
  start: number;
  offset: number;
  length: number;
}

export const entryBytes = (e: LogEntry) => e.offset + e.length + 1 - e.start;

/**
 * Where each entry of a log is, as of `size` bytes of the file `ino` made at `born` (file systems
 * reuse a removed file's inode number at once: a log removed and written again by another process
 * may have its old inode number, even its old size).
 */
export interface LogIndex {
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
export class IndexCache {
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

/**
 * Which log file holds which keys under `root`: the keys that share their first `depth` segments
 * (fewer for a shorter key) share a file, named after those segments.
 */
export class LogFiles {
  constructor(
    readonly root: string,
    readonly depth: number,
  ) {}

  /** The log file of the partition `segments`. */
  file(segments: StorageKey): string {
    return segments.length === 0 ? join(this.root, "@.log") : join(this.root, ...segments.slice(0, -1).map(fileName), `${fileName(segments[segments.length - 1])}.log`);
  }

  partition(key: StorageKey): StorageKey {
    return key.slice(0, Math.min(this.depth, key.length - 1));
  }

  /** Every log file that may hold keys starting with `prefix`. */
  async files(prefix: StorageKey): Promise<string[]> {
    const files = new Set<string>();
    for (let i = 0; i <= Math.min(prefix.length, this.depth); i++) files.add(this.file(prefix.slice(0, i)));
    if (prefix.length < this.depth) {
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
          else if (!name.includes(".") && depth < this.depth) await walk(join(dir, name), depth + 1);
        }
      };
      await walk(prefix.length === 0 ? this.root : join(this.root, ...prefix.map(fileName)), prefix.length + 1);
    }
    return [...files];
  }

  /** The log file that holds `key`. */
  of(key: StorageKey): string {
    return this.file(this.partition(key));
  }

  /** The file of the store's lock `name` (under `root/locks`). */
  lock(name: string): string {
    return join(this.root, "locks", fileName(name));
  }
}

/**
 * Reads the entries in `chunk` (the file's bytes from `base` on) into `index`; returns where the
 * complete entries end (an incomplete last entry is a write that never finished).
 */
export function scanLog(chunk: Buffer, base: number, index: LogIndex, file: string): number {
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

/** `writes` as log entries (a removal's length -1 and no value), in order. */
export function encodeEntries(writes: readonly StorageWrite[]): Buffer {
  const parts: Buffer[] = [];
  for (const { key, value } of writes) {
    const bytes = value === undefined ? undefined : Buffer.from(value, "utf8");
    parts.push(Buffer.from(`${JSON.stringify([key, bytes ? bytes.length : -1])}\n`, "utf8"));
    if (bytes) parts.push(bytes);
    parts.push(Buffer.from("\n"));
  }
  return Buffer.concat(parts);
}
