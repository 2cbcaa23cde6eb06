// What a session costs with prompt caching, strategy by strategy: each session is replayed call
// by call (before every assistant message, a context is built from the messages before it), the
// request each strategy would send is priced against a simulated provider cache, and the quality
// of what it sends is checked.
//
// Cost model (printed with the results):
// - The cache holds every prefix of every earlier request of the session (model calls and
//   summariser requests alike). A request's cached tokens are the tokens of its longest common
//   prefix with any earlier request, compared message by message (the system prompt first) on
//   the emitted JSON with cache hints (`cache_control`, `providerOptions`) stripped and an
//   Anthropic string content read as its one text block (as the API reads it); none below
//   1,024 tokens; OpenAI rounds down to 128-token steps. No expiry, no breakpoint limit.
// - Anthropic-format sessions: uncached input is billed as a cache write (1.25×), cached input
//   as a read (0.1×). OpenAI-format sessions: uncached 1.0×, cached 0.1×. Costs are in units of
//   one uncached input token; output tokens (the replies, the summaries) are not priced.
// - Tokens: the package's own count (`Tokenizer.countRequest`, o200k_base) for every strategy,
//   message by message (a request's count is its system, its messages and the reply priming).
// - A break: the request does not extend the previous call's request. An event: the strategy
//   compacted (threshold: it summarised; ours: `receipt.cache.event` when the build reports it,
//   else a drop in size; the other strategies: a drop in size).
// - Files named: of the files the agent reads or edits in this call and the next 2 (the next 3
//   calls' tool calls) that the history already named, the share whose path is in the context.
//
// Strategies, each `(state, messagesSoFar) => { request, summariserCalls, event? }`: none,
// threshold, langchain-trim, ai-sdk-prune, ours (`history.build`), ours-external (`compact()`
// with a simulated summariser). `ours`' options: the default below, with `OURS='{…}'` or
// `--ours '{…}'` merged over it (e.g. OURS='{"budget":{"lowWater":0.3}}').
//
// Run: npm run bench:cache [-- --trace SESSION --budget N [--strategy NAME]] [--budgets 30000,6000]
//      [--sessions NAME,…] [--strategies NAME,…] [--no-write]
// Writes its tables to docs/benchmarks.md (between the cache-cost markers) on a full run with the
// shared fixtures (bench/fixtures.mjs); without them the sessions are fewer, so the published
// tables are left as they are.
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { ConversationHistory, Tokenizer, compact, convertMessages, loadConversation, resolveProfile, validateMessages } from "../dist/node.js";
import { trimMessages, SystemMessage, HumanMessage, AIMessage, ToolMessage } from "@langchain/core/messages";
import { pruneMessages } from "ai";
import { generateSession, sessionTokens } from "../tests/fixtures/generate.mjs";
import { SHARED, readFixture, sharedPresent } from "./fixtures.mjs";

const argv = process.argv.slice(2);
const arg = (name) => { const i = argv.indexOf(name); return i >= 0 ? argv[i + 1] : undefined; };
const list = (name) => arg(name)?.split(",").map((s) => s.trim()).filter(Boolean);
const TRACE = arg("--trace");
const LONG_BUDGETS = (list("--budgets") ?? ["30000", "6000"]).map(Number);
const SHARED_BUDGETS = [2_000, 4_000, 6_000];
const PROFILES = { anthropic: "claude-sonnet-4", openai: "gpt-4o" };
const TAU_TOKENS = 100_000;
const SUMMARY_TOKENS = 300;
const TAIL_MESSAGES = 4;
const DOCS = fileURLToPath(new URL("../docs/benchmarks.md", import.meta.url));

const PRICING = {
  anthropic: { uncached: 1.25, cached: 0.1, minimum: 1024, step: 1, name: "Anthropic: uncached input billed as a cache write 1.25×, cached 0.1×" },
  openai: { uncached: 1, cached: 0.1, minimum: 1024, step: 128, name: "OpenAI: uncached 1.0×, cached 0.1× in 128-token steps" },
};

// ---------------------------------------------------------------------------------------------
// The options of `ours`: the default, with the caller's JSON merged over it.
const merge = (base, over) => {
  if (over === null || typeof over !== "object" || Array.isArray(over)) return over;
  const out = { ...(base && typeof base === "object" ? base : {}) };
  for (const [k, v] of Object.entries(over)) out[k] = merge(out[k], v);
  return out;
};
const OURS_OVERRIDE = JSON.parse(arg("--ours") ?? process.env.OURS ?? "{}");
const oursOptions = (budget, format) => merge({ budget: { maxTokens: budget }, format }, OURS_OVERRIDE);

// ---------------------------------------------------------------------------------------------
// Counting and interning: every distinct message (JSON, cache hints stripped) gets an id and is
// counted once per session.
const tokenizer = new Tokenizer("o200k_base");
const stripHints = (key, value) => (key === "cache_control" || key === "providerOptions" ? undefined : value);
// Anthropic reads a string content as one text block: the cache sees the two alike (a message
// marked for the cache carries its text as a block).
const asBlocks = (m) => (typeof m?.content === "string" ? { ...m, content: [{ type: "text", text: m.content }] } : m);
const systemBlocks = (system) => (typeof system === "string" ? [{ type: "text", text: system }] : system);

