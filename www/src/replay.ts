/**
 * A conversation replayed step by step into a fresh `Session` with memory: append a step, build
 * the context the next model call would get, record the turn in the memory. A build that made a
 * new summary is a compaction, kept with its receipt.
 */
import {
  Session,
  answerRecall,
  compact,
  resolveProfile,
  type BuildOptions,
  type BuildResultIn,
  type EncodingName,
  type Format,
  type Message,
  type Profile,
  type Receipt,
  type ReceiptEntry,
  type RecallResult,
  type Summarizer,
  type AnthropicMessage,
  type AnthropicToolUseBlock,
  type OpenAIToolCall,
  type SummaryRecord,
  type SessionOptions,
} from "context-compactor/lite";
import type { Conversation } from "./conversation";
import { pricingFor, stepCost, type StepCost } from "./cost";

/** What the page's controls choose: a built-in profile, or a budget of our own. */
export interface Settings {
  mode: "profile" | "budget";
  profile: string;
  /** Tokens, in budget mode. */
  budget: number;
  /** In budget mode (a profile names its own). */
  encoding: EncodingName;
  /** The context's format: the file's, or converted. */
  format: Format | "file";
}

/** The profile the settings stand for: a built-in one, or one made of the budget (no compaction before it is full). */
export function profileOf(settings: Settings): Profile {
  if (settings.mode === "profile") return resolveProfile(settings.profile);
  return { name: `budget ${settings.budget}`, contextWindow: settings.budget, triggerFraction: 1, keepRecentSteps: 3, encoding: settings.encoding };
}

export function buildOptions(settings: Settings, fileFormat: Format): BuildOptions & { format: Format } {
  const format = settings.format === "file" ? fileFormat : settings.format;
  return { profile: profileOf(settings), format, pricing: pricingFor(format) };
}

/** A build's result, its messages typed for the provider they are for. */
export type Built = BuildResultIn<Format>;

export interface Compaction {
  /** The step after which it happened (1-based). */
  step: number;
  receipt: Receipt;
  summary: SummaryRecord;
}

export interface StoredMessage {
  id: string;
  message: Message;
  /** The step (memory turn) it was appended in, 1-based. */
  step: number;
}

/** Session ids: letters, digits, '-', '_', '.', ':'. */
export function newSessionId(): string {
  return `demo-${Date.now().toString(36)}-${Math.floor(Math.random() * 36 ** 4).toString(36)}`;
}

/** The options of a replay's session (memory on, counted as the settings say). */
export function sessionOptions(conversation: Conversation, settings: Settings, id: string): SessionOptions & { id: string } {
  return { id, memory: true, maxLoops: 1_000_000, encoding: profileOf(settings).encoding, format: conversation.format };
}

/**
 * What a session's metadata keeps of its replay, to reopen it: written when the session is made
 * and after each live turn, never per step (the position is the memory's turn count, and the
 * step of each replayed message follows from the conversation's steps).
 */
interface ReplayState {
  version: 1;
  settings: Settings;
  /** Messages appended in each live turn. */
  live: number[];
}

function replayState(metadata: Record<string, unknown>): ReplayState {
  const state = metadata.replay as Partial<ReplayState> | undefined;
  if (state?.version !== 1 || typeof state.settings !== "object" || !Array.isArray(state.live)) {
    throw new Error("this session's metadata holds no replay state this page can read");
  }
  return state as ReplayState;
}

export class Replay {
  /** The session (a stored session's autosaving one, or one the page alone holds). */
  readonly session: Session;
  readonly messages: StoredMessage[] = [];
  readonly compactions: Compaction[] = [];
  /** Steps appended so far (live chat turns included). */
  position = 0;
  /** Turns chatted with a model after the replay. */
  liveTurns = 0;
  /** Messages appended in each live turn. */
  private readonly live: number[] = [];
  last?: Built;
  entries: ReceiptEntry[] = [];
  /** Milliseconds of the last build. */
  buildMs = 0;
  /** Each model call's input and its cost beside no compaction: one per replayed step and per live call. */
  readonly costs: StepCost[] = [];

  /** A model's summariser (the built-in extractive summary without one): `main.ts`'s `adopt` sets it. */
  summarize?: Summarizer;

  constructor(
    readonly conversation: Conversation,
    readonly settings: Settings,
    /** A new session's id, or the session to replay into (made with `sessionOptions`, empty unless `reopened`). */
    session: Session | string = newSessionId(),
    reopened = false,
  ) {
    this.session = typeof session === "string" ? new Session(sessionOptions(conversation, settings, session)) : session;
    if (!reopened) {
      this.session.title = this.title;
      this.saveState();
    }
  }

