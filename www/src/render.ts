/** DOM for the page's panels, from the package's results. No state here: each call redraws one panel. */
import type { Action, BudgetReport, LayoutEntry, Message, Profile, ReceiptEntry, RecallResult, Receipt } from "context-compactor/lite";
import { preview } from "./conversation";
import { pricingFor, sessionCost, type StepCost } from "./cost";
import type { Built, Compaction, StoredMessage } from "./replay";

type Child = Node | string | null | undefined | false;

/** `h("div.a.b", { title: "x" }, child, …)`: an element with classes, attributes and children. */
export function h(tag: string, attrs: Record<string, string | number | boolean | undefined> = {}, ...children: Child[]): HTMLElement {
  const [name, ...classes] = tag.split(".");
  const element = document.createElement(name);
  if (classes.length) element.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    element.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) element.append(child);
  return element;
}

export const n = (value: number) => value.toLocaleString("en-US");
export const kb = (bytes: number) => `${(bytes / 1000).toLocaleString("en-US", { maximumFractionDigits: 1 })} KB`;

/** Every action, in the order a message goes from whole to gone. */
export const ACTIONS: Action[] = ["kept", "compressed", "digested", "thinned", "summarised", "dropped"];

const ACTION_HELP: Record<Action, string> = {
  kept: "sent as it is",
  compressed: "tool output shortened",
  digested: "an earlier file read replaced by a digest",
  thinned: "an older turn thinned out",
  summarised: "replaced by the summary",
  dropped: "left out",
};

export function badge(action: Action, reason?: string): HTMLElement {
  return h(`span.badge.fate-${action}`, { title: ACTION_HELP[action] }, reason ? `${action} (${reason})` : action);
}

export function legend(): HTMLElement {
  return h("ul.legend", { "aria-label": "what happens to a message" }, ...ACTIONS.map((a) => h("li", {}, badge(a), ` ${ACTION_HELP[a]}`)));
}

/** The full history, each message with its fate in the last build. */
export function historyList(messages: StoredMessage[], entries: ReceiptEntry[]): HTMLElement {
  const fate = new Map(entries.map((e) => [e.id, e]));
  const list = h("ol.messages", { "aria-label": "full history" });
  for (const { id, message, step } of messages) {
    const entry = fate.get(id);
    const action = entry?.action ?? "kept";
    list.append(
      h(`li.message.fate-${action}`, { "data-id": id, "data-action": action },
        h("div.meta", {},
          h("span.id", {}, id),
          h("span.role", {}, message.role),
          h("span.step", { title: "step (memory turn)" }, `turn ${step}`),
          entry ? badge(entry.action, entry.reason) : h("span.badge", {}, "not built yet"),
          entry ? h("span.tokens", { title: "tokens before → after" }, entry.tokensAfter === entry.tokensBefore ? `${n(entry.tokensBefore)} tok` : `${n(entry.tokensBefore)} → ${n(entry.tokensAfter)} tok`) : null),
        h("div.preview", {}, preview(message) || "(empty)")),
    );
  }
  return list;
}

/** Each message sent with its layout entry: layout[i] describes messages[i]; Anthropic's top-level
 * system prompt, hoisted out of the messages, comes first with its own entry (systemLayout). */
function aligned(result: Built): Array<[Readonly<LayoutEntry>, Message | undefined]> {
  const { layout, messages } = result;
  if (Array.isArray(messages)) return layout.map((entry, i) => [entry, messages[i] as Message | undefined]);
  const rows: Array<[Readonly<LayoutEntry>, Message | undefined]> = layout.map((entry, i) => [entry, messages.messages[i] as Message | undefined]);
  if (result.systemLayout) {
    const systemText = typeof messages.system === "string" ? messages.system : messages.system?.map((b) => b.text).join("\n");
    rows.unshift([result.systemLayout, { role: "system", content: systemText ?? "" } as unknown as Message]);
  }
  return rows;
}

