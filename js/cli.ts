#!/usr/bin/env node
/**
 * The `context-compactor` command: a conversation file in (anything `loadConversation` reads),
 * and its compacted context, token counts, or per-message fate out. Results go to stdout (or
 * `--out`), the receipt and progress to stderr. Exit codes: 0 ok, 1 bad input or file, 2 usage.
 */
import { closeSync, fstatSync, openSync, readSync, writeFileSync } from "node:fs";
import { basename } from "node:path";
import { parseArgs } from "node:util";
import {
  ContextCompactorError,
  ConversationHistory,
  InternalError,
  InvalidMessageError,
  convertMessages,
  loadConversation,
  profileNames,
  resolveProfile,
  type AnthropicRequest,
  type AppendRepair,
  type BuildOptions,
  type BuildResultIn,
  type EncodingName,
  type Format,
  type LoadedConversation,
  type Message,
  type EventReason,
  type Profile,
  type Receipt,
  type ReceiptEntry,
} from "./node.js";

const TOOL = "context-compactor";
const ENCODINGS = ["o200k_base", "cl100k_base", "estimate"] as const;
const FORMATS = ["openai", "anthropic"] as const;

/** A mistake in the command line: exit code 2. */
class UsageError extends Error {}
/** A file that cannot be read or is not a conversation: exit code 1. */
class InputError extends Error {}

const FILE_HELP = `FILE is a conversation: an OpenAI or Anthropic message list (JSON), { system, messages },
a saved request body, a Claude Code session log (.jsonl), a SWE-agent trajectory (.traj) or a
tau-bench run list; "-" reads standard input. The shape is recognised from the content.`;

const COMMON_HELP = `  --run N              tau-bench run lists: which run (default 0)
  --repair             import leniently: a log cut at its head (its first records answer calls made
                       before the cut), a result given twice, an id reused while its call is open are
                       repaired instead of refused (orphan results become text, unanswered calls are
                       left out); the repairs are printed
  --encoding NAME      o200k_base (default, or the profile's) | cl100k_base | estimate
  --json               machine-readable output on stdout
  -h, --help           this help`;

const BUILD_HELP = `  --profile NAME       a built-in profile, or a model name resolved to one (gpt-4o-2024-08-06 is gpt-4o);
                       default: gpt-4o for OpenAI files, claude-sonnet-4 for Anthropic ones
  --budget N           at most N tokens in the context (instead of a profile): budget.maxTokens = N,
                       compaction due past N, summary and recent turns aiming at 0.6 N
  --summary KIND       extractive (default: the built-in summary of what is left out) | none
  --format FORMAT      openai | anthropic: the context's format (default: the file's)`;

const HELP: Record<string, string> = {
  main: `Usage: ${TOOL} <command> FILE [options]

Commands:
  compact FILE    write the compacted context (the provider's request messages) and print the receipt
  count FILE      tokens by role and by part
  inspect FILE    one line per message: id, role, tokens, what a build does to it, a preview

${FILE_HELP}

Run "${TOOL} <command> --help" for a command's options.
Exit codes: 0 ok, 1 bad input or file, 2 usage.`,
  compact: `Usage: ${TOOL} compact FILE [--profile NAME | --budget N] [--summary extractive|none]
                          [--format openai|anthropic] [--out FILE] [--json]

Builds the context for the next call (history.build) and writes it, as JSON the provider takes
(OpenAI: the messages array; Anthropic: { system, messages }), to stdout or --out. The receipt
(runs of messages and what happened to them, tokens by part, the summary, repairs) goes to stderr.

${FILE_HELP}

Options:
${BUILD_HELP}
  --out FILE           write the context to FILE instead of stdout
${COMMON_HELP.replace("machine-readable output on stdout", "the whole build result (context, tokens, receipt, layout) and what was loaded, as JSON")}

Profiles: ${profileNames().join(", ")}`,
  count: `Usage: ${TOOL} count FILE [--encoding NAME] [--format openai|anthropic] [--json]

Counts the conversation's tokens as a provider would receive it whole: by role, by part
(message overhead, text, tool calls, tool results, thinking, images), and the total.

${FILE_HELP}

Options:
  --format FORMAT      openai | anthropic: count the conversation converted to this format
                       (default: the file's)
${COMMON_HELP}`,
  inspect: `Usage: ${TOOL} inspect FILE [--profile NAME | --budget N] [--summary extractive|none] [--json]

One line per stored message: its id, role, tokens before and after the build, what the build does
to it (kept, compressed, digested, thinned, summarised, dropped, and why), and a preview.

${FILE_HELP}

Options:
${BUILD_HELP}
${COMMON_HELP}`,
};