  /**
   * A replay stored before (`session` holds its metadata, history and memory), as it was left:
   * the same position, messages and steps, its compactions (those given), and the context built
   * again from the stored history and summary (by `summarize`, the summariser in force, when
   * that build compacts).
   */
  static async reopen(conversation: Conversation, session: Session, compactions: Compaction[], costs: StepCost[], summarize?: Summarizer): Promise<Replay> {
    const state = replayState(session.metadata);
    const replay = new Replay(conversation, state.settings, session, true);
    replay.summarize = summarize;
    replay.restore(state, compactions);
    replay.costs.push(...costs);
    // Not a model call: the context the session was left at, built again to show it.
    await replay.build();
    return replay;
  }

  private restore(state: ReplayState, compactions: Compaction[]): void {
    const { history } = this.session;
    this.position = this.session.memory?.turns.length ?? 0;
    this.liveTurns = Math.max(0, this.position - this.total);
    this.live.push(...state.live);
    const withSystem = this.conversation.system !== undefined;
    const counts = [...this.conversation.steps.slice(0, this.replayed).map((step, i) => step.length + (i === 0 && withSystem ? 1 : 0)), ...state.live];
    const ids = history.ids();
    let at = 0;
    counts.forEach((count, i) => {
      for (let k = 0; k < count && at < ids.length; k += 1, at += 1) this.messages.push({ id: ids[at], message: history.get(ids[at]) as Message, step: i + 1 });
    });
    // Messages of a live turn that did not end (its model call failed) belong to the turn under way.
    for (; at < ids.length; at += 1) this.messages.push({ id: ids[at], message: history.get(ids[at]) as Message, step: this.position + 1 });
    this.compactions.push(...compactions);
  }

  /** Writes the replay's state into the session's metadata (its settings record: rarely). */
  private saveState(): void {
    const state: ReplayState = { version: 1, settings: this.settings, live: this.live };
    this.session.metadata = { source: this.conversation.loaded.source, replay: state };
  }

  /** The file's name, and the run of a tau-bench run list. */
  get title(): string {
    const run = this.conversation.loaded.run;
    return run ? `${this.conversation.name}, run ${run.index}` : this.conversation.name;
  }

  get total(): number {
    return this.conversation.steps.length;
  }

  get done(): boolean {
    return this.position >= this.total;
  }

  get replayed(): number {
    return Math.min(this.position, this.total);
  }

  get options(): BuildOptions & { format: Format } {
    return buildOptions(this.settings, this.conversation.format);
  }

  /** Appends the next step, builds, records the turn. Returns the compaction it caused, if any. */
  async step(): Promise<Compaction | undefined> {
    if (this.done) return undefined;
    const { history } = this.session;
    const index = this.position;
    const batch = this.conversation.steps[index];
    const first = index === 0 && this.conversation.system !== undefined;
    const ids = first
      ? history.appendMany({ system: this.conversation.system, messages: batch as AnthropicMessage[] }, "anthropic")
      : history.appendMany(batch, this.conversation.format);
    // Anthropic's system prompt is stored as the first message.
    const stored = first ? [{ role: "system", content: this.conversation.system } as unknown as Message, ...batch] : batch;
    ids.forEach((id, i) => this.messages.push({ id, message: stored[i], step: index + 1 }));
    this.position += 1;
    try {
      return await this.build(undefined, true);
    } finally {
      // Recorded even when the build failed (a model's summariser can), so that turn N stays step N.
      this.session.memory?.recordTurn({ workspaceContext: this.workspace(index, batch) });
    }
  }

  /**
   * Builds the context for the next model call; a new summary makes it a compaction. `call`:
   * the context is sent (a replayed step's call, a live call), so its cost is recorded.
   */
  async build(format?: Format, call = false): Promise<Compaction | undefined> {
    const { history } = this.session;
    // Nothing to show yet. (A build of the empty history would be a context of its own, a
    // placeholder message, that the next build extends instead of starting afresh.)
    if (history.length === 0) {
      this.last = undefined;
      this.entries = [];
      return undefined;
    }
    const before = history.summaryState().generation;
    const started = performance.now();
    const options = { ...this.options, ...(format ? { format } : {}) };
    const last = this.summarize ? await compact(history, { ...options, summarize: this.summarize }) : history.build(options);
    this.last = last;
    this.buildMs = performance.now() - started;
    this.entries = history.receiptEntries();
    if (call) this.costs.push(stepCost(this.position, last, options.format, this.costs.at(-1)));
    const state = history.summaryState();
    if (state.generation === before || !state.current) return undefined;
    const compaction = { step: this.position, receipt: last.receipt, summary: state.current };
    this.compactions.push(compaction);
    return compaction;
  }

