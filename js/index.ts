/**
 * Type entry of `context-compactor` (the `types` condition of the package's exports).
 * At run time `import "context-compactor"` resolves to `node.js` or `browser.js`, which
 * initialise the wasm and export exactly this.
 */
export * from "./api.js";
