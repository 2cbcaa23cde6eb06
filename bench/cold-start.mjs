// One cold start, run by bench/tokens.mjs in a fresh `node` process per sample:
//   node bench/cold-start.mjs <ours|ours-lite|gpt-tokenizer|js-tiktoken|tiktoken|none> <o200k_base|cl100k_base>
// Times import + instantiation + the first count of a short string, from the top of this script
// ("ours-lite": the lite entry, the encoding's ranks read from the package's file and loaded),
// and prints one JSON line: { lib, encoding, count, importMs, firstCountMs, totalMs,
// sinceProcessStartMs }, plus for ours and ours-lite the size of the wasm the entry loaded (and of
// the rank file), raw and gzipped: { wasmBytes, wasmGzBytes, ranksBytes?, ranksGzBytes? }.
import { performance } from "node:perf_hooks";
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const t0 = performance.now(); // ms since this process started (performance.timeOrigin)
const [lib, encoding = "o200k_base"] = process.argv.slice(2);
const TEXT = "Hello, world! How many tokens is this?";

async function load() {
  switch (lib) {
    case "ours": {
      const { Tokenizer } = await import("context-compactor");
      return () => new Tokenizer(encoding).count(TEXT);
    }
    case "ours-lite": {
      const { Tokenizer, loadRanks, rankFile } = await import("context-compactor/lite");
      return () => {
        loadRanks(encoding, readFileSync(rankFile(encoding)));
        return new Tokenizer(encoding).count(TEXT);
      };
    }
    case "gpt-tokenizer": {
      const { countTokens } = await import(`gpt-tokenizer/encoding/${encoding}`);
      return () => countTokens(TEXT);
    }
    case "js-tiktoken": {
      const { Tiktoken } = await import("js-tiktoken/lite");
      const { default: ranks } = await import(`js-tiktoken/ranks/${encoding}`);
      return () => new Tiktoken(ranks).encode(TEXT).length;
    }
    case "tiktoken": {
      const { get_encoding } = await import("tiktoken");
      return () => {
        const enc = get_encoding(encoding);
        const n = enc.encode_ordinary(TEXT).length;
        enc.free();
        return n;
      };
    }
    case "none":
      return () => 0;
    default:
      throw new Error(`unknown library ${lib}`);
  }
}

const count = await load();
const t1 = performance.now();
const n = count();
const t2 = performance.now();
const sizes = (file, name) => {
  const bytes = readFileSync(new URL(`../${file}`, import.meta.url));
  return { [`${name}Bytes`]: bytes.length, [`${name}GzBytes`]: gzipSync(bytes, { level: 9 }).length };
};
console.log(JSON.stringify({
  lib, encoding, count: n,
  importMs: t1 - t0, firstCountMs: t2 - t1, totalMs: t2 - t0, sinceProcessStartMs: t2,
  ...(lib === "ours" ? sizes("pkg/context_compactor_bg.wasm", "wasm") : {}),
  ...(lib === "ours-lite" ? { ...sizes("pkg-lite/context_compactor_bg.wasm", "wasm"), ...sizes(`ranks/${encoding}.cctab`, "ranks") } : {}),
}));
