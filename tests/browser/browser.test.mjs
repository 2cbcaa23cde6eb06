// The browser entry in headless Chromium: a plain page (tests/browser/index.html) served from the
// repo root on localhost imports "context-compactor" through an import map, counts the fixture
// vectors and chat examples, appends an airline run and a Claude Code log (tests/fixtures), checks typed errors,
// and renders it all; this asserts the page's results and saves a screenshot.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { serve, withPage } from "./harness.mjs";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const FIXTURES = fileURLToPath(new URL("../fixtures/", import.meta.url));
const SHOTS = fileURLToPath(new URL("./screenshots/", import.meta.url));
const RUN = process.env.CC_BROWSER_RUN ?? 0; // which airline run the page appends (default the first)

test("browser entry: plain page in headless Chromium counts, appends and throws typed errors", async () => {
  const server = await serve({ "/": ROOT, "/fixtures/": FIXTURES });
  try {
    await withPage(async (page, log) => {
      await page.goto(`${server.url}/tests/browser/index.html?run=${RUN}`);
      await page.waitForFunction(() => window.__results !== undefined, null, { timeout: 60_000 });
      const results = await page.evaluate(() => window.__results);
      const status = await page.textContent("#status");
      mkdirSync(SHOTS, { recursive: true });
      const shot = `${SHOTS}browser.png`;
      await page.screenshot({ path: shot, fullPage: true });
      console.log(`# screenshot: ${shot}`);
      console.log(`# page: ${status}`);
      for (const c of results.checks) console.log(`#   ${c.ok ? "✓" : "✗"} ${c.name}${c.ok ? "" : `: ${c.detail}`}`);

      assert.equal(results.error, undefined, `the page threw: ${JSON.stringify(results.error)}`);
      assert.deepEqual(results.checks.filter((c) => !c.ok), [], "every check on the page passed");
      assert.ok(results.checks.length >= 12, `${results.checks.length} checks ran`);
      assert.equal(await page.getAttribute("#status", "data-status"), "pass");
      assert.match(await page.textContent("main"), /prompt tokens \(o200k_base\)/);
      const wasm = server.requests.find((r) => r.endsWith("context_compactor_bg.wasm"));
      assert.equal(wasm, "200 /pkg/context_compactor_bg.wasm", "the wasm was fetched next to the module");
      assert.deepEqual(log.filter((l) => /error|failed/i.test(l)), [], "no console errors");
    });
  } finally {
    await server.close();
  }
});
