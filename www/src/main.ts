/** The demo page: wires the controls to the replay and redraws the panels after each change. */
import { profileNames, resolveProfile, type EncodingName, type Format } from "context-compactor/lite";
import { chatTurn, summarizerFor, type Endpoint } from "./chat";
import { LoadError, messageCount, readConversation, type Conversation } from "./conversation";
import { ensureEncoding, stats } from "./engine";
import { budgetText, compactionItem, contextList, costChart, costSummary, h, historyList, kb, legend, n, recallView, tokenBar } from "./render";
import { profileOf, type Replay, type Settings } from "./replay";
import { PageShelf, StoreShelf, type SessionShelf } from "./sessions";

const $ = <T extends HTMLElement = HTMLElement>(id: string) => {
  const element = document.getElementById(id);
  if (!element) throw new Error(`#${id} is missing from index.html`);
  return element as T;
};

/** Where the conversation came from, so that another tau-bench run can be loaded from it. */
interface Source {
  name: string;
  input: string | Uint8Array;
}

const plural = (count: number, noun: string) => `${n(count)} ${noun}${count === 1 ? "" : "s"}`;

const state: {
  replay?: Replay;
  source?: Source;
  /** Actions queued or running (see `run`). */
  pending: number;
  playing: boolean;
  /** A change of settings is queued: later changes are applied by it. */
  settingsQueued: boolean;
  endpoint?: Endpoint;
  shelf: SessionShelf;
} = { pending: 0, playing: false, settingsQueued: false, shelf: new PageShelf() };
const busy = () => state.pending > 0;

// ---------------------------------------------------------------------------------------------
// Header: what the page downloaded and when it first counted.

function showStats(): void {
  const parts = stats.downloads.map((d) => `${d.what} ${kb(d.transferred)}${d.transferred !== d.decoded ? ` (${kb(d.decoded)} unpacked)` : ""}`);
  const total = stats.downloads.reduce((sum, d) => sum + d.transferred, 0);
  const first = stats.firstCountAt === undefined ? "" : `; first exact count ${Math.round(stats.firstCountAt)} ms after navigation ` +
    `(package ready at ${Math.round(stats.readyAt)} ms, table loaded in ${Math.round(stats.loadRanksMs ?? 0)} ms)`;
  const text = `Downloaded ${parts.join(" + ")} = ${kb(total)}${first}.`;
  const el = $("stats");
  el.textContent = text;
  el.dataset.bytes = String(total);
  if (stats.firstCountAt !== undefined) el.dataset.firstCount = String(Math.round(stats.firstCountAt));
}

// ---------------------------------------------------------------------------------------------
// Settings

function settings(): Settings {
  const mode = (document.querySelector<HTMLInputElement>('input[name="mode"]:checked')?.value ?? "profile") as Settings["mode"];
  const budget = Math.max(1000, Math.floor(Number($<HTMLInputElement>("budget").value) || 4000));
  return {
    mode,
    profile: $<HTMLSelectElement>("profile").value,
    budget,
    encoding: $<HTMLSelectElement>("encoding").value as Settings["encoding"],
    format: $<HTMLSelectElement>("format").value as Format | "file",
  };
}

function showSettings(): void {
  const chosen = settings();
  $("profile-field").hidden = chosen.mode !== "profile";
  $("budget-field").hidden = chosen.mode !== "budget";
  $("encoding-field").hidden = chosen.mode !== "budget";
  const profile = profileOf(chosen);
  $("profile-info").textContent = chosen.mode === "profile"
    ? `${profile.name}: a ${n(profile.contextWindow)}-token window, the last ${profile.keepRecentSteps} steps kept whole, counted with ${profile.encoding}${profile.format === "anthropic" ? " (Claude's tokenizer is not public: an estimate)" : ""}.`
    : `A budget of ${n(chosen.budget)} tokens, counted with ${chosen.encoding}.`;
  showBudget();
}

/** The trigger, low-water mark and split as the last build's receipt reports them, while it was built for the settings shown. */
function showBudget(): void {
  const replay = state.replay;
  const budget = replay?.last?.receipt.budget;
  const current = replay !== undefined && JSON.stringify(replay.settings) === JSON.stringify(settings());
  $("budget-info").textContent = budget && current
    ? budgetText(budget)
    : "The trigger, the low-water mark and the budget's split show here from the receipt of the first build.";
}

/**
 * Makes `replay` the one shown, with the summariser of the endpoint in force now: one set while
 * the replay was being made (a settings change, a restart) would otherwise be lost with the old one.
 * Called again on the replay shown when the endpoint changes.
 */
