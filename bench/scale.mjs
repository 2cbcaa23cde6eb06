#!/usr/bin/env node
// Scale: long histories in a busy app. The shared tau-bench runs (5,308 messages),
// repeated with fresh tool-call ids up to 5k, 100k and 300k messages, appended one message at a
// time into a ConversationHistory, each size in fresh Node processes:
//   append       time per message (one `append` call each)
//   first build  the first `build()` (every message counted, the whole pipeline), with an idle JS
//                heap and with ~300 MB of live JS objects beside it (a chat page, an agent server)
//   warm build   a build after one more append (median of 21), with the default options (the full
//                pipeline: extractive summary, digests, compression) and with the summary off
//   export       `history.export()`, then `ConversationHistory.import()` of that object
//   memory       the wasm memory the messages take (after the first build, less what the encoder's
//                tables took before), per message, against the message's JSON
// and the targets. Run: npm run build && node bench/scale.mjs [sizes…] (e.g. 5000 100000);
// SCALE_BALLAST_MB=300 sets the live heap of the busy runs; SCALE_BUSY=0 leaves them out;
// SCALE_TIMES=1 prints every warm build's time (on a shared machine the median hides outliers).
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { message, templates } from "./long-conversation.mjs";

const SIZES = process.argv.slice(2).filter((a) => /^\d+$/.test(a)).map(Number);
const BALLAST_MB = Number(process.env.SCALE_BALLAST_MB ?? 300);
const BUILD = { budget: { contextWindow: 100_000, targetRatio: 1 } };
/** The warm builds' options: the defaults (every stage on) and the summary off. */
const WARM_BUILDS = { full: BUILD, "no summary": { ...BUILD, summary: null } };
const WARM = 21;
const BUSY = process.env.SCALE_BUSY !== "0";

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (f) => {
  const t0 = performance.now();
  const out = f();
  return [performance.now() - t0, out];
};

/** One measurement in this process: `n` messages, with or without the ballast. */
async function child(n, busy) {
  const { ConversationHistory } = await import("../dist/node.js");
  // The glue's initSync hands back the instance's exports once instantiated: the bench reads its memory.
  const wasm = (await import("../pkg/context_compactor.js")).initSync();
  let ballast = null;
  if (busy) {
    // Small live objects, as an app's state is: what a full GC has to mark.
    ballast = [];
    while (process.memoryUsage().heapUsed < BALLAST_MB * 2 ** 20) {
      const chunk = new Array(100_000);
      for (let i = 0; i < chunk.length; i++) chunk[i] = { id: i, name: `item ${i}`, tags: [i, i + 1] };
      ballast.push(chunk);
    }
  }
  const heapMb = process.memoryUsage().heapUsed / 2 ** 20;
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  history.append(message(0)); // the encoder's tables are built on first use: not the messages' memory
  history.tokenCount();
  const baseMemory = wasm.memory.buffer.byteLength;
  let jsonBytes = JSON.stringify(message(0)).length;
  const t0 = performance.now();
  for (let i = 1; i < n; i++) {
    const m = message(i);
    history.append(m);
    jsonBytes += JSON.stringify(m).length;
  }
  const append = performance.now() - t0;
  const [firstBuild] = time(() => history.build(BUILD));
  const memory = wasm.memory.buffer.byteLength;
  const out = { n, busy, heapMb, appendUs: (append * 1000) / (n - 1), firstBuild, memory, baseMemory, jsonBytes };
  if (!busy) {
    out.warmBuild = {};
    for (const [name, options] of Object.entries(WARM_BUILDS)) {
      history.build(options); // new options: the first build with them is not a warm one
      const warm = [];
      for (let i = 0; i < WARM; i++) {
        history.append({ role: "user", content: `One more thing (${i}): can you also check my baggage allowance?` });
        warm.push(time(() => history.build(options))[0]);
      }
      out.warmBuild[name] = median(warm);
      if (process.env.SCALE_TIMES) console.error(name, warm.map((t) => t.toFixed(2)).join(" "));
    }
    const [exportMs, exported] = time(() => history.export());
    const [importMs, imported] = time(() => ConversationHistory.import(exported));
    if (imported.length !== history.length) throw new Error("the import lost messages");
    Object.assign(out, { exportMs, importMs, memoryAfterImport: wasm.memory.buffer.byteLength });
  }
  if (ballast) ballast.length = 0;
  return out;
}

