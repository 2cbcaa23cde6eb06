// The `context-compactor` command, run as a child process (dist/cli.js, the package's bin) on
// every fixture and on bad files: outputs parse and pass the provider's rules, budgets
// hold (recounted here), exit codes are 0 / 1 (bad input) / 2 (usage), errors name the line or
// record and the field, and no stack trace reaches the user.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { fileURLToPath } from "node:url";
import { ConversationHistory, Tokenizer, convertMessages, loadConversation, validateMessages } from "context-compactor";
import { FIXTURES, AIRLINE_RUNS, SWE_AGENT, claudeCode } from "./fixtures.mjs";

const CLI = fileURLToPath(new URL("../../dist/cli.js", import.meta.url));
const fixture = (path) => fileURLToPath(new URL(path, FIXTURES));

function cli(args, { input, env } = {}) {
  const result = spawnSync(process.execPath, [CLI, ...args], {
    input,
    encoding: "utf8",
    env: { ...process.env, CONTEXT_COMPACTOR_PROGRESS: "", ...env },
    maxBuffer: 64 * 1024 * 1024,
  });
  assert.doesNotMatch(result.stderr, /^\s+at /m, "no stack trace");
  return result;
}

let work;
const FILES = {};

before(() => {
  work = mkdtempSync(join(tmpdir(), "cc-cli-"));
  // An Anthropic request file: a system prompt and a real Claude Code session's messages.
  FILES.anthropic = join(work, "request.json");
  writeFileSync(FILES.anthropic, JSON.stringify({ system: "You are Claude Code.", messages: claudeCode("claude-code-tool-heavy.jsonl") }, null, 2));
  FILES.tau = fixture(AIRLINE_RUNS);
  FILES.swe = fixture(SWE_AGENT);
  FILES.short = fixture("anthropic/claude-code-short.jsonl");
  FILES.heavy = fixture("anthropic/claude-code-tool-heavy.jsonl");
});

after(() => rmSync(work, { recursive: true, force: true }));

/** The conversation's tokens, counted in-process the way the CLI's history does. */
function tokensOf(file, options = {}) {
  const loaded = loadConversation(readFileSync(file, "utf8"), options);
  const history = new ConversationHistory({ format: loaded.format });
  history.appendMany(loaded.messages);
  return { loaded, report: history.tokenReport() };
}

test("compact --budget: every fixture, both formats: valid context, within the budget, recounted", () => {
  const cases = [
    ["tau", FILES.tau, ["--run", "3"]],
    ["tau", FILES.tau, ["--run", "30"]],
    ["swe", FILES.swe, []],
    ["short", FILES.short, []],
    ["heavy", FILES.heavy, []],
    ["anthropic", FILES.anthropic, []],
  ];
  for (const [label, file, extra] of cases) {
    const run = extra[1] === undefined ? {} : { run: Number(extra[1]) };
    const { loaded, report } = tokensOf(file, run);
    for (const format of ["openai", "anthropic"]) {
      // Half the conversation as the provider bills it (Claude's rule for an Anthropic context),
      // but room for its system prompt: something must go.
      const billed = format === "openai" ? report.total
        : new Tokenizer("o200k_base").countMessages(convertMessages(loaded.messages, loaded.format, "anthropic"), { format }).total;
      const budget = Math.max(200, Math.floor(billed / 2));
      const { status, stdout, stderr } = cli(["compact", file, "--budget", String(budget), "--format", format, ...extra]);
      assert.equal(status, 0, `${label} ${format}: ${stderr}`);
      const context = JSON.parse(stdout);
      assert.deepEqual(validateMessages(context, format), [], `${label} ${format}`);
      const recount = new Tokenizer("o200k_base").countMessages(context, { format }).total;
      // An Anthropic context's budget is in Claude's billed units, as countMessages counts it.
      assert.ok(recount <= budget, `${label} ${format}: ${recount} tokens recounted, budget ${budget}`);
      assert.match(stderr, /^messages\s+count\s+action\s+reason\s+tokens before\s+after$/m, "the receipt table");
      assert.match(stderr, new RegExp(`total [\\d,]+ of ${budget.toLocaleString("en-US")} \\(within budget\\)`));
      assert.match(stderr, new RegExp(`before: ${report.total.toLocaleString("en-US")} tokens in ${loaded.origins.length} messages`));
      if (format === loaded.format) console.log(`# ${label} (${loaded.source}): ${report.total} -> ${recount} tokens, budget ${budget}`);
    }
  }
});

