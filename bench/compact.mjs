// Context building: the shared tau-bench runs concatenated into one 5,308-message conversation,
// built to a 100k-token budget, cold / warm / after one append; beside LangChain's
// trimMessages (strategy "last", 100k, a memoized js-tiktoken counter) on the same messages,
// in the same process. Prints the ratios. Run: npm run bench:compact
import { readFileSync } from "node:fs";
import { ConversationHistory, validateMessages } from "../dist/node.js";
import { trimMessages, SystemMessage, HumanMessage, AIMessage, ToolMessage } from "@langchain/core/messages";
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";

const BUDGET = 100_000;
const fixture = new URL("../../shared/fixtures/openai/tau-bench-gpt-4o-airline.json", import.meta.url);
const runs = JSON.parse(readFileSync(fixture, "utf8"));
const messages = runs.flatMap((run) => run.traj);
const extra = (i) => ({ role: "user", content: `One more thing (${i}): can you also check my baggage allowance?` });
const WARM = 100; // builds timed warm (median)
const APPENDS = 20; // appends timed, each followed by a build (median)
console.log(`conversation: ${messages.length} messages from ${runs.length} tau-bench runs; budget ${BUDGET.toLocaleString()} tokens`);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (f) => {
  const t0 = performance.now();
  const out = f();
  return [performance.now() - t0, out];
};
const kb = (value) => (JSON.stringify(value).length / 1024).toFixed(0) + " KB";
const fmt = (ms) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1)) + " ms";

function ours(label, options) {
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  const [cold, first] = time(() => {
    history.appendMany(messages);
    return history.build(options);
  });
  const warmTimes = [];
  let warm;
  for (let i = 0; i < WARM; i++) {
    const [t, out] = time(() => history.build(options));
    warmTimes.push(t);
    warm = out;
  }
  const countedBefore = history.countedMessages;
  const appendTimes = [];
  let appended;
  for (let i = 0; i < APPENDS; i++) {
    const [t, out] = time(() => {
      history.append(extra(i));
      return history.build(options);
    });
    appendTimes.push(t);
    appended = out;
  }
  const afterAppend = median(appendTimes);
  const countedForAppend = (history.countedMessages - countedBefore) / APPENDS;
  const violations = validateMessages(appended.messages, "openai");
  const sameOutput = JSON.stringify(first.messages) === JSON.stringify(warm.messages);
  console.log(
    `context-compactor (${label}): cold ${fmt(cold)}, warm ${fmt(median(warmTimes))} (median of ${WARM}), ` +
      `append + build ${fmt(afterAppend)} (median of ${APPENDS}; ${countedForAppend} message tokenized per append); ` +
      `${appended.layout.length} messages, ${appended.tokens.total.toLocaleString()} tokens, ` +
      `within budget: ${appended.receipt.withinBudget}, valid: ${violations.length === 0 ? "yes" : violations[0].message}, ` +
      `warm = cold output: ${sameOutput ? "yes" : "no"}; result as JSON: messages ${kb(appended.messages)}, ` +
      `receipt ${kb(appended.receipt)} (${appended.receipt.runs.length} runs), layout ${kb(appended.layout)}`,
  );
  return { cold, warm: median(warmTimes), afterAppend };
}

const selection = ours("selection only", {
  budget: { contextWindow: BUDGET, targetRatio: 1 },
  summary: null,
  compress: null,
  digest: null,
});
const pipeline = ours("full pipeline: extractive summary, compression, digests", {
  budget: { contextWindow: BUDGET, targetRatio: 1 },
});

// LangChain: the same messages as BaseMessages, a js-tiktoken counter memoized per message.
function toLangChain(m) {
  switch (m.role) {
    case "system": return new SystemMessage(m.content);
    case "user": return new HumanMessage(m.content);
    case "tool": return new ToolMessage({ content: m.content, tool_call_id: m.tool_call_id });
    default:
      return new AIMessage({
        content: m.content ?? "",
        tool_calls: (m.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, args: JSON.parse(c.function.arguments || "{}"), type: "tool_call" })),
      });
  }
}
const encoder = new Tiktoken(o200k);
const memo = new WeakMap();
const messageTokens = (m) => {
  let n = memo.get(m);
  if (n === undefined) {
    const text = typeof m.content === "string" ? m.content : JSON.stringify(m.content);
    const calls = (m.tool_calls ?? []).map((c) => c.name + JSON.stringify(c.args)).join("");
    n = 3 + encoder.encode(text).length + (calls ? encoder.encode(calls).length : 0);
    memo.set(m, n);
  }
  return n;
};
const tokenCounter = (msgs) => msgs.reduce((sum, m) => sum + messageTokens(m), 3);

const lcMessages = messages.map(toLangChain);
const trim = (msgs) =>
  trimMessages(msgs, { maxTokens: BUDGET, strategy: "last", tokenCounter, includeSystem: true, startOn: "human", allowPartial: false });
const [lcCold, lcOut] = await (async () => {
  const t0 = performance.now();
  const out = await trim(lcMessages);
  return [performance.now() - t0, out];
})();
const lcWarmTimes = [];
for (let i = 0; i < 10; i++) {
  const t0 = performance.now();
  await trim(lcMessages);
  lcWarmTimes.push(performance.now() - t0);
}
const lcWarm = median(lcWarmTimes);
const lcAppendTimes = [];
const appendedLc = [...lcMessages];
for (let i = 0; i < 5; i++) {
  const t0 = performance.now();
  appendedLc.push(toLangChain(extra(i)));
  await trim(appendedLc);
  lcAppendTimes.push(performance.now() - t0);
}
const lcAfterAppend = median(lcAppendTimes);
console.log(
  `LangChain trimMessages (last, memoized js-tiktoken): cold ${fmt(lcCold)}, warm ${fmt(lcWarm)} (median of 10), ` +
    `append + trim ${fmt(lcAfterAppend)} (median of 5); ${lcOut.length} messages, ${tokenCounter(lcOut).toLocaleString()} tokens`,
);

const ratio = (a, b) => (b / a).toFixed(1) + "×";
console.log("\nspeed-up of context-compactor over trimMessages (higher is better):");
console.table({
  "selection only": { cold: ratio(selection.cold, lcCold), warm: ratio(selection.warm, lcWarm), "after one append": ratio(selection.afterAppend, lcAfterAppend) },
  "full pipeline": { cold: ratio(pipeline.cold, lcCold), warm: ratio(pipeline.warm, lcWarm), "after one append": ratio(pipeline.afterAppend, lcAfterAppend) },
});
console.log(
  `targets: warm build within 5 ms: ${selection.warm <= 5 && pipeline.warm <= 5 ? "met" : "NOT met"} ` +
    `(${fmt(selection.warm)} / ${fmt(pipeline.warm)}); at least 500× trimMessages warm: ` +
    `${lcWarm / selection.warm >= 500 ? "met" : "NOT met"} (${ratio(selection.warm, lcWarm)})`,
);
