/** Node entry: instantiates the wasm synchronously from the file shipped in the package. */
import { readFileSync } from "node:fs";
import { initSync, wasmFile } from "./wasm.js";
import { installErrorFactory } from "./setup.js";

initSync({ module: readFileSync(wasmFile) });
installErrorFactory();

export * from "./api.js";
