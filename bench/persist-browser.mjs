// bench/persist.mjs's twin in headless Debian Chromium (playwright-core): the same run
// (bench/persist-run.mjs) on the IndexedDB and localStorage adapters, on a plain page served from
// localhost (tests/browser/storage.html, whose import map resolves the package's entries): 5,000
// tau-bench messages appended one at a time, each saved, then (each in a reloaded page) the
// records read, the session opened and built, and the same messages built never stored. Each adapter runs in a fresh browser profile. Run: npm run bench:persist
// The first open runs code this browser has not compiled yet (V8's baseline tier, functions
// compiled as they are first called); a page reloaded in the same browser reuses the compiled
// and optimised wasm, so the open is measured twice, and the phases after it are reloads too.
// Then the browser is restarted on the same profile (RESTARTS times): the stored session is
// there and nothing is compiled, unless the wasm was served cacheable (CACHE=1), when Chromium
// takes the module from its code cache (it uses it only for a response from its HTTP cache).
// (MESSAGES=n for fewer; KINDS=indexeddb or KINDS=localStorage for one adapter.)
// ENTRY=lite: the same on the lite entry (bench/persist-lite.html), as a chat page loads it; its
// o200k_base table is fetched and installed (loadRanks decodes it) before the page is ready, so
// the open never decodes it, and each page's loadRanks time is printed beside.
// Then RESTARTS more restarts measure the browser's own share: the same records read and parsed
// with JSON.parse, no wasm (persist-run.mjs readPhase).
// PROFILE=<dir>: each restarted browser's open + first build recorded by V8's sampling profiler
// into <dir>/<kind>-restart-<i>.cpuprofile (Chrome DevTools opens it); for wasm function names,
// build with KEEP_WASM_NAMES=1 (scripts/build.sh). The profiler slows what it records by ~30%.
import { fileURLToPath } from "node:url";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { serve, launch } from "../tests/browser/harness.mjs";
import { fixturePath } from "./fixtures.mjs";
import { describe, phases } from "./persist-run.mjs";

const COUNT = Number(process.env.MESSAGES ?? 5000);
const KINDS = (process.env.KINDS ?? "indexeddb,localStorage").split(",");
const RESTARTS = Number(process.env.RESTARTS ?? 3);
const LITE = process.env.ENTRY === "lite";
const PAGE = LITE ? "bench/persist-lite.html" : "tests/browser/storage.html";
const ROOT = fileURLToPath(new URL("../", import.meta.url));
// The runs the pages append, served at RUNS: the shared tau-bench runs, or without them the
// project's airline runs (bench/fixtures.mjs).
const RUNS = "/bench-runs.json";
const RUNS_FILE = fixturePath("tau-bench");

// CACHE=1: the wasm served cacheable (as a site serves its hashed assets), so that Chromium may
// keep its compiled code for the next visit.
const CACHE = process.env.CACHE === "1";
const PROFILE = process.env.PROFILE;
if (PROFILE) mkdirSync(PROFILE, { recursive: true });
/** The bytes in the profile's wasm code cache (Chromium's compiled modules, kept across restarts). */
function wasmCodeCache(profile) {
  const dir = join(profile, "Default", "Code Cache", "wasm");
  if (!existsSync(dir)) return 0;
  return readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isFile() ? statSync(join(dir, e.name)).size : 0), 0);
}