function ledger(format) {
  const ids = new Map(); // JSON -> id
  const tokens = []; // id -> tokens
  const texts = []; // id -> JSON
  const byObject = new WeakMap();
  const intern = (json, count) => {
    let id = ids.get(json);
    if (id === undefined) {
      id = texts.length;
      ids.set(json, id);
      texts.push(json);
      tokens.push(count());
    }
    return id;
  };
  const messageId = (m) => {
    let id = byObject.get(m);
    if (id === undefined) {
      const json = JSON.stringify(format === "anthropic" ? asBlocks(m) : m, stripHints);
      id = intern(json, () =>
        format === "anthropic"
          ? tokenizer.countRequest({ messages: [m] }, { format }).perMessage[0]
          : tokenizer.countRequest([m], { format }).perMessage[0]);
      if (typeof m === "object") byObject.set(m, id);
    }
    return id;
  };
  const systemId = (system) => {
    const json = "system:" + JSON.stringify(systemBlocks(system) ?? null, stripHints);
    return intern(json, () => (system ? tokenizer.countRequest({ system, messages: [{ role: "user", content: "x" }] }, { format }).system : 0));
  };
  // A request as ids: [system, ...messages]; its tokens: the sum plus the reply priming.
  const path = (request) =>
    format === "anthropic" ? [systemId(request.system), ...request.messages.map(messageId)] : [systemId(null), ...request.map(messageId)];
  const count = (p) => p.reduce((s, id) => s + tokens[id], 0) + 3;
  return { path, count, tokens, texts, messageId };
}

// The provider's cache: a trie of request paths.
function cache(pricing, led) {
  const root = new Map();
  return {
    // Tokens of the longest prefix of `p` any earlier request had, as billed.
    lookup(p) {
      let node = root, raw = 0, matched = 0;
      for (const id of p) {
        const next = node.get(id);
        if (!next) break;
        node = next;
        raw += led.tokens[id];
        matched++;
      }
      const billed = raw < pricing.minimum ? 0 : Math.floor(raw / pricing.step) * pricing.step;
      return { cached: billed, matched };
    },
    insert(p) {
      let node = root;
      for (const id of p) {
        let next = node.get(id);
        if (!next) node.set(id, (next = new Map()));
        node = next;
      }
    },
  };
}

// ---------------------------------------------------------------------------------------------
// Message helpers for both formats.
const textOf = (m) =>
  typeof m.content === "string" ? m.content : Array.isArray(m.content) ? m.content.filter((b) => b.type === "text").map((b) => b.text).join("\n") : "";
const isToolResult = (m, format) =>
  format === "openai" ? m.role === "tool" : m.role === "user" && Array.isArray(m.content) && m.content.some((b) => b.type === "tool_result");
const requestMessages = (request, format) => (format === "anthropic" ? request.messages : request);
const blocksOf = (m) => (typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content);
const makeRequest = (system, messages, format) => (format === "anthropic" ? { ...(system ? { system } : {}), messages } : messages);

function toolCalls(m, format) {
  if (m.role !== "assistant") return [];
  if (format === "anthropic") return Array.isArray(m.content) ? m.content.filter((b) => b.type === "tool_use").map((b) => ({ name: b.name, input: b.input })) : [];
  return (m.tool_calls ?? []).map((c) => {
    let input = {};
    try { input = JSON.parse(c.function.arguments || "{}"); } catch { /* arguments that are not JSON name no file */ }
    return { name: c.function.name, input };
  });
}
const FILE_TOOLS = new Set(["Read", "Edit", "Write", "MultiEdit", "NotebookEdit"]);
const filesOf = (m, format) => toolCalls(m, format).filter((c) => FILE_TOOLS.has(c.name) && typeof c.input?.file_path === "string").map((c) => c.input.file_path);

// The longest string of the messages cut to head and tail (the threshold strategy's last resort);
// ids, roles and thinking signatures stay whole.
const UNCUT_KEYS = new Set(["type", "id", "tool_use_id", "tool_call_id", "role", "signature"]);
function cutLongest(messages) {
  let best = null;
  const visit = (holder, key) => {
    const v = holder[key];
    if (typeof v === "string") { if (!best || v.length > best.len) best = { holder, key, len: v.length }; }
    else if (Array.isArray(v)) v.forEach((_, i) => visit(v, i));
    else if (v && typeof v === "object") for (const k of Object.keys(v)) if (!UNCUT_KEYS.has(k)) visit(v, k);
  };
  messages.forEach((m, index) => {
    const before = best;
    visit(messages, index);
    if (best !== before) best.index = index;
  });
  if (!best || best.len < 400) return false;
  const s = best.holder[best.key];
  const keep = Math.floor(s.length / 4);
  best.holder[best.key] = `${s.slice(0, keep)}\n[… ${s.length - 2 * keep} characters cut …]\n${s.slice(-keep)}`;
  // A new object: counts are remembered per message object.
  messages[best.index] = structuredClone(messages[best.index]);
  return true;
}

