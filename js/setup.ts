/** Internal: what both entries do right after the wasm is instantiated. */
import { setErrorFactory } from "./wasm.js";
import { makeError } from "./errors.js";

/** Routes every error raised by the wasm module through the `ContextCompactorError` subclasses. */
export function installErrorFactory(): void {
  setErrorFactory(makeError);
}