interface Args {
  command: "compact" | "count" | "inspect";
  file: string;
  values: {
    run?: string; encoding?: string; json?: boolean; profile?: string; budget?: string;
    summary?: string; format?: string; out?: string; repair?: boolean;
  };
}

const OPTIONS = {
  run: { type: "string" },
  encoding: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
  profile: { type: "string" },
  budget: { type: "string" },
  summary: { type: "string" },
  format: { type: "string" },
  out: { type: "string", short: "o" },
  repair: { type: "boolean" },
} as const;

/** Which options each command takes. */
const ALLOWED: Record<Args["command"], readonly string[]> = {
  compact: ["run", "encoding", "json", "help", "profile", "budget", "summary", "format", "out", "repair"],
  count: ["run", "encoding", "json", "help", "format", "repair"],
  inspect: ["run", "encoding", "json", "help", "profile", "budget", "summary", "format", "repair"],
};

/** Parses the command line; `null` when help was printed. */
function parseCommandLine(argv: string[]): Args | null {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message.replace(/\. To specify a positional.*$/s, "") : String(error));
  }
  const [command, ...rest] = parsed.positionals;
  if (command === undefined || command === "help") {
    if (parsed.values.help || command === "help") {
      process.stdout.write(`${HELP[rest[0] ?? "main"] ?? HELP.main}\n`);
      return null;
    }
    throw new UsageError(`no command given\n\n${HELP.main}`);
  }
  if (!(command in ALLOWED)) throw new UsageError(`unknown command "${command}": expected compact, count or inspect`);
  const name = command as Args["command"];
  if (parsed.values.help) {
    process.stdout.write(`${HELP[name]}\n`);
    return null;
  }
  for (const key of Object.keys(parsed.values)) {
    if (!ALLOWED[name].includes(key)) throw new UsageError(`${name} takes no --${key}`);
  }
  if (rest.length === 0) throw new UsageError(`${name}: no FILE given`);
  if (rest.length > 1) throw new UsageError(`${name}: one FILE at a time (got ${rest.length}: ${rest.join(" ")})`);
  return { command: name, file: rest[0], values: parsed.values };
}

function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], option: string): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`--${option} must be ${allowed.join(" or ")}, got "${value}"`);
  }
  return value as T;
}

function wholeNumber(value: string | undefined, option: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  const digits = value.replace(/[_,]/g, ""); // 128_000 and 128,000 read as 128000
  const number = Number(digits);
  if (!/^\d+$/.test(digits) || !Number.isSafeInteger(number) || number < min) {
    throw new UsageError(`--${option} must be a whole number${min > 0 ? ` of at least ${min}` : ""}, got "${value}"`);
  }
  return number;
}

// ---------------------------------------------------------------------------------------------
// Progress on stderr, only for a person watching (stderr a TTY) and only on long files. A few
// lines of our own rather than a dependency: the package ships to browsers and has none.

class Progress {
  private drawn = false;
  private lastDraw = 0;
  constructor(private readonly enabled: boolean) {}

  update(label: string, done: number, total: number, unit = ""): void {
    if (!this.enabled || total <= 0) return;
    const now = Date.now();
    if (done < total && now - this.lastDraw < 80) return;
    this.lastDraw = now;
    const width = 28;
    const ratio = Math.min(1, done / total);
    const filled = Math.round(ratio * width);
    const amount = unit === "MB" ? `${(done / 1e6).toFixed(1)}/${(total / 1e6).toFixed(1)} MB` : `${done.toLocaleString("en-US")}/${total.toLocaleString("en-US")}${unit}`;
    process.stderr.write(`\r${label.padEnd(9)} [${"#".repeat(filled)}${"-".repeat(width - filled)}] ${String(Math.round(ratio * 100)).padStart(3)}% ${amount}\x1b[K`);
    this.drawn = true;
  }

