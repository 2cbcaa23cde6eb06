// Packaging: `npm pack` the repo, install the tarball into a temporary project with no other
// dependencies, then import "context-compactor" and "context-compactor/lite" from Node ESM
// scripts, type-check a TypeScript consumer against the shipped declarations, and import both
// from a page on localhost in headless Chromium whose import map is resolved from the installed
// package's own `exports`.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync, mkdirSync, existsSync, statSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { serve, withPage, browserEntry } from "../browser/harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SHOTS = fileURLToPath(new URL("../browser/screenshots/", import.meta.url));
const TSC = join(ROOT, "node_modules/typescript/bin/tsc");
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });

let work, project, packed;

before(() => {
  work = mkdtempSync(join(tmpdir(), "cc-pack-"));
  project = join(work, "consumer");
  mkdirSync(project);
  [packed] = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", work], ROOT));
  console.log(`# packed ${packed.filename}: ${packed.entryCount} files, ${(packed.size / 1e6).toFixed(2)} MB (unpacked ${(packed.unpackedSize / 1e6).toFixed(2)} MB)`);
  writeFileSync(join(project, "package.json"), JSON.stringify({ name: "cc-consumer", private: true, type: "module" }, null, 2));
  run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", join(work, packed.filename)], project);
});

after(() => rmSync(work, { recursive: true, force: true }));

test("the tarball holds the package and nothing else", () => {
  const files = packed.files.map((f) => f.path).sort();
  console.log(`# files: ${files.join(" ")}`);
  for (const f of ["package.json", "dist/node.js", "dist/browser.js", "dist/index.d.ts", "dist/errors.js",
    "pkg/context_compactor.js", "pkg/context_compactor.d.ts", "pkg/context_compactor_bg.wasm",
    "dist/lite/node.js", "dist/lite/browser.js", "dist/lite/index.d.ts", "pkg-lite/context_compactor_bg.wasm",
    "ranks/o200k_base.cctab", "ranks/cl100k_base.cctab", "dist/cli.js", "dist/cli/args.js",
    "dist/storage/indexeddb.js", "dist/storage/fs.js", "dist/storage/conformance.js", "dist/storage/conformance.d.ts",
    "dist/storage/postgres.js", "dist/storage/postgres.d.ts", "dist/storage/sqlite.js", "dist/storage/sqlite.d.ts", "dist/storage/sql.js",
    "dist/adapters/ai-sdk.js", "dist/adapters/ai-sdk.d.ts", "dist/adapters/openai-agents.js", "dist/adapters/openai-agents.d.ts"]) {
    assert.ok(files.includes(f), `${f} is packed`);
  }
  for (const f of files) {
    assert.match(f, /^(package\.json|README\.md|LICENSE.*|docs\/(demo\.png|(reference\/)?[\w-]+\.md)|dist\/cli\/[\w-]+\.js|dist\/(lite\/|storage\/|adapters\/)?[\w.-]+\.(js|d\.ts)|pkg(-lite)?\/context_compactor(_bg)?\.(js|d\.ts|wasm|wasm\.d\.ts)|ranks\/(o200k|cl100k)_base\.cctab)$/, `${f} is expected`);
  }
  const installed = join(project, "node_modules/context-compactor");
  assert.equal(statSync(join(installed, "pkg/context_compactor_bg.wasm")).size, statSync(join(ROOT, "pkg/context_compactor_bg.wasm")).size);
  assert.ok(!existsSync(join(installed, "node_modules")), "no nested dependencies (idb, the one dependency, is hoisted)");
});

test("the README's links and pictures work where npm shows it: absolute, or a file the tarball holds", () => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8");
  const targets = [...readme.matchAll(/!?\[[^\]]*\]\(([^)\s]+)[^)]*\)/g)].map((m) => m[1]).filter((t) => !t.startsWith("#"));
  const packedFiles = new Set(packed.files.map((f) => f.path));
  for (const target of targets) {
    assert.match(target, /^https:\/\//, `${target}: a relative link breaks on npm (it has no repository to resolve it against)`);
    const own = target.match(/^https:\/\/cdn\.jsdelivr\.net\/npm\/context-compactor(?:@[^/]+)?\/(.+)$/);
    if (own) assert.ok(packedFiles.has(own[1]), `${own[1]}, which the README shows from the published package, is packed`);
  }
});

