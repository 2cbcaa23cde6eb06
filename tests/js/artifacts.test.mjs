// Artifacts (the store, the available-files list, file_reader and its digests) and the
// agent state, through the built package as a user imports it.
import { test } from "node:test";
import assert from "node:assert/strict";
import {
  Session,
  SessionStore,
  MemoryStorageAdapter,
  fileReaderTool,
  supportedLanguages,
  validateMessages,
  ConflictError,
  InvalidArgumentError,
  NotFoundError,
} from "context-compactor";

const code = (n) =>
  `import pandas as pd\n\ndef load_part_${n}(path):\n    return pd.read_csv(path)\n\n` +
  `def clean_part_${n}(df):\n    return df.dropna()\n` +
  `# ${"notes on the data. ".repeat(40)}\n`;

test("file_reader in both providers' shapes, and the supported languages", () => {
  const openai = fileReaderTool("openai");
  assert.equal(openai.function.name, "file_reader");
  assert.deepEqual(openai.function.parameters.required, ["path"]);
  assert.equal(fileReaderTool("anthropic").input_schema.type, "object");
  assert.ok(["python", "javascript", "typescript", "sql", "shell", "markdown", "go", "rust"].every((l) => supportedLanguages().includes(l)));
});

test("a long replay: the agent writes, lists and re-reads artifacts; every context is valid and within budget", () => {
  const session = new Session({ id: "analyst" });
  const { history } = session;
  history.append({ role: "system", content: "You are a data analyst. Answer in JSON." });
  session.setState({ todos: [{ content: "load the sales data", status: "in_progress" }, { content: "write the report" }], activeSkill: "analysis" });
  const maxTokens = 3_000;
  let reads = 0;
  let digested = 0; // the most reads any context held as their one-line digest
  for (let turn = 1; turn <= 40; turn++) {
    history.append({ role: "user", content: `Step ${turn}: analyse part ${turn} of the sales data.` });
    const saved = session.saveArtifact({ id: `code_part_${turn}`, language: turn % 7 === 0 ? "cobol" : "py", description: `销售数据分析 ${turn}`, content: code(turn) });
    assert.equal(saved.language, "python");
    assert.equal(saved.fileName, `code_part_${turn}.py`);
    if (turn % 7 === 0) assert.deepEqual(saved.languageFallback, { requested: "cobol", used: "python" });
    else assert.equal(saved.languageFallback, undefined);
    if (turn % 3 === 0) {
      // Re-read an earlier artifact in full.
      const id = `code_part_${turn - 2}`;
      const call = { id: `call_${turn}`, type: "function", function: { name: "file_reader", arguments: JSON.stringify({ path: id }) } };
      history.append({ role: "assistant", content: null, tool_calls: [call] });
      const result = session.answerFileReader(call);
      assert.equal(result.role, "tool");
      assert.ok(result.content.includes(`def clean_part_${turn - 2}`));
      history.append(result);
      reads++;
    }
    history.append({ role: "assistant", content: `Saved code_part_${turn}.` });
    const format = turn % 2 ? "openai" : "anthropic";
    // An event that keeps several turns digests the older reads among them (at the default
    // low-water mark, an event at 3,000 tokens keeps little more than the last turn whole).
    const { messages, tokens, receipt } = history.build({ format, budget: { maxTokens, lowWaterRatio: 0.7 } });
    assert.ok(tokens.total <= maxTokens && receipt.withinBudget, `turn ${turn}: ${tokens.total}`);
    const billed = receipt.budget.billedTokens ?? tokens.total;
    assert.ok(billed <= maxTokens, `turn ${turn}: ${billed} billed`);
    const { cachedTokens, writtenTokens, uncachedTokens } = receipt.cost;
    assert.equal(cachedTokens + writtenTokens + uncachedTokens, billed, "the predicted bill splits the whole input");
    assert.deepEqual(validateMessages(messages, format), [], `turn ${turn}`);
    const artifacts = receipt.state.sections.find((s) => s.part === "artifacts");
    assert.equal(artifacts.lines + artifacts.omitted, turn);
    assert.ok(tokens.state > 0 && tokens.state === receipt.state.tokens && receipt.budget.stateTokens === tokens.state);
    const text = JSON.stringify(messages);
    assert.ok(text.includes(`- code_part_${turn} (python) - 销售数据分析 ${turn}`), "the newest artifact is listed");
    assert.ok(text.includes("<code_ref>{code_id}</code_ref>"));
    assert.ok(text.includes("load the sales data (in progress)"));
    digested = Math.max(digested, receipt.runs.filter((r) => r.action === "digested").reduce((n, r) => n + r.count, 0));
  }
  assert.equal(session.artifacts().length, 40);
  assert.ok(reads >= 13);
  // Without a budget nothing has to go, and older reads are one-line digests.
  const { messages } = history.build({ summary: null });
  const text = JSON.stringify(messages);
  assert.ok(text.includes("[file read] code_part_1.py (python, 8 lines, functions: load_part_1, clean_part_1)"), text.slice(0, 2000));
  assert.ok(digested > 0, "under the budget, older reads were digested");
});

