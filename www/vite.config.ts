// The demo is an ordinary Vite app: it imports "context-compactor/lite" by name (www/package.json
// links the package in the folder above), so Vite resolves the package's `exports` with the
// browser condition and copies the wasm and rank files it references, as it would in a user's app.
// Two small plugins: the shared fixtures at /fixtures/ on the dev and preview servers, and
// precompressed wasm and rank tables (zopfli's gzip at build time, served with Content-Encoding:
// gzip, as a static host set up for precompressed files would; Vite's own compression covers text
// only). Zopfli writes ordinary gzip 5% smaller than gzip -9 on the wasm (308 KB against 323 KB),
// which keeps the lite wasm plus the o200k_base table under 1.0 MB.
import { defineConfig, type Plugin, type Connect } from "vite";
import { copyFileSync, createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, normalize, relative, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipAsync } from "@gfx/zopfli";

const here = fileURLToPath(new URL(".", import.meta.url));
const repo = normalize(join(here, ".."));
/**
 * The shared fixtures beside the repository (CC_FIXTURES elsewhere); absent in a plain clone.
 * `resolve` drops a trailing slash, which would fail the inside-the-folder check below.
 */
const fixtures = resolve(process.env.CC_FIXTURES ?? join(repo, "..", "shared", "fixtures"));
/** Conversation files the page offers (the token vectors in fixtures/tokens are not conversations). */
const CONVERSATION = /\.(json|jsonl|traj)$/;

function fixtureList(): Array<{ path: string; bytes: number }> {
  const list: Array<{ path: string; bytes: number }> = [];
  for (const dir of ["openai", "anthropic"]) {
    const at = join(fixtures, dir);
    if (!existsSync(at)) continue;
    for (const name of readdirSync(at).sort()) {
      if (CONVERSATION.test(name)) list.push({ path: `${dir}/${name}`, bytes: statSync(join(at, name)).size });
    }
  }
  return list;
}

/** GET /fixtures/index.json (the list) and /fixtures/<dir>/<file>, read-only, nothing outside the folder. */
const serveFixtures: Connect.NextHandleFunction = (req, res, next) => {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (!url.pathname.startsWith("/fixtures/")) return next();
  // Not the page (Vite's fallback would answer with index.html).
  const notFound = () => void res.writeHead(404, { "content-type": "text/plain" }).end("404: no such fixture\n");
  if (url.pathname === "/fixtures/index.json") {
    // An empty list when the folder is missing: the page hides its picker (a static host's 404 does too).
    res.setHeader("content-type", "application/json; charset=utf-8");
    res.end(JSON.stringify(fixtureList()));
    return;
  }
  if (!existsSync(fixtures)) return notFound();
  let name: string;
  try {
    name = decodeURIComponent(url.pathname.slice("/fixtures/".length));
  } catch {
    return notFound(); // a malformed %-escape
  }
  const file = normalize(join(fixtures, name));
  const inside = !relative(fixtures, file).startsWith("..") && file.startsWith(fixtures + sep);
  if (!inside || !CONVERSATION.test(file) || !existsSync(file) || !statSync(file).isFile()) return notFound();
  res.setHeader("content-type", "text/plain; charset=utf-8");
  res.setHeader("cache-control", "no-cache");
  createReadStream(file).pipe(res);
};

function fixturesPlugin(): Plugin {
  return {
    name: "cc-demo-fixtures",
    configureServer: (server) => void server.middlewares.use(serveFixtures),
    configurePreviewServer: (server) => void server.middlewares.use(serveFixtures),
  };
}

const BINARY: Record<string, string> = { ".wasm": "application/wasm", ".cctab": "application/octet-stream" };
const binaryType = (path: string) => Object.entries(BINARY).find(([ext]) => path.endsWith(ext))?.[1];

const ZOPFLI = { numiterations: 15, blocksplittingmax: 60 };

function precompressPlugin(): Plugin {
  let outDir = "";
  return {
    name: "cc-demo-precompress",
    configResolved: (config) => void (outDir = join(config.root, config.build.outDir)),
    async writeBundle(_options, bundle) {
      // File names carry a content hash: a name compressed once (with these settings) is taken from the cache.
      const cache = join(here, "node_modules", ".cache", "precompressed");
      mkdirSync(cache, { recursive: true });
      for (const name of Object.keys(bundle)) {
        if (!binaryType(name)) continue;
        const file = join(outDir, name);
        const cached = join(cache, `${name.replaceAll("/", "_")}.${ZOPFLI.numiterations}-${ZOPFLI.blocksplittingmax}.gz`);
        // Up to 60 deflate blocks rather than zopfli's default 15: the wasm's code changes character
        // often (measured on the lite wasm: -690 bytes; 0, unlimited, gains no more).
        if (!existsSync(cached)) writeFileSync(cached, await gzipAsync(readFileSync(file), ZOPFLI));
        copyFileSync(cached, `${file}.gz`);
      }
    },
    configurePreviewServer(server) {
      const dist = join(server.config.root, server.config.build.outDir);
      server.middlewares.use((req, res, next) => {
        const path = new URL(req.url ?? "/", "http://localhost").pathname;
        const type = binaryType(path);
        const gz = normalize(join(dist, decodeURIComponent(path))) + ".gz";
        if (!type || !gz.startsWith(dist + sep) || !/\bgzip\b/.test(String(req.headers["accept-encoding"])) || !existsSync(gz)) return next();
        res.setHeader("content-type", type);
        res.setHeader("content-encoding", "gzip");
        res.setHeader("content-length", statSync(gz).size);
        res.setHeader("vary", "accept-encoding");
        // Hashed file names: the content behind a name never changes.
        res.setHeader("cache-control", "public, max-age=31536000, immutable");
        if (req.method === "HEAD") return void res.end();
        createReadStream(gz).pipe(res);
      });
    },
  };
}

/**
 * `<link rel="preload">` for the wasm and the default encoding's table, so that both download
 * while the script does (the package fetches them only once its module runs, one after the
 * other). The page's own `fetch` of `rankFile(...)` then takes the preloaded response.
 */
function preloadPlugin(encoding: string): Plugin {
  return {
    name: "cc-demo-preload",
    transformIndexHtml: {
      order: "post",
      handler(_html, context) {
        if (!context.bundle) return; // the dev server: nothing is bundled
        const wanted = [/\.wasm$/, new RegExp(`(^|/)${encoding}-[\\w-]+\\.cctab$`)];
        return Object.keys(context.bundle)
          .filter((name) => wanted.some((pattern) => pattern.test(name)))
          .map((name) => ({ tag: "link", attrs: { rel: "preload", as: "fetch", crossorigin: "anonymous", href: `/${name}` }, injectTo: "head" as const }));
      },
    },
  };
}

export default defineConfig({
  // The page's default profile (gpt-4o) counts with o200k_base.
  plugins: [fixturesPlugin(), precompressPlugin(), preloadPlugin("o200k_base")],
  // The package's browser entry initialises its wasm with a top-level await.
  // The precompression's 20 s (zopfli, on a first build only: cached) need no report from rolldown.
  build: { target: "es2022", assetsInlineLimit: 0, rolldownOptions: { checks: { pluginTimings: false } } },
  server: { fs: { allow: [repo] } },
  clearScreen: false,
});
