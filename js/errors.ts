/**
 * Errors thrown by context-compactor. The Rust side reports failures through the
 * factory the entries install (`setup.ts`), so every error the package throws is an
 * instance of `ContextCompactorError` (and of one of its subclasses below).
 */

import type { ErrorKind } from "./wasm.js";

/** The `kind` strings the wasm module passes to the error factory, and the JS layer's own. */
export type ErrorCode = ErrorKind | "Summarizer" | "Storage";

/** Where in the input the problem is, when the Rust side knows it. */
export interface ErrorDetails {
  /** Index of the offending message in the list passed in. */
  index?: number;
  /** JSON path of the offending value, e.g. `messages[3].tool_call_id`. */
  path?: string;
}

/**
 * `value` as text for a message, whatever it is: `String()` throws for a Symbol, for an object
 * without a prototype and for one whose `toString` throws.
 */
export function describe(value: unknown): string {
  try {
    return value instanceof Error ? value.message : String(value);
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return typeof value;
    }
  }
}

/** Each code's class name, spelled out: a minifying bundler renames the classes themselves. */
const names: Record<ErrorCode, string> = {
  InvalidMessage: "InvalidMessageError",
  InvalidArgument: "InvalidArgumentError",
  NotFound: "NotFoundError",
  Conflict: "ConflictError",
  Corrupt: "CorruptRecordError",
  Storage: "StorageError",
  Internal: "InternalError",
  Resource: "ResourceError",
  Summarizer: "SummarizerError",
};

/** Base class of every error thrown by context-compactor. */
export class ContextCompactorError extends Error {
  readonly code: ErrorCode;
  readonly index?: number;
  readonly path?: string;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(typeof message === "string" ? message : describe(message));
    this.name = names[code] ?? "ContextCompactorError";
    this.code = code;
    const d: ErrorDetails = details !== null && typeof details === "object" ? details : {};
    if (typeof d.index === "number") this.index = d.index;
    if (typeof d.path === "string") this.path = d.path;
  }
}

/** A message (or message list) is malformed: not an array, unknown role, missing tool id, wrong types... */
export class InvalidMessageError extends ContextCompactorError {
  constructor(message: string, details?: ErrorDetails) {
    super("InvalidMessage", message, details);
  }
}

/** An argument other than a message is invalid: unknown encoding or format, bad options... */
export class InvalidArgumentError extends ContextCompactorError {
  constructor(message: string, details?: ErrorDetails) {
    super("InvalidArgument", message, details);
  }
}

/** A lookup (e.g. a message id) found nothing. */
export class NotFoundError extends ContextCompactorError {
  constructor(message: string, details?: ErrorDetails) {
    super("NotFound", message, details);
  }
}

/** An operation that clashes with one under way, e.g. a second compaction of the same history. */
export class ConflictError extends ContextCompactorError {
  constructor(message: string, details?: ErrorDetails) {
    super("Conflict", message, details);
  }
}

/**
 * Another process (or store) holds the compaction lease of the session (`StoredSession.compact`):
 * it is running a compaction now. Try again after `expiresAt` at the latest (its holder renews the
 * lease while it works, and removes it when done).
 */
export class LeaseHeldError extends ConflictError {
  /** Milliseconds since the Unix epoch (the holder's clock) at which the lease lapses unless renewed. */
  readonly expiresAt: number;

  constructor(message: string, expiresAt: number) {
    super(message);
    this.name = "LeaseHeldError";
    this.expiresAt = expiresAt;
  }
}

/**
 * A call needed more than the host gives: memory (the wasm's 4 GB, or an engine's limit on a
 * string) or stack (a call made from deep recursion). Nothing the call was changing is half
 * done: it was refused before, or undone.
 */
export class ResourceError extends ContextCompactorError {
  constructor(message: string, details?: ErrorDetails) {
    super("Resource", message, details);
  }
}

/** A summariser failed: a timeout, an HTTP error, a malformed answer, or it threw. */
export class SummarizerError extends ContextCompactorError {
  /** The HTTP status, when an endpoint answered with an error. */
  readonly status?: number;

  constructor(message: string, options: { status?: number; cause?: unknown } = {}) {
    super("Summarizer", message);
    const o = options !== null && typeof options === "object" ? options : {};
    if (typeof o.status === "number") this.status = o.status;
    if (o.cause !== undefined) Object.defineProperty(this, "cause", { value: o.cause, configurable: true, writable: true });
  }
}

/**
 * A stored record that fails its integrity check, is missing, or does not fit the rest of its
 * session. Nothing was loaded; `key` is where the record is (or should be) stored.
 */
export class CorruptRecordError extends ContextCompactorError {
  readonly key: string[];

  constructor(message: string, details: ErrorDetails = {}) {
    super("Corrupt", message, details);
    this.key = typeof details.path === "string" ? details.path.split("/") : [];
  }
}

/** Why a storage operation failed (`StorageError.reason`). */
export type StorageFailure =
  /** The storage is full: localStorage's or the origin's IndexedDB quota, a full disk. */
  | "quota"
  /** The database was closed (by `close()`, by another tab upgrading it, by the browser). */
  | "closed"
  /** Opening the database waited too long for other tabs to close it. */
  | "blocked"
  /** A transaction failed part-way and was rolled back: nothing of it was stored. */
  | "aborted"
  /**
   * The storage could not be reached (a database server down, restarting, or out of
   * connections). Whether a write that was under way when the connection broke was stored is
   * unknown to the caller; the session store finds out at its next save.
   */
  | "unavailable"
  /** The storage was written by a newer version of this library (a newer schema): upgrade it. */
  | "version"
  /** The storage refused the operation for another reason (an I/O error, a permission). */
  | "failed";

/**
 * The storage failed. What was stored before stays as it was, and a session's unsaved changes stay
 * in memory, so that a later `flush()` can try again; `cause` is the storage's own error.
 */
export class StorageError extends ContextCompactorError {
  readonly reason: StorageFailure;

  constructor(message: string, options: { reason: StorageFailure; cause?: unknown }) {
    super("Storage", message);
    this.reason = options.reason;
    if (options.cause !== undefined) Object.defineProperty(this, "cause", { value: options.cause, configurable: true, writable: true });
  }
}

/** A bug inside context-compactor: please report it. */
export class InternalError extends ContextCompactorError {
  constructor(message: string, details?: ErrorDetails) {
    super("Internal", message, details);
  }
}

const classes: Record<Exclude<ErrorKind, "Summarizer">, new (message: string, details?: ErrorDetails) => ContextCompactorError> = {
  InvalidMessage: InvalidMessageError,
  InvalidArgument: InvalidArgumentError,
  NotFound: NotFoundError,
  Conflict: ConflictError,
  Corrupt: CorruptRecordError,
  Internal: InternalError,
  Resource: ResourceError,
};

/**
 * The factory handed to the wasm module's `setErrorFactory`: turns `(kind, message, details)`
 * into the matching subclass. An unknown kind is itself a bug, hence an `InternalError`.
 */
export function makeError(kind: string, message: string, details?: ErrorDetails | null): Error {
  const d: ErrorDetails = details && typeof details === "object" ? details : {};
  // A summary the core refused (empty, over its budget): the summariser's failure.
  if (kind === "Summarizer") return new SummarizerError(describe(message));
  const cls = Object.prototype.hasOwnProperty.call(classes, kind) ? classes[kind as keyof typeof classes] : undefined;
  if (cls) return new cls(describe(message), d);
  return new InternalError(`unknown error kind ${describe(kind)}: ${describe(message)}`, d);
}
