/**
 * Vercel AI SDK adapter (`context-compactor/ai-sdk`): the compacted `ModelMessage[]` for a step
 * of `generateText`/`streamText`, within the model's budget, with the build's receipt.
 *
 * The history is the lossless record: the helper appends to it what the SDK's list holds beyond
 * it, then builds. In `prepareStep` (`ai` 5, 6 and 7; see {@link PrepareStepInput}) that is
 * what each step adds: its initial and response messages, and in `ai` 7 the steering messages
 * (never `ai` 7's `messages`, which after the first override are the compacted ones), so nothing
 * the model said or was told is lost when a step is sent less. Types only come from `ai`: nothing
 * of it is bundled or imported at run time.
 */
import type { ModelMessage, PrepareStepResult, SystemModelMessage, ToolSet, UIMessage } from "ai";
import type { BuildOptions, BuildResult, ConversationHistory, Receipt, RequestParts } from "../api.js";
import { InvalidArgumentError, InvalidMessageError } from "../errors.js";

/** Build options for the AI SDK (the format is always `"ai-sdk"`). */
export type AiSdkCompactOptions = Omit<BuildOptions, "format">;

export interface CompactedMessages {
  /** The messages to send, as the AI SDK types them. */
  messages: ModelMessage[];
  /** What became of every stored message. */
  receipt: Receipt;
  /** The whole build result (layout, summary request, violations…). */
  result: BuildResult;
}

/**
 * Appends the messages of `conversation` the history does not hold yet (the history must hold a
 * prefix of it: the helper owns the history) and returns the compacted list.
 */
export function compactMessages(
  history: ConversationHistory,
  conversation: readonly ModelMessage[],
  options: AiSdkCompactOptions = {},
): CompactedMessages {
  const held = history.length;
  if (conversation.length > held) history.appendMany(conversation.slice(held), "ai-sdk");
  const result = history.build({ ...options, format: "ai-sdk" });
  // The package's ModelMessage type is a subset of the SDK's (tests/types/formats.ts checks it).
  const messages: ModelMessage[] = result.messages;
  return { messages, receipt: result.receipt, result };
}

/** The AI SDK (`ai`) majors the adapter supports: the `peerDependencies` range says the same. */
export const SUPPORTED_AI_MAJORS = "5, 6 and 7";

/**
 * What `prepareStep` is given that the helper reads, in each supported major of `ai`:
 * - `ai` 5 and 6: `messages`, the initial messages and every step's response messages so far
 *   (rebuilt each step: a `messages` override applies to its step only); `ai` 6 also passes
 *   `experimental_context`, which tells it from `ai` 5 (whose `system` override takes a string only);
 * - `ai` 7: `initialMessages` and `responseMessages` (its `messages` carry the last override
 *   forward, so they are the compacted ones), and `experimental_steeringMessages`, the user
 *   messages `experimental_steering` added for this step, which come after the responses so far;
 *   `initialInstructions`, the instructions given to `generateText`/`streamText`.
 */
export interface PrepareStepInput {
  stepNumber: number;
  messages?: ReadonlyArray<ModelMessage>;
  initialMessages?: ReadonlyArray<ModelMessage>;
  responseMessages?: ReadonlyArray<ModelMessage>;
  experimental_steeringMessages?: ReadonlyArray<ModelMessage>;
  experimental_context?: unknown;
  initialInstructions?: SystemPrompt;
}

/** A system prompt as the AI SDK takes it (`ai` 5 takes a string only). */
export type SystemPrompt = string | SystemModelMessage | ReadonlyArray<SystemModelMessage>;

type StepResult = NonNullable<PrepareStepResult<ToolSet>>;

/**
 * What the helper's `prepareStep` returns: the step's messages, and the system prompt when it
 * has one, in the field and the shape the installed `ai` takes (`ai` 7: `instructions`; `ai` 6:
 * `system`, a system message that can carry its cache breakpoint; `ai` 5: `system`, a string).
 */
export interface PreparedStep {
  messages: ModelMessage[];
  system?: StepResult extends { system?: infer S } ? S : never;
  instructions?: StepResult extends { instructions?: infer I } ? I : never;
}

