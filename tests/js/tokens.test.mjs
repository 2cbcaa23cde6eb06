// Text token counts through the package's Node entry: every cl100k_base and o200k_base vector of
// tests/fixtures/tokens/token-vectors.txt (ids from the tiktoken npm package), id for id, plus the
// cookbook's vectors and the estimate mode.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Tokenizer, InvalidArgumentError } from "context-compactor";
import { tokenVectors, cookbook } from "./fixtures.mjs";

const vectors = tokenVectors();

for (const encoding of ["cl100k_base", "o200k_base"]) {
  test(`${encoding}: every token vector encodes id for id and counts the same`, () => {
    const tok = new Tokenizer(encoding);
    assert.equal(tok.encoding, encoding);
    const mine = vectors.filter((v) => v.encoding === encoding);
    assert.equal(mine.length, 50, "vector count in the fixture");
    let ids = 0;
    for (const [i, v] of mine.entries()) {
      const got = tok.encode(v.sample);
      assert.ok(got instanceof Uint32Array, "encode returns a Uint32Array");
      assert.deepEqual([...got], v.ids, `vector ${i}: ${JSON.stringify(v.sample.slice(0, 40))}`);
      assert.equal(tok.count(v.sample), v.ids.length, `vector ${i} count`);
      ids += v.ids.length;
    }
    console.log(`# ${encoding}: ${mine.length} vectors, ${ids} token ids identical`);
    tok.free();
  });
}

test("the cookbook's encoding vectors (cl100k_base, o200k_base)", () => {
  const toks = { cl100k_base: new Tokenizer("cl100k_base"), o200k_base: new Tokenizer("o200k_base") };
  let n = 0;
  for (const v of cookbook().encoding_vectors) {
    const tok = toks[v.encoding];
    if (!tok) continue;
    assert.deepEqual([...tok.encode(v.text)], v.ids, `${v.encoding} ${v.text}`);
    n++;
  }
  console.log(`# ${n} cookbook vectors identical`);
});

test("special-token text counts as ordinary text", () => {
  const tok = new Tokenizer("o200k_base");
  const ids = [...tok.encode("<|endoftext|>")];
  assert.ok(ids.length > 1, `"<|endoftext|>" is split into ordinary tokens, got ${ids}`);
  assert.equal(tok.count("<|endoftext|>"), ids.length);
});

test("estimate mode is explicit: it counts but has no ids", () => {
  const tok = new Tokenizer("estimate");
  assert.equal(tok.encoding, "estimate");
  const text = "The quick brown fox jumps over the lazy dog. ".repeat(20);
  const estimate = tok.count(text);
  const exact = new Tokenizer("o200k_base").count(text);
  assert.ok(estimate > 0 && Number.isInteger(estimate), `estimate ${estimate}`);
  assert.ok(estimate > exact / 3 && estimate < exact * 3, `estimate ${estimate} near exact ${exact}`);
  assert.equal(tok.count(""), 0);
  assert.throws(() => tok.encode("hello"), InvalidArgumentError);
  console.log(`# estimate ${estimate} vs o200k_base ${exact} on ${text.length} chars`);
});

test("unknown encodings are refused, not replaced", () => {
  for (const bad of ["gpt2", "O200K_BASE", "", "r50k_base", undefined, 42, null]) {
    assert.throws(() => new Tokenizer(bad), InvalidArgumentError, `encoding ${String(bad)}`);
  }
  assert.throws(() => new Tokenizer("p50k_base"), /unknown encoding "p50k_base"/);
});