// The simulated summariser: a deterministic extractive digest of what it is given (the requests,
// the files named, the last actions), cut to about `maxTokens`.
function simulatedSummary(request, format, maxTokens = SUMMARY_TOKENS, requiredKeys = []) {
  const messages = requestMessages(request, format);
  const requests = [], files = new Set(), actions = [];
  for (const m of messages) {
    if (m.role === "user" && !isToolResult(m, format)) { const t = textOf(m).trim(); if (t) requests.push(t.replace(/\s+/g, " ").slice(0, 160)); }
    for (const c of toolCalls(m, format)) actions.push(`${c.name}(${JSON.stringify(c.input).slice(0, 80)})`);
    for (const p of JSON.stringify(m).match(/(?:\/[\w.-]+)+\.\w{1,5}\b/g) ?? []) files.add(p);
  }
  const text = [
    "Summary of the conversation so far.",
    `Requests: ${requests.slice(0, 1).concat(requests.slice(1).slice(-3)).join(" | ")}`,
    `Files: ${[...files].slice(-15).join(", ")}`,
    `Last actions: ${actions.slice(-6).join("; ")}`,
    ...(requiredKeys.length ? [`Covers: ${requiredKeys.join(", ")}`] : []),
  ].join("\n");
  let chars = text.length;
  while (chars > 40 && tokenizer.count(text.slice(0, chars)) > maxTokens) chars = Math.floor(chars * 0.9);
  return text.slice(0, chars);
}

// ---------------------------------------------------------------------------------------------
// Strategies.
const STRATEGIES = {
  none: () => (state, soFar) => ({ request: makeRequest(state.session.system, soFar, state.format), summariserCalls: [] }),

  // Keep the history until it passes 80% of the budget; then summarise it, keep the first
  // request, the summary and the last messages, cut the tail's longest strings while over half
  // the budget, and append again.
  threshold: () => (state, soFar) => {
    const { format, led, budget, session } = state;
    if (!state.head) {
      // The first request: through the first user message (OpenAI: with the system messages before it).
      const first = soFar.findIndex((m) => m.role === "user" && !isToolResult(m, format));
      state.firstRequest = soFar.slice(0, first + 1);
      state.head = state.firstRequest;
      state.body = [];
      state.taken = first + 1;
    }
    state.body.push(...soFar.slice(state.taken));
    state.taken = soFar.length;
    const tokensOf = (ms) => led.count(led.path(makeRequest(session.system, ms, format)));
    const summariserCalls = [];
    let event = false;
    if (tokensOf([...state.head, ...state.body]) > 0.8 * budget && state.body.length > TAIL_MESSAGES) {
      const context = [...state.head, ...state.body];
      const instruction = "Summarise this conversation for a continuation: the requests, the files, what was done and what is pending.";
      const last = context.at(-1);
      const summariserMessages = format === "anthropic"
        ? [...context.slice(0, -1), { ...last, content: [...blocksOf(last), { type: "text", text: instruction }] }]
        : [...context, { role: "user", content: instruction }];
      const summariserRequest = makeRequest(session.system, summariserMessages, format);
      summariserCalls.push(summariserRequest);
      const summary = simulatedSummary(summariserRequest, format);
      // The tail starts at a call, not at its results; in Anthropic format, at an assistant turn.
      let start = state.body.length - TAIL_MESSAGES;
      while (start > 0 && (isToolResult(state.body[start], format) || (format === "anthropic" && state.body[start].role === "user"))) start--;
      const first = state.firstRequest;
      state.head = format === "anthropic"
        ? [{ role: "user", content: [...blocksOf(first[0]), { type: "text", text: summary }] }]
        : [...first, { role: "user", content: summary }];
      state.body = structuredClone(state.body.slice(start));
      while (tokensOf([...state.head, ...state.body]) > budget / 2 && cutLongest(state.body));
      event = true;
    }
    return { request: makeRequest(session.system, [...state.head, ...state.body], format), summariserCalls, event };
  },

  // LangChain's trimMessages as its docs show it: the last messages within the budget, the
  // system message kept, starting on a human message; counted with the package.
  "langchain-trim": () => async (state, soFar) => {
    const { format, led, budget, session } = state;
    state.lc ??= [];
    state.origins ??= [];
    // trimMessages hands copies to the counter and back: messages are told apart by their id,
    // their index in `origins` (the session message and, for a tool result, its block).
    for (let i = state.taken ?? 0; i < soFar.length; i++) {
      for (const { block, make } of toLangChain(soFar[i], format)) {
        const k = state.origins.length;
        state.origins.push({ index: i, block });
        state.lc.push(make(String(k)));
      }
    }
    state.taken = soFar.length;
    const systemTokens = led.tokens[led.path(makeRequest(session.system, [], format))[0]];
    const system = format === "anthropic" && session.system ? [new SystemMessage({ content: session.system, id: "system" })] : [];
    const tokensOf = (x) => {
      if (x.id === "system") return systemTokens;
      const o = state.origins[Number(x.id)];
      if (o.tokens === undefined) {
        const m = soFar[o.index];
        o.tokens = led.tokens[led.messageId(o.block === undefined ? m : { role: m.role, content: [m.content[o.block]] })];
      }
      return o.tokens;
    };
    const counter = (msgs) => msgs.reduce((s, x) => s + tokensOf(x), 3);
    const trimmed = await trimMessages([...system, ...state.lc], { maxTokens: budget, strategy: "last", tokenCounter: counter, includeSystem: true, startOn: "human" });
    // Back to the session's messages: whole where every part was kept, else the kept blocks.
    // When nothing fits, trimMessages (with includeSystem) returns [undefined]: read as empty.
    const kept = trimmed.filter((x) => x && x.id !== "system").map((x) => state.origins[Number(x.id)]);
    const out = [];
    for (let j = 0; j < kept.length; ) {
      const index = kept[j].index;
      const blocks = [];
      while (j < kept.length && kept[j].index === index) blocks.push(kept[j++].block);
      const m = soFar[index];
      out.push(blocks[0] === undefined || blocks.length === m.content.length ? m : { role: m.role, content: blocks.map((b) => m.content[b]) });
    }
    return { request: makeRequest(session.system, out, format), summariserCalls: [] };
  },

  // The AI SDK's pruneMessages as its docs show it: reasoning and tool calls before the last
  // messages removed; nothing else.
  "ai-sdk-prune": () => (state, soFar) => {
    const { format, session } = state;
    // The budget plays no part: one pruning per call serves every budget.
    session.pruned ??= new Map();
    if (!session.pruned.has(soFar.length)) {
      const model = convertMessages(makeRequest(session.system, soFar, format), format, "ai-sdk");
      const pruned = pruneMessages({ messages: model, reasoning: "before-last-message", toolCalls: "before-last-2-messages", emptyMessages: "remove" });
      session.pruned.set(soFar.length, convertMessages(pruned, "ai-sdk", format));
    }
    return { request: session.pruned.get(soFar.length), summariserCalls: [] };
  },

  ours: () => (state, soFar) => {
    const history = oursHistory(state, soFar);
    const out = history.build(oursOptions(state.budget, state.format));
    return { request: out.messages, summariserCalls: [], event: out.receipt.cache?.event, receipt: out.receipt };
  },

  "ours-external": () => async (state, soFar) => {
    const history = oursHistory(state, soFar);
    const summariserCalls = [];
    const summarize = async (request) => {
      summariserCalls.push(request.messages);
      return simulatedSummary(request.messages, state.format, Math.min(SUMMARY_TOKENS, request.maxTokens), request.requiredKeys);
    };
    const out = await compact(history, { ...oursOptions(state.budget, state.format), summarize });
    return { request: out.messages, summariserCalls, event: out.receipt.cache?.event, receipt: out.receipt };
  },
};

