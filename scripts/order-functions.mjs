// Puts functions whose code is alike next to each other, for gzip: it finds a repeat only within
// its last 32 KB, and the lite wasm's code is many near-copies (a generic function compiled for
// several types, the serde code of each struct) that the compiler leaves apart.
//   node scripts/order-functions.mjs IN.wasm OUT.wasm
// IN must have its name section (wasm-opt -g). Each function's name gets a prefix, its place in
// the new order; `wasm-opt --reorder-functions-by-name` then moves the code (and renumbers the
// calls), and drops the names. The order is a greedy chain: after a function comes the one of
// those left most alike (by MinHash of its code's 4-byte runs) to the last WINDOW placed, the last
// counted twice; the next by name when none shares a run with them. Measured on the lite wasm
// (zopfli, after -O1 and a sort by name): 397,314 -> 390,636 B (with 48 hashes; 256 gain 2-3 KB
// more). Then (2026-11-24, zopfli as the demo serves it, 392,610 B before): following the most
// alike function even when it is not very alike (ALIKE 32 -> 1) 389,680 B; alike to the last 4
// placed, not the last one alone, 387,386 B (3: 387,483; 6: 387,823; 10: 387,546; the last one
// not weighted: 388,193), gzip's window holding the functions before the last one as well.
import { readFileSync, writeFileSync } from "node:fs";
import { lebReader, uleb } from "./leb128.mjs";
import { crc32 } from "node:zlib";

const SHINGLE = 4; // bytes per run of code compared
// MinHash signature length: the estimate's noise moves the gzip by about ±1.4 KB at 64 (four
// seeds: 384.7-387.4 KB), ±0.1 KB at 256 (383.1-383.3 KB), which takes ~4 s.
const HASHES = 256;
const WINDOW = 4; // functions placed last that a candidate is compared with

const [input, output] = process.argv.slice(2);
if (!input || !output) {
  console.error("usage: node scripts/order-functions.mjs IN.wasm OUT.wasm");
  process.exit(2);
}
const wasm = readFileSync(input);
const leb = lebReader(wasm);

// Imported functions come first in the function index space; the code section holds the rest.
let importedFunctions = 0;
const bodies = [];
let names; // [section start, payload start after "name", section end]
for (let at = 8; at < wasm.length;) {
  const id = wasm[at];
  const [length, start] = leb(at + 1);
  const end = start + length;
  if (id === 2) {
    let [count, k] = leb(start);
    for (let i = 0; i < count; i++) {
      let len;
      [len, k] = leb(k); // module name
      k += len;
      [len, k] = leb(k); // field name
      k += len;
      const kind = wasm[k++];
      if (kind === 0) {
        importedFunctions++;
        [, k] = leb(k);
      } else if (kind === 1 || kind === 2) {
        if (kind === 1) k++; // table element type
        const flags = wasm[k++];
        [, k] = leb(k);
        if (flags & 1) [, k] = leb(k);
      } else if (kind === 3) k += 2; // global type, mutability
      else if (kind === 4) [, k] = leb(k + 1); // tag
      else throw new Error(`order-functions: import kind ${kind} not known`);
    }
  } else if (id === 10) {
    let [count, k] = leb(start);
    for (let i = 0; i < count; i++) {
      let len;
      [len, k] = leb(k);
      bodies.push(wasm.subarray(k, k + len));
      k += len;
    }
  } else if (id === 0) {
    const [nameLength, nameStart] = leb(start);
    if (wasm.toString("latin1", nameStart, nameStart + nameLength) === "name") names = [at, nameStart + nameLength, end];
  }
  at = end;
}
if (!names) throw new Error(`order-functions: ${input} has no name section`);

// MinHash: for each of HASHES hash functions, the least hash of the function's runs.
const n = bodies.length;
let seed = 12345;
const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
const mul = Array.from({ length: HASHES }, () => next() | 1);
const add = Array.from({ length: HASHES }, next);
const signature = new Uint32Array(n * HASHES).fill(0xffffffff);
for (let f = 0; f < n; f++) {
  const body = bodies[f];
  const seen = new Set();
  for (let j = 0; j + SHINGLE <= Math.max(SHINGLE, body.length); j++) {
    const h = crc32(body.subarray(j, j + SHINGLE));
    if (seen.has(h)) continue;
    seen.add(h);
    for (let k = 0; k < HASHES; k++) {
      const v = (Math.imul(h, mul[k]) + add[k]) >>> 0;
      if (v < signature[f * HASHES + k]) signature[f * HASHES + k] = v;
    }
  }
}

const placed = new Uint8Array(n);
const rank = new Array(n);
let firstLeft = 1;
const recent = [0]; // the functions placed last, the last first
placed[0] = 1;
rank[0] = 0;
for (let r = 1; r < n; r++) {
  let best = -1, bestAlike = 0;
  for (let g = 0; g < n; g++) {
    if (placed[g]) continue;
    let alike = 0;
    for (let w = 0; w < recent.length; w++) {
      const other = recent[w] * HASHES;
      for (let k = 0; k < HASHES; k++) if (signature[g * HASHES + k] === signature[other + k]) alike += w ? 1 : 2;
    }
    if (alike > bestAlike) [best, bestAlike] = [g, alike];
  }
  if (best < 0) {
    const current = recent[0];
    if (current + 1 < n && !placed[current + 1]) best = current + 1;
    else {
      while (placed[firstLeft]) firstLeft++;
      best = firstLeft;
    }
  }
  placed[best] = 1;
  rank[best] = r;
  recent.unshift(best);
  if (recent.length > WINDOW) recent.pop();
}

// The name section again, each defined function's name prefixed with its rank.
const [sectionStart, subsectionsStart, sectionEnd] = names;
const subsections = [];
for (let at = subsectionsStart; at < sectionEnd;) {
  const id = wasm[at];
  const [length, start] = leb(at + 1);
  const end = start + length;
  if (id === 1) {
    let [count, k] = leb(start);
    const entries = [uleb(count)];
    for (let i = 0; i < count; i++) {
      let index, len;
      [index, k] = leb(k);
      [len, k] = leb(k);
      const name = wasm.toString("utf8", k, k + len);
      k += len;
      const place = index < importedFunctions ? "" : String(rank[index - importedFunctions]).padStart(6, "0");
      const renamed = Buffer.from(`${place}|${name}`);
      entries.push(uleb(index), uleb(renamed.length), renamed);
    }
    const body = Buffer.concat(entries);
    subsections.push(Buffer.from([1]), uleb(body.length), body);
  } else {
    subsections.push(wasm.subarray(at, end));
  }
  at = end;
}
const payload = Buffer.concat([uleb(4), Buffer.from("name"), ...subsections]);
writeFileSync(output, Buffer.concat([wasm.subarray(0, sectionStart), Buffer.from([0]), uleb(payload.length), payload, wasm.subarray(sectionEnd)]));
