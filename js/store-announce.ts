/**
 * What a session store tells the other stores of the same storage (other tabs and workers: a
 * `BroadcastChannel`; other processes: the storage's save beacon) when it saves or deletes a
 * session, and what it heard from them: a save announced is one a store waits to see in its own
 * copy of the storage before it reads the session.
 */
import { SaveBeacon, type Announced } from "./storage/locks.js";

export interface StoreMessage {
  id: string;
  commit?: number;
  /** The saved session's creation time: a session deleted and made again under the same id is another. */
  createdAt?: number;
  /**
   * The id of the storage's copy of the session saved or deleted (its `scopeKey` record; absent:
   * unknown): another storage behind an adapter of the same name ("default" when unnamed) may
   * hold a session of the same id and creation time, one file imported into both.
   */
  storage?: string;
  deleted?: boolean;
}

/** Where `#announced` keeps the latest save announced of session `id` made at `createdAt` in `storage`. */
const announcedKey = (id: string, createdAt: number | undefined, storage: string | undefined) => JSON.stringify([id, createdAt ?? null, storage ?? null]);
/** The latest of `saves` made in the storage `storage` (`undefined`: any) or in one unknown. */
const latestOf = (saves: Announced[], storage?: string) =>
  Math.max(0, ...saves.filter((save) => storage === undefined || save.storage === undefined || save.storage === storage).map((save) => save.commit));

export class SaveAnnouncements {
  /** The latest save of each session other tabs announced (by `announcedKey`). */
  readonly #announced = new Map<string, number>();
  readonly #beacon = new SaveBeacon();
  readonly #channel: BroadcastChannel | undefined;

  /**
   * Listens on the channel of the storage `name` (unless `broadcast` is false, or the platform has
   * no channels); `heard` gets each message once what it announces is recorded.
   */
  constructor(name: string, broadcast: boolean, heard: (message: StoreMessage) => void) {
    const Channel = (globalThis as { BroadcastChannel?: typeof BroadcastChannel }).BroadcastChannel;
    if (broadcast && Channel) {
      this.#channel = new Channel(`context-compactor:${name}`);
      // Node: a channel must not keep the process alive.
      (this.#channel as unknown as { unref?: () => void }).unref?.();
      this.#channel.onmessage = (event: MessageEvent<StoreMessage>) => {
        const message = event.data;
        if (!message || typeof message.id !== "string") return;
        this.#record(message);
        heard(message);
      };
    }
  }

  /**
   * Tells the other stores of save `commit` of session `id` (the caller holds the session's lock
   * `lockName`); `createdAt` tells a session from one deleted and made again, `storage` its copy
   * in this storage.
   */
  async publish(lockName: string, id: string, createdAt: number, storage: string | undefined, commit: number): Promise<void> {
    await this.#beacon.publish(lockName, createdAt, storage, commit);
    this.post({ id, commit, createdAt, storage });
  }

  /**
   * The latest save of session `id` made at `createdAt` announced (on the channel or through the
   * beacon) of its copy `storage`, or of a copy unknown.
   */
  async latest(lockName: string, id: string, createdAt: number, storage: string | undefined): Promise<number> {
    return latestOf([...this.#announcedOf(id, createdAt), ...(await SaveBeacon.saves(lockName, createdAt))], storage);
  }

  /** The saves of session `id` made at `createdAt` that other stores announced on the channel. */
  #announcedOf(id: string, createdAt: number): Announced[] {
    const saves: Announced[] = [];
    for (const [key, commit] of this.#announced) {
      const [known, at, storage] = JSON.parse(key) as [string, number | null, string | null];
      if (known === id && at === createdAt) saves.push({ storage: storage ?? undefined, commit });
    }
    return saves;
  }

  post(message: StoreMessage): void {
    try {
      this.#channel?.postMessage(message);
    } catch {
      // A closed channel: the others catch up at their next save.
    }
  }

  close(): void {
    this.#channel?.close();
  }

  #record(message: StoreMessage): void {
    const storage = typeof message.storage === "string" ? message.storage : undefined;
    const key = announcedKey(message.id, message.createdAt, storage);
    if (typeof message.commit === "number") this.#announced.set(key, Math.max(message.commit, this.#announced.get(key) ?? 0));
    if (message.deleted) {
      for (const known of [...this.#announced.keys()]) {
        const [id, , from] = JSON.parse(known) as [string, unknown, string | null];
        if (id === message.id && (storage === undefined || from === null || from === storage)) this.#announced.delete(known);
      }
    }
  }
}
