/**
 * A session open in a store (`StoredSession`): the `Session`'s calls saved automatically, the
 * save under the session's lock after catching up with what others saved, appends made once by
 * key, and compaction under a lease.
 */
import type { ConversationHistory, MemoryModule, PullReport, StoredRecord, BuildResult, Format, MessageInput } from "./wasm.js";
import type { Session } from "./guarded.js";
import { ConflictError, ContextCompactorError, InvalidArgumentError, LeaseHeldError, NotFoundError } from "./errors.js";
import { compact, type CompactOptions } from "./summarize.js";
import { appendKey, LEASE_MS, leaseKey, markKey, metaKey, newId } from "./store-records.js";
import { write, writeChecked } from "./store-io.js";
import type { SessionStore } from "./store.js";

export type StoredSessionEvent =
  /** This session's changes were saved as `commit`. */
  | { type: "saved"; commit: number }
  /** Another tab or process saved this session; its changes are now here (`report.renumbered`: this session's unsaved messages that moved after them). */
  | { type: "pulled"; report: PullReport }
  /** The session was deleted from the storage (here or elsewhere). */
  | { type: "deleted" };

/** A proxy of `target` that calls `changed` after each method call and property set. */
function autosaving<T extends object>(target: T, changed: () => void, nested: Record<string, () => unknown> = {}): T {
  return new Proxy(target, {
    get(object, property) {
      if (typeof property === "string" && Object.prototype.hasOwnProperty.call(nested, property)) return nested[property]();
      const value = Reflect.get(object, property, object);
      if (typeof value !== "function" || property === "constructor") return value;
      return (...args: unknown[]) => {
        try {
          return (value as (...a: unknown[]) => unknown).apply(object, args);
        } finally {
          changed();
        }
      };
    },
    set(object, property, value) {
      const done = Reflect.set(object, property, value, object);
      changed();
      return done;
    },
  });
}

/**
 * A session open in a store: `session`, `history` and `memory` are the `Session`'s own, and every
 * call made through them schedules a save (see `SessionStoreOptions.autosave`).
 */
export class StoredSession {
  readonly store: SessionStore;
  readonly id: string;
  /** The session; calls through this object are saved automatically. */
  readonly session: Session;
  /** Called after a save, after another tab's changes arrived, and when the session was deleted. */
  onchange: ((event: StoredSessionEvent) => void) | undefined;
  /** Called with an automatic save's error (else the store's `onError`, else `console.error`). */
  onerror: ((error: unknown) => void) | undefined;
  readonly #raw: Session;
  #history: ConversationHistory | undefined;
  #memory: MemoryModule | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #scheduled = false;
  #closed: "closed" | "deleted" | undefined;
  /** The save whose outcome is unknown (`#settleDoubt`): its commit, the record that tells, the keys it stored. */
  #doubt: { commit: number; probe?: StoredRecord; keys: string[] } | undefined;
  /** Appends made with a key (`append`) not stored yet: their ids. */
  readonly #keyed = new Map<string, string[]>();

  /** @internal */
  constructor(store: SessionStore, session: Session) {
    this.store = store;
    this.#raw = session;
    this.id = session.id;
    const changed = () => this.changed();
    this.session = autosaving(session, changed, { history: () => this.history, memory: () => this.memory });
  }

  /** The history; appends and builds through it are saved automatically. */
  get history(): ConversationHistory {
    this.#history ??= autosaving(this.#raw.history, () => this.changed());
    return this.#history;
  }

