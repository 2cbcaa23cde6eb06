// temporary A/B of restarted-browser first opens (not committed)
import { mkdtempSync, rmSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { serve, launch } from "../tests/browser/harness.mjs";
const ROOT = fileURLToPath(new URL("../", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../../shared/fixtures/", import.meta.url));
const KIND = process.env.KINDS ?? "indexeddb";
const opts = { cacheable: (p) => process.env.CACHE === "1" && p.endsWith(".wasm") };
const server = await serve({ "/": ROOT, "/fixtures/": FIXTURES }, opts);
const profile = mkdtempSync(join(tmpdir(), "cc-ab-"));
const run = async (page, name, flag) => {
  await page.goto(`${server.url}/tests/browser/storage.html`);
  await page.waitForFunction(() => window.ready === true, null, { timeout: 60000 });
  return page.evaluate(async ([kind, name, flag]) => {
    globalThis.__noPrepare = flag;
    const run = await import("/bench/persist-run.mjs");
    const { LocalStorageAdapter } = await import("context-compactor");
    const { IndexedDBAdapter } = await import("context-compactor/storage/indexeddb");
    const openAdapter = kind === "indexeddb" ? () => IndexedDBAdapter.open({ database: "cc-bench" }) : async () => new LocalStorageAdapter({ prefix: "cc-bench" });
    if (name === "append") { const m = (await (await fetch("/fixtures/openai/tau-bench-gpt-4o-airline.json")).json()).flatMap((r) => r.traj).slice(0, 5000); await run.appendPhase({ openAdapter, messages: m }); return null; }
    return run.coldPhase({ openAdapter });
  }, [KIND, name, flag]);
};
const variants = (process.env.VARIANTS ?? "prepare,noprepare").split(",");
const results = Object.fromEntries(variants.map((v) => [v, []]));
try {
  let b = await launch(profile);
  await run(b.page, "append", false);
  if (process.env.MODE === "reload") {
    for (let i = 0; i < Number(process.env.N ?? 4); i++) for (const v of variants) results[v].push(await run(b.page, "cold", v === "noprepare"));
    process.env.N = "0";
  }
  await b.close();
  for (let i = 0; i < Number(process.env.N ?? 4); i++) {
    for (const v of variants) {
      b = await launch(profile);
      const r = await run(b.page, "cold", v === "noprepare");
      await b.close();
      results[v].push(r);
    }
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const v of variants) {
    const rs = results[v];
    const p = (k) => med(rs.map((r) => r.phases[k])).toFixed(1);
    console.log(`${v}: open+build median ${med(rs.map((r) => r.openAndBuildMs)).toFixed(1)} [${rs.map((r) => r.openAndBuildMs.toFixed(0)).join(" ")}] adapter ${p("adapterMs")} reads ${p("readMs")} load ${p("loadMs")} build ${p("buildMs")}`);
  }
} finally {
  rmSync(profile, { recursive: true, force: true });
  await server.close();
}