export interface CompactingPrepareStep {
  (input: PrepareStepInput): PreparedStep;
  /** The last step's build: its receipt, budget and layout. */
  readonly last: CompactedMessages | undefined;
}

export interface CompactingPrepareStepOptions extends AiSdkCompactOptions {
  /**
   * The system prompt of the call (what `generateText`/`streamText` take as `system`, `ai` 7 as
   * `instructions`): counted into the budget, and returned for every step (with its Anthropic
   * cache breakpoint where the SDK takes one), so give it here rather than to the SDK. Without it,
   * `ai` 7's `instructions` are read from the step; `ai` 5 and 6 do not tell `prepareStep` theirs.
   */
  system?: SystemPrompt;
  /** The call's tools (`tools` of `generateText`/`streamText`): their definitions are counted into the budget. */
  tools?: ToolSet;
  /** Called with each step's build. */
  onStep?: (step: CompactedMessages, stepNumber: number) => void;
}

const isList = (value: unknown): value is ReadonlyArray<ModelMessage> => Array.isArray(value);

/** The supported majors, told apart by what `prepareStep` is given. */
type Major = 5 | 6 | 7;

/** The SDK's step input as the messages it adds since `seen`, in order (throws for an `ai` outside the range). */
function addedInStep(input: PrepareStepInput, seen: { initial: number; responses: number }): { added: ModelMessage[]; major: Major } {
  if (input === null || typeof input !== "object") {
    throw new InvalidArgumentError(`compactingPrepareStep: prepareStep was called with ${input === null ? "null" : typeof input}, not the AI SDK's step options`);
  }
  if (isList(input.initialMessages) && isList(input.responseMessages)) {
    // ai 7: what was added since the last step (steering messages after this step's responses).
    const added = [...input.initialMessages.slice(seen.initial), ...input.responseMessages.slice(seen.responses)];
    seen.initial = Math.max(seen.initial, input.initialMessages.length);
    seen.responses = input.responseMessages.length;
    const steering = input.experimental_steeringMessages;
    if (steering !== undefined && !isList(steering)) {
      throw new InvalidArgumentError("compactingPrepareStep: experimental_steeringMessages is not a list of messages");
    }
    return { added: [...added, ...(steering ?? [])], major: 7 };
  }
  if (isList(input.messages) && input.initialMessages === undefined) {
    // ai 5 and 6: the whole list, rebuilt each step from the initial and response messages.
    const added = input.messages.slice(seen.initial);
    seen.initial = Math.max(seen.initial, input.messages.length);
    return { added, major: "experimental_context" in input ? 6 : 5 };
  }
  const keys = Object.keys(input).sort().join(", ");
  throw new InvalidArgumentError(
    `compactingPrepareStep: prepareStep was called with { ${keys} }, without the messages of the AI SDK (\`ai\`) ${SUPPORTED_AI_MAJORS}: ` +
      "install a supported major of `ai` (ai 4 and earlier have no step messages)",
  );
}

/** The system prompt's messages (a string is one without options). */
function systemMessages(system: SystemPrompt, where: string): SystemModelMessage[] {
  const list = typeof system === "string" ? [{ role: "system" as const, content: system }] : Array.isArray(system) ? [...system] : [system as SystemModelMessage];
  list.forEach((message, i) => {
    if (!isObject(message) || message.role !== "system" || typeof message.content !== "string") {
      throw new InvalidArgumentError(`${where}${Array.isArray(system) ? `[${i}]` : ""}: a system prompt is a string or system messages ({ role: "system", content: string })`);
    }
  });
  return list;
}

/** The system prompt as `request.system` counts it: its texts, in order. */
function systemForCount(messages: readonly SystemModelMessage[]): RequestParts["system"] {
  return messages.length === 1 ? messages[0].content : messages.map((m) => ({ type: "text" as const, text: m.content }));
}

/**
 * The system prompt with the cache breakpoint the build put on its messages (Anthropic's provider
 * options, which the core makes): Anthropic caches tools and system before the messages, so the
 * mark at the end of the system prompt keeps them cached across compaction events.
 */