// One history per replay, appended to as the session goes.
function oursHistory(state, soFar) {
  if (!state.history) {
    state.history = new ConversationHistory({ encoding: "o200k_base", format: state.format });
    if (state.format === "anthropic" && state.session.system) state.history.append({ role: "system", content: state.session.system });
    state.taken = 0;
  }
  if (soFar.length > state.taken) state.history.appendMany(soFar.slice(state.taken));
  state.taken = soFar.length;
  return state.history;
}

// A session message as LangChain messages (`make(id)`): one, or for an Anthropic user turn one
// per block (a ToolMessage per tool result).
function toLangChain(m, format) {
  const one = (make) => [{ block: undefined, make }];
  if (format === "openai") {
    switch (m.role) {
      case "system": case "developer": return one((id) => new SystemMessage({ content: textOf(m), id }));
      case "user": return one((id) => new HumanMessage({ content: textOf(m), id }));
      case "tool": return one((id) => new ToolMessage({ content: textOf(m), tool_call_id: m.tool_call_id, id }));
      default: return one((id) => new AIMessage({ content: textOf(m), id, tool_calls: toolCalls(m, format).map((c, i) => ({ id: m.tool_calls[i].id, name: c.name, args: c.input, type: "tool_call" })) }));
    }
  }
  if (m.role === "assistant") {
    const uses = Array.isArray(m.content) ? m.content.filter((b) => b.type === "tool_use") : [];
    return one((id) => new AIMessage({ content: textOf(m), id, tool_calls: uses.map((b) => ({ id: b.id, name: b.name, args: b.input, type: "tool_call" })) }));
  }
  if (typeof m.content === "string") return one((id) => new HumanMessage({ content: m.content, id }));
  return m.content.map((b, block) => ({
    block,
    make: (id) => b.type === "tool_result"
      ? new ToolMessage({ content: typeof b.content === "string" ? b.content : JSON.stringify(b.content), tool_call_id: b.tool_use_id, id })
      : new HumanMessage({ content: b.type === "text" ? b.text : JSON.stringify(b), id }),
  }));
}

// ---------------------------------------------------------------------------------------------
// Sessions.
function generatedSessions() {
  return [1, 2, 3, 4, 5].map((seed) => {
    const s = generateSession(seed, { targetTokens: sessionTokens(seed) });
    return { name: `coding-session-${seed}`, group: "long", format: "anthropic", system: s.system, messages: s.messages };
  });
}

// The long tau-bench conversation (chained runs), cut at the first assistant message past
// ~100k tokens.
async function tauSession() {
  const { message } = await import("./long-conversation.mjs");
  const messages = [];
  let tokens = 3;
  for (let i = 0; ; i++) {
    const m = openaiRequestMessage(message(i));
    messages.push(m);
    tokens += tokenizer.countRequest([m], { format: "openai" }).perMessage[0];
    if (tokens >= TAU_TOKENS && m.role === "assistant" && !m.tool_calls) break;
  }
  return { name: "tau-bench-chained", group: "long", format: "openai", messages };
}

