/** `context-compactor compact FILE`: the compacted context out, the receipt on stderr. */
import type { Args } from "./args.js";
import { loadHistory } from "./input.js";
import { loadedSummary, receiptText, writeOutput } from "./output.js";
import { build, buildPlan, encodingOf } from "./plan.js";
import type { Progress } from "./progress.js";

export function compactCommand(args: Args, progress: Progress): void {
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
