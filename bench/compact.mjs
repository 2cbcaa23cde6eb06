// Context building: the shared tau-bench runs concatenated into one conversation (5,308 messages;
// longer sizes repeat them with fresh tool-call ids, bench/long-conversation.mjs), built to a
// 100k-token budget, cold / warm / after one append; beside LangChain's trimMessages (strategy
// "last", 100k, a memoized js-tiktoken counter) on the same messages, in the same process. Prints
// the times side by side for each size and the ratios.
// Run: npm run bench:compact [-- sizes…]   e.g. npm run bench:compact -- 5000 100000 300000
import { ConversationHistory, validateMessages } from "../dist/node.js";
import { trimMessages, SystemMessage, HumanMessage, AIMessage, ToolMessage } from "@langchain/core/messages";
import { Tiktoken } from "js-tiktoken/lite";
import o200k from "js-tiktoken/ranks/o200k_base";
import { conversation, runCount, templates } from "./long-conversation.mjs";

const BUDGET = 100_000;
const SIZES = process.argv.slice(2).filter((a) => /^\d+$/.test(a)).map(Number);
if (SIZES.length === 0) SIZES.push(templates.length);
const extra = (i) => ({ role: "user", content: `One more thing (${i}): can you also check my baggage allowance?` });
// trimMessages grows faster than the conversation (0.5 s at 5k messages, over 5 minutes for one
// call at 100k on the 2-core VM): past this many messages it is left out.
const LANGCHAIN_MAX = Number(process.env.COMPACT_LANGCHAIN_MAX ?? 20_000);
const WARM = 100; // builds timed warm (median)
const APPENDS = 20; // appends timed, each followed by a build (median)

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = (f) => {
  const t0 = performance.now();
  const out = f();
  return [performance.now() - t0, out];
};
const kb = (value) => (JSON.stringify(value).length / 1024).toFixed(0) + " KB";
const fmt = (ms) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1)) + " ms";

function ours(messages, label, options) {
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
  history.free();
  return { cold, warm: median(warmTimes), afterAppend };
}

const SELECTION = { budget: { contextWindow: BUDGET, targetRatio: 1 }, summary: null, compress: null, digest: null };
const PIPELINE = { budget: { contextWindow: BUDGET, targetRatio: 1 } };

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

async function langChain(messages) {
  const lcMessages = messages.map(toLangChain);
  const trim = (msgs) =>
    trimMessages(msgs, { maxTokens: BUDGET, strategy: "last", tokenCounter, includeSystem: true, startOn: "human", allowPartial: false });
  const timed = async (f) => {
    const t0 = performance.now();
    const out = await f();
    return [performance.now() - t0, out];
  };
  const [cold, out] = await timed(() => trim(lcMessages));
  const runs = 10;
  const appends = 5;
  const warmTimes = [];
  for (let i = 0; i < runs; i++) warmTimes.push((await timed(() => trim(lcMessages)))[0]);
  const appendTimes = [];
  const appended = [...lcMessages];
  for (let i = 0; i < appends; i++) {
    appendTimes.push((await timed(() => {
      appended.push(toLangChain(extra(i)));
      return trim(appended);
    }))[0]);
  }
  const result = { cold, warm: median(warmTimes), afterAppend: median(appendTimes) };
  console.log(
    `LangChain trimMessages (last, memoized js-tiktoken): cold ${fmt(cold)}, warm ${fmt(result.warm)} (median of ${runs}), ` +
      `append + trim ${fmt(result.afterAppend)} (median of ${appends}); ${out.length} messages, ${tokenCounter(out).toLocaleString()} tokens`,
  );
  return result;
}

const ratio = (a, b) => (b / a).toFixed(1) + "×";
const results = [];
for (const n of SIZES) {
  const messages = conversation(n);
  const laps = n / templates.length;
  console.log(`\nconversation: ${n.toLocaleString()} messages (${laps < 1 ? "the first of " : laps > 1 ? `${laps.toFixed(1)} laps of ` : ""}${runCount} tau-bench runs' ${templates.length.toLocaleString()}); budget ${BUDGET.toLocaleString()} tokens`);
  const selection = ours(messages, "selection only", SELECTION);
  const pipeline = ours(messages, "full pipeline: extractive summary, compression, digests", PIPELINE);
  const lc = n <= LANGCHAIN_MAX ? await langChain(messages) : null;
  if (!lc) console.log(`LangChain trimMessages: not run past ${LANGCHAIN_MAX.toLocaleString()} messages (COMPACT_LANGCHAIN_MAX)`);
  results.push({ n, selection, pipeline, lc });
}

console.log("\nside by side (ms; warm = a build with nothing new, after one append = append + build):");
console.table(
  Object.fromEntries(
    results.map(({ n, selection, pipeline, lc }) => [
      `${n.toLocaleString()} messages`,
      {
        "selection warm": +selection.warm.toFixed(2),
        "selection after append": +selection.afterAppend.toFixed(2),
        "pipeline warm": +pipeline.warm.toFixed(2),
        "pipeline after append": +pipeline.afterAppend.toFixed(2),
        "trimMessages warm": lc ? +lc.warm.toFixed(1) : "not run",
        "trimMessages after append": lc ? +lc.afterAppend.toFixed(1) : "not run",
      },
    ]),
  ),
);
console.log("speed-up of context-compactor over trimMessages (higher is better):");
console.table(
  Object.fromEntries(
    results.filter(({ lc }) => lc).flatMap(({ n, selection, pipeline, lc }) =>
      Object.entries({ "selection only": selection, "full pipeline": pipeline }).map(([label, ours]) => [
        `${n.toLocaleString()}, ${label}`,
        { cold: ratio(ours.cold, lc.cold), warm: ratio(ours.warm, lc.warm), "after one append": ratio(ours.afterAppend, lc.afterAppend) },
      ]),
    ),
  ),
);
const slowest = Math.max(...results.flatMap(({ selection, pipeline }) => [selection.warm, selection.afterAppend, pipeline.warm, pipeline.afterAppend]));
const leastAhead = Math.min(...results.filter(({ lc }) => lc).map(({ selection, lc }) => lc.warm / selection.warm));
console.log(
  `targets: warm build and append + build within 5 ms at every size: ${slowest <= 5 ? "met" : "NOT met"} (slowest ${fmt(slowest)}); ` +
    (Number.isFinite(leastAhead)
      ? `at least 500× trimMessages warm: ${leastAhead >= 500 ? "met" : "NOT met"} (${leastAhead.toFixed(0)}× at the least)`
      : "trimMessages not run"),
);
