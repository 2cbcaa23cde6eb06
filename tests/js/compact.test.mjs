// The compaction engine through the package: a context built to a budget is valid for the
// provider and within budget, the receipt accounts for every stored message, and the summary
// lifecycle (external summariser) refuses a second concurrent compaction.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, validateMessages, resolveProfile, profileNames, ConflictError, NotFoundError, SummarizerError } from "context-compactor";
import { airlineRuns, claudeCode } from "./fixtures.mjs";

const allMessages = () => airlineRuns().flatMap((run) => run.traj);

// The runs account for every stored message by id, in order, and expand to the per-message entries.
function assertReceiptCovers(receipt, history) {
  const ids = history.ids();
  const entries = history.receiptEntries();
  assert.deepEqual(entries.map((e) => e.id), ids, "one receipt entry per stored message");
  let at = 0;
  for (const run of receipt.runs) {
    assert.equal(run.from, ids[at]);
    assert.equal(run.to, ids[at + run.count - 1]);
    const members = entries.slice(at, at + run.count);
    assert.ok(members.every((e) => e.action === run.action && e.reason === run.reason), `${run.from}..${run.to} alike`);
    assert.equal(members.reduce((n, e) => n + e.tokensAfter, 0), run.tokensAfter);
    at += run.count;
  }
  assert.equal(at, history.length, "the runs cover the history");
}

test("the 1,780-message airline conversation (~145k tokens) builds to a 100k budget, valid for both providers", () => {
  const history = new ConversationHistory();
  history.appendMany(allMessages());
  for (const format of ["openai", "anthropic"]) {
    const result = history.build({ format, budget: { contextWindow: 100_000, targetRatio: 1 } });
    assert.deepEqual(validateMessages(result.messages, format), [], `${format} output is valid`);
    assert.ok(result.receipt.withinBudget);
    assert.ok(result.tokens.total <= 100_000, `${result.tokens.total} tokens`);
    assertReceiptCovers(result.receipt, history);
    assert.equal(history.length, 1780, "the stored history never changes");
    console.log(`# ${format}: ${result.layout.length} messages, ${result.tokens.total} tokens, summary ${result.tokens.summary}`);
  }
});

test("an external summary goes through begin/complete, and a second compaction conflicts", () => {
  const history = new ConversationHistory();
  history.appendMany(allMessages().slice(0, 400));
  const options = { budget: { contextWindow: 20_000 }, summary: { summariser: "external", triggerTokens: 10_000, targetTokens: 6_000 } };
  const first = history.build(options);
  assert.ok(first.summaryRequest, "compaction is due");
  assert.deepEqual(validateMessages(first.summaryRequest.messages, "openai"), [], "the summary request is sendable as is");
  const { id } = first.summaryRequest;
  history.beginSummary(id);
  assert.throws(() => history.beginSummary(id), ConflictError);
  assert.throws(() => history.completeSummary(id, "   "), SummarizerError, "an empty summary is refused");
  const record = history.completeSummary(id, "The user changed two reservations; one refund is pending.");
  assert.equal(record.summarisedUntil, first.summaryRequest.until);
  const after = history.build(options);
  assert.equal(after.receipt.summary?.requestId, id);
  assert.deepEqual(validateMessages(after.messages, "openai"), []);
  assert.equal(history.summaryState().current.text, record.text);
});

test("profiles resolve by model name and unknown ones are refused", () => {
  assert.ok(profileNames().includes("init") && profileNames().includes("execute"));
  const init = resolveProfile("init");
  assert.equal(init.contextWindow, 200_000);
  assert.equal(init.triggerFraction, 0.75);
  assert.throws(() => resolveProfile("no-such-model"), NotFoundError);
  const history = new ConversationHistory();
  history.appendMany(allMessages().slice(0, 50));
  assert.deepEqual(validateMessages(history.build({ profile: "gpt-4o" }).messages, "openai"), []);
});

