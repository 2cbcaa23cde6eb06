/** `context-compactor inspect FILE`: one line per message, what the build does to it. */
import type { ReceiptEntry } from "../node.js";
import type { Args } from "./args.js";
import { loadHistory } from "./input.js";
import { budgetLine, describeLoaded, fillLine, preview, repairLines } from "./output.js";
import { build, buildPlan, encodingOf } from "./plan.js";
import type { Progress } from "./progress.js";
import { n, table } from "./text.js";

export function inspectCommand(args: Args, progress: Progress): void {
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
  const resolved = budgetLine(receipt);
  process.stderr.write(`${[describeLoaded(loaded), ...repairLines(loaded), plan.describe, ...(resolved ? [resolved] : []), ...(fill ? [fill] : [])].join("\n")}\n`);
}
