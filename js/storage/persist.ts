/**
 * Asks the browser to keep this origin's storage (IndexedDB, localStorage) when it runs short of
 * space, instead of evicting it as "best effort" storage, and reports the answer with the space
 * used and available (`navigator.storage.persist()` and `estimate()`).
 */
export interface PersistReport {
  /** The platform has `navigator.storage.persist` (browsers; not Node). */
  supported: boolean;
  /** Whether the storage is now persistent (the browser may say no, e.g. without user engagement). */
  persisted: boolean;
  /** Bytes used and the quota, when the browser tells. */
  usage?: number;
  quota?: number;
}

interface StorageManagerLike {
  persist?: () => Promise<boolean>;
  persisted?: () => Promise<boolean>;
  estimate?: () => Promise<{ usage?: number; quota?: number }>;
}

export async function persist(): Promise<PersistReport> {
  const storage = (globalThis as { navigator?: { storage?: StorageManagerLike } }).navigator?.storage;
  if (!storage || typeof storage.persist !== "function") return { supported: false, persisted: false };
  const persisted = (await storage.persisted?.()) || (await storage.persist());
  const report: PersistReport = { supported: true, persisted };
  const estimate = await storage.estimate?.();
  if (typeof estimate?.usage === "number") report.usage = estimate.usage;
  if (typeof estimate?.quota === "number") report.quota = estimate.quota;
  return report;
}
