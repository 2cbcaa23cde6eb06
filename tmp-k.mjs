import { Tokenizer } from "context-compactor";
import { steps, isFitStep, quantiles } from "./bench/claude-logs.mjs";
const tok = new Tokenizer("o200k_base");
const c = (s) => tok.count(s);
function feats(step) {
  const f = { T: 0, tu: 0, tr: 0, thk: 0, msgs: 2 };
  for (const b of [...step.response.content, ...step.appended.content]) {
    if (b.type === "text") f.T += c(b.text);
    else if (b.type === "thinking") { f.T += c(b.thinking); f.thk++; }
    else if (b.type === "tool_use") { f.T += c(b.name) + c(JSON.stringify(b.input)); f.tu++; }
    else if (b.type === "tool_result") { f.T += c(typeof b.content === "string" ? b.content : (b.content ?? []).map((p) => p.text ?? "").join("")); f.tr++; }
  }
  return f;
}
function lsq(X, y) {
  const n = X[0].length; const A = Array.from({ length: n }, () => Array(n).fill(0)); const bb = Array(n).fill(0);
  X.forEach((x, i) => { for (let p = 0; p < n; p++) { bb[p] += x[p] * y[i]; for (let q = 0; q < n; q++) A[p][q] += x[p] * x[q]; } });
  for (let p = 0; p < n; p++) { for (let r = 0; r < n; r++) if (r !== p) { const f = A[r][p] / A[p][p]; for (let q = p; q < n; q++) A[r][q] -= f * A[p][q]; bb[r] -= f * bb[p]; } }
  return bb.map((v, p) => v / A[p][p]);
}
const all = steps(); const ok = all.filter((s) => !s.excluded);
for (const s of all) console.log(s.conversation.slice(0, 40).padEnd(40), s.id.slice(-6), s.billed, s.excluded ?? "", JSON.stringify(feats(s)));
const fit = ok.filter(isFitStep), test = ok.filter((s) => !isFitStep(s));
console.log("fit", fit.length, "test", test.length);
for (const [name, cols, fixed] of [["s,U | M3 R30", (f) => [f.T, f.tu], (f) => 3 * f.msgs + 30 * f.tr], ["s,U,K | M3 R30", (f) => [f.T, f.tu, f.thk], (f) => 3 * f.msgs + 30 * f.tr], ["s,pair", (f) => [f.T, f.tu], () => 0]]) {
  const w = lsq(fit.map((s) => cols(feats(s))), fit.map((s) => s.billed - fixed(feats(s))));
  const pred = (s) => { const f = feats(s); return cols(f).reduce((n, x, q) => n + x * w[q], 0) + fixed(f); };
  const e = (set) => set.map((s) => (pred(s) - s.billed) / s.billed);
  const sum = (set) => set.reduce((n, s) => n + pred(s), 0) / set.reduce((n, s) => n + s.billed, 0) - 1;
  const q = quantiles(e(test)), qf = quantiles(e(fit));
  console.log(name.padEnd(16), w.map((v) => v.toFixed(3)).join(" "), "fit med", (qf.median * 100).toFixed(1), "test med", (q.median * 100).toFixed(1), "p90", (q.p90 * 100).toFixed(1), "sum", (sum(test) * 100).toFixed(1), e(test).map((x) => (x * 100).toFixed(1)).join(","));
}