// A Claude Code log as a request: the records' API messages (split responses merged by the
// loader), request fields only, same-role neighbours merged into one message.
function claudeCodeSession(file) {
  const loaded = loadConversation(readFixture(file.replace(".jsonl", "")));
  const messages = [];
  for (const { role, content } of loaded.messages.messages) {
    const blocks = (typeof content === "string" ? [{ type: "text", text: content }] : content)
      .map(requestBlock)
      .filter((b) => b.type !== "text" || b.text.trim() !== "");
    const prev = messages.at(-1);
    if (prev?.role === role) prev.content.push(...blocks);
    else messages.push({ role, content: [...blocks] });
  }
  // Tool results first in a user message, as the API wants them.
  for (const m of messages) if (m.role === "user") m.content.sort((a, b) => (b.type === "tool_result") - (a.type === "tool_result"));
  return { name: file.replace(".jsonl", ""), group: "shared", format: "anthropic", system: loaded.messages.system, messages };
}

// A content block with the fields a request takes (the logs add response-only ones).
const BLOCK_FIELDS = { text: ["type", "text"], thinking: ["type", "thinking", "signature"], tool_use: ["type", "id", "name", "input"], tool_result: ["type", "tool_use_id", "content", "is_error"] };
const requestBlock = (b) => (BLOCK_FIELDS[b.type] ? Object.fromEntries(BLOCK_FIELDS[b.type].filter((k) => k in b).map((k) => [k, b[k]])) : b);

function sweAgentSession() {
  const traj = JSON.parse(readFixture("swe-agent"));
  const messages = traj.history.map(({ tool_call_ids, ...m }) => openaiRequestMessage(tool_call_ids ? { ...m, tool_call_id: tool_call_ids[0] } : m));
  return { name: "swe-agent-marshmallow", group: "shared", format: "openai", messages };
}

// An OpenAI Chat message with the fields a request takes (the logs add others: a tool
// message's `name`, SWE-agent's own keys).
function openaiRequestMessage({ role, content, tool_calls, tool_call_id }) {
  return {
    role,
    content: typeof content === "string" || content === null ? content : (content ?? []).map((p) => p.text ?? "").join(""),
    ...(tool_calls?.length ? { tool_calls: tool_calls.map(({ id, function: f }) => ({ id, type: "function", function: { name: f.name, arguments: f.arguments } })) } : {}),
    ...(role === "tool" ? { tool_call_id } : {}),
  };
}

function longestTauRun() {
  const runs = JSON.parse(readFixture("tau-bench"));
  const run = runs.reduce((a, b) => (JSON.stringify(b.traj).length > JSON.stringify(a.traj).length ? b : a));
  return { name: `tau-bench-run-${run.task_id}`, group: "shared", format: "openai", messages: run.traj.map(openaiRequestMessage) };
}

// ---------------------------------------------------------------------------------------------
// Replaying one session with one strategy at one budget.
async function replay(session, strategyName, budget, trace = false) {
  const { format } = session;
  const led = session.ledger;
  const pricing = PRICING[format];
  const provider = cache(pricing, led);
  const state = { session, format, led, budget };
  const strategy = STRATEGIES[strategyName]();
  const row = { calls: 0, input: 0, cached: 0, cost: 0, breaks: 0, events: 0, summariserCalls: 0, summariserInput: 0, summariserCost: 0, overBudget: 0, invalid: 0, noTask: 0, filesNeeded: 0, filesNamed: 0 };
  let previous = null, previousTokens = 0;
  const price = (p) => {
    const tokens = led.count(p);
    const { cached, matched } = provider.lookup(p);
    provider.insert(p);
    return { tokens, cached, matched, cost: (tokens - cached) * pricing.uncached + cached * pricing.cached };
  };
  for (const i of session.calls) {
    const soFar = session.messages.slice(0, i);
    const { request, summariserCalls, event: said } = await strategy(state, soFar);
    for (const s of summariserCalls) {
      const priced = price(led.path(s));
      row.summariserCalls++;
      row.summariserInput += priced.tokens;
      row.summariserCost += priced.cost;
      row.cost += priced.cost;
      if (trace) console.log(`        summariser request: ${priced.tokens} tokens, ${priced.cached} cached (${priced.matched} of ${led.path(s).length} leading entries seen before)`);
    }
    const p = led.path(request);
    const priced = price(p);
    const extends_ = previous !== null && previous.length <= p.length && previous.every((id, k) => p[k] === id);
    const event = said ?? (previous !== null && priced.tokens < previousTokens);
    const broke = previous !== null && !extends_;
    row.calls++;
    row.input += priced.tokens;
    row.cached += priced.cached;
    row.cost += priced.cost;
    if (event) row.events++;
    if (broke && !event) row.breaks++;
    if (priced.tokens > budget) row.overBudget++;
    const violations = validateMessages(request, format);
    if (violations.length) row.invalid++;
    const text = p.map((id) => led.texts[id]).join("\n");
    const hasTask = carries(text, session.task);
    if (!hasTask) row.noTask++;
    const needed = session.filesNeeded.get(i) ?? [];
    const named = needed.filter((f) => text.includes(f));
    row.filesNeeded += needed.length;
    row.filesNamed += named.length;
    if (trace) {
      let why;
      if (previous === null) why = "first call";
      else if (extends_) why = `extends the previous call (+${p.length - previous.length} messages)`;
      else {
        const k = previous.findIndex((id, j) => p[j] !== id);
        why = `${event ? "event" : "BREAK"}: entry ${k} differs from the previous call's (${k === 0 ? "system" : `message ${k - 1}`})`;
      }
      const exact = format === "anthropic" ? tokenizer.countRequest(request, { format }).total : tokenizer.countRequest(request, { format }).total;
      console.log(
        `call ${String(row.calls).padStart(3)} (before message ${i}): ${priced.tokens} tokens${exact !== priced.tokens ? ` (whole-request count ${exact}!)` : ""}, ` +
          `${priced.cached} cached (${priced.matched} of ${p.length} entries), cost ${priced.cost.toFixed(0)}; ${why}` +
          `${priced.tokens > budget ? "; OVER BUDGET" : ""}${violations.length ? `; INVALID: ${violations[0].message}` : ""}${hasTask ? "" : "; no task"}` +
          `${needed.length ? `; files named ${named.length}/${needed.length}` : ""}`,
      );
    }
    previous = p;
    previousTokens = priced.tokens;
  }
  state.history?.free();
  return row;
}

