/**
 * What the commands print: the file loaded, the receipt, how full the context is, a preview of a
 * message, and where the output goes.
 */
import { writeFileSync } from "node:fs";
import type { BuildResultIn, EventReason, Format, LoadedConversation, Message, Receipt } from "../node.js";
import { describeFsError, InputError } from "./errors.js";
import type { Loaded } from "./input.js";
import type { Plan } from "./plan.js";
import { n, table } from "./text.js";

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
export function repairLines({ repairs }: Loaded): string[] {
  if (repairs.length === 0) return [];
  return [`import repairs (--repair): ${repairs.length}`, ...repairs.map((r) => `  message ${r.index}: ${r.kind}${r.callId ? ` (${r.callId})` : ""}: ${r.what}`)];
}

export function describeLoaded({ name, loaded, ids }: Loaded): string {
  const run = loaded.run ? `, run ${loaded.run.index} of ${loaded.run.count}` : "";
  const skipped = loaded.skipped.length ? `, ${loaded.skipped.length} record${loaded.skipped.length === 1 ? "" : "s"} skipped` : "";
  return `${name}: ${SOURCES[loaded.source]}${run}, ${ids.length} message${ids.length === 1 ? "" : "s"} (${loaded.format})${skipped}`;
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

/** The budget as the build resolved the options (`receipt.budget`): the CLI computes none of it. */
export function budgetLine(receipt: Receipt): string | undefined {
  const { budget } = receipt;
  if (!budget) return undefined;
  const split = [
    `system ${n(budget.systemTokens)}`,
    ...(budget.stateTokens > 0 ? [`state ${n(budget.stateTokens)}`] : []),
    ...(budget.pinnedTokens > 0 ? [`pinned ${n(budget.pinnedTokens)}`] : []),
    ...(budget.requestTokens > 0 ? [`request ${n(budget.requestTokens)}`] : []),
    `summary up to ${n(budget.summaryBudget)}`,
    `recent ${n(budget.recentBudget)}`,
  ];
  return `budget: ${n(budget.maxTokens)} tokens, trigger ${n(budget.triggerTokens)}, low-water mark ${n(budget.lowWaterTokens)}; split: ${split.join(", ")}`;
}

/**
 * How full the context is and why, from the receipt: a compaction event compacts toward the
 * low-water mark, and later calls append until the trigger, so any fill between them is normal.
 */
export function fillLine(receipt: Receipt): string | undefined {
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

export function receiptText(loaded: Loaded, plan: Plan, result: BuildResultIn<Format>): string {
  const { receipt } = result;
  const resolved = budgetLine(receipt);
  const lines = [describeLoaded(loaded), ...repairLines(loaded), plan.describe, ...(resolved ? [resolved] : []), ""];
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
export function preview(message: Message | undefined, width = 72): string {
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

export function writeOutput(text: string, out: string | undefined): void {
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

export function loadedSummary(loaded: Loaded) {
  const { messages: _messages, ...rest } = loaded.loaded;
  return { file: loaded.name, ids: loaded.ids, repairs: loaded.repairs, ...rest };
}
