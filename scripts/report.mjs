#!/usr/bin/env node
// `npm start` (after the build): counts a real fixture conversation with the package's Node entry
// and prints a per-role, per-part token report.
//   node scripts/report.mjs              the longest tau-bench run (OpenAI format)
//   node scripts/report.mjs 17           tau-bench run 17
//   node scripts/report.mjs --anthropic  the Claude Code tool-heavy log (Anthropic format)
//   --encoding cl100k_base               another encoding (default o200k_base)
// The fixtures are the shared ones, or without them the project's own (bench/fixtures.mjs): its
// airline runs, its Claude Code tool-heavy log.
import { performance } from "node:perf_hooks";
import { readFixture, runList, sharedPresent } from "../bench/fixtures.mjs";

const args = process.argv.slice(2);
const anthropic = args.includes("--anthropic");
const encodingAt = args.indexOf("--encoding");
const encoding = encodingAt >= 0 ? args[encodingAt + 1] : "o200k_base";
const runArg = args.find((a, i) => /^\d+$/.test(a) && args[i - 1] !== "--encoding");

const t0 = performance.now();
const { ConversationHistory, Tokenizer } = await import("context-compactor");
const tImport = performance.now() - t0;

let title, messages;
if (anthropic) {
  const file = `${sharedPresent ? "" : "tests/fixtures/"}anthropic/claude-code-tool-heavy.jsonl`;
  messages = readFixture("claude-code-tool-heavy").split("\n").filter((l) => l.trim())
    .map((l) => JSON.parse(l)).filter((r) => r.type === "user" || r.type === "assistant").map((r) => r.message);
  title = `Claude Code session log ${file} (Anthropic Messages)`;
} else {
  const runs = runList();
  const corpus = sharedPresent ? "tau-bench airline" : "airline (tests/fixtures)";
  let index = runArg === undefined ? -1 : Number(runArg);
  if (index < 0) index = runs.reduce((best, r, i) => (r.traj.length > runs[best].traj.length ? i : best), 0);
  if (!runs[index]) throw new Error(`no ${corpus} run ${index} (there are ${runs.length})`);
  messages = runs[index].traj;
  title = `${corpus} run ${index} (task ${runs[index].task_id}, OpenAI Chat Completions)`;
}

const t1 = performance.now();
const history = new ConversationHistory({ encoding, format: anthropic ? "anthropic" : "openai" });
history.appendMany(messages);
const tAppend = performance.now() - t1;
const t2 = performance.now();
const report = history.tokenReport();
const tCount = performance.now() - t2;
const t3 = performance.now();
history.tokenReport();
const tRecount = performance.now() - t3;
const bytes = Buffer.byteLength(JSON.stringify(messages));

const pct = (n) => `${((100 * n) / report.total).toFixed(1).padStart(5)}%`;
const line = (label, n) => console.log(`  ${label.padEnd(14)} ${String(n).padStart(8)}  ${pct(n)}`);
console.log(`\n${title}`);
console.log(`${report.messages} messages, ${(bytes / 1024).toFixed(0)} KiB of JSON, encoding ${history.encoding}\n`);
console.log(`Tokens by role`);
for (const [role, n] of Object.entries(report.byRole).sort((a, b) => b[1] - a[1])) line(role, n);
line("reply priming", report.replyPriming);
console.log(`\nTokens by part`);
for (const [part, n] of Object.entries(report.byPart).sort((a, b) => b[1] - a[1])) line(part, n);
line("reply priming", report.replyPriming);
console.log(`\n  ${"total".padEnd(14)} ${String(report.total).padStart(8)}  (prompt tokens by OpenAI's chat rules)`);

const count = history.tokenCount();
const largest = count.messages.map((n, i) => [n, i]).sort((a, b) => b[0] - a[0]).slice(0, 3);
const roleOf = (i) => history.get(history.ids()[i])?.role ?? "?";
console.log(`  largest messages: ${largest.map(([n, i]) => `#${i} ${roleOf(i)} ${n}`).join(", ")}`);
const check = new Tokenizer(encoding).countMessages(history.messages(), { format: anthropic ? "anthropic" : "openai" }).total;
console.log(`  Tokenizer.countMessages over the same list: ${check} ${check === report.total ? "(same)" : "(DIFFERENT)"}`);
console.log(`\nTiming: import + wasm init ${tImport.toFixed(0)} ms, appendMany ${tAppend.toFixed(1)} ms, ` +
  `first count ${tCount.toFixed(1)} ms (incl. loading ${encoding}), cached recount ${tRecount.toFixed(2)} ms, ` +
  `messages tokenized: ${history.countedMessages}`);
