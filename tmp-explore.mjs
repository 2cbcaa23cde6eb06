import { readFileSync } from "node:fs";
import { Tokenizer } from "context-compactor";
const tok = new Tokenizer("o200k_base");
const DIR = "/work/shared/fixtures/anthropic/";
function chains(file) {
  const out = new Map(); // chain name -> list of {role, id?, usage?, blocks, model}
  const push = (name, rec) => { if (!out.has(name)) out.set(name, []); out.get(name).push(rec); };
  for (const line of readFileSync(DIR + file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    if (r.type === "progress" && r.data?.type === "agent_progress") {
      const m = r.data.message?.message; if (!m) continue;
      push(file + "#agent-" + r.data.agentId, { m, r });
    } else if ((r.type === "user" || r.type === "assistant") && r.message && !r.isSidechain) push(file, { m: r.message, r });
  }
  return out;
}
const blocks = (m) => typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
function text(b) {
  if (b.type === "text") return b.text;
  if (b.type === "thinking") return b.thinking;
  if (b.type === "tool_use") return b.name + JSON.stringify(b.input);
  if (b.type === "tool_result") return typeof b.content === "string" ? b.content : (b.content ?? []).map((p) => p.text ?? "").join("");
  return JSON.stringify(b);
}
for (const file of ["claude-code-subagent.jsonl", "claude-code-tool-heavy.jsonl", "claude-code-short.jsonl"]) {
  for (const [name, recs] of chains(file)) {
    // calls
    const calls = []; let cur = null; const pending = [];
    for (const { m, r } of recs) {
      if (m.role === "assistant" && m.usage) {
        if (!cur || cur.id !== m.id) {
          cur = { id: m.id, model: m.model, prompt: m.usage.input_tokens + (m.usage.cache_creation_input_tokens ?? 0) + (m.usage.cache_read_input_tokens ?? 0), out: 0, resp: [], after: [], cr: m.usage.cache_read_input_tokens };
          calls.push(cur);
        }
        cur.out = Math.max(cur.out, m.usage.output_tokens); cur.resp.push(...blocks(m));
      } else if (cur) cur.after.push({ role: m.role, blocks: blocks(m), meta: r.isMeta });
    }
    for (let k = 0; k + 1 < calls.length; k++) {
      const a = calls[k], b = calls[k + 1];
      const D = b.prompt - a.prompt;
      const f = { text: 0, thinking: 0, tu: 0, tr: 0, thk: 0, user: 0 };
      for (const bl of a.resp) { const n = tok.count(text(bl)); if (bl.type === "thinking") { f.thinking += n; f.thk++; } else f.text += n; if (bl.type === "tool_use") f.tu++; }
      for (const u of a.after) for (const bl of u.blocks) { f.text += tok.count(text(bl)); if (bl.type === "tool_result") f.tr++; else f.user++; }
      console.log(name.padEnd(50), a.id.slice(-6), a.model.slice(7, 16), "P", a.prompt, "D", String(D).padStart(5), "out", String(a.out).padStart(4), JSON.stringify(f), "ratio", (D / (f.text + f.thinking)).toFixed(3), a.after.map(u => u.blocks.map(b => b.type).join("+")).join("|"));
    }
  }
}
