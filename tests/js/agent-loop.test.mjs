// The agent loop of docs/sessions.md, replayed: 200 turns of the airline runs (tests/fixtures) go through
// a session's history, memory and compaction with the built-in summariser. Every context built
// must pass the provider's rules and fit the budget, and recall_context must bring back every
// turn the last context left out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Session, Tokenizer, validateMessages } from "context-compactor";
import { airlineRuns } from "./fixtures.mjs";

const TURNS = 200;

/** Turns of the fixture runs: a user message and everything up to the next one. */
function fixtureTurns() {
  const turns = [];
  for (const [r, run] of airlineRuns().entries()) {
    for (const message of run.traj) {
      if (message.role === "system") {
        if (r === 0) turns.push([message]);
        continue;
      }
      if (message.role === "user" || turns.length === 0) turns.push([]);
      turns.at(-1).push(message);
    }
    if (turns.length > TURNS) break;
  }
  // The first entry holds the system prompt alone: it rides with the first turn.
  const [system, ...rest] = turns;
  rest[0] = [...system, ...rest[0]];
  return rest.slice(0, TURNS);
}

test(`${TURNS} replayed turns: every context is valid and within budget, and recall brings back every dropped turn`, () => {
  const session = new Session({ memory: true, maxLoops: TURNS, encoding: "o200k_base" });
  const { history, memory } = session;
  const tokenizer = new Tokenizer("o200k_base");
  const budget = { contextWindow: 16_000 };
  let last;
  let summaries = 0;
  let memoryBuilds = 0;
  let leftTurnsOut = 0;
  for (const [i, turn] of fixtureTurns().entries()) {
    session.nextLoop();
    history.appendMany(turn, "openai");
    // Build the context the next model call would get, alternating providers.
    const format = i % 2 === 0 ? "openai" : "anthropic";
    const result = history.build({ format, budget, summary: { triggerTokens: 8_000, targetTokens: 5_000 }, keepRecentSteps: 3 });
    assert.deepEqual(validateMessages(result.messages, format), [], `turn ${i + 1} (${format}): valid`);
    // Builds budget in the encoding's units; an Anthropic context counted by Claude's billing rule
    // (countMessages) is larger: its budget holds the build's own count until builds count by it.
    const counted = format === "openai" ? tokenizer.countMessages(result.messages, { format }).total : result.tokens.total;
    assert.ok(result.receipt.withinBudget, `turn ${i + 1}: within budget`);
    assert.ok(counted <= result.receipt.budget.maxTokens, `turn ${i + 1}: ${counted} tokens > ${result.receipt.budget.maxTokens}`);
    if (result.newSummary) summaries += 1;
    // The memory's turn summaries stand in for the recorded turns the context does not hold whole.
    const used = result.receipt.memory;
    if (used) {
      const text = JSON.stringify(result.messages);
      for (const t of used.turns) assert.ok(text.includes(`[Turn ${t}] `), `turn ${i + 1}: the summary of turn ${t} is in the context`);
      assert.ok(result.tokens.summary >= used.tokens && used.turns.length + used.omitted.length > 0);
      memoryBuilds += used.turns.length > 0 ? 1 : 0;
    }
    // A history that fits is kept verbatim. One that does not leaves recorded turns out: the
    // summary (or its bridge) covers them, so nothing is dropped uncovered, and the receipt's
    // memory accounts for each of them (its summary in the context, or omitted for lack of room:
    // the recent messages take what the summary section leaves).
    // Anthropic's top-level system prompt is described by systemLayout, the messages by layout.
    const shown = new Set([...result.layout, ...(result.systemLayout ? [result.systemLayout] : [])].flatMap((entry) => entry.sources));
    const whole = history.ids().every((id) => shown.has(id));
    const dropped = result.receipt.runs.filter((run) => run.action === "dropped" && run.reason !== "repair");
    assert.deepEqual(dropped, [], `turn ${i + 1}: nothing dropped uncovered`);
    if (!whole && memory.turns.length > 0) {
      leftTurnsOut += 1;
      assert.ok(used && used.turns.length + used.omitted.length > 0, `turn ${i + 1}: history not shown whole, its turns unaccounted`);
    }
    memory.recordTurn({ workspaceContext: `Turn ${i + 1}: ${turn.length} messages; last role ${turn.at(-1).role}` });
    last = result;
  }
  assert.equal(memory.turns.length, TURNS);
  assert.ok(summaries >= 2, `the built-in summariser ran (${summaries} summaries)`);
  assert.ok(leftTurnsOut > TURNS / 2, `the history outgrew the budget (${leftTurnsOut} builds)`);
  assert.ok(memoryBuilds > 0, `turn summaries went in where the summary section left room (${memoryBuilds} builds)`);

  // What the last context no longer shows comes back through recall_context, turn by turn.
  const shown = new Set([...last.layout, ...(last.systemLayout ? [last.systemLayout] : [])].flatMap((entry) => entry.sources));
  let recalledTurns = 0;
  const summarised = new Set([...last.receipt.memory.turns, ...last.receipt.memory.omitted]);
  for (const snapshot of memory.contexts) {
    const ids = history.ids().slice(Number(snapshot.messages.from.slice(1)) - 1, Number(snapshot.messages.until.slice(1)));
    // The last context was built before the last turn was recorded.
    if (snapshot.turnNumber < TURNS) {
      assert.equal(summarised.has(snapshot.turnNumber), !ids.every((id) => shown.has(id)), `turn ${snapshot.turnNumber}: summarised iff not shown whole`);
    }
    if (ids.some((id) => shown.has(id))) continue;
    const recalled = memory.recall({ turnNumbers: [snapshot.turnNumber] }, { maxTokens: 50_000 });
    assert.equal(recalled.truncated, false);
    assert.deepEqual(recalled.turns[0].messages.map((m) => m.id), ids, `turn ${snapshot.turnNumber} comes back whole`);
    recalledTurns += 1;
  }
  assert.ok(recalledTurns > TURNS / 2, `most turns were dropped and recalled (${recalledTurns})`);
  // And a search finds a dropped message by what it said.
  const firstUser = history.get("m2");
  const hits = memory.search(firstUser.content.split(/\s+/).slice(0, 12).join(" "), { limit: 3 });
  assert.ok(hits.some((h) => h.id === "m2"), JSON.stringify(hits));
});