function markedSystem(messages: readonly SystemModelMessage[], built: readonly ModelMessage[]): SystemModelMessage[] | undefined {
  const control = built.map((m) => (m.providerOptions?.anthropic as Json | undefined)?.cacheControl).find((c) => c !== undefined);
  if (control === undefined) return undefined;
  return messages.map((message, i) => {
    if (i < messages.length - 1) return message;
    const options = (message.providerOptions ?? {}) as Record<string, Json>;
    return { ...message, providerOptions: { ...options, anthropic: { ...options.anthropic, cacheControl: control } } } as SystemModelMessage;
  });
}

/** The build's cache options less the breakpoint the system prompt takes (`undefined`: the system prompt gets none). */
function leaveOneForSystem(cache: BuildOptions["cache"]): BuildOptions["cache"] | undefined {
  if (cache === null) return undefined;
  const max = cache?.maxBreakpoints ?? 4;
  return max >= 2 ? { ...cache, maxBreakpoints: max - 1 } : undefined;
}

/**
 * A `prepareStep` for `generateText`/`streamText`/`ToolLoopAgent` (`ai` 5, 6 and 7) that sends
 * each step the compacted conversation, within the budget with the system prompt and the tool
 * definitions counted (give them in the options). One history per run: `history` starts empty (or
 * holding earlier turns that the run's initial messages repeat, as many as it holds).
 */
export function compactingPrepareStep(history: ConversationHistory, options: CompactingPrepareStepOptions = {}): CompactingPrepareStep {
  const { onStep, system, tools, ...build } = options;
  const given = system === undefined ? undefined : systemMessages(system, "compactingPrepareStep: system");
  const definitions = tools === undefined ? undefined : toolDefinitions(tools);
  let last: CompactedMessages | undefined;
  // How many of the run's initial (ai 5, 6: all) and response messages the history holds.
  let seen: { initial: number; responses: number } | undefined;
  const prepare = (input: PrepareStepInput): PreparedStep => {
    seen ??= { initial: history.length, responses: 0 };
    const { added, major } = addedInStep(input, seen);
    if (added.length > 0) history.appendMany(added, "ai-sdk");
    let prompt = given ?? (major === 7 && input.initialInstructions != null ? systemMessages(input.initialInstructions, "prepareStep: initialInstructions") : undefined);
    // ai 5 takes the system prompt as a string only: its texts, joined, are what is sent and counted.
    if (prompt !== undefined && major === 5 && prompt.length > 1) prompt = [{ role: "system", content: prompt.map((m) => m.content).join("\n") }];
    const request: RequestParts = {
      ...(prompt !== undefined ? { system: systemForCount(prompt) } : {}),
      ...(definitions !== undefined ? { tools: definitions } : {}),
      ...build.request,
    };
    // ai 5's string cannot carry a breakpoint.
    const systemCache = prompt !== undefined && major !== 5 ? leaveOneForSystem(build.cache) : undefined;
    const result = history.build({
      ...build,
      format: "ai-sdk",
      ...(Object.keys(request).length > 0 ? { request } : {}),
      ...(systemCache !== undefined ? { cache: systemCache } : {}),
    });
    // The package's ModelMessage type is a subset of the SDK's (tests/types/formats.ts checks it).
    const messages: ModelMessage[] = result.messages;
    last = { messages, receipt: result.receipt, result };
    onStep?.(last, input.stepNumber);
    const step: PreparedStep = { messages };
    if (prompt === undefined || (given === undefined && systemCache === undefined)) return step;
    // The system prompt counted is the one sent: returned for the step, marked where the SDK takes a mark.
    const marked = systemCache !== undefined ? markedSystem(prompt, messages) : undefined;
    const out = marked ?? prompt;
    const value = (out.length === 1 ? out[0] : out) as never;
    if (major === 7) step.instructions = value;
    else if (major === 6) step.system = value;
    else step.system = prompt[0].content as never;
    return step;
  };
  return Object.defineProperty(prepare, "last", { get: () => last }) as CompactingPrepareStep;
}

// ---- Tool definitions (what the request sends beside the messages) ----------------------------

/** A tool as OpenAI's Chat Completions API takes it (what `countRequest` counts). */
export interface FunctionToolDefinition {
  type: "function";
  function: { name: string; description?: string; parameters: Record<string, unknown> };
}

type JsonSchema = Record<string, unknown>;

