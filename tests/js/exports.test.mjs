// The package's public surface: everything the wasm bindings export is re-exported by
// "context-compactor" except what only the entries may use; each error class is exported.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as pkg from "context-compactor";

// Instantiation and the error factory belong to the entries (js/node.ts, js/browser.ts).
// (The lite entry exports the same names: tests/js/lite.test.mjs.)
const INTERNAL = new Set(["default", "initSync", "setErrorFactory"]);

test("every public binding of the wasm module is exported by the package", async () => {
  const wasm = await import("../../pkg/context_compactor.js");
  const missing = Object.keys(wasm).filter((name) => !INTERNAL.has(name) && !(name in pkg));
  assert.deepEqual(missing, [], "add these to js/api.ts (or to INTERNAL here, with a reason)");
  for (const name of Object.keys(wasm)) if (!INTERNAL.has(name)) assert.equal(pkg[name], wasm[name], `${name} is the binding itself`);
  for (const name of INTERNAL) assert.ok(!(name in pkg), `${name} stays internal`);
  console.log(`# exports: ${Object.keys(pkg).sort().join(", ")}`);
});

test("the error classes are exported and share one base class", () => {
  for (const name of ["InvalidMessageError", "InvalidArgumentError", "NotFoundError", "ConflictError", "InternalError"]) {
    assert.equal(typeof pkg[name], "function", name);
    assert.ok(pkg[name].prototype instanceof pkg.ContextCompactorError, `${name} extends ContextCompactorError`);
  }
  assert.ok(pkg.ContextCompactorError.prototype instanceof Error);
});