/** The context that would be sent, entry by entry, and the request JSON. */
export function contextList(result: Built, byId: Map<string, StoredMessage>): HTMLElement {
  const list = h("ol.messages", { "aria-label": "context to send" });
  aligned(result).forEach(([entry, emitted]) => {
    const message = emitted ?? byId.get(entry.sources[0] ?? "")?.message;
    const sources = entry.sources.length === 0 ? "" : entry.sources.length === 1 ? entry.sources[0] : `${entry.sources[0]}–${entry.sources.at(-1)} (${entry.sources.length})`;
    list.append(
      h(`li.message.section-${entry.section}.fate-${entry.action}`, { "data-section": entry.section },
        h("div.meta", {},
          h("span.section", {}, entry.section),
          message ? h("span.role", {}, message.role) : null,
          badge(entry.action),
          sources ? h("span.id", { title: "stored messages it comes from" }, `from ${sources}`) : h("span.id", {}, "made by the build")),
        h("div.preview", {}, preview(message, 240) || "(empty)")),
    );
  });
  const json = JSON.stringify(result.messages, null, 2);
  return h("div", {},
    list,
    h("details.request", {}, h("summary", {}, `The request's messages as JSON (${n(json.length)} characters)`), h("pre", {}, json)));
}

export interface BarInput {
  result: Built;
  profile: Profile;
  encoding: string;
  estimate: boolean;
}

/** Tokens by part against the model's window, with the budget and the whole history marked. */
export function tokenBar({ result, profile, encoding, estimate }: BarInput): HTMLElement {
  const { tokens, receipt } = result;
  const window = profile.contextWindow;
  const budget = receipt.budget?.maxTokens;
  const scale = Math.max(window, receipt.tokensBefore, tokens.total);
  const pct = (value: number) => `${Math.min(100, (100 * value) / scale).toFixed(3)}%`;
  // The session's state sections (todos, skill, artifacts) show only when a build has them.
  const parts: Array<[keyof typeof tokens, string]> = [["system", "system"], ["state", "state"], ["summary", "summary"], ["recent", "recent"]]
    .filter(([key]) => key !== "state" || tokens.state > 0) as Array<[keyof typeof tokens, string]>;
  const priming = tokens.total - tokens.system - tokens.state - tokens.summary - tokens.recent;
  const bar = h("div.bar", { role: "img", "aria-label": `${n(tokens.total)} of ${n(window)} tokens: system ${n(tokens.system)}, summary ${n(tokens.summary)}, recent ${n(tokens.recent)}` },
    h("div.before", { style: `width:${pct(receipt.tokensBefore)}`, title: `the whole history: ${n(receipt.tokensBefore)} tokens` }),
    ...parts.map(([key, label]) => h(`div.part.part-${label}`, { style: `width:${pct(tokens[key])}`, title: `${label}: ${n(tokens[key])} tokens`, "data-part": label, "data-tokens": tokens[key] })),
    budget !== undefined ? h("div.marker", { style: `left:${pct(budget)}`, title: `budget: ${n(budget)} tokens` }) : null);
  const exactness = estimate || encoding === "estimate" ? h("strong.estimate", {}, "estimate") : h("span.exact", {}, `exact (${encoding})`);
  return h("div", {},
    bar,
    h("p.bar-legend", {},
      ...parts.map(([key, label]) => h("span", {}, h(`i.swatch.part-${label}`, { "aria-hidden": "true" }), ` ${label} ${n(tokens[key])}`)),
      priming > 0 ? h("span", {}, `reply priming ${n(priming)}`) : null,
      h("span", {}, h("i.swatch.before", { "aria-hidden": "true" }), ` whole history ${n(receipt.tokensBefore)}`),
      budget !== undefined ? h("span", {}, h("i.swatch.marker", { "aria-hidden": "true" }), ` budget ${n(budget)}`) : null),
    h("p.bar-total", { "data-total": tokens.total },
      h("strong", {}, `${n(tokens.total)} tokens`), ` of a ${n(window)}-token window (${profile.name}), `, exactness,
      `; ${n(receipt.messagesAfter)} of ${n(receipt.messagesBefore)} messages; `,
      receipt.withinBudget ? "within budget" : h("strong.over", {}, "over budget")),
    receipt.calibration
      ? h("p.hint", {}, `Calibrated on ${n(receipt.calibration.observations)} usage report${receipt.calibration.observations === 1 ? "" : "s"} from ${receipt.calibration.model}: ` +
        `the provider bills ×${receipt.calibration.factor.toFixed(3)} what is counted, so this context likely bills ${n(receipt.calibration.tokens)} tokens (at most ${n(receipt.calibration.upper)}), and the budget is in counted tokens.`)
      : null);
}