/**
 * As the AI SDK sends a schema read from a Standard Schema (zod 4, …): every object closed
 * (`additionalProperties: false`), as its `addAdditionalPropertiesToJsonSchema` does.
 */
function closeObjects(schema: JsonSchema): JsonSchema {
  const visit = (value: unknown): unknown => (isObject(value) ? closeObjects(value) : value);
  const type = schema.type;
  if (type === "object" || (Array.isArray(type) && type.includes("object"))) {
    const extra = schema.additionalProperties;
    schema.additionalProperties = extra != null && typeof extra !== "boolean" ? visit(extra) : false;
    if (isObject(schema.properties)) for (const key of Object.keys(schema.properties)) schema.properties[key] = visit(schema.properties[key]);
  }
  if (schema.items != null) schema.items = Array.isArray(schema.items) ? schema.items.map(visit) : visit(schema.items);
  for (const key of ["anyOf", "allOf", "oneOf"]) if (Array.isArray(schema[key])) schema[key] = (schema[key] as unknown[]).map(visit);
  if (isObject(schema.definitions)) for (const key of Object.keys(schema.definitions)) schema.definitions[key] = visit(schema.definitions[key]);
  return schema;
}

/** A tool's input schema as JSON Schema, read as the AI SDK reads it (no framework imported). */
function inputJsonSchema(name: string, schema: unknown): JsonSchema {
  // No schema: the SDK sends an empty object schema.
  if (schema == null) return { type: "object", properties: {}, additionalProperties: false };
  // `jsonSchema(…)` and `zodSchema(…)` of `ai`: the schema is there.
  if (isObject(schema) && "jsonSchema" in schema && "validate" in schema) {
    const json = schema.jsonSchema;
    if (isObject(json) && typeof (json as { then?: unknown }).then !== "function") return asJson(json, `tools.${name}.inputSchema`) as JsonSchema;
  }
  // A Standard Schema that converts itself (zod 4, …): what the SDK's `asSchema` does.
  const standard = isObject(schema) ? (schema["~standard"] as { jsonSchema?: { input?: (o: { target: string }) => unknown } } | undefined) : undefined;
  if (typeof standard?.jsonSchema?.input === "function") {
    return closeObjects(asJson(standard.jsonSchema.input({ target: "draft-07" }), `tools.${name}.inputSchema`) as JsonSchema);
  }
  throw new InvalidArgumentError(
    `tools.${name}.inputSchema cannot be read as JSON Schema without its library (a zod 3 schema?): wrap it in \`zodSchema()\` or \`jsonSchema()\` of \`ai\``,
  );
}

/**
 * The AI SDK tools (`tools` of `generateText`/`streamText`: `inputSchema` as `jsonSchema(…)`,
 * `zodSchema(…)` or a zod 4 schema) as the function definitions a provider is sent, so that the
 * budget can count them. Provider-defined tools (web search…) have no definition to count here.
 */
export function toolDefinitions(tools: ToolSet): FunctionToolDefinition[] {
  if (!isObject(tools)) throw new InvalidArgumentError("toolDefinitions expects the AI SDK's tools: an object of tools by name");
  const out: FunctionToolDefinition[] = [];
  for (const [name, tool] of Object.entries(tools as Record<string, unknown>)) {
    if (!isObject(tool)) throw new InvalidArgumentError(`tools.${name} is not a tool`);
    if (tool.type === "provider-defined" || tool.type === "provider") continue;
    const schema = inputJsonSchema(name, tool.inputSchema ?? tool.parameters);
    const description = typeof tool.description === "string" ? { description: tool.description } : {};
    out.push({ type: "function", function: { name, ...description, parameters: schema } });
  }
  return out;
}

// ---- UIMessages (what `useChat` apps store) -------------------------------------------------
//
// `fromUIMessages` converts as `ai`'s `convertToModelMessages` does (text, reasoning, file and
// tool parts; `step-start` splits an assistant message into steps) and keeps what a ModelMessage
// cannot say in two keys the codec stores verbatim: every part it made carries `uiPart` (the index
// of its UI part), and the first ModelMessage of each UIMessage carries `uiMessage` (`id`,
// `metadata` and the parts without their text, input, output or URL, which the ModelMessages
// hold); later ones carry `uiMessage: { id }`. `toUIMessages` puts the parts back from what the
// (possibly compacted) messages still hold, so an untouched list gives the UIMessages back exactly.


