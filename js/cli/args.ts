/** The command line: which command, which FILE, which options, each checked. */
import { parseArgs } from "node:util";
import { UsageError } from "./errors.js";
import { HELP } from "./help.js";

export const ENCODINGS = ["o200k_base", "cl100k_base", "estimate"] as const;
export const FORMATS = ["openai", "anthropic"] as const;

export interface Args {
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
export function parseCommandLine(argv: string[]): Args | null {
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

export function oneOf<T extends string>(value: string | undefined, allowed: readonly T[], option: string): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) {
    throw new UsageError(`--${option} must be ${allowed.join(" or ")}, got "${value}"`);
  }
  return value as T;
}

export function wholeNumber(value: string | undefined, option: string, min: number): number | undefined {
  if (value === undefined) return undefined;
  const digits = value.replace(/[_,]/g, ""); // 128_000 and 128,000 read as 128000
  const number = Number(digits);
  if (!/^\d+$/.test(digits) || !Number.isSafeInteger(number) || number < min) {
    throw new UsageError(`--${option} must be a whole number${min > 0 ? ` of at least ${min}` : ""}, got "${value}"`);
  }
  return number;
}
