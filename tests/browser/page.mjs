// The browser page's script: imports the package by its bare name (resolved by the page's import
// map), checks counts, histories and errors against the fixtures (tests/fixtures), and renders everything.
// Results are also left in window.__results for the test driver.
import {
  Tokenizer,
  ConversationHistory,
  convertMessages,
  ContextCompactorError,
  InvalidMessageError,
  InvalidArgumentError,
  Session,
  validateMessages,
} from "context-compactor";

const params = new URLSearchParams(location.search);
const FIXTURES = params.get("fixtures") ?? "/fixtures/";
const checks = [];
const out = document.getElementById("out");

const el = (tag, attrs = {}, ...children) => {
  const node = Object.assign(document.createElement(tag), attrs);
  node.append(...children.map((c) => (c instanceof Node ? c : String(c))));
  return node;
};
const section = (title) => out.appendChild(el("section", {}, el("h2", {}, title)));
const table = (parent, head, rows) => {
  const t = el("table");
  if (head) t.append(el("tr", {}, ...head.map((h) => el("th", {}, h))));
  for (const row of rows) t.append(el("tr", {}, ...row.map((c) => (c instanceof Node ? el("td", {}, c) : el("td", { className: typeof c === "number" ? "num" : "" }, c)))));
  parent.append(t);
};
const mark = (ok) => el("span", { className: ok ? "ok" : "bad" }, ok ? "✓" : "✗");
function check(name, ok, detail = "") {
  checks.push({ name, ok: Boolean(ok), detail: String(detail) });
  return mark(ok);
}
/** JSON with sorted keys: equality of JSON values regardless of key order. */
const canon = (v) => JSON.stringify(v, (k, x) => (x && typeof x === "object" && !Array.isArray(x) ? Object.fromEntries(Object.keys(x).sort().map((key) => [key, x[key]])) : x));
const fetchText = async (path) => {
  const res = await fetch(FIXTURES + path);
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return res.text();
};

