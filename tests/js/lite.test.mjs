// The lite entry ("context-compactor/lite"): the same API over a wasm without rank tables, which
// the caller passes in with loadRanks (here read from the package's ranks/ files). Checked
// against the full entry in the same process. The order of the tests matters: ranks, once
// loaded, stay loaded.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { gzipSync } from "node:zlib";
import * as lite from "context-compactor/lite";
import * as full from "context-compactor";
import { tokenVectors, airlineRuns } from "./fixtures.mjs";

const ranks = (encoding) => readFileSync(lite.rankFile(encoding));

function throwsInvalidArgument(fn, pattern) {
  assert.throws(fn, (e) => e instanceof lite.InvalidArgumentError && e instanceof lite.ContextCompactorError && pattern.test(e.message),
    "an InvalidArgumentError matching " + pattern);
}

test("the lite wasm is a separate, smaller module with the same exports", () => {
  const size = (dir) => statSync(new URL(`../../${dir}/context_compactor_bg.wasm`, import.meta.url)).size;
  const gz = gzipSync(readFileSync(new URL("../../pkg-lite/context_compactor_bg.wasm", import.meta.url)), { level: 9 }).length;
  console.log(`# lite wasm ${size("pkg-lite")} bytes (${gz} gzipped), full ${size("pkg")} bytes`);
  assert.ok(size("pkg-lite") < size("pkg") / 2);
  assert.deepEqual(Object.keys(lite).sort(), Object.keys(full).sort());
  assert.notEqual(lite.Tokenizer, full.Tokenizer);
  assert.match(import.meta.resolve("context-compactor/lite"), /\/dist\/lite\/node\.js$/);
});

test("before loadRanks: tokenizers and histories of that encoding are refused with a typed error", () => {
  throwsInvalidArgument(() => new lite.Tokenizer("o200k_base"), /no o200k_base ranks.*load_?ranks/i);
  throwsInvalidArgument(() => new lite.ConversationHistory({ encoding: "cl100k_base" }), /no cl100k_base ranks/);
  throwsInvalidArgument(() => new lite.ConversationHistory(), /ranks/); // the default encoding is o200k_base
  assert.equal(new lite.Tokenizer("estimate").count("four words of text"), 5, "the estimate needs no ranks");
});