type Json = Record<string, unknown>;
/** The fields of a UI part the ModelMessages hold; the stored skeleton lacks them. */
type Held = "text" | "input" | "output" | "errorText" | "url";
interface Skeleton { part: Json; held: Held[] }
interface UiRecord { id: string; role?: string; metadata?: unknown; parts?: Skeleton[] }

const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);
const isToolPart = (part: Json) => part.type === "dynamic-tool" || String(part.type).startsWith("tool-");
const toolName = (part: Json) => (part.type === "dynamic-tool" ? String(part.toolName) : String(part.type).slice(5));
const options = (metadata: unknown) => (metadata != null ? { providerOptions: metadata } : {});

function invalid(index: number, field: string, why: string): InvalidMessageError {
  const path = `uiMessages[${index}]${field ? `.${field}` : ""}`;
  return new InvalidMessageError(`${path}: ${why}`, { index, path });
}

function checkUIMessage(message: unknown, index: number): asserts message is UIMessage {
  if (!isObject(message)) throw invalid(index, "", "a UIMessage must be an object");
  if (typeof message.id !== "string") throw invalid(index, "id", "a UIMessage needs a string id");
  if (!["system", "user", "assistant"].includes(message.role as string))
    throw invalid(index, "role", `unknown role ${JSON.stringify(message.role)}: expected system, user or assistant`);
  if (!Array.isArray(message.parts)) throw invalid(index, "parts", "a UIMessage needs a parts array");
  message.parts.forEach((part: unknown, k) => {
    if (!isObject(part) || typeof part.type !== "string") throw invalid(index, `parts[${k}].type`, "a part needs a string type");
    const needs = part.type === "text" || part.type === "reasoning" ? "text" : part.type === "file" ? "url" : isToolPart(part) ? "toolCallId" : undefined;
    if (needs && typeof part[needs] !== "string" && !(needs === "url" && part.providerReference != null))
      throw invalid(index, `parts[${k}].${needs}`, `a ${part.type} part needs a string ${needs}`);
  });
}

/** The ModelMessages of one step of an assistant UIMessage (`convertToModelMessages`' rules). */
function stepMessages(block: Array<[Json, number]>): Json[] {
  const content: Json[] = [];
  const results: Json[] = [];
  for (const [part, k] of block) {
    if (part.type === "text") content.push({ type: "text", text: part.text, ...options(part.providerMetadata), uiPart: k });
    else if (part.type === "reasoning") content.push({ type: "reasoning", text: part.text, providerOptions: part.providerMetadata, uiPart: k });
    else if (part.type === "file") content.push({ ...filePart(part), uiPart: k });
    else if (part.type === "reasoning-file")
      content.push({ type: "reasoning-file", data: { type: "url", url: part.url }, mediaType: part.mediaType, providerOptions: part.providerMetadata, uiPart: k });
    else if (part.type === "custom") content.push({ type: "custom", kind: part.kind, ...options(part.providerMetadata), uiPart: k });
    else if (isToolPart(part) && part.state !== "input-streaming") {
      const name = toolName(part);
      const error = part.state === "output-error";
      const callOptions = part.callProviderMetadata ?? (error ? part.resultProviderMetadata : undefined);
      const input = error ? part.input ?? part.rawInput : part.input;
      content.push({ type: "tool-call", toolCallId: part.toolCallId, toolName: name, input, providerExecuted: part.providerExecuted, ...options(callOptions), uiPart: k });
      const approval = isObject(part.approval) ? part.approval : undefined;
      if (approval) {
        content.push({
          type: "tool-approval-request", approvalId: approval.id, toolCallId: part.toolCallId, isAutomatic: approval.isAutomatic,
          ...(approval.requestReason != null ? { reason: approval.requestReason } : {}),
          ...("inputSchemaInput" in approval ? { inputSchemaInput: approval.inputSchemaInput } : {}),
          ...(approval.signature != null ? { signature: approval.signature } : {}), uiPart: k,
        });
      }
      const done = part.state === "output-available" || error;
      const result = (mode: "none" | "text" | "json") => ({
        type: "tool-result", toolCallId: part.toolCallId, toolName: name,
        output: mode === "none" ? (typeof part.output === "string" ? { type: "text", value: part.output } : { type: "json", value: part.output })
          : { type: mode === "text" ? "error-text" : "error-json", value: part.errorText },
      });
      if (part.providerExecuted === true) {
        if (done && part.state !== "approval-responded")
          content.push({ ...result(error ? "json" : "none"), ...options(part.resultProviderMetadata ?? part.callProviderMetadata), uiPart: k });
      }
      if (approval?.approved != null)
        results.push({ type: "tool-approval-response", approvalId: approval.id, approved: approval.approved, reason: approval.reason, providerExecuted: part.providerExecuted, uiPart: k });
      if (part.state === "approval-responded" && approval?.approved === false)
        results.push({ type: "tool-result", toolCallId: part.toolCallId, toolName: name, output: { type: "execution-denied", reason: approval.reason }, ...options(part.callProviderMetadata), uiPart: k });
      if (part.providerExecuted === true) continue;
      if (part.state === "output-denied")
        results.push({ type: "tool-result", toolCallId: part.toolCallId, toolName: name, output: { type: "error-text", value: approval?.reason ?? "Tool call execution denied." }, ...options(part.callProviderMetadata), uiPart: k });
      else if (done) results.push({ ...result(error ? "text" : "none"), ...options(part.callProviderMetadata), uiPart: k });
    }
  }
  const out: Json[] = [];
  if (content.length > 0) out.push({ role: "assistant", content });
  if (results.length > 0) out.push({ role: "tool", content: results });
  return out;
}

