/**
 * The sidebar's sessions, behind one narrow interface, so that where they are kept is one
 * module's business. Today they are kept by the page (`PageShelf`): the persistence store of
 * issue #13 (a `SessionStore` over IndexedDB) is not in the package yet; when it is, a shelf
 * over it takes this one's place and the sessions survive a reload.
 */
import type { Replay } from "./replay";

export interface SessionInfo {
  id: string;
  title: string;
  messages: number;
  /** Tokens of the last context built. */
  tokens: number;
  updatedAt: number;
}

export interface SessionShelf {
  /** Whether the sessions survive a reload. */
  readonly persistent: boolean;
  /** What the sidebar says about where the sessions are kept. */
  readonly note: string;
  list(): Promise<SessionInfo[]>;
  /** Saves the replay's session (called after every step). */
  save(replay: Replay): Promise<void>;
  open(id: string): Promise<Replay | undefined>;
  remove(id: string): Promise<void>;
}

export function infoOf(replay: Replay): SessionInfo {
  return {
    id: replay.session.id,
    title: replay.title,
    messages: replay.session.history.length,
    tokens: replay.last?.tokens.total ?? 0,
    updatedAt: Date.now(),
  };
}

/** Sessions held by the page for as long as it is open. */
export class PageShelf implements SessionShelf {
  readonly persistent = false;
  readonly note = "Kept in this page only: the IndexedDB session store (issue #13) is not in the package yet.";
  private readonly replays = new Map<string, { replay: Replay; info: SessionInfo }>();

  async list(): Promise<SessionInfo[]> {
    return [...this.replays.values()].map((r) => r.info).sort((a, b) => b.updatedAt - a.updatedAt);
  }

  async save(replay: Replay): Promise<void> {
    this.replays.set(replay.session.id, { replay, info: infoOf(replay) });
  }

  async open(id: string): Promise<Replay | undefined> {
    return this.replays.get(id)?.replay;
  }

  async remove(id: string): Promise<void> {
    this.replays.delete(id);
  }
}
