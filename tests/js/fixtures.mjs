// The project's own fixtures (tests/fixtures/, written by tests/fixtures/agents.mjs), and where the
// shared real-world ones are when they are beside the repository (tests/shared/ reads those).
import { existsSync, readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

export const FIXTURES = new URL("../fixtures/", import.meta.url);
const read = (path) => readFileSync(new URL(path, FIXTURES), "utf8");

export const AIRLINE_RUNS = "openai/airline-runs.json";
export const SWE_AGENT = "openai/swe-agent-trajectory.traj";

/** CC_SHARED when it is set (that folder, or its `fixtures/`), else `../shared/fixtures/` beside the repository. */
export const SHARED_FIXTURES = (() => {
  const dir = process.env.CC_SHARED;
  if (!dir) return new URL("../../../shared/fixtures/", import.meta.url);
  const base = pathToFileURL(dir.replace(/\/?$/, "/"));
  return existsSync(new URL("fixtures/", base)) ? new URL("fixtures/", base) : base;
})();
export const sharedPresent = () => existsSync(SHARED_FIXTURES);

/** Token vectors in gpt-tokenizer's TestPlans layout: `EncodingName:` / `Sample:` (may span lines) / `Encoded: [...]`. */
export function tokenVectors(encodings = ["cl100k_base", "o200k_base"], text = read("tokens/token-vectors.txt")) {
  const vectors = [];
  const re = /^EncodingName: (\S+)\nSample: ([\s\S]*?)\nEncoded: \[([^\]]*)\]$/gm;
  for (const m of text.matchAll(re)) {
    const ids = m[3].trim() === "" ? [] : m[3].split(",").map((s) => Number(s.trim()));
    if (encodings.includes(m[1])) vectors.push({ encoding: m[1], sample: m[2], ids });
  }
  return vectors;
}

/** The counts OpenAI's cookbook published for its examples, as the project wrote them down. */
export const cookbook = () => JSON.parse(read("tokens/openai-cookbook-chat-token-counts.json"));

/** The generated airline runs, in tau-bench's layout: `[{ task_id, traj: [OpenAI messages] }]`. */
export const airlineRuns = () => JSON.parse(read(AIRLINE_RUNS));

/** A SWE-agent history, its tool messages' `tool_call_ids: [x]` mapped to `tool_call_id: x`. */
export function sweAgent(text = read(SWE_AGENT)) {
  const traj = JSON.parse(text);
  return traj.history.map((message) => {
    if (!Array.isArray(message.tool_call_ids)) return message;
    const { tool_call_ids, ...rest } = message;
    if (tool_call_ids.length !== 1) throw new Error(`expected one tool_call_id, got ${tool_call_ids.length}`);
    return { ...rest, tool_call_id: tool_call_ids[0] };
  });
}

export const CLAUDE_CODE_LOGS = ["claude-code-short.jsonl", "claude-code-tool-heavy.jsonl"];

/** The `.message` of the `user`/`assistant` records of a Claude Code log: Anthropic messages. */
export function claudeCode(name, text = read(`anthropic/${name}`)) {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line))
    .filter((record) => record.type === "user" || record.type === "assistant")
    .map((record) => record.message);
}

/** The texts a tokenizer sees in an OpenAI message list: content strings/parts and tool-call arguments. */
export function messageTexts(messages) {
  const texts = [];
  for (const m of messages) {
    if (typeof m.content === "string") texts.push(m.content);
    else if (Array.isArray(m.content)) for (const p of m.content) if (typeof p.text === "string") texts.push(p.text);
    for (const call of m.tool_calls ?? []) texts.push(call.function.arguments);
  }
  return texts;
}
