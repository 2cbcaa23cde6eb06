// Whole requests counted as billed, through the package: tool and legacy function definitions
// as OpenAI renders them, forcing, legacy function messages, images by their size, Anthropic's
// estimate. Every figure compared with is one a provider reported or published (sources below
// and in tests/data/openai-prompt-tokens.json).
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { Tokenizer, ConversationHistory, InvalidArgumentError, InvalidMessageError } from "context-compactor";
import { cookbook } from "./fixtures.mjs";

const apiCounts = JSON.parse(readFileSync(new URL("../data/openai-prompt-tokens.json", import.meta.url), "utf8"));
const sum = (xs) => xs.reduce((a, b) => a + b, 0);

function checkParts(count, n) {
  assert.equal(count.total, count.system + count.messages + count.tools + count.toolChoice + count.replyPriming);
  assert.equal(count.perMessage.length, n);
  assert.equal(count.replyPriming, 3);
  assert.equal(count.estimate, count.estimates.length > 0);
}

test("every API-reported prompt count (gpt-3.5-turbo, cl100k_base) is matched exactly", () => {
  const tok = new Tokenizer("cl100k_base");
  for (const [i, { source, request, prompt_tokens }] of apiCounts.vectors.entries()) {
    const count = tok.countRequest(request);
    checkParts(count, request.messages.length);
    assert.equal(count.total, prompt_tokens, `vector ${i} (${apiCounts.sources[source].url})`);
    assert.equal(count.estimate, false, `vector ${i}: ${count.estimates}`);
  }
  console.log(`# ${apiCounts.vectors.length} API-reported counts matched`);
});

test("the cookbook's tool example through countRequest: 101 (gpt-4o) and 105 (gpt-4)", () => {
  const { messages, tools, expected_prompt_tokens } = cookbook().tools_example;
  for (const [encoding, model] of [["o200k_base", "gpt-4o"], ["cl100k_base", "gpt-4"]]) {
    const count = new Tokenizer(encoding).countRequest({ model, messages, tools, temperature: 0 });
    assert.equal(count.total, expected_prompt_tokens[model]);
    checkParts(count, 2);
    assert.equal(count.system + count.messages, sum(count.perMessage));
    assert.ok(count.tools > 0 && count.toolChoice === 0);
  }
});

test("legacy function calls and function messages are counted, never ignored or refused", () => {
  const tok = new Tokenizer("cl100k_base");
  // hmarr/openai-chat-tokens: the API billed 26 for this message, 15 for the function result.
  const call = { role: "assistant", content: "", function_call: { name: "do_stuff", arguments: '{"foo": "bar", "baz": 1.5}' } };
  assert.equal(tok.countMessages([call]).total, 26);
  const result = [{ role: "user", content: "hello world" }, { role: "function", name: "do_stuff", content: "{}" }];
  assert.equal(tok.countMessages(result).total, 15);
  assert.equal(tok.countRequest({ messages: result }).perMessage.length, 2);
  assert.throws(() => tok.countRequest({ messages: [{ role: "function", content: "{}" }] }), InvalidMessageError);
  // Forcing: "none" 1, a named function its name + 4 (API-reported 32 and 36 for this request).
  const functions = [{ name: "foo", parameters: { type: "object", properties: {} } }];
  const hello = [{ role: "user", content: "hello" }];
  assert.equal(tok.countRequest({ messages: hello, functions, function_call: "none" }).total, 32);
  const forced = tok.countRequest({ messages: hello, functions, function_call: { name: "foo" } });
  assert.equal(forced.total, 36);
  assert.equal(forced.toolChoice, 5);
  const asTools = tok.countRequest({ messages: hello, tools: functions.map((f) => ({ type: "function", function: f })), tool_choice: { type: "function", function: { name: "foo" } } });
  assert.equal(asTools.total, 36);
});

/** A PNG header (signature and IHDR) of the given size, base64: all a size reader needs. */
function png(width, height) {
  const bytes = new Uint8Array(33);
  bytes.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
  const view = new DataView(bytes.buffer);
  view.setUint32(16, width);
  view.setUint32(20, height);
  bytes.set([8, 6, 0, 0, 0], 24);
  return Buffer.from(bytes).toString("base64");
}

const imageMessage = (url, detail) => ({ role: "user", content: [{ type: "image_url", image_url: detail ? { url, detail } : { url } }] });

