#!/usr/bin/env node
// Refits Claude's counting rule (src/tokens/claude.rs, `CLAUDE_RULE`) from the shared Claude
// Code logs and prints every step's residual. Run: `node bench/claude-fit.mjs` (after a build).
//
// A step is the prompt growth D between two consecutive billed calls (see claude-logs.mjs):
// exactly the messages appended between them. Its features, counted with o200k_base: the tokens
// of all their text (text and thinking blocks, tool calls' names and JSON input, tool results'
// text), and the number of messages, tool-use and tool-result blocks. The rule is
//   D ≈ scale × text + perMessage × messages + perToolUse × toolUses + perToolResult × toolResults
// The logs cannot separate everything (src/tokens/claude.rs says why): perMessage and
// perToolResult are fixed, and `scale` and `perToolUse` are fitted by least squares on the steps
// of one conversation (the fit set) and tested on the others.
import { Tokenizer } from "context-compactor";
import { steps, isFitStep, quantiles, FIT_CONVERSATION } from "./claude-logs.mjs";
import { requireShared } from "./fixtures.mjs";

export const FIXED = { perMessage: 3, perToolResult: 30, perThinking: 0 };

const o200k = new Tokenizer("o200k_base");
const resultText = (block) => (typeof block.content === "string" ? block.content : (block.content ?? []).map((p) => p.text ?? "").join(""));

/** The features of a list of Anthropic messages. */
export function features(messages) {
  const f = { text: 0, messages: messages.length, toolUses: 0, toolResults: 0, thinking: 0 };
  for (const message of messages) {
    for (const block of typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content) {
      if (block.type === "text") f.text += o200k.count(block.text);
      else if (block.type === "thinking") (f.text += o200k.count(block.thinking)), f.thinking++;
      else if (block.type === "tool_use") (f.text += o200k.count(block.name) + o200k.count(JSON.stringify(block.input))), f.toolUses++;
      else if (block.type === "tool_result") (f.text += o200k.count(resultText(block))), f.toolResults++;
    }
  }
  return f;
}

const fixedPart = (f) => FIXED.perMessage * f.messages + FIXED.perToolResult * f.toolResults + FIXED.perThinking * f.thinking;

/** Least squares of D − fixed part on [text, toolUses]: returns { scale, perToolUse }. */
export function fit(set) {
  let [a11, a12, a22, b1, b2] = [0, 0, 0, 0, 0];
  for (const step of set) {
    const f = features([step.response, step.appended]);
    const y = step.billed - fixedPart(f);
    a11 += f.text * f.text, a12 += f.text * f.toolUses, a22 += f.toolUses * f.toolUses;
    b1 += f.text * y, b2 += f.toolUses * y;
  }
  const det = a11 * a22 - a12 * a12;
  return { scale: (b1 * a22 - b2 * a12) / det, perToolUse: (a11 * b2 - a12 * b1) / det };
}

export const predict = (rule, messages) => {
  const f = features(messages);
  return rule.scale * f.text + rule.perToolUse * f.toolUses + fixedPart(f);
};

function report(rule, set, title) {
  const rows = set.map((s) => ({ s, predicted: predict(rule, [s.response, s.appended]) }));
  const errors = rows.map(({ s, predicted }) => (predicted - s.billed) / s.billed);
  const sum = rows.reduce((n, r) => n + r.predicted, 0) / rows.reduce((n, r) => n + r.s.billed, 0) - 1;
  const { median, p90 } = quantiles(errors);
  console.log(`\n${title}: ${set.length} steps, median ${pct(median)}, p90 ${pct(p90)}, sum ${signed(sum)}`);
  for (const { s, predicted } of rows) {
    console.log(`  ${s.conversation.padEnd(52)} ${s.id.slice(-8)}  billed ${String(s.billed).padStart(5)}  rule ${String(Math.round(predicted)).padStart(5)}  ${signed((predicted - s.billed) / s.billed).padStart(7)}`);
  }
}

const pct = (x) => `${(x * 100).toFixed(1)}%`;
const signed = (x) => `${x >= 0 ? "+" : "−"}${pct(Math.abs(x))}`;

if (import.meta.url === `file://${process.argv[1]}`) {
  requireShared("claude-fit: the rule is fitted on the usage the API billed, which only the shared Claude Code logs hold");
  const all = steps();
  const usable = all.filter((s) => !s.excluded);
  const fitSet = usable.filter(isFitStep);
  const testSet = usable.filter((s) => !isFitStep(s));
  const rule = fit(fitSet);
  console.log(`Claude rule fitted on ${fitSet.length} steps (${FIT_CONVERSATION}, main conversation), tested on ${testSet.length} steps of the other conversations; ${all.length - usable.length} steps left out:`);
  for (const s of all.filter((s) => s.excluded)) console.log(`  ${s.conversation} ${s.id.slice(-8)}: ${s.excluded}`);
  console.log(`\nconstants for src/tokens/claude.rs (CLAUDE_RULE):`);
  console.log(`  text_scale: ${rule.scale.toFixed(3)}, per_message: ${FIXED.perMessage}, per_tool_use: ${Math.round(rule.perToolUse)}, per_tool_result: ${FIXED.perToolResult}, per_thinking: ${FIXED.perThinking}`);
  const rounded = { scale: Number(rule.scale.toFixed(3)), perToolUse: Math.round(rule.perToolUse) };
  report(rounded, fitSet, "fit set (residuals)");
  report(rounded, testSet, "test set (not used for fitting)");
  // A second view: each usable step predicted by a rule fitted on all the others.
  const loo = usable.map((s) => {
    const r = fit(usable.filter((t) => t !== s));
    return (predict(r, [s.response, s.appended]) - s.billed) / s.billed;
  });
  const q = quantiles(loo);
  console.log(`\nleave-one-step-out over all ${usable.length} usable steps: median ${pct(q.median)}, p90 ${pct(q.p90)}`);
}
