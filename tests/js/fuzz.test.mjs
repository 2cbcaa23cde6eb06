// Garbage in, typed errors out: thousands of random JSON-ish and non-JSON values (wrong types, huge
// numbers, NaN, undefined, symbols, BigInt, cycles, deep nesting, throwing getters and proxies,
// mutated real messages) go through every entry point. Each call either works or throws a
// ContextCompactorError subclass (never a RuntimeError from a trap, never a plain Error), and
// afterwards the same instances still work and still hold what they held.
// FUZZ_SEED and FUZZ_ITERATIONS override the defaults.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tokenizer, ConversationHistory, convertMessages, ContextCompactorError } from "context-compactor";
import { airlineRuns, claudeCode } from "./fixtures.mjs";

const SEED = Number(process.env.FUZZ_SEED ?? 20241122);
const ITERATIONS = Number(process.env.FUZZ_ITERATIONS ?? 6000);

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(SEED);
const int = (n) => Math.floor(rand() * n);
const pick = (xs) => xs[int(xs.length)];

const KEYS = ["role", "content", "name", "tool_calls", "tool_call_id", "tool_call_ids", "type", "text", "id", "function",
  "arguments", "input", "tool_use_id", "thinking", "signature", "image_url", "url", "source", "system", "messages",
  "format", "encoding", "tools", "is_error", "cache_control", "__proto__", "constructor", "toString", "", "💥"];
const STRINGS = ["", "user", "assistant", "system", "tool", "developer", "robot", "openai", "anthropic", "o200k_base",
  "cl100k_base", "estimate", "text", "tool_use", "tool_result", "thinking", "image", "image_url", "function", "m1", "m2",
  "m99999999999", "call_1", "<|endoftext|>", "<|im_start|>", "\uD800", "a\uDFFFb\uD800", "😀🇪🇸", "\0\u0001", "\\u0000",
  "{\"a\":1}", "{not json", "null", "[]", "   ", "ß".repeat(50), "-1", "NaN"];
const NUMBERS = [0, -0, 1, -1, 3, 0.5, NaN, Infinity, -Infinity, 1e308, -1e308, 2 ** 53 + 1, 2 ** 32, Number.MAX_VALUE,
  Number.MIN_VALUE, 4294967295, 4294967296, -2147483649];

function deep(levels, leaf) {
  let v = leaf;
  for (let i = 0; i < levels; i++) v = rand() < 0.5 ? [v] : { content: v };
  return v;
}

function exotic() {
  switch (int(16)) {
    case 0: { const o = { role: "user", content: "x" }; o.self = o; return o; }
    case 1: { const a = [{ role: "user", content: "x" }]; a.push(a); return a; }
    case 2: return { role: "user", get content() { throw new Error("getter boom"); } };
    case 3: return new Proxy([], { get() { throw new TypeError("proxy boom"); }, ownKeys() { throw new TypeError("keys boom"); } });
    case 4: return new Proxy({ role: "user", content: "x" }, {});
    case 5: return { toJSON() { throw new RangeError("toJSON boom"); } };
    case 6: return { toJSON() { return [{ role: "user", content: "from toJSON" }]; } };
    case 7: return Object.create(null);
    case 8: return pick([new Date(0), new Map([[1, 2]]), new Set([1]), /re/g, new Uint8Array(3), new ArrayBuffer(4), new WeakMap(), Promise.resolve(1), new Error("e")]);
    case 9: return pick([new String("user"), new Number(3), new Boolean(false), Object(Symbol("boxed")), Object(10n)]);
    case 10: { const a = []; a[5] = { role: "user", content: "sparse" }; return a; }
    case 11: return deep(100 + int(200), { role: "user", content: "deep" });
    case 12: return deep(pick([1000, 5000]), "deeper");
    case 13: return pick(["a".repeat(100000), "😀".repeat(20000), "<|endoftext|>".repeat(2000)]);
    case 14: return () => "fn";
    default: return Object.assign([{ role: "user", content: "x" }], { extra: 1 });
  }
}

