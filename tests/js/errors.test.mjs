// Invalid input from JS throws a ContextCompactorError subclass that names the problem and the
// message index; every error of the package is an instance of the exported classes.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  Tokenizer,
  ConversationHistory,
  convertMessages,
  ContextCompactorError,
  InvalidMessageError,
  InvalidArgumentError,
  NotFoundError,
  ConflictError,
  InternalError,
} from "context-compactor";

const ok = { role: "user", content: "hello" };
const call = { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "f", arguments: "{}" } }] };

/** Runs fn, expects `cls`; checks the error's shape and that its message matches `re`. */
function expectError(fn, cls, re, index) {
  let error;
  try {
    fn();
  } catch (e) {
    error = e;
  }
  assert.ok(error, "it throws");
  assert.ok(error instanceof cls, `${error?.name}: ${error?.message} is a ${cls.name}`);
  assert.ok(error instanceof ContextCompactorError && error instanceof Error);
  assert.equal(error.name, cls.name);
  assert.equal(typeof error.code, "string");
  assert.match(error.message, re);
  if (index !== undefined) {
    assert.equal(error.index, index, "error.index");
    assert.match(error.message, new RegExp(`message ${index}\\b`), "the message names the index");
    assert.match(error.path, new RegExp(`^messages\\[${index}\\]`), "error.path");
  }
  console.log(`# ${cls.name}: ${error.message}`);
  return error;
}

test("error classes: names, codes, inheritance", () => {
  for (const [cls, code] of [
    [InvalidMessageError, "InvalidMessage"],
    [InvalidArgumentError, "InvalidArgument"],
    [NotFoundError, "NotFound"],
    [ConflictError, "Conflict"],
    [InternalError, "Internal"],
  ]) {
    const e = new cls("boom", { index: 2, path: "messages[2]" });
    assert.ok(e instanceof ContextCompactorError && e instanceof Error);
    assert.equal(e.name, cls.name);
    assert.equal(e.code, code);
    assert.equal(e.index, 2);
    assert.equal(e.path, "messages[2]");
    assert.ok(e.stack.includes("boom"));
  }
});

test("not an array (an argument error: no message to point at)", () => {
  const tok = new Tokenizer("o200k_base");
  for (const bad of ["hello", 42, { role: "user", content: "x" }, null, true]) {
    expectError(() => tok.countMessages(bad), InvalidArgumentError, /expected an array of OpenAI messages/);
  }
  expectError(() => tok.countMessages("hello", { format: "anthropic" }), InvalidArgumentError, /expected an array of Anthropic messages/);
  const h = new ConversationHistory();
  expectError(() => h.appendMany("hello"), InvalidArgumentError, /array/);
  expectError(() => convertMessages(7, "openai", "anthropic"), InvalidArgumentError, /array/);
});

test("unknown role, with the index of the message", () => {
  const tok = new Tokenizer("o200k_base");
  expectError(() => tok.countMessages([ok, ok, { role: "robot", content: "x" }]), InvalidMessageError, /unknown role "robot"/, 2);
  const h = new ConversationHistory();
  expectError(() => h.appendMany([ok, { role: "wizard", content: "x" }]), InvalidMessageError, /unknown role "wizard"/, 1);
  expectError(() => h.appendMany([ok, { role: "tool", content: "x" }], "anthropic"), InvalidMessageError, /role/, 1);
});

test("tool message without an id, with the index", () => {
  const tok = new Tokenizer("o200k_base");
  const e = expectError(() => tok.countMessages([ok, call, { role: "tool", content: "42" }]), InvalidMessageError, /tool_call_id/, 2);
  assert.equal(e.path, "messages[2].tool_call_id");
  expectError(() => tok.countMessages([ok, { role: "tool", tool_call_id: 5, content: "x" }]), InvalidMessageError, /tool_call_id/, 1);
  expectError(
    () => tok.countMessages([{ role: "user", content: [{ type: "tool_result", content: "x" }] }], { format: "anthropic" }),
    InvalidMessageError,
    /tool_use_id/,
    0,
  );
});

