// A local stand-in for the OpenAI Chat Completions and Anthropic Messages APIs, for tests.
// It checks every request against the rules the real APIs enforce, independently of the
// library's own validator, and answers like the real API (or fails on purpose when told to).
import { createServer } from "node:http";

/** Every rule an OpenAI Chat Completions request breaks; empty when valid. */
export function openaiViolations(body) {
  const v = [];
  if (!body || typeof body !== "object") return ["body is not a JSON object"];
  if (typeof body.model !== "string" || !body.model) v.push("model must be a non-empty string");
  if (!Array.isArray(body.messages) || body.messages.length === 0) return [...v, "messages must be a non-empty array"];
  const pending = new Map(); // tool_call_id → index of the assistant message that made it
  body.messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!m || typeof m !== "object") return v.push(`${at} is not an object`);
    const roles = ["system", "developer", "user", "assistant", "tool"];
    if (!roles.includes(m.role)) return v.push(`${at}.role ${JSON.stringify(m.role)} is not one of ${roles.join(", ")}`);
    if (m.role !== "tool" && pending.size > 0) {
      v.push(`${at}: tool calls ${[...pending.keys()].join(", ")} were not answered before a ${m.role} message`);
      pending.clear();
    }
    const textOrParts = (c) => typeof c === "string" || (Array.isArray(c) && c.every((p) => p && typeof p.type === "string"));
    if (m.role === "tool") {
      if (typeof m.tool_call_id !== "string") v.push(`${at}.tool_call_id is missing`);
      else if (!pending.has(m.tool_call_id)) v.push(`${at} answers ${m.tool_call_id}, which the preceding assistant message did not call`);
      else pending.delete(m.tool_call_id);
      if (!textOrParts(m.content)) v.push(`${at}.content must be a string or text parts`);
    } else if (m.role === "assistant") {
      const calls = m.tool_calls ?? [];
      if (!Array.isArray(calls)) v.push(`${at}.tool_calls must be an array`);
      if ((m.content === null || m.content === undefined) && calls.length === 0) v.push(`${at} has neither content nor tool_calls`);
      if (m.content !== null && m.content !== undefined && !textOrParts(m.content)) v.push(`${at}.content is malformed`);
      for (const [j, call] of calls.entries()) {
        if (typeof call?.id !== "string" || call.type !== "function" || typeof call.function?.name !== "string" || typeof call.function?.arguments !== "string") {
          v.push(`${at}.tool_calls[${j}] is malformed`);
        } else pending.set(call.id, i);
      }
    } else if (!textOrParts(m.content)) {
      v.push(`${at}.content must be a string or an array of parts`);
    }
  });
  if (pending.size > 0) v.push(`tool calls ${[...pending.keys()].join(", ")} were never answered`);
  for (const key of ["max_tokens", "max_completion_tokens"]) {
    if (key in body && !(Number.isInteger(body[key]) && body[key] > 0)) v.push(`${key} must be a positive integer`);
  }
  return v;
}

/** Every rule an Anthropic Messages request breaks; empty when valid. */
export function anthropicViolations(body) {
  const v = [];
  if (!body || typeof body !== "object") return ["body is not a JSON object"];
  if (typeof body.model !== "string" || !body.model) v.push("model must be a non-empty string");
  if (!(Number.isInteger(body.max_tokens) && body.max_tokens > 0)) v.push("max_tokens is required and must be a positive integer");
  if ("system" in body) {
    const s = body.system;
    const ok = typeof s === "string" || (Array.isArray(s) && s.every((b) => b?.type === "text" && typeof b.text === "string"));
    if (!ok) v.push("system must be a string or an array of text blocks");
  }
  if (!Array.isArray(body.messages) || body.messages.length === 0) return [...v, "messages must be a non-empty array"];
  let unanswered = [];
  body.messages.forEach((m, i) => {
    const at = `messages[${i}]`;
    if (!m || typeof m !== "object") return v.push(`${at} is not an object`);
    for (const key of Object.keys(m)) if (key !== "role" && key !== "content") v.push(`${at} has the extra field ${JSON.stringify(key)}`);
    if (m.role !== "user" && m.role !== "assistant") return v.push(`${at}.role must be user or assistant, not ${JSON.stringify(m.role)}`);
    if (i === 0 && m.role !== "user") v.push("the first message must be from the user");
    if (i > 0 && body.messages[i - 1]?.role === m.role) v.push(`${at}: two ${m.role} messages in a row`);
    const blocks = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content;
    if (!Array.isArray(blocks) || blocks.length === 0) return v.push(`${at}.content must be a non-empty string or array`);
    if (m.role === "user") {
      const results = blocks.filter((b) => b?.type === "tool_result").map((b) => b.tool_use_id);
      const firstOther = blocks.findIndex((b) => b?.type !== "tool_result");
      if (firstOther !== -1 && blocks.slice(firstOther).some((b) => b?.type === "tool_result")) v.push(`${at}: tool_result blocks must come first`);
      for (const id of unanswered) if (!results.includes(id)) v.push(`${at}: tool_use ${id} is not answered by this message`);
      for (const id of results) if (!unanswered.includes(id)) v.push(`${at}: tool_result for ${id} follows no tool_use in the previous message`);
      unanswered = [];
    } else {
      if (unanswered.length) v.push(`${at}: tool_use ${unanswered.join(", ")} not answered before this assistant message`);
      unanswered = blocks.filter((b) => b?.type === "tool_use").map((b) => b.id);
      if (blocks.some((b) => b?.type === "tool_result")) v.push(`${at}: tool_result in an assistant message`);
    }
    blocks.forEach((b, j) => {
      if (b?.type === "text" && (typeof b.text !== "string" || b.text.length === 0)) v.push(`${at}.content[${j}]: text blocks must be non-empty`);
      if (b?.type === "tool_use" && (typeof b.id !== "string" || typeof b.name !== "string" || !b.input || typeof b.input !== "object" || Array.isArray(b.input))) v.push(`${at}.content[${j}]: malformed tool_use`);
    });
  });
  if (unanswered.length) v.push(`tool_use ${unanswered.join(", ")} never answered`);
  return v;
}

