#!/usr/bin/env node
// `npm run bench`: our token counting against gpt-tokenizer, js-tiktoken and the tiktoken npm
// package (wasm), in one Node process, on the shared tau-bench conversations:
//   bulk         the concatenation of every message text (content strings + tool-call arguments)
//   per message  each of the 5,308 messages' texts counted separately (as an agent loop would)
// for o200k_base and cl100k_base: throughput (MB/s), cost per message (µs), identical totals.
// Our lite entry (no embedded ranks, built for size; ranks loaded from the package's files) is
// measured too. Then cold start to the first count (a fresh process each), and the size of the
// shipped wasm of both builds. Prints numbers, ratios and the targets; asserts nothing.
//   BENCH_REPEAT=5   timed repetitions per measurement (the best is kept; default 3)
//   BENCH_COLD=5     cold-start samples per library (the median is kept; default 5)
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { execFileSync } from "node:child_process";
import { cpus } from "node:os";
import { performance } from "node:perf_hooks";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

import { Tokenizer } from "context-compactor";
import { runList, sharedPresent } from "./fixtures.mjs";
import * as lite from "context-compactor/lite";
import * as gptO200k from "gpt-tokenizer/encoding/o200k_base";
import * as gptCl100k from "gpt-tokenizer/encoding/cl100k_base";
import { Tiktoken as JsTiktoken } from "js-tiktoken/lite";
import jsO200k from "js-tiktoken/ranks/o200k_base";
import jsCl100k from "js-tiktoken/ranks/cl100k_base";
import { get_encoding } from "tiktoken";

const REPEAT = Number(process.env.BENCH_REPEAT ?? 3);
const COLD = Number(process.env.BENCH_COLD ?? 5);
const ROOT = new URL("../", import.meta.url);
const require = createRequire(import.meta.url);

// --- the corpus -------------------------------------------------------------------------------
const runs = runList();
const perMessage = []; // one entry per message: its texts
for (const run of runs) {
  for (const m of run.traj) {
    const texts = [];
    if (typeof m.content === "string") texts.push(m.content);
    else if (Array.isArray(m.content)) for (const p of m.content) if (typeof p.text === "string") texts.push(p.text);
    for (const call of m.tool_calls ?? []) texts.push(call.function.arguments);
    perMessage.push(texts);
  }
}
const allTexts = perMessage.flat();
const bulk = allTexts.join("\n");
const bulkMB = Buffer.byteLength(bulk) / 1e6;
const messagesMB = allTexts.reduce((n, t) => n + Buffer.byteLength(t), 0) / 1e6;
if (allTexts.some((t) => t.includes("<|"))) console.warn("note: some texts contain '<|' (special-token-like text)");

// Unrelated text, 60,000 pseudo-random words (~500 KB): every counter loads its ranks and warms
// its JIT on it first (a short warm-up leaves wasm and JS half tiered-up). It also evicts our
// encoder's cache of recent pieces (4,096 slots, direct-mapped) before each timed pass.
let seed = 12345;
const rnd = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32;
const WARM = Array.from({ length: 60000 }, () =>
  Array.from({ length: 6 + Math.floor(rnd() * 7) }, () => String.fromCharCode(97 + Math.floor(rnd() * 26))).join("")).join(" ") +
  "\nünïcödé ✓ 😀 日本語のテキスト 1234567 {\"json\": [1, 2.5, null]}";

// --- the counters -----------------------------------------------------------------------------
const tiktokenEncoders = [];
function counters(encoding) {
  const ours = new Tokenizer(encoding);
  lite.loadRanks(encoding, readFileSync(lite.rankFile(encoding)));
  const ourLite = new lite.Tokenizer(encoding);
  const gpt = encoding === "o200k_base" ? gptO200k : gptCl100k;
  const js = new JsTiktoken(encoding === "o200k_base" ? jsO200k : jsCl100k);
  const tk = get_encoding(encoding);
  tiktokenEncoders.push(tk);
  return [
    // Our Tokenizer.count: one call across the JS/wasm boundary per text. Its encoder keeps a
    // small cache of recent pieces: refilled with unrelated pieces before every timed pass
    // (reset), so each pass sees text it has not seen before.
    { name: "context-compactor", count: (t) => ours.count(t), reset: () => ours.count(WARM) },
    { name: "  lite entry", count: (t) => ourLite.count(t), reset: () => ourLite.count(WARM) },
    // gpt-tokenizer keeps an LRU cache (100k entries) of merged pieces: cleared before every timed
    // pass (reset), so each pass sees text it has not seen before, as an agent's new messages are.
    { name: "gpt-tokenizer", count: (t) => gpt.countTokens(t), reset: () => gpt.clearMergeCache() },
    { name: "js-tiktoken", count: (t) => js.encode(t, [], []).length },
    { name: "tiktoken (wasm)", count: (t) => tk.encode_ordinary(t).length },
  ];
}