function filePart(part: Json): Json {
  const data = part.providerReference != null ? { type: "reference", reference: part.providerReference } : { type: "url", url: part.url };
  return { type: "file", mediaType: part.mediaType, filename: part.filename, data, ...options(part.providerMetadata) };
}

/** The part without what the ModelMessages made from it hold (a system message's several texts stay). */
function skeleton(part: Json, role: string, keepText: boolean): Skeleton {
  const kind = String(part.type);
  const file = kind === "file" || (kind === "reasoning-file" && role === "assistant");
  const converted: readonly Held[] =
    kind === "text" ? (keepText ? [] : ["text"])
      : kind === "reasoning" && role === "assistant" ? ["text"]
        : file && role !== "system" && part.providerReference == null ? ["url"]
          : isToolPart(part) && role === "assistant" && part.state !== "input-streaming" ? ["input", "output", "errorText"]
            : [];
  const rest: Json = { ...part };
  const held = converted.filter((key) => key in part && part[key] !== undefined);
  for (const key of held) delete rest[key];
  return { part: rest, held };
}

/**
 * The AI SDK ModelMessages for `uiMessages`, converted as `convertToModelMessages` converts them,
 * with what only a UIMessage says kept for {@link toUIMessages}. Throws an `InvalidMessageError`
 * naming the message index and field of a malformed UIMessage.
 */
