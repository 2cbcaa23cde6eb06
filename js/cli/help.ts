/** The command's usage texts (`--help`), one per command and one for the whole. */
import { profileNames } from "../node.js";

export const TOOL = "context-compactor";

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
  --budget N           at most N tokens in the context (instead of a profile): budget.maxTokens = N;
                       the trigger, low-water mark and split the build resolves are printed
  --summary KIND       extractive (default: the built-in summary of what is left out) | none
  --format FORMAT      openai | anthropic: the context's format (default: the file's)`;
export const HELP: Record<string, string> = {
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