// Kept verbatim, or cut to head and tail: its first and last 200 characters are both there.
function carries(text, task) {
  if (!task) return true;
  const s = JSON.stringify(task).slice(1, -1);
  return text.includes(s) || (text.includes(s.slice(0, 200)) && text.includes(s.slice(-200)));
}

// What a replay needs to know about a session beforehand.
function prepare(session) {
  const { format, messages } = session;
  session.ledger = ledger(format);
  session.calls = messages.flatMap((m, i) => (m.role === "assistant" && i > 0 ? [i] : []));
  const firstUser = messages.find((m) => m.role === "user" && !isToolResult(m, format));
  session.task = firstUser ? textOf(firstUser) : "";
  session.tokens = session.ledger.count(session.ledger.path(makeRequest(session.system, messages, format)));
  // File paths relative to the session's working directory, so that a context naming the file
  // either way counts; a file counts once the history has named it.
  const all = messages.flatMap((m) => filesOf(m, format));
  const root = commonDirectory(all);
  const rel = (f) => (root && f.startsWith(root) ? f.slice(root.length) : f);
  const firstNamed = new Map();
  const sys = JSON.stringify(session.system ?? "");
  for (const f of new Set(all.map(rel))) {
    if (sys.includes(f)) { firstNamed.set(f, 0); continue; }
    const k = messages.findIndex((m) => JSON.stringify(m).includes(f));
    if (k >= 0) firstNamed.set(f, k);
  }
  session.filesNeeded = new Map();
  session.calls.forEach((i, c) => {
    const next = session.calls.slice(c, c + 3).flatMap((j) => filesOf(messages[j], format).map(rel));
    const known = [...new Set(next)].filter((f) => firstNamed.has(f) && firstNamed.get(f) < i);
    if (known.length) session.filesNeeded.set(i, known);
  });
  return session;
}
function commonDirectory(paths) {
  if (paths.length === 0) return "";
  let prefix = paths[0].slice(0, paths[0].lastIndexOf("/") + 1);
  for (const p of paths) while (prefix && !p.startsWith(prefix)) prefix = prefix.slice(0, prefix.slice(0, -1).lastIndexOf("/") + 1);
  return prefix;
}

// ---------------------------------------------------------------------------------------------
// Tables.
const fmt = (n) => Math.round(n).toLocaleString("en-US");
const pct = (a, b) => (b ? `${((100 * a) / b).toFixed(0)}%` : "n/a");
const ratio = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : "n/a");
const mean = (xs) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN);

function table(rows) {
  const header = ["strategy", "calls", "input tokens", "cached", "hit share", "breaks outside events", "events", "summariser calls (input)", "cost ÷ threshold", "cost ÷ none", "over budget", "invalid", "no task", "files named (next 3 calls)"];
  const lines = [`| ${header.join(" | ")} |`, `|${header.map((_, i) => (i ? "---:" : "---")).join("|")}|`];
  for (const r of rows) lines.push(`| ${[r.strategy, fmt(r.calls), fmt(r.input), fmt(r.cached), pct(r.cached, r.input), fmt(r.breaks), fmt(r.events), `${fmt(r.summariserCalls)} (${fmt(r.summariserInput)})`, ratio(r.vsThreshold), ratio(r.vsNone), fmt(r.overBudget), fmt(r.invalid), fmt(r.noTask), pct(r.filesNamed, r.filesNeeded)].join(" | ")} |`);
  return lines.join("\n");
}

// Totals over sessions, and the mean of the per-session cost ratios.
function aggregate(results, strategies) {
  return strategies.map((strategy) => {
    const rows = results.map((r) => r.rows[strategy]).filter(Boolean);
    const sum = (k) => rows.reduce((s, r) => s + r[k], 0);
    const out = { strategy };
    for (const k of ["calls", "input", "cached", "breaks", "events", "summariserCalls", "summariserInput", "overBudget", "invalid", "noTask", "filesNeeded", "filesNamed"]) out[k] = sum(k);
    out.vsThreshold = mean(results.filter((r) => r.rows.threshold && r.rows[strategy]).map((r) => r.rows[strategy].cost / r.rows.threshold.cost));
    out.vsNone = mean(results.filter((r) => r.rows.none && r.rows[strategy]).map((r) => r.rows[strategy].cost / r.rows.none.cost));
    return out;
  });
}

