/**
 * The storage-adapter conformance suite (`context-compactor/storage-test`): every adapter of the
 * package runs it unchanged (memory and file system in Node, IndexedDB and localStorage in
 * Chromium), and so can yours:
 *
 * ```ts
 * import { test } from "node:test";
 * import { runStorageAdapterSuite } from "context-compactor/storage-test";
 * runStorageAdapterSuite({ name: "my adapter", open: () => MyAdapter.open(...), test });
 * ```
 *
 * Without `test`, the cases run one after another and the promise resolves to their results (for a
 * page, or any runner). The cases use keys under a fresh random first segment, and remove them.
 */
import { ContextCompactorError } from "../errors.js";
import { compareKeys, type StorageAdapter, type StorageKey } from "./adapter.js";

export interface StorageSuiteOptions {
  /** Names the cases: `${name}: missing keys`. */
  name: string;
  /** Opens a handle on the storage under test; handles opened one after another share their data. */
  open: () => StorageAdapter | Promise<StorageAdapter>;
  /** Closes a handle (default: its `close()`, if it has one). */
  close?: (adapter: StorageAdapter) => void | Promise<void>;
  /** Registers a case, as `node:test`'s `test` does; without it the cases run at once, in order. */
  test?: (name: string, fn: () => Promise<void>) => unknown;
  /** The large value's size in characters (default 5 MB: 5,000,000, which localStorage's quota of 5 Mi characters an origin holds). */
  largeValue?: number;
  /** The small appends (default 10,000). */
  appends?: number;
  /** Receives one line of figures per case that measures something (default: none). */
  log?: (line: string) => void;
}

export interface StorageSuiteResult {
  name: string;
  ok: boolean;
  error?: unknown;
  ms: number;
}

class SuiteFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "SuiteFailure";
  }
}

function show(value: unknown): string {
  const text = JSON.stringify(value);
  return text === undefined ? String(value) : text.length > 200 ? `${text.slice(0, 200)}… (${text.length} characters)` : text;
}

function same(actual: unknown, expected: unknown, what: string): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected) || (typeof expected === "string" && actual !== expected)) {
    throw new SuiteFailure(`${what}: expected ${show(expected)}, got ${show(actual)}`);
  }
}

async function typedError(fn: () => Promise<unknown>, code: string, what: string): Promise<ContextCompactorError> {
  try {
    await fn();
  } catch (error) {
    if (error instanceof ContextCompactorError && error.code === code) return error;
    throw new SuiteFailure(`${what}: expected a ContextCompactorError with code ${code}, got ${String(error)}`);
  }
  throw new SuiteFailure(`${what}: expected a ContextCompactorError with code ${code}, nothing was thrown`);
}

const keysOf = (entries: Array<{ key: StorageKey }>) => entries.map((e) => e.key);

/** Text of `length` characters with multi-byte characters, a newline and quotes in it. */
function largeText(length: number): string {
  const unit = 'Large value: "quoted", ünïcödé 漢字 and 🙂, a tab\tand a newline\n. ';
  return unit.repeat(Math.ceil(length / unit.length)).slice(0, length - 1) + "!";
}

