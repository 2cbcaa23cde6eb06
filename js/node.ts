/** Node entry: instantiates the wasm synchronously from the file shipped in the package. */
import { readFileSync } from "node:fs";
import { initSync } from "../pkg/context_compactor.js";
import { installErrorFactory } from "./setup.js";

initSync({ module: readFileSync(new URL("../pkg/context_compactor_bg.wasm", import.meta.url)) });
installErrorFactory();

export * from "./api.js";
