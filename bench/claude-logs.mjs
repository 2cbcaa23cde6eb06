// The steps of the shared Claude Code logs, read for `claude-fit.mjs` and `claude-count.mjs`.
//
// Claude Code logs the usage the API billed with every response. Between two consecutive calls
// of one conversation the prompt grows by D = (input + cache write + cache read of call k+1) −
// (the same of call k): the response of call k as sent back, plus the tool results and user text
// appended after it. The system prompt and the tool definitions cancel out, so D measures what
// a count of the appended messages should say, with nothing the log does not hold.
//
// Claude Code writes one response as several records (one content block each, sharing
// `message.id`), sometimes with tool results logged between them; a sub-agent's conversation is
// logged inside the parent's as `agent_progress` records. Both are put back together here.
//
// A step is left out when the harness changed the prompt in a way the log does not keep:
//   - hooks ran after a file edit (PostToolUse hooks of Write/Edit/MultiEdit/NotebookEdit other
//     than Claude Code's own `callback`): what they print joins the prompt, not the log;
//   - a local command ran between the calls (`/mcp` reconnects servers and sends their tool
//     definitions again, `/model` may switch models): the request around the messages changed.
//
// Only the shared logs hold usage the API billed (the project's own logs carry generated usage):
// the scripts that read these steps call `requireShared` first.
import { readFileSync } from "node:fs";
import { SHARED } from "./fixtures.mjs";

export const FIXTURES = SHARED;
export const LOGS = ["claude-code-subagent.jsonl", "claude-code-tool-heavy.jsonl", "claude-code-short.jsonl"];
const FILE_EDITS = new Set(["Write", "Edit", "MultiEdit", "NotebookEdit"]);

const blocksOf = (message) => (typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content ?? []);
const promptOf = (usage) => usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);

/** One log's conversations: the main one, and each sub-agent's. Entries in log order. */
function conversations(file) {
  const out = new Map();
  const add = (name, entry) => (out.get(name) ?? out.set(name, []).get(name)).push(entry);
  const text = readFileSync(new URL(`anthropic/${file}`, FIXTURES), "utf8");
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const record = JSON.parse(line);
    if (record.type === "progress" && record.data?.type === "agent_progress") {
      const message = record.data.message?.message;
      if (message?.role) add(`${file} (sub-agent ${record.data.agentId})`, { message });
    } else if ((record.type === "user" || record.type === "assistant") && record.message && !record.isSidechain) {
      add(file, { message: record.message });
    } else if (record.type === "progress" && record.data?.type === "hook_progress") {
      add(file, { hook: record.data });
    } else if (record.type === "system" && record.subtype === "local_command") {
      add(file, { command: record.content });
    }
  }
  return out;
}

/**
 * Every step of every conversation, in order: `{ conversation, intro (the user message before its
 * first call), usage (call k's, as logged), model, id, before, after, billed (D),
 * output (the log's output_tokens: a stream-start figure, see claude-count.mjs), response
 * (the assistant message), appended (the user message after it), excluded (why, or null),
 * cacheRead (of the next call) }`.
 */
export function steps() {
  const out = [];
  for (const file of LOGS) {
    for (const [conversation, entries] of conversations(file)) {
      const calls = [];
      const intro = [];
      let call = null;
      for (const entry of entries) {
        const message = entry.message;
        if (!call && message && !message.usage) intro.push(...blocksOf(message));
        if (message?.role === "assistant" && message.usage) {
          if (!call || call.id !== message.id) {
            call = { id: message.id, model: message.model, usage: message.usage, prompt: promptOf(message.usage), response: [], after: [], hooks: [], commands: [] };
            calls.push(call);
          }
          call.output = Math.max(call.output ?? 0, message.usage.output_tokens ?? 0);
          call.response.push(...blocksOf(message));
        } else if (!call) {
          continue;
        } else if (message) {
          call.after.push(...blocksOf(message));
        } else if (entry.hook) {
          call.hooks.push(entry.hook);
        } else if (entry.command) {
          call.commands.push(entry.command);
        }
      }
      for (let k = 0; k + 1 < calls.length; k++) {
        const [a, b] = [calls[k], calls[k + 1]];
        const edits = a.response.filter((block) => block.type === "tool_use" && FILE_EDITS.has(block.name)).map((block) => block.name);
        const editHooks = a.hooks.filter((h) => h.hookEvent === "PostToolUse" && FILE_EDITS.has(h.hookName.split(":")[1]) && h.command !== "callback");
        let excluded = null;
        if (edits.length > 0 && editHooks.length > 0) {
          excluded = `${editHooks.length} PostToolUse hooks ran after ${edits.join(", ")}: their output joins the prompt, not the log`;
        } else if (a.commands.length > 0) {
          const names = a.commands.map((c) => /<command-name>([^<]*)</.exec(c)?.[1]).filter(Boolean);
          excluded = `${names.join(", ") || "a local command"} ran between the calls: the request around the messages changed (cache read ${b.usage.cache_read_input_tokens} after a prompt of ${a.prompt})`;
        }
        out.push({
          conversation,
          intro: { role: "user", content: intro },
          usage: a.usage,
          model: a.model,
          id: a.id,
          before: a.prompt,
          after: b.prompt,
          billed: b.prompt - a.prompt,
          output: a.output,
          response: { role: "assistant", content: a.response },
          appended: { role: "user", content: a.after },
          excluded,
        });
      }
    }
  }
  return out;
}

/** The fit/test split: the rule is fitted on the main conversation of the longest log and tested on the others. */
export const FIT_CONVERSATION = "claude-code-subagent.jsonl";
export const isFitStep = (step) => step.conversation === FIT_CONVERSATION;

/** Median and 90th percentile of absolute values. */
export function quantiles(values) {
  const sorted = values.map(Math.abs).sort((x, y) => x - y);
  const at = (q) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] : NaN);
  const median = sorted.length % 2 ? at(0.5) : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
  return { median, p90: at(0.9) };
}
