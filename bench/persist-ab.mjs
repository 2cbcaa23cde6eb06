// Two builds of the package compared on bench/persist-run.mjs's cold open, interleaved on one
// headless Chromium profile (each tree served from an origin of its own, so each has its own
// storage): 5,000 stored messages appended once per tree, then N page reloads of each, then N
// browser restarts, each opening both trees in turn (the order alternates: the first open after a
// restart pays for the browser starting). Prints medians of open + first build and its phases.
// Run: node bench/persist-ab.mjs <base tree> [<new tree, default this one>]; each tree built
// (scripts/build.sh) with these bench files. N=8, KINDS=indexeddb|localStorage, CACHE=1 serves
// the wasm cacheable (Chromium then uses its code cache after a restart), MESSAGES=n stores the
// first n messages instead of 5,000.
import { mkdtempSync, rmSync } from "node:fs";
import { join, resolve } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { serve, launch } from "../tests/browser/harness.mjs";
import { fixturePath } from "./fixtures.mjs";

const HERE = fileURLToPath(new URL("../", import.meta.url));
const TREES = { base: resolve(process.argv[2] ?? HERE), new: resolve(process.argv[3] ?? HERE) };
// The runs the pages append, served at RUNS: the shared tau-bench runs, or without them the
// project's airline runs (bench/fixtures.mjs).
const RUNS = "/bench-runs.json";
const RUNS_FILE = fixturePath("tau-bench");
const KIND = process.env.KINDS ?? "indexeddb";
const N = Number(process.env.N ?? 8);
const CACHE = process.env.CACHE === "1";
const MESSAGES = Number(process.env.MESSAGES ?? 5000);

const servers = {};
for (const [tree, root] of Object.entries(TREES)) {
  servers[tree] = await serve({ "/": root, [RUNS]: RUNS_FILE }, { cacheable: (path) => CACHE && path.endsWith(".wasm") });
}
const profile = mkdtempSync(join(tmpdir(), "cc-persist-ab-"));

/** Phase `name` ("append" or "cold") of `tree`, in a freshly loaded page. */
async function phase(page, tree, name) {
  await page.goto(`${servers[tree].url}/tests/browser/storage.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });
  return page.evaluate(
    async ([kind, name, count, runs]) => {
      const run = await import("/bench/persist-run.mjs");
      const { LocalStorageAdapter } = await import("context-compactor");
      const { IndexedDBAdapter } = await import("context-compactor/storage/indexeddb");
      const openAdapter = kind === "indexeddb" ? () => IndexedDBAdapter.open({ database: "cc-bench" }) : async () => new LocalStorageAdapter({ prefix: "cc-bench" });
      if (name === "cold") return run.coldPhase({ openAdapter });
      const response = await fetch(runs);
      if (!response.ok) throw new Error(`${runs}: HTTP ${response.status}`);
      const messages = (await response.json()).flatMap((r) => r.traj).slice(0, count);
      await run.appendPhase({ openAdapter, messages });
      return null;
    },
    [KIND, name, MESSAGES, RUNS],
  );
}

const results = { reloaded: { base: [], new: [] }, restarted: { base: [], new: [] } };
try {
  let browser = await launch(profile);
  for (const tree of ["base", "new"]) await phase(browser.page, tree, "append");
  for (let i = 0; i < N; i++) for (const tree of ["base", "new"]) results.reloaded[tree].push(await phase(browser.page, tree, "cold"));
  await browser.close();
  for (let i = 0; i < N; i++) {
    browser = await launch(profile);
    for (const tree of i % 2 ? ["base", "new"] : ["new", "base"]) results.restarted[tree].push(await phase(browser.page, tree, "cold"));
    await browser.close();
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const [mode, byTree] of Object.entries(results)) {
    for (const [tree, runs] of Object.entries(byTree)) {
      const p = (key) => median(runs.map((r) => r.phases[key])).toFixed(1);
      console.log(
        `${KIND}${CACHE ? " (wasm cacheable)" : ""} ${mode} ${tree} (${TREES[tree]}): open + first build median ${median(runs.map((r) => r.openAndBuildMs)).toFixed(1)} ms ` +
          `[${runs.map((r) => r.openAndBuildMs.toFixed(0)).join(" ")}]; adapter open ${p("adapterMs")}, reads ${p("readMs")}, lock + Session.load ${p("loadMs")}, first build ${p("buildMs")}`,
      );
    }
  }
} finally {
  rmSync(profile, { recursive: true, force: true });
  for (const server of Object.values(servers)) await server.close();
}
