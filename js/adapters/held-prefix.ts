/**
 * The adapters' check that a caller's message list continues the history: the history holds the
 * list's first messages (as many as it holds), unchanged, and only what follows is appended. An
 * edited or regenerated list (a message changed, removed or replaced anywhere) is refused: the
 * history is the lossless log, and has no way to take back what it holds.
 *
 * Each message the adapter appended or checked is remembered as given (a plain JSON copy): a call
 * walks each held position's message against its copy (no text made, no call into the wasm,
 * nothing of the history converted) and appends the rest. Exactness needs every held message
 * read: a list parsed from a request is all new objects, and an object kept by the caller may
 * have been changed in place, so no identity shortcut is taken. Only a message that is not the
 * same JSON (made again with another shape, say) or that the history got elsewhere (a loaded
 * session) is compared in the history's own form, converted once for that call.
 */
import type { ConversationHistory, Format } from "../api.js";
import { InvalidArgumentError } from "../errors.js";

/** Per history: its messages from the first (as far as known) as given, as plain JSON values (copies). */
const givenCopies = new WeakMap<ConversationHistory, unknown[]>();

const copy = (message: unknown): unknown => JSON.parse(JSON.stringify(message) ?? "null");

/**
 * Whether `given` has the JSON of `copy` (a plain JSON value): a walk, no text made. Sound, not
 * complete: anything but plain objects, arrays and JSON's primitives is "not the same" (a `Date`,
 * a key whose value is `undefined`), which the caller then compares in the history's form.
 */
function sameJson(given: unknown, copy: unknown): boolean {
  if (given === copy) return true;
  if (typeof given !== "object" || given === null || typeof copy !== "object" || copy === null) return false;
  if (Array.isArray(given)) {
    if (!Array.isArray(copy) || given.length !== copy.length) return false;
    for (let i = 0; i < given.length; i++) if (!sameJson(given[i], copy[i])) return false;
    return true;
  }
  const proto = Object.getPrototypeOf(given);
  if (Array.isArray(copy) || (proto !== Object.prototype && proto !== null)) return false;
  const keys = Object.keys(given);
  if (keys.length !== Object.keys(copy).length) return false;
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(copy, key) || !sameJson((given as Record<string, unknown>)[key], (copy as Record<string, unknown>)[key])) return false;
  }
  return true;
}

/** JSON text with every object's keys sorted: a message made again with its keys in another order is the same. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === "object" && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  );
}

/**
 * The history's first `list.length` messages and `list` as a history of the same build holds them
 * (a scratch one: the adapters load no wasm of their own), each as JSON text, in `format`.
 */
function inHeldForm(history: ConversationHistory, list: readonly unknown[], format: Format): { held: string[]; given: string[] | undefined } {
  const held = (history.messages(format) as unknown as unknown[]).slice(0, list.length).map(canonical);
  const Made = history.constructor as new (options: { format: Format }) => ConversationHistory;
  const scratch = new Made({ format: history.format as Format });
  try {
    scratch.appendMany(list as object[], format);
    return { held, given: (scratch.messages(format) as unknown as unknown[]).map(canonical) };
  } catch {
    return { held, given: undefined }; // not messages a history takes: not the ones held
  } finally {
    scratch.free();
  }
}

/**
 * Appends to `history` the messages of `list` past those it holds, once the ones it holds are
 * checked against the list (see above): an `InvalidArgumentError` naming the first position where
 * they differ, before anything is appended.
 */
export function appendContinuation(history: ConversationHistory, list: readonly unknown[], format: Format, where: string): void {
  const texts = checkHeldPrefix(history, list, format, where);
  const added = list.slice(history.length);
  if (added.length > 0) history.appendMany(added as object[], format);
  for (const message of added) texts.push(copy(message));
}

/** Checks that `list` starts with the messages `history` holds (see above); returns them as remembered. */
export function checkHeldPrefix(history: ConversationHistory, list: readonly unknown[], format: Format, where: string): unknown[] {
  if (!Array.isArray(list)) throw new InvalidArgumentError(`${where}: the messages must be an array (a list of messages), got ${list === null ? "null" : typeof list}`);
  const held = history.length;
  if (list.length < held) {
    throw new InvalidArgumentError(
      `${where}: the list has ${list.length} messages, fewer than the ${held} the history holds (a list cut short?): ` +
        "the history is the whole conversation and only grows; give the whole list, or start a new ConversationHistory for another conversation",
    );
  }
  let known = givenCopies.get(history);
  if (known === undefined) givenCopies.set(history, (known = []));
  let forms: ReturnType<typeof inHeldForm> | undefined;
  for (let i = 0; i < held; i++) {
    if (i < known.length && sameJson(list[i], known[i])) continue;
    forms ??= inHeldForm(history, list.slice(0, held), format);
    if (forms.given?.[i] !== forms.held[i]) throw diverged(where, i, held);
    known[i] = copy(list[i]); // the same message, as this caller gives it
  }
  return known;
}

function diverged(where: string, index: number, held: number): InvalidArgumentError {
  return new InvalidArgumentError(
    `${where}: message ${index} of the list differs from the one the history holds there (an edited or regenerated list?); ` +
      `the history holds the list's first ${held} messages and only appends what follows them. ` +
      "Start a new ConversationHistory for the edited conversation (the history keeps what it holds: it has no truncate).",
  );
}
