/**
 * The sidebar's sessions, behind one narrow interface, so that where they are kept is one
 * module's business: `StoreShelf` keeps them in IndexedDB through the package's `SessionStore`
 * (they survive a reload); `PageShelf` in the page, where IndexedDB cannot be opened.
 */
import { SessionStore, type EncodingName, type StoredSession, type Summarizer } from "context-compactor/lite";
import { IndexedDBAdapter } from "context-compactor/storage/indexeddb";
import { parseConversation, serializeConversation, type Conversation } from "./conversation";
import type { StepCost } from "./cost";
import { Replay, newSessionId, profileOf, sessionOptions, type Compaction, type Settings } from "./replay";

export interface SessionInfo {
  id: string;
  title: string;
  messages: number;
  /** Tokens of the whole history. */
  tokens: number;
  /** What it counts with: its ranks must be loaded before it is opened (unknown: `undefined`). */
  encoding?: EncodingName;
  updatedAt: number;
  /** Why the session cannot be opened (a damaged record), if it cannot. */
  problem?: string;
}

export interface SessionShelf {
  /** Whether the sessions survive a reload. */
  readonly persistent: boolean;
  /** What the sidebar says about where the sessions are kept. */
  readonly note: string;
  list(): Promise<SessionInfo[]>;
  /** A new replay of `conversation` on the shelf (no summariser: `main.ts` gives it the one in force); with `replace`, in place of that session (same id, started again). */
  start(conversation: Conversation, settings: Settings, replace?: string): Promise<Replay>;
  /** Saves what the replay did since the last save (called after every action). */
  save(replay: Replay): Promise<void>;
  /** The replay of session `id`, built (by `summarize`, the summariser in force, if that build compacts). */
  open(id: string, summarize?: Summarizer): Promise<Replay | undefined>;
  remove(id: string): Promise<void>;
}

/** Sessions held by the page for as long as it is open. */
export class PageShelf implements SessionShelf {
  readonly persistent = false;
  private readonly replays = new Map<string, { replay: Replay; updatedAt: number }>();

  constructor(readonly note = "Kept in this page only.") {}

  async list(): Promise<SessionInfo[]> {
    return [...this.replays.values()]
      .map(({ replay, updatedAt }) => ({
        id: replay.session.id,
        title: replay.title,
        messages: replay.session.history.length,
        tokens: replay.session.history.tokenCount().total,
        encoding: profileOf(replay.settings).encoding,
        updatedAt,
      }))
      .sort((a, b) => b.updatedAt - a.updatedAt);
  }

  async start(conversation: Conversation, settings: Settings, replace?: string): Promise<Replay> {
    if (replace) await this.remove(replace);
    const replay = new Replay(conversation, settings, replace ?? newSessionId());
    await this.save(replay);
    return replay;
  }

  async save(replay: Replay): Promise<void> {
    this.replays.set(replay.session.id, { replay, updatedAt: Date.now() });
  }

  async open(id: string): Promise<Replay | undefined> {
    return this.replays.get(id)?.replay;
  }

  async remove(id: string): Promise<void> {
    this.replays.delete(id);
  }
}

/**
 * The demo's own keys beside a stored session: the conversation (written once), each
 * compaction's receipt (once) and the calls' costs (those of each save, as one record).
 */
const demoKey = (id: string, ...rest: string[]) => ["demo", id, ...rest];
const compactionKey = (id: string, index: number) => demoKey(id, "compaction", String(index).padStart(6, "0"));
const costsKey = (id: string, from: number) => demoKey(id, "costs", String(from).padStart(6, "0"));

/**
 * Sessions in IndexedDB through the package's `SessionStore`. Steps are appended, built and
 * recorded through the stored session's autosaving objects, so the store writes what each step
 * added (the message records, the turn, the meta record), never the whole history again. Beside
 * each session, under the demo's own keys in the same database, the conversation being replayed
 * (written once when the session is made), the receipt of each compaction (once, when it
 * happens) and the cost of each model call (with the save after it): what a reload needs to
 * show the replay as it was.
 */