test("wrong types, with the index", () => {
  const tok = new Tokenizer("o200k_base");
  expectError(() => tok.countMessages([{ role: "user", content: 42 }]), InvalidMessageError, /content/, 0);
  expectError(() => tok.countMessages([ok, { role: 7, content: "x" }]), InvalidMessageError, /role/, 1);
  expectError(() => tok.countMessages([ok, ok, ok, "just a string"]), InvalidMessageError, /object|string/, 3);
  expectError(() => tok.countMessages([{ role: "assistant", tool_calls: "nope" }]), InvalidMessageError, /tool_calls/, 0);
  expectError(() => tok.countMessages([{ role: "assistant", tool_calls: [{ id: "c", type: "function", function: { name: "f", arguments: {} } }] }]), InvalidMessageError, /arguments/, 0);
  expectError(() => tok.countMessages([{ role: "user", name: 3, content: "x" }]), InvalidMessageError, /name/, 0);
});

test("a single append names the message, not an index", () => {
  const h = new ConversationHistory();
  const e = expectError(() => h.append({ role: "tool", content: "x" }), InvalidMessageError, /tool_call_id/);
  assert.equal(e.index, undefined);
  assert.equal(h.length, 0);
});

test("tool results must answer an earlier call", () => {
  const h = new ConversationHistory();
  expectError(() => h.appendMany([ok, { role: "tool", tool_call_id: "zz", content: "x" }]), InvalidMessageError, /"zz"/, 1);
  assert.equal(h.length, 0);
});

test("appendMany is all or nothing", () => {
  const h = new ConversationHistory();
  h.append(ok);
  const before = h.messages();
  expectError(() => h.appendMany([ok, ok, call, { role: "tool", content: "no id" }]), InvalidMessageError, /tool_call_id/, 3);
  assert.equal(h.length, 1);
  assert.deepEqual(h.messages(), before);
  assert.deepEqual(h.appendMany([ok]), ["m2"], "ids continue where they were");
});

test("invalid arguments", () => {
  const tok = new Tokenizer("cl100k_base");
  expectError(() => tok.count(42), InvalidArgumentError, /text must be a string/);
  expectError(() => tok.encode({}), InvalidArgumentError, /text must be a string/);
  expectError(() => tok.countMessages([ok], { format: "gemini" }), InvalidArgumentError, /gemini/);
  expectError(() => tok.countMessages([ok], { formt: "openai" }), InvalidArgumentError, /formt/);
  expectError(() => tok.countMessages([ok], "openai"), InvalidArgumentError, /options/);
  expectError(() => new ConversationHistory({ encoding: "gpt2" }), InvalidArgumentError, /gpt2/);
  expectError(() => new ConversationHistory({ format: "xml" }), InvalidArgumentError, /xml/);
  expectError(() => new ConversationHistory("o200k_base"), InvalidArgumentError, /options/);
  const h = new ConversationHistory();
  expectError(() => h.append(ok, "gemini"), InvalidArgumentError, /gemini/);
  expectError(() => h.messages("gemini"), InvalidArgumentError, /gemini/);
  expectError(() => h.get(1), InvalidArgumentError, /id/);
  // A message that is not an object is an invalid message, whatever it is.
  for (const notAnObject of [undefined, null, 5, "hi"]) expectError(() => h.append(notAnObject), InvalidMessageError, /a message must be an object/);
});

test("values JSON cannot hold are refused by name", () => {
  const tok = new Tokenizer("o200k_base");
  const cyclic = { role: "user", content: "x" };
  cyclic.self = cyclic;
  expectError(() => tok.countMessages([cyclic]), InvalidArgumentError, /JSON.*circular/i);
  expectError(() => tok.countMessages([{ role: "user", content: 10n }]), InvalidArgumentError, /JSON.*BigInt/i);
});

test("a freed object throws, it does not trap", () => {
  const tok = new Tokenizer("o200k_base");
  tok.free();
  assert.throws(() => tok.count("x"), Error);
});

test("a free() from inside a call that uses the object is refused, and the object stays usable", () => {
  const history = new ConversationHistory({ format: "openai" });
  history.append(ok);
  let refused;
  const sneaky = {
    role: "user",
    content: "x",
    toJSON() {
      try {
        history.free();
      } catch (error) {
        refused = error;
      }
      return { role: "user", content: "outer" };
    },
  };
  history.append(sneaky);
  assert.ok(refused instanceof ConflictError, `${refused?.name}: ${refused?.message}`);
  assert.match(refused.message, /ConversationHistory\.free: .*in use by a call that has not returned.*stays usable/);
  assert.equal(history.length, 2, "the append went through and the history is still reachable");
  history.append({ role: "assistant", content: "after" });
  assert.deepEqual(history.messages().map((m) => m.content), ["hello", "outer", "after"]);
  // Once the call has returned, free() works as ever.
  history.free();
  assert.throws(() => history.length, InvalidArgumentError);
});
