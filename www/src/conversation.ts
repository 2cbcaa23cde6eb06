/**
 * A conversation file, loaded by the package's `loadConversation`, cut into the steps the replay
 * appends one at a time.
 */
import {
  ContextCompactorError,
  loadConversation,
  type AnthropicMessage,
  type Format,
  type LoadedConversation,
  type Message,
} from "context-compactor/lite";

export interface Conversation {
  /** The file's name, or "pasted JSON". */
  name: string;
  loaded: LoadedConversation;
  format: Format;
  /** Anthropic's top-level system prompt, appended with the first step. */
  system?: AnthropicSystem;
  /** The messages, cut into steps: what came in before a model call, the call, and its tool results. */
  steps: Message[][];
}

type AnthropicSystem = Extract<LoadedConversation, { format: "anthropic" }>["messages"]["system"];

/** A file that is not a conversation: the loader's message names the line or record and the field. */
export class LoadError extends Error {
  constructor(message: string, readonly cause?: unknown) {
    super(message);
    this.name = "LoadError";
  }
}

/** Loads text or bytes (run: which tau-bench run); throws `LoadError` with the loader's own words. */
export function readConversation(input: string | Uint8Array, name: string, run?: number): Conversation {
  let loaded: LoadedConversation;
  try {
    loaded = loadConversation(input, { name, run });
  } catch (error) {
    if (error instanceof ContextCompactorError) throw new LoadError(`${name}: ${error.message}`, error);
    throw new LoadError(`${name}: ${error instanceof Error ? error.message : String(error)}`, error);
  }
  if (loaded.format === "openai") {
    return { name, loaded, format: "openai", steps: cutSteps(loaded.messages, "openai") };
  }
  const { system, messages } = loaded.messages;
  return { name, loaded, format: "anthropic", system, steps: cutSteps(messages, "anthropic") };
}

/** The number of messages `appendMany` will store (Anthropic's system prompt is one). */
export function messageCount(conversation: Conversation): number {
  return conversation.steps.reduce((n, step) => n + step.length, conversation.system === undefined ? 0 : 1);
}

function hasToolCalls(message: Message, format: Format): boolean {
  if (message.role !== "assistant") return false;
  if (format === "openai") return Array.isArray(message.tool_calls) && message.tool_calls.length > 0;
  const { content } = message as AnthropicMessage;
  return Array.isArray(content) && content.some((block) => block.type === "tool_use");
}

function isToolResult(message: Message, format: Format): boolean {
  if (format === "openai") return message.role === "tool";
  const { role, content } = message as AnthropicMessage;
  return role === "user" && Array.isArray(content) && content.some((block) => block.type === "tool_result");
}

/**
 * One step per model call: the messages that came in since the previous call (system, user),
 * the assistant's message, and the tool results that answer it. Anything after the last call
 * (a final user message) is a step of its own.
 */
function cutSteps(messages: Message[], format: Format): Message[][] {
  const steps: Message[][] = [];
  let step: Message[] = [];
  let answering = false; // inside the tool results of the step's assistant message
  for (const message of messages) {
    if (answering && !isToolResult(message, format)) {
      steps.push(step);
      step = [];
      answering = false;
    }
    step.push(message);
    if (message.role === "assistant") {
      if (hasToolCalls(message, format)) answering = true;
      else {
        steps.push(step);
        step = [];
      }
    }
  }
  if (step.length > 0) steps.push(step);
  return steps;
}

/** A short one-line preview of a message's text, tool calls and results. */
export function preview(message: Message | undefined, max = 160): string {
  if (!message) return "";
  const parts: string[] = [];
  const add = (text: unknown) => {
    if (typeof text === "string" && text.trim()) parts.push(text.trim());
  };
  const record = message as Record<string, unknown>;
  const content = record.content;
  if (typeof content === "string") add(content);
  else if (Array.isArray(content)) {
    for (const block of content as Array<Record<string, unknown>>) {
      if (block.type === "text") add(block.text);
      else if (block.type === "tool_use") parts.push(`→ ${String(block.name)}(${JSON.stringify(block.input ?? {})})`);
      else if (block.type === "tool_result") {
        const inner = block.content;
        parts.push(`← ${typeof inner === "string" ? inner : JSON.stringify(inner ?? "")}`);
      } else if (block.type === "thinking") parts.push(`(thinking) ${String(block.thinking ?? "")}`);
      else if (block.type === "image" || block.type === "image_url") parts.push("[image]");
      else parts.push(`[${String(block.type)}]`);
    }
  }
  const calls = record.tool_calls;
  if (Array.isArray(calls)) {
    for (const call of calls as Array<{ function?: { name?: string; arguments?: string } }>) {
      parts.push(`→ ${call.function?.name ?? "?"}(${call.function?.arguments ?? ""})`);
    }
  }
  const text = parts.join("  ").replace(/\s+/g, " ");
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
