// The package's public surface: everything the wasm bindings export is re-exported by
// "context-compactor" except what only the entries may use; each error class is exported.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as pkg from "context-compactor";

// Instantiation and the error factory belong to the entries (js/node.ts, js/browser.ts), the
// repair after a trap to the guard (js/guard.ts).
// (The lite entry exports the same names: tests/js/lite.test.mjs.)
const INTERNAL = new Set(["default", "initSync", "setErrorFactory", "recoverAfterTrap"]);

test("every public binding of the wasm module is exported by the package", async () => {
  const wasm = await import("../../pkg/context_compactor.js");
  const missing = Object.keys(wasm).filter((name) => !INTERNAL.has(name) && !(name in pkg));
  assert.deepEqual(missing, [], "add these to js/guarded.ts and its re-export in js/api.ts (or to INTERNAL here, with a reason)");
  // Exported guarded (js/guard.ts): a class keeps the binding's prototype, so `instanceof` holds
  // for every object the package hands out; a function keeps its name.
  for (const name of Object.keys(wasm)) {
    if (INTERNAL.has(name)) continue;
    if (/^[A-Z]/.test(name)) assert.equal(pkg[name].prototype, wasm[name].prototype, `${name} is the binding's class`);
    else assert.equal(pkg[name].name, wasm[name].name, `${name} is the binding, guarded`);
  }
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