function garbage(depth = 0) {
  const r = rand();
  if (r < 0.05) return undefined;
  if (r < 0.08) return null;
  if (r < 0.1) return rand() < 0.5;
  if (r < 0.2) return pick(NUMBERS);
  if (r < 0.23) return pick([10n, -(2n ** 70n), 0n]);
  if (r < 0.25) return Symbol(pick(STRINGS));
  if (r < 0.42) return pick(STRINGS);
  if (r < 0.47) return exotic();
  if (depth > 4) return pick(STRINGS);
  if (r < 0.62) return Array.from({ length: int(5) }, () => garbage(depth + 1));
  if (r < 0.8) {
    const o = {};
    // defineProperty: `__proto__` becomes an own key, and no inherited setter gets in the way.
    for (let i = int(5); i > 0; i--) Object.defineProperty(o, pick(KEYS), { value: garbage(depth + 1), enumerable: true, writable: true, configurable: true });
    return o;
  }
  return mutate(pick(REAL));
}

/** A real message (or list) with one value somewhere inside replaced by garbage, or a key dropped. */
function mutate(value) {
  const copy = structuredClone(value);
  const paths = [];
  (function walk(v, path) {
    if (v && typeof v === "object") for (const k of Object.keys(v)) { paths.push([...path, k]); walk(v[k], [...path, k]); }
  })(copy, []);
  if (paths.length === 0) return copy;
  const path = pick(paths);
  let parent = copy;
  for (const k of path.slice(0, -1)) parent = parent[k];
  const key = path.at(-1);
  if (rand() < 0.3) delete parent[key];
  else parent[key] = garbage(5);
  return copy;
}

const tau = airlineRuns()[0].traj;
const claude = claudeCode("claude-code-tool-heavy.jsonl");
const REAL = [...tau.slice(0, 12), tau.slice(0, 10), ...claude.slice(0, 8), claude.slice(0, 6), { messages: claude.slice(0, 3) }];
const fmt = () => (rand() < 0.7 ? pick(["openai", "anthropic", undefined]) : garbage(3));

function describe(v) {
  try {
    const s = typeof v === "symbol" || typeof v === "bigint" ? String(v) : JSON.stringify(v);
    return (s ?? String(v)).slice(0, 120);
  } catch (e) {
    return `<${Object.prototype.toString.call(v)}: ${e.message.split("\n")[0]}>`;
  }
}