async function main() {
  const t0 = performance.now();
  const o200k = new Tokenizer("o200k_base");
  const cl100k = new Tokenizer("cl100k_base");
  const toks = { o200k_base: o200k, cl100k_base: cl100k };
  o200k.count("warm up");
  const firstCountMs = performance.now() - t0;

  // 1. Token vectors
  const cookbook = JSON.parse(await fetchText("tokens/openai-cookbook-chat-token-counts.json"));
  const plans = await fetchText("tokens/token-vectors.txt");
  const vectors = [...plans.matchAll(/^EncodingName: (\S+)\nSample: ([\s\S]*?)\nEncoded: \[([^\]]*)\]$/gm)]
    .filter((m) => toks[m[1]])
    .map((m) => ({ encoding: m[1], text: m[2], ids: m[3].trim() ? m[3].split(",").map(Number) : [] }));
  const s1 = section("Token counts: cookbook vectors, then every token vector (ids from tiktoken)");
  const rows = [];
  for (const v of cookbook.encoding_vectors.filter((v) => toks[v.encoding])) {
    const got = [...toks[v.encoding].encode(v.text)];
    rows.push([v.encoding, v.text, v.ids.length, got.length, el("code", {}, got.join(" ")), check(`cookbook ${v.encoding} ${v.text}`, canon(got) === canon(v.ids), got)]);
  }
  let same = 0;
  for (const v of vectors) if (canon([...toks[v.encoding].encode(v.text)]) === canon(v.ids) && toks[v.encoding].count(v.text) === v.ids.length) same++;
  rows.push(["both", `token-vectors.txt: ${vectors.length} vectors`, vectors.length, same, "ids identical", check("token vectors", same === vectors.length && vectors.length === 100, `${same}/${vectors.length}`)]);
  table(s1, ["encoding", "text", "expected", "got", "ids", ""], rows);

  // 2. Chat counts (OpenAI's rules)
  const s2 = section("Chat prompt tokens (cookbook example)");
  const chatRows = [];
  for (const [enc, model, tools, expected] of [
    ["o200k_base", "gpt-4o", false, 124], ["cl100k_base", "gpt-4", false, 129],
    ["o200k_base", "gpt-4o", true, 101], ["cl100k_base", "gpt-4", true, 105],
  ]) {
    const count = tools
      ? toks[enc].countMessages(cookbook.tools_example.messages, { tools: cookbook.tools_example.tools })
      : toks[enc].countMessages(cookbook.chat_example_messages);
    chatRows.push([model, enc, tools ? "1 tool" : "none", expected, count.total, check(`chat ${model} tools=${tools}`, count.total === expected, count.total)]);
  }
  table(s2, ["model", "encoding", "tools", "expected", "counted", ""], chatRows);

  // 3. An agent conversation in a ConversationHistory
  const runs = JSON.parse(await fetchText("openai/airline-runs.json"));
  const runIndex = Number(params.get("run") ?? 0);
  const traj = runs[runIndex].traj;
  const s3 = section(`airline run ${runIndex} (${traj.length} OpenAI messages) in a ConversationHistory`);
  const history = new ConversationHistory({ encoding: "o200k_base" });
  const t1 = performance.now();
  const ids = history.appendMany(traj);
  const count = history.tokenCount();
  const report = history.tokenReport();
  const ms = performance.now() - t1;
  const lossless = canon(history.messages()) === canon(traj);
  const anthropic = history.messages("anthropic");
  const back = convertMessages(anthropic, "anthropic", "openai");
  table(s3, null, [
    ["messages / ids", `${history.length} / ${ids[0]}…${ids.at(-1)}`],
    ["prompt tokens (o200k_base)", count.total],
    ["same as Tokenizer.countMessages", check("history count = countMessages", count.total === o200k.countMessages(traj).total, count.total)],
    ["read back as OpenAI: identical JSON", check("lossless openai", lossless)],
    ["as Anthropic: messages", `${anthropic.messages.length} (system: ${typeof anthropic.system})`],
    ["openai → anthropic → openai keeps tool ids", check("tool ids after conversion", canon(back.map((m) => m.tool_call_id ?? m.tool_calls?.map((c) => c.id) ?? null)) === canon(traj.map((m) => m.tool_call_id ?? m.tool_calls?.map((c) => c.id) ?? null)))],
    ["append + count + report", `${ms.toFixed(1)} ms`],
  ]);
  table(s3, ["role", "tokens"], Object.entries(report.byRole).map(([k, v]) => [k, v]));
  table(s3, ["part", "tokens"], Object.entries(report.byPart).map(([k, v]) => [k, v]));
  check("report adds up", Object.values(report.byPart).reduce((a, b) => a + b, 0) + report.replyPriming === report.total);

  const log = (await fetchText("anthropic/claude-code-tool-heavy.jsonl")).split("\n").filter(Boolean).map((l) => JSON.parse(l))
    .filter((r) => r.type === "user" || r.type === "assistant").map((r) => r.message);
  const claude = new ConversationHistory({ format: "anthropic" });
  claude.appendMany(log);
  const claudeReport = claude.tokenReport();
  const s4 = section(`Claude Code log (${log.length} Anthropic messages)`);
  table(s4, null, [
    ["read back as Anthropic: identical JSON", check("lossless anthropic", canon(claude.messages().messages) === canon(log))],
    ["prompt tokens (o200k_base)", claudeReport.total],
    ["by part", Object.entries(claudeReport.byPart).map(([k, v]) => `${k} ${v}`).join(", ")],
  ]);

  // 4. Errors are typed
  const s5 = section("Errors");
  let error;
  try {
    o200k.countMessages([{ role: "user", content: "hi" }, { role: "tool", content: "no id" }]);
  } catch (e) {
    error = e;
  }
  table(s5, ["thrown", "instanceof", "index", "message", ""], [[
    error?.name, `${error instanceof InvalidMessageError} / ${error instanceof ContextCompactorError}`, error?.index, error?.message,
    check("typed error", error instanceof InvalidMessageError && error.index === 1 && /message 1/.test(error.message), error?.message),
  ]]);

  // 5. An agent session: memory, a budgeted context, persistence in localStorage, recall
  // Runs 1 to 3 (3 is a long one): 44 turns, enough for turn summaries to take the place of old turns.
  const s6 = section("An agent session with memory: airline runs 1–3 turn by turn");
  const session = new Session({ id: "browser-agent", memory: true, maxLoops: 100 });
  const turns = [];
  for (const run of runs.slice(1, 4)) {
    for (const message of run.traj) {
      if (message.role === "system" && turns.length > 0) continue;
      if (message.role === "user" || turns.length === 0) turns.push([]);
      turns.at(-1).push(message);
    }
  }
  let built;
  let valid = true;
  for (const [i, turn] of turns.entries()) {
    session.nextLoop();
    session.history.appendMany(turn, "openai");
    built = session.history.build({ format: "anthropic", budget: { contextWindow: 8_000 }, summary: { triggerTokens: 4_000, targetTokens: 2_500 } });
    valid &&= validateMessages(built.messages, "anthropic").length === 0 && built.receipt.withinBudget;
    session.memory.recordTurn({ workspaceContext: `turn ${i + 1}: ${turn.length} messages` });
  }
  const used = built.receipt.memory;
  localStorage.setItem("session:browser-agent", JSON.stringify(session.export()));
  const stored = localStorage.getItem("session:browser-agent");
  const restored = Session.import(stored);
  const sameAfterReload = canon(restored.export()) === canon(session.export());
  const again = restored.history.build({ format: "anthropic", budget: { contextWindow: 8_000 }, summary: { triggerTokens: 4_000, targetTokens: 2_500 } });
  const dropped = used?.turns[0];
  const recalled = dropped === undefined ? undefined : restored.memory.recall({ turnNumbers: [dropped] });
  let corrupt;
  try {
    Session.import(stored.slice(0, stored.length / 2));
  } catch (e) {
    corrupt = e;
  }
  table(s6, null, [
    ["turns / messages", `${turns.length} / ${session.history.length}`],
    ["every context valid for Anthropic and within budget", check("session contexts valid", valid)],
    ["last context: tokens by part", `system ${built.tokens.system}, summary ${built.tokens.summary}, recent ${built.tokens.recent}, total ${built.tokens.total} ≤ ${built.receipt.budget.maxTokens}`],
    ["turn summaries in the context", check("memory in context", used && used.turns.length > 0 && JSON.stringify(built.messages).includes(`[Turn ${used.turns.at(-1)}] `), JSON.stringify(used))],
    ["turns summarised / left for recall", used ? `${used.turns.join(", ")} / ${used.omitted.join(", ") || "none"}` : "none"],
    ["localStorage: stored and imported, identical export", check("session survives localStorage", sameAfterReload, stored.length)],
    ["the reloaded session builds the same context", check("same context after reload", canon(again.messages) === canon(built.messages))],
    [`recall_context turn ${dropped}`, check("recall a summarised turn", recalled?.turns[0].messages.length > 0, JSON.stringify(recalled)?.slice(0, 200))],
    ["a truncated export", check("truncated import refused", corrupt instanceof InvalidArgumentError, corrupt?.message)],
  ]);
  localStorage.removeItem("session:browser-agent");

  return { firstCountMs, count: count.total, historyLength: history.length };
}

const status = document.getElementById("status");
main()
  .then((summary) => {
    const failed = checks.filter((c) => !c.ok);
    status.dataset.status = failed.length ? "fail" : "pass";
    status.textContent = failed.length
      ? `FAIL: ${failed.map((c) => c.name).join(", ")}`
      : `PASS: ${checks.length} checks (wasm ready to first o200k count: ${summary.firstCountMs.toFixed(0)} ms)`;
    window.__results = { checks, summary };
  })
  .catch((error) => {
    status.dataset.status = "fail";
    status.textContent = `FAIL: ${error?.name}: ${error?.message}`;
    window.__results = { checks, error: { name: error?.name, message: error?.message, isPackageError: error instanceof ContextCompactorError } };
  });