test("compact --json: the build result and what was loaded; --budget N is budget.maxTokens", () => {
  const { status, stdout } = cli(["compact", FILES.heavy, "--budget", "1500", "--json"]);
  assert.equal(status, 0);
  const result = JSON.parse(stdout);
  assert.equal(result.receipt.budget.maxTokens, 1500);
  assert.ok(result.tokens.total <= 1500);
  assert.deepEqual(validateMessages(result.messages, "anthropic"), []);
  assert.equal(result.loaded.source, "claude-code");
  assert.equal(result.loaded.ids.length, result.receipt.messagesBefore);
  assert.equal(result.receipt.runs.reduce((sum, run) => sum + run.count, 0), result.receipt.messagesBefore, "every message in a run");
  assert.equal(result.loaded.messages, undefined, "the messages are not repeated");
});

test("compact --profile, --summary none, --out", () => {
  const out = join(work, "context.json");
  const profiled = cli(["compact", FILES.tau, "--run", "3", "--profile", "gpt-4", "--out", out]);
  assert.equal(profiled.status, 0, profiled.stderr);
  assert.equal(profiled.stdout, "", "the context went to --out");
  const context = JSON.parse(readFileSync(out, "utf8"));
  assert.deepEqual(validateMessages(context, "openai"), []);
  assert.match(profiled.stderr, /^profile gpt-4: a 8,192-token window, cl100k_base$/m);
  assert.ok(new Tokenizer("cl100k_base").countMessages(context).total <= 6144);
  // A budget below what is left after thinning: the summary is due.
  const summarised = cli(["compact", FILES.tau, "--run", "3", "--budget", "3000"]);
  assert.equal(summarised.status, 0, summarised.stderr);
  // m1 is the system prompt, m2 the task (pinned), the last messages the latest turns: a
  // compaction event down to the low-water mark.
  assert.match(summarised.stderr, /^m1–m2\s+2\s+kept\s/m);
  const [, last, count] = summarised.stderr.match(/^m3–m(\d+)\s+(\d+)\s+summarised\s/m) ?? [];
  assert.ok(Number(last) >= 40 && Number(count) === Number(last) - 2, summarised.stderr);
  assert.match(summarised.stderr, new RegExp(`summary: [\\d,]+ tokens \\(extractive, made now\\), covers the messages up to m${last}`));
  assert.ok(JSON.parse(summarised.stdout).some((m) => m.role === "system" && m.content.includes("userMessages")), "the summary is in the context");
  const none = cli(["compact", FILES.tau, "--run", "3", "--budget", "3000", "--summary", "none"]);
  assert.equal(none.status, 0, none.stderr);
  assert.match(none.stderr, /summary: none \(--summary none\)/);
  assert.doesNotMatch(none.stderr, /summarised/);
  // A model name resolves to its profile; the default profile follows the file's format.
  assert.match(cli(["compact", FILES.swe, "--profile", "gpt-4o-2024-08-06"]).stderr, /profile gpt-4o:/);
  assert.match(cli(["compact", FILES.short]).stderr, /profile claude-sonnet-4 \(the default/);
  // --encoding counts a profile's settings with another encoding, and says so.
  assert.match(cli(["compact", FILES.swe, "--profile", "gpt-4o", "--encoding", "cl100k_base"]).stderr, /cl100k_base \(--encoding; the profile counts with o200k_base\)/);
});

test("compact and inspect --budget: how full the context is and why, as the receipt says", () => {
  const n = (value) => value.toLocaleString("en-US");
  // Over the budget: a compaction event (the first build), toward the low-water mark.
  const args = ["--run", "3", "--budget", "3000"];
  const { receipt } = JSON.parse(cli(["compact", FILES.tau, ...args, "--json"]).stdout);
  assert.equal(receipt.cache.event, true);
  assert.equal(receipt.cache.reason, "first");
  const compacted =
    `context: ${n(receipt.tokensAfter)} of 3,000 tokens: compacted now (a compaction event: the first build over the budget) ` +
    `toward the low-water mark ${n(receipt.budget.lowWaterTokens)}; later calls append until 3,000`;
  const text = cli(["compact", FILES.tau, ...args]);
  assert.equal(text.status, 0, text.stderr);
  assert.ok(text.stderr.split("\n").includes(compacted), text.stderr);
  assert.ok(cli(["inspect", FILES.tau, ...args]).stderr.split("\n").includes(compacted));
  // Within the budget: no event; calls append until the budget, then an event.
  const roomy = JSON.parse(cli(["compact", FILES.tau, "--run", "3", "--budget", "30000", "--json"]).stdout).receipt;
  assert.equal(roomy.cache.event, false);
  const appending =
    `context: ${n(roomy.tokensAfter)} of 30,000 tokens: no compaction event; later calls append until 30,000, ` +
    `where an event compacts toward the low-water mark ${n(roomy.budget.lowWaterTokens)}`;
  assert.ok(cli(["compact", FILES.tau, "--run", "3", "--budget", "30000"]).stderr.split("\n").includes(appending));
});

test("compact and inspect: the budget line is the receipt's resolved budget, and --budget N is the library's budget of N", () => {
  const n = (value) => value.toLocaleString("en-US");
  const line = (b) => `budget: ${n(b.maxTokens)} tokens, trigger ${n(b.triggerTokens)}, low-water mark ${n(b.lowWaterTokens)}; split: ` +
    [`system ${n(b.systemTokens)}`, b.stateTokens ? `state ${n(b.stateTokens)}` : "", b.pinnedTokens ? `pinned ${n(b.pinnedTokens)}` : "",
      b.requestTokens ? `request ${n(b.requestTokens)}` : "", `summary up to ${n(b.summaryBudget)}`, `recent ${n(b.recentBudget)}`].filter(Boolean).join(", ");
  for (const args of [["--run", "3", "--budget", "3000"], ["--run", "3", "--budget", "30000"], ["--run", "3", "--profile", "gpt-4"]]) {
    const { receipt } = JSON.parse(cli(["compact", FILES.tau, ...args, "--json"]).stdout);
    const expected = line(receipt.budget);
    for (const command of ["compact", "inspect"]) {
      const { status, stderr } = cli([command, FILES.tau, ...args]);
      assert.equal(status, 0, stderr);
      assert.ok(stderr.split("\n").includes(expected), `${command} ${args.join(" ")}: ${expected}\n${stderr}`);
    }
  }
  // The trigger and low-water mark are the library's own for a budget of N: the CLI adds no target of its own.
  const loaded = loadConversation(readFileSync(FILES.tau, "utf8"), { run: 3 });
  const history = new ConversationHistory({ format: loaded.format });
  history.appendMany(loaded.messages);
  const library = history.build({ budget: { maxTokens: 3000 }, format: loaded.format, thin: true, summary: { summarizer: "extractive" } }).receipt.budget;
  const printed = JSON.parse(cli(["compact", FILES.tau, "--run", "3", "--budget", "3000", "--json"]).stdout).receipt.budget;
  assert.deepEqual(printed, library);
  assert.match(cli(["compact", "--help"]).stdout, /the trigger, low-water mark and split the build resolves are printed/);
  assert.doesNotMatch(cli(["compact", "--help"]).stdout, /0\.6 N/);
});

test("count: tokens by role and by part, as history.tokenReport() gives them", () => {
  for (const file of [FILES.swe, FILES.short, FILES.anthropic]) {
    const { report } = tokensOf(file);
    const { status, stdout } = cli(["count", file]);
    assert.equal(status, 0);
    assert.match(stdout, new RegExp(`^total\\s+${report.total.toLocaleString("en-US")}$`, "m"));
    for (const [role, tokens] of Object.entries(report.byRole)) assert.match(stdout, new RegExp(`^${role}\\s+${tokens.toLocaleString("en-US")}$`, "m"));
    for (const [part, tokens] of Object.entries(report.byPart)) assert.match(stdout, new RegExp(`^${part}\\s+${tokens.toLocaleString("en-US")}$`, "m"));
    const json = JSON.parse(cli(["count", file, "--json"]).stdout);
    assert.equal(json.total, report.total);
  }
  const cl100k = JSON.parse(cli(["count", FILES.swe, "--json", "--encoding", "cl100k_base"]).stdout);
  assert.equal(cl100k.encoding, "cl100k_base");
  const converted = cli(["count", FILES.swe, "--format", "anthropic"]);
  assert.match(converted.stdout, /converted to anthropic/);
  assert.match(converted.stdout, /Anthropic's tokenizer is not public/);
});

test("inspect: one line per stored message with what the build does to it", () => {
  const { status, stdout, stderr } = cli(["inspect", FILES.heavy, "--budget", "1500"]);
  assert.equal(status, 0, stderr);
  const lines = stdout.trimEnd().split("\n");
  assert.match(lines[0], /^id\s+role\s+tokens\s+after\s+action\s+preview$/);
  assert.equal(lines.length - 1, 23, "a line per message");
  assert.match(lines[1], /^m1\s+user\s/);
  assert.ok(lines.some((l) => /\b(dropped|summarised|thinned|compressed)\b/.test(l)), "something had to give");
  assert.ok(lines.some((l) => /\[meta\] <local-command-caveat>/.test(l)), "marks are shown");
  const json = JSON.parse(cli(["inspect", FILES.heavy, "--budget", "1500", "--json"]).stdout);
  assert.equal(json.length, 23);
  for (const key of ["action", "id", "origin", "preview", "role", "tokensAfter", "tokensBefore"]) assert.ok(key in json[0], key);
  // With a summary configured nothing leaves the context uncovered: no drops, so no drop reasons.
  assert.deepEqual(json.filter((entry) => entry.action === "dropped"), []);
  assert.ok(json.some((entry) => entry.action === "summarised"), "the older messages are summarised");
  assert.deepEqual(json[0].origin, { line: 4 });
});

test("standard input, and a UTF-16 file (as PowerShell writes them)", () => {
  const input = JSON.stringify([{ role: "user", content: "hi" }, { role: "assistant", content: "hello" }]);
  const piped = cli(["count", "-", "--json"], { input });
  assert.equal(piped.status, 0, piped.stderr);
  assert.equal(JSON.parse(piped.stdout).messages, 2);
  const utf16 = join(work, "utf16.json");
  writeFileSync(utf16, Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(input, "utf16le")]));
  assert.equal(JSON.parse(cli(["count", utf16, "--json"]).stdout).messages, 2);
});