  /** A step that is one call: shown as under way. */
  step(label: string): void {
    if (!this.enabled) return;
    process.stderr.write(`\r${label.padEnd(9)} …\x1b[K`);
    this.drawn = true;
  }

  clear(): void {
    if (this.drawn) process.stderr.write("\r\x1b[K");
    this.drawn = false;
  }
}

/** Files from this size on show progress. */
const LONG_FILE = 1_000_000;

// ---------------------------------------------------------------------------------------------
// Reading and loading

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

function describeFsError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException)?.code;
  if (code === "ENOENT") return "no such file";
  if (code === "EACCES" || code === "EPERM") return "permission denied";
  if (code === "EISDIR") return "it is a directory";
  return error instanceof Error ? error.message : String(error);
}

interface Loaded {
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
function append(history: ConversationHistory, batch: Message[] | AnthropicRequest, repair: boolean | undefined): { ids: string[]; repairs: AppendRepair[] } {
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
function loadHistory(args: Args, encoding: EncodingName, progress: Progress): Loaded {
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

const SOURCES: Record<LoadedConversation["source"], string> = {
  openai: "OpenAI messages",
  anthropic: "Anthropic messages",
  "openai-responses": "OpenAI Responses items",
  "ai-sdk": "AI SDK messages",
  "claude-code": "Claude Code log",
  "swe-agent": "SWE-agent trajectory",
  "tau-bench": "tau-bench runs",
};

/** The `--repair` lines: one per repair, by the message's position in the file's list. */
function repairLines({ repairs }: Loaded): string[] {
  if (repairs.length === 0) return [];
  return [`import repairs (--repair): ${repairs.length}`, ...repairs.map((r) => `  message ${r.index}: ${r.kind}${r.callId ? ` (${r.callId})` : ""}: ${r.what}`)];
}

function describeLoaded({ name, loaded, ids }: Loaded): string {
  const run = loaded.run ? `, run ${loaded.run.index} of ${loaded.run.count}` : "";
  const skipped = loaded.skipped.length ? `, ${loaded.skipped.length} record${loaded.skipped.length === 1 ? "" : "s"} skipped` : "";
  return `${name}: ${SOURCES[loaded.source]}${run}, ${ids.length} message${ids.length === 1 ? "" : "s"} (${loaded.format})${skipped}`;
}

// ---------------------------------------------------------------------------------------------
// Building

interface Plan {
  encoding: EncodingName;
  options: BuildOptions & { format: Format };
  describe: string;
}

function findProfile(name: string): Profile {
  try {
    return resolveProfile(name);
  } catch (error) {
    throw new UsageError(`--profile: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The history's encoding: --encoding, else the profile's, else o200k_base. */
function encodingOf(args: Args): EncodingName {
  const chosen = oneOf(args.values.encoding, ENCODINGS, "encoding");
  if (chosen !== undefined) return chosen;
  return args.values.profile !== undefined ? findProfile(args.values.profile).encoding : "o200k_base";
}

/** The build options for a file in `fileFormat` (called once before reading it, to check the command line). */
function buildPlan(args: Args, fileFormat: Format): Plan {
  const { profile: profileName, budget: budgetText, summary } = args.values;
  if (profileName !== undefined && budgetText !== undefined) throw new UsageError("give --profile or --budget, not both");
  const format = oneOf(args.values.format, FORMATS, "format") ?? fileFormat;
  const summaryKind = oneOf(summary, ["extractive", "none"] as const, "summary") ?? "extractive";
  const encoding = encodingOf(args);
  const budget = wholeNumber(budgetText, "budget", 1);
  if (budget !== undefined) {
    return {
      encoding,
      options: {
        format,
        budget: { contextWindow: budget, targetRatio: 1 },
        thin: true,
        summary: summaryKind === "none" ? null : { summariser: "extractive", triggerTokens: budget, targetTokens: Math.floor(budget * 0.6) },
      },
      describe: `budget ${n(budget)} tokens, ${encoding}`,
    };
  }
  const chosen = findProfile(profileName ?? (format === "anthropic" ? "claude-sonnet-4" : "gpt-4o"));
  // --encoding counts the profile's settings with another encoding.
  const profile: Profile = { ...chosen, encoding };
  const counted = encoding === chosen.encoding ? encoding : `${encoding} (--encoding; the profile counts with ${chosen.encoding})`;
  return {
    encoding,
    options: { profile, format, ...(summaryKind === "none" ? { summary: null } : {}) },
    describe: `profile ${profile.name}${profileName === undefined ? " (the default for the format; --profile or --budget to choose)" : ""}: budget ${n(Math.floor(profile.contextWindow * profile.triggerFraction))} tokens of a ${n(profile.contextWindow)} window, ${counted}`,
  };
}

function build(history: ConversationHistory, plan: Plan, progress: Progress, long: boolean): BuildResultIn<Format> {
  if (long) progress.step("building");
  try {
    return history.build(plan.options);
  } catch (error) {
    if (error instanceof ContextCompactorError && error.code === "InvalidArgument") throw new UsageError(error.message);
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Output

const n = (value: number) => value.toLocaleString("en-US");

/** Rows of cells as aligned text; `right` lists the columns aligned right. */
function table(rows: string[][], right: number[] = []): string {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows
    .map((row) => row.map((cell, i) => (right.includes(i) ? cell.padStart(widths[i]) : i === row.length - 1 ? cell : cell.padEnd(widths[i]))).join("  ").trimEnd())
    .join("\n");
}

/** At most this many runs are listed; `--json` has all. */
const MAX_RUNS = 40;

/** Why a build was a compaction event (`receipt.cache.reason`), in words. */
const EVENT_REASONS: Record<EventReason, string> = {
  first: "the first build over the budget",
  budget: "the next context would have passed the trigger",
  window: "the next context would have passed the message window",
  options: "the options that shape the messages changed",
  summary: "another summary came into force",
  history: "the history is not the one the last context was built from",
  repair: "a message logged since changes how earlier ones are sent",
  requested: "asked for",
  system: "a system message was logged since",
};

/**
 * How full the context is and why, from the receipt: a compaction event compacts toward the
 * low-water mark, and later calls append until the trigger, so any fill between them is normal.
 */
function fillLine(receipt: Receipt): string | undefined {
  const { budget, cache } = receipt;
  if (!budget) return undefined;
  const parts = budget.requestTokens > 0 ? ` (${n(budget.requestTokens)} of them the request's system prompt and tools)` : "";
  const billed = budget.billedTokens !== undefined ? `, billed as ${n(budget.billedTokens)} (anchored to the last recorded usage)` : "";
  const until = budget.triggerTokens < budget.maxTokens ? `${n(budget.triggerTokens)}, the compaction trigger` : n(budget.maxTokens);
  const head = `context: ${n(receipt.tokensAfter)} of ${n(budget.maxTokens)} tokens${parts}${billed}`;
  if (cache?.event) {
    const why = cache.reason ? `: ${EVENT_REASONS[cache.reason]}` : "";
    return `${head}: compacted now (a compaction event${why}) toward the low-water mark ${n(budget.lowWaterTokens)}; later calls append until ${until}`;
  }
  return `${head}: no compaction event; later calls append until ${until}, where an event compacts toward the low-water mark ${n(budget.lowWaterTokens)}`;
}

function receiptText(loaded: Loaded, plan: Plan, result: BuildResultIn<Format>): string {
  const { receipt } = result;
  const lines = [describeLoaded(loaded), ...repairLines(loaded), plan.describe, ""];
  const rows = [["messages", "count", "action", "reason", "tokens before", "after"]];
  for (const run of receipt.runs.slice(0, MAX_RUNS)) {
    rows.push([run.from === run.to ? run.from : `${run.from}–${run.to}`, n(run.count), run.action, run.reason ?? "", n(run.tokensBefore), n(run.tokensAfter)]);
  }
  lines.push(table(rows, [1, 4, 5]));
  if (receipt.runs.length > MAX_RUNS) lines.push(`… ${receipt.runs.length - MAX_RUNS} more runs (--json lists them all)`);
  lines.push("");
  const part = receipt.byPart;
  const budget = receipt.budget ? ` of ${n(receipt.budget.maxTokens)} (${receipt.withinBudget ? "within budget" : "OVER BUDGET"})` : "";
  lines.push(`tokens by part: system ${n(part.system)}, summary ${n(part.summary)}, recent ${n(part.recent)}; total ${n(part.total)}${budget}`);
  lines.push(`before: ${n(receipt.tokensBefore)} tokens in ${n(receipt.messagesBefore)} messages; after: ${n(receipt.tokensAfter)} tokens in ${n(receipt.messagesAfter)} messages`);
  const fill = fillLine(receipt);
  if (fill) lines.push(fill);
  if (receipt.summary) {
    const made = result.newSummary ? `${result.newSummary.source}, made now` : "kept from before";
    lines.push(`summary: ${n(receipt.summary.tokens)} tokens (${made}), covers the messages up to ${receipt.summary.summarisedUntil}`);
  } else {
    lines.push(plan.options.summary === null ? "summary: none (--summary none)" : "summary: none (not due)");
  }
  if (receipt.repairs.length) {
    lines.push(`repairs: ${receipt.repairs.map((r) => `${r.id} ${r.kind}${r.callId ? ` (${r.callId})` : ""}`).join(", ")}`);
  }
  if (receipt.placeholder) lines.push("note: a placeholder user message was added so that the context starts as the provider requires");
  for (const note of [...loaded.loaded.notes, ...receipt.notes]) lines.push(`note: ${note}`);
  return lines.join("\n");
}

/** A line's worth of what a message says: text, tool calls as name(args), tool results. */
function preview(message: Message | undefined, width = 72): string {
  if (!message) return "";
  const pieces: string[] = [];
  const text = (value: unknown): void => {
    if (typeof value === "string") pieces.push(value);
    else if (Array.isArray(value)) {
      for (const block of value) {
        if (typeof block !== "object" || block === null) continue;
        const b = block as Record<string, unknown>;
        if (b.type === "text") pieces.push(String(b.text ?? ""));
        else if (b.type === "tool_use") pieces.push(`→ ${String(b.name)}(${JSON.stringify(b.input ?? {})})`);
        else if (b.type === "tool_result") {
          pieces.push("←");
          text(b.content);
        } else if (b.type === "thinking") pieces.push("[thinking]");
        else if (b.type === "image" || b.type === "image_url") pieces.push("[image]");
      }
    }
  };
  const m = message as Record<string, unknown>;
  if (m.role === "tool") pieces.push("←");
  text(m.content);
  for (const call of (m.tool_calls as Array<{ function?: { name?: string; arguments?: string } }> | undefined) ?? []) {
    pieces.push(`→ ${call.function?.name}(${call.function?.arguments ?? ""})`);
  }
  const line = pieces.join(" ").replace(/\s+/g, " ").trim();
  return line.length > width ? `${line.slice(0, width - 1)}…` : line;
}

function writeOutput(text: string, out: string | undefined): void {
  if (out === undefined) {
    process.stdout.write(text);
    return;
  }
  try {
    writeFileSync(out, text);
  } catch (error) {
    throw new InputError(`cannot write ${out}: ${describeFsError(error)}`);
  }
}

function loadedSummary(loaded: Loaded) {
  const { messages: _messages, ...rest } = loaded.loaded;
  return { file: loaded.name, ids: loaded.ids, repairs: loaded.repairs, ...rest };
}

// ---------------------------------------------------------------------------------------------
// Commands

function compactCommand(args: Args, progress: Progress): void {
  buildPlan(args, "openai");
  const loaded = loadHistory(args, encodingOf(args), progress);
  const plan = buildPlan(args, loaded.loaded.format);
  const result = build(loaded.history, plan, progress, loaded.ids.length > 1000);
  progress.clear();
  if (args.values.json) {
    writeOutput(`${JSON.stringify({ ...result, loaded: loadedSummary(loaded) }, null, 2)}\n`, args.values.out);
    return;
  }
  writeOutput(`${JSON.stringify(result.messages, null, 2)}\n`, args.values.out);
  process.stderr.write(`${receiptText(loaded, plan, result)}\n`);
}

function countCommand(args: Args, progress: Progress): void {
  const encoding = encodingOf(args);
  const target = oneOf(args.values.format, FORMATS, "format");
  const loaded = loadHistory(args, encoding, progress);
  let history = loaded.history;
  let converted = "";
  if (target !== undefined && target !== loaded.loaded.format) {
    history = new ConversationHistory({ encoding, format: target });
    append(history, convertMessages(loaded.loaded.messages, loaded.loaded.format, target) as Message[], args.values.repair);
    converted = `, converted to ${target} (${history.length} messages)`;
  }
  const report = history.tokenReport();
  progress.clear();
  const format = target ?? loaded.loaded.format;
  if (args.values.json) {
    process.stdout.write(`${JSON.stringify({ encoding, format, ...report, loaded: loadedSummary(loaded) }, null, 2)}\n`);
    return;
  }
  const lines = [`${describeLoaded(loaded)}${converted}`, ...repairLines(loaded), `encoding ${encoding}${encoding === "estimate" ? " (an estimate: 4 characters a token)" : ""}`, ""];
  const rows = [["by role", "tokens"]];
  for (const [role, tokens] of Object.entries(report.byRole)) rows.push([role, n(tokens ?? 0)]);
  rows.push(["", ""], ["by part", "tokens"]);
  for (const [part, tokens] of Object.entries(report.byPart)) rows.push([part, n(tokens ?? 0)]);
  rows.push(["reply priming", n(report.replyPriming)], ["", ""], ["total", n(report.total)]);
  lines.push(table(rows, [1]));
  if (format === "anthropic" && encoding !== "estimate") {
    lines.push("", `note: Anthropic's tokenizer is not public: counted with ${encoding}, close to what Claude bills, not equal to it`);
  }
  for (const note of loaded.loaded.notes) lines.push(`note: ${note}`);
  process.stdout.write(`${lines.join("\n")}\n`);
}

function inspectCommand(args: Args, progress: Progress): void {
  buildPlan(args, "openai");
  const loaded = loadHistory(args, encodingOf(args), progress);
  const plan = buildPlan(args, loaded.loaded.format);
  const { receipt } = build(loaded.history, plan, progress, loaded.ids.length > 1000);
  const entries: ReceiptEntry[] = loaded.history.receiptEntries();
  progress.clear();
  const rows = entries.map((entry, i) => {
    const message = loaded.history.get(entry.id);
    const role = String((message as { role?: string } | undefined)?.role ?? "");
    return { ...entry, role, origin: loaded.loaded.origins[i], preview: preview(message) };
  });
  if (args.values.json) {
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
    return;
  }
  const marks = new Map<number, string[]>();
  for (const mark of loaded.loaded.marks) marks.set(mark.index, [...(marks.get(mark.index) ?? []), mark.kind]);
  const cells = [["id", "role", "tokens", "after", "action", "preview"]];
  rows.forEach((row, i) => {
    const action = row.reason ? `${row.action} (${row.reason})` : row.action;
    const mark = marks.has(i) ? `[${marks.get(i)!.join(", ")}] ` : "";
    cells.push([row.id, row.role, n(row.tokensBefore), n(row.tokensAfter), action, `${mark}${row.preview}`]);
  });
  process.stdout.write(`${table(cells, [2, 3])}\n`);
  const fill = fillLine(receipt);
  process.stderr.write(`${[describeLoaded(loaded), ...repairLines(loaded), plan.describe, ...(fill ? [fill] : [])].join("\n")}\n`);
}

// ---------------------------------------------------------------------------------------------

function main(argv: string[]): number {
  let args: Args | null;
  try {
    args = parseCommandLine(argv);
    if (args === null) return 0;
    const progress = new Progress(process.stderr.isTTY === true || process.env.CONTEXT_COMPACTOR_PROGRESS === "1");
    try {
      if (args.command === "compact") compactCommand(args, progress);
      else if (args.command === "count") countCommand(args, progress);
      else inspectCommand(args, progress);
    } finally {
      progress.clear();
    }
    return 0;
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`${TOOL}: ${error.message}\nRun "${TOOL} --help" for usage.\n`);
      return 2;
    }
    if (error instanceof InputError) {
      process.stderr.write(`${TOOL}: ${error.message}\n`);
      return 1;
    }
    if (error instanceof ContextCompactorError && !(error instanceof InternalError)) {
      process.stderr.write(`${TOOL}: ${error.message}\n`);
      return 1;
    }
    const detail = process.env.CONTEXT_COMPACTOR_DEBUG && error instanceof Error ? error.stack : error instanceof Error ? error.message : String(error);
    process.stderr.write(`${TOOL}: internal error (a bug: please report it): ${detail}\n`);
    return 1;
  }
}

process.exitCode = main(process.argv.slice(2));