export class StoreShelf implements SessionShelf {
  readonly persistent = true;
  readonly note: string;
  private readonly replays = new Map<string, { replay: Replay; handle: StoredSession; compactionsSaved: number; costsSaved: number }>();

  private constructor(private readonly store: SessionStore, private readonly adapter: IndexedDBAdapter, database: string) {
    this.note = `Kept in IndexedDB (database "${database}") by the package's SessionStore: they survive a reload.`;
  }

  /** Opens the database; throws (a `StorageError`) where IndexedDB is unavailable. */
  static async open(database = "context-compactor-demo"): Promise<StoreShelf> {
    const adapter = await IndexedDBAdapter.open({ database });
    // An automatic save's error comes back from the flush in `save()`, which the page shows.
    const store = await SessionStore.open(adapter, { onError: () => {} });
    return new StoreShelf(store, adapter, database);
  }

  async list(): Promise<SessionInfo[]> {
    return (await this.store.list()).map((s) => ({
      id: s.id,
      title: s.title ?? s.id,
      messages: s.messages,
      tokens: s.tokens,
      encoding: s.encoding ?? undefined,
      updatedAt: s.updatedAt,
      problem: s.problem?.message,
    }));
  }

  async start(conversation: Conversation, settings: Settings, replace?: string): Promise<Replay> {
    if (replace) await this.remove(replace);
    const id = replace ?? newSessionId();
    // The conversation first: a session is listed only once it is stored, and it cannot be opened without it.
    await this.adapter.save(demoKey(id, "conversation"), serializeConversation(conversation));
    const handle = await this.store.create(sessionOptions(conversation, settings, id));
    const replay = new Replay(conversation, settings, handle.session);
    this.replays.set(id, { replay, handle, compactionsSaved: 0, costsSaved: 0 });
    await handle.flush();
    return replay;
  }

  async save(replay: Replay): Promise<void> {
    const open = this.replays.get(replay.session.id);
    if (!open || open.replay !== replay) return; // replaced or removed since
    const { id } = open.handle;
    const fresh = replay.compactions.slice(open.compactionsSaved);
    for (const [i, compaction] of fresh.entries()) {
      await this.adapter.save(compactionKey(id, open.compactionsSaved + i), JSON.stringify(compaction));
    }
    open.compactionsSaved = replay.compactions.length;
    if (replay.costs.length > open.costsSaved) {
      await this.adapter.save(costsKey(id, open.costsSaved), JSON.stringify(replay.costs.slice(open.costsSaved)));
      open.costsSaved = replay.costs.length;
    }
    await open.handle.flush();
  }

  async open(id: string, summarize?: Summarizer): Promise<Replay | undefined> {
    const open = this.replays.get(id);
    if (open) return open.replay;
    const text = await this.adapter.load(demoKey(id, "conversation"));
    if (text === undefined) throw new Error(`session ${id} has no stored conversation to replay: delete it`);
    const conversation = parseConversation(text);
    const compactions = (await this.adapter.loadRange(demoKey(id, "compaction"))).map((entry) => JSON.parse(entry.value) as Compaction);
    const costs = (await this.adapter.loadRange(demoKey(id, "costs"))).flatMap((entry) => JSON.parse(entry.value) as StepCost[]);
    const handle = await this.store.open(id);
    try {
      const replay = await Replay.reopen(conversation, handle.session, compactions, costs, summarize);
      this.replays.set(id, { replay, handle, compactionsSaved: replay.compactions.length, costsSaved: replay.costs.length });
      return replay;
    } catch (error) {
      await handle.close();
      throw error;
    }
  }

  async remove(id: string): Promise<void> {
    this.replays.delete(id);
    await this.store.delete(id);
    await this.adapter.removeRange(demoKey(id));
  }
}
