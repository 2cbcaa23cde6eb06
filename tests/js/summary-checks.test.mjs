// What completeSummary refuses as a summariser's failure (empty, over budget, without its required
// keys) is a SummarizerError, as compact() and recordTurn report it; an unknown request stays a
// lookup error. `summary: null` leaves the summary section out, even a summary stored earlier.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, Session, compact, recordTurn, SummarizerError, NotFoundError } from "context-compactor";

function longHistory(turns = 30) {
  const history = new ConversationHistory({ format: "openai" });
  history.append({ role: "system", content: "Be brief." });
  for (let i = 0; i < turns; i++) {
    history.append({ role: "user", content: `question ${i}: ` + "tell me more about the weather. ".repeat(20) });
    history.append({ role: "assistant", content: `answer ${i}: ` + "it is sunny and warm today. ".repeat(20) });
  }
  return history;
}

const external = { budget: { maxTokens: 2000 }, summary: { summarizer: "external", maxTokens: 200, requiredKeys: ["weather"] } };

test("an empty, over-budget or incomplete summary is a SummarizerError; an unknown request is not", () => {
  const history = longHistory();
  const { summaryRequest } = history.build(external);
  assert.ok(summaryRequest, "compaction is due");
  assert.throws(() => history.completeSummary("s99", "weather"), NotFoundError);
  history.beginSummary(summaryRequest.id);
  for (const [text, why] of [["   ", /empty/], ["weather ".repeat(2000), /over its budget/], ["all fine", /required keys/]]) {
    assert.throws(() => history.completeSummary(summaryRequest.id, text), (e) => e instanceof SummarizerError && why.test(e.message), why.source);
  }
  history.completeSummary(summaryRequest.id, "The user asked about the weather; it is sunny.");
});

test("compact() and recordTurn() report a refused answer as a SummarizerError and leave things as they were", async () => {
  const history = longHistory();
  await assert.rejects(compact(history, { ...external, summarize: async () => "" }), SummarizerError);
  assert.equal(history.summaryState().inProgress ?? null, null, "the compaction was cancelled");
  const next = await compact(history, { ...external, summarize: async () => "weather: sunny, the user asked about it." });
  assert.ok(next.receipt.summary, "the next compact() summarises");

  const session = new Session({ memory: true });
  session.history.append({ role: "user", content: "hello" });
  session.history.append({ role: "assistant", content: "hi" });
  await assert.rejects(
    recordTurn(session.memory, { workspaceContext: "ws", summarize: async () => "word ".repeat(5000), maxTokens: 50 }),
    (e) => e instanceof SummarizerError && /over its budget|refused/.test(e.message),
  );
  assert.deepEqual(session.memory.turns, [], "nothing recorded");
});

test("summary: null leaves out a summary stored earlier", () => {
  const history = longHistory();
  const { summaryRequest } = history.build(external);
  history.beginSummary(summaryRequest.id);
  history.completeSummary(summaryRequest.id, "The user asked about the weather; it is sunny.");
  const withSummary = history.build({ budget: { maxTokens: 2000 } });
  assert.ok(withSummary.receipt.summary, "the stored summary is in force");
  const off = history.build({ budget: { maxTokens: 2000 }, summary: null });
  assert.equal(off.receipt.summary, null);
  assert.equal(off.tokens.summary, 0);
  assert.ok(!JSON.stringify(off.messages).includes("The user asked about the weather"), "its text is not sent");
  assert.ok(off.layout.every((entry) => entry.section !== "summary"));
});