function adopt(replay: Replay): void {
  replay.summarize = summarizerInForce();
  state.replay = replay;
}

/** The model's summariser when an endpoint is set; `undefined`: the built-in extractive summary. */
const summarizerInForce = () => state.endpoint && summarizerFor(state.endpoint);

/** Settings changed: the same steps replayed into a new session built for them. */
async function applySettings(): Promise<void> {
  showSettings();
  // Queued even before a replay exists: a change made while a conversation loads applies to it.
  if (state.settingsQueued) return;
  state.settingsQueued = true;
  await run(async () => {
    state.settingsQueued = false;
    const old = state.replay;
    if (!old) return;
    const chosen = settings();
    await ensureEncoding(profileOf(chosen).encoding);
    // The stored session is replaced (same id): shown at once, so that a failure part-way leaves it as far as it got.
    const next = await state.shelf.start(old.conversation, chosen, old.session.id);
    adopt(next);
    try {
      await next.replayTo(old.replayed);
    } finally {
      await state.shelf.save(next);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Loading

function showLoadError(message: string | undefined): void {
  const box = $("load-error");
  box.hidden = message === undefined;
  box.textContent = message ?? "";
}

async function load(source: Source, runIndex?: number): Promise<void> {
  let conversation: Conversation;
  try {
    conversation = readConversation(source.input, source.name, runIndex);
  } catch (error) {
    showLoadError(error instanceof LoadError ? error.message : `${source.name}: ${String(error)}`);
    return;
  }
  showLoadError(undefined);
  state.source = source;
  const runs = conversation.loaded.run;
  $("run-picker").hidden = !runs;
  if (runs) {
    const input = $<HTMLInputElement>("run");
    input.max = String(runs.count - 1);
    input.value = String(runs.index);
    $("run-count").textContent = `of ${n(runs.count)} (0–${n(runs.count - 1)})`;
  }
  await run(async () => {
    // A session nothing was replayed into is replaced, not kept beside the new one.
    if (state.replay && state.replay.position === 0) await state.shelf.remove(state.replay.session.id);
    const chosen = settings();
    await ensureEncoding(profileOf(chosen).encoding);
    const replay = await state.shelf.start(conversation, chosen);
    adopt(replay);
    await replay.build();
    await state.shelf.save(replay);
  }, "load-error");
  const { loaded } = conversation;
  const notes = [...loaded.notes, ...(loaded.skipped.length ? [`${n(loaded.skipped.length)} records skipped (${[...new Set(loaded.skipped.map((s) => s.reason))].slice(0, 3).join("; ")})`] : [])];
  $("loaded").textContent = `${source.name}: ${loaded.source}${runs ? `, run ${runs.index} of ${runs.count}` : ""}, ${plural(messageCount(conversation), "message")} in ${plural(conversation.steps.length, "step")} (${conversation.format}).` +
    (notes.length ? ` ${notes.join(". ")}.` : "");
  $("step").focus();
}

async function loadFile(file: File): Promise<void> {
  await load({ name: file.name, input: new Uint8Array(await file.arrayBuffer()) });
}

async function fixtures(): Promise<void> {
  let list: Array<{ path: string; bytes: number }>;
  try {
    const response = await fetch("fixtures/index.json");
    if (!response.ok) return;
    list = await response.json();
  } catch {
    return; // a static build without the shared fixtures: no picker
  }
  if (!Array.isArray(list) || list.length === 0) return;
  const select = $<HTMLSelectElement>("fixture");
  select.replaceChildren(...list.map((f) => h("option", { value: f.path }, `${f.path} (${kb(f.bytes)})`)));
  $("fixture-picker").hidden = false;
}

async function loadFixture(path: string): Promise<void> {
  const response = await fetch(`fixtures/${path}`);
  if (!response.ok) {
    showLoadError(`fixtures/${path}: HTTP ${response.status}`);
    return;
  }
  await load({ name: path.split("/").pop() ?? path, input: new Uint8Array(await response.arrayBuffer()) });
}

// ---------------------------------------------------------------------------------------------
// Replay

/**
 * Runs one action at a time, in the order asked (a click while the session is being saved waits
 * for it rather than being lost), then redraws. An error is shown in `errorBox` (the replay's,
 * unless said otherwise), never thrown at the page; the session stays as the package left it.
 */
let queue: Promise<void> = Promise.resolve();

function run(action: () => Promise<void>, errorBox = "replay-error"): Promise<void> {
  state.pending += 1;
  setBusy(true);
  queue = queue.then(() => runNow(action, errorBox));
  return queue;
}

async function runNow(action: () => Promise<void>, errorBox: string): Promise<void> {
  const box = $(errorBox);
  try {
    await action();
    box.hidden = true;
  } catch (error) {
    box.hidden = false;
    box.textContent = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    state.playing = false;
  } finally {
    state.pending -= 1;
    setBusy(busy());
    render();
  }
}

function setBusy(busy: boolean): void {
  document.body.toggleAttribute("aria-busy", busy);
}

async function advance(until: "step" | "compaction" | "end"): Promise<void> {
  await run(async () => {
    const replay = state.replay;
    if (!replay) return;
    try {
      while (!replay.done) {
        const compaction = await replay.step();
        if (until === "step" || (until === "compaction" && compaction)) break;
      }
    } finally {
      await state.shelf.save(replay);
    }
  });
}

async function play(): Promise<void> {
  state.playing = !state.playing;
  render();
  while (state.playing && state.replay && !state.replay.done) {
    await advance("step");
    await new Promise((resolve) => setTimeout(resolve, 350));
  }
  state.playing = false;
  render();
}

async function restart(): Promise<void> {
  await run(async () => {
    const old = state.replay;
    if (!old) return;
    const replay = await state.shelf.start(old.conversation, old.settings, old.session.id);
    adopt(replay);
    await replay.build();
    await state.shelf.save(replay);
  });
}

// ---------------------------------------------------------------------------------------------
// Drawing

function render(): void {
  const replay = state.replay;
  const buttons = ["step", "to-compaction", "to-end", "play"].map((id) => $<HTMLButtonElement>(id));
  // Not disabled while busy: `run` queues a click behind the work under way. (A button disabled
  // by a run that ends between a click's press and release, as the settings change its press
  // makes by leaving an edited field, took the click with it.)
  for (const button of buttons) button.disabled = !replay || replay.done;
  $<HTMLButtonElement>("restart").disabled = !replay || busy() || replay.position === 0;
  $("play").textContent = state.playing ? "Pause" : "Play";
  $("play").setAttribute("aria-pressed", String(state.playing));
  $("chat").hidden = !(replay?.done && state.endpoint);
  const { endpoint } = state;
  $("endpoint-status").textContent = endpoint
    ? `Using ${endpoint.model} at ${endpoint.baseURL} for summaries${replay?.done ? " and to chat on below" : "; the chat opens at the end of the replay"}. The key is kept in memory only.`
    : "No model: the built-in summariser runs.";
  void renderSessions();
  if (stats.downloads.length) showStats();
  if (!replay) return;
  const { history } = replay.session;
  const profile = profileOf(replay.settings);
  $("progress").textContent = `Step ${n(replay.replayed)} of ${n(replay.total)}${replay.liveTurns ? ` + ${replay.liveTurns} chatted` : ""} · ${n(history.length)} messages · last build ${replay.buildMs.toFixed(1)} ms`;
  const last = replay.last;
  const byId = new Map(replay.messages.map((m) => [m.id, m]));
  $("history-list").replaceChildren(historyList(replay.messages, replay.entries));
  $("history-count").textContent = `(${n(replay.messages.length)})`;
  if (last) {
    const estimate = history.tokenReport().estimate;
    $("bar").replaceChildren(tokenBar({ result: last, profile, encoding: history.encoding, estimate }));
    $("context-list").replaceChildren(contextList(last, byId));
    $("context-count").textContent = `(${n(last.layout.length + (last.systemLayout ? 1 : 0))})`;
  } else {
    for (const id of ["bar", "context-list"]) $(id).replaceChildren();
    $("context-count").textContent = "";
  }
  $("cost-chart").replaceChildren(costChart(replay.costs));
  $("cost-total").replaceChildren(costSummary(replay.costs));
  showBudget();
  const summary = history.summaryState().current;
  $("summary-text").replaceChildren(summary
    ? h("div", {},
      h("p.hint", {}, `${n(summary.tokens)} tokens (${summary.source}), standing for ${n(summary.messageCount)} messages (${n(summary.originalTokens)} tokens) up to ${summary.summarisedUntil}, made ${summary.createdAt}.`),
      h("pre.summary", {}, summary.text))
    : h("p.hint", {}, "No summary yet: one is made when the context passes the profile's trigger."));
  const compactions = [...replay.compactions].reverse();
  $("compactions-count").textContent = compactions.length ? `(${compactions.length})` : "";
  $("compaction-list").replaceChildren(...(compactions.length ? compactions.map((c, i) => compactionItem(c, i === 0)) : [h("p.hint", {}, "None yet.")]));
  const turns = replay.compactedTurns();
  const select = $<HTMLSelectElement>("recall-turn");
  const previous = select.value;
  select.replaceChildren(...(turns.length ? turns.map((t) => h("option", { value: t }, `turn ${t}`)) : [h("option", {}, "no compacted turn yet")]));
  if (turns.map(String).includes(previous)) select.value = previous;
  select.disabled = turns.length === 0;
  $<HTMLButtonElement>("recall-go").disabled = turns.length === 0;
}

/** The panels of a session no longer shown (deleted). */
function clearPanels(): void {
  showBudget();
  for (const id of ["history-list", "context-list", "bar", "cost-chart", "cost-total", "summary-text", "compaction-list", "recall-result", "recall-turn"]) $(id).replaceChildren();
  for (const id of ["progress", "loaded", "history-count", "context-count", "compactions-count"]) $(id).textContent = "";
}

/** The settings controls and the "loaded" line for a session opened from the sidebar. */
function showOpened(replay: Replay): void {
  const chosen = replay.settings;
  const mode = document.querySelector<HTMLInputElement>(`input[name="mode"][value="${chosen.mode}"]`);
  if (mode) mode.checked = true;
  $<HTMLSelectElement>("profile").value = chosen.profile;
  $<HTMLInputElement>("budget").value = String(chosen.budget);
  $<HTMLSelectElement>("encoding").value = chosen.encoding;
  $<HTMLSelectElement>("format").value = chosen.format;
  showSettings();
  state.source = undefined;
  $("run-picker").hidden = true;
  const { conversation } = replay;
  $("loaded").textContent = `${replay.title}: reopened from the session store, ${plural(messageCount(conversation), "message")} in ${plural(conversation.steps.length, "step")} (${conversation.format}); ` +
    `${plural(replay.compactions.length, "compaction")} with ${replay.compactions.length === 1 ? "its receipt" : "their receipts"}.`;
}

async function renderSessions(): Promise<void> {
  const list = await state.shelf.list();
  $("sessions-note").textContent = state.shelf.note;
  $("sessions").dataset.persistent = String(state.shelf.persistent);
  $("sessions").replaceChildren(...(list.length
    ? list.map((s) => h("li", { "data-session": s.id, "data-encoding": s.encoding, class: s.id === state.replay?.session.id ? "current" : undefined },
      h("button.session", { type: "button", "data-action": "open", "aria-current": s.id === state.replay?.session.id ? "true" : undefined, disabled: s.problem !== undefined },
        h("strong", {}, s.title),
        h("span", {}, s.problem ? `damaged: ${s.problem}` : `${plural(s.messages, "message")} · ${n(s.tokens)} tokens`)),
      h("button.delete", { type: "button", "data-action": "delete", title: `Delete ${s.title}`, "aria-label": `Delete ${s.title}` }, "×")))
    : [h("li.hint", {}, "None yet: load a conversation.")]));
}

// ---------------------------------------------------------------------------------------------
// Wiring

function wire(): void {
  $("load-fixture").addEventListener("click", () => void loadFixture($<HTMLSelectElement>("fixture").value));
  $("load-paste").addEventListener("click", () => {
    const text = $<HTMLTextAreaElement>("paste").value;
    if (text.trim() === "") return showLoadError("Paste a conversation first.");
    void load({ name: "pasted JSON", input: text });
  });
  $("load-run").addEventListener("click", () => {
    if (state.source) void load(state.source, Math.max(0, Math.floor(Number($<HTMLInputElement>("run").value) || 0)));
  });
  const file = $<HTMLInputElement>("file");
  file.addEventListener("change", () => {
    const chosen = file.files?.[0];
    if (chosen) void loadFile(chosen);
    file.value = "";
  });
  const drop = $("drop");
  drop.addEventListener("click", () => file.click());
  drop.addEventListener("keydown", (event) => {
    if (event.key === "Enter" || event.key === " ") {
      event.preventDefault();
      file.click();
    }
  });
  // The whole page takes a dropped file.
  document.addEventListener("dragover", (event) => {
    event.preventDefault();
    drop.classList.add("over");
  });
  document.addEventListener("dragleave", (event) => {
    if (event.relatedTarget === null) drop.classList.remove("over");
  });
  document.addEventListener("drop", (event) => {
    event.preventDefault();
    drop.classList.remove("over");
    const dropped = event.dataTransfer?.files?.[0];
    if (dropped) void loadFile(dropped);
  });

  for (const id of ["profile", "budget", "encoding", "format"]) $(id).addEventListener("change", () => void applySettings());
  for (const radio of document.querySelectorAll<HTMLInputElement>('input[name="mode"]')) radio.addEventListener("change", () => void applySettings());

  $("step").addEventListener("click", () => void advance("step"));
  $("to-compaction").addEventListener("click", () => void advance("compaction"));
  $("to-end").addEventListener("click", () => void advance("end"));
  $("play").addEventListener("click", () => void play());
  $("restart").addEventListener("click", () => void restart());

  $("recall-go").addEventListener("click", () => {
    const replay = state.replay;
    const turn = Number($<HTMLSelectElement>("recall-turn").value);
    if (!replay || !Number.isInteger(turn)) return;
    try {
      const { result, toolMessage } = replay.recall(turn);
      $("recall-result").replaceChildren(recallView(turn, result, toolMessage));
    } catch (error) {
      $("recall-result").replaceChildren(h("p.error", { role: "alert" }, error instanceof Error ? `${error.name}: ${error.message}` : String(error)));
    }
  });

  $("sessions").addEventListener("click", (event) => {
    const target = event.target as HTMLElement;
    const id = target.closest<HTMLElement>("[data-session]")?.dataset.session;
    const action = target.closest<HTMLElement>("[data-action]")?.dataset.action;
    if (!id || !action) return;
    if (action === "delete") {
      void run(async () => {
        await state.shelf.remove(id);
        if (id === state.replay?.session.id) {
          state.replay = undefined;
          clearPanels();
        }
      });
      return;
    }
    // Its ranks before it is opened: the store loads its history (and the first build counts) in them.
    const encoding = target.closest<HTMLElement>("[data-session]")?.dataset.encoding as EncodingName | undefined;
    void run(async () => {
      if (id === state.replay?.session.id) return;
      if (encoding) await ensureEncoding(encoding);
      const replay = await state.shelf.open(id, summarizerInForce());
      if (!replay) return;
      adopt(replay);
      showOpened(replay);
      $("recall-result").replaceChildren();
    });
  });

  $("endpoint").addEventListener("submit", (event) => {
    event.preventDefault();
    const endpoint: Endpoint = {
      api: $<HTMLSelectElement>("api").value as Format,
      baseURL: $<HTMLInputElement>("base-url").value.trim() || ($<HTMLSelectElement>("api").value === "anthropic" ? "https://api.anthropic.com" : "https://api.openai.com/v1"),
      model: $<HTMLInputElement>("model-name").value.trim(),
      apiKey: $<HTMLInputElement>("api-key").value,
    };
    if (!endpoint.model || !endpoint.apiKey) {
      $("endpoint-status").textContent = "A model name and a key are needed.";
      return;
    }
    state.endpoint = endpoint;
    if (state.replay) adopt(state.replay);
    $<HTMLInputElement>("api-key").value = "";
    render();
  });
  $("forget").addEventListener("click", () => {
    state.endpoint = undefined;
    if (state.replay) adopt(state.replay);
    render();
  });
  $("chat").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = $<HTMLInputElement>("chat-input");
    const text = input.value.trim();
    const { replay, endpoint } = state;
    if (!text || !replay || !endpoint) return;
    input.value = "";
    void run(async () => {
      await chatTurn(replay, endpoint, text);
      await state.shelf.save(replay);
    }, "chat-error");
  });
}

async function main(): Promise<void> {
  const select = $<HTMLSelectElement>("profile");
  select.replaceChildren(...profileNames().map((name) => h("option", { value: name }, name)));
  select.value = profileNames().includes("gpt-4o") ? "gpt-4o" : profileNames()[0];
  $("legend").replaceChildren(legend());
  wire();
  showSettings();
  try {
    state.shelf = await StoreShelf.open();
  } catch (error) {
    state.shelf = new PageShelf(`IndexedDB could not be opened here (${error instanceof Error ? error.message : String(error)}): sessions are kept in this page only and are lost on a reload.`);
  }
  render();
  // The first count: the table of the default encoding, fetched now.
  await ensureEncoding(resolveProfile(select.value).encoding);
  showStats();
  await fixtures();
  document.body.dataset.ready = "true";
}

main().catch((error) => {
  showLoadError(`The demo could not start: ${error instanceof Error ? error.message : String(error)}`);
});