test("bad files: exit code 1 and a message naming the line or record and the field", () => {
  const write = (name, text) => {
    const path = join(work, name);
    writeFileSync(path, text);
    return path;
  };
  const user = JSON.stringify({ type: "user", message: { role: "user", content: "hi" } });
  const cases = [
    [join(work, "missing.json"), /cannot read .*missing\.json: no such file/],
    [work, /it is a directory/],
    [write("empty.json", ""), /empty\.json: the file is empty/],
    [write("truncated.json", '[\n  {"role": "user", "content": "hi"},\n'), /truncated\.json: the file is not valid JSON: EOF while parsing .* at line 3/],
    [write("broken.jsonl", `${user}\n${user}\n{"type": "assistant", "message": {\n${user}\n`), /broken\.jsonl: line 3: not valid JSON/],
    [write("nomessage.jsonl", `${user}\n{"type": "user", "uuid": "u2"}\n`), /nomessage\.jsonl: line 2: record has no "message" \(at line 2\.message\)/],
    [write("wrongtype.jsonl", `${user}\n{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": []}]}}\n`), /line 2: `input` must be an object, got an array \(at line 2\.message\.content\[0\]\.input\)/],
    [write("orphan.json", '[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "x"}]'), /orphan\.json: \[1\]: tool result answers tool call "c9", which no earlier assistant message made/],
    [write("shape.json", '{"conversation": []}'), /shape\.json: expected .* got an object with keys `conversation`/],
    [write("numbers.json", "[1, 2, 3]"), /\[0\]: expected a message \(an object\), got a number/],
    [write("traj.traj", '{"history": [{"role": "tool", "content": "x", "tool_call_ids": 5}]}'), /history\[0\]: `tool_call_ids` must be an array of ids, got a number \(at history\[0\]\.tool_call_ids\)/],
    [write("binary.bin", Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00, 0xff, 0xfe])), /binary data/],
    [FILES.swe, /run 1 was asked for, but the file is a SWE-agent trajectory/, ["--run", "1"]],
    [FILES.tau, /run 500 does not exist: the file has 40 runs/, ["--run", "500"]],
  ];
  for (const [file, message, extra = []] of cases) {
    for (const command of ["compact", "count", "inspect"]) {
      const { status, stdout, stderr } = cli([command, file, ...extra]);
      assert.equal(status, 1, `${command} ${file}: ${stderr}`);
      assert.equal(stdout, "");
      assert.match(stderr, message);
      assert.match(stderr, /^context-compactor: /);
      assert.equal(stderr.trimEnd().split("\n").length, 1, `one line: ${stderr}`);
    }
  }
});