/** Registers (or runs) the conformance cases for one adapter. */
export function runStorageAdapterSuite(options: StorageSuiteOptions): Promise<StorageSuiteResult[]> {
  const { name, open } = options;
  const close = options.close ?? ((adapter: StorageAdapter) => adapter.close?.());
  const largeLength = options.largeValue ?? 5_000_000;
  const appends = options.appends ?? 10_000;
  const log = options.log ?? (() => {});
  const run = `suite-${Date.now().toString(36)}-${Math.random().toString(36).slice(2, 8)}`;

  /** A case with its own keys (under [run, case]), removed afterwards. */
  const cases: Array<[string, (adapter: StorageAdapter, k: (...segments: string[]) => StorageKey) => Promise<void>]> = [];
  const add = (label: string, fn: (adapter: StorageAdapter, k: (...segments: string[]) => StorageKey) => Promise<void>) => cases.push([label, fn]);

  add("missing keys read as undefined and empty ranges", async (a, k) => {
    same(await a.load(k("nothing")), undefined, "load of a missing key");
    same(await a.loadRange(k("nothing")), [], "loadRange of a missing prefix");
    await a.remove(k("nothing"));
    await a.removeRange(k("nothing"));
    same(await a.load(k("nothing")), undefined, "load after removing a missing key");
  });

  add("a save overwrites the value", async (a, k) => {
    await a.save(k("x"), "first");
    await a.save(k("x"), "second");
    same(await a.load(k("x")), "second", "the value after two saves");
    same(keysOf(await a.loadRange(k())), [k("x")], "one entry");
    await a.save(k("x"), "");
    same(await a.load(k("x")), "", "an empty value is a value");
  });

  add("prefix ranges match whole segments and do not leak into neighbours", async (a, k) => {
    const keys = [k("a"), k("a", "x"), k("a", "x", "y"), k("a", ""), k("ab"), k("ab", "x"), k("a/x"), k("a%2Fx"), k("b"), k("")];
    for (const key of keys) await a.save(key, JSON.stringify(key));
    const expected = [k("a"), k("a", ""), k("a", "x"), k("a", "x", "y")];
    same(keysOf(await a.loadRange(k("a"))), expected, 'loadRange(["a"]), in key order');
    for (const entry of await a.loadRange(k("a"))) same(entry.value, JSON.stringify(entry.key), `the value of ${show(entry.key)}`);
    same(keysOf(await a.loadRange(k("a", "x"))), [k("a", "x"), k("a", "x", "y")], 'loadRange(["a", "x"])');
    same(keysOf(await a.loadRange(k("ab"))), [k("ab"), k("ab", "x")], 'loadRange(["ab"])');
    same(keysOf(await a.loadRange(k("a/x"))), [k("a/x")], 'a "/" inside a segment is not a boundary');
    same(keysOf(await a.loadRange(k())), [...keys].sort(compareKeys), "the whole range, in key order");
    await a.removeRange(k("a"));
    same(keysOf(await a.loadRange(k())), [k(""), k("a%2Fx"), k("a/x"), k("ab"), k("ab", "x"), k("b")], 'removeRange(["a"]) leaves the neighbours');
  });

  add(`a ${(largeLength / 1e6).toFixed(0)} MB value`, async (a, k) => {
    const value = largeText(largeLength);
    const t0 = Date.now();
    await a.save(k("large"), value);
    const saved = Date.now();
    const read = await a.load(k("large"));
    if (read !== value) throw new SuiteFailure(`the large value came back ${read === undefined ? "missing" : `with ${read.length} characters, different`}`);
    same((await a.loadRange(k()))[0]?.value.length, value.length, "the large value through loadRange");
    log(`${name}: a ${value.length.toLocaleString("en")}-character value saved in ${saved - t0} ms, read in ${Date.now() - saved} ms`);
  });

  add("unicode keys and values come back exactly; lone surrogates are kept or refused, never altered", async (a, k) => {
    const texts = ["漢字かな交じり", "emoji 🙂👩‍👩‍👧 and flags 🇫🇷", "עברית and العربية", "e\u0301 vs é", "nul \u0000 byte", "line\nbreak\r\n and \u2028", "tab\tquote\"backslash\\", " "];
    for (const [i, text] of texts.entries()) {
      await a.save(k(text, String(i)), text);
    }
    for (const [i, text] of texts.entries()) same(await a.load(k(text, String(i))), text, `the value at ${show(k(text, String(i)))}`);
    same(keysOf(await a.loadRange(k())).length, texts.length, "every unicode key listed");
    for (const [what, key, value] of [
      ["value", k("lone", "high"), "high \uD800 alone"],
      ["value", k("lone", "low"), "low \uDC00 alone"],
      ["key", k("lone \uDBFF"), "x"],
    ] as const) {
      let stored = true;
      try {
        await a.save(key, value);
      } catch (error) {
        if (!(error instanceof ContextCompactorError && error.code === "InvalidArgument")) {
          throw new SuiteFailure(`a lone surrogate in a ${what} must be kept or refused with an InvalidArgumentError, got ${String(error)}`);
        }
        stored = false;
      }
      if (stored) same(await a.load(key), value, `a lone surrogate in a ${what}, kept`);
      else {
        const found = (await a.loadRange(k())).some((e) => e.value === value || e.key.some((segment) => segment.includes("\uDBFF")));
        same(found, false, `a ${what} refused for its lone surrogate is not stored`);
      }
    }
  });

  add("U+0000 and lone surrogates at the edges of segments keep keys apart, in order, in ranges and batches", async (a, k) => {
    const keys = [k("a"), k("a\u0000"), k("a", "\u0000"), k("a\u0000", ""), k("\u0000"), k(""), k("a", ""), k("a\u0000b"), k("\u0000", "\u0000")];
    for (const key of keys) await a.save(key, JSON.stringify(key));
    same(keysOf(await a.loadRange(k())), [...keys].sort(compareKeys), "every key, in key order");
    same(keysOf(await a.loadRange(k("a"))), [k("a"), k("a", ""), k("a", "\u0000")], 'loadRange(["a"]): not ["a\\u0000"]');
    same(keysOf(await a.loadRange(k("a\u0000"))), [k("a\u0000"), k("a\u0000", "")], 'loadRange(["a\\u0000"]): not ["a\\u0000b"]');
    same(keysOf(await a.loadRange(k("\u0000"))), [k("\u0000"), k("\u0000", "\u0000")], 'loadRange(["\\u0000"])');
    for (const entry of await a.loadRange(k())) same(entry.value, JSON.stringify(entry.key), `the value of ${show(entry.key)}`);
    await a.removeRange(k("a"));
    same(keysOf(await a.loadRange(k())), [k(""), k("\u0000"), k("\u0000", "\u0000"), k("a\u0000"), k("a\u0000", ""), k("a\u0000b")], 'removeRange(["a"]) leaves ["a\\u0000"]');
    // A lone surrogate in a prefix finds nothing stored (or is refused), and touches nothing.
    for (const prefix of [k("\uD800"), k("a\uDC00")]) {
      try {
        same(await a.loadRange(prefix), [], `loadRange(${show(prefix)})`);
        await a.removeRange(prefix);
      } catch (error) {
        if (!(error instanceof ContextCompactorError && error.code === "InvalidArgument")) throw new SuiteFailure(`a lone surrogate in a prefix must find nothing or be refused with an InvalidArgumentError, got ${String(error)}`);
      }
    }
    same(keysOf(await a.loadRange(k())).length, 6, "nothing removed by those prefixes");
    // A batch with a lone surrogate: stored whole (and read back exactly) or refused whole.
    if (typeof a.saveBatch === "function") {
      const batch = [
        { key: k("batch", "nul"), value: "before \u0000 after" },
        { key: k("batch", "lone"), value: "lone \uDFFF here" },
        { key: k("batch", "\uD83D"), value: "key with half an emoji" },
      ];
      let stored = true;
      try {
        await a.saveBatch(batch);
      } catch (error) {
        if (!(error instanceof ContextCompactorError && error.code === "InvalidArgument")) throw new SuiteFailure(`a batch with a lone surrogate must be kept or refused with an InvalidArgumentError, got ${String(error)}`);
        stored = false;
      }
      const found = await a.loadRange(k("batch"));
      if (stored) same(found.map((e) => [e.key, e.value]), batch.map((w) => [w.key, w.value]).sort((x, y) => compareKeys(x[0] as StorageKey, y[0] as StorageKey)), "the batch, kept exactly");
      else same(found, [], "nothing of the refused batch");
    }
  });

  add(`${appends.toLocaleString("en")} small appends, one at a time`, async (a, k) => {
    const t0 = Date.now();
    for (let i = 0; i < appends; i++) await a.save(k("log", String(i).padStart(6, "0")), `entry ${i}`);
    const written = Date.now();
    const entries = await a.loadRange(k("log"));
    same(entries.length, appends, "entries read back");
    for (let i = 0; i < appends; i++) {
      if (entries[i].value !== `entry ${i}` || entries[i].key[entries[i].key.length - 1] !== String(i).padStart(6, "0")) {
        throw new SuiteFailure(`entry ${i} came back as ${show(entries[i])}`);
      }
    }
    log(`${name}: ${appends} appends in ${written - t0} ms (${(((written - t0) / appends) * 1000).toFixed(0)} µs each), read back in ${Date.now() - written} ms`);
  });

  add("concurrent appends from two handles all land", async (a, k) => {
    const b = await open();
    try {
      const writes: Promise<void>[] = [];
      for (let i = 0; i < 200; i++) {
        writes.push(a.save(k("a", String(i).padStart(3, "0")), `from a ${i}`));
        writes.push(b.save(k("b", String(i).padStart(3, "0")), `from b ${i}`));
        writes.push((i % 2 ? a : b).save(k("both"), `last ${i}`));
      }
      await Promise.all(writes);
      const c = await open();
      try {
        same((await c.loadRange(k("a"))).map((e) => e.value), Array.from({ length: 200 }, (_, i) => `from a ${i}`), "a's appends, seen by a third handle");
        same((await c.loadRange(k("b"))).map((e) => e.value), Array.from({ length: 200 }, (_, i) => `from b ${i}`), "b's appends, seen by a third handle");
        const both = await c.load(k("both"));
        if (!both?.startsWith("last ")) throw new SuiteFailure(`a key both handles wrote holds ${show(both)}`);
      } finally {
        if (c !== a) await close(c);
      }
    } finally {
      if (b !== a) await close(b);
    }
  });

  add("loads made together each read their own key, and see the writes before them", async (a, k) => {
    // (What a session list does: many sessions' keys at once, some absent.)
    const keys = Array.from({ length: 12 }, (_, i) => k("t", String(i).padStart(2, "0")));
    for (const [i, key] of keys.slice(0, 10).entries()) await a.save(key, `v${i}`);
    const expected = [...Array.from({ length: 10 }, (_, i) => `v${i}`), undefined, undefined];
    same(await Promise.all(keys.map((key) => a.load(key))), expected, "12 loads made together (the last 2 keys absent)");
    const b = await open();
    try {
      await b.save(keys[10], "from b");
      await b.remove(keys[0]);
      const seen = await Promise.all([a.load(keys[0]), a.load(keys[10]), a.load(keys[5])]);
      same(seen, [undefined, "from b", "v5"], "loads made together after another handle's save and removal");
      await b.save(keys[10], "from b again");
      same(await a.load(keys[10]), "from b again", "a load after another handle overwrote the key");
    } finally {
      if (b !== a) await close(b);
    }
  });

  add("remove and removeRange delete what they name", async (a, k) => {
    for (const key of [k("x"), k("y"), k("y", "1"), k("y", "2"), k("yz")]) await a.save(key, "v");
    await a.remove(k("x"));
    same(await a.load(k("x")), undefined, "a removed key");
    await a.remove(k("y"));
    same(keysOf(await a.loadRange(k("y"))), [k("y", "1"), k("y", "2")], "removing a key leaves the keys under it");
    await a.removeRange(k("y"));
    same(keysOf(await a.loadRange(k())), [k("yz")], "removeRange leaves the neighbour");
    await a.save(k("x"), "again");
    same(await a.load(k("x")), "again", "a removed key saved again");
  });

  add("batches apply in order, and a refused batch writes nothing", async (a, k) => {
    if (typeof a.saveBatch !== "function") return;
    await a.save(k("gone"), "before");
    await a.saveBatch([
      { key: k("1"), value: "one" },
      { key: k("gone"), value: undefined },
      { key: k("1"), value: "one, again" },
      { key: k("2"), value: "two" },
    ]);
    same((await a.loadRange(k())).map((e) => [e.key, e.value]), [[k("1"), "one, again"], [k("2"), "two"]], "after the batch");
    await typedError(() => a.saveBatch!([{ key: k("3"), value: "three" }, { key: [] as string[], value: "x" }]), "InvalidArgument", "a batch with an empty key");
    same(await a.load(k("3")), undefined, "nothing of the refused batch");
  });

  add("bad arguments are typed errors", async (a, k) => {
    await typedError(() => a.save(k("x"), 42 as unknown as string), "InvalidArgument", "a value that is not a string");
    await typedError(() => a.load("x" as unknown as StorageKey), "InvalidArgument", "a key that is not an array");
    await typedError(() => a.load([]), "InvalidArgument", "an empty key");
    await typedError(() => a.save([1] as unknown as StorageKey, "v"), "InvalidArgument", "a key segment that is not a string");
    same(await a.load(k("x")), undefined, "nothing was stored");
  });

  add("data outlives closing and reopening", async (a, k) => {
    await a.save(k("kept"), "across a reopen");
    await a.saveBatch?.([{ key: k("batched"), value: "also" }]);
    await close(a);
    const reopened = await open();
    try {
      same(await reopened.load(k("kept")), "across a reopen", "a value after closing and reopening");
      if (a.saveBatch) same(await reopened.load(k("batched")), "also", "a batched value after reopening");
      if (typeof a.close === "function" && reopened !== a) {
        await typedError(() => a.load(k("kept")), "Storage", "a closed handle");
      }
      await reopened.removeRange(k());
    } finally {
      if (reopened !== a) await close(reopened);
    }
  });

  const runCase = async (label: string, fn: (adapter: StorageAdapter, k: (...s: string[]) => StorageKey) => Promise<void>) => {
    const adapter = await open();
    const k = (...segments: string[]) => [run, label.slice(0, 24), ...segments];
    try {
      await fn(adapter, k);
    } finally {
      try {
        await adapter.removeRange([run]);
        await close(adapter);
      } catch {
        // Closed by the case itself.
      }
    }
  };

  if (options.test) {
    for (const [label, fn] of cases) options.test(`${name}: ${label}`, () => runCase(label, fn));
    return Promise.resolve([]);
  }
  return (async () => {
    const results: StorageSuiteResult[] = [];
    for (const [label, fn] of cases) {
      const t0 = Date.now();
      try {
        await runCase(label, fn);
        results.push({ name: `${name}: ${label}`, ok: true, ms: Date.now() - t0 });
      } catch (error) {
        results.push({ name: `${name}: ${label}`, ok: false, error, ms: Date.now() - t0 });
      }
    }
    return results;
  })();
}