test("OpenAI images by their size: the docs' examples, tiles and patches by model", () => {
  const tok = new Tokenizer("o200k_base");
  const images = (url, options, detail) => tok.countRequest({ messages: [imageMessage(url, detail)] }, options).images;
  const data = (w, h) => `data:image/png;base64,${png(w, h)}`;
  // https://platform.openai.com/docs/guides/images-vision#calculating-costs
  assert.equal(images(data(1024, 1024), { model: "gpt-4o" }, "high"), 765);
  assert.equal(images(data(2048, 4096), { model: "gpt-4o" }, "high"), 1105);
  assert.equal(images(data(4096, 8192), { model: "gpt-4o" }, "low"), 85);
  assert.equal(images(data(1024, 1024), { model: "gpt-4.1-mini" }), Math.ceil(1024 * 1.62));
  assert.equal(images(data(1800, 2400), { model: "o4-mini" }), Math.ceil(1452 * 1.72));
  assert.equal(images(data(1024, 1024), { model: "gpt-4o-mini" }), 2833 + 4 * 5667);
  assert.equal(images(data(1024, 1024), { model: "gpt-5" }), 70 + 4 * 140);

  const url = "https://example.com/cat.png";
  const unknown = tok.countRequest({ messages: [imageMessage(url)] });
  assert.equal(unknown.images, 765);
  assert.equal(unknown.estimate, true);
  assert.match(unknown.estimates[0], /messages\[0\]\.content\[0\].*imageSizes/);
  const sized = tok.countRequest({ messages: [imageMessage(url)] }, { imageSizes: { [url]: { width: 2048, height: 4096 } } });
  assert.equal(sized.images, 1105);
  assert.equal(sized.estimate, false);

  const broken = { messages: [imageMessage("data:image/png;base64,bm90IGFuIGltYWdl")] };
  assert.equal(tok.countRequest(broken).estimate, true);
  assert.throws(() => tok.countRequest(broken, { strictImages: true }), (e) => e instanceof InvalidMessageError && e.path === "messages[0].content[0]");
});

test("Anthropic requests: images by w×h/750, tool-use prompt by model, always an estimate", () => {
  const tok = new Tokenizer("o200k_base");
  const image = (w, h) => ({ role: "user", content: [{ type: "image", source: { type: "base64", media_type: "image/png", data: png(w, h) } }] });
  // https://docs.anthropic.com/en/docs/build-with-claude/vision#calculate-image-costs
  for (const [w, h, tokens] of [[200, 200, 54], [1000, 1000, 1334], [1092, 1092, 1590]]) {
    assert.equal(tok.countRequest({ messages: [image(w, h)] }, { format: "anthropic" }).images, tokens);
  }
  const tools = [{ name: "get_weather", description: "Get the current weather in a given location", input_schema: { type: "object", properties: { location: { type: "string" } }, required: ["location"] } }];
  const messages = [{ role: "user", content: "What's the weather like in San Francisco?" }];
  const auto = tok.countRequest({ model: "claude-3-5-sonnet-20241022", system: "Be brief.", tools, messages }, { format: "anthropic" });
  const any = tok.countRequest({ model: "claude-3-5-sonnet-20241022", system: "Be brief.", tools, tool_choice: { type: "any" }, messages }, { format: "anthropic" });
  checkParts(auto, 1);
  assert.equal(auto.tools - any.tools, 346 - 313, "the documented tool-use prompts differ by tool choice");
  assert.ok(auto.system > 0 && auto.estimate);
  assert.match(auto.estimates[0], /not public/);
});

test("bad requests and options are typed errors", () => {
  const tok = new Tokenizer("o200k_base");
  const hello = [{ role: "user", content: "hi" }];
  assert.throws(() => tok.countRequest("hello"), InvalidArgumentError);
  assert.throws(() => tok.countRequest({}), /no `messages`/);
  assert.throws(() => tok.countRequest({ messages: hello, tools: [{ type: "function", function: { description: "no name" } }] }), /tools\[0\]\.function has no function name/);
  assert.throws(() => tok.countRequest({ messages: hello, tool_choice: "always" }), InvalidArgumentError);
  assert.throws(() => tok.countRequest(hello, { fromat: "openai" }), /unknown option `fromat`/);
  assert.throws(() => tok.countRequest(hello, { imageSizes: { u: { width: -1, height: 2 } } }), /positive whole number/);
  assert.throws(() => tok.countRequest([{ role: "robot", content: "x" }]), InvalidMessageError);
  // A bare list is a request too; nothing thrown leaves the tokenizer unusable.
  assert.equal(tok.countRequest(hello).total, tok.countMessages(hello).total);
});

