// Shared by the browser and packaging tests: a tiny static server on a random localhost port, and
// Debian's chromium driven by playwright-core (which never downloads a browser of its own).
import { createServer } from "node:http";
import { createReadStream, statSync, readFileSync, mkdtempSync, rmSync } from "node:fs";
import { join, normalize, extname, sep } from "node:path";
import { tmpdir } from "node:os";
import { chromium } from "playwright-core";

const MIME = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
  ".css": "text/css; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".jsonl": "text/plain; charset=utf-8",
  ".ts": "text/plain; charset=utf-8",
  ".png": "image/png",
};

/**
 * Serves `mounts` ({ "/": dir, "/fixtures/": otherDir }) read-only on 127.0.0.1:<random port>.
 * Resolves to { url, close, requests } where `requests` lists "STATUS path" for every request.
 * Nothing is cacheable unless `options.cacheable(path)` says so (then for a day), as a site
 * serves its hashed assets.
 */
export function serve(mounts, options = {}) {
  const prefixes = Object.keys(mounts).sort((a, b) => b.length - a.length);
  const requests = [];
  const server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, "http://x").pathname);
    const prefix = prefixes.find((p) => path.startsWith(p));
    const root = normalize(mounts[prefix]);
    const file = normalize(join(root, path.slice(prefix.length)));
    let status = 200;
    try {
      if (req.method !== "GET" && req.method !== "HEAD") status = 405;
      else if (file !== root && !file.startsWith(root.endsWith(sep) ? root : root + sep)) status = 403;
      else if (!statSync(file).isFile()) status = 404;
    } catch {
      status = 404;
    }
    requests.push(`${status} ${path}`);
    if (status !== 200) {
      res.writeHead(status, { "content-type": "text/plain" }).end(`${status}\n`);
      return;
    }
    res.writeHead(200, {
      "content-type": MIME[extname(file)] ?? "application/octet-stream",
      "cache-control": options.cacheable?.(path) ? "public, max-age=86400" : "no-store",
    });
    if (req.method === "HEAD") res.end();
    else createReadStream(file).pipe(res);
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({ url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

export const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync"];

/**
 * Headless chromium started on the profile directory `profile` (kept: a later launch on it finds
 * its storage): its first page, `log` collecting the page's console messages and errors, and
 * `close()`.
 */
export async function launch(profile) {
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ARGS,
    viewport: { width: 1100, height: 900 },
  });
  const log = [];
  const page = context.pages()[0] ?? (await context.newPage());
  page.on("console", (m) => log.push(`console.${m.type()}: ${m.text()}`));
  page.on("pageerror", (e) => log.push(`pageerror: ${e.message}`));
  page.on("requestfailed", (r) => log.push(`requestfailed: ${r.url()} ${r.failure()?.errorText}`));
  return { page, log, close: () => context.close() };
}

/**
 * Runs `fn(page, log)` in a fresh headless chromium with a fresh temporary profile; `log` collects
 * the page's console messages and errors. Closes everything afterwards.
 */
export async function withPage(fn) {
  const profile = mkdtempSync(join(tmpdir(), "cc-chromium-"));
  try {
    const { page, log, close } = await launch(profile);
    try {
      return await fn(page, log);
    } finally {
      await close();
    }
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}

/**
 * Runs `fn(context, log)` with a fresh headless chromium context (its own temporary profile), for
 * tests that open several pages of one origin (tabs sharing storage and locks).
 */
export async function withContext(fn) {
  const profile = mkdtempSync(join(tmpdir(), "cc-chromium-"));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS, viewport: { width: 1100, height: 900 } });
  const log = [];
  try {
    return await fn(context, log);
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

/**
 * Resolves a package's export `subpath` ("." or e.g. "./lite") for a browser, the way a bundler would: the first of the
 * conditions `browser`, `import`, `default` in the order the exports object lists them.
 */
export function browserEntry(packageDir, subpath = ".") {
  const pkg = JSON.parse(readFileSync(join(packageDir, "package.json"), "utf8"));
  let target = subpath === "." ? pkg.exports?.["."] ?? pkg.exports : pkg.exports?.[subpath];
  const conditions = new Set(["browser", "import", "default"]);
  while (target && typeof target === "object") {
    const key = Object.keys(target).find((k) => conditions.has(k));
    if (!key) throw new Error(`${pkg.name}: no browser export`);
    target = target[key];
  }
  if (typeof target !== "string") throw new Error(`${pkg.name}: no browser export`);
  return target;
}
