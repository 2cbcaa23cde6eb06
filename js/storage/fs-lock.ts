/**
 * A lock across processes over the file system, for `FileSystemAdapter`: one per log file, and
 * the store's named locks. How it works is below; `acquireTurn` takes it.
 */
import { open, link, mkdir, readdir, readFile, rmdir, stat, unlink, utimes, writeFile } from "node:fs/promises";
import { readFileSync, readlinkSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { hostname } from "node:os";
import { join } from "node:path";
import { StorageError } from "../errors.js";
import { storageError } from "./adapter.js";
import { code } from "./fs-errno.js";

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return code(error) === "EPERM";
  }
}

/*
 * A lock across processes needs no kernel lock (Node has none): the directory `<path>.lock.d`
 * holds numbered turns, each made by a call that fails if the name exists (`link`, `mkdir`), so
 * that only one process can make turn n. A held turn is a file of its own holding its maker's
 * owner record (host, pid, the process's start time), written to a temporary file first and
 * linked into place whole, so that no turn is ever without its owner, whatever point a crash
 * stops the maker at. A free turn, made by the holder of the turn before it to release the lock,
 * is a hard link to the directory's empty file `free` (one call, and `stat` tells it by its link
 * count and size), or an empty directory where the file system has no hard links. The maker of
 * the highest turn holds the lock, unless that turn is free. To take the lock, a process makes
 * the turn after a free or stale highest one: processes that find the same stale turn race to
 * make the same next number, and only one can (where a stale lock file's takeover by
 * unlink-and-create lets the later one remove the lock the earlier just made). Nothing is removed
 * on the evidence of an earlier read: a holder removes only the turns below its own, and releases
 * by making the next turn, which fails if another process took the lock over meanwhile. A held
 * turn is stale at once when its owner is gone (same host and pid namespace: no process of that
 * pid, or one started at another time), or when its mtime, which its holder touches every
 * `staleLockMs / 3`, is older than `staleLockMs`.
 */

/**
 * Where a pid means something: the host, and on Linux the pid namespace (containers that share a
 * volume and a host name still have their own pids).
 */
const HOST = (() => {
  try {
    return `${hostname()} ${readlinkSync("/proc/self/ns/pid")}`;
  } catch {
    return hostname();
  }
})();
const TURN = /^[0-9]+$/;
/** The temporary files owner records are written to before they are linked into place as a turn. */
const OWNER_TEMPORARY = /^owner-[0-9]+-[0-9a-f]+$/;

/** When process `pid` started (clock ticks since boot, from /proc/<pid>/stat), or "" where /proc cannot tell. */
function startTimeIn(stat: string): string {
  // The fields after the command name (which may hold spaces and parentheses); starttime is the 22nd.
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
}

const START_TIME = (() => {
  try {
    return startTimeIn(readFileSync("/proc/self/stat", "utf8"));
  } catch {
    return "";
  }
})();