test("the context-compactor command runs from the installed tarball (node_modules/.bin)", () => {
  const bin = join(project, "node_modules/.bin/context-compactor");
  assert.ok(existsSync(bin), "npm linked the bin");
  const fixture = fileURLToPath(new URL("../fixtures/anthropic/claude-code-short.jsonl", import.meta.url));
  const count = JSON.parse(run(bin, ["count", fixture, "--json"], project));
  assert.equal(count.loaded.source, "claude-code");
  assert.ok(count.total > 0);
  const context = JSON.parse(run(bin, ["compact", fixture, "--budget", "200"], project));
  assert.ok(Array.isArray(context.messages), "an Anthropic request");
  assert.match(run(bin, ["--help"], project), /^Usage: context-compactor <command> FILE/);
  let failed;
  try {
    run(bin, ["count", join(project, "missing.json")], project);
  } catch (error) {
    failed = error;
  }
  assert.equal(failed?.status, 1);
  assert.match(failed.stderr, /no such file/);
  console.log(`# bin: count ${count.total} tokens, compact to ${context.messages.length} messages, exit 1 on a missing file`);
});

test("Node ESM: import { Tokenizer } from \"context-compactor\" in the consumer project", () => {
  writeFileSync(join(project, "check.mjs"), `
import { Tokenizer, ConversationHistory, InvalidMessageError, ContextCompactorError } from "context-compactor";
const tok = new Tokenizer("o200k_base");
const history = new ConversationHistory();
history.append({ role: "user", content: "tiktoken is great!" });
let error;
try { tok.countMessages([{ role: "tool", content: "x" }]); } catch (e) { error = e; }
console.log(JSON.stringify({
  ids: [...tok.encode("tiktoken is great!")],
  chat: history.tokenCount().total,
  error: error instanceof InvalidMessageError && error instanceof ContextCompactorError && error.index === 0,
  resolved: import.meta.resolve("context-compactor"),
}));
`);
  const result = JSON.parse(run("node", ["check.mjs"], project));
  console.log(`# node: ${JSON.stringify(result)}`);
  assert.deepEqual(result.ids, [83, 8251, 2488, 382, 2212, 0]);
  assert.equal(result.chat, 3 + 1 + 6 + 3, "3 per message + role + content + 3 reply priming");
  assert.equal(result.error, true);
  assert.match(result.resolved, /node_modules\/context-compactor\/dist\/node\.js$/, "the node condition is used");
});

test("Node ESM: import { Tokenizer, loadRanks } from \"context-compactor/lite\", ranks read from the package", () => {
  writeFileSync(join(project, "check-lite.mjs"), `
import { readFileSync } from "node:fs";
import { Tokenizer, loadRanks, rankFile, InvalidArgumentError } from "context-compactor/lite";
let before;
try { new Tokenizer("o200k_base"); } catch (e) { before = e instanceof InvalidArgumentError; }
loadRanks("o200k_base", readFileSync(rankFile("o200k_base")));
console.log(JSON.stringify({
  before,
  ids: [...new Tokenizer("o200k_base").encode("tiktoken is great!")],
  resolved: import.meta.resolve("context-compactor/lite"),
  ranks: import.meta.resolve("context-compactor/ranks/o200k_base.cctab") === rankFile("o200k_base").href,
}));
`);
  const result = JSON.parse(run("node", ["check-lite.mjs"], project));
  console.log(`# node lite: ${JSON.stringify(result)}`);
  assert.equal(result.before, true, "a typed error before the ranks are loaded");
  assert.deepEqual(result.ids, [83, 8251, 2488, 382, 2212, 0]);
  assert.match(result.resolved, /node_modules\/context-compactor\/dist\/lite\/node\.js$/);
  assert.equal(result.ranks, true, "rankFile() is the file the package exports as ./ranks/*");
});

