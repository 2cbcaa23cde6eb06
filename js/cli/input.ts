/** Reading FILE and loading it into a history: strictly, or leniently with `--repair`. */
import { closeSync, fstatSync, openSync, readSync } from "node:fs";
import { basename } from "node:path";
import {
  ContextCompactorError,
  ConversationHistory,
  InternalError,
  InvalidMessageError,
  loadConversation,
  type AnthropicRequest,
  type AppendRepair,
  type EncodingName,
  type LoadedConversation,
  type Message,
} from "../node.js";
import { wholeNumber, type Args } from "./args.js";
import { describeFsError, InputError } from "./errors.js";
import { LONG_FILE, type Progress } from "./progress.js";

function readInput(file: string, progress: Progress): string {
  let fd: number;
  try {
    fd = file === "-" ? 0 : openSync(file, "r");
  } catch (error) {
    throw new InputError(`cannot read ${file}: ${describeFsError(error)}`);
  }
  try {
    const stat = fstatSync(fd);
    if (stat.isDirectory()) throw new InputError(`cannot read ${file}: it is a directory`);
    const total = stat.isFile() ? stat.size : 0;
    const chunks: Buffer[] = [];
    let read = 0;
    const chunk = Buffer.alloc(4 * 1024 * 1024);
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, chunk, 0, chunk.length, null);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "EAGAIN") {
          // A non-blocking pipe with nothing in it yet: wait a little rather than spin.
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
          continue;
        }
        if ((error as NodeJS.ErrnoException).code === "EOF") break;
        throw new InputError(`cannot read ${file}: ${describeFsError(error)}`);
      }
      if (n === 0) break;
      chunks.push(Buffer.from(chunk.subarray(0, n)));
      read += n;
      if (total >= LONG_FILE) progress.update("reading", read, total, "MB");
    }
    return decode(Buffer.concat(chunks));
  } finally {
    if (fd !== 0) closeSync(fd);
  }
}

/** UTF-8, or UTF-16 when the file starts with its byte order mark (PowerShell's `>` writes that). */
function decode(bytes: Buffer): string {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder("utf-16le").decode(bytes.subarray(2));
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder("utf-16be").decode(bytes.subarray(2));
  return new TextDecoder("utf-8").decode(bytes);
}

export interface Loaded {
  name: string;
  loaded: LoadedConversation;
  history: ConversationHistory;
  ids: string[];
  /** What `--repair` changed, by position in the file's message list. */
  repairs: AppendRepair[];
}

const REPAIR_HINT = " (--repair imports such a log leniently)";

/** Whether `attempt` (the same import, lenient) succeeds: the hint is given only where `--repair` helps. */
function repairHelps(attempt: () => void): string {
  try {
    attempt();
    return REPAIR_HINT;
  } catch {
    return "";
  }
}

/** Appends `batch`: strictly, or with `--repair` leniently (its repairs, by batch position, returned). */
export function append(history: ConversationHistory, batch: Message[] | AnthropicRequest, repair: boolean | undefined): { ids: string[]; repairs: AppendRepair[] } {
  try {
    if (repair) return history.appendMany(batch, { repair: true });
    return { ids: history.appendMany(batch), repairs: [] };
  } catch (error) {
    if (error instanceof InvalidMessageError && !repair) {
      const hint = repairHelps(() => {
        const copy = ConversationHistory.import(history.export());
        try {
          copy.appendMany(batch, { repair: true });
        } finally {
          copy.free();
        }
      });
      throw new InputError(`${error.message}${hint}`);
    }
    throw error;
  }
}

/** Reads FILE, loads it as a conversation and appends it to a history counting with `encoding`. */
export function loadHistory(args: Args, encoding: EncodingName, progress: Progress): Loaded {
  const text = readInput(args.file, progress);
  const name = args.file === "-" ? "stdin" : basename(args.file);
  const long = text.length >= LONG_FILE;
  if (long) progress.step("loading");
  let loaded: LoadedConversation;
  const run = wholeNumber(args.values.run, "run", 0);
  try {
    loaded = loadConversation(text, { name, run, repair: args.values.repair === true });
  } catch (error) {
    const hint = error instanceof InvalidMessageError && !args.values.repair ? repairHelps(() => loadConversation(text, { name, run, repair: true })) : "";
    if (error instanceof ContextCompactorError && !(error instanceof InternalError)) throw new InputError(`${args.file}: ${error.message}${hint}`);
    throw error;
  }
  const history = new ConversationHistory({ encoding, format: loaded.format });
  // Appended (and counted) in slices, so that a long file shows where it is.
  const list: Message[] = loaded.format === "openai" ? loaded.messages : loaded.messages.messages;
  const system = loaded.format === "anthropic" ? loaded.messages.system : undefined;
  const slice = long ? Math.max(200, Math.ceil(list.length / 50)) : list.length;
  const ids: string[] = [];
  const repairs: AppendRepair[] = [];
  for (let start = 0; start < list.length || (start === 0 && system !== undefined); start += slice) {
    const part = list.slice(start, start + slice);
    const batch = loaded.format === "openai" ? part : { ...(start === 0 && system !== undefined ? { system } : {}), messages: part };
    const appended = append(history, batch as Message[] | AnthropicRequest, args.values.repair);
    ids.push(...appended.ids);
    // The system prompt, when the batch has one, is the parsed list's first message.
    const shift = start - (loaded.format === "anthropic" && start === 0 && system !== undefined ? 1 : 0);
    repairs.push(...appended.repairs.map((r) => ({ ...r, index: r.index + shift })));
    if (long) {
      history.tokenCount();
      progress.update("counting", Math.min(start + slice, list.length), list.length, " messages");
    }
    if (part.length === 0) break;
  }
  // The requests the file marks to pin (a SWE-agent instance's issue); a lenient append may have
  // left messages out, and then positions no longer name them.
  if (ids.length === loaded.origins.length) for (const i of loaded.pinned) history.pin(ids[i]);
  return { name, loaded, history, ids, repairs };
}