/** A receipt: its runs as a table, the parts, the summary, repairs and notes. */
export function receiptView(receipt: Receipt): HTMLElement {
  const rows = receipt.runs.map((run) =>
    h("tr", {},
      h("td", {}, run.from === run.to ? run.from : `${run.from}–${run.to}`),
      h("td.num", {}, n(run.count)),
      h("td", {}, badge(run.action, run.reason)),
      h("td.num", {}, n(run.tokensBefore)),
      h("td.num", {}, n(run.tokensAfter))));
  const part = receipt.byPart;
  return h("div.receipt", {},
    h("table", {},
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, "messages"), h("th.num", { scope: "col" }, "count"), h("th", { scope: "col" }, "action"), h("th.num", { scope: "col" }, "tokens before"), h("th.num", { scope: "col" }, "after"))),
      h("tbody", {}, ...rows)),
    h("p", {}, `tokens ${n(receipt.tokensBefore)} → ${n(receipt.tokensAfter)} (system ${n(part.system)}, summary ${n(part.summary)}, recent ${n(part.recent)})`,
      receipt.budget ? `, budget ${n(receipt.budget.maxTokens)}` : "", receipt.withinBudget ? "" : " — over budget"),
    receipt.summary ? h("p", {}, `summary: ${n(receipt.summary.tokens)} tokens, covers the messages up to ${receipt.summary.summarisedUntil}${receipt.summary.fresh ? " (made now)" : ""}`) : null,
    receipt.memory && (receipt.memory.turns.length || receipt.memory.omitted.length)
      ? h("p", {}, `turn summaries in the context: ${receipt.memory.turns.length ? receipt.memory.turns.join(", ") : "none"} (${n(receipt.memory.tokens)} tokens)` +
        (receipt.memory.omitted.length ? `; left out for room: ${receipt.memory.omitted.join(", ")}` : ""))
      : null,
    receipt.repairs.length ? h("p", {}, `repairs: ${receipt.repairs.map((r) => `${r.kind} ${r.id}${r.callId ? ` (${r.callId})` : ""}`).join("; ")}`) : null,
    ...receipt.notes.map((note) => h("p.note", {}, note)));
}

export function compactionItem(compaction: Compaction, open: boolean): HTMLElement {
  const { summary, receipt, step } = compaction;
  return h("details.compaction", { open, "data-step": step },
    h("summary", {},
      `After step ${step}: ${n(receipt.tokensBefore)} → ${n(receipt.tokensAfter)} tokens; summary ${n(summary.tokens)} tokens (${summary.source}) for ${n(summary.messageCount)} messages up to ${summary.summarisedUntil}, ` +
      `${Math.round(summary.compressionRate * 100)}% smaller`),
    receiptView(receipt));
}

export function recallView(turn: number, result: RecallResult, toolMessage: Message): HTMLElement {
  const body = "turns" in result
    ? result.turns.map((t) =>
      h("div.recalled", {},
        h("h4", {}, `Turn ${t.turnNumber}`),
        h("p", {}, h("strong", {}, "Summary: "), t.summary),
        h("p.workspace", {}, h("strong", {}, "Workspace snapshot: "), t.fullContext),
        h("ol.messages", {}, ...t.messages.map((m) => h("li.message", {}, h("div.meta", {}, h("span.id", {}, m.id), h("span.role", {}, m.role)), h("div.preview", {}, m.text.length > 600 ? `${m.text.slice(0, 599)}…` : m.text))))))
    : result.results.map((hit) => h("p", {}, `${hit.kind} ${hit.id}: ${hit.text}`));
  return h("div", { "data-turn": turn },
    ...body,
    result.truncated ? h("p.note", {}, "Cut to the recall budget.") : null,
    h("details", {}, h("summary", {}, "The tool result the model would get (answerRecall)"), h("pre", {}, JSON.stringify(toolMessage, null, 2))));
}

