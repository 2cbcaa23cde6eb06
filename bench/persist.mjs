// Persistence on the Node file system: the shared tau-bench runs concatenated into one
// conversation, its first 5,000 messages appended one at a time to a stored session (each saved,
// fsynced); then, each in a fresh process, the records read, the session opened and its context
// built (100k budget), and the same messages built never stored. Prints the cost of an append
// (median, p99), the bytes written per append divided by the message's own JSON size (and that
// ratio by fifths of the history: flat means O(message)), the bytes on disk, and cold open +
// first build. Run: npm run bench:persist
// (MESSAGES=n for fewer; SYNC=0 to skip fsync and see the library's own cost.) Without the shared
// fixtures, the project's airline runs (1,780 messages) stand in (bench/fixtures.mjs).
import { readdirSync, statSync, mkdtempSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { FileSystemAdapter } from "context-compactor/storage/fs";
import { appendPhase, coldPhase, readPhase, memoryPhase, describe } from "./persist-run.mjs";
import { runList } from "./fixtures.mjs";

const COUNT = Number(process.env.MESSAGES ?? 5000);
const SYNC = process.env.SYNC !== "0";
const loadMessages = () => runList().flatMap((run) => run.traj).slice(0, COUNT);
const adapterAt = (root) => () => FileSystemAdapter.open({ root, sync: SYNC });

// A cold phase, in a process of its own: `node bench/persist.mjs --phase <name> <root>` prints its JSON.
if (process.argv[2] === "--phase") {
  const [, , , phase, root] = process.argv;
  const openAdapter = adapterAt(root);
  const result =
    phase === "read" ? await readPhase({ openAdapter })
    : phase === "cold" ? await coldPhase({ openAdapter })
    : phase === "select" ? await coldPhase({ openAdapter, select: true })
    : memoryPhase({ messages: loadMessages() });
  console.log(JSON.stringify(result));
} else {
  const inProcess = (phase, root) => JSON.parse(execFileSync(process.execPath, [fileURLToPath(import.meta.url), "--phase", phase, root], { encoding: "utf8" }));
  const diskBytes = (dir) =>
    readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? diskBytes(join(dir, e.name)) : statSync(join(dir, e.name)).size), 0);
  const root = mkdtempSync(join(tmpdir(), "cc-persist-bench-"));
  try {
    const appended = await appendPhase({ openAdapter: adapterAt(root), messages: loadMessages() });
    const result = { ...appended, ...inProcess("read", root), cold: inProcess("cold", root), select: inProcess("select", root), ...inProcess("memory", root) };
    for (const line of describe(`Node file system (${SYNC ? "fsync on each save" : "no fsync"})`, result)) console.log(line);
    const disk = diskBytes(root);
    console.log(`  on disk after the run: ${disk.toLocaleString()} B, ${(disk / result.messageBytes).toFixed(2)} x the messages' JSON`);
    if (result.cold.loaded !== result.messages) throw new Error(`the cold open found ${result.cold.loaded} messages, not ${result.messages}`);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
