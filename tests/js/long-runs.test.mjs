// A text with an unbroken run over 1 MB (one character repeated, a line of punctuation or of
// spaces) is stored as it is and counted exactly, as tiktoken counts any length: by the history,
// the tokenizer, a whole request and a build alike.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ConversationHistory, Tokenizer } from "context-compactor";

const MB = 1 << 20;
const runs = {
  letters: "a".repeat(MB + 12_345),
  punctuation: "=-".repeat((MB + 999) / 2),
  spaces: "x" + " ".repeat(MB + 7) + "y",
};

test("a run over 1 MB is appended, read back and counted as the tokenizer counts it", () => {
  const tokenizer = new Tokenizer("o200k_base");
  for (const [what, text] of Object.entries(runs)) {
    const history = new ConversationHistory({ format: "openai" });
    const id = history.append({ role: "user", content: text });
    assert.equal(history.get(id).content, text, `${what}: stored as it is`);
    const counted = history.tokenCount();
    assert.equal(counted.estimate, false, `${what}: exact`);
    const alone = tokenizer.count(text);
    assert.ok(alone > 0 && alone < text.length, `${what}: ${alone} tokens`);
    assert.equal(counted.messages[0], alone + 3 + tokenizer.count("user"), `${what}: the message is its text and its framing`);
    assert.equal(tokenizer.countMessages([{ role: "user", content: text }]).total, counted.total, what);
    assert.equal(tokenizer.encode(text).length, alone, `${what}: encode agrees`);
    const build = history.build({ budget: { maxTokens: 4000 } });
    assert.ok(build.tokens.total <= 4000, `${what}: a build fits`);
    console.log(`# ${what}: ${text.length} bytes, ${alone} tokens`);
  }
  // Exact: "a" repeated tokenizes as tiktoken's o200k_base does, eight letters a token.
  assert.equal(tokenizer.count("a".repeat(8 * 200_000)), 200_000);
});
