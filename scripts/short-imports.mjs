// Gives the wasm's imported functions short names, in the wasm and in wasm-bindgen's JS glue.
// wasm-bindgen names each import after the JS function it wraps plus a 16-digit hash
// (`__wbg___wbindgen_throw_4c88d8bf264fd984`): ~50 of them, 2.3 KB of the lite wasm that gzip
// cannot shorten much (the hashes). The glue names each once, as a key of the imports object.
//   node scripts/short-imports.mjs WASM GLUE.js   (both rewritten in place)
import { readFileSync, writeFileSync } from "node:fs";

const [wasmPath, gluePath] = process.argv.slice(2);
if (!wasmPath || !gluePath) {
  console.error("usage: node scripts/short-imports.mjs WASM GLUE.js");
  process.exit(2);
}
const wasm = readFileSync(wasmPath);
let glue = readFileSync(gluePath, "utf8");
const leb = (at) => {
  let value = 0, shift = 0, byte;
  do {
    byte = wasm[at++];
    value += (byte & 0x7f) * 2 ** shift;
    shift += 7;
  } while (byte & 0x80);
  return [value, at];
};
const uleb = (n) => {
  const out = [];
  do {
    const low = n % 128;
    n = Math.floor(n / 128);
    out.push(n ? low | 0x80 : low);
  } while (n);
  return Buffer.from(out);
};
const name = (text) => {
  const bytes = Buffer.from(text);
  return Buffer.concat([uleb(bytes.length), bytes]);
};
const fail = (why) => {
  console.error(`short-imports: ${why}`);
  process.exit(1);
};

const parts = [wasm.subarray(0, 8)];
for (let at = 8; at < wasm.length;) {
  const id = wasm[at];
  const [length, start] = leb(at + 1);
  const end = start + length;
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
