// The persistence benchmark's phases, shared by bench/persist.mjs (Node, file system) and
// bench/persist-browser.mjs (Chromium, IndexedDB and localStorage): append messages one at a
// time to a stored session, saving each (flush()); then, each in a fresh process or a reloaded
// page (no warm tokenizer caches), read the records, open the session and build its context, and
// for comparison build the same messages never stored. "context-compactor" resolves to this package: in Node by the
// package's self-reference, in the browser through the page's import map.
import { SessionStore, ConversationHistory } from "context-compactor";

const encoder = new TextEncoder();
const utf8 = (text) => encoder.encode(text).length;
const BUDGET = { contextWindow: 100_000, targetRatio: 1 };

/** `adapter` with the UTF-8 bytes of every key and value it is asked to write added to `counter`. */
function counting(adapter, counter) {
  const add = (key, value) => {
    counter.writes++;
    counter.bytes += utf8(key.join("/")) + (value === undefined ? 0 : utf8(value));
  };
  return new Proxy(adapter, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property === "save") return (key, text) => (add(key, text), value.call(target, key, text));
      if (property === "remove") return (key) => (add(key), value.call(target, key));
      if (property === "saveBatch") return (writes) => (writes.forEach((w) => add(w.key, w.value)), value.call(target, writes));
      return value.bind(target);
    },
  });
}

/** `adapter` with the time its reads take (and their number) added to `reads`. */
function timed(adapter, reads) {
  return new Proxy(adapter, {
    get(target, property) {
      const value = Reflect.get(target, property, target);
      if (typeof value !== "function") return value;
      if (property !== "load" && property !== "loadRange") return value.bind(target);
      return async (...args) => {
        const t0 = performance.now();
        try {
          return await value.apply(target, args);
        } finally {
          reads.ms += performance.now() - t0;
          reads.calls++;
        }
      };
    },
  });
}

const quantile = (xs, q) => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
};
const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;

/**
 * Appends `messages` one at a time to a new session ("bench") in a store over `openAdapter()`,
 * flushing after each: the cost of an append and the bytes it writes. At each user message the
 * context is built and saved, as a chat app does each turn (not part of the append figures).
 */
export async function appendPhase({ openAdapter, messages, buckets = 5 }) {
  const counter = { bytes: 0, writes: 0 };
  const adapter = await openAdapter();
  const store = await SessionStore.open(counting(adapter, counter), { autosave: false, broadcast: false });
  const session = await store.create({ id: "bench", title: "persist bench", encoding: "o200k_base", format: "openai" });
  const createdBytes = counter.bytes;
  const times = [];
  const ratios = [];
  const written = [];
  const overheads = [];
  const large = []; // the ratio for messages of 1 KB or more, where the fixed overhead matters less
  const builds = { count: 0, bytes: 0 };
  let messageBytes = 0;
  const size = Math.ceil(messages.length / buckets);
  const wholeSaves = []; // at the end of each fifth: the whole session rewritten, as apps did before
  for (const message of messages) {
    const json = utf8(JSON.stringify(message));
    const before = counter.bytes;
    const t0 = performance.now();
    session.history.append(message);
    await session.flush();
    times.push(performance.now() - t0);
    const appended = counter.bytes - before;
    written.push(appended);
    ratios.push(appended / json);
    overheads.push(appended - json);
    if (json >= 1024) large.push(appended / json);
    messageBytes += json;
    if (message.role === "user") {
      // A chat app builds the context each turn: the summary it makes is saved with the session
      // (outside the append's figures), so that a reopened session starts from it.
      const bytes = counter.bytes;
      session.history.build({ budget: BUDGET });
      await session.flush();
      builds.bytes += counter.bytes - bytes;
      builds.count++;
    }
    if (times.length % size === 0 || times.length === messages.length) wholeSaves.push(await wholeSave(adapter, session, times.length));
  }
  await store.close();
  // Flat as the history grows: the ratio's median in each fifth of the appends.
  const flat = Array.from({ length: buckets }, (_, b) => {
    const part = ratios.slice(b * size, (b + 1) * size);
    const whole = wholeSaves[b];
    return {
      from: b * size + 1,
      to: Math.min(messages.length, (b + 1) * size),
      median: quantile(part, 0.5),
      mean: mean(part),
      appendMs: quantile(times.slice(b * size, (b + 1) * size), 0.5),
      appendBytes: quantile(written.slice(b * size, (b + 1) * size), 0.5),
      whole,
    };
  });
  return {
    messages: messages.length,
    appendMedianMs: quantile(times, 0.5),
    appendP99Ms: quantile(times, 0.99),
    appendMaxMs: Math.max(...times),
    bytesPerAppendMedian: quantile(written, 0.5),
    ratioMedian: quantile(ratios, 0.5),
    ratioP99: quantile(ratios, 0.99),
    largeCount: large.length,
    largeRatioMedian: large.length ? quantile(large, 0.5) : NaN,
    overheadMedian: quantile(overheads, 0.5),
    overheadP99: quantile(overheads, 0.99),
    ratioTotal: (counter.bytes - createdBytes - builds.bytes) / messageBytes,
    builds: builds.count,
    buildBytes: builds.bytes,
    messageBytes,
    bytesWritten: counter.bytes - createdBytes - builds.bytes,
    writes: counter.writes,
    flat,
  };
}

