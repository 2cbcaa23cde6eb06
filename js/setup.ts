/** Internal: what both entries do right after the wasm is instantiated, before any call. */
import { setErrorFactory } from "./wasm.js";
import { makeError } from "./errors.js";
import { attach, type WasmInstance } from "./guard.js";

/**
 * Routes every error raised by the wasm module through the `ContextCompactorError` subclasses,
 * and hands the guard the instance (its shadow-stack pointer, for the repair after a trap).
 */
export function setup(instance: WasmInstance): void {
  setErrorFactory(makeError);
  attach(instance);
}
