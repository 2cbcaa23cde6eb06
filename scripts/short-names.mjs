// Gives the wasm's imports and exports short names, in the wasm and in wasm-bindgen's JS glue.
// wasm-bindgen names each import after the JS function it wraps plus a 16-digit hash
// (`__wbg___wbindgen_throw_4c88d8bf264fd984`), each export after its class and method
// (`conversationhistory_build_result`): ~50 + ~95 names, 5 KB of the lite wasm, 2 KB gzipped.
// The glue names each import once, as a key of its imports object, and calls each export as
// `wasm.<name>`. `memory` keeps its name (the TS layer reads it, js/guard.ts), and so do the
// exports the glue does not call (`__stack_pointer`, read by js/guard.ts).
//   node scripts/short-names.mjs WASM GLUE.js   (both rewritten in place)
import { readFileSync, writeFileSync } from "node:fs";
import { lebReader, uleb } from "./leb128.mjs";

const [wasmPath, gluePath] = process.argv.slice(2);
if (!wasmPath || !gluePath) {
  console.error("usage: node scripts/short-names.mjs WASM GLUE.js");
  process.exit(2);
}
const wasm = readFileSync(wasmPath);
let glue = readFileSync(gluePath, "utf8");
const leb = lebReader(wasm);
const name = (text) => {
  const bytes = Buffer.from(text);
  return Buffer.concat([uleb(bytes.length), bytes]);
};
const fail = (why) => {
  console.error(`short-names: ${why}`);
  process.exit(1);
};

/** The export section from `start` to `end`, its names that the glue calls made short. */
function exports(start, end) {
  let [count, k] = leb(start);
  const entries = [uleb(count)];
  const names = [];
  for (let i = 0; i < count; i++) {
    let len;
    [len, k] = leb(k);
    names.push(wasm.toString("utf8", k, k + len));
    k += len;
    const described = k;
    [, k] = leb(k + 1); // kind, index
    entries.push(null, wasm.subarray(described, k));
  }
  if (k !== end) fail("the export section does not end where its entries do");
  const taken = new Set(names);
  let next = 0;
  names.forEach((field, i) => {
    const call = new RegExp(`\\bwasm\\.${field}\\b`, "g");
    let short = field;
    if (field !== "memory" && call.test(glue)) {
      do short = `e${(next++).toString(36)}`;
      while (taken.has(short));
      glue = glue.replace(call, `wasm.${short}`);
    }
    entries[1 + 2 * i] = name(short);
  });
  const body = Buffer.concat(entries);
  return Buffer.concat([Buffer.from([7]), uleb(body.length), body]);
}

const parts = [wasm.subarray(0, 8)];
for (let at = 8; at < wasm.length;) {
  const id = wasm[at];
  const [length, start] = leb(at + 1);
  const end = start + length;
  if (id === 7) {
    parts.push(exports(start, end));
    at = end;
    continue;
  }
  if (id !== 2) {
    parts.push(wasm.subarray(at, end));
    at = end;
    continue;
  }
  let [count, k] = leb(start);
  const entries = [uleb(count)];
  for (let i = 0; i < count; i++) {
    let len;
    [len, k] = leb(k);
    const module = wasm.toString("utf8", k, k + len);
    k += len;
    [len, k] = leb(k);
    const field = wasm.toString("utf8", k, k + len);
    k += len;
    const kind = wasm[k++];
    if (kind !== 0) fail(`import ${module}.${field} is not a function`);
    const typeStart = k;
    [, k] = leb(k);
    // The glue's key for it: `        <field>: function(`, exactly once.
    const key = new RegExp(`^(\\s+)${field}(: function\\()`, "m");
    const found = glue.match(new RegExp(key.source, "gm"));
    if (found?.length !== 1) fail(`the glue names import ${field} ${found?.length ?? 0} times, not once`);
    const short = `i${i.toString(36)}`;
    glue = glue.replace(key, `$1${short}$2`);
    entries.push(name(module), name(short), Buffer.from([kind]), wasm.subarray(typeStart, k));
  }
  const body = Buffer.concat(entries);
  parts.push(Buffer.from([2]), uleb(body.length), body);
  at = end;
}
writeFileSync(wasmPath, Buffer.concat(parts));
writeFileSync(gluePath, glue);