/** Where `wholeSave` writes, beside the store's own records (removed after each save). */
const WHOLE_KEY = ["bench-whole-session"];

/**
 * What a save cost before this package, at `messages` messages: the whole session exported and
 * written under one key (`localStorage.setItem(key, JSON.stringify(session.export()))`), timed
 * on the same adapter; `refused` when the storage would not take it (a full quota).
 */
async function wholeSave(adapter, stored, messages) {
  const t0 = performance.now();
  const text = JSON.stringify(stored.session.export());
  try {
    await adapter.save(WHOLE_KEY, text);
  } catch (error) {
    return { messages, ms: performance.now() - t0, bytes: utf8(text), refused: `${error.name}${error.reason ? ` (${error.reason})` : ""}` };
  }
  const ms = performance.now() - t0;
  // Not left to take room from the store's own records (localStorage's quota is ~5 M characters).
  await adapter.remove(WHOLE_KEY);
  return { messages, ms, bytes: utf8(text) };
}

/**
 * Session "bench" opened cold (run it in a fresh process or a reloaded page) and its first build;
 * with `select`, a first build that selects only (no summary, compression or digests).
 */
export async function coldPhase({ openAdapter, select = false }) {
  const t0 = performance.now();
  const adapter = await openAdapter();
  const adapterMs = performance.now() - t0;
  const reads = { ms: 0, calls: 0 };
  const store = await SessionStore.open(timed(adapter, reads), { broadcast: false });
  const session = await store.open("bench");
  const openMs = performance.now() - t0;
  const built = session.history.build(select ? { budget: BUDGET, summary: null, compress: null, digest: null } : { budget: BUDGET });
  const openAndBuildMs = performance.now() - t0;
  const t1 = performance.now();
  session.history.build({ budget: BUDGET });
  const nextBuildMs = performance.now() - t1;
  const result = {
    loaded: session.history.length,
    builtMessages: built.messages.length,
    builtTokens: built.tokens.total,
    openMs,
    openAndBuildMs,
    nextBuildMs,
    // The open's phases: the adapter's own open, its reads (the meta record, the data records),
    // and the rest (the lock, `Session.load`); then the first build.
    phases: { adapterMs, readMs: reads.ms, reads: reads.calls, loadMs: openMs - adapterMs - reads.ms, buildMs: openAndBuildMs - openMs },
  };
  await store.close();
  return result;
}

/**
 * Reading every stored record, cold (`readMs`: the adapter's open and the read), then parsing
 * each with the engine's own JSON.parse (`parseMs`): with none of this package's wasm, so in a
 * restarted browser it is the floor under a cold open, what the browser takes before any code of
 * ours could run.
 */
export async function readPhase({ openAdapter }) {
  const t0 = performance.now();
  const adapter = await openAdapter();
  const adapterMs = performance.now() - t0;
  const records = await adapter.loadRange([]);
  const readMs = performance.now() - t0;
  const t1 = performance.now();
  for (const { value } of records) JSON.parse(value);
  const parseMs = performance.now() - t1;
  await adapter.close?.();
  return { readMs, adapterMs, parseMs, storedRecords: records.length, storedBytes: records.reduce((n, r) => n + r.value.length, 0) };
}