test("Node ESM: the SQL adapters resolve from the installed tarball; their drivers are optional peers", () => {
  writeFileSync(join(project, "check-sql.mjs"), `
import { PostgresAdapter } from "context-compactor/storage/postgres";
import { SqliteAdapter } from "context-compactor/storage/sqlite";
import { StorageError, InvalidArgumentError } from "context-compactor";
let sqlite, postgres;
try { await SqliteAdapter.open({ path: "x.db" }); } catch (e) { sqlite = e instanceof StorageError && /npm install better-sqlite3/.test(e.message); }
try { await PostgresAdapter.open({}); } catch (e) { postgres = e instanceof InvalidArgumentError && /pg\\.Pool/.test(e.message); }
console.log(JSON.stringify({
  sqlite, postgres,
  resolved: [import.meta.resolve("context-compactor/storage/postgres"), import.meta.resolve("context-compactor/storage/sqlite")],
}));
`);
  const result = JSON.parse(run("node", ["check-sql.mjs"], project));
  console.log(`# node sql: ${JSON.stringify(result)}`);
  assert.equal(result.sqlite, true, "without better-sqlite3 installed, a StorageError that says how to install it");
  assert.equal(result.postgres, true, "a missing pool is a typed error (pg itself is never imported)");
  assert.match(result.resolved[0], /node_modules\/context-compactor\/dist\/storage\/postgres\.js$/);
  assert.match(result.resolved[1], /node_modules\/context-compactor\/dist\/storage\/sqlite\.js$/);
});

test("TypeScript: the shipped declarations type-check a consumer (nodenext and bundler resolution)", () => {
  writeFileSync(join(project, "check.ts"), `
import { Tokenizer, ConversationHistory, convertMessages, InvalidMessageError, type ChatTokenCount, type TokenReport, type OpenAIMessage } from "context-compactor";
const tok = new Tokenizer("cl100k_base");
const n: number = tok.count("hello");
const ids: Uint32Array = tok.encode("hello");
const messages: OpenAIMessage[] = [{ role: "user", content: "hi" }];
const count: ChatTokenCount = tok.countMessages(messages, { tools: [] });
const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
const id: string = history.append(messages[0]);
const report: TokenReport = history.tokenReport();
const converted = convertMessages(messages, "openai", "anthropic");
const e = new InvalidMessageError("x", { index: 1 });
const index: number | undefined = e.index;
// @ts-expect-error: not an encoding
new Tokenizer("gpt2");
import { Tokenizer as LiteTokenizer, loadRanks } from "context-compactor/lite";
loadRanks("cl100k_base", new Uint8Array(0));
const lite: number = new LiteTokenizer("cl100k_base").count("hello");
import { loadConversation, type LoadedConversation, type AnthropicRequest } from "context-compactor";
const loaded: LoadedConversation = loadConversation("[]", { name: "x.json", run: 0 });
// The format narrows the messages' type.
const asOpenAI: OpenAIMessage[] = loaded.format === "openai" ? loaded.messages : [];
const asAnthropic: AnthropicRequest | null = loaded.format === "anthropic" ? loaded.messages : null;
const where: number | undefined = loaded.origins[0]?.line;
export { n, ids, count, id, report, converted, index, lite, asOpenAI, asAnthropic, where };
`);
  // A Node project as `tsc --init` makes it (skipLibCheck), without DOM types; and a strict browser
  // project that checks every .d.ts (wasm-bindgen's output needs DOM and esnext.disposable there).
  for (const [module, resolution, lib, skipLibCheck] of [
    ["nodenext", "nodenext", ["es2022"], true],
    ["esnext", "bundler", ["es2022", "dom", "esnext.disposable"], false],
  ]) {
    const compilerOptions = { noEmit: true, strict: true, target: "es2022", module, moduleResolution: resolution, lib, types: [], skipLibCheck };
    writeFileSync(join(project, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["check.ts"] }));
    try {
      run("node", [TSC, "-p", "tsconfig.json"], project);
    } catch (error) {
      assert.fail(`tsc (${resolution}, lib ${lib}, skipLibCheck ${skipLibCheck}) failed:\n${error.stdout}${error.stderr}`);
    }
    console.log(`# tsc --moduleResolution ${resolution} --lib ${lib} --skipLibCheck ${skipLibCheck}: ok`);
  }
});

