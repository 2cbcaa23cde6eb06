#!/usr/bin/env node
// Serves the built demo (www/dist, from `vite build`) on localhost with Vite's preview server and
// this folder's vite.config.ts (the shared fixtures at /fixtures/, precompressed wasm and rank
// tables). `npm start` runs it after building; the demo's browser test starts it the same way.
//   node www/serve.mjs [--port N] [--host H]     default 127.0.0.1:4173 (the next free port if taken)
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { preview } from "vite";

const root = fileURLToPath(new URL(".", import.meta.url));

/** Starts the preview server; resolves to { url, close }. `port: 0` picks a free port. */
export async function serveDemo({ port = 4173, host = "127.0.0.1", strictPort = false, quiet = false } = {}) {
  if (!existsSync(new URL("./dist/index.html", import.meta.url))) {
    throw new Error("www/dist is missing: build the demo first (npm start does, or: cd www && npx vite build)");
  }
  const server = await preview({
    root,
    configFile: fileURLToPath(new URL("./vite.config.ts", import.meta.url)),
    logLevel: quiet ? "silent" : "info",
    preview: { port, host, strictPort, open: false },
  });
  const address = server.httpServer.address();
  const url = `http://${host}:${typeof address === "object" && address ? address.port : port}/`;
  return { url, server, close: () => server.close() };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const { values } = parseArgs({ options: { port: { type: "string" }, host: { type: "string" } } });
  const { url } = await serveDemo({ port: values.port === undefined ? undefined : Number(values.port), host: values.host, quiet: true });
  console.log(`\n  context-compactor demo: ${url}\n  (Ctrl+C stops the server)\n`);
}