/** The same messages never stored, cold: one appendMany and the first build. */
export function memoryPhase({ messages }) {
  const t0 = performance.now();
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  history.appendMany(messages);
  history.build({ budget: BUDGET });
  return { inMemoryBuildMs: performance.now() - t0 };
}

/** A cold open's phases as text. */
export function phases({ phases: p }, f = (x) => x.toFixed(1)) {
  return `phases: adapter open ${f(p.adapterMs)} ms, ${p.reads} reads ${f(p.readMs)} ms, lock + Session.load ${f(p.loadMs)} ms, first build ${f(p.buildMs)} ms`;
}

/** The figures as lines of text, for a console. */
export function describe(label, r) {
  const f = (x, d = 2) => x.toFixed(d);
  return [
    `${label}: ${r.messages.toLocaleString()} messages appended one at a time, each saved; the context built and saved at each of the ${r.builds.toLocaleString()} user messages (${r.buildBytes.toLocaleString()} B, not in the append figures)`,
    `  append + save: median ${f(r.appendMedianMs)} ms, p99 ${f(r.appendP99Ms)} ms, max ${f(r.appendMaxMs, 1)} ms`,
    `  bytes written per append / message JSON: median ${f(r.ratioMedian)}, p99 ${f(r.ratioP99)}, ` +
      `all appends ${f(r.ratioTotal)} (${r.bytesWritten.toLocaleString()} B for ${r.messageBytes.toLocaleString()} B of messages; median ${r.bytesPerAppendMedian} B an append)`,
    `  bytes an append writes beyond the message's JSON (keys, envelopes, the meta record): median ${r.overheadMedian} B, p99 ${r.overheadP99.toLocaleString()} B`,
    `  for the ${r.largeCount.toLocaleString()} messages of 1 KB or more: median ratio ${f(r.largeRatioMedian)}`,
    `  the median ratio by fifths of the history: ${r.flat.map((b) => `${b.from}-${b.to}: ${f(b.median)}`).join(", ")}`,
    `  against the whole session rewritten at each save (JSON.stringify(session.export()) under one key, as apps did with localStorage.setItem; timed once at the end of each fifth), ` +
      `its cost ÷ this store's median append in that fifth: ` +
      r.flat
        .filter((b) => b.whole)
        .map(({ whole: w, to, appendMs, appendBytes }) =>
          w.refused
            ? `at ${to.toLocaleString()}: refused, ${w.refused} (${w.bytes.toLocaleString()} B)`
            : `at ${to.toLocaleString()}: ${f(w.ms, 1)} ms (${f(w.ms / appendMs, 0)}x), ${w.bytes.toLocaleString()} B (${f(w.bytes / appendBytes, 0)}x)`,
        )
        .join("; "),
    `  cold (a fresh process or page each): reading the ${r.storedRecords} records (${(r.storedBytes / 1e6).toFixed(2)} M characters) ${f(r.readMs, 1)} ms`,
    `  cold open ${f(r.cold.openMs, 1)} ms, open + first build ${f(r.cold.openAndBuildMs, 1)} ms ` +
      `(${r.cold.loaded.toLocaleString()} messages loaded; built ${r.cold.builtMessages} messages, ${r.cold.builtTokens.toLocaleString()} tokens); the next build ${f(r.cold.nextBuildMs, 1)} ms`,
    `    ${phases(r.cold)}`,
    ...(r.reload
      ? [
          `  the page reloaded (the wasm compiled by the open before, kept by the browser): open ${f(r.reload.openMs, 1)} ms, ` +
            `open + first build ${f(r.reload.openAndBuildMs, 1)} ms; the next build ${f(r.reload.nextBuildMs, 1)} ms`,
          `    ${phases(r.reload)}`,
        ]
      : []),
    `  ${r.reload ? "reloaded again" : "cold"}: open + a first build that selects only (no summary, compression, digests) ${f(r.select.openAndBuildMs, 1)} ms`,
    `  the same messages never stored, ${r.reload ? "reloaded again" : "cold"}: appendMany + first build ${f(r.inMemoryBuildMs, 1)} ms`,
  ];
}