/** The budget as the build resolved it (`receipt.budget`): the page does no arithmetic of its own on the options. */
export function budgetText(budget: BudgetReport): string {
  const split = [
    `system ${n(budget.systemTokens)}`,
    budget.stateTokens > 0 ? `state ${n(budget.stateTokens)}` : "",
    budget.pinnedTokens > 0 ? `pinned requests ${n(budget.pinnedTokens)}` : "",
    budget.requestTokens > 0 ? `tools and request ${n(budget.requestTokens)}` : "",
    `summary section up to ${n(budget.summaryBudget)}`,
    `recent messages ${n(budget.recentBudget)}`,
  ].filter(Boolean);
  return `As the build resolved it: at most ${n(budget.maxTokens)} tokens; a compaction event when the next context would pass ${n(budget.triggerTokens)} (the trigger), ` +
    `down to ${n(budget.lowWaterTokens)} (the low-water mark), then later calls append until the trigger. The budget's split in the last build: ${split.join(", ")}.`;
}

const SVG = "http://www.w3.org/2000/svg";

function svg(tag: string, attrs: Record<string, string | number | undefined>, ...children: Array<Node | string>): SVGElement {
  const element = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) if (value !== undefined) element.setAttribute(key, String(value));
  element.append(...children);
  return element;
}

const CHART_WIDTH = 1000;
const CHART_HEIGHT = 200;

/**
 * One bar per model call: its input tokens, the part read from the cache, written to it and sent
 * uncached stacked; compaction events banded; the whole history each call would send without
 * compaction as a dashed line; the trigger and low-water mark of the last call as rules.
 * Plain SVG, about 2 KB of script gzipped: the smallest charting libraries (uPlot, some 50 KB
 * minified) would weigh more than the whole feature.
 */