  /**
   * What the replayed agent "saw" in the step, as its workspace snapshot: the log has no
   * workspace of its own, so the step's tool calls and sizes stand in.
   */
  private workspace(index: number, batch: Message[]): string {
    const tools = batch.flatMap((m) => {
      const record = m as Record<string, unknown>;
      const calls = Array.isArray(record.tool_calls) ? (record.tool_calls as Array<{ function?: { name?: string } }>).map((c) => c.function?.name) : [];
      const uses = Array.isArray(record.content) ? (record.content as Array<{ type?: string; name?: string }>).filter((b) => b.type === "tool_use").map((b) => b.name) : [];
      return [...calls, ...uses].filter((n): n is string => typeof n === "string");
    });
    return `Replay of ${this.conversation.name}, step ${index + 1} of ${this.total}: ${batch.map((m) => m.role).join(", ")}` +
      (tools.length ? `; tools called: ${tools.join(", ")}` : "");
  }

  /** The context in `format`, for a live model call. */
  async buildFor(format: Format): Promise<Built> {
    await this.build(format, true);
    if (!this.last) throw new Error("no build result");
    return this.last;
  }

  /** Appends messages that are not from the file (a live chat); they belong to the turn under way. */
  appendLive(messages: Message[], format: Format): void {
    const ids = this.session.history.appendMany(messages, format);
    ids.forEach((id, i) => this.messages.push({ id, message: messages[i], step: this.position + 1 }));
  }

  /** Closes a live turn: it is recorded in the memory like a replayed step. */
  endLiveTurn(workspaceContext: string): void {
    this.position += 1;
    this.liveTurns += 1;
    this.live.push(this.messages.filter((m) => m.step === this.position).length);
    this.session.memory?.recordTurn({ workspaceContext });
    this.saveState();
  }

  /** Tool results for a live assistant message: `recall_context` from the memory, any other tool refused. */
  answerToolCalls(message: Message, format: Format): Message[] {
    const memory = this.session.memory;
    const record = message as Record<string, unknown>;
    if (format === "openai") {
      const calls = (Array.isArray(record.tool_calls) ? record.tool_calls : []) as OpenAIToolCall[];
      return calls.map((c) => c.function.name === "recall_context" && memory
        ? answerRecall(memory, c, { format })
        : ({ role: "tool", tool_call_id: c.id, content: `The tool ${c.function.name} is not available in this demo.` } as Message));
    }
    const uses = (Array.isArray(record.content) ? record.content : []).filter((b: { type?: string }) => b.type === "tool_use") as AnthropicToolUseBlock[];
    if (uses.length === 0) return [];
    const blocks = uses.map((u) => {
      if (u.name === "recall_context" && memory) {
        const answer = answerRecall(memory, u, { format }) as { content: unknown[] };
        return answer.content[0];
      }
      return { type: "tool_result", tool_use_id: u.id, content: `The tool ${u.name} is not available in this demo.`, is_error: true };
    });
    return [{ role: "user", content: blocks } as Message];
  }

  /** Turns not wholly in the last context (their summaries stand in, or did not fit). */
  compactedTurns(): number[] {
    const memory = this.last?.receipt.memory;
    return memory ? [...memory.turns, ...memory.omitted].sort((a, b) => a - b) : [];
  }

  /** `recall_context` on a turn, as the model would call it: the structured result and the tool message to append. */
  recall(turn: number): { result: RecallResult; toolMessage: Message } {
    const memory = this.session.memory;
    if (!memory) throw new Error("this session has no memory");
    const args = { turnNumbers: [turn] };
    const result = memory.recall(args);
    const format = this.options.format;
    const call = format === "anthropic"
      ? { type: "tool_use" as const, id: "toolu_demo_recall", name: "recall_context", input: args }
      : { id: "call_demo_recall", type: "function" as const, function: { name: "recall_context", arguments: JSON.stringify(args) } };
    return { result, toolMessage: answerRecall(memory, call, { format }) };
  }

  /** Replays up to `position` steps (after a change of settings, into a new session). */
  async replayTo(position: number, onStep?: () => void): Promise<void> {
    while (this.position < Math.min(position, this.total)) {
      await this.step();
      onStep?.();
    }
  }
}
