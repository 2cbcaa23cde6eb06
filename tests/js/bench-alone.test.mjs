// The benchmarks and scripts in a clone without the shared real-world fixtures (CC_SHARED pointed
// at a folder that is not there): each one either runs on the project's own fixtures, says so once
// on stderr and prints its table, or exits 2 with one line saying what it needs and how to
// provide it. Never a stack trace. Each runs in the smallest mode it has; its figures are not
// checked (they are timings, or measured on stand-ins).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { CHROMIUM } from "../browser/harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const ABSENT = fileURLToPath(new URL("./no-shared-fixtures-here/", import.meta.url));
const STAND_IN = /^bench: shared fixtures not found at .*no-shared-fixtures-here.*: the project's own fixtures \(tests\/fixtures\) stand in, not the published corpus$/gm;
const NEEDED = /^([\w.-]+(?: --measure)?): .+: shared fixtures not found at .*no-shared-fixtures-here.*: set CC_SHARED to the shared fixtures folder \(or the folder holding it\), or put shared\/fixtures beside the repository/;

function run(args, env = {}) {
  const result = spawnSync(process.execPath, args, {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, CC_SHARED: ABSENT, CC_BENCH_OWN_FIXTURES_SAID: "", ...env },
    timeout: 120_000,
  });
  assert.doesNotMatch(result.stderr, /^\s+at /m, `no stack trace:\n${result.stderr}`);
  assert.doesNotMatch(result.stderr, /ENOENT/, result.stderr);
  return result;
}

/** Runs `args`: exit 0, stdout matching `table`, and the stand-in note exactly once on stderr. */
function runsOnOwnFixtures(args, table, env) {
  const { status, stdout, stderr } = run(args, env);
  assert.equal(status, 0, `exit code of ${args.join(" ")}:\n${stderr}`);
  assert.equal(stderr.match(STAND_IN)?.length, 1, `one stand-in note on stderr:\n${stderr}`);
  assert.match(stdout, table);
}

/** Runs `args`: exit 2, one line on stderr naming the script and saying how to provide the fixtures. */
function needsShared(args, name) {
  const { status, stdout, stderr } = run(args);
  assert.equal(status, 2, `exit code of ${args.join(" ")}:\n${stderr}`);
  assert.equal(stdout, "");
  assert.equal(stderr.trim().split("\n").length, 1, stderr);
  assert.equal(NEEDED.exec(stderr)?.[1], name, stderr);
}

test("bench/contexts.mjs builds the own Claude Code logs, SWE-agent trajectory and synthetic session", () => {
  runsOnOwnFixtures(["bench/contexts.mjs"], /^claude-code-tool-heavy .*\n(.*\n)*^claude-code-short .*\n(.*\n)*^swe-agent-trajectory .*\n(.*\n)*^60 builds, /m);
});

test("bench/persist.mjs appends the own airline runs, its cold phases in child processes", () => {
  runsOnOwnFixtures(["bench/persist.mjs"], /^Node file system \(no fsync\): 60 messages appended one at a time(.*\n)*  on disk after the run: /m, { MESSAGES: "60", SYNC: "0" });
});

test("scripts/report.mjs reports an own airline run, and the own Claude Code log", () => {
  runsOnOwnFixtures(["scripts/report.mjs", "3"], /^airline \(tests\/fixtures\) run 3 \(task \d+, OpenAI Chat Completions\)\n(.*\n)*  total /m);
  runsOnOwnFixtures(["scripts/report.mjs", "--anthropic"], /^Claude Code session log tests\/fixtures\/anthropic\/claude-code-tool-heavy\.jsonl(.*\n)*  total /m);
});

test("bench/scale.mjs and bench/compact.mjs replay the own airline runs (bench/long-conversation.mjs)", () => {
  runsOnOwnFixtures(["bench/scale.mjs", "300"], /^scale: tau-bench messages repeated \(1780 a lap\)/m, { SCALE_BUSY: "0" });
  runsOnOwnFixtures(["bench/compact.mjs", "300"], /^conversation: 300 messages .*\n(.*\n)*^context-compactor \(selection only\): cold /m);
});

test("the Claude rule's fit and counts need the billed usage of the shared logs: exit 2", () => {
  needsShared(["bench/claude-count.mjs"], "claude-count");
  needsShared(["bench/claude-fit.mjs"], "claude-fit");
  needsShared(["tests/fixtures/generate.mjs", "--measure"], "generate.mjs --measure");
});

test("bench/cache-cost.mjs replays the generated sessions and leaves the published tables alone", () => {
  const docs = new URL("../../docs/benchmarks.md", import.meta.url);
  const published = readFileSync(docs, "utf8");
  const { status, stdout, stderr } = run(["bench/cache-cost.mjs"]);
  assert.equal(status, 0, stderr);
  assert.match(stdout, /^The shared fixtures are absent \(looked for .*no-shared-fixtures-here.*\)(.*\n)*^### Long sessions, budget 30,000: 5 sessions/m);
  assert.match(stderr, /^cache-cost: tables not written to docs\/benchmarks\.md: the published ones include the shared fixtures, absent here$/m);
  assert.equal(readFileSync(docs, "utf8"), published);
});

const noChromium = existsSync(CHROMIUM) ? false : `no chromium at ${CHROMIUM}`;

test("bench/persist-browser.mjs serves the own airline runs to IndexedDB", { skip: noChromium }, () => {
  runsOnOwnFixtures(["bench/persist-browser.mjs"], /^Chromium indexeddb: 40 messages appended one at a time(.*\n)*  target: /m, { MESSAGES: "40", KINDS: "indexeddb", RESTARTS: "0" });
});

test("bench/persist-ab.mjs serves the own airline runs to both trees", { skip: noChromium }, () => {
  runsOnOwnFixtures(["bench/persist-ab.mjs"], /^indexeddb reloaded base .*open \+ first build median(.*\n)*^indexeddb restarted new /m, { MESSAGES: "40", N: "1" });
});
