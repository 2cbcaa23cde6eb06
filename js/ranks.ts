import { ranksDir, type EncodingName } from "./wasm.js";

/**
 * Where the package keeps the rank table of `encoding` (`ranks/<encoding>.cctab`), for the lite
 * entry's `loadRanks`: read it with `readFileSync` in Node, `fetch` it in a browser (bundlers
 * that understand `new URL(..., import.meta.url)` copy the directory along).
 */
export function rankFile(encoding: Exclude<EncodingName, "estimate">): URL {
  return new URL(`${encoding}.cctab`, ranksDir);
}
