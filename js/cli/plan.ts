/**
 * The build a command makes: its options from `--profile`, `--budget`, `--summary`, `--format`
 * and `--encoding`.
 */
import {
  ContextCompactorError,
  resolveProfile,
  type BuildOptions,
  type BuildResultIn,
  type ConversationHistory,
  type EncodingName,
  type Format,
  type Profile,
} from "../node.js";
import { ENCODINGS, FORMATS, oneOf, wholeNumber, type Args } from "./args.js";
import { UsageError } from "./errors.js";
import type { Progress } from "./progress.js";
import { n } from "./text.js";

export interface Plan {
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
export function encodingOf(args: Args): EncodingName {
  const chosen = oneOf(args.values.encoding, ENCODINGS, "encoding");
  if (chosen !== undefined) return chosen;
  return args.values.profile !== undefined ? findProfile(args.values.profile).encoding : "o200k_base";
}

/** The build options for a file in `fileFormat` (called once before reading it, to check the command line). */
export function buildPlan(args: Args, fileFormat: Format): Plan {
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
        summary: summaryKind === "none" ? null : { summariser: "extractive", triggerTokens: budget },
      },
      describe: `--budget ${n(budget)}, ${encoding}`,
    };
  }
  const chosen = findProfile(profileName ?? (format === "anthropic" ? "claude-sonnet-4" : "gpt-4o"));
  // --encoding counts the profile's settings with another encoding.
  const profile: Profile = { ...chosen, encoding };
  const counted = encoding === chosen.encoding ? encoding : `${encoding} (--encoding; the profile counts with ${chosen.encoding})`;
  return {
    encoding,
    options: { profile, format, ...(summaryKind === "none" ? { summary: null } : {}) },
    describe: `profile ${profile.name}${profileName === undefined ? " (the default for the format; --profile or --budget to choose)" : ""}: a ${n(profile.contextWindow)}-token window, ${counted}`,
  };
}

export function build(history: ConversationHistory, plan: Plan, progress: Progress, long: boolean): BuildResultIn<Format> {
  if (long) progress.step("building");
  try {
    return history.build(plan.options);
  } catch (error) {
    if (error instanceof ContextCompactorError && error.code === "InvalidArgument") throw new UsageError(error.message);
    throw error;
  }
}
