/**
 * Browser entry: fetches and instantiates the wasm (located through `import.meta.url`, so it
 * works from a plain page and through bundlers) with a top-level await, then installs the
 * error factory. Once the `import` resolves, everything is ready.
 */
import init from "./wasm.js";
import { installErrorFactory } from "./setup.js";

await init();
installErrorFactory();

export * from "./api.js";
