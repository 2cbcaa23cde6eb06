/**
 * What the PostgreSQL and SQLite adapters share: how a key and a value become bytes, the schema
 * and its migrations, and the statements (the two dialects differ in type names and placeholders).
 *
 * A key is one `bytea`/`BLOB`: each segment's UTF-16 code units, big-endian, then `00 00 00 00`;
 * a code unit 0 inside a segment is written `00 00 00 01`. Bytewise order is then the interface's
 * key order (segment by segment, each by UTF-16 code units: `compareKeys`), a prefix of whole
 * segments is a prefix of bytes, so `loadRange` is one index range scan, and U+0000 and lone
 * surrogates are stored as they are. A value is its UTF-8 bytes (`bytea`/`BLOB`, never `jsonb`,
 * which reorders keys and would change a prompt's bytes): U+0000 is kept, a lone surrogate (which
 * UTF-8 cannot carry) is refused with an `InvalidArgumentError`.
 */
import { InvalidArgumentError, StorageError } from "../errors.js";
import { hasLoneSurrogate, type StorageKey, type StorageWrite } from "./adapter.js";

/** The schema version these adapters write; a database at a newer one is refused. */
export const SCHEMA_VERSION = 1;

/** Bytes of `key` (see above). */
export function encodeKey(key: StorageKey): Buffer {
  let size = 0;
  for (const segment of key) {
    size += 2 * segment.length + 4;
    for (let i = segment.indexOf("\u0000"); i >= 0; i = segment.indexOf("\u0000", i + 1)) size += 2;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  for (const segment of key) {
    for (let i = 0; i < segment.length; i++) {
      const unit = segment.charCodeAt(i);
      if (unit === 0) {
        out.writeUInt32BE(1, at);
        at += 4;
      } else {
        out.writeUInt16BE(unit, at);
        at += 2;
      }
    }
    out.writeUInt32BE(0, at);
    at += 4;
  }
  return out;
}

/** The key `bytes` encode; a `StorageError` if they are not an encoded key. */
export function decodeKey(bytes: Uint8Array): StorageKey {
  const buffer = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const key: StorageKey = [];
  let units: number[] = [];
  const bad = () => new StorageError(`a stored key is damaged: ${buffer.toString("hex").slice(0, 80)}`, { reason: "failed" });
  if (buffer.length % 2 !== 0) throw bad();
  for (let at = 0; at < buffer.length; at += 2) {
    const unit = buffer.readUInt16BE(at);
    if (unit !== 0) {
      units.push(unit);
      continue;
    }
    if (at + 2 >= buffer.length) throw bad();
    const next = buffer.readUInt16BE((at += 2));
    if (next === 1) units.push(0);
    else if (next === 0) {
      key.push(fromUnits(units));
      units = [];
    } else throw bad();
  }
  if (units.length > 0) throw bad();
  return key;
}

/** The string of UTF-16 code units `units` (in slices: a spread of many arguments is a RangeError). */
function fromUnits(units: number[]): string {
  let text = "";
  for (let i = 0; i < units.length; i += 8192) text += String.fromCharCode(...units.slice(i, i + 8192));
  return text;
}

/** The bounds of the keys under `prefix` (`undefined`: every key): `[from, until)`. */
export function prefixBounds(prefix: StorageKey): [Buffer, Buffer] | undefined {
  if (prefix.length === 0) return undefined;
  const from = encodeKey(prefix);
  // Every key under the prefix starts with `from`, which ends in a zero byte: the keys that do
  // are those from `from` up to its last byte made 1.
  const until = Buffer.from(from);
  until[until.length - 1] = 1;
  return [from, until];
}

/** The bytes of `value`; refuses a lone surrogate (UTF-8 cannot carry it). */
export function encodeValue(value: string): Buffer {
  if (hasLoneSurrogate(value)) throw new InvalidArgumentError("the value holds a lone UTF-16 surrogate, which this database stores as UTF-8 and cannot carry");
  return Buffer.from(value, "utf8");
}

export function decodeValue(bytes: Uint8Array): string {
  return Buffer.isBuffer(bytes) ? bytes.toString("utf8") : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("utf8");
}

/**
 * A batch as its end state: the last write of each key, split into the values to store and the
 * keys to remove (a batch is applied in one transaction, so its order matters only per key).
 */
export function collapseBatch(writes: StorageWrite[]): { keys: Buffer[]; values: Buffer[]; removed: Buffer[] } {
  const last = new Map<string, { key: Buffer; value: Buffer | undefined }>();
  for (const { key, value } of writes) {
    const encoded = encodeKey(key);
    const id = encoded.toString("latin1");
    last.delete(id);
    last.set(id, { key: encoded, value: value === undefined ? undefined : encodeValue(value) });
  }
  const keys: Buffer[] = [];
  const values: Buffer[] = [];
  const removed: Buffer[] = [];
  for (const { key, value } of last.values()) {
    if (value === undefined) removed.push(key);
    else {
      keys.push(key);
      values.push(value);
    }
  }
  return { keys, values, removed };
}

/** How a dialect names things. */
export interface Dialect {
  /** The type of a byte string (`bytea`, `BLOB`). */
  bytes: string;
  /** What follows a key-value table's definition (`WITHOUT ROWID` in SQLite). */
  tableOptions: string;
  /** The quoted, qualified name of table `name`. */
  table(name: string): string;
}

/**
 * The schema's migrations, in order: migration `i` takes a database from version `i` to `i + 1`.
 * Both dialects run the same statements, with their own type names.
 */
export function migrations(d: Dialect): string[][] {
  return [
    [
      // Keys and values as bytes (see the top of this file); the primary key is the index every
      // range scan uses.
      `CREATE TABLE ${d.table("entries")} (key ${d.bytes} PRIMARY KEY, value ${d.bytes} NOT NULL)${d.tableOptions}`,
    ],
  ];
}

/** The statement that makes the version table (a single row). */
export function versionTable(d: Dialect): string {
  return `CREATE TABLE IF NOT EXISTS ${d.table("schema_version")} (version INTEGER NOT NULL)`;
}

/** The error for a database of a newer schema than this library's. */
export function newerSchema(where: string, version: number): StorageError {
  return new StorageError(
    `${where} holds schema version ${version}, newer than this version of context-compactor writes (${SCHEMA_VERSION}): upgrade context-compactor`,
    { reason: "version" },
  );
}

/** Checks a schema or table name: letters, digits and `_`, not starting with a digit. */
export function checkIdentifier(name: unknown, what: string): asserts name is string {
  if (typeof name !== "string" || !/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(name)) {
    throw new InvalidArgumentError(`${what} must be letters, digits and _ (not starting with a digit, at most 63), got ${JSON.stringify(name)}`);
  }
}

/** Throws an `InvalidArgumentError` unless `ms` is a positive number of milliseconds. */
export function checkMs(ms: unknown, what: string): void {
  if (ms !== undefined && !(typeof ms === "number" && ms > 0 && Number.isFinite(ms))) {
    throw new InvalidArgumentError(`${what} must be a positive number of milliseconds, got ${String(ms)}`);
  }
}