test("reported usage anchors the next counts, and calibrates only against a whole request", () => {
  const history = new ConversationHistory({ format: "anthropic" });
  // About 2,600 tokens: whole within the 3,000-token window, too much once the window is
  // counted at the calibrated factor (3,000 / 1.3).
  for (let i = 0; i < 88; i++) {
    history.append({ role: i % 2 ? "assistant" : "user", content: `turn ${i}: ${"a fairly ordinary sentence of prose. ".repeat(1 + (i % 5))}` });
  }
  const report = history.tokenReport();
  assert.equal(report.estimate, true, "Anthropic counts are estimates");
  assert.equal(report.calibration, null, "no usage recorded yet");
  assert.equal(history.tokenCount().estimate, true);
  const options = { format: "anthropic", budget: { contextWindow: 3000, targetRatio: 1 }, summary: null };
  const before = history.build(options);
  assert.equal(before.receipt.calibration, null);

  // What an Anthropic response reports: input, cache writes and cache reads together are the bill.
  const response = { model: "claude-sonnet-4-5", usage: { input_tokens: 40, cache_creation_input_tokens: 0, cache_read_input_tokens: Math.round(before.tokens.total * 1.3) - 40, output_tokens: 12 } };
  // Paired with the context's messages alone (the default), the bill anchors the next counts
  // and is not learnt: it may hold a system prompt and tools the count never saw.
  const anchored = history.recordUsage(response);
  assert.deepEqual(
    [anchored.calibrated, anchored.anchored, anchored.countedWholeRequest, anchored.prompt, anchored.billedInput, anchored.output, anchored.counted],
    [false, true, false, Math.round(before.tokens.total * 1.3), 40, 12, before.tokens.total],
  );
  assert.match(anchored.notes[0], /not calibrated/);
  const count = history.tokenCount();
  assert.deepEqual([count.basis, count.total, count.anchored.prompt], ["anchored", anchored.prompt, anchored.prompt]);
  assert.equal(history.tokenReport().basis, "anchored");
  assert.equal(history.build(options).receipt.calibration, null, "nothing learnt");

  // Paired with the caller's count of the whole request (here the context was all that was sent),
  // the bill calibrates: budgets use the top of the band.
  const calibrating = history.recordUsage(response, { counted: before.tokens.total });
  assert.ok(calibrating.calibrated && calibrating.countedWholeRequest);
  const factor = calibrating.calibration;
  assert.equal(factor.model, "claude-sonnet-4-5");
  assert.equal(factor.observations, 1);
  assert.ok(Math.abs(factor.factor - 1.3) < 0.01 && factor.high > factor.factor && factor.low < factor.factor);

  const after = history.build(options);
  const { calibration, budget, withinBudget } = after.receipt;
  assert.equal(calibration.model, "claude-sonnet-4-5");
  assert.ok(withinBudget && calibration.upper <= 3000, `billed at most ${calibration.upper} of 3000`);
  assert.ok(budget.maxTokens < 3000 / 1.3, `counted budget ${budget.maxTokens}`);
  assert.equal(before.tokens.total, history.tokenReport().counted, "uncalibrated, the history fits whole");
  // The context sent before no longer fits the calibrated budget: a compaction event, down to
  // the low-water mark (and not below it).
  assert.ok(after.receipt.cache.event && after.receipt.cache.reason === "budget", JSON.stringify(after.receipt.cache));
  assert.ok(after.tokens.total < before.tokens.total && after.tokens.total <= budget.maxTokens);
  assert.ok(after.tokens.total >= budget.lowWaterTokens, `down to the mark: ${after.tokens.total} of ${budget.lowWaterTokens}`);
  assert.equal(history.tokenReport().calibration.model, "claude-sonnet-4-5");

  assert.throws(() => history.recordUsage({ input_tokens: 10 }), /model/);
  assert.throws(() => history.recordUsage({ output_tokens: 10 }, { model: "m" }), InvalidArgumentError);
  assert.throws(() => history.recordUsage({ input_tokens: 10 }, { model: "m", counted: -3 }), /options: counted must be a whole number, 0 or more, got -3/);
  assert.throws(() => history.recordUsage({ prompt_tokens: 10 }, { modle: "m" }), /unknown field "modle"/);
  assert.equal(history.recordUsage({ prompt_tokens: 500 }, { model: "gpt-4o", counted: 400 }).calibration.factor, 1.25);
});