const server = await serve({ "/": ROOT, [RUNS]: RUNS_FILE }, { cacheable: (path) => CACHE && path.endsWith(".wasm") });
try {
  for (const kind of KINDS) {
    const profile = mkdtempSync(join(tmpdir(), "cc-chromium-"));
    // Runs `fn(phase)` in a browser started on this adapter's profile, closed afterwards.
    const inBrowser = async (fn) => {
      const { page, log, close } = await launch(profile);
      try {
        return await fn(phaseIn(page, log));
      } finally {
        await close();
      }
    };
    // Each phase in a freshly loaded page: the appends, then every cold measurement after a reload.
    // With `profileTo`, the phase is recorded by the sampling profiler into that file.
    const phaseIn = (page, log) =>
      async (name, profileTo) => {
        await page.goto(`${server.url}/${PAGE}`);
        await page.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });
        const cdp = profileTo && (await page.context().newCDPSession(page));
        if (cdp) {
          await cdp.send("Profiler.enable");
          await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
          await cdp.send("Profiler.start");
        }
        const outcome = await page.evaluate(
          async ([kind, count, name, runs]) => {
            const run = await import("/bench/persist-run.mjs");
            const { LocalStorageAdapter } = await import("context-compactor");
            const { IndexedDBAdapter } = await import("context-compactor/storage/indexeddb");
            const messages = async () => {
              const response = await fetch(runs);
              if (!response.ok) throw new Error(`${runs}: HTTP ${response.status}`);
              return (await response.json()).flatMap((r) => r.traj).slice(0, count);
            };
            const openAdapter = kind === "indexeddb" ? () => IndexedDBAdapter.open({ database: "cc-bench" }) : async () => new LocalStorageAdapter({ prefix: "cc-bench" });
            try {
              if (name === "append") return { result: await run.appendPhase({ openAdapter, messages: await messages() }) };
              if (name === "read") return { result: await run.readPhase({ openAdapter }) };
              if (name === "memory") return { result: run.memoryPhase({ messages: await messages() }) };
              return { result: await run.coldPhase({ openAdapter, select: name === "select" }) };
            } catch (error) {
              return { error: `${error.name}${error.reason ? ` (${error.reason})` : ""}: ${error.message}` };
            }
          },
          [kind, COUNT, name, RUNS],
        );
        if (cdp) writeFileSync(profileTo, JSON.stringify((await cdp.send("Profiler.stop")).profile));
        if (outcome.error) throw new Error(`${kind} ${name}: ${outcome.error}\n${log.join("\n")}`);
        return LITE ? { ...outcome.result, ranksMs: await page.evaluate(() => window.ranksMs) } : outcome.result;
      };
    try {
      const result = await inBrowser(async (phase) => {
        const appended = await phase("append");
        const read = await phase("read");
        const cold = await phase("cold");
        return { ...appended, ...read, cold, reload: await phase("cold"), select: await phase("select"), ...(await phase("memory")) };
      });
      // The browser restarted on the same profile: the stored session is there, and no wasm is
      // compiled yet (Chromium keeps no code cache for it), as when a user comes back the next day.
      const restarts = [];
      for (let i = 0; i < RESTARTS; i++) {
        const cached = wasmCodeCache(profile);
        const profileTo = PROFILE && join(PROFILE, `${kind}-restart-${i}.cpuprofile`);
        restarts.push({ ...(await inBrowser((phase) => phase("cold", profileTo))), cached });
      }
      // The browser's own share of a restart: as many restarts again, each reading the records
      // and parsing them with JSON.parse, with no wasm (run after the opens: the first launch
      // on a profile after the appends may pay for the storage's own recovery).
      const floors = [];
      for (let i = 0; i < RESTARTS; i++) floors.push(await inBrowser((phase) => phase("read")));
      for (const line of describe(`Chromium ${LITE ? "lite " : ""}${kind}`, result)) console.log(line);
      const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
      const restarted = restarts.map((r) => r.openAndBuildMs);
      for (const r of restarts) {
        console.log(
          `  the browser restarted (its wasm code cache ${r.cached.toLocaleString()} B): open ${r.openMs.toFixed(1)} ms, open + first build ${r.openAndBuildMs.toFixed(1)} ms; ${phases(r)}` +
            (r.ranksMs ? ` (before it, the page's rank table: fetch ${r.ranksMs.fetch.toFixed(1)} ms, loadRanks ${r.ranksMs.load.toFixed(1)} ms)` : ""),
        );
      }
      if (floors.length) {
        const total = (f) => f.readMs + f.parseMs;
        const floor = floors.find((f) => total(f) === median(floors.map(total)));
        console.log(
          `  the browser's floor, restarted (no wasm: the adapter opened, the ${floor.storedRecords} records read and JSON.parse'd), median of ${floors.length}: ` +
            `${total(floor).toFixed(1)} ms (adapter open ${floor.adapterMs.toFixed(1)} ms, read ${(floor.readMs - floor.adapterMs).toFixed(1)} ms, JSON.parse ${floor.parseMs.toFixed(1)} ms); ` +
            `all: ${floors.map((f) => total(f).toFixed(1)).join(", ")} ms`,
        );
      }
      const target = (ms) => `${ms < 100 ? "meets" : "misses"} it (${ms.toFixed(1)} ms)`;
      console.log(
        `  target: open + first build of ${result.messages.toLocaleString()} messages under 100 ms: ` +
          `first open after the appends ${target(result.cold.openAndBuildMs)}, reloaded ${target(result.reload.openAndBuildMs)}` +
          (restarts.length ? `, a restarted browser's first open (median of ${restarts.length}) ${target(median(restarted))}` : ""),
      );
    } finally {
      rmSync(profile, { recursive: true, force: true });
    }
  }
} finally {
  await server.close();
}
