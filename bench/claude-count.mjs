#!/usr/bin/env node
// Claude counts against the bill: `node bench/claude-count.mjs` (after a build). Writes its table
// to docs/benchmarks.md between its markers.
//
// On every step of the shared Claude Code logs that the rule was not fitted on (claude-logs.mjs
// says what a step is and which are left out), each counter predicts
//   - the appended part: D, the prompt growth between two billed calls (the response and the tool
//     results and user text after it), counted from those messages alone;
//   - the next whole prompt, P(k+1): without anchoring, its count of the conversation's messages
//     (the system prompt and tools, which the logs do not hold, are missing from it); anchored,
//     the billed P(k) plus its count of the appended part. This package's anchored figure is
//     what its API gives: the conversation in a ConversationHistory, `recordUsage` with call k's
//     usage, the response and results appended, `tokenCount()`.
// The logs' `output_tokens` are not the response's: Claude Code writes each content block as it
// starts, with the usage of the stream's start (1 to 30 tokens for most records). So the usage
// handed to `recordUsage` leaves them out, and the anchored count estimates the response too: the
// anchored figures here are the billed prompt plus an estimate of the whole appended part.
//
// Counters: this package (Anthropic messages by Claude's rule, `countMessages(…, { format: "anthropic" })`),
// ai-tokenizer's `claude` encoding on the same texts, ai-tokenizer's AI SDK `count` (the messages
// in AI SDK form, the model's constants for Claude Opus 4.5 / Haiku 4.5), and o200k_base on the
// raw texts. Targets, on the steps not used for fitting: the appended part within 6% median per
// step and its sum within ±3%; anchored, the next whole prompt within 1% median.
import { readFileSync, writeFileSync } from "node:fs";
import { ConversationHistory, Tokenizer } from "context-compactor";
import AiTokenizer, { models } from "ai-tokenizer";
import * as claudeEncoding from "ai-tokenizer/encoding/claude";
import { count as sdkCount } from "ai-tokenizer/sdk";
import { steps, isFitStep, quantiles } from "./claude-logs.mjs";
import { requireShared } from "./fixtures.mjs";

requireShared("claude-count: counts are compared with the usage the API billed, which only the shared Claude Code logs hold");

const COMMAND = "node bench/claude-count.mjs";
const DOC = new URL("../docs/benchmarks.md", import.meta.url);
const [START, END] = ["<!-- claude-count:start -->", "<!-- claude-count:end -->"];

const o200k = new Tokenizer("o200k_base");
const claudeTokenizer = new AiTokenizer(claudeEncoding);
const blocks = (m) => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content);
const resultText = (b) => (typeof b.content === "string" ? b.content : (b.content ?? []).map((p) => p.text ?? "").join(""));
const texts = (messages) =>
  messages.flatMap(blocks).map((b) =>
    b.type === "text" ? b.text : b.type === "thinking" ? b.thinking : b.type === "tool_use" ? b.name + JSON.stringify(b.input) : b.type === "tool_result" ? resultText(b) : "");

/** Anthropic messages in the AI SDK's ModelMessage form. */
function aiSdkMessages(messages) {
  const names = new Map();
  const out = [];
  for (const m of messages) {
    if (m.role === "assistant") {
      const content = blocks(m).map((b) => {
        if (b.type === "tool_use") return names.set(b.id, b.name), { type: "tool-call", toolCallId: b.id, toolName: b.name, input: b.input };
        if (b.type === "thinking") return { type: "reasoning", text: b.thinking };
        return { type: "text", text: b.text ?? "" };
      });
      out.push({ role: "assistant", content });
      continue;
    }
    const results = blocks(m).filter((b) => b.type === "tool_result");
    const rest = blocks(m).filter((b) => b.type !== "tool_result");
    if (results.length) {
      out.push({ role: "tool", content: results.map((b) => ({ type: "tool-result", toolCallId: b.tool_use_id, toolName: names.get(b.tool_use_id) ?? "tool", output: { type: "text", value: resultText(b) } })) });
    }
    if (rest.length) out.push({ role: "user", content: rest.map((b) => ({ type: "text", text: b.text ?? "" })) });
  }
  return out;
}

const sdkModel = (model) => (model.includes("haiku") ? models["anthropic/claude-haiku-4.5"] : models["anthropic/claude-opus-4.5"]);

/** Each counter's count of a list of Anthropic messages (the messages alone: no request overhead). */
const counters = {
  "this package (Claude rule)": (messages) => o200k.countMessages(messages, { format: "anthropic" }).messages.reduce((n, x) => n + x, 0),
  "ai-tokenizer, `claude` encoding": (messages) => texts(messages).reduce((n, t) => n + claudeTokenizer.count(t), 0),
  "ai-tokenizer, AI SDK `count`": (messages, model) => {
    const counted = sdkCount({ tokenizer: claudeTokenizer, messages: aiSdkMessages(messages), model: sdkModel(model) });
    return counted.total - sdkModel(model).tokens.baseOverhead;
  },
  "o200k_base, raw text": (messages) => texts(messages).reduce((n, t) => n + o200k.count(t), 0),
};

