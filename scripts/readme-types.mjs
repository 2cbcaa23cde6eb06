#!/usr/bin/env node
// Type-checks every TypeScript block of README.md under `--strict`, as a user would paste it,
// against the built package and the SDK versions the README names: `openai` 7 (the `openai`
// dev dependency) and 6 (`openai-v6`, an npm alias), with `@anthropic-ai/sdk`.
//
// Each ```ts block becomes a module of its own (tests/readme/.blocks/block-<line>.ts, rewritten on
// every run); the names a block uses without making them (a model, an API key, tools…) are
// declared in tests/readme/given.d.ts, as what the reader already has. A block that is a
// fragment and cannot stand alone is marked with `<!-- readme-types: skip -->` on the line
// before its fence. Exit code 1 if a block fails, naming the README line.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";

const root = fileURLToPath(new URL("..", import.meta.url));
const dir = join(root, "tests/readme");
const blocksDir = join(dir, ".blocks");
const SKIP = "<!-- readme-types: skip -->";

export function extractBlocks(markdown) {
  const lines = markdown.split("\n");
  const blocks = [];
  for (let i = 0; i < lines.length; i++) {
    if (!/^```(ts|typescript)\s*$/.test(lines[i])) continue;
    const start = i;
    let end = i + 1;
    while (end < lines.length && !/^```\s*$/.test(lines[end])) end++;
    const skip = lines[start - 1]?.trim() === SKIP;
    blocks.push({ line: start + 1, code: lines.slice(start + 1, end).join("\n"), skip });
    i = end;
  }
  return blocks;
}

function main() {
  const blocks = extractBlocks(readFileSync(join(root, "README.md"), "utf8"));
  rmSync(blocksDir, { recursive: true, force: true });
  mkdirSync(blocksDir, { recursive: true });
  const files = [];
  for (const block of blocks) {
    if (block.skip) continue;
    const name = `block-${block.line}.ts`;
    // A module of its own (its names do not meet the other blocks'), top-level await allowed.
    writeFileSync(join(blocksDir, name), `// README.md, the block at line ${block.line}\n${block.code}\nexport {};\n`);
    files.push(name);
  }
  const skipped = blocks.length - files.length;
  let failed = false;
  for (const config of ["tsconfig.json", "tsconfig.openai-v6.json"]) {
    const tsc = spawnSync(process.execPath, [join(root, "node_modules/typescript/bin/tsc"), "-p", join(dir, config)], { encoding: "utf8", cwd: root });
    const out = (tsc.stdout + tsc.stderr).trim();
    if (tsc.status !== 0) {
      failed = true;
      console.error(`readme-types: ${config}: the README's TypeScript does not type-check:\n${out.replace(/tests\/readme\/\.blocks\/block-(\d+)\.ts\((\d+),(\d+)\)/g, (_, at, row, col) => `README.md:${Number(at) + Number(row) - 1}:${col}`)}`);
    }
  }
  if (failed) process.exit(1);
  console.log(`readme-types: ${files.length} TypeScript blocks of README.md type-check under --strict with openai 7 and 6${skipped ? ` (${skipped} fragments skipped)` : ""}`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) main();
