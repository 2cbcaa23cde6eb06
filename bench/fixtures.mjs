// Where the benchmarks' conversations come from. The published figures were measured on the shared
// real-world fixtures (../shared/fixtures beside the repository, or CC_SHARED: that folder or the
// one holding it); in a clone without them, the project's own fixtures (tests/fixtures: the
// airline runs, the SWE-agent trajectory, the Claude Code logs) stand in, and stderr says so once,
// so that a figure is never mistaken for the published one. A script whose figure only means
// something on the real data (counts against what the API billed) calls `requireShared` instead.
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

export const SHARED = (() => {
  const dir = process.env.CC_SHARED;
  if (!dir) return new URL("../../shared/fixtures/", import.meta.url);
  const base = pathToFileURL(dir.replace(/\/?$/, "/"));
  return existsSync(new URL("fixtures/", base)) ? new URL("fixtures/", base) : base;
})();
export const sharedPresent = existsSync(SHARED);

const OWN = new URL("../tests/fixtures/", import.meta.url);
// Each conversation a benchmark replays: its file among the shared fixtures, and the project's
// own fixture of the same kind that stands in for it.
const FILES = {
  "tau-bench": ["openai/tau-bench-gpt-4o-airline.json", "openai/airline-runs.json"],
  "swe-agent": ["openai/swe-agent-marshmallow-1867.traj", "openai/swe-agent-trajectory.traj"],
  "claude-code-short": ["anthropic/claude-code-short.jsonl", "anthropic/claude-code-short.jsonl"],
  "claude-code-tool-heavy": ["anthropic/claude-code-tool-heavy.jsonl", "anthropic/claude-code-tool-heavy.jsonl"],
  "claude-code-subagent": ["anthropic/claude-code-subagent.jsonl", "anthropic/claude-code-subagent.jsonl"],
};

// Child processes inherit the environment: a benchmark's phases run in processes of their own
// say nothing the parent already said.
const SAID = "CC_BENCH_OWN_FIXTURES_SAID";
function sayOwnOnce() {
  if (process.env[SAID]) return;
  process.env[SAID] = "1";
  console.error(`bench: shared fixtures not found at ${fileURLToPath(SHARED)}: the project's own fixtures (tests/fixtures) stand in, not the published corpus`);
}

/** The file of conversation `name` (a key of FILES): the shared one if present, else the project's own. */
export function fixtureFile(name) {
  const [shared, own] = FILES[name] ?? [];
  if (!shared) throw new Error(`no fixture named ${name} (${Object.keys(FILES).join(", ")})`);
  if (sharedPresent) return new URL(shared, SHARED);
  sayOwnOnce();
  return new URL(own, OWN);
}
/** The path of `fixtureFile(name)`, as a string. */
export const fixturePath = (name) => fileURLToPath(fixtureFile(name));
/** The text of `fixtureFile(name)`. */
export const readFixture = (name) => readFileSync(fixtureFile(name), "utf8");

/** The run list the benchmarks replay: `[{ task_id, traj }]`, the shared tau-bench runs if present. */
export const runList = () => JSON.parse(readFixture("tau-bench"));

/**
 * For a figure that only means something on the shared fixtures: without them, one line on
 * stderr saying what `what` needs and how to provide it (`otherwise`: another way, if the script
 * has one), and exit code 2.
 */
export function requireShared(what, otherwise) {
  if (sharedPresent) return;
  console.error(`${what}: shared fixtures not found at ${fileURLToPath(SHARED)}: set CC_SHARED to the shared fixtures folder (or the folder holding it), or put shared/fixtures beside the repository${otherwise ? `, or ${otherwise}` : ""}`);
  process.exit(2);
}
