/** `context-compactor count FILE`: tokens by role and by part. */
import { ConversationHistory, convertMessages, type Message } from "../node.js";
import { FORMATS, oneOf, type Args } from "./args.js";
import { append, loadHistory } from "./input.js";
import { describeLoaded, loadedSummary, repairLines } from "./output.js";
import { encodingOf } from "./plan.js";
import type { Progress } from "./progress.js";
import { n, table } from "./text.js";

export function countCommand(args: Args, progress: Progress): void {
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
