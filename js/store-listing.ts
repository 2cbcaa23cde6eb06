/**
 * The sessions a store holds, as `list()` shows them (from their meta records and the few
 * message records after them), and the relations between them that deleting one follows.
 */
import { Session } from "./guarded.js";
import type { SessionInfo } from "./wasm.js";
import { ContextCompactorError } from "./errors.js";
import type { StorageAdapter } from "./storage/adapter.js";
import { readOn } from "./store-io.js";

/** A stored session as `list()` shows it; `problem` is set (and the counts are 0) when its meta record is damaged. */
export interface StoredSessionInfo extends SessionInfo {
  problem?: ContextCompactorError;
}

/**
 * How many sessions `list()` reads at a time: enough to overlap the storage's round trips, few
 * enough that a store of hundreds of sessions does not open hundreds of requests at once (each
 * session's tail keys are read together, a few per session).
 */
const LIST_CONCURRENCY = 8;

/** `fn` of each item, at most `limit` running at once; the results in the items' order. */
async function mapConcurrently<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/** Every session stored in `io`, most recently updated first. */
export async function listSessions(io: StorageAdapter): Promise<StoredSessionInfo[]> {
  const entries = (await io.loadRange(["s"])).filter((entry) => entry.key.length === 2);
  const sessions = await mapConcurrently(entries, LIST_CONCURRENCY, async (entry): Promise<StoredSessionInfo> => {
    try {
      // The settings record too, for the session's encoding (which ranks to load before opening it).
      const settingsKey = Session.settingsKey(entry);
      const [tail, settings] = await Promise.all([readOn(io, Session.tailKeys(entry)), settingsKey ? readOn(io, [settingsKey]) : []]);
      return Session.info(entry, [...settings, ...tail]);
    } catch (error) {
      if (!(error instanceof ContextCompactorError)) throw error;
      return { id: entry.key[1], parentId: null, title: null, createdAt: 0, updatedAt: 0, messages: 0, tokens: 0, commit: 0, encoding: null, problem: error };
    }
  });
  return sessions.sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1));
}

/** The sessions of the cycle of parents `id` is on (`parentOf` gives each stored session's parent), or none. */
export function parentCycle(id: string, parentOf: Map<string, string | null>): string[] {
  const path = [id];
  for (let at = parentOf.get(id); at != null && path.length <= parentOf.size; at = parentOf.get(at)) {
    if (at === id) return path;
    path.push(at);
  }
  return [];
}