// --- replay ------------------------------------------------------------------------------------
const all = steps();
const conversations = [...new Set(all.map((s) => s.conversation))];
const rows = []; // { step, counter, appended, whole, anchored }
let apiChecks = 0;
for (const name of conversations) {
  const list = all.filter((s) => s.conversation === name);
  const history = new ConversationHistory({ format: "anthropic" });
  const sent = [list[0].intro];
  history.appendMany([list[0].intro], "anthropic");
  for (const step of list) {
    // This package, through its API: the usage of call k (its prompt; see above for output),
    // then the response and what followed it.
    const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens } = step.usage;
    const report = history.recordUsage({ input_tokens, cache_creation_input_tokens, cache_read_input_tokens }, { model: step.model });
    if (!report.anchored) throw new Error(`${name} ${step.id}: not anchored: ${report.notes}`);
    history.appendMany([step.response, step.appended], "anthropic");
    const appendedMessages = [step.response, step.appended];
    const apiCount = history.tokenCount();
    for (const [counter, count] of Object.entries(counters)) {
      const appended = count(appendedMessages, step.model);
      const whole = count([...sent, ...appendedMessages], step.model);
      let anchored = step.before + appended;
      if (counter.startsWith("this package")) {
        if (apiCount.basis !== "anchored") throw new Error(`${name} ${step.id}: tokenCount() is ${apiCount.basis}`);
        if (apiCount.total !== anchored) throw new Error(`${name} ${step.id}: tokenCount() ${apiCount.total} ≠ billed ${step.before} + countMessages ${appended}`);
        anchored = apiCount.total;
        apiChecks++;
      }
      rows.push({ step, counter, appended, whole, anchored });
    }
    sent.push(...appendedMessages);
  }
}

// --- table -------------------------------------------------------------------------------------
const pct = (x) => `${(x * 100).toFixed(1)}%`;
const signed = (x) => `${x >= 0 ? "+" : "−"}${pct(Math.abs(x))}`;
function summary(set, counter) {
  const r = rows.filter((row) => row.counter === counter && set.includes(row.step));
  const perStep = quantiles(r.map(({ step, appended }) => (appended - step.billed) / step.billed));
  const sum = r.reduce((n, x) => n + x.appended, 0) / r.reduce((n, x) => n + x.step.billed, 0) - 1;
  const whole = quantiles(r.map(({ step, whole }) => (whole - step.after) / step.after));
  const anchored = quantiles(r.map(({ step, anchored }) => (anchored - step.after) / step.after));
  return { perStep, sum, whole, anchored };
}
const usable = all.filter((s) => !s.excluded);
const test = usable.filter((s) => !isFitStep(s));
const fit = usable.filter(isFitStep);
const lines = [];
const say = (line = "") => (console.log(line), lines.push(line));
say(`Claude Code logs (../shared/fixtures/anthropic/): ${all.length} steps in ${conversations.length} conversations; ` +
  `${all.length - usable.length} left out (the harness changed the prompt in ways the log does not keep), ` +
  `${fit.length} used to fit the rule, **${test.length} not used for fitting** (the figures below).`);
say();
say("| counter | appended part: median / p90 per step | appended part: sum | next whole prompt, not anchored: median | next whole prompt, anchored: median |");
say("|---|---|---|---|---|");
for (const counter of Object.keys(counters)) {
  const s = summary(test, counter);
  say(`| ${counter} | ${pct(s.perStep.median)} / ${pct(s.perStep.p90)} | ${signed(s.sum)} | ${pct(s.whole.median)} | ${pct(s.anchored.median)} |`);
}
const ours = summary(test, "this package (Claude rule)");
const targets = [
  ["appended part within 6% median per step", ours.perStep.median <= 0.06, pct(ours.perStep.median)],
  ["appended part's sum within ±3%", Math.abs(ours.sum) <= 0.03, signed(ours.sum)],
  ["anchored, next whole prompt within 1% median", ours.anchored.median <= 0.01, pct(ours.anchored.median)],
];
say();
for (const [what, met, value] of targets) say(`- ${met ? "met" : "**NOT met**"}: ${what} (${value})`);
say();
say(`The anchored figures of this package are its API's (\`recordUsage\`, then \`tokenCount()\`, checked equal to the billed prompt plus \`countMessages\` on ${apiChecks} steps). ` +
  "The logs' `output_tokens` are stream-start figures (Claude Code writes each block as it starts), so the usage given to `recordUsage` leaves them out and the response is estimated too. " +
  "Not anchored, every counter misses the system prompt and tools, which the logs do not hold. " +
  `Per step on the ${fit.length} fitted steps, for reference: ${pct(summary(fit, "this package (Claude rule)").perStep.median)} median.`);
say();
say("Steps left out:");
for (const s of all.filter((s) => s.excluded)) say(`- ${s.conversation}, after call …${s.id.slice(-8)}: ${s.excluded}`);

const doc = readFileSync(DOC, "utf8");
const block = `${START}\n\`${COMMAND}\` (${new Date().toISOString().slice(0, 10)}):\n\n${lines.join("\n")}\n${END}`;
const at = doc.indexOf(START);
const next = at >= 0 ? doc.slice(0, at) + block + doc.slice(doc.indexOf(END) + END.length) : `${doc.trimEnd()}\n\n## Claude counts against the bill\n\n${block}\n`;
writeFileSync(DOC, next);
console.log(`\n(written to docs/benchmarks.md)`);
