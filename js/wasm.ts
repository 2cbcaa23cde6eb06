/**
 * Internal: the one module that names the wasm build and the rank files. The lite entry
 * (`context-compactor/lite`, `dist/lite/`) is this same TypeScript layer with only this file
 * pointing at `pkg-lite/` instead (scripts/build.sh rewrites its compiled copy), so the two
 * entries cannot drift apart.
 */
export * from "../pkg/context_compactor.js";
export { default } from "../pkg/context_compactor.js";

/** The wasm file, for the Node entry (the browser entry lets the glue fetch it). */
export const wasmFile = new URL("../pkg/context_compactor_bg.wasm", import.meta.url);

/** The directory of the `.cctab` rank files shipped with the package. */
export const ranksDir = new URL("../ranks/", import.meta.url);
