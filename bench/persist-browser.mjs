// bench/persist.mjs's twin in headless Debian Chromium (playwright-core): the same run
// (bench/persist-run.mjs) on the IndexedDB and localStorage adapters, on a plain page served from
// localhost (tests/browser/storage.html, whose import map resolves the package's entries): 5,000
// tau-bench messages appended one at a time, each saved, then (each in a reloaded page) the
// records read, the session opened and built, and the same messages built never stored. Each adapter runs in a fresh browser profile. Run: npm run bench:persist
// The first open runs code this browser has not compiled yet (V8's baseline tier, functions
// compiled as they are first called); a page reloaded in the same browser reuses the compiled
// and optimised wasm, so the open is measured twice, and the phases after it are reloads too.
// (Across a browser restart nothing is kept: with cacheable responses, Chromium 156 wrote no
// code-cache entry for this wasm, so a new browser session opens as the first open does.)
// (MESSAGES=n for fewer; KINDS=indexeddb or KINDS=localStorage for one adapter.)
import { fileURLToPath } from "node:url";
import { serve, withPage } from "../tests/browser/harness.mjs";
import { describe } from "./persist-run.mjs";

const COUNT = Number(process.env.MESSAGES ?? 5000);
const KINDS = (process.env.KINDS ?? "indexeddb,localStorage").split(",");
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../../shared/fixtures/", import.meta.url));

const server = await serve({ "/": ROOT, "/fixtures/": FIXTURES });
try {
  for (const kind of KINDS) {
    const result = await withPage(async (page, log) => {
      // Each phase in a freshly loaded page: the appends, then every cold measurement after a reload.
      const phase = async (name) => {
        await page.goto(`${server.url}/tests/browser/storage.html`);
        await page.waitForFunction(() => window.ready === true, null, { timeout: 60_000 });
        const outcome = await page.evaluate(
          async ([kind, count, name]) => {
            const run = await import("/bench/persist-run.mjs");
            const { LocalStorageAdapter } = await import("context-compactor");
            const { IndexedDBAdapter } = await import("context-compactor/storage/indexeddb");
            const messages = async () => (await (await fetch("/fixtures/openai/tau-bench-gpt-4o-airline.json")).json()).flatMap((r) => r.traj).slice(0, count);
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
          [kind, COUNT, name],
        );
        if (outcome.error) throw new Error(`${kind} ${name}: ${outcome.error}\n${log.join("\n")}`);
        return outcome.result;
      };
      const appended = await phase("append");
      const read = await phase("read");
      const cold = await phase("cold");
      return { ...appended, ...read, cold, reload: await phase("cold"), select: await phase("select"), ...(await phase("memory")) };
    });
    for (const line of describe(`Chromium ${kind}`, result)) console.log(line);
    const target = (ms) => `${ms < 100 ? "meets" : "misses"} it (${ms.toFixed(1)} ms)`;
    console.log(
      `  target: open + first build of ${result.messages.toLocaleString()} messages under 100 ms: ` +
        `first open ${target(result.cold.openAndBuildMs)}, reloaded ${target(result.reload.openAndBuildMs)}`,
    );
  }
} finally {
  await server.close();
}