test("bad input gets a typed error and changes nothing", () => {
  const session = new Session();
  session.saveArtifact({ id: "code_sales_analysis", language: "python", content: "x = 1\n" });
  session.setState({ todos: [{ content: "plot" }] });
  const before = JSON.stringify(session.export());
  assert.throws(() => session.artifact("code_nope"), NotFoundError);
  assert.throws(() => session.saveArtifact({ id: "code_sales_analysis", language: "python", content: "y" }), ConflictError);
  assert.throws(
    () => session.saveArtifact({ id: "code_big", language: "python", content: "x".repeat(1_048_577) }),
    (e) => e instanceof InvalidArgumentError && /over the limit of 1048576/.test(e.message),
  );
  assert.throws(() => session.saveArtifact({ id: "code_c", language: "cobol", content: "y", strictLanguage: true }), InvalidArgumentError);
  assert.throws(() => session.saveArtifact({ id: "a/b", language: "python", content: "y" }), InvalidArgumentError);
  assert.throws(() => session.saveArtifact({ id: "code_d", language: "python" }), InvalidArgumentError);
  assert.throws(() => session.setState({ todos: [{ content: "x", status: "later" }] }), InvalidArgumentError);
  assert.throws(() => session.setState({ allowedTools: ["a", "a"] }), InvalidArgumentError);
  assert.throws(() => session.setState({ colour: "red" }), InvalidArgumentError);
  assert.equal(JSON.stringify(session.export()), before);
  // The model's bad call is an error result it can read, not a throw.
  const answer = session.answerFileReader({ type: "tool_use", id: "toolu_1", name: "file_reader", input: { path: "code_nope" } });
  assert.equal(answer.role, "user");
  assert.equal(answer.content[0].is_error, true);
});

test("artifacts and state are saved by the store, and a sub-agent starts fresh", async () => {
  const data = new Map();
  const store = await SessionStore.open(new MemoryStorageAdapter({ data }), { now: () => 1_000 });
  const chat = await store.create({ id: "thread-1" });
  chat.history.append({ role: "user", content: "analyse" });
  chat.session.saveArtifact({ id: "code_sales_analysis", language: "python", description: "销售数据分析", content: "import pandas\n" });
  chat.session.setState({ todos: [{ content: "plot" }], workspacePath: "/ws/thread-1", uploadedFiles: [{ name: "sales.csv", mediaType: "text/csv" }] });
  const child = chat.session.spawnSubagent("convert the PDF");
  const fresh = child.state();
  assert.deepEqual([fresh.todos, fresh.allowedTools, fresh.persistentTools, fresh.mentionedAgents, fresh.uploadedFiles], [[], [], [], [], []]);
  assert.equal(fresh.threadId, fresh.contextId);
  assert.equal(fresh.parentContext, "thread-1");
  assert.deepEqual(child.artifacts(), []);
  const before = chat.session.export();
  await store.close();
  assert.ok([...data.keys()].some((k) => k.includes("state")));

  const again = await (await SessionStore.open(new MemoryStorageAdapter({ data }))).open("thread-1");
  assert.deepEqual(again.session.export(), before);
  assert.equal(again.session.artifact("code_sales_analysis").description, "销售数据分析");
  assert.equal(again.session.state().workspacePath, "/ws/thread-1");
});

test("images sent once: an earlier turn's image goes as its placeholder, the stored one stays", () => {
  const png = "iVBORw0KGgoAAAANSUhEUgAABAAAAAMACAYAAAA="; // a 1024×768 PNG's header
  for (const format of ["openai", "anthropic"]) {
    const session = new Session({ format });
    const image = format === "openai"
      ? { type: "image_url", image_url: { url: `data:image/png;base64,${png}` } }
      : { type: "image", source: { type: "base64", media_type: "image/png", data: png } };
    session.history.appendMany([
      { role: "user", content: [{ type: "text", text: "What does this chart show?" }, image] },
      { role: "assistant", content: "Sales rise in March." },
      { role: "user", content: "And in April?" },
    ]);
    const once = session.history.build({ imagesSentOnce: true });
    const again = session.history.build();
    assert.deepEqual(validateMessages(once.messages, format), []);
    const text = JSON.stringify(once.messages);
    assert.ok(text.includes("[image: png, 1024×768, sent in turn 1, message m1]"), text);
    assert.ok(!text.includes(png));
    assert.ok(JSON.stringify(again.messages).includes(png), "off by default");
    assert.ok(once.tokens.total < again.tokens.total);
    assert.deepEqual(once.receipt.images.replaced.map((p) => [p.id, p.turn]), [["m1", 1]]);
    assert.ok(JSON.stringify(session.history.get("m1")).includes(png), "the stored message keeps the image");
  }
});