if (process.argv[2] === "--child") {
  const out = await child(Number(process.argv[3]), process.argv[4] === "busy");
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
}

const self = fileURLToPath(import.meta.url);
const measure = (n, mode) => {
  const text = execFileSync(process.execPath, ["--max-old-space-size=8192", self, "--child", String(n), mode], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
    stdio: ["ignore", "pipe", "inherit"],
  });
  return JSON.parse(text.trim().split("\n").pop());
};

const sizes = SIZES.length ? SIZES : [5_000, 100_000, 300_000];
const fmtMs = (ms) => (ms < 10 ? ms.toFixed(2) : ms < 1000 ? ms.toFixed(1) : ms.toFixed(0)) + " ms";
const rows = {};
const results = [];
console.log(`scale: tau-bench messages repeated (${templates.length} a lap), appended one at a time; build ${JSON.stringify(BUILD)}`);
for (const n of sizes) {
  const idle = measure(n, "idle");
  const busy = BUSY ? measure(n, "busy") : null;
  results.push({ n, idle, busy });
  const perMessage = (idle.memory - idle.baseMemory) / n;
  const jsonPerMessage = idle.jsonBytes / n;
  rows[n.toLocaleString("en-US")] = {
    "append/msg": `${idle.appendUs.toFixed(1)} µs`,
    "append/msg busy": busy ? `${busy.appendUs.toFixed(1)} µs` : "-",
    "first build": fmtMs(idle.firstBuild),
    [`first build, ${BALLAST_MB} MB heap`]: busy ? `${fmtMs(busy.firstBuild)} (${(busy.firstBuild / idle.firstBuild).toFixed(2)}×)` : "-",
    ...Object.fromEntries(Object.entries(idle.warmBuild).map(([name, ms]) => [`warm build, ${name}`, fmtMs(ms)])),
    export: fmtMs(idle.exportMs),
    import: fmtMs(idle.importMs),
    "wasm memory/msg": `${(perMessage / 1024).toFixed(2)} KB`,
    "JSON/msg": `${(jsonPerMessage / 1024).toFixed(2)} KB`,
    "memory/JSON": `${(perMessage / jsonPerMessage).toFixed(1)}×`,
  };
  console.log(
    `  ${n.toLocaleString("en-US")} messages: idle heap ${idle.heapMb.toFixed(0)} MB, busy heap ${busy ? busy.heapMb.toFixed(0) : "-"} MB; ` +
      `wasm memory ${(idle.baseMemory / 2 ** 20).toFixed(0)} MB with the encoder, ${(idle.memory / 2 ** 20).toFixed(0)} MB after the first build (${(idle.memoryAfterImport / 2 ** 20).toFixed(0)} MB after the import)`,
  );
}
console.table(rows);

// The targets, measured here; the largest size decides.
const last = results[results.length - 1];
const verdict = (ok) => (ok ? "met" : "NOT met");
const slowdown = last.busy ? last.busy.firstBuild / last.idle.firstBuild : NaN;
const memoryRatio = (last.idle.memory - last.idle.baseMemory) / last.idle.jsonBytes;
console.log(`targets at ${last.n.toLocaleString("en-US")} messages (issue #18):`);
if (last.busy) {
  console.log(`  defect 2, first build with a ${BALLAST_MB} MB heap at most 1.5× idle: ${verdict(slowdown <= 1.5)} (${slowdown.toFixed(2)}×)`);
}
console.log(
  `  defect 3, wasm memory at most 2× the messages' JSON: ${verdict(memoryRatio <= 2)} (${memoryRatio.toFixed(1)}×)` +
    (memoryRatio <= 2
      ? ""
      : `; ${((last.idle.memory - last.idle.baseMemory) / last.n).toFixed(0)} B a message after the first build (the log itself is ~1.4× the JSON; the rest is the first build's peak: the units' structure, the extractive summary of the whole history, the receipt's fates; and the memory grows by a quarter at a step)`),
);
for (const [name, ms] of Object.entries(last.idle.warmBuild)) {
  console.log(`  defect 4, warm build after one append within 5 ms (${name}): ${verdict(ms <= 5)} (${fmtMs(ms)})`);
}
