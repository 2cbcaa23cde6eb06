#!/usr/bin/env node
// The download sizes the user docs state, measured: the built wasm of each entry and the lite
// entry's rank files, gzipped (zlib level 9, as `gzip -9`; a server that precompresses with
// zopfli sends about 5% less). A figure in README.md or docs/*.md is written between markers,
//   <!-- size:full -->1.52 MB<!-- /size -->
// (keys: full, lite, o200k_base, cl100k_base; MB = 10^6 bytes), so that no figure is written
// from memory:
//   node scripts/sizes.mjs           checks every marked figure against the build (exit 1 if stale)
//   node scripts/sizes.mjs --write   rewrites them
//   node scripts/sizes.mjs --json    prints the measured sizes
// scripts/test.sh runs the check after the build.
import { readFileSync, readdirSync, writeFileSync, existsSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const root = fileURLToPath(new URL("..", import.meta.url));
const FILES = {
  full: "pkg/context_compactor_bg.wasm",
  lite: "pkg-lite/context_compactor_bg.wasm",
  o200k_base: "ranks/o200k_base.cctab",
  cl100k_base: "ranks/cl100k_base.cctab",
};

export function measure() {
  const sizes = {};
  for (const [key, file] of Object.entries(FILES)) {
    const path = join(root, file);
    if (!existsSync(path)) throw new Error(`${file} is missing: build the package first (npm run build)`);
    const bytes = readFileSync(path);
    sizes[key] = { file, raw: bytes.length, gzipped: gzipSync(bytes, { level: 9 }).length };
  }
  return sizes;
}

const figure = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`;
const MARKED = /<!-- size:([a-z0-9_]+) -->(.*?)<!-- \/size -->/g;

function docs() {
  const dir = join(root, "docs");
  const extra = existsSync(dir) ? readdirSync(dir).filter((name) => name.endsWith(".md")).map((name) => join("docs", name)) : [];
  return ["README.md", ...extra];
}

function main() {
  const mode = process.argv[2] ?? "--check";
  if (!["--check", "--write", "--json"].includes(mode)) {
    console.error("usage: node scripts/sizes.mjs [--check | --write | --json]");
    process.exit(2);
  }
  const sizes = measure();
  if (mode === "--json") {
    console.log(JSON.stringify(sizes, null, 2));
    return;
  }
  const stale = [];
  let marked = 0;
  for (const doc of docs()) {
    const path = join(root, doc);
    const text = readFileSync(path, "utf8");
    const updated = text.replace(MARKED, (whole, key, stated, offset) => {
      if (!(key in sizes)) throw new Error(`${doc}: unknown size key "${key}" (known: ${Object.keys(sizes).join(", ")})`);
      marked += 1;
      const measured = figure(sizes[key].gzipped);
      if (stated !== measured) {
        const line = text.slice(0, offset).split("\n").length;
        stale.push(`${doc}:${line}: ${key} states ${stated}, measured ${measured} (${sizes[key].file}, ${sizes[key].gzipped} bytes gzipped)`);
      }
      return `<!-- size:${key} -->${measured}<!-- /size -->`;
    });
    if (mode === "--write" && updated !== text) writeFileSync(path, updated);
  }
  if (marked === 0) console.log("sizes: no marked figure in the docs");
  if (mode === "--write") {
    console.log(`sizes: ${marked} figures, ${stale.length} rewritten${stale.map((s) => `\n  ${s}`).join("")}`);
  } else if (stale.length > 0) {
    console.error(`sizes: ${stale.length} of ${marked} figures in the docs are stale (node scripts/sizes.mjs --write rewrites them):`);
    for (const line of stale) console.error(`  ${line}`);
    process.exit(1);
  } else {
    console.log(`sizes: ${marked} figures in the docs match the build`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