test("the --repair hint is given only where --repair imports the file", () => {
  const write = (name, text) => {
    const path = join(work, name);
    writeFileSync(path, text);
    return path;
  };
  const user = JSON.stringify({ type: "user", message: { role: "user", content: "hi" } });
  const cannot = [
    write("hint-role.json", '[{"role": "wizard", "content": "hi"}]'),
    write("hint-content.json", '[{"role": "user", "content": 5}]'),
    write("hint-numbers.json", "[1, 2, 3]"),
    write("hint-input.jsonl", `${user}\n{"type": "assistant", "message": {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x", "input": []}]}}\n`),
    write("hint-traj.traj", '{"history": [{"role": "tool", "content": "x", "tool_call_ids": 5}]}'),
  ];
  for (const file of cannot) {
    const strict = cli(["count", file]);
    assert.equal(strict.status, 1, strict.stderr);
    assert.doesNotMatch(strict.stderr, /--repair/, `no hint: ${strict.stderr}`);
    assert.equal(cli(["count", file, "--repair"]).status, 1, "--repair does not import it either");
  }
  const orphan = write("hint-orphan.json", '[{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "c9", "content": "x"}]');
  const strict = cli(["count", orphan]);
  assert.match(strict.stderr, /which no earlier assistant message made .*\(--repair imports such a log leniently\)/);
  assert.equal(cli(["count", orphan, "--repair"]).status, 0, "--repair imports it");
});

