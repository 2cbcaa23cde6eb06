// A plain script (run as a child process by summarizers.test.mjs): compact() with a summariser that
// never answers and nothing else keeping Node running. It must print the SummarizerError and exit
// as the script says (a timer that does not hold the event loop lets Node exit at once, code 13).
import { ConversationHistory, compact, SummarizerError } from "context-compactor";
const [how = "compact"] = process.argv.slice(2);
const history = new ConversationHistory({ format: "openai" });
history.append({ role: "system", content: "sys" });
for (let i = 0; i < 40; i++) history.append({ role: i % 2 ? "assistant" : "user", content: `turn ${i} ` + "lorem ipsum ".repeat(40) });
const options = { format: "openai", budget: { maxTokens: 1500 }, summaryTimeoutMs: 300, summarize: () => new Promise(() => {}) };
try {
  if (how === "stored") {
    const { SessionStore, MemoryStorageAdapter } = await import("context-compactor");
    const store = await SessionStore.open(new MemoryStorageAdapter(), { autosave: false, broadcast: false });
    const chat = await store.create({ id: "hung", format: "openai" });
    await chat.append(history.messages("openai"));
    await chat.compact(options);
  } else {
    await compact(history, options);
  }
  console.log("resolved");
  process.exit(0);
} catch (error) {
  console.log(error instanceof SummarizerError ? "SummarizerError" : error?.name, error?.message);
  process.exit(error instanceof SummarizerError ? 1 : 2);
}