test(`fuzz: ${ITERATIONS} calls with garbage (seed ${SEED}) throw only ContextCompactorError, and the instances survive`, () => {
  const tok = new Tokenizer("o200k_base");
  const history = new ConversationHistory();
  const baseIds = history.appendMany(tau.slice(0, 12));
  const baseMessages = history.messages();
  const baseCount = history.tokenCount();
  const anthropicHistory = new ConversationHistory({ format: "anthropic" });
  const anthropicIds = anthropicHistory.appendMany(claude);

  const ops = {
    "new Tokenizer": () => new Tokenizer(garbage()).free(),
    "count": () => tok.count(garbage()),
    "encode": () => tok.encode(garbage()),
    "countMessages": () => tok.countMessages(garbage(), rand() < 0.5 ? undefined : rand() < 0.5 ? { format: fmt(), tools: garbage(2) } : garbage()),
    "new ConversationHistory": () => new ConversationHistory(rand() < 0.5 ? garbage() : { encoding: garbage(3), format: fmt() }).free(),
    "append": () => history.append(garbage(), fmt()),
    "appendMany": () => history.appendMany(garbage(), fmt()),
    // In its own format only: an OpenAI message whose arguments are not JSON is valid OpenAI, but
    // an Anthropic history could not emit it (see the report on mixed formats).
    "anthropic append": () => anthropicHistory.append(garbage(), rand() < 0.8 ? undefined : garbage(3)),
    "get": () => history.get(rand() < 0.5 ? pick(baseIds) : garbage()),
    "messages": () => history.messages(fmt()),
    "tokenCount": () => history.tokenCount(),
    "convertMessages": () => convertMessages(garbage(), fmt(), fmt()),
  };
  const names = Object.keys(ops);
  const stats = Object.fromEntries(names.map((n) => [n, { ok: 0, threw: 0 }]));
  const failures = [];
  let appended = 0;

  for (let i = 0; i < ITERATIONS; i++) {
    const name = pick(names);
    const lengthBefore = history.length;
    try {
      const result = ops[name]();
      stats[name].ok++;
      if (name === "append") appended += 1;
      if (name === "appendMany") appended += result.length;
    } catch (error) {
      stats[name].threw++;
      if (!(error instanceof ContextCompactorError)) {
        failures.push(`#${i} ${name}: ${error?.constructor?.name} ${String(error?.message ?? error).split("\n")[0]}`);
        if (failures.length > 20) break;
      }
      if (history.length !== lengthBefore) failures.push(`#${i} ${name}: a failed call changed the history's length`);
    }
  }
  console.log(`# seed ${SEED}: ${JSON.stringify(stats)}`);
  assert.deepEqual(failures, [], "every error is a ContextCompactorError");

  // The same instances still work and still hold what they held.
  assert.equal(history.length, baseIds.length + appended);
  assert.deepEqual(history.ids().slice(0, baseIds.length), baseIds);
  assert.deepEqual(history.messages("openai").slice(0, baseMessages.length), baseMessages);
  for (const [i, id] of baseIds.entries()) assert.deepEqual(history.get(id), tau[i]);
  const count = history.tokenCount();
  assert.deepEqual(count.messages.slice(0, baseCount.messages.length), baseCount.messages);
  assert.equal(count.total, count.messages.reduce((a, b) => a + b, 0) + count.replyPriming);
  for (const [i, id] of anthropicIds.entries()) assert.deepEqual(anthropicHistory.get(id), claude[i]);
  assert.ok(Array.isArray(anthropicHistory.messages().messages));
  assert.deepEqual([...tok.encode("tiktoken is great!")], [83, 8251, 2488, 382, 2212, 0]);
  assert.equal(tok.countMessages(tau).total, new Tokenizer("o200k_base").countMessages(tau).total);
  assert.deepEqual(convertMessages(tau, "openai", "anthropic"), convertMessages(structuredClone(tau), "openai", "anthropic"));
  console.log(`# after the fuzz: ${history.length} messages (${appended} garbage appends were valid messages), count ${count.total}, tokenizer exact`);
});

test("fuzz: a throwing getter, proxy or toJSON in the middle of a batch leaves the history usable", () => {
  const history = new ConversationHistory();
  history.append({ role: "user", content: "kept" });
  const bad = [
    [{ role: "user", content: "a" }, { role: "user", get content() { throw new Error("getter boom"); } }],
    new Proxy([{ role: "user", content: "a" }], { get(t, k) { if (k === "0") throw new Error("proxy boom"); return Reflect.get(t, k); } }),
    [{ role: "user", content: "a" }, { toJSON() { throw new Error("toJSON boom"); } }],
  ];
  for (const batch of bad) {
    assert.throws(() => history.appendMany(batch), ContextCompactorError);
    assert.equal(history.length, 1);
  }
  assert.equal(history.append({ role: "assistant", content: "still here" }), "m2");
  assert.deepEqual(history.messages(), [{ role: "user", content: "kept" }, { role: "assistant", content: "still here" }]);
});

test("fuzz: NaN, Infinity and undefined inside messages are treated as JSON would", () => {
  const tok = new Tokenizer("o200k_base");
  // JSON.stringify drops undefined fields and writes NaN/Infinity as null: a message with
  // `name: undefined` is the message without a name.
  assert.deepEqual(tok.countMessages([{ role: "user", content: "hi", name: undefined }]), tok.countMessages([{ role: "user", content: "hi" }]));
  assert.throws(() => tok.countMessages([{ role: "user", content: NaN }]), ContextCompactorError);
  assert.throws(() => tok.countMessages([{ role: Infinity, content: "x" }]), ContextCompactorError);
});

