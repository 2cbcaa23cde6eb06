/**
 * The package as the page uses it: the lite entry (the wasm without rank tables) and, on demand,
 * the one rank table of the encoding in use. Records what was downloaded and how long the first
 * count took, for the header.
 */
import { Tokenizer, loadRanks, rankFile, type EncodingName } from "context-compactor/lite";

export type TableEncoding = Exclude<EncodingName, "estimate">;

export interface Download {
  what: string;
  url: string;
  /** Bytes on the wire (compressed body), when the browser reports it. */
  transferred: number;
  /** Bytes after decompression. */
  decoded: number;
  ms: number;
}

export interface EngineStats {
  /** From navigation start to the package's module (wasm instantiated) being ready. */
  readyAt: number;
  /** From navigation start to the first exact count (table fetched and loaded). */
  firstCountAt?: number;
  /** Milliseconds `loadRanks` took for the first table (decoding it in the wasm). */
  loadRanksMs?: number;
  downloads: Download[];
}

const readyAt = performance.now();
export const stats: EngineStats = { readyAt, downloads: [] };

function resourceTiming(url: string): PerformanceResourceTiming | undefined {
  const entries = performance.getEntriesByName(url, "resource") as PerformanceResourceTiming[];
  return entries.at(-1);
}

function record(what: string, url: string, fallbackBytes: number, ms: number): void {
  const entry = resourceTiming(url);
  stats.downloads.push({
    what,
    url,
    transferred: entry?.encodedBodySize || fallbackBytes,
    decoded: entry?.decodedBodySize || fallbackBytes,
    ms: entry ? entry.duration : ms,
  });
}

// The wasm was fetched by the package's glue while the module loaded: find it in the resource timings.
for (const entry of performance.getEntriesByType("resource") as PerformanceResourceTiming[]) {
  if (entry.name.endsWith(".wasm")) {
    stats.downloads.push({ what: "wasm (lite entry)", url: entry.name, transferred: entry.encodedBodySize, decoded: entry.decodedBodySize, ms: entry.duration });
  }
}

const loaded = new Map<TableEncoding, Promise<void>>();

/** Fetches and loads `encoding`'s rank table once; "estimate" needs none. */
export function ensureEncoding(encoding: EncodingName): Promise<void> {
  if (encoding === "estimate") return Promise.resolve();
  let pending = loaded.get(encoding);
  if (!pending) {
    pending = (async () => {
      const url = rankFile(encoding).href;
      const started = performance.now();
      const response = await fetch(url);
      if (!response.ok) throw new Error(`the ${encoding} rank table could not be fetched (${url}: HTTP ${response.status})`);
      const bytes = new Uint8Array(await response.arrayBuffer());
      const decoding = performance.now();
      loadRanks(encoding, bytes);
      stats.loadRanksMs ??= performance.now() - decoding;
      record(`${encoding} rank table`, url, bytes.length, performance.now() - started);
      if (stats.firstCountAt === undefined) {
        new Tokenizer(encoding).count("tiktoken is great!");
        stats.firstCountAt = performance.now();
      }
    })();
    pending.catch(() => loaded.delete(encoding)); // a failed fetch may be retried
    loaded.set(encoding, pending);
  }
  return pending;
}
