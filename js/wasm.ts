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

/**
 * The `.cctab` rank files shipped with the package. One literal `new URL(…, import.meta.url)`
 * each, not a directory plus a name: bundlers (Vite, webpack, Rollup, esbuild's plugins) copy a
 * file along only when they can see its path.
 */
export const rankFiles = {
  o200k_base: new URL("../ranks/o200k_base.cctab", import.meta.url),
  cl100k_base: new URL("../ranks/cl100k_base.cctab", import.meta.url),
} as const;
