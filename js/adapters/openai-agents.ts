/**
 * OpenAI Agents SDK adapter (`context-compactor/openai-agents`): a `callModelInputFilter` that
 * compacts the input of every model call of a run, and a `Session` whose `getItems()` returns the
 * compacted history (what a run starts with), within the budget, while every item is kept whole.
 *
 * The Agents SDK keeps its history as its own protocol items (camelCase `callId`,
 * `function_call_result` with a structured `output`), which its OpenAI model turns into Responses
 * input items. The history stores Responses items: `toResponsesItem` and `fromResponsesItem` map
 * the few fields that differ, and what the mapping changes is remembered in the item (`_agents`)
 * so that the way back gives the same item. Reasoning, compaction and hosted tool items pass
 * through as they are (opaque: kept whole, with what they belong to). Types only come from
 * `@openai/agents-core`: nothing of it is bundled or imported at run time.
 */
import type { AgentInputItem, CallModelInputFilter, CallModelInputFilterArgs, ModelInputData, Session } from "@openai/agents-core";
import type { BuildOptions, BuildResult, ConversationHistory, RequestParts } from "../api.js";
import type { StoredSession } from "../store.js";
import { InvalidArgumentError } from "../errors.js";

/** What the mapping to Responses changed, so that the way back restores it. */
interface AgentsMarks {
  /** The item's own type (`function_call_result` → `function_call_output`). */
  type?: string;
  /** The output was `{ type: "text", text }`. */
  textOutput?: true;
  /** The call id was `callId`. */
  callId?: true;
}

type Json = Record<string, unknown>;

/** An Agents SDK item as the Responses input item the history stores. */
export function toResponsesItem(item: AgentInputItem): Json {
  const out: Json = { ...(item as Json) };
  const marks: AgentsMarks = {};
  if (typeof out.callId === "string" && !("call_id" in out)) {
    out.call_id = out.callId;
    delete out.callId;
    marks.callId = true;
  }
  const type = typeof out.type === "string" ? out.type : undefined;
  if (type?.endsWith("_call_result")) {
    out.type = `${type.slice(0, -"_result".length)}_output`;
    marks.type = type;
    const output = out.output as Json | undefined;
    if (output && typeof output === "object" && output.type === "text" && typeof output.text === "string" && Object.keys(output).length === 2) {
      out.output = output.text;
      marks.textOutput = true;
    }
  }
  if (Object.keys(marks).length > 0) out._agents = marks;
  return out;
}

/** A Responses item from the history (or made by a build) as the Agents SDK's item. */
export function fromResponsesItem(value: Json): AgentInputItem {
  const out: Json = { ...value };
  const marks = out._agents as AgentsMarks | undefined;
  delete out._agents;
  if (marks?.type) out.type = marks.type;
  if (marks?.textOutput && typeof out.output === "string") out.output = { type: "text", text: out.output };
  if (marks?.callId && "call_id" in out) {
    out.callId = out.call_id;
    delete out.call_id;
  }
  // A message the build made (a summary, a placeholder) in the Agents SDK's shape.
  if (typeof out.role === "string" && out.type === undefined) {
    if (out.role === "developer") out.role = "system";
    if (out.role === "assistant") {
      const content = typeof out.content === "string" ? [{ type: "output_text", text: out.content }] : out.content;
      return { type: "message", role: "assistant", status: "completed", content } as AgentInputItem;
    }
  }
  return out as AgentInputItem;
}

export interface CompactingSessionOptions {
  /** The session's id (default: a random one). */
  sessionId?: string;
  /** The history to keep the items in (default: a new one of `stored` or this option). */
  history?: ConversationHistory;
  /** A stored session (js/store.ts): items are saved as they are added. */
  stored?: StoredSession;
  /** How the context is built (the format is always `"openai-responses"`): a profile, a budget… */
  build?: Omit<BuildOptions, "format">;
  /** Called with each build (its receipt, budget, layout). */
  onBuild?: (result: BuildResult) => void;
}

/** An Agents SDK `Session` whose history is compacted on the way to the model. */
export class CompactingSession implements Session {
  #history: ConversationHistory;
  readonly #stored: StoredSession | undefined;
  readonly #sessionId: string;
  readonly #build: Omit<BuildOptions, "format">;
  readonly #onBuild: ((result: BuildResult) => void) | undefined;
  /** The last build: what `getItems` returned and why. */
  lastBuild: BuildResult | undefined;

  constructor(options: CompactingSessionOptions) {
    const history = options.stored?.history ?? options.history;
    if (!history) throw new InvalidArgumentError("CompactingSession needs a `history` or a `stored` session");
    if (options.stored && options.history && options.history !== options.stored.history) {
      throw new InvalidArgumentError("CompactingSession: `history` and `stored` name different histories");
    }
    this.#history = history;
    this.#stored = options.stored;
    this.#sessionId = options.sessionId ?? options.stored?.id ?? globalThis.crypto.randomUUID();
    this.#build = options.build ?? {};
    this.#onBuild = options.onBuild;
  }

