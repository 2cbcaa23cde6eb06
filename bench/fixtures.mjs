// Where the benchmarks' conversations come from. The published figures were measured on the shared
// real-world fixtures (../shared/fixtures beside the repository, or CC_SHARED: that folder or the
// one holding it); in a clone without them, the project's own airline runs (tests/fixtures) stand
// in, and stderr says so once, so that a figure is never mistaken for the published one.
import { existsSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

export const SHARED = (() => {
  const dir = process.env.CC_SHARED;
  if (!dir) return new URL("../../shared/fixtures/", import.meta.url);
  const base = pathToFileURL(dir.replace(/\/?$/, "/"));
  return existsSync(new URL("fixtures/", base)) ? new URL("fixtures/", base) : base;
})();
export const sharedPresent = existsSync(SHARED);

let said = false;
/** The run list the benchmarks replay: `[{ task_id, traj }]`, the shared tau-bench runs if present. */
export function runList() {
  if (sharedPresent) return JSON.parse(readFileSync(new URL("openai/tau-bench-gpt-4o-airline.json", SHARED), "utf8"));
  if (!said) console.error(`bench: shared fixtures not found at ${SHARED.pathname}: replaying the project's airline runs (tests/fixtures), not the published corpus`);
  said = true;
  return JSON.parse(readFileSync(new URL("../tests/fixtures/openai/airline-runs.json", import.meta.url), "utf8"));
}
