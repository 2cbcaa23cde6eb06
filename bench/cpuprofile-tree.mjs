// Prints a V8 .cpuprofile (bench/persist-browser.mjs PROFILE=, node --cpu-prof) as a call tree:
// each frame's total and self milliseconds, children by total, frames under <min> ms left out.
// Run: node bench/cpuprofile-tree.mjs <file.cpuprofile> [min ms, default 1]
import { readFileSync } from "node:fs";

const profile = JSON.parse(readFileSync(process.argv[2], "utf8"));
const min = Number(process.argv[3] ?? 1);
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));

// A sample's time is the delta to the next one.
const self = new Map();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0) / 1000));
const totals = new Map();
const total = (id) => {
  if (!totals.has(id)) totals.set(id, (nodes.get(id).children ?? []).reduce((t, c) => t + total(c), self.get(id) ?? 0));
  return totals.get(id);
};

// Rust symbols without their hash and the crate's prefix.
const name = (frame) => (frame.functionName || "(anonymous)").replace(/::h[0-9a-f]{16}$/, "").replace(/context_compactor::/g, "");

function print(id, depth) {
  if (total(id) < min) return;
  const node = nodes.get(id);
  if (node.callFrame.functionName === "(idle)") return;
  console.log(`${" ".repeat(depth)}${total(id).toFixed(1)} ${name(node.callFrame)} (self ${(self.get(id) ?? 0).toFixed(1)})`);
  for (const child of [...(node.children ?? [])].sort((a, b) => total(b) - total(a))) print(child, depth + 1);
}
print(profile.nodes[0].id, 0);
