import { readFileSync } from "node:fs";
import { Tokenizer } from "context-compactor";
const tok = new Tokenizer("o200k_base");
const DIR = "/work/shared/fixtures/anthropic/";
function chains(file) {
  const out = new Map();
  const push = (name, rec) => { if (!out.has(name)) out.set(name, []); out.get(name).push(rec); };
  for (const line of readFileSync(DIR + file, "utf8").split("\n")) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    if (r.type === "progress" && r.data?.type === "agent_progress") { const m = r.data.message?.message; if (m) push(file + "#agent", { m, r }); }
    else if ((r.type === "user" || r.type === "assistant") && r.message && !r.isSidechain) push(file, { m: r.message, r });
  }
  return out;
}
const blocks = (m) => typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
const c = (s) => tok.count(s);
const raw = (v) => typeof v === "string" ? v : JSON.stringify(v);
const steps = [];
for (const file of ["claude-code-subagent.jsonl", "claude-code-tool-heavy.jsonl"]) {
  for (const [name, recs] of chains(file)) {
    const calls = []; let cur = null;
    for (const { m, r } of recs) {
      if (m.role === "assistant" && m.usage) {
        if (!cur || cur.id !== m.id) { cur = { id: m.id, model: m.model, prompt: m.usage.input_tokens + (m.usage.cache_creation_input_tokens ?? 0) + (m.usage.cache_read_input_tokens ?? 0), resp: [], after: [] }; calls.push(cur); }
        cur.resp.push(...blocks(m));
      } else if (cur) cur.after.push(...blocks(m));
    }
    for (let k = 0; k + 1 < calls.length; k++) {
      const a = calls[k], b = calls[k + 1];
      const f = { D: b.prompt - a.prompt, id: a.id.slice(-6), name, text: 0, json: 0, rawin: 0, params: 0, result: 0, think: 0, tu: 0, tr: 0, thk: 0, utext: 0 };
      for (const bl of a.resp) {
        if (bl.type === "text") f.text += c(bl.text);
        if (bl.type === "thinking") { f.think += c(bl.thinking); f.thk++; }
        if (bl.type === "tool_use") { f.tu++; f.json += c(bl.name) + c(JSON.stringify(bl.input)); f.rawin += c(bl.name) + Object.entries(bl.input).reduce((n, [k, v]) => n + c(k) + c(raw(v)), 0); f.params += Object.keys(bl.input).length; }
      }
      for (const bl of a.after) {
        if (bl.type === "tool_result") { f.tr++; f.result += c(typeof bl.content === "string" ? bl.content : bl.content.map((p) => p.text ?? "").join("")); }
        else if (bl.type === "text") { f.utext += c(bl.text); }
      }
      steps.push(f);
    }
  }
}
console.table(steps);
// least squares
function lsq(X, y) {
  const n = X[0].length; const A = Array.from({ length: n }, () => Array(n).fill(0)); const bb = Array(n).fill(0);
  X.forEach((x, i) => { for (let p = 0; p < n; p++) { bb[p] += x[p] * y[i]; for (let q = 0; q < n; q++) A[p][q] += x[p] * x[q]; } });
  for (let p = 0; p < n; p++) { let m = p; for (let r = p + 1; r < n; r++) if (Math.abs(A[r][p]) > Math.abs(A[m][p])) m = r; [A[p], A[m]] = [A[m], A[p]]; [bb[p], bb[m]] = [bb[m], bb[p]];
    for (let r = 0; r < n; r++) if (r !== p) { const f = A[r][p] / A[p][p]; for (let q = p; q < n; q++) A[r][q] -= f * A[p][q]; bb[r] -= f * bb[p]; } }
  return bb.map((v, p) => v / A[p][p]);
}
const exclude = new Set(["at58J6", "gyo9kz", "AnSMLm"]);
const use = steps.filter((s) => !exclude.has(s.id));
const models = {
  scale_pair_json: (s) => [s.text + s.json + s.result + s.think + s.utext, s.tu],
  scale_pair_raw: (s) => [s.text + s.rawin + s.result + s.think + s.utext, s.tu],
  scale_pair_params_raw: (s) => [s.text + s.rawin + s.result + s.think + s.utext, s.tu, s.params],
  scale_pair_thk_raw: (s) => [s.text + s.rawin + s.result + s.think + s.utext, s.tu, s.thk],
  scale_pair_int_raw: (s) => [s.text + s.rawin + s.result + s.think + s.utext, s.tu, 1],
};
for (const [mname, feat] of Object.entries(models)) {
  const w = lsq(use.map(feat), use.map((s) => s.D));
  // leave-one-out
  const errs = use.map((s, i) => { const rest = use.filter((_, j) => j !== i); const wi = lsq(rest.map(feat), rest.map((t) => t.D)); const p = feat(s).reduce((n, x, q) => n + x * wi[q], 0); return (p - s.D) / s.D; });
  const abs = errs.map(Math.abs).sort((a, b) => a - b);
  console.log(mname.padEnd(24), w.map((v) => v.toFixed(3)).join(" "), "LOO median", (abs[abs.length >> 1] * 100).toFixed(1), "% p90", (abs[Math.floor(abs.length * 0.9)] * 100).toFixed(1), errs.map((e) => (e * 100).toFixed(0)).join(","));
}
