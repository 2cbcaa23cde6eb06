/** Node entry: instantiates the wasm synchronously from the file shipped in the package. */
import { readFileSync } from "node:fs";
import { initSync, wasmFile } from "./wasm.js";
import { setup } from "./setup.js";

setup(initSync({ module: readFileSync(wasmFile) }));

export * from "./api.js";
