import { rankFiles, type EncodingName } from "./wasm.js";
import { InvalidArgumentError } from "./errors.js";

/**
 * Where the package keeps the rank table of `encoding` (`ranks/<encoding>.cctab`), for the lite
 * entry's `loadRanks`: read it with `readFileSync` in Node, `fetch` it in a browser (bundlers
 * that understand `new URL(..., import.meta.url)`, Vite among them, copy the file along).
 */
export function rankFile(encoding: Exclude<EncodingName, "estimate">): URL {
  const file = Object.prototype.hasOwnProperty.call(rankFiles, encoding) ? rankFiles[encoding] : undefined;
  if (!file) {
    throw new InvalidArgumentError(`no rank file for encoding ${JSON.stringify(encoding)}: expected ${Object.keys(rankFiles).join(" or ")}`);
  }
  // A copy: the URL objects are mutable and shared.
  return new URL(file.href);
}