test("bad rank bytes are refused with a typed error, and nothing is installed", () => {
  const good = ranks("o200k_base");
  throwsInvalidArgument(() => lite.loadRanks("o200k_base", new Uint8Array([1, 2, 3])), /not this build's rank table.*bad magic or too short/);
  throwsInvalidArgument(() => lite.loadRanks("o200k_base", new Uint8Array(0)), /not this build's rank table/);
  const corrupt = Uint8Array.from(good);
  corrupt[corrupt.length >> 1] ^= 0x55;
  throwsInvalidArgument(() => lite.loadRanks("o200k_base", corrupt), /another build or a corrupt one/);
  throwsInvalidArgument(() => lite.loadRanks("o200k_base", good.subarray(0, good.length - 1)), /another build or a corrupt one/);
  throwsInvalidArgument(() => lite.loadRanks("o200k_base", ranks("cl100k_base")), /another encoding/);
  throwsInvalidArgument(() => lite.loadRanks("p50k_base", good), /no rank table for "p50k_base"/);
  throwsInvalidArgument(() => new lite.Tokenizer("o200k_base"), /no o200k_base ranks/);
});

/** Storage holding a session the full entry stored with cl100k_base (and one with o200k_base). */
const storedInCl100k = new full.MemoryStorageAdapter();

/**
 * A page that loaded o200k_base's ranks only, over sessions stored in either encoding: the list
 * says which ranks each needs, and opening one whose ranks are missing is refused with a typed
 * error that says so (not a damaged record: nothing in the storage is wrong). Resolves to the
 * store, to open it again once the ranks are loaded.
 */
async function aStoredSessionNamesTheRanksItNeeds() {
  const writer = await full.SessionStore.open(storedInCl100k);
  for (const [id, encoding] of [["cl", "cl100k_base"], ["o2", "o200k_base"]]) {
    const stored = await writer.create({ id, encoding });
    stored.history.appendMany([{ role: "user", content: "Fly me to Lisbon" }, { role: "assistant", content: "Booked." }]);
    await stored.flush();
  }
  await writer.close();
  const store = await lite.SessionStore.open(storedInCl100k);
  const listed = await store.list();
  assert.deepEqual(listed.map((s) => [s.id, s.encoding, s.problem]).sort(), [["cl", "cl100k_base", undefined], ["o2", "o200k_base", undefined]]);
  assert.equal((await store.open("o2")).history.length, 2);
  await assert.rejects(store.open("cl"), (e) => e instanceof lite.InvalidArgumentError
    && /session "cl" counts its tokens with cl100k_base, whose ranks are not loaded: pass them to loadRanks\("cl100k_base"/.test(e.message));
  return store;
}

test("after loadRanks: ids and counts identical to the full entry, encoding by encoding", async () => {
  const texts = [...tokenVectors().map((v) => v.sample),
    ...airlineRuns().slice(0, 20).flatMap((run) => run.traj.map((m) => (typeof m.content === "string" ? m.content : JSON.stringify(m))))];
  lite.loadRanks("o200k_base", ranks("o200k_base"));
  throwsInvalidArgument(() => new lite.Tokenizer("cl100k_base"), /no cl100k_base ranks/);
  const store = await aStoredSessionNamesTheRanksItNeeds();
  lite.loadRanks("cl100k_base", ranks("cl100k_base"));
  lite.loadRanks("cl100k_base", ranks("cl100k_base")); // idempotent
  assert.equal((await store.open("cl")).history.length, 2, "with its ranks loaded, the same store opens it");
  await store.close();
  let n = 0;
  for (const encoding of ["o200k_base", "cl100k_base"]) {
    const [a, b] = [new lite.Tokenizer(encoding), new full.Tokenizer(encoding)];
    for (const t of texts) {
      assert.deepEqual(a.encode(t), b.encode(t), `${encoding}: ${JSON.stringify(t.slice(0, 40))}`);
      n += a.count(t);
    }
    assert.equal(a.count(texts.join("\n")), b.count(texts.join("\n")));
  }
  console.log(`# ${texts.length} texts, ${n} tokens identical in both encodings`);
  const messages = airlineRuns()[0].traj;
  const [h, g] = [new lite.ConversationHistory({ encoding: "cl100k_base" }), new full.ConversationHistory({ encoding: "cl100k_base" })];
  h.appendMany(messages);
  g.appendMany(messages);
  assert.deepEqual(h.tokenCount(), g.tokenCount());
});

test("the full entry accepts the same rank files (code written for lite runs on it)", () => {
  full.loadRanks("o200k_base", ranks("o200k_base"));
  full.loadRanks("cl100k_base", ranks("cl100k_base"));
  assert.throws(() => full.loadRanks("o200k_base", new Uint8Array(10)), full.InvalidArgumentError);
});

test("rankFile: one file per encoding, each a literal URL a bundler can follow; other names refused", async () => {
  for (const encoding of ["o200k_base", "cl100k_base"]) {
    assert.equal(lite.rankFile(encoding).href, new URL(`../../ranks/${encoding}.cctab`, import.meta.url).href);
  }
  const url = lite.rankFile("o200k_base");
  url.pathname = "/elsewhere";
  assert.notEqual(lite.rankFile("o200k_base").pathname, "/elsewhere", "each call hands out its own URL");
  throwsInvalidArgument(() => lite.rankFile("estimate"), /no rank file for encoding "estimate"/);
  throwsInvalidArgument(() => lite.rankFile("toString"), /no rank file/);
  // Bundlers (Vite, webpack) copy an asset only when its `new URL("…", import.meta.url)` is a literal.
  const source = readFileSync(new URL("../../dist/lite/wasm.js", import.meta.url), "utf8");
  for (const encoding of ["o200k_base", "cl100k_base"]) {
    assert.ok(source.includes(`new URL("../../ranks/${encoding}.cctab", import.meta.url)`), `${encoding}: a literal URL`);
  }
});
