// Summaries from a model: compact() with the fetch-based adapters against a local fake of each
// API that checks every request the way the real API would (tests/support/fake-providers.mjs).
// A failing summariser raises a SummarizerError and changes nothing; the next call succeeds.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import {
  ConversationHistory,
  compact,
  openAICompatibleSummarizer,
  anthropicSummarizer,
  validateMessages,
  SummarizerError,
  InvalidArgumentError,
  DEFAULT_SUMMARY_TIMEOUT_MS,
  Session,
  recordTurn,
} from "context-compactor";
import { startFakeProviders } from "../support/fake-providers.mjs";
import { airlineRuns, claudeCode } from "./fixtures.mjs";

const fake = await startFakeProviders({ reply: "The user rebooked two flights; a refund for HAT176 is pending." });
after(() => fake.close());

const options = { budget: { contextWindow: 20_000 }, summary: { triggerTokens: 10_000, targetTokens: 6_000 } };
// A generous timeout where the fake answers (a loaded CI machine can take a second or more), a
// short one where it never does ("slow").
const summarizers = (timeoutMs) => [
  openAICompatibleSummarizer({ baseURL: `${fake.baseURL}/v1`, model: "gpt-4o-mini", apiKey: "test-key", timeoutMs }),
  anthropicSummarizer({ baseURL: fake.baseURL, model: "claude-haiku", apiKey: "test-key", timeoutMs }),
];
const [openai, anthropic] = summarizers(30_000);
const [openaiImpatient, anthropicImpatient] = summarizers(500);

function longHistory(format = "openai") {
  const history = new ConversationHistory({ format });
  history.appendMany(airlineRuns().flatMap((run) => run.traj).slice(0, 400), "openai");
  return history;
}

const snapshot = (history) => JSON.stringify({ length: history.length, state: history.summaryState() });

for (const [name, summarize, format] of [["OpenAI-compatible", openai, "openai"], ["Anthropic", anthropic, "anthropic"]]) {
  test(`${name}: compact() sends a valid request and builds on the summary`, async () => {
    fake.state.behaviour = "ok";
    const before = fake.requests.length;
    const history = longHistory(format);
    const result = await compact(history, { ...options, format, summarize });
    const sent = fake.requests.slice(before);
    assert.equal(sent.length, 1, "one request to the summariser");
    assert.deepEqual(sent[0].violations, [], "the fake API accepted the request");
    assert.equal(sent[0].api, name === "Anthropic" ? "anthropic" : "openai");
    assert.equal(result.receipt.summary?.fresh, false, "the summary came from the model");
    assert.equal(history.summaryState().current.text, fake.state.reply);
    assert.deepEqual(validateMessages(result.messages, format), []);
    const flat = JSON.stringify(result.messages);
    assert.ok(flat.includes("HAT176 is pending"), "the summary is in the context");
  });
}

test("the Anthropic summariser also carries a Claude Code history", async () => {
  fake.state.behaviour = "ok";
  const history = new ConversationHistory({ format: "anthropic" });
  history.appendMany(claudeCode("claude-code-tool-heavy.jsonl"));
  const before = fake.requests.length;
  const result = await compact(history, {
    budget: { contextWindow: 4_000 },
    summary: { triggerTokens: 1_000, targetTokens: 600, minMessages: 2, maxTokens: 500 },
    keepRecentSteps: 1,
    summarize: anthropic,
  });
  const sent = fake.requests.slice(before);
  assert.equal(sent.length, 1, "compaction was due and the model was asked");
  assert.deepEqual(sent[0].violations, []);
  assert.deepEqual(validateMessages(result.messages, "anthropic"), []);
});

for (const [behaviour, expected] of [
  ["http-500", /HTTP 500/],
  ["http-429", /HTTP 429/],
  ["not-json", /not JSON/],
  ["malformed", /without summary text|without a content array/],
  ["empty", /without summary text|without a content array/],
  ["slow", /did not answer within 500 ms/],
]) {
  test(`a summariser failing with ${behaviour} raises SummarizerError and changes nothing`, async () => {
    const pairs = behaviour === "slow" ? [[openaiImpatient, openai], [anthropicImpatient, anthropic]] : [[openai, openai], [anthropic, anthropic]];
    for (const [summarize, retrySummarize] of pairs) {
      fake.state.behaviour = behaviour;
      const history = longHistory();
      const before = snapshot(history);
      await assert.rejects(compact(history, { ...options, summarize }), (error) => {
        assert.ok(error instanceof SummarizerError, `${error?.name}: ${error?.message}`);
        assert.match(error.message, expected);
        return true;
      });
      assert.equal(snapshot(history), before, "history and summary state are as they were");
      fake.state.behaviour = "ok";
      const retry = await compact(history, { ...options, summarize: retrySummarize });
      assert.equal(retry.receipt.summary?.fresh, false, "the next call compacts");
    }
  });
}