export function fromUIMessages(uiMessages: readonly UIMessage[]): ModelMessage[] {
  if (!Array.isArray(uiMessages)) throw new InvalidMessageError("fromUIMessages expects an array of UIMessages");
  uiMessages = asJson(uiMessages, "uiMessages") as UIMessage[];
  const out: Json[] = [];
  uiMessages.forEach((message: unknown, index) => checkUIMessage(message, index));
  const lastUser = uiMessages.reduce((last, message, index) => (message.role === "user" ? index : last), -1);
  uiMessages.forEach((message, index) => {
    // As `convertToModelMessages` does, an approval request the user has since passed over is not
    // sent; the stored UI part keeps it whole.
    const passedOver = (part: Json) => isToolPart(part) && part.state === "approval-requested" && index < lastUser;
    const all = message.parts as unknown as Json[];
    const parts = all.map((part) => (passedOver(part) ? { type: "ui-only" } : part));
    const texts = parts.filter((part) => part.type === "text");
    const system = message.role === "system";
    const record: UiRecord = {
      id: message.id, ...(message.metadata !== undefined ? { metadata: message.metadata } : {}),
      parts: all.map((part) => (passedOver(part) ? { part, held: [] } : skeleton(part, message.role, system && texts.length !== 1))),
    };
    let made: Json[];
    if (system) {
      const metadata = texts.reduce<Json>((all, part) => ({ ...all, ...(isObject(part.providerMetadata) ? part.providerMetadata : {}) }), {});
      made = [{ role: "system", content: texts.map((part) => part.text).join(""), ...(Object.keys(metadata).length > 0 ? { providerOptions: metadata } : {}) }];
    } else if (message.role === "user") {
      const content = parts.flatMap((part, k) =>
        part.type === "text" ? [{ type: "text", text: part.text, ...options(part.providerMetadata), uiPart: k }]
          : part.type === "file" ? [{ ...filePart(part), uiPart: k }] : []);
      made = [{ role: "user", content }];
    } else {
      made = [];
      let block: Array<[Json, number]> = [];
      parts.forEach((part, k) => {
        if (part.type === "step-start") {
          made.push(...stepMessages(block));
          block = [];
        } else block.push([part, k]);
      });
      made.push(...stepMessages(block));
      // A UIMessage with nothing for the model still has a message to carry it.
      if (made.length === 0) made.push({ role: "assistant", content: [] });
    }
    made.forEach((model, i) => out.push({ ...model, uiMessage: i === 0 ? { role: message.role, ...record } : { id: message.id } }));
  });
  // JSON, as the history stores it (no `undefined` members).
  return JSON.parse(JSON.stringify(out)) as ModelMessage[];
}

/** What fromUIMessages stored (anything else under the key is read as a plain ModelMessage). */
function isRecord(value: unknown): value is UiRecord {
  return isObject(value) && typeof value.id === "string" && (value.parts === undefined ||
    (Array.isArray(value.parts) && value.parts.every((entry) => isObject(entry) && isObject(entry.part) && Array.isArray(entry.held))));
}

/** A held field's value in the ModelMessage part `model` made from the UI part. */
function heldValue(key: Held, model: Json[]): { found: boolean; value?: unknown } {
  for (const part of model) {
    const output = isObject(part.output) ? part.output : undefined;
    if (key === "text" && (part.type === "text" || part.type === "reasoning")) return { found: true, value: part.text };
    if (key === "input" && part.type === "tool-call") return { found: true, value: part.input };
    if (key === "url" && (part.type === "file" || part.type === "reasoning-file") && isObject(part.data)) return { found: true, value: String(part.data.url) };
    if (part.type === "tool-result" && output) {
      const error = output.type === "error-text" || output.type === "error-json";
      if ((key === "errorText") === error && (key === "output" || key === "errorText")) return { found: true, value: output.value };
    }
  }
  return { found: false };
}

