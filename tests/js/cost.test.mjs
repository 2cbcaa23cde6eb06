// receipt.cost: what a request is expected to bill with the provider's prompt cache, and
// recordUsage setting the bill beside it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, InvalidArgumentError } from "context-compactor";

const filler = (n) => Array.from({ length: n }, (_, i) => `line ${i}: the build log says nothing new here`).join("\n");

/** An agent's turns in OpenAI format: a request, then tool calls with long outputs. */
function* turns(count) {
  yield { role: "user", content: "Fix the failing test in the parser module." };
  for (let i = 0; i < count; i++) {
    const call = { id: `call_${i}`, type: "function", function: { name: "run", arguments: JSON.stringify({ step: i }) } };
    yield { role: "assistant", content: null, tool_calls: [call] };
    yield { role: "tool", tool_call_id: call.id, content: filler(40) };
  }
}

test("OpenAI: an appended build reads its prefix back in 128-token steps, no writes", () => {
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  history.append({ role: "system", content: "You are a careful engineer." });
  let previous;
  for (const message of turns(12)) {
    history.append(message);
    if (message.role === "assistant") continue;
    const { receipt, tokens } = history.build({ budget: { maxTokens: 100_000 }, request: { model: "gpt-4o" } });
    const cost = receipt.cost;
    assert.equal(cost.cachedTokens + cost.writtenTokens + cost.uncachedTokens, tokens.total);
    assert.equal(cost.writtenTokens, 0, "OpenAI bills no cache writes");
    if (previous && receipt.cache.change === "appended" && receipt.cache.prefixTokens >= 1024) {
      assert.equal(cost.cachedTokens, Math.floor(receipt.cache.prefixTokens / 128) * 128);
      assert.ok(Math.abs(cost.units - (cost.cachedTokens * 0.5 + cost.uncachedTokens)) < 1e-6, "gpt-4o reads at half price");
    }
    previous = receipt;
  }
  assert.ok(previous.cost.cachedTokens > 1024, JSON.stringify(previous.cost));
});

test("Anthropic with cache hints: the last request is read back and the rest written; dollars with a price", () => {
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  let last;
  let cached = 0;
  for (const message of turns(12)) {
    history.append(message);
    if (message.role === "assistant") continue;
    const { receipt } = history.build({
      format: "anthropic",
      budget: { maxTokens: 100_000 },
      pricing: { model: "claude-sonnet-4-5", inputPrice: 3 },
    });
    const cost = receipt.cost;
    const billed = receipt.budget.billedTokens;
    assert.equal(cost.cachedTokens + cost.writtenTokens + cost.uncachedTokens, billed);
    if (last && last.budget.billedTokens >= 1024) {
      // The previous request (long enough to be cached) ended at a breakpoint: all of it is read,
      // what was appended is written.
      assert.ok(cost.cachedTokens > 0 && cost.cachedTokens <= last.budget.billedTokens + 1, JSON.stringify({ cost, last: last.budget }));
      assert.ok(cost.writtenTokens > 0);
      cached++;
    }
    assert.ok(Math.abs(cost.units - (0.1 * cost.cachedTokens + 1.25 * cost.writtenTokens + cost.uncachedTokens)) < 1e-6);
    assert.ok(Math.abs(cost.price - (cost.units * 3) / 1e6) < 1e-12);
    last = receipt;
  }
  assert.ok(cached >= 5, `${cached} builds read the cache`);
  // Without hints Anthropic caches nothing.
  const { receipt } = history.build({ format: "anthropic", budget: { maxTokens: 100_000 }, cache: null });
  assert.equal(receipt.cost.cachedTokens, 0);
  assert.equal(receipt.cost.writtenTokens, 0);
});

test("recordUsage sets the provider's cache figures beside the prediction", () => {
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  for (const message of turns(10)) history.append(message);
  history.build({ budget: { maxTokens: 100_000 }, request: { model: "gpt-4o" } });
  history.append({ role: "assistant", content: "Done." });
  history.append({ role: "user", content: "Thanks, now the docs." });
  const { receipt } = history.build({ budget: { maxTokens: 100_000 }, request: { model: "gpt-4o" } });
  assert.ok(receipt.cost.cachedTokens > 0);
  const prompt = receipt.tokens?.total ?? receipt.tokensAfter;
  // The provider read nothing back (an expired entry): the report says so.
  const missed = history.recordUsage({ model: "gpt-4o", usage: { prompt_tokens: prompt, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 0 } } });
  assert.deepEqual(missed.predicted, receipt.cost);
  assert.equal(missed.cacheRead, 0);
  assert.ok(missed.notes.some((n) => /read 0 tokens from its cache where the receipt predicted/.test(n)), missed.notes.join("\n"));
  // As predicted: no note about the cache.
  const hit = history.recordUsage({ model: "gpt-4o", usage: { prompt_tokens: prompt, completion_tokens: 5, prompt_tokens_details: { cached_tokens: receipt.cost.cachedTokens } } });
  assert.ok(!hit.notes.some((n) => /from its cache/.test(n)), hit.notes.join("\n"));
});

test("bad pricing is a typed error naming the field", () => {
  const history = new ConversationHistory({ encoding: "o200k_base", format: "openai" });
  history.append({ role: "user", content: "hi" });
  assert.throws(() => history.build({ pricing: { read: -1 } }), (e) => e instanceof InvalidArgumentError && /pricing\.read/.test(e.message));
  assert.throws(() => history.build({ pricing: { inputPrice: "3" } }), InvalidArgumentError);
  assert.throws(() => history.build({ pricing: { reed: 0.1 } }), (e) => e instanceof InvalidArgumentError && /reed/.test(e.message));
});