export function costChart(steps: readonly StepCost[]): HTMLElement {
  const anthropic = pricingFor("anthropic");
  const last = steps.at(-1);
  const top = Math.max(1, ...steps.map((s) => Math.max(s.input, s.uncompactedInput)), last?.triggerTokens ?? 0) * 1.05;
  const y = (tokens: number) => CHART_HEIGHT * (1 - tokens / top);
  const slot = CHART_WIDTH / Math.max(steps.length, 1);
  const width = Math.max(slot * 0.8, Math.min(slot, 1));
  const bars = steps.map((s, i) => {
    const x = i * slot + (slot - width) / 2;
    const { cachedTokens, writtenTokens, uncachedTokens } = s.cost;
    const segments: Array<[string, number]> = [["cached", cachedTokens], ["written", writtenTokens], ["uncached", uncachedTokens]];
    let base = 0;
    const rects = segments.filter(([, tokens]) => tokens > 0).map(([kind, tokens]) => {
      const rect = svg("rect", { class: kind, x, width, y: y(base + tokens), height: y(base) - y(base + tokens) });
      base += tokens;
      return rect;
    });
    const title = `step ${s.step}: ${n(s.input)} tokens, ${n(cachedTokens)} read from the cache` +
      (writtenTokens ? `, ${n(writtenTokens)} written to it` : "") + (uncachedTokens ? `, ${n(uncachedTokens)} uncached` : "") +
      `; cost ${n(Math.round(s.cost.units))} (without compaction: ${n(s.uncompactedInput)} tokens, cost ${n(Math.round(s.uncompactedCost.units))})` +
      (s.event ? `; a compaction event (${s.event})` : "");
    return svg("g", {
      class: s.event ? "step event" : "step",
      "data-step": s.step, "data-input": s.input, "data-cached": cachedTokens, "data-written": writtenTokens,
      "data-uncached": uncachedTokens, "data-units": s.cost.units, "data-uncompacted-units": s.uncompactedCost.units, "data-event": s.event,
    },
    svg("title", {}, title),
    ...(s.event ? [svg("rect", { class: "event-band", x: i * slot, width: slot, y: 0, height: CHART_HEIGHT })] : []),
    ...rects);
  });
  const line = steps.map((s, i) => `${(i + 0.5) * slot},${y(s.uncompactedInput)}`).join(" ");
  const rule = (kind: string, tokens: number | undefined) => tokens === undefined ? [] :
    [svg("line", { class: kind, x1: 0, x2: CHART_WIDTH, y1: y(tokens), y2: y(tokens), "vector-effect": "non-scaling-stroke" })];
  const label = (kind: string, tokens: number | undefined, text: string) => tokens === undefined ? null :
    h(`span.rule-label.${kind}`, { style: `top:${((100 * y(tokens)) / CHART_HEIGHT).toFixed(2)}%` }, `${text} ${n(tokens)}`);
  const chart = svg("svg", { viewBox: `0 0 ${CHART_WIDTH} ${CHART_HEIGHT}`, preserveAspectRatio: "none", "aria-hidden": "true" },
    ...bars,
    ...rule("trigger", last?.triggerTokens),
    ...rule("low-water", last?.lowWaterTokens),
    ...(steps.length > 1 ? [svg("polyline", { class: "uncompacted", points: line, "vector-effect": "non-scaling-stroke" })] : []));
  const swatch = (kind: string, text: string) => h("span", {}, h(`i.swatch.cost-${kind}`, { "aria-hidden": "true" }), ` ${text}`);
  const events = steps.filter((s) => s.event).length;
  return h("div", {},
    h("figure.cost-chart", {
      role: "img", "data-steps": steps.length,
      "aria-label": `input tokens of ${steps.length} model call${steps.length === 1 ? "" : "s"}, ${events} of them compaction events; the highest ${n(Math.max(0, ...steps.map((s) => s.input)))} tokens`,
    },
    chart,
    h("span.rule-label.top", { style: "top:0" }, `${n(Math.round(top))} tokens`),
    label("trigger", last?.triggerTokens, "trigger"),
    label("low-water", last?.lowWaterTokens, "low-water mark")),
    h("p.bar-legend", {},
      swatch("cached", `read from the cache (${anthropic.read}×)`),
      swatch("written", `written to the cache (${anthropic.write5m}×, Anthropic)`),
      swatch("uncached", "uncached (1×)"),
      swatch("uncompacted", `the whole history, sent every call without compaction${steps.some((s) => s.uncompactedScaled) ? " (in Claude's billed tokens by the context's own ratio: an estimate)" : ""}`),
      swatch("event", "compaction event")));
}

/** The session's input cost so far, beside the same calls sending the whole history. */
export function costSummary(steps: readonly StepCost[]): HTMLElement {
  const total = sessionCost(steps);
  if (total.calls === 0) return h("p.hint", {}, "No model call yet: step the replay.");
  const share = total.inputTokens ? Math.round((100 * total.cachedTokens) / total.inputTokens) : 0;
  const ratio = total.uncompactedUnits > 0 ? total.units / total.uncompactedUnits : 1;
  return h("p.cost-total", { "data-calls": total.calls, "data-units": total.units, "data-uncompacted-units": total.uncompactedUnits },
    `${n(total.calls)} call${total.calls === 1 ? "" : "s"}: ${n(total.inputTokens)} input tokens, ${share}% read from the cache. `,
    h("strong", {}, `Cost so far ${n(Math.round(total.units))}`),
    ` (in uncached input tokens' worth); without compaction, sending the whole history every call with its growing prefix cached: `,
    h("strong", {}, n(Math.round(total.uncompactedUnits))),
    `, so this session costs `,
    h("strong.ratio", {}, `${ratio.toFixed(2)}×`),
    ` that.`);
}