  /** The memory module (or `undefined`); turns recorded through it are saved automatically. */
  get memory(): MemoryModule | undefined {
    if (this.#memory) return this.#memory;
    const memory = this.#raw.memory;
    this.#memory = memory && autosaving(memory, () => this.changed());
    return this.#memory;
  }

  get title(): string | undefined {
    return this.#raw.title;
  }

  set title(title: string | undefined) {
    this.session.title = title;
  }

  /** The commit of the last save (or load). */
  get savedCommit(): number {
    return this.#raw.savedCommit;
  }

  /** Whether the session was closed (`close()`) or deleted. */
  get closed(): boolean {
    return this.#closed !== undefined;
  }

  /** Schedules a save (calls made on `session`, `history` and `memory` do it themselves). */
  changed(): void {
    const autosave = this.store.options.autosave ?? true;
    if (this.#closed || autosave === false || this.#scheduled) return;
    this.#scheduled = true;
    const run = () => {
      this.#scheduled = false;
      this.flush().catch((error) => this.report(error));
    };
    if (typeof autosave === "object" && autosave.delayMs > 0) setTimeout(run, autosave.delayMs);
    else queueMicrotask(run);
  }

  /** @internal */
  report(error: unknown): void {
    if (this.onerror) this.onerror(error);
    else if (this.store.options.onError) this.store.options.onError(error, this);
    else console.error(`context-compactor: saving session ${this.id} failed:`, error);
  }

  #serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Saves what changed, after applying what other tabs or processes saved in the meantime. A
   * `StorageError` leaves the stored session as it was and the changes unsaved (a later flush
   * tries again); a `NotFoundError` says the session was deleted elsewhere.
   */
  flush(): Promise<void> {
    return this.#serially(async () => {
      if (this.#closed) return;
      // (In doubt, `changes()` must wait: the save in doubt is the one it would replace.)
      if (!this.#doubt) {
        const probe = this.#raw.changes({ now: this.store.now() });
        if (probe.records.length === 0 && probe.remove.length === 0) return;
      }
      const finish = await this.store.locked(this.id, () => this.saveLocked());
      finish();
    });
  }

  /**
   * @internal The save itself; the caller holds the session's lock. `before` runs once this
   * session caught up with the stored one, before its changes are taken. Resolves to what the
   * caller does once the lock is released: only then is a transactional adapter's write stored.
   */
  async saveLocked(before?: () => Promise<void>): Promise<() => void> {
    const adapter = this.store.io;
    const { stored, storage } = await this.#catchUp();
    if (!stored && this.#raw.savedCommit > 0) {
      this.forget("deleted");
      throw new NotFoundError(`session ${JSON.stringify(this.id)} was deleted from the storage by another tab or process; its unsaved changes are only in memory`);
    }
    await before?.();
    const changes = this.#raw.changes({ now: this.store.now() });
    const keyed = [...this.#keyed];
    if (changes.records.length > 0) {
      // Another process stored an append of one of these keys (its caller retried there): this
      // session's copy of it must not be stored too.
      const elsewhere = (await Promise.all(keyed.map(async ([key]) => ((await adapter.load(appendKey(this.id, key))) === undefined ? [] : [key])))).flat();
      if (elsewhere.length > 0) {
        this.forget("deleted");
        throw new ConflictError(
          `session ${JSON.stringify(this.id)}: the append of key ${JSON.stringify(elsewhere[0])} made here was stored by another process meanwhile; this handle's unsaved changes are dropped: open the session again`,
        );
      }
      const records: StoredRecord[] = [...changes.records, ...keyed.map(([key, ids]) => ({ key: appendKey(this.id, key), value: JSON.stringify({ ids }) }))];
      const mark = adapter.transactional ? { key: markKey(this.id, changes.commit), value: JSON.stringify(newId()) } : undefined;
      if (mark) records.push(mark);
      // Until the lock is released, whether this save is stored is unknown (see `#settleDoubt`).
      this.#doubt = { commit: changes.commit, probe: mark ?? records[records.length - 1], keys: keyed.map(([key]) => key) };
      await writeChecked(adapter, records, `saving session ${this.id}`);
    } else {
      this.#doubt = { commit: changes.commit, keys: [] };
    }
    if (changes.remove.length > 0) {
      // Records nothing names any more: if removing them fails, the next load finds them again.
      await write(adapter, changes.remove.map((key) => ({ key, value: undefined })), "removing superseded records").catch(() => {});
    }
    if (changes.records.length > 0 && !adapter.transactional) await this.store.saved(this.id, this.#raw.createdAt ?? 0, storage, changes.commit);
    return () => {
      this.#saved(changes.commit, this.#doubt?.keys ?? []);
      if (changes.records.length > 0) {
        if (adapter.transactional) this.store.saved(this.id, this.#raw.createdAt ?? 0, storage, changes.commit).catch(() => {});
        this.onchange?.({ type: "saved", commit: changes.commit });
      }
    };
  }

  /** The save of `commit` is stored, with the appends of `keys`. */
  #saved(commit: number, keys: string[]): void {
    this.#doubt = undefined;
    this.#raw.markSaved(commit);
    for (const key of keys) this.#keyed.delete(key);
  }

  /**
   * Settles a save whose outcome is unknown (its write or its transaction's commit failed, and
   * reading it back failed too), before anything else reads or writes the session: if it landed,
   * it is this session's, not another writer's to pull (which would append its messages again).
   * A transactional adapter's save is stored if and only if its mark is; another's if its last
   * record is (its writes land in order). The caller holds the lock.
   */
  async #settleDoubt(): Promise<void> {
    const doubt = this.#doubt;
    if (!doubt) return;
    const landed = doubt.probe === undefined || (await this.store.io.load(doubt.probe.key)) === doubt.probe.value;
    if (landed) this.#saved(doubt.commit, doubt.keys);
    else this.#doubt = undefined;
  }

  /**
   * Applies what other tabs or processes saved since this session's last save or load (the
   * caller holds the lock): what the stored meta record names, then the records after this
   * session's last message (one read when there are none), up to the latest save announced.
   */
  async #catchUp(): Promise<{ stored: boolean; report?: PullReport; storage?: string }> {
    await this.#settleDoubt();
    const adapter = this.store.io;
    const key = metaKey(this.id);
    let stored = false;
    let report: PullReport | undefined;
    const storage = await this.store.caughtUp(this.id, async () => {
      const meta = await adapter.load(key);
      stored = meta !== undefined;
      if (meta === undefined) return undefined;
      const plan = this.#raw.pullPlan({ key, value: meta });
      const records: StoredRecord[] = [];
      for (const named of plan.keys) {
        const value = await adapter.load(named);
        if (value !== undefined) records.push({ key: named, value });
      }
      const tail = await this.store.readOn(plan.tail);
      if (!plan.current || tail.length > 0) {
        const before = this.#raw.savedCommit;
        const pulled = this.#raw.pull([...records, ...tail, { key, value: meta }]);
        if (pulled.commit !== before) {
          report = pulled;
          // Unsaved appends made with a key moved after the other writer's messages.
          const moved = new Map(pulled.renumbered.map((r) => [r.from, r.to]));
          for (const [k, ids] of this.#keyed) this.#keyed.set(k, ids.map((id) => moved.get(id) ?? id));
          this.onchange?.({ type: "pulled", report: pulled });
        }
      }
      return { commit: this.#raw.savedCommit, createdAt: this.#raw.createdAt ?? 0 };
    });
    return { stored, report, storage };
  }

  /** Applies what other tabs or processes saved since this session's last save or load; `undefined` when there was nothing. */
  sync(): Promise<PullReport | undefined> {
    return this.#serially(async () => {
      if (this.#closed) return undefined;
      return this.store.locked(this.id, async () => {
        const { stored, report } = await this.#catchUp();
        if (!stored && this.#raw.savedCommit > 0) this.forget("deleted");
        return report;
      });
    });
  }

  /**
   * Appends `messages` and saves them, after what other processes saved: resolves to their ids
   * once they are stored. With `key` (yours: a request id, say) an append is made once: a call
   * with a key whose append is stored already (by this process or another, before a crash or a
   * lost reply) resolves to the ids it got and appends nothing. Where the adapter is transactional
   * (PostgreSQL, SQLite) the key is stored with the messages, in one transaction; elsewhere just
   * after them, so that a process killed between the two leaves the messages without their key.
   */
  append(messages: MessageInput | readonly MessageInput[], options: { key?: string; format?: Format } = {}): Promise<string[]> {
    const list = Array.isArray(messages) ? [...(messages as readonly MessageInput[])] : [messages as MessageInput];
    const { key, format } = options ?? {};
    if (key !== undefined && (typeof key !== "string" || key === "")) throw new InvalidArgumentError(`an append's key must be a non-empty string, got ${JSON.stringify(key)}`);
    return this.#serially(async () => {
      if (this.#closed) throw new ConflictError(`session ${JSON.stringify(this.id)} is ${this.#closed}`);
      let ids: string[] | undefined;
      const finish = await this.store.locked(this.id, () =>
        this.saveLocked(async () => {
          if (key !== undefined && this.#keyed.has(key)) {
            ids = this.#keyed.get(key); // appended here by a call whose save failed: saved now
            return;
          }
          const stored = key === undefined ? undefined : await this.store.io.load(appendKey(this.id, key));
          if (stored !== undefined) {
            ids = (JSON.parse(stored) as { ids: string[] }).ids;
            return;
          }
          ids = this.#raw.history.appendMany(list, format);
          if (key !== undefined) this.#keyed.set(key, ids);
        }),
      );
      const appended = ids ?? [];
      finish();
      return appended;
    });
  }

  /**
   * `compact(history, options)` (a build that asks `options.summarize` for a summary when one is
   * due, and stores it) holding the session's compaction lease: no other process or store runs a
   * compaction of this session meanwhile. A lease held elsewhere is a `LeaseHeldError`. It lasts
   * `leaseMs` (default 60 s) and is renewed every third of that while the summariser works, so a
   * holder that died blocks the others for at most `leaseMs`; a compaction its holder left
   * under way is cancelled by the next one. Without `summarize` (the built-in extractive summary,
   * made in the call), or when no summary is due, no lease is taken. The session catches up
   * first, and is saved after.
   */
  async compact(options: CompactOptions & { leaseMs?: number } = {}): Promise<BuildResult> {
    const { leaseMs = LEASE_MS, ...rest } = options ?? {};
    if (!(typeof leaseMs === "number" && leaseMs > 0 && Number.isFinite(leaseMs))) throw new InvalidArgumentError(`leaseMs must be a positive number of milliseconds, got ${String(leaseMs)}`);
    await this.sync();
    const summarize = rest.summarize;
    if (!summarize) {
      const result = compact(this.history, rest);
      await this.flush();
      return result;
    }
    // Most turns need no summary: then no lease is taken (a build, as compact() makes first).
    const { summarize: _, ...build } = rest;
    const probe = this.history.build({ ...build, summary: { ...(build.summary ?? {}), summarizer: "external" } });
    if (!probe.summaryRequest) {
      await this.flush();
      return probe;
    }
    const holder = newId().replace(/^s-/, "lease-");
    const io = this.store.io;
    let lost: LeaseHeldError | undefined;
    /** Takes or renews the lease (under the session's lock): a `LeaseHeldError` if another holds it. */
    const claim = (first: boolean) =>
      this.#serially(() =>
        this.store.locked(this.id, async () => {
          if (this.#closed) throw new ConflictError(`session ${JSON.stringify(this.id)} is ${this.#closed}`);
          const now = this.store.now();
          let current: { holder?: unknown; until?: unknown } | undefined;
          try {
            const text = await io.load(leaseKey(this.id));
            current = text === undefined ? undefined : JSON.parse(text);
          } catch (error) {
            if (error instanceof ContextCompactorError) throw error;
            current = undefined; // damaged: as none
          }
          const until = typeof current?.until === "number" ? current.until : 0;
          if (current && current.holder !== holder && until > now) {
            throw new LeaseHeldError(`session ${JSON.stringify(this.id)} is being compacted by another process (its lease lasts until ${new Date(until).toISOString()})`, until);
          }
          if (!first && current?.holder !== holder) throw new LeaseHeldError(`the compaction lease of session ${JSON.stringify(this.id)} lapsed and was taken over`, until);
          if (first) {
            await this.#catchUp();
            // A compaction under way that no live lease covers: its holder is gone.
            const pending = this.#raw.history.summaryState().inProgress;
            if (pending) {
              this.#raw.history.cancelSummary(pending.requestId);
              this.changed();
            }
          }
          await write(io, [{ key: leaseKey(this.id), value: JSON.stringify({ holder, until: now + leaseMs }) }], `taking the compaction lease of session ${this.id}`);
        }),
      );
    await claim(true);
    const renewing = setInterval(() => {
      claim(false).catch((error) => {
        if (error instanceof LeaseHeldError) lost = error;
      });
    }, Math.max(1, Math.floor(leaseMs / 3)));
    (renewing as { unref?: () => void }).unref?.();
    try {
      const result = await compact(this.history, {
        ...rest,
        summarize: async (request) => {
          const text = await summarize(request);
          // Stored only while the lease is this call's: renewed now, or refused.
          if (lost) throw lost;
          await claim(false);
          return text;
        },
      });
      await this.flush();
      return result;
    } finally {
      clearInterval(renewing);
      await this.#serially(() =>
        this.store.locked(this.id, async () => {
          const text = await io.load(leaseKey(this.id));
          if (text !== undefined && (JSON.parse(text) as { holder?: unknown }).holder === holder) await io.remove(leaseKey(this.id));
        }),
      ).catch(() => {}); // left to lapse
    }
  }

  /** A sub-agent (`Session.spawnSubagent`), stored as a session of its own with this one as its parent. */
  async spawnSubagent(task: string, options?: { maxLoops?: number }): Promise<StoredSession> {
    const child = this.session.spawnSubagent(task, options);
    try {
      return await this.store.add(child);
    } catch (error) {
      child.free();
      throw error;
    }
  }

  /** Saves, then closes: the session is freed and this object unusable. */
  async close(): Promise<void> {
    if (this.#closed) return;
    await this.flush();
    this.forget("closed");
  }

  /** @internal */
  forget(why: "closed" | "deleted"): void {
    if (this.#closed) return;
    this.#closed = why;
    this.store.forget(this);
    if (why === "deleted") this.onchange?.({ type: "deleted" });
    else this.#raw.free();
  }
}
