/**
 * A stored session as one file, and a file made into a session's records: `exportSession`'s
 * format (every record as stored), or the JSON of `Session.export()` (what was kept in
 * localStorage before the store), each checked whole before anything is written.
 */
import { Session } from "./guarded.js";
import type { StoredRecord } from "./wasm.js";
import { ContextCompactorError, CorruptRecordError, InvalidArgumentError } from "./errors.js";
import { metaKey } from "./store-records.js";

/** `exportSession`'s file: every record of one session, as stored. */
const EXPORT_FORMAT = "context-compactor/stored-session";

/**
 * What `Session.load` does not check in an imported file's records: that the token counts its
 * chunks and its summary record carry are the ones counting gives (`build` budgets with them), and
 * that its commit leaves room for the saves to come.
 */
function checkImported(session: Session, records: StoredRecord[]): void {
  const meta = metaKey(session.id);
  // (The core refuses a commit at or past 2^53; this keeps room for 2^32 saves after it.)
  if (!Number.isSafeInteger(session.savedCommit + 2 ** 32)) {
    throw new CorruptRecordError(`record ${JSON.stringify(meta)} holds commit ${session.savedCommit}, past what the saves to come can count`, { path: meta.join("/") });
  }
  const counted = session.history.tokenCount().messages;
  let recount: Session;
  try {
    recount = Session.import(session.export());
  } catch (error) {
    // What loaded imports unless a count it took as stored is not its text's: the summary's
    // (the messages' are counted again below).
    const summary = records.map((r) => r.key).filter((key) => key[2] === "summary").pop() ?? meta;
    throw new CorruptRecordError(`record ${JSON.stringify(summary)}: ${(error as Error).message}`, { path: summary.join("/") });
  }
  try {
    const fresh = recount.history.tokenCount().messages;
    const at = fresh.findIndex((tokens, i) => tokens !== counted[i]);
    if (at < 0) return;
    // The record holding it: the first chunk whose last message is at or past it, or its own.
    const keys = records.map((r) => r.key);
    const holder = keys.find((key) => key[2] === "c" && Number(key[3]) > at) ?? keys.find((key) => key[2] === "m" && Number(key[3]) === at + 1) ?? meta;
    throw new CorruptRecordError(`record ${JSON.stringify(holder)} counts message m${at + 1} as ${counted[at]} tokens, where counting gives ${fresh[at]}`, { path: holder.join("/") });
  } finally {
    recount.free();
  }
}

/** Whether `stored` (a session's records) loads as the session of `text`, a `Session.export()` file. */
export function sameExport(stored: StoredRecord[], text: string): boolean {
  const exportOf = (records: StoredRecord[]) => {
    const session = Session.load(records);
    try {
      return JSON.stringify(session.export());
    } finally {
      session.free();
    }
  };
  try {
    return exportOf(stored) === exportOf([{ key: ["import"], value: text }]);
  } catch (error) {
    // One of a newer version is not the file's; a damaged one is reported, not hidden behind the
    // ConflictError of another session stored under the id.
    if (error instanceof ContextCompactorError && !(error instanceof CorruptRecordError)) return false;
    throw error;
  }
}

/** `records` (session `id`'s, as stored) as `exportSession`'s file. */
export function sessionFile(id: string, records: StoredRecord[]): string {
  return JSON.stringify({ format: EXPORT_FORMAT, version: 1, id, records });
}

/**
 * The session a file holds, as the records to store: checked whole first (its records, its token
 * counts against a fresh count, its commit). `legacy`: a `Session.export()` file, whose records
 * are made now (`now`: the store's clock), as its first save would write them.
 */
export function readSessionFile(text: string, now: () => number): { id: string; records: StoredRecord[]; legacy: boolean } {
  if (typeof text !== "string") throw new InvalidArgumentError("importSession takes the file's text");
  let document: { format?: unknown; version?: unknown; records?: unknown };
  try {
    document = JSON.parse(text);
  } catch (error) {
    throw new InvalidArgumentError(`the file is not JSON: ${(error as Error).message}`);
  }
  let records: StoredRecord[];
  let id: string;
  const legacy = document?.format !== EXPORT_FORMAT;
  if (legacy) {
    // The whole-session export of Session.export(): migrated by the core (a version 0 record),
    // then stored as the records its first save writes.
    const session = Session.load([{ key: ["import"], value: text }]);
    try {
      id = session.id;
      records = session.changes({ now: now() }).records;
    } finally {
      session.free();
    }
  } else {
    if (typeof document.version === "number" && document.version > 1) {
      throw new InvalidArgumentError(`this session file is version ${document.version}, newer than this library reads (1): upgrade context-compactor`);
    }
    if (document.version !== 1) throw new InvalidArgumentError(`this session file's version is ${JSON.stringify(document.version)}, not a version of the format (1)`);
    records = document.records as StoredRecord[];
    const session = Session.load(records); // checks every record before anything is written
    try {
      id = session.id;
      checkImported(session, records);
    } finally {
      session.free();
    }
  }
  return { id, records, legacy };
}