test("usage: exit code 2, and --help for the tool and each command", () => {
  for (const args of [
    [],
    ["frobnicate", FILES.swe],
    ["compact"],
    ["compact", FILES.swe, FILES.short],
    ["compact", FILES.swe, "--bugdet", "5"],
    ["compact", FILES.swe, "--budget", "lots"],
    ["compact", FILES.swe, "--budget", "0"],
    ["compact", FILES.swe, "--budget", "100", "--profile", "gpt-4o"],
    ["compact", FILES.swe, "--profile", "llama-3"],
    ["compact", FILES.swe, "--format", "gemini"],
    ["compact", FILES.swe, "--summary", "abstractive"],
    ["compact", FILES.swe, "--encoding", "p50k_base"],
    ["count", FILES.swe, "--profile", "gpt-4o"],
    ["inspect", FILES.swe, "--out", "x.json"],
    ["compact", join(work, "does-not-exist.json"), "--budget", "x"],
  ]) {
    const { status, stderr } = cli(args);
    assert.equal(status, 2, `${args.join(" ")}: ${stderr}`);
    assert.match(stderr, /Run "context-compactor --help" for usage\./);
  }
  const help = cli(["--help"]);
  assert.equal(help.status, 0);
  assert.match(help.stdout, /^Usage: context-compactor <command> FILE/);
  for (const command of ["compact", "count", "inspect"]) {
    const { status, stdout } = cli([command, "--help"]);
    assert.equal(status, 0);
    assert.match(stdout, new RegExp(`^Usage: context-compactor ${command} FILE`));
  }
  const profiles = cli(["compact", "--help"]).stdout;
  assert.match(profiles, /^Profiles: .*\bgpt-4o\b/m);
  assert.match(profiles, /^Profiles: .*\bclaude-sonnet-4\b/m);
});

