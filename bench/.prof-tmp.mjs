// temporary: CPU profile of a restarted browser's first open (not committed)
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { serve, launch } from "../tests/browser/harness.mjs";
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../../shared/fixtures/", import.meta.url));
const KIND = process.env.KINDS ?? "indexeddb";
const server = await serve({ "/": ROOT, "/fixtures/": FIXTURES, "/pkg/": process.env.PKG ?? join(ROOT, "pkg") }, { cacheable: (p) => process.env.CACHE === "1" && p.endsWith(".wasm") });
const profile = mkdtempSync(join(tmpdir(), "cc-prof-"));
const run = async (page, name) => {
  await page.goto(`${server.url}/tests/browser/storage.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
  return page.evaluate(async ([kind, name]) => {
    const run = await import("/bench/persist-run.mjs");
    const { LocalStorageAdapter } = await import("context-compactor");
    const { IndexedDBAdapter } = await import("context-compactor/storage/indexeddb");
    const openAdapter = kind === "indexeddb" ? () => IndexedDBAdapter.open({ database: "cc-bench" }) : async () => new LocalStorageAdapter({ prefix: "cc-bench" });
    if (name === "append") { const m = (await (await fetch("/fixtures/openai/tau-bench-gpt-4o-airline.json")).json()).flatMap((r) => r.traj).slice(0, 5000); await run.appendPhase({ openAdapter, messages: m }); return null; }
    return run.coldPhase({ openAdapter });
  }, [KIND, name]);
};
try {
  let b = await launch(profile);
  await run(b.page, "append");
  await b.close();
  for (let i = 0; i < Number(process.env.N ?? 1); i++) {
    b = await launch(profile);
    const cdp = await b.page.context().newCDPSession(b.page);
    await b.page.goto(`${server.url}/tests/browser/storage.html`);
    await b.page.waitForFunction(() => window.ready === true);
    await cdp.send("Profiler.enable");
    await cdp.send("Profiler.setSamplingInterval", { interval: 100 });
    await cdp.send("Profiler.start");
    const r = await b.page.evaluate(async (kind) => {
      const run = await import("/bench/persist-run.mjs");
      const { LocalStorageAdapter } = await import("context-compactor");
      const { IndexedDBAdapter } = await import("context-compactor/storage/indexeddb");
      const openAdapter = kind === "indexeddb" ? () => IndexedDBAdapter.open({ database: "cc-bench" }) : async () => new LocalStorageAdapter({ prefix: "cc-bench" });
      return run.coldPhase({ openAdapter });
    }, KIND);
    const { profile: prof } = await cdp.send("Profiler.stop");
    writeFileSync(`/tmp/fo/prof-${i}.cpuprofile`, JSON.stringify(prof));
    console.log(JSON.stringify(r));
    await b.close();
  }
} finally {
  rmSync(profile, { recursive: true, force: true });
  await server.close();
}