test("a summary the core refuses (over budget) is a SummarizerError and changes nothing", async () => {
  const history = longHistory();
  const before = snapshot(history);
  const huge = async () => "word ".repeat(50_000);
  await assert.rejects(compact(history, { ...options, summarize: huge }), SummarizerError);
  assert.equal(snapshot(history), before);
  await assert.rejects(compact(history, { ...options, summarize: async () => { throw new Error("offline"); } }), /offline/);
  await assert.rejects(compact(history, { ...options, summarize: async () => 42 }), SummarizerError);
  assert.equal(snapshot(history), before);
});

/** A summariser that never answers; it records the signals it was handed. */
function neverAnswers() {
  const signals = [];
  const summarize = (request, options) => {
    signals.push(options?.signal);
    return new Promise(() => {});
  };
  return { summarize, signals };
}

test("a summariser that never answers: compact() times out with a SummarizerError, the history as before, and the next compact() asks again", async () => {
  const history = longHistory();
  const before = snapshot(history);
  const hung = neverAnswers();
  const error = await compact(history, { ...options, summarize: hung.summarize, summaryTimeoutMs: 100 }).catch((e) => e);
  assert.ok(error instanceof SummarizerError, `${error?.name}: ${error?.message}`);
  assert.match(error.message, /did not answer within 100 ms/);
  assert.equal(hung.signals.length, 1);
  assert.ok(hung.signals[0] instanceof AbortSignal && hung.signals[0].aborted, "the summariser's signal aborted");
  assert.equal(snapshot(history), before, "no compaction left in progress");
  assert.equal(history.summaryState().inProgress ?? null, null);
  let asked = 0;
  const result = await compact(history, { ...options, summarize: async (request, { signal }) => {
    asked += 1;
    assert.equal(signal.aborted, false);
    return "The user rebooked two flights.";
  } });
  assert.equal(asked, 1, "the next compact() called the summariser again");
  assert.equal(history.summaryState().current.text, "The user rebooked two flights.");
  assert.ok(JSON.stringify(result.messages).includes("rebooked two flights"));
});

test("compact() waits two minutes by default, and summaryTimeoutMs is checked", async () => {
  const history = longHistory();
  const hung = neverAnswers();
  const started = Date.now();
  const pending = compact(history, { ...options, summarize: hung.summarize });
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal(hung.signals[0].aborted, false, "still waiting");
  assert.equal(DEFAULT_SUMMARY_TIMEOUT_MS, 120_000);
  for (const bad of [0, -1, NaN, "10"]) {
    await assert.rejects(compact(history, { ...options, summarize: hung.summarize, summaryTimeoutMs: bad }), (e) => e instanceof InvalidArgumentError && /summaryTimeoutMs/.test(e.message));
  }
  // Let the pending call go (a short timeout would have ended it; this one waits 2 minutes).
  void pending.catch(() => {});
  assert.ok(Date.now() - started < 120_000);
});

test("a fetch summariser stops its request when compact() stops waiting", async () => {
  fake.state.behaviour = "slow";
  const history = longHistory();
  const before = snapshot(history);
  const started = Date.now();
  await assert.rejects(compact(history, { ...options, summarize: openai, summaryTimeoutMs: 300 }), (e) => e instanceof SummarizerError && /within 300 ms/.test(e.message));
  assert.ok(Date.now() - started < 10_000, "it did not wait for the summariser's own 30 s timeout");
  assert.equal(snapshot(history), before);
  fake.state.behaviour = "ok";
});

test("a summariser that never answers: recordTurn() times out with a SummarizerError and records nothing", async () => {
  const session = new Session({ memory: true });
  session.history.appendMany([{ role: "user", content: "Rebook to Portland" }, { role: "assistant", content: "Rebooked." }]);
  const before = JSON.stringify(session.export());
  const hung = neverAnswers();
  await assert.rejects(recordTurn(session.memory, { workspaceContext: "x", summarize: hung.summarize, summaryTimeoutMs: 100 }), (e) => e instanceof SummarizerError && /within 100 ms/.test(e.message));
  assert.ok(hung.signals[0].aborted);
  assert.equal(JSON.stringify(session.export()), before, "nothing recorded");
  const snapshot = await recordTurn(session.memory, { workspaceContext: "x", summarize: async () => "Rebooked the user to Portland." });
  assert.equal(snapshot.summary, "Rebooked the user to Portland.");
});
