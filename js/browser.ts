/**
 * Browser entry: fetches and instantiates the wasm (located through `import.meta.url`, so it
 * works from a plain page and through bundlers) with a top-level await, then installs the
 * error factory and the guard. Once the `import` resolves, everything is ready.
 */
import init from "./wasm.js";
import { setup } from "./setup.js";

setup(await init());

export * from "./api.js";