test("built messages are frozen and shared between builds: a caller cannot corrupt a later build", () => {
  const history = new ConversationHistory();
  // About 300 messages, up to a user's request: the last message is the latest request, pinned.
  const all = allMessages();
  history.appendMany(all.slice(0, all.findLastIndex((m, i) => i < 300 && m.role === "user") + 1));
  const options = { budget: { contextWindow: 20_000, targetRatio: 1 }, summary: null };
  const first = history.build(options);
  const again = history.build(options);
  assert.notEqual(again.messages, first.messages, "the list is the caller's own");
  assert.equal(again.messages.at(-1), first.messages.at(-1), "an unchanged message is the same object");
  const message = first.messages.at(-1);
  assert.ok(Object.isFrozen(message));
  assert.throws(() => { message.content = "changed"; }, TypeError);
  const nested = first.messages.find((m) => Array.isArray(m.tool_calls));
  assert.throws(() => nested.tool_calls.push({}), TypeError, "frozen all the way down");
  first.messages.length = 0; // the list itself may be changed freely
  assert.deepEqual(history.build(options).messages, again.messages);
  history.append({ role: "user", content: "and one more" });
  const appended = history.build(options);
  assert.equal(appended.messages.at(-1).content, "and one more");
  assert.deepEqual(validateMessages(appended.messages, "openai"), []);
  assert.ok(appended.messages.includes(again.messages.at(-1)), "after an append, messages still in the context are the same objects");
  // Layout entries and receipt runs are shared the same way, and frozen too. Between compaction
  // events what was sent stays as it was (the last message, the pinned latest request then,
  // keeps its entry); the appended message comes after it.
  assert.equal(again.layout.at(-1).section, "pinned");
  assert.equal(appended.layout.at(-2), again.layout.at(-1));
  assert.equal(appended.layout.at(-1).section, "recent");
  assert.equal(appended.layout.at(-3), again.layout.at(-2));
  assert.ok(Object.isFrozen(appended.layout[0]) && Object.isFrozen(appended.layout[0].sources));
  assert.ok(Object.isFrozen(appended.receipt.runs[0]));
  assert.throws(() => { appended.receipt.runs[0].count = 0; }, TypeError);
  // Objects are per format: an Anthropic build of the same history shares none of them.
  const anthropic = history.build({ ...options, format: "anthropic" });
  assert.deepEqual(validateMessages(anthropic.messages, "anthropic"), []);
  assert.ok(!anthropic.messages.messages.some((m) => appended.messages.includes(m)));
  assert.deepEqual(history.build(options).messages, appended.messages);
});

test("layout[i] describes messages[i]; a bare Anthropic list validates; moved results are reported", () => {
  const history = new ConversationHistory({ format: "anthropic" });
  history.appendMany({ system: "You are Claude Code.", messages: claudeCode("claude-code-tool-heavy.jsonl") });
  for (const max of [60_000, 3_000]) {
    const result = history.build({ format: "anthropic", budget: { maxTokens: max } });
    assert.equal(result.layout.length, result.messages.messages.length, `${max}: one layout entry per message sent`);
    assert.ok(result.layout.every((entry) => entry.sources.length > 0 || entry.section !== "recent"));
    assert.deepEqual(result.systemLayout.sources, ["m1"]);
    assert.deepEqual(validateMessages(result.messages.messages, "anthropic"), [], "a bare message array");
    // Merged same-role messages: the entry names every stored message it carries.
    const merged = result.layout.filter((entry) => entry.sources.length > 1);
    if (max === 60_000) assert.ok(merged.length > 0, "Claude Code splits one reply into several records");
  }
  const openai = new ConversationHistory({ format: "openai" });
  openai.appendMany([
    { role: "user", content: "go" },
    { role: "assistant", content: null, tool_calls: [{ id: "a", type: "function", function: { name: "f", arguments: "{}" } }] },
    { role: "user", content: "still there?" },
    { role: "tool", tool_call_id: "a", content: "A" },
  ]);
  const late = openai.build({ format: "openai" });
  assert.deepEqual(late.receipt.repairs, [{ id: "m4", kind: "movedResult", callId: "a" }]);
  assert.deepEqual(late.layout.map((e) => e.sources), [["m1"], ["m2"], ["m4"], ["m3"]]);
  assert.equal(late.layout.length, late.messages.length);
});

test("appendMany(list, { repair: true }) imports a log cut at its head; strict stays the default", () => {
  const log = claudeCode("claude-code-tool-heavy.jsonl");
  const cut = log.findIndex((m) => m.role === "user" && Array.isArray(m.content) && m.content.some((b) => b.type === "tool_result"));
  const resumed = log.slice(cut);
  const strict = new ConversationHistory({ format: "anthropic" });
  assert.throws(() => strict.appendMany(resumed), /no earlier assistant message made/);
  assert.equal(strict.length, 0);
  const lenient = new ConversationHistory({ format: "anthropic" });
  const { ids, repairs } = lenient.appendMany(resumed, { repair: true });
  assert.equal(ids.length, resumed.length);
  assert.equal(repairs[0].index, 0);
  assert.equal(repairs[0].kind, "orphanResult");
  const first = lenient.get("m1");
  assert.match(JSON.stringify(first.content), /output of tool call toolu_/);
  assert.deepEqual(validateMessages(lenient.build({ format: "anthropic", budget: { maxTokens: 6_000 } }).messages, "anthropic"), []);
  // The format may be given in the options too; without repair the result is the ids.
  assert.deepEqual(new ConversationHistory().appendMany([{ role: "user", content: "hi" }], { format: "openai" }), ["m1"]);
});