test("progress: drawn on stderr only for a terminal (forced here), and cleared", () => {
  // Progress shows from 1 MB on: the airline runs three times over, as one run list.
  const long = join(work, "long-runs.json");
  const runs = JSON.parse(readFileSync(FILES.tau, "utf8"));
  writeFileSync(long, JSON.stringify([...runs, ...runs, ...runs]));
  const plain = cli(["count", long]);
  assert.doesNotMatch(plain.stderr, /\r/, "not a TTY: no progress");
  const drawn = cli(["count", long, "--json"], { env: { CONTEXT_COMPACTOR_PROGRESS: "1" } });
  assert.equal(drawn.status, 0);
  assert.match(drawn.stderr, /\rreading\s+\[#+-*\]\s+\d+% [\d.]+\/[\d.]+ MB/);
  assert.ok(drawn.stderr.endsWith("\r\x1b[K"), "the bar is cleared before the output");
  assert.equal(JSON.parse(drawn.stdout).messages, 109, "stdout is untouched");
});

test("--repair: a Claude Code log cut at its head is refused with a hint, then imported leniently", () => {
  // The log with its first records removed, so that it starts with a tool result whose
  // call was before the cut (a resumed session).
  const lines = readFileSync(FILES.heavy, "utf8").split("\n").filter((line) => line.trim() !== "");
  const startsWithResult = (line) => {
    const record = JSON.parse(line);
    return record.type === "user" && Array.isArray(record.message?.content) && record.message.content.some((b) => b.type === "tool_result");
  };
  const cut = lines.findIndex(startsWithResult);
  assert.ok(cut > 0, "the fixture has a tool result to cut at");
  const truncated = join(work, "resumed.jsonl");
  writeFileSync(truncated, `${lines.slice(cut).join("\n")}\n`);

  const strict = cli(["count", truncated]);
  assert.equal(strict.status, 1, strict.stderr);
  assert.throws(() => loadConversation(readFileSync(truncated, "utf8")), /no earlier assistant message made/, "strict by default");
  assert.match(strict.stderr, /no earlier assistant message made.*--repair/s);

  const count = cli(["count", truncated, "--repair"]);
  assert.equal(count.status, 0, count.stderr);
  assert.match(count.stdout, /import repairs \(--repair\): \d+\n  message 0: orphanResult \(toolu_[^)]+\): tool result turned into text/);

  const compact = cli(["compact", truncated, "--repair", "--budget", "3000"]);
  assert.equal(compact.status, 0, compact.stderr);
  assert.match(compact.stderr, /message 0: orphanResult/);
  const context = JSON.parse(compact.stdout);
  assert.deepEqual(validateMessages(context, "anthropic"), []);

  const json = JSON.parse(cli(["compact", truncated, "--repair", "--budget", "3000", "--json"]).stdout);
  assert.equal(json.loaded.repairs[0].index, 0);
  assert.equal(json.loaded.repairs[0].kind, "orphanResult");
  assert.equal(json.loaded.ids.length, loadConversation(readFileSync(truncated, "utf8"), { repair: true }).messages.messages.length);

  const inspect = cli(["inspect", truncated, "--repair", "--budget", "3000"]);
  assert.equal(inspect.status, 0, inspect.stderr);
  assert.match(inspect.stderr, /message 0: orphanResult/);
  assert.match(inspect.stdout, /\[output of tool call toolu_/);
});