async function startTime(pid: number): Promise<string> {
  try {
    return startTimeIn(await readFile(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return "";
  }
}

/** The turns in `dir` (made if missing), lowest first, and the owner records' temporary files. */
async function listing(dir: string): Promise<{ turns: number[]; temporaries: string[] }> {
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (error) {
    if (code(error) !== "ENOENT") throw error;
    await mkdir(dir, { recursive: true });
    return { turns: [], temporaries: [] };
  }
  const turns = names
    .filter((name) => TURN.test(name))
    .map(Number)
    .sort((a, b) => a - b);
  return { turns, temporaries: names.filter((name) => OWNER_TEMPORARY.test(name)) };
}

async function turns(dir: string): Promise<number[]> {
  return (await listing(dir)).turns;
}

/** Whether turn `file` lets another process take the lock (`free`, `stale`) or not (`held`); `gone`: removed meanwhile. */
async function turnState(file: string, staleLockMs: number): Promise<"free" | "held" | "stale" | "gone"> {
  let record: string;
  try {
    const found = await stat(file);
    // A held turn is never empty: its owner record was written before it was linked into place.
    if ((found.nlink > 1 && found.size === 0) || found.isDirectory()) return "free";
    const { mtimeMs } = found;
    if (Date.now() - mtimeMs > staleLockMs) return "stale";
    record = await readFile(file, "utf8");
  } catch (error) {
    if (code(error) === "ENOENT") return "gone";
    throw error;
  }
  // A record cut short (a crash while an earlier version, or a file system without hard links,
  // wrote it in place) is stale once its mtime is.
  const lines = record.split("\n");
  if (lines.length < 3 || lines.at(-1) !== "" || lines[0] !== HOST) return "held";
  const pid = Number(lines[1]);
  if (!alive(pid)) return "stale";
  // The pid was given to another process since (its start time differs).
  const started = lines.length > 3 ? lines[2] : "";
  if (started !== "") {
    const now = await startTime(pid);
    if (now !== "" && now !== started) return "stale";
  }
  return "held";
}

/** Makes the held turn `file` in `dir`; an `EEXIST` error if another process made that turn first. */
async function makeHeldTurn(dir: string, file: string): Promise<void> {
  const record = `${HOST}\n${process.pid}\n${START_TIME}\n`;
  const temporary = join(dir, `owner-${process.pid}-${randomBytes(6).toString("hex")}`);
  await writeFile(temporary, record, { flag: "wx" });
  try {
    await link(temporary, file);
    return;
  } catch (error) {
    if (!NO_HARD_LINKS.has(code(error) ?? "")) throw error;
  } finally {
    await unlink(temporary).catch(() => {});
  }
  // No hard links on this file system (FAT, some network shares): the record is written in place,
  // and a crash between making the file and writing it leaves a turn that is stale only once its
  // mtime is.
  const fh = await open(file, "wx");
  let written = false;
  try {
    await fh.writeFile(record);
    written = true;
  } finally {
    await fh.close().catch(() => {});
    // Nobody can hold a turn this process made and did not write: it is still this process's to remove.
    if (!written) await unlink(file).catch(() => {});
  }
}

/** What `link` fails with where the file system has no hard links. */
const NO_HARD_LINKS = new Set(["EPERM", "ENOTSUP", "EOPNOTSUPP", "ENOSYS", "EMLINK"]);

/** Removes owner records' temporary files left by processes that died before linking them (older than `staleLockMs`). */
async function removeTemporaries(dir: string, names: readonly string[], staleLockMs: number): Promise<void> {
  await Promise.all(
    names.map(async (name) => {
      const file = join(dir, name);
      try {
        if (Date.now() - (await stat(file)).mtimeMs > staleLockMs) await unlink(file);
      } catch {
        // Gone meanwhile, or linked and removed by its maker.
      }
    }),
  );
}

/** Makes the free turn `file` in `dir`; an `EEXIST` error if another process made that turn first. */
async function makeFreeTurn(dir: string, file: string): Promise<void> {
  const free = join(dir, "free");
  for (let attempt = 0; ; attempt++) {
    try {
      return await link(free, file);
    } catch (error) {
      if (code(error) === "EEXIST") throw error;
      if (code(error) !== "ENOENT" || attempt > 0) break;
      await (await open(free, "a")).close(); // the first release in this directory
    }
  }
  // No hard links on this file system (FAT, some network shares): an empty directory is free too.
  await mkdir(file);
}

/** Removes turn `n` of `dir` (a file, a link, or a directory), if it is still there. */
async function removeTurn(dir: string, n: number): Promise<void> {
  const file = join(dir, String(n));
  await unlink(file).catch(() => rmdir(file).catch(() => {}));
}

/** A turn this process holds. */
export interface HeldTurn {
  /** Throws a `StorageError` if another process has taken the lock over (this one looked stale to it). */
  check(): Promise<void>;
  /** Releases the lock (a warning if another process had taken it over). */
  release(): Promise<void>;
}

/** Takes the lock kept in `dir` (of `what`), waiting up to `timeoutMs` for its holder. */
export async function acquireTurn(dir: string, what: string, timeoutMs: number, staleLockMs: number): Promise<HeldTurn> {
  const deadline = Date.now() + timeoutMs;
  let delay = 1;
  let turn = 0;
  try {
    for (;;) {
      const highest = (await turns(dir)).at(-1) ?? 0;
      const state = highest === 0 ? "free" : await turnState(join(dir, String(highest)), staleLockMs);
      if (state === "held") {
        if (Date.now() > deadline) throw new StorageError(`${what} is locked by another process for more than ${timeoutMs} ms`, { reason: "blocked" });
        await sleep(delay);
        delay = Math.min(delay * 2, 25);
        continue;
      }
      if (state === "gone") continue; // removed by the holder of a higher turn: look again
      try {
        await makeHeldTurn(dir, join(dir, String(highest + 1)));
      } catch (error) {
        if (code(error) === "EEXIST") continue; // another process made it first
        throw error;
      }
      const now = await listing(dir);
      if (now.turns.at(-1) !== highest + 1) {
        // What this process read was long gone (removed by a later holder): its turn is not the highest.
        await removeTurn(dir, highest + 1);
        continue;
      }
      turn = highest + 1;
      await Promise.all(now.turns.slice(0, -1).map((old) => removeTurn(dir, old)));
      if (now.temporaries.length > 0) await removeTemporaries(dir, now.temporaries, staleLockMs);
      break;
    }
  } catch (error) {
    throw storageError(`locking ${what}`, error);
  }
  const file = join(dir, String(turn));
  const heartbeat = setInterval(() => {
    const now = new Date();
    utimes(file, now, now).catch(() => {});
  }, Math.max(1, Math.floor(staleLockMs / 3)));
  heartbeat.unref();
  const lost = () =>
    `the lock of ${what} was taken over by another process while this one held it (to that process, it looked stale: this one had stalled, or their staleLockMs or clocks differ)`;
  return {
    async check() {
      let highest: number | undefined;
      try {
        highest = (await turns(dir)).at(-1);
      } catch (error) {
        throw storageError(`checking the lock of ${what}`, error);
      }
      if (highest !== turn) throw new StorageError(`${lost()}: nothing written`, { reason: "failed" });
    },
    async release() {
      clearInterval(heartbeat);
      try {
        await makeFreeTurn(dir, join(dir, String(turn + 1)));
      } catch (error) {
        // The write is done: nothing to undo, but say so.
        process.emitWarning(
          code(error) === "EEXIST" ? `${lost()}; what it wrote may have interleaved with that process's writes` : `releasing the lock of ${what} failed (other processes take it over after ${staleLockMs} ms): ${(error as Error).message}`,
          { code: "CONTEXT_COMPACTOR_LOCK" },
        );
      }
    },
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