test("fuzz: the entry points of artifacts, agent state, lenient import, UIMessages and Responses counting", async () => {
  const { Session, fileReaderTool, loadConversation } = await import("context-compactor");
  const { fromUIMessages, toUIMessages } = await import("context-compactor/ai-sdk");
  const session = new Session({ id: "fuzzed" });
  session.history.appendMany(tau.slice(0, 12));
  const saved = session.saveArtifact({ id: "code_kept", language: "python", description: "kept", content: "def f():\n    return 1\n" });
  session.setState({ todos: [{ content: "stay", status: "pending" }], activeSkill: "analysis" });
  const before = { length: session.history.length, artifacts: JSON.stringify(session.artifacts()), state: JSON.stringify(session.state()) };
  const tok = new Tokenizer("o200k_base");
  /** `value` as the text of a file. */
  const text = (value) => {
    try {
      return JSON.stringify(value) ?? String(value);
    } catch {
      return "[a value JSON cannot write]";
    }
  };
  const garbageOrArtifact = () => (rand() < 0.4 ? { id: pick(["a", "code_x", "", "💥", "../x", garbage()]), language: pick(["python", "py", "cobol", "", garbage()]), description: garbage(3), content: pick(["x", "", garbage(3)]) } : garbage());
  const ops = {
    saveArtifact: () => session.saveArtifact(garbageOrArtifact()),
    artifact: () => session.artifact(rand() < 0.5 ? "code_kept" : garbage()),
    setState: () => session.setState(rand() < 0.5 ? { todos: garbage(3), activeSkill: garbage(2), uploadedFiles: garbage(3) } : garbage()),
    answerFileReader: () => session.answerFileReader(rand() < 0.5 ? { id: "c1", type: "function", function: { name: "file_reader", arguments: garbage(2) } } : garbage()),
    fileReaderTool: () => fileReaderTool(fmt()),
    repair: () => new ConversationHistory().appendMany(rand() < 0.5 ? [mutate(pick(REAL)), ...tau.slice(2, 6)] : garbage(), { repair: true, format: fmt() }),
    build: () => session.history.build(rand() < 0.5 ? { imagesSentOnce: garbage(1), state: garbage(2), budget: { maxTokens: pick([2000, 0, -1, NaN, 1e12, garbage()]) } } : garbage()),
    loadConversation: () => loadConversation(rand() < 0.5 ? text(rand() < 0.5 ? [mutate(pick(REAL)), ...tau.slice(2, 6)] : garbage()) : garbage(), rand() < 0.5 ? { name: pick(["x.json", "x.jsonl", "x.traj", garbage(1)]), repair: true } : garbage()),
    fromUIMessages: () => fromUIMessages(rand() < 0.5 ? [{ id: "u", role: pick(["user", "assistant", "system", garbage()]), parts: garbage(3) }] : garbage()),
    toUIMessages: () => toUIMessages(rand() < 0.5 ? [mutate({ role: "assistant", content: [{ type: "text", text: "x" }] })] : garbage()),
    countRequest: () => tok.countRequest(rand() < 0.5 ? { model: "gpt-4o", input: garbage(3), instructions: garbage(1), tools: garbage(2) } : garbage(), { format: pick(["openai-responses", "openai", "anthropic", garbage()]) }),
  };
  const names = Object.keys(ops);
  const failures = [];
  for (let i = 0; i < ITERATIONS / 2; i++) {
    const name = pick(names);
    const length = session.history.length;
    const artifacts = session.artifacts().length;
    try {
      ops[name]();
    } catch (error) {
      if (!(error instanceof ContextCompactorError)) failures.push(`#${i} ${name}: ${error?.constructor?.name} ${String(error?.message ?? error).split("\n")[0]}`);
      if (session.history.length !== length || session.artifacts().length !== artifacts) failures.push(`#${i} ${name}: a failed call changed the session`);
      if (failures.length > 20) break;
    }
  }
  assert.deepEqual(failures, [], "every error is a ContextCompactorError, and a failed call changes nothing");
  assert.ok(session.history.length >= before.length);
  assert.deepEqual(session.artifact("code_kept"), session.artifacts().find((a) => a.id === "code_kept"));
  assert.equal(session.artifact("code_kept").content, "def f():\n    return 1\n");
  assert.ok(saved.fileName.endsWith(".py"));
  assert.ok(session.history.build({ budget: { maxTokens: 3000 } }).receipt.withinBudget);
});