function time(fn, reset) {
  let best = Infinity;
  let result;
  for (let i = 0; i < REPEAT; i++) {
    reset?.();
    const t0 = performance.now();
    result = fn();
    best = Math.min(best, performance.now() - t0);
  }
  return { ms: best, result };
}

const fmt = (n, d = 2) => (Number.isFinite(n) ? n.toFixed(d) : "–");
const pad = (s, n) => String(s).padEnd(n);
const lpad = (s, n) => String(s).padStart(n);

console.log(`context-compactor token-count benchmark — node ${process.version}, ${cpus()[0]?.model ?? "cpu"} ×${cpus().length}`);
console.log(`corpus: ${runs.length} ${sharedPresent ? "tau-bench" : "airline (tests/fixtures)"} runs, ${perMessage.length} messages, ${allTexts.length} texts; ` +
  `bulk ${fmt(bulkMB)} MB; best of ${REPEAT} passes\n`);

const results = {};
for (const encoding of ["o200k_base", "cl100k_base"]) {
  const list = counters(encoding);
  for (const c of list) c.count(WARM);
  const rows = [];
  for (const c of list) {
    const b = time(() => c.count(bulk), c.reset);
    const m = time(() => {
      let total = 0;
      for (const texts of perMessage) for (const t of texts) total += c.count(t);
      return total;
    }, c.reset);
    rows.push({ name: c.name, bulkMs: b.ms, bulkTotal: b.result, msgMs: m.ms, msgTotal: m.result });
  }
  // Ours, the way a history is counted: one countMessages call per run (chat rules included).
  const ours = new Tokenizer(encoding);
  const cm = time(() => runs.reduce((n, r) => n + ours.countMessages(r.traj).total, 0));
  results[encoding] = { rows, countMessagesMs: cm.ms, countMessagesTotal: cm.result };

  const base = rows[0];
  const sameBulk = rows.every((r) => r.bulkTotal === base.bulkTotal);
  const sameMsg = rows.every((r) => r.msgTotal === base.msgTotal);
  console.log(`${encoding}`);
  console.log(`  ${pad("library", 20)} ${lpad("bulk MB/s", 10)} ${lpad("ours ×", 7)} ${lpad("msg MB/s", 9)} ${lpad("µs/msg", 8)} ${lpad("ours ×", 7)} ${lpad("bulk total", 11)} ${lpad("msg total", 10)}`);
  for (const r of rows) {
    const bulkRate = bulkMB / (r.bulkMs / 1000);
    const msgRate = messagesMB / (r.msgMs / 1000);
    const us = (r.msgMs * 1000) / perMessage.length;
    console.log(`  ${pad(r.name, 20)} ${lpad(fmt(bulkRate), 10)} ${lpad(fmt(r.bulkMs / base.bulkMs), 7)} ` +
      `${lpad(fmt(msgRate), 9)} ${lpad(fmt(us, 1), 8)} ${lpad(fmt(r.msgMs / base.msgMs), 7)} ` +
      `${lpad(r.bulkTotal, 11)} ${lpad(r.msgTotal, 10)}`);
  }
  console.log(`  identical totals: bulk ${sameBulk ? "✓" : "✗"}  per message ${sameMsg ? "✓" : "✗"}`);
  console.log(`  context-compactor countMessages, one call per run (200 calls, chat rules): ` +
    `${fmt(cm.ms, 0)} ms, ${fmt((cm.ms * 1000) / perMessage.length, 1)} µs/msg, ${cm.result} prompt tokens\n`);
}
for (const tk of tiktokenEncoders) tk.free();
console.log(`  ("ours ×" = peer time / our time: above 1, we are faster)\n`);

