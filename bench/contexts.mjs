// What a built context carries, on real and synthetic agent sessions:
// for each session, format, budget and mode, is the task (first user request) and the latest
// request in the context, is it valid and within budget, how much of the budget is used when the
// history is larger, and does anything leave the context uncovered while a summary is configured.
// Run: npm run build && node bench/contexts.mjs [--json]
// The Claude Code logs and the SWE-agent trajectory are the shared ones, or the project's own
// without them (bench/fixtures.mjs).
import { ConversationHistory, validateMessages } from "../dist/node.js";
import { readFixture, sharedPresent } from "./fixtures.mjs";

function claudeCode(name) {
  return readFixture(name)
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line))
    .filter((record) => (record.type === "user" || record.type === "assistant") && !record.isSidechain)
    .map((record) => record.message);
}

function sweAgent() {
  const traj = JSON.parse(readFixture("swe-agent"));
  return traj.history.map(({ tool_call_ids, ...rest }) => (Array.isArray(tool_call_ids) ? { ...rest, tool_call_id: tool_call_ids[0] } : rest));
}

// A deterministic long single-turn coding session in Anthropic format: one task, then hundreds of
// reads, edits, shell runs (some failing), greps and todo updates over a small code base.
export function syntheticCodingSession({ seed = 7, steps = 80, format = "anthropic" } = {}) {
  let state = seed;
  const rand = () => ((state = (state * 1103515245 + 12345) % 2147483648) / 2147483648);
  const pick = (list) => list[Math.floor(rand() * list.length)];
  const files = ["lib/app/accounts/user.ex", "lib/app_web/controllers/session_controller.ex", "lib/app/auth/totp.ex",
    "test/app_web/controllers/session_controller_test.exs", "config/runtime.exs", "lib/app_web/router.ex", "mix.exs",
    "lib/app/repo.ex", "assets/js/app.js", "priv/repo/migrations/20240101_add_totp.exs"];
  const fn = () => pick(["verify", "load_user", "check_code", "render_error", "put_session", "decode", "handle_info", "call"]) + "_" + Math.floor(rand() * 99);
  const code = (path, lines) => Array.from({ length: lines }, (_, i) =>
    i % 9 === 0 ? `  def ${fn()}(conn, params) do` : i % 9 === 8 ? "  end" : `    # ${path} line ${i}: ${pick(["validate", "assign", "query", "pipe"])} ${Math.floor(rand() * 1e6).toString(36)} |> ${fn()}()`).join("\n");
  const task = "Users with 2FA enabled get a 500 on POST /session/verify after the Phoenix 1.7 upgrade. Find the cause in the session controller and the TOTP module, fix it, and add a regression test in session_controller_test.exs. Do not change the public API of App.Accounts.";
  const anthropic = [{ role: "user", content: task }];
  let todos = [
    { content: "Reproduce the 500 on /session/verify", status: "in_progress" },
    { content: "Fix TOTP verification in lib/app/auth/totp.ex", status: "pending" },
    { content: "Add regression test", status: "pending" },
    { content: "Run the full test suite", status: "pending" },
  ];
  let id = 0;
  for (let s = 0; s < steps; s++) {
    const kind = s % 17 === 5 ? "todo" : pick(["read", "read", "edit", "bash", "bash", "grep"]);
    const call = { type: "tool_use", id: `toolu_${(++id).toString().padStart(4, "0")}`, name: "", input: {} };
    let result, isError = false;
    const path = pick(files);
    if (kind === "read") {
      call.name = "Read"; call.input = { file_path: `/home/dev/app/${path}` };
      result = code(path, 60 + Math.floor(rand() * 200));
    } else if (kind === "edit") {
      call.name = "Edit"; call.input = { file_path: `/home/dev/app/${path}`, old_string: `def ${fn()}(`, new_string: `def ${fn()}(` };
      result = `The file /home/dev/app/${path} has been updated.`;
    } else if (kind === "bash") {
      const cmd = pick(["mix test test/app_web/controllers/session_controller_test.exs", "mix compile --warnings-as-errors", "mix format --check-formatted", "git diff --stat"]);
      call.name = "Bash"; call.input = { command: cmd, description: "run " + cmd.split(" ")[1] };
      isError = rand() < 0.3;
      result = isError
        ? `** (CompileError) lib/app/auth/totp.ex:${10 + Math.floor(rand() * 80)}: undefined function ${fn()}/2\n` + code("trace", 20)
        : code("output", 20 + Math.floor(rand() * 60));
    } else if (kind === "grep") {
      call.name = "Grep"; call.input = { pattern: fn(), path: "/home/dev/app/lib" };
      result = files.slice(0, 1 + Math.floor(rand() * 5)).map((f) => `/home/dev/app/${f}:${Math.floor(rand() * 300)}: ${fn()}`).join("\n");
    } else {
      const done = Math.min(todos.length - 1, Math.floor(s / 40));
      todos = todos.map((t, i) => ({ ...t, status: i < done ? "completed" : i === done ? "in_progress" : "pending" }));
      call.name = "TodoWrite"; call.input = { todos };
      result = "Todos have been modified successfully.";
    }
    const say = rand() < 0.5 ? [{ type: "text", text: pick(["Let me look at the controller.", "The error comes from the TOTP check; I will trace it.", "Running the tests again.", "Now the regression test."]) }] : [];
    anthropic.push({ role: "assistant", content: [...say, call] });
    anthropic.push({ role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: result, ...(isError ? { is_error: true } : {}) }] });
  }
  anthropic.push({ role: "assistant", content: "The fix is in place; the regression test passes. Running the whole suite now." });
  if (format === "anthropic") return anthropic;
  throw new Error("only anthropic");
}

