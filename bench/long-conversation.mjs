// The benchmarks' long conversation: the shared tau-bench runs (5,308 messages) one after another,
// repeated as often as a size needs, with each lap's tool-call ids made unique so that every
// length is a valid history. Without the shared fixtures, the project's airline runs (fixtures.mjs).
import { runList } from "./fixtures.mjs";

const runs = runList();

/** The messages of one lap. */
export const templates = runs.flatMap((run) => run.traj);
export const runCount = runs.length;

/** Message `i` of the long conversation. */
export function message(i) {
  const lap = Math.floor(i / templates.length);
  const m = templates[i % templates.length];
  if (lap === 0) return m;
  const id = (s) => `${s}~${lap}`;
  if (m.tool_calls) return { ...m, tool_calls: m.tool_calls.map((c) => ({ ...c, id: id(c.id) })) };
  if (m.role === "tool") return { ...m, tool_call_id: id(m.tool_call_id) };
  return m;
}

/** The first `n` messages. */
export const conversation = (n) => Array.from({ length: n }, (_, i) => message(i));
