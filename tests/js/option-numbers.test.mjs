// Options that are numbers: NaN and ±Infinity (which JSON would turn into null, i.e. "not given")
// are refused by name like any other bad number, and no option error speaks Rust ("u32",
// "invalid type", "struct …", backquoted names): it says what the option must be and what it got.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, Tokenizer, Session, InvalidArgumentError } from "context-compactor";

function history() {
  const h = new ConversationHistory({ format: "openai" });
  h.appendMany([
    { role: "system", content: "Be brief." },
    { role: "user", content: "hello" },
    { role: "assistant", content: "hi" },
  ]);
  return h;
}

const RUST_WORDS = /\b(u8|u16|u32|u64|usize|i32|i64|f64|struct|enum|variant|sequence|map)\b|invalid type|invalid value|`/;

function refused(fn, name, shown) {
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  assert.ok(error instanceof InvalidArgumentError, `${name}: ${error?.name}: ${error?.message}`);
  assert.ok(error.message.includes(name), `the message names ${name}: ${error.message}`);
  if (shown !== undefined) assert.ok(error.message.includes(shown), `the message shows ${shown}: ${error.message}`);
  assert.doesNotMatch(error.message, RUST_WORDS, "plain words");
  console.log(`# ${error.message}`);
}

test("NaN and ±Infinity are refused, naming the option", () => {
  const h = history();
  for (const value of [NaN, Infinity, -Infinity]) {
    refused(() => h.build({ budget: { maxTokens: value } }), "budget.maxTokens", String(value));
    refused(() => h.build({ budget: { contextWindow: value } }), "budget.contextWindow", String(value));
    refused(() => h.build({ maxMessages: value }), "maxMessages", String(value));
    refused(() => h.build({ summary: { triggerTokens: value } }), "summary.triggerTokens", String(value));
    refused(() => h.build({ budget: { targetRatio: value } }), "budget.targetRatio", String(value));
    refused(() => h.build({ profile: "gpt-4o", budget: { maxTokens: value } }), "budget.maxTokens", String(value));
  }
  refused(() => h.recordUsage({ prompt_tokens: 10 }, { model: "m", counted: NaN }), "counted", "NaN");
  refused(() => new Tokenizer("o200k_base").countRequest({ messages: [{ role: "user", content: "x" }] }, { imageSizes: { a: { width: NaN, height: 1 } } }), "imageSizes", "NaN");
});

test("other bad values are said in plain words", () => {
  const h = history();
  refused(() => h.build({ budget: { maxTokens: -1 } }), "budget.maxTokens", "-1");
  refused(() => h.build({ budget: { maxTokens: 1.5 } }), "budget.maxTokens", "1.5");
  refused(() => h.build({ budget: { maxTokens: "many" } }), "budget.maxTokens", '"many"');
  refused(() => h.build({ summary: { maxTokens: 1e10 } }), "summary.maxTokens", "10000000000");
  refused(() => h.build({ summary: 5 }), "summary", "5");
  refused(() => h.build({ summary: { placement: "top" } }), "summary.placement", '"top"');
  refused(() => h.build({ budgett: 3 }), "budgett");
  refused(() => h.build({ format: 3 }), "format", "3");
  refused(() => h.recordUsage({ prompt_tokens: 10 }, { model: "m", counted: -3 }), "counted", "-3");
  refused(() => new Session({ maxLoops: "ten" }), "maxLoops", '"ten"');
});
