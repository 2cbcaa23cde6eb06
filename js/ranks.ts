import { ranksDir, type EncodingName } from "./wasm.js";
import { InvalidArgumentError, describe } from "./errors.js";

/**
 * Where the package keeps the rank table of `encoding` (`ranks/<encoding>.cctab`), for the lite
 * entry's `loadRanks`: read it with `readFileSync` in Node, `fetch` it in a browser (bundlers
 * that understand `new URL(..., import.meta.url)` copy the directory along).
 */
export function rankFile(encoding: Exclude<EncodingName, "estimate">): URL {
  if (encoding !== "o200k_base" && encoding !== "cl100k_base") {
    throw new InvalidArgumentError(`no rank file for ${describe(encoding)}: expected "o200k_base" or "cl100k_base"`);
  }
  return new URL(`${encoding}.cctab`, ranksDir);
}