/**
 * Starts the fake on 127.0.0.1. `behaviour` decides each answer:
 * "ok" (default), "http-500", "http-429", "malformed" (200 with a body of the wrong shape),
 * "not-json", "slow" (never answers: holds the request until the client gives up), "empty" (a reply with no text).
 */
export async function startFakeProviders({ reply = "SUMMARY", behaviour = "ok" } = {}) {
  const requests = [];
  const state = { reply, behaviour };
  const server = createServer((req, res) => {
    // Pages on another localhost port call it too (the demo's tests): answer CORS as the real APIs do.
    res.setHeader("access-control-allow-origin", "*");
    if (req.method === "OPTIONS") {
      res.writeHead(204, { "access-control-allow-methods": "POST", "access-control-allow-headers": "authorization, content-type, x-api-key, anthropic-version, anthropic-dangerous-direct-browser-access", "access-control-max-age": "600" });
      res.end();
      return;
    }
    let raw = "";
    req.on("data", (chunk) => (raw += chunk));
    req.on("end", async () => {
      let body;
      try {
        body = JSON.parse(raw);
      } catch {
        body = undefined;
      }
      const api = req.url === "/v1/chat/completions" ? "openai" : req.url === "/v1/messages" ? "anthropic" : undefined;
      const violations = api === "openai" ? openaiViolations(body) : api === "anthropic" ? anthropicViolations(body) : [`unknown endpoint ${req.url}`];
      if (api === "openai" && req.headers.authorization !== "Bearer test-key") violations.push("missing Authorization: Bearer");
      if (api === "anthropic" && req.headers["x-api-key"] !== "test-key") violations.push("missing x-api-key");
      if (api === "anthropic" && !req.headers["anthropic-version"]) violations.push("missing anthropic-version");
      requests.push({ api, body, headers: req.headers, violations });
      const send = (status, payload) => {
        res.writeHead(status, { "content-type": "application/json" });
        res.end(typeof payload === "string" ? payload : JSON.stringify(payload));
      };
      if (violations.length) return send(400, { error: { type: "invalid_request_error", message: violations.join("; ") } });
      switch (state.behaviour) {
        case "http-500": return send(500, { error: { type: "api_error", message: "boom" } });
        case "http-429": return send(429, { error: { type: "rate_limit_error", message: "slow down" } });
        case "not-json": return send(200, "<html>gateway</html>");
        case "malformed": return send(200, { unexpected: true });
        // No answer at all, so a client timeout fires whatever the machine's load.
        case "slow": return res.on("close", () => {});
      }
      const text = state.behaviour === "empty" ? "" : state.reply;
      // A rough input figure (about four characters a token), near enough to pass for this request's.
      const input = Math.max(1, Math.round(JSON.stringify([body.system, body.messages, body.tools]).length / 4));
      if (api === "openai") {
        send(200, { id: "chatcmpl-1", object: "chat.completion", model: body.model, choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: text } }], usage: { prompt_tokens: input, completion_tokens: 1, total_tokens: input + 1 } });
      } else {
        send(200, { id: "msg_1", type: "message", role: "assistant", model: body.model, content: text === "" ? [] : [{ type: "text", text }], stop_reason: "end_turn", usage: { input_tokens: input, output_tokens: 1 } });
      }
    });
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    baseURL: `http://127.0.0.1:${port}`,
    requests,
    state,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}
