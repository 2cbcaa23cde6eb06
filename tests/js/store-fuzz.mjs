// A randomized schedule for the session store: three tabs (stores over one memory storage) append
// to one session across a chunk boundary, flush, sync and reload, while writes fail on a schedule
// (failing-storage.mjs `failing`); then every tab saves and syncs. The problems found: a message
// stored twice or lost, a writer's messages out of order, a tab whose copy differs from storage.
import { SessionStore, MemoryStorageAdapter, StorageError } from "context-compactor";
import { failing } from "./failing-storage.mjs";

export async function fuzzSession({ seed = 1, modes = ["fail", "prefix"], steps = 400, start = 985, batch = true } = {}) {
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pick = (n) => Math.floor(rand() * n);
  const data = new Map();
  {
    const s = await SessionStore.open(new MemoryStorageAdapter({ data }), { autosave: false });
    const c = await s.create({ id: "f" });
    c.history.appendMany(Array.from({ length: start }, (_, i) => ({ role: i % 2 ? "assistant" : "user", content: `seed ${i}` })));
    await c.flush();
    await s.close();
  }
  let calm = false;
  const confirmed = new Set();
  const newWriter = async (name) => {
    const adapter = failing(
      data,
      (n, writes) => {
        if (calm || rand() >= 0.15) return undefined;
        const mode = modes[pick(modes.length)];
        return mode === "prefix" ? { prefix: pick(writes.length) } : mode;
      },
      { batch },
    );
    const store = await SessionStore.open(adapter, { autosave: false });
    return { name, handle: await store.open("f"), n: 0 };
  };
  const writers = [];
  for (const name of ["A", "B", "C"]) writers.push(await newWriter(name));
  for (let step = 0; step < steps; step++) {
    const w = writers[pick(writers.length)];
    const r = rand();
    if (r < 0.5) {
      const k = 1 + pick(r < 0.1 ? 20 : 3);
      for (let i = 0; i < k; i++) w.handle.history.append({ role: "user", content: `${w.name}.${w.n++}` });
    } else if (r < 0.85) {
      const pending = w.handle.history.messages().map((m) => m.content);
      try {
        await w.handle.flush();
        for (const t of pending) confirmed.add(t);
      } catch (error) {
        if (!(error instanceof StorageError)) throw error;
      }
    } else if (r < 0.95) {
      await w.handle.sync();
    } else {
      // A reload: this writer's unsaved messages go with it.
      writers[writers.indexOf(w)] = await newWriter(`${w.name}'`);
    }
  }
  calm = true;
  for (const w of writers) {
    await w.handle.flush();
    for (const t of w.handle.history.messages().map((m) => m.content)) confirmed.add(t);
  }
  for (const w of writers) await w.handle.sync();
  const reader = await SessionStore.open(new MemoryStorageAdapter({ data, name: "fuzz-reader" }));
  const stored = (await reader.open("f")).history.messages().map((m) => m.content);
  const problems = [];
  const seen = new Map();
  for (const t of stored) seen.set(t, (seen.get(t) ?? 0) + 1);
  for (const [t, n] of seen) if (n > 1) problems.push(`${t} stored ${n} times`);
  for (const t of confirmed) if (!seen.has(t)) problems.push(`${t} lost`);
  for (const w of writers) {
    if (w.handle.history.messages().map((m) => m.content).join("\n") !== stored.join("\n")) problems.push(`tab ${w.name} differs from the storage`);
  }
  const last = new Map();
  for (const t of stored.filter((t) => !t.startsWith("seed"))) {
    const [who, n] = t.split(".");
    if ((last.get(who) ?? -1) >= Number(n)) problems.push(`${t} out of order`);
    last.set(who, Number(n));
  }
  return problems;
}

// node tests/j./store-fuzz.mjs <seed> <modes,...> [nobatch] [steps]: one schedule, its problems.
if (import.meta.url === `file://${process.argv[1]}`) {
  const [seed, modes, batch, steps] = process.argv.slice(2);
  const problems = await fuzzSession({ seed: Number(seed ?? 1), modes: (modes ?? "fail,prefix").split(","), batch: batch !== "nobatch", steps: Number(steps ?? 400) });
  console.log(`seed ${seed}: ${problems.length} problems`, problems.slice(0, 5).join("; "));
  process.exitCode = problems.length ? 1 : 0;
}