const SESSIONS = [
  { name: "claude-code-tool-heavy", format: "anthropic", messages: () => claudeCode("claude-code-tool-heavy") },
  { name: "claude-code-short", format: "anthropic", messages: () => claudeCode("claude-code-short") },
  { name: sharedPresent ? "swe-agent-marshmallow" : "swe-agent-trajectory", format: "openai", messages: sweAgent },
  { name: "synthetic-coding-100k", format: "anthropic", messages: () => syntheticCodingSession() },
];
const BUDGETS = [60_000, 30_000, 6_000, 3_000, 2_000];
const MODES = {
  "budget only": (max) => ({ budget: { contextWindow: max, targetRatio: 1 }, summary: null }),
  "budget + summary": (max) => ({ budget: { contextWindow: max, targetRatio: 1 } }),
  "full pipeline": (max) => ({ budget: { contextWindow: max, targetRatio: 1 }, thin: true }),
};

function userTexts(messages) {
  const texts = [];
  for (const m of messages) {
    if (m.role !== "user") continue;
    if (typeof m.content === "string") texts.push(m.content);
    else for (const b of m.content ?? []) if (b.type === "text" && b.text.trim()) texts.push(b.text);
  }
  return texts;
}
const contextText = (out) => JSON.stringify(out.messages);
// Kept verbatim, or head-and-tail truncated: its first and last 200 characters are both there.
const carries = (haystack, text) => {
  const s = JSON.stringify(text).slice(1, -1);
  return haystack.includes(s) || (haystack.includes(s.slice(0, 200)) && haystack.includes(s.slice(-200)));
};

const rows = [];
for (const session of SESSIONS) {
  const messages = session.messages();
  const texts = userTexts(messages);
  const task = texts[0], latest = texts.at(-1);
  for (const max of BUDGETS) {
    for (const [mode, options] of Object.entries(MODES)) {
      const history = new ConversationHistory({ encoding: "o200k_base", format: session.format });
      let row = { session: session.name, budget: max, mode };
      try {
        history.appendMany(messages);
        const size = history.tokenCount().total;
        const out = history.build({ format: session.format, ...options(max) });
        const haystack = contextText(out);
        const dropped = out.receipt.runs.filter((r) => r.action === "dropped" && r.reason !== "repair").reduce((n, r) => n + r.count, 0);
        row = {
          ...row,
          messages: messages.length,
          history: size,
          total: out.tokens.total,
          valid: validateMessages(out.messages, session.format).length === 0,
          within: out.tokens.total <= max,
          task: carries(haystack, task),
          latest: carries(haystack, latest),
          fill: size > max ? out.tokens.total / max : null,
          unchanged: size <= max ? out.tokens.total === size : null,
          droppedUncovered: options(max).summary === null ? null : dropped,
          summary: out.receipt.summary ? out.receipt.summary.tokens : 0,
        };
      } catch (error) {
        row.error = `${error.name}: ${error.message}`;
      }
      rows.push(row);
    }
  }
}

if (process.argv.includes("--json")) {
  console.log(JSON.stringify(rows, null, 2));
} else {
  const yes = (b) => (b === null || b === undefined ? "-" : b ? "yes" : "NO");
  console.log("session                  budget  mode              history   total  valid within task latest fill  unchanged uncovered");
  for (const r of rows) {
    if (r.error) {
      console.log(`${r.session.padEnd(24)} ${String(r.budget).padStart(6)}  ${r.mode.padEnd(17)} ERROR ${r.error}`);
      continue;
    }
    console.log(
      `${r.session.padEnd(24)} ${String(r.budget).padStart(6)}  ${r.mode.padEnd(17)} ${String(r.history).padStart(7)} ${String(r.total).padStart(7)}  ` +
        `${yes(r.valid).padEnd(5)} ${yes(r.within).padEnd(6)} ${yes(r.task).padEnd(4)} ${yes(r.latest).padEnd(6)} ` +
        `${r.fill === null ? "  -  " : (r.fill * 100).toFixed(0).padStart(3) + "%"}  ${yes(r.unchanged).padEnd(9)} ${r.droppedUncovered ?? "-"}`,
    );
  }
  const failures = rows.filter((r) => r.error || !r.valid || !r.within || !r.task || !r.latest || (r.fill !== null && r.fill < 0.9) || r.unchanged === false || r.droppedUncovered > 0);
  console.log(`\n${rows.length} builds, ${failures.length} fall short of issue #11's checks`);
}