test("Chromium: a page on localhost imports the installed package through its exports", async () => {
  const entry = browserEntry(join(project, "node_modules/context-compactor"));
  const liteEntry = browserEntry(join(project, "node_modules/context-compactor"), "./lite");
  const importMap = { imports: {
    "context-compactor": `/node_modules/context-compactor/${entry.replace(/^\.\//, "")}`,
    "context-compactor/lite": `/node_modules/context-compactor/${liteEntry.replace(/^\.\//, "")}`,
  } };
  console.log(`# import map from package.json exports (browser condition): ${JSON.stringify(importMap)}`);
  writeFileSync(join(project, "index.html"), `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>context-compactor from npm pack</title><link rel="icon" href="data:,">
<script type="importmap">${JSON.stringify(importMap)}</script></head>
<body style="font: 16px system-ui, sans-serif; margin: 24px">
<h1 style="font-size: 20px">context-compactor, installed from the packed tarball</h1>
<pre id="out">running…</pre>
<script type="module">
import { Tokenizer, ConversationHistory, InvalidMessageError } from "context-compactor";
import * as lite from "context-compactor/lite";
const out = document.getElementById("out");
try {
  lite.loadRanks("o200k_base", new Uint8Array(await (await fetch(lite.rankFile("o200k_base"))).arrayBuffer()));
  const liteIds = [...new lite.Tokenizer("o200k_base").encode("tiktoken is great!")];
  const tok = new Tokenizer("o200k_base");
  const ids = [...tok.encode("tiktoken is great!")];
  const history = new ConversationHistory();
  history.appendMany([{ role: "system", content: "You are terse." }, { role: "user", content: "tiktoken is great!" }]);
  let typed = false;
  try { history.append({ role: "robot", content: "x" }); } catch (e) { typed = e instanceof InvalidMessageError; }
  window.__result = { ids, liteIds, chat: history.tokenCount().total, typed };
  out.textContent = "encode(\\"tiktoken is great!\\") = [" + ids.join(", ") + "]\\n" +
    "history of 2 messages: " + window.__result.chat + " prompt tokens\\n" +
    "invalid role throws InvalidMessageError: " + typed + "\\n" +
    "lite entry, o200k_base ranks fetched: [" + liteIds.join(", ") + "]";
} catch (e) {
  window.__result = { error: e.name + ": " + e.message };
  out.textContent = "FAILED " + window.__result.error;
}
</script></body></html>
`);
  const server = await serve({ "/": project });
  try {
    await withPage(async (page, log) => {
      await page.goto(`${server.url}/index.html`);
      await page.waitForFunction(() => window.__result !== undefined, null, { timeout: 60_000 });
      const result = await page.evaluate(() => window.__result);
      mkdirSync(SHOTS, { recursive: true });
      await page.setViewportSize({ width: 800, height: 200 });
      await page.screenshot({ path: `${SHOTS}pack.png` });
      console.log(`# screenshot: ${SHOTS}pack.png`);
      console.log(`# chromium: ${JSON.stringify(result)}; requests: ${server.requests.join(", ")}`);
      assert.equal(result.error, undefined);
      assert.deepEqual(result.ids, [83, 8251, 2488, 382, 2212, 0]);
      assert.deepEqual(result.liteIds, result.ids);
      assert.ok(result.chat > 10);
      assert.equal(result.typed, true);
      for (const f of ["pkg/context_compactor_bg.wasm", "pkg-lite/context_compactor_bg.wasm", "ranks/o200k_base.cctab"]) {
        assert.ok(server.requests.includes(`200 /node_modules/context-compactor/${f}`), `${f} was fetched`);
      }
      assert.deepEqual(log.filter((l) => /error|failed/i.test(l)), []);
    });
  } finally {
    await server.close();
  }
});