// ---------------------------------------------------------------------------------------------
async function main() {
  const started = performance.now();
  const sessions = generatedSessions();
  if (sharedPresent) {
    sessions.push(await tauSession());
    for (const f of ["claude-code-short.jsonl", "claude-code-tool-heavy.jsonl", "claude-code-subagent.jsonl"]) sessions.push(claudeCodeSession(f));
    sessions.push(sweAgentSession(), longestTauRun());
  }
  const only = list("--sessions");
  const chosen = sessions.filter((s) => (TRACE ? s.name === TRACE : !only || only.includes(s.name))).map(prepare);
  if (TRACE && chosen.length === 0) throw new Error(`--trace: no session named ${TRACE} (${sessions.map((s) => s.name).join(", ")})`);
  const strategies = TRACE ? [arg("--strategy") ?? "ours"] : list("--strategies") ?? Object.keys(STRATEGIES);
  for (const s of strategies) if (!STRATEGIES[s]) throw new Error(`unknown strategy ${s} (${Object.keys(STRATEGIES).join(", ")})`);

  const header = [];
  header.push("Cost model: a cache holding every prefix of every earlier request of the session (model calls and summariser requests); a request's cached tokens are its longest common prefix with any earlier request, message by message on the emitted JSON with cache hints stripped (and an Anthropic string content read as its one text block, as the API reads it), none below 1,024 tokens. " +
    `${PRICING.anthropic.name} (Anthropic-format sessions); ${PRICING.openai.name} (OpenAI-format sessions). Costs in uncached-input-token units; outputs not priced. Tokens: the package's count (o200k_base).`);
  header.push(`Sessions: 5 generated coding sessions (tests/fixtures/generate.mjs, Anthropic format)${sharedPresent ? ", the chained tau-bench conversation cut at ~100k tokens (OpenAI format), and the shared fixtures at the budgets they pass" : ""}. ` +
    "Means are over the sessions longer than the budget: totals of the counts, mean of the per-session cost ratios.");
  if (!sharedPresent) header.push(`The shared fixtures are absent (looked for ${fileURLToPath(SHARED)}): the tau-bench conversation and the shared fixtures are left out.`);
  header.push(`ours: build(${JSON.stringify(oursOptions("B", "<session format>"))}); ours-external: compact() with the same options and a simulated ~${SUMMARY_TOKENS}-token extractive summariser.`);

  if (TRACE) {
    const session = chosen[0];
    const budget = Number(arg("--budget") ?? 6000);
    console.log(header.join("\n"));
    console.log(`\n${session.name}: ${session.format}, ${session.messages.length} messages, ${fmt(session.tokens)} tokens, ${session.calls.length} calls; strategy ${strategies[0]}, budget ${fmt(budget)}`);
    const row = await replay(session, strategies[0], budget, true);
    console.log(`\ntotal: ${row.calls} calls, ${fmt(row.input)} input tokens, ${fmt(row.cached)} cached (${pct(row.cached, row.input)}), cost ${fmt(row.cost)}; ${row.events} events, ${row.breaks} breaks outside events; summariser ${row.summariserCalls} calls, ${fmt(row.summariserInput)} tokens`);
    return;
  }

  // Which budgets each session is replayed at.
  const plans = [];
  for (const s of chosen) {
    if (s.group === "long") {
      for (const b of LONG_BUDGETS) plans.push({ session: s, budget: b, label: fmt(b) });
      const profile = PROFILES[s.format];
      plans.push({ session: s, budget: profileBudget(profile, s.format), label: `a profile's window (${Object.entries(PROFILES).map(([format, p]) => `${p} ${fmt(profileBudget(p, format))} for ${format === "anthropic" ? "Anthropic" : "OpenAI"}-format sessions`).join(", ")})`, profile });
    } else for (const b of SHARED_BUDGETS) if (s.tokens > b) plans.push({ session: s, budget: b, label: fmt(b) });
  }
  console.error(`cache-cost: ${chosen.length} sessions (${chosen.map((s) => `${s.name} ${fmt(s.tokens)}`).join(", ")}), ${plans.length} session × budget replays of ${strategies.length} strategies`);
  const results = [];
  for (const plan of plans) {
    const t0 = performance.now();
    const rows = {};
    const times = [];
    for (const strategy of strategies) {
      const t1 = performance.now();
      rows[strategy] = await replay(plan.session, strategy, plan.budget);
      times.push(`${strategy} ${((performance.now() - t1) / 1000).toFixed(1)}`);
    }
    results.push({ ...plan, rows });
    const r = rows.ours && rows.threshold ? `; ours ÷ threshold ${ratio(rows.ours.cost / rows.threshold.cost)}` : "";
    console.error(`  ${plan.session.name} at ${fmt(plan.budget)}: ${((performance.now() - t0) / 1000).toFixed(1)} s (${times.join(", ")})${r}`);
  }

  const out = [];
  out.push(header.join("\n\n"));
  const groups = [...new Map(results.map((r) => [`${r.session.group}|${r.label}`, r])).values()];
  const blocks = [];
  for (const { session: { group }, label } of groups) {
    const rs = results.filter((r) => r.session.group === group && r.label === label && r.session.tokens > r.budget);
    const title = `${group === "long" ? "Long sessions" : "Shared fixtures"}, budget ${label}: ${rs.length} sessions longer than the budget (${rs.map((r) => r.session.name).join(", ") || "none"})`;
    if (rs.length === 0) { out.push(`### ${title}`); continue; }
    const agg = aggregate(rs, strategies);
    blocks.push({ group, label, agg, budget: rs[0].budget });
    out.push(`### ${title}\n\n${table(agg)}`);
  }
  // Per session: the cost ratios, to see the spread behind the means.
  const others = strategies.filter((s) => s !== "threshold");
  const per = ["| session | format, pricing | tokens | budget | " + others.map((s) => `${s} ÷ threshold`).join(" | ") + " |", "|---|---|---:|---:|" + others.map(() => "---:").join("|") + "|"];
  for (const r of results) per.push(`| ${r.session.name} | ${r.session.format} | ${fmt(r.session.tokens)} | ${fmt(r.budget)} | ${others.map((s) => (r.rows.threshold ? ratio(r.rows[s].cost / r.rows.threshold.cost) : "n/a")).join(" | ")} |`);
  out.push(`### Per session: cost against threshold\n\n${per.join("\n")}`);

  // The targets.
  const find = (label) => blocks.find((b) => b.group === "long" && b.label === label);
  const target = (strategy, label, limit) => {
    const b = find(label);
    const r = b?.agg.find((x) => x.strategy === strategy);
    if (!r) return `${strategy} at most ${limit.toFixed(1)}× threshold at ${label}: not measured`;
    return `${strategy} at most ${limit.toFixed(1)}× threshold at ${label}: ${r.vsThreshold <= limit ? "met" : "NOT met"} (${ratio(r.vsThreshold)})`;
  };
  const targets = [target("ours", fmt(30_000), 1.0), target("ours", fmt(6_000), 0.6), target("ours-external", fmt(30_000), 1.1), target("ours-external", fmt(6_000), 0.7)];
  // The rules hold on every replay, long sessions and shared fixtures alike.
  for (const strategy of ["ours", "ours-external"]) {
    const rs = blocks.flatMap((b) => b.agg.filter((x) => x.strategy === strategy));
    if (!rs.length) continue;
    const total = (k) => rs.reduce((s, r) => s + r[k], 0);
    targets.push(`${strategy}: no call outside an event breaks the prefix: ${total("breaks") === 0 ? "met" : "NOT met"} (${total("breaks")} of ${total("calls")} calls)`);
    targets.push(`${strategy}: 0 calls over budget, invalid or without the task: ${total("overBudget") + total("invalid") + total("noTask") === 0 ? "met" : "NOT met"} (${total("overBudget")} over budget, ${total("invalid")} invalid, ${total("noTask")} without the task)`);
    const threshold = blocks.flatMap((b) => b.agg.filter((x) => x.strategy === "threshold"));
    const share = (xs) => xs.reduce((s, r) => s + r.filesNamed, 0) / Math.max(1, xs.reduce((s, r) => s + r.filesNeeded, 0));
    if (threshold.length) targets.push(`${strategy}: files the agent needs next named in the context: ${pct(share(rs), 1)} (threshold ${pct(share(threshold), 1)})`);
  }
  out.push(`### Targets\n\nCost: means over the long sessions longer than the budget. Breaks, validity and files named: every replay above.\n\n${targets.map((t) => `- ${t}`).join("\n")}`);

  const seconds = ((performance.now() - started) / 1000).toFixed(0);
  const text = out.join("\n\n");
  console.log(text);
  console.error(`cache-cost: ${seconds} s`);

  const full = !only && !list("--strategies") && !list("--budgets") && !argv.includes("--no-write");
  if (full && !sharedPresent) console.error(`cache-cost: tables not written to docs/benchmarks.md: the published ones include the shared fixtures, absent here`);
  if (full && sharedPresent) {
    const command = process.env.OURS || argv.length
      ? `${process.env.OURS ? `OURS='${process.env.OURS}' ` : ""}npm run bench:cache -- ${argv.join(" ")}`.trim()
      : "npm run bench:cache";
    writeSection(`## Cache cost (bench/cache-cost.mjs)\n\nMade by \`${command}\`.\n\n${text}`);
    console.error(`cache-cost: tables written to docs/benchmarks.md`);
  }
}

function profileBudget(profile, format) {
  const history = new ConversationHistory({ encoding: "o200k_base", format });
  history.append({ role: "user", content: "x" });
  const budget = history.build({ profile, format }).receipt.budget?.maxTokens;
  history.free();
  if (!budget) throw new Error(`profile ${profile} reports no budget`);
  return budget;
}

function writeSection(body) {
  const begin = "<!-- cache-cost:begin -->", end = "<!-- cache-cost:end -->";
  let doc = existsSync(DOCS) ? readFileSync(DOCS, "utf8") : "# Benchmarks\n\nEach section is written by the benchmark named in it; run it again to refresh it.\n";
  const section = `${begin}\n${body}\n${end}`;
  const a = doc.indexOf(begin), b = doc.indexOf(end);
  doc = a >= 0 && b > a ? doc.slice(0, a) + section + doc.slice(b + end.length) : doc.trimEnd() + "\n\n" + section + "\n";
  writeFileSync(DOCS, doc);
}

await main().catch((error) => {
  console.error(`cache-cost: ${error.message}`);
  process.exit(1);
});