  /** The history holding every item added, whole. */
  get history(): ConversationHistory {
    return this.#history;
  }

  async getSessionId(): Promise<string> {
    return this.#sessionId;
  }

  /** The compacted history; with `limit`, its last `limit` items. */
  async getItems(limit?: number): Promise<AgentInputItem[]> {
    if (this.#history.length === 0) return [];
    const result = this.#history.build({ ...this.#build, format: "openai-responses" });
    this.lastBuild = result;
    this.#onBuild?.(result);
    const items = (result.messages as unknown as Json[]).map(fromResponsesItem);
    return limit === undefined ? items : items.slice(Math.max(0, items.length - limit));
  }

  async addItems(items: AgentInputItem[]): Promise<void> {
    if (items.length === 0) return;
    this.#history.appendMany(items.map(toResponsesItem), "openai-responses");
    if (this.#stored) {
      this.#stored.changed();
      await this.#stored.flush();
    }
  }

  /** Removes the last item added (the history is rebuilt without it). */
  async popItem(): Promise<AgentInputItem | undefined> {
    const history = this.#history;
    const ids = history.ids();
    const last = ids.at(-1);
    if (last === undefined) return undefined;
    if (this.#stored) throw new InvalidArgumentError("popItem: a stored session's history is append-only");
    const value = history.get(last) as Json;
    const data = history.export();
    data.history.messages.pop();
    this.#history = (history.constructor as typeof ConversationHistory).import(data);
    history.free();
    return fromResponsesItem(value);
  }

  async clearSession(): Promise<void> {
    if (this.#stored) throw new InvalidArgumentError("clearSession: delete the stored session with its SessionStore");
    const history = this.#history;
    const data = history.export();
    data.history.messages = [];
    data.history.summary = { current: null, inProgress: null, generation: 0 };
    this.#history = (history.constructor as typeof ConversationHistory).import(data);
    history.free();
  }
}

export interface CompactingInputFilterOptions {
  /**
   * How the context is built (the format is always `"openai-responses"`): a profile, a budget…
   * `request` replaces, part by part, what the filter reads from the call (the instructions, the
   * agent's function tools and handoffs).
   */
  build?: Omit<BuildOptions, "format">;
  /** Called with each build (its receipt, budget, layout). */
  onBuild?: (result: BuildResult) => void;
}

/** A `callModelInputFilter` that compacts, with the history it feeds and its last build. */
export interface CompactingInputFilter extends CallModelInputFilter {
  /** The history holding every item the filter was given, whole. */
  readonly history: ConversationHistory;
  /** The last build: what the model was sent and why. */
  readonly lastBuild: BuildResult | undefined;
  /** The conversation's `prompt_cache_key` for OpenAI (the last build's; none before the first). */
  readonly promptCacheKey: string | undefined;
  /**
   * For the model settings' `providerData` (`new Runner({ callModelInputFilter, modelSettings:
   * { providerData: filter.providerData } })`): `prompt_cache_key` reads the conversation's key
   * when the SDK makes each request's settings, which is before the filter runs: every call after
   * the conversation's first carries it.
   */
  readonly providerData: { readonly prompt_cache_key?: string };
}

/** An item as the filter compares it (the SDK hands the filter copies, never the same objects). */
const itemKey = (item: AgentInputItem): string => JSON.stringify(item);

/**
 * A handoff as the function tool the model is sent: a `Handoff` says it; an agent given as a
 * handoff gets the SDK's default one (its `handoff(agent)`: the same name, description and empty
 * strict schema; tests/js/adapters.test.mjs counts both alike).
 */
function handoffTool(value: unknown): unknown[] {
  const h = value as { getHandoffAsFunctionTool?: () => unknown; name?: unknown; handoffDescription?: unknown } | null;
  if (typeof h?.getHandoffAsFunctionTool === "function") return [h.getHandoffAsFunctionTool()];
  if (typeof h?.name !== "string") return [];
  return [{
    type: "function",
    name: `transfer_to_${h.name.replace(/[^a-zA-Z0-9]/g, "_")}`,
    description: `Handoff to the ${h.name} agent to handle the request. ${typeof h.handoffDescription === "string" ? h.handoffDescription : ""}`,
    parameters: { type: "object", properties: {}, required: [], additionalProperties: false },
    strict: true,
  }];
}

/**
 * The request's parts sent beside the input as the agent's OpenAI model sends them: the
 * instructions, the function tools and the handoffs (as their function tools). Hosted and MCP
 * tools have no definition here (`build.request.tools` can give them).
 */
function agentRequest(instructions: unknown, agent: CallModelInputFilterArgs["agent"] | undefined): RequestParts {
  const request: RequestParts = {};
  if (typeof instructions === "string" && instructions.length > 0) request.system = instructions;
  const handoffs = ((agent?.handoffs ?? []) as unknown[]).flatMap(handoffTool);
  const tools = [...agentToolDefinitions(agent?.tools ?? []), ...agentToolDefinitions(handoffs)];
  if (tools.length > 0) request.tools = tools;
  return request;
}

/**
 * A `callModelInputFilter` for the Agents SDK's run configuration (`run(agent, input, {
 * callModelInputFilter })` or `new Runner({ callModelInputFilter })`) that sends every model call
 * of a run the compacted conversation, within the budget with the instructions and the agent's
 * tool definitions counted: a run of any number of tool calls stays within it, not only what the
 * run starts with.
 *
 * The filter feeds `history` with what it is given: the SDK's input for each call is the run's
 * input and the items the run has made so far, so the filter appends the items past those it has
 * seen. A later run's input either repeats the conversation so far (`result.history` with new
 * input after it) or holds only what is new; both continue the same history. Use it without a
 * `session` (a session is fed by the Runner apart from the filter, and would store the compacted
 * input): `CompactingSession` is the session-side adapter.
 */
export function compactingInputFilter(history: ConversationHistory, options: CompactingInputFilterOptions = {}): CompactingInputFilter {
  if (history === null || typeof history !== "object" || typeof (history as { build?: unknown }).build !== "function") {
    throw new InvalidArgumentError("compactingInputFilter needs a ConversationHistory (format \"openai-responses\")");
  }
  const build = options.build ?? {};
  const onBuild = options.onBuild;
  let lastBuild: BuildResult | undefined;
  // The input items the history holds from the filter's input, counted from its start, and the last one.
  let fed = 0;
  let lastFed: string | undefined;
  const filter = ({ modelData, agent }: CallModelInputFilterArgs): ModelInputData => {
    const input = modelData?.input;
    if (!Array.isArray(input)) throw new InvalidArgumentError("compactingInputFilter: the SDK's modelData.input is not a list of items");
    const request = { ...agentRequest(modelData.instructions, agent), ...build.request };
    const repeats = fed > 0 && input.length >= fed && itemKey(input[fed - 1]) === lastFed;
    const added = repeats ? input.slice(fed) : input;
    if (added.length > 0) history.appendMany(added.map(toResponsesItem), "openai-responses");
    fed = input.length;
    lastFed = input.length > 0 ? itemKey(input[input.length - 1]) : undefined;
    const result = history.build({ ...build, format: "openai-responses", ...(Object.keys(request).length > 0 ? { request } : {}) });
    lastBuild = result;
    onBuild?.(result);
    return { ...modelData, input: (result.messages as unknown as Json[]).map(fromResponsesItem) };
  };
  const providerData = Object.defineProperty({}, "prompt_cache_key", { get: () => lastBuild?.promptCacheKey, enumerable: true });
  Object.defineProperty(filter, "history", { get: () => history });
  Object.defineProperty(filter, "lastBuild", { get: () => lastBuild });
  Object.defineProperty(filter, "promptCacheKey", { get: () => lastBuild?.promptCacheKey });
  Object.defineProperty(filter, "providerData", { value: providerData });
  return filter as unknown as CompactingInputFilter;
}

/** A function tool as the Responses API takes it (what `countRequest` counts for that format). */
export interface ResponsesFunctionTool {
  type: "function";
  name: string;
  description?: string;
  parameters: Record<string, unknown>;
  strict?: boolean;
}

/**
 * The agent's function tools (`FunctionTool`: `name`, `description`, `parameters` as JSON Schema,
 * `strict`) as the Responses function tools its OpenAI model sends, so that the budget can count
 * them. Hosted tools (web search, file search…) have no definition to count here.
 */
export function agentToolDefinitions(tools: ReadonlyArray<unknown>): ResponsesFunctionTool[] {
  if (!Array.isArray(tools)) throw new InvalidArgumentError("agentToolDefinitions expects an agent's tools: an array");
  const out: ResponsesFunctionTool[] = [];
  tools.forEach((tool: unknown, index) => {
    const t = tool as { type?: unknown; name?: unknown; description?: unknown; parameters?: unknown; strict?: unknown } | null;
    if (t === null || typeof t !== "object") throw new InvalidArgumentError(`tools[${index}] is not a tool`);
    if (t.type !== "function") return;
    if (typeof t.name !== "string") throw new InvalidArgumentError(`tools[${index}]: a function tool needs a string name`);
    if (t.parameters === null || typeof t.parameters !== "object") {
      throw new InvalidArgumentError(`tools[${index}] (${t.name}): parameters must be a JSON Schema object`);
    }
    out.push({
      type: "function",
      name: t.name,
      ...(typeof t.description === "string" ? { description: t.description } : {}),
      parameters: JSON.parse(JSON.stringify(t.parameters)) as Record<string, unknown>,
      ...(typeof t.strict === "boolean" ? { strict: t.strict } : {}),
    });
  });
  return out;
}