/** `value` as plain JSON, or an InvalidArgumentError saying why it cannot be (a BigInt, a cycle, a throwing getter). */
function asJson(value: unknown, what: string): unknown {
  try {
    return JSON.parse(JSON.stringify(value));
  } catch (error) {
    throw new InvalidArgumentError(`${what} cannot be read as JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
}

function contentParts(message: Json): Json[] {
  return Array.isArray(message.content) ? (message.content as Json[]) : [];
}

/** A UIMessage back from the ModelMessages it was converted into (those still held). */
function rebuild(record: UiRecord, group: Json[]): Json {
  const made = new Map<number, Json[]>();
  for (const part of group.flatMap(contentParts)) {
    if (typeof part.uiPart === "number") made.set(part.uiPart, [...(made.get(part.uiPart) ?? []), part]);
  }
  const system = typeof group[0].content === "string" ? group[0].content : undefined;
  const parts: Json[] = [];
  for (const [k, { part, held }] of (record.parts ?? []).entries()) {
    const restored: Json = { ...part };
    let whole = true;
    for (const key of held) {
      const value = system !== undefined && key === "text" ? { found: true, value: system } : heldValue(key, made.get(k) ?? []);
      if (value.found) restored[key] = value.value;
      else whole = false;
    }
    // A part compaction dropped is left out.
    if (whole) parts.push(restored);
  }
  return { id: record.id, role: record.role, ...(record.metadata !== undefined ? { metadata: record.metadata } : {}), parts };
}

/** The UI part for a ModelMessage part that never was one. */
function uiPart(part: Json): Json | undefined {
  if (part.type === "text" || part.type === "reasoning") return { type: part.type, text: part.text, ...(part.providerOptions != null ? { providerMetadata: part.providerOptions } : {}) };
  if (part.type === "file" && isObject(part.data) && part.data.url != null) return { type: "file", mediaType: part.mediaType, url: String(part.data.url), ...(part.filename != null ? { filename: part.filename } : {}) };
  if (part.type === "image" && typeof part.image === "string") {
    const url = part.image.includes(":") ? part.image : `data:${part.mediaType ?? "image/png"};base64,${part.image}`;
    return { type: "file", mediaType: part.mediaType ?? "image/png", url };
  }
  if (part.type === "tool-call") return { type: `tool-${part.toolName}`, toolCallId: part.toolCallId, state: "input-available", input: part.input };
  return undefined;
}

/**
 * UIMessages for AI SDK ModelMessages (or a history's, read as `"ai-sdk"`): the ones
 * {@link fromUIMessages} made come back as they were (less what compaction dropped); others become
 * UIMessages of their own, an assistant's tool calls and the results that follow in one assistant
 * message of `tool-<name>` parts, ids `msg-<index>` from the first ModelMessage's index.
 */
export function toUIMessages(messages: readonly ModelMessage[] | ConversationHistory): UIMessage[] {
  const history = messages as Partial<ConversationHistory> | null;
  if (!Array.isArray(messages) && typeof history?.messages !== "function")
    throw new InvalidArgumentError("toUIMessages expects an array of AI SDK ModelMessages or a ConversationHistory");
  const list = (Array.isArray(messages) ? asJson(messages, "messages") : (messages as ConversationHistory).messages("ai-sdk")) as unknown[];
  list.forEach((message, j) => {
    if (!isObject(message)) return;
    const content = message.content;
    if (content !== undefined && typeof content !== "string" && !Array.isArray(content)) {
      throw new InvalidMessageError(`messages[${j}].content: must be a string or an array of parts`, { index: j, path: `messages[${j}].content` });
    }
    (Array.isArray(content) ? content : []).forEach((part, k) => {
      if (!isObject(part)) throw new InvalidMessageError(`messages[${j}].content[${k}]: a part must be an object`, { index: j, path: `messages[${j}].content[${k}]` });
    });
  });
  const out: Json[] = [];
  let open: Json | undefined; // the assistant UIMessage later tool results and steps join
  for (let j = 0; j < list.length; j++) {
    const message = list[j];
    if (!isObject(message)) throw new InvalidMessageError(`messages[${j}]: a ModelMessage must be an object`, { index: j, path: `messages[${j}]` });
    const record = isRecord(message.uiMessage) ? message.uiMessage : undefined;
    if (record?.parts) {
      const group = [message];
      const sameMessage = (next: unknown) => isObject(next) && isObject(next.uiMessage) && next.uiMessage.id === record.id && !next.uiMessage.parts;
      while (j + 1 < list.length && sameMessage(list[j + 1])) group.push(list[++j] as Json);
      out.push(rebuild(record, group));
      open = undefined;
      continue;
    }
    const parts = typeof message.content === "string" ? [{ type: "text", text: message.content }] : contentParts(message).map(uiPart).filter((part) => part !== undefined);
    if (message.role === "tool") {
      const tools = (open?.parts as Json[] | undefined) ?? [];
      for (const result of contentParts(message)) {
        const call = tools.find((part) => part.toolCallId === result.toolCallId);
        const output = isObject(result.output) ? result.output : undefined;
        if (!call || !output) continue;
        if (output.type === "error-text" || output.type === "error-json") Object.assign(call, { state: "output-error", errorText: typeof output.value === "string" ? output.value : JSON.stringify(output.value) });
        else if (output.type === "execution-denied") Object.assign(call, { state: "output-denied" });
        else Object.assign(call, { state: "output-available", output: output.value });
      }
    } else if (message.role === "assistant") {
      if (!open) out.push((open = { id: `msg-${j}`, role: "assistant", parts: [] }));
      (open.parts as Json[]).push({ type: "step-start" }, ...parts);
    } else {
      out.push({ id: `msg-${j}`, role: message.role, parts });
      open = undefined;
    }
  }
  return out as unknown as UIMessage[];
}
