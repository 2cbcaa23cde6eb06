#!/usr/bin/env node
/**
 * The `context-compactor` command: a conversation file in (anything `loadConversation` reads),
 * and its compacted context, token counts, or per-message fate out. Results go to stdout (or
 * `--out`), the receipt and progress to stderr. Exit codes: 0 ok, 1 bad input or file, 2 usage.
 */
import { ContextCompactorError, InternalError } from "./node.js";
import { parseCommandLine, type Args } from "./cli/args.js";
import { compactCommand } from "./cli/compact.js";
import { countCommand } from "./cli/count.js";
import { InputError, UsageError } from "./cli/errors.js";
import { TOOL } from "./cli/help.js";
import { inspectCommand } from "./cli/inspect.js";
import { Progress } from "./cli/progress.js";

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