// --- cold start -------------------------------------------------------------------------------
const coldScript = fileURLToPath(new URL("./cold-start.mjs", import.meta.url));
function coldStart(lib, encoding) {
  const samples = [];
  for (let i = 0; i < COLD; i++) {
    const out = execFileSync(process.execPath, [coldScript, lib, encoding], { cwd: fileURLToPath(ROOT), encoding: "utf8" });
    samples.push(JSON.parse(out.trim().split("\n").at(-1)));
  }
  const median = (key) => samples.map((s) => s[key]).sort((a, b) => a - b)[Math.floor(samples.length / 2)];
  return { totalMs: median("totalMs"), importMs: median("importMs"), firstCountMs: median("firstCountMs"), sinceStart: median("sinceProcessStartMs"), ...samples[0] };
}
console.log(`cold start: a fresh node process per sample, median of ${COLD}; import + init + first count of a short string`);
const baseline = coldStart("none", "o200k_base");
console.log(`  (node itself: ${fmt(baseline.sinceStart, 0)} ms from process start to the first line of the script, not included below)`);
const cold = {};
for (const encoding of ["o200k_base", "cl100k_base"]) {
  console.log(`  ${encoding}`);
  console.log(`    ${pad("library", 20)} ${lpad("import ms", 10)} ${lpad("1st count", 10)} ${lpad("total ms", 9)} ${lpad("ours ×", 7)}`);
  const rows = ["ours", "ours-lite", "gpt-tokenizer", "js-tiktoken", "tiktoken"].map((lib) => [lib, coldStart(lib, encoding)]);
  cold[encoding] = Object.fromEntries(rows);
  const ours = rows[0][1];
  for (const [lib, r] of rows) {
    const name = { ours: "context-compactor", "ours-lite": "  lite + loadRanks", tiktoken: "tiktoken (wasm)" }[lib] ?? lib;
    console.log(`    ${pad(name, 20)} ${lpad(fmt(r.importMs, 0), 10)} ${lpad(fmt(r.firstCountMs, 0), 10)} ${lpad(fmt(r.totalMs, 0), 9)} ${lpad(fmt(r.totalMs / ours.totalMs), 7)}`);
  }
}
console.log();

// --- size -------------------------------------------------------------------------------------
const gz = (buf) => gzipSync(buf, { level: 9 }).length;
const MB = (n) => `${(n / 1e6).toFixed(3)} MB`;
const full = cold.o200k_base.ours, liteO = cold.o200k_base["ours-lite"], liteC = cold.cl100k_base["ours-lite"];
const tkWasm = readFileSync(require.resolve("tiktoken/tiktoken_bg.wasm"));
const tkGz = gz(tkWasm);
console.log(`size (gzip -9)`);
console.log(`  context-compactor  pkg/context_compactor_bg.wasm       ${MB(full.wasmBytes)} raw, ${MB(full.wasmGzBytes)} gzipped (o200k_base + cl100k_base embedded)`);
console.log(`    lite entry       pkg-lite/context_compactor_bg.wasm  ${MB(liteO.wasmBytes)} raw, ${MB(liteO.wasmGzBytes)} gzipped (no ranks)`);
console.log(`    its rank files   ranks/o200k_base.cctab              ${MB(liteO.ranksBytes)} raw, ${MB(liteO.ranksGzBytes)} gzipped`);
console.log(`                     ranks/cl100k_base.cctab             ${MB(liteC.ranksBytes)} raw, ${MB(liteC.ranksGzBytes)} gzipped`);
console.log(`  tiktoken (wasm)    tiktoken_bg.wasm (full build)        ${MB(tkWasm.length)} raw, ${MB(tkGz)} gzipped (all encodings)`);
console.log(`  ours / tiktoken gzipped: ${fmt(full.wasmGzBytes / tkGz)}\n`);

// --- targets ---------------------------------------------------------------------------------
const mark = (ok) => (ok ? "✓" : "✗");
console.log(`targets`);
for (const [encoding, { rows }] of Object.entries(results)) {
  const gpt = rows.find((r) => r.name === "gpt-tokenizer");
  const [bulk, msg] = [gpt.bulkMs / rows[0].bulkMs, gpt.msgMs / rows[0].msgMs];
  console.log(`  ${mark(bulk >= 2 && msg >= 2)} ${encoding} at least 2× gpt-tokenizer on unseen text: bulk ${fmt(bulk)}×, per message ${fmt(msg)}×`);
}
const coldOurs = cold.o200k_base.ours.totalMs;
console.log(`  ${mark(coldOurs <= 50)} cold start to the first o200k_base count at most 50 ms: ${fmt(coldOurs, 0)} ms (lite + loadRanks: ${fmt(liteO.totalMs, 0)} ms)`);
console.log(`  ${mark(full.wasmGzBytes <= 1e6)} wasm with both encodings at most 1.0 MB gzipped: ${MB(full.wasmGzBytes)}`);
console.log(`  ${mark(liteO.wasmGzBytes <= 250e3)} lite wasm at most 250 KB gzipped: ${MB(liteO.wasmGzBytes)}`);
const allSame = Object.values(results).every((r) => r.rows.every((x) => x.bulkTotal === r.rows[0].bulkTotal && x.msgTotal === r.rows[0].msgTotal));
console.log(`  ${mark(allSame)} identical totals with every library, both encodings`);
