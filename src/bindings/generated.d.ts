// Generated from the Rust types by src/bindings/typescript.rs (ts-rs): do not edit.
// `UPDATE_TYPES=1 cargo test --lib typescript` rewrites it.

export type Format = "openai" | "anthropic" | "openai-responses" | "ai-sdk";

export type CountOptions = { 
/**
 * The messages' format (default OpenAI's).
 */
format?: Format, 
/**
 * Tool definitions, counted as OpenAI renders them (src/tokens/tools.rs).
 */
tools?: ToolDefinition[], };

export type ChatTokenCount = { total: number, messages: Array<number>, tools: number, replyPriming: number, 
/**
 * Some part of the count is an estimate (see `RequestCount::estimates` for why).
 */
estimate: boolean, 
/**
 * What `total` is: exact, estimated, or (a history's count after usage was recorded)
 * anchored to the bill, when `total` is `anchored.tokens` rather than the sum of `messages`.
 */
basis: CountBasis, anchored?: AnchoredCount, };

export type RequestTokenCount = { total: number, system: number, messages: number, perMessage: Array<number>, tools: number, toolChoice: number, replyPriming: number, images: number, 
/**
 * Some part is not exact; `estimates` says which and why.
 */
estimate: boolean, estimates: Array<string>, 
/**
 * `exact` (every part by the provider's published rule) or `estimated`.
 */
basis: CountBasis, };

export type TokenReport = { total: number, messages: number, replyPriming: number, byRole: Partial<Record<"system" | "developer" | "user" | "assistant" | "tool", number>>, 
/**
 * Part kinds plus `overhead` (framing, role and name).
 */
byPart: Partial<Record<"overhead" | "text" | "image" | "toolCall" | "toolResult" | "thinking" | "other", number>>, 
/**
 * Some message is counted by an estimate (Anthropic messages, images of unknown size, parts
 * counted as their JSON).
 */
estimate: boolean, 
/**
 * `total` as the provider will likely bill it, once a whole request's usage was recorded.
 */
calibration: CalibratedCount | null, 
/**
 * What `total` is: exact, estimated, or anchored to the last bill (then `anchored.tokens`,
 * which holds the system prompt and tools the bill paid for; `counted` is the messages').
 */
basis: CountBasis, 
/**
 * The package's own count of the history (`total` unless anchored).
 */
counted: number, anchored: AnchoredCount | null, 
/**
 * Why the count is not anchored although usage was recorded.
 */
unanchored: string | null, };

export type RecordUsageOptions = { 
/**
 * The model the request went to (else the response's `model`).
 */
model?: string, 
/**
 * Your count of the whole request, system prompt and tools included (`countRequest(...).total`):
 * with it the bill calibrates later counts. Without it the bill is paired with the last
 * build's context (else the whole history), which does not hold what was sent beside the
 * messages, and only anchors later counts.
 */
counted?: number, };

export type UsageReport = { model: string, 
/**
 * Input tokens billed at the full price (neither read from nor written to the cache).
 */
billedInput: number, cacheRead: number, cacheWrite: number, 
/**
 * The billed size of the prompt: `billedInput + cacheWrite + cacheRead`.
 */
prompt: number, 
/**
 * The response's tokens, when reported.
 */
output: number | null, 
/**
 * What the package counted for that request.
 */
counted: number, 
/**
 * `counted` covers the whole request (system prompt and tools too), not only the messages.
 */
countedWholeRequest: boolean, 
/**
 * The ratio prompt/counted was learnt, and budgets use the model's calibration.
 */
calibrated: boolean, 
/**
 * The model's calibration after this usage (null until a whole request was recorded).
 */
calibration: CalibrationFactor | null, 
/**
 * Later counts of this conversation start from this bill (`AnchoredCount`).
 */
anchored: boolean, 
/**
 * What the last build's receipt predicted for this request (`receipt.cost`), to set beside
 * `cacheRead` and `cacheWrite`.
 */
predicted: CostEstimate | null, notes: Array<string>, };

export type CountBasis = "exact" | "anchored" | "estimated";

export type AnchoredCount = { tokens: number, model: string, 
/**
 * The billed prompt it starts from.
 */
prompt: number, 
/**
 * The response's billed output tokens, once the response is in the history (null: not
 * reported, or not yet appended; then its estimate is in `appended`).
 */
output: number | null, 
/**
 * The estimate of the messages appended since (the response among them when `output` is null).
 */
appended: number, appendedMessages: number, };

export type AnchorEnd = { "kind": "noUsage" } | { "kind": "historyRewritten" } | { "kind": "otherModel", anchored: string, next: string, } | { "kind": "otherRequest" } | { "kind": "compacted" } | { "kind": "notWholeHistory" };

export type AppendOptions = { format?: Format, 
/**
 * Repair what the strict append refuses (a log cut at its head) and report it.
 */
repair?: boolean, 
/**
 * Pins the messages at these positions of the list (in the order they are appended: an
 * Anthropic `system` first), as `pin(id)` does; e.g. a loaded conversation's `pinned`.
 */
pin?: Array<number>, };

export type AppendOneOptions = { format?: Format, 
/**
 * Pins the message, as `pin(id)` does: a request every context keeps.
 */
pin?: boolean, };

export type RepairedAppend = { ids: Array<string>, repairs: Array<AppendRepair>, };

export type AppendRepair = { 
/**
 * The message's position in the list given.
 */
index: number, kind: RepairKind, callId?: string, 
/**
 * What was done, in words.
 */
what: string, };

export type CalibrationFactor = { model: string, factor: number, low: number, high: number, observations: number, };

export type CalibratedCount = { counted: number, tokens: number, upper: number, model: string, factor: number, low: number, high: number, observations: number, };

export type LoadOptions = { 
/**
 * The file's name, as a hint (`session.jsonl`, `run.traj`) and for messages.
 */
name?: string, 
/**
 * Which run of a tau-bench run list (default 0).
 */
run?: number, 
/**
 * Leave the tool pairing unchecked (a log cut at its head): for `appendMany(list, { repair: true })`.
 */
repair?: boolean, };

export type LoadedConversationBase = { 
/**
 * The format of `messages`.
 */
format: Format, source: ConversationSource, 
/**
 * Ready to append: an OpenAI array, or Anthropic's `{ system?, messages }`.
 */
messages: OpenAIMessage[] | AnthropicRequest, 
/**
 * Per message, in the order `appendMany` appends them, where it came from.
 */
origins: Array<LoadOrigin>, skipped: Array<LoadSkipped>, marks: Array<LoadMark>, 
/**
 * The positions (in the order `appendMany` appends them) of the requests to pin, for
 * `appendMany(loaded.messages, { pin: loaded.pinned })`: a SWE-agent instance's own issue,
 * which comes after the worked demonstrations its harness puts first.
 */
pinned: Array<number>, notes: Array<string>, run?: LoadRun, };

export type ConversationSource = "openai" | "anthropic" | "openai-responses" | "ai-sdk" | "claude-code" | "swe-agent" | "tau-bench";

export type LoadOrigin = { line?: number, 
/**
 * Every line, when the message was merged from several (one API response split over records).
 */
lines?: Array<number>, 
/**
 * The JSON path of the message in the file (`history[3]`, `[0].traj[5]`, `system`).
 */
record?: string, };

export type LoadSkipped = { line?: number, record?: string, reason: string, };

export type LoadMark = { index: number, kind: LoadMarkKind, line?: number, record?: string, 
/**
 * A compaction's trigger (`manual`, `auto`), as the agent logged it.
 */
trigger?: string, 
/**
 * The tokens the agent counted before the compaction, as it logged them.
 */
preTokens?: number, };

export type LoadMarkKind = "meta" | "compactSummary" | "localCommand" | "compactBoundary";

export type LoadRun = { index: number, count: number, taskId?: unknown, };

export type HistoryOptions = { encoding?: EncodingName, format?: Format, };

export type BuildOptions = { 
/**
 * A built-in profile's name (`profileNames()`), or a profile of your own.
 */
profile?: string | Profile, 
/**
 * The format of the context (default: the history's; with a profile, the profile's).
 */
format?: Format, 
/**
 * A count window: the last N messages (10 to 100), tool chains whole.
 */
maxMessages?: number | null, 
/**
 * The token budget.
 */
budget?: BudgetOptions | null, 
/**
 * The last N steps stay whole and are never summarised (default 3).
 */
keepRecentSteps?: number, 
/**
 * Identical system messages are kept once (default true).
 */
dedupeSystem?: boolean, 
/**
 * Tool-output compression (on by default).
 */
compress?: CompressOptions | null, 
/**
 * File-read digests in later turns (on by default).
 */
digest?: DigestOptions | null, 
/**
 * History thinning of older turns (default false; profiles turn it on).
 */
thin?: boolean, 
/**
 * Summary compaction (on by default, with the extractive summariser).
 */
summary?: SummaryOptions | null, 
/**
 * A session with memory: summaries of recorded turns the context does not wholly hold, in the
 * summary section within what the summary budget leaves (newest turns first); `null` leaves
 * them out.
 */
memory?: MemoryOptions | null, 
/**
 * A session's state after the system prompt, in this order: the active skill, the open
 * todos, the available artifacts (with `<code_ref>`), the uploaded files; `null` leaves it out.
 */
state?: StateOptions | null, 
/**
 * Once an image was sent in an earlier turn, the context shows it as a one-line
 * placeholder (`[image: png, 1024×768, sent in turn 3, message m5]`; default false). The
 * stored message keeps the image.
 */
imagesSentOnce?: boolean, 
/**
 * Timestamp recorded on a summary made during this build (the core has no clock).
 */
now?: string, 
/**
 * The parts of the request sent beside the messages (system prompt, tool definitions, tool
 * choice): the budget covers them too, and `receipt.byPart.request` says what they took.
 */
request?: RequestParts, 
/**
 * A compaction event now, whatever the budget: the context is rebuilt down to the
 * low-water mark (a user's "/compact"). Default false: events come when the budget needs one.
 */
compactNow?: boolean, 
/**
 * Provider cache hints (on by default): Anthropic `cache_control` breakpoints at the end of
 * the system prompt, of the summary section and of the last message (and where the last call
 * ended when a wide turn passes the provider's lookback); in the AI SDK format as Anthropic
 * provider options. `null` leaves them out.
 */
cache?: CacheOptions | null, 
/**
 * The input pricing `receipt.cost` is estimated with: cache read and write multipliers, the
 * shortest cached prefix, and a price per million input tokens for dollars. What is left out
 * is the provider's published pricing for the model (`pricing.model`, `request.model` or the
 * profile's).
 */
pricing?: PricingOptions, };

export type BudgetOptions = { contextWindow?: number, targetRatio?: number, summaryRatio?: number, recentRatio?: number, minMessages?: number, 
/**
 * The most tokens the context may have; with `contextWindow` or `targetRatio` too, they must agree.
 */
maxTokens?: number, 
/**
 * What a compaction event compacts down to: the system prompt and this share of what the
 * budget leaves beside it (default: a quarter, at most 1,500 tokens, at least a tenth).
 */
lowWaterRatio?: number, };

export type CompressOptions = { maxTokens?: number, arrayKeep?: number, stringMaxChars?: number, maxDepth?: number, textMode?: TextMode, textMaxChars?: number, textHead?: number, textTail?: number, };

export type TextMode = "headTail" | "truncate";

export type DigestOptions = { tools?: Array<string>, };

export type SummaryOptions = { 
/**
 * Who writes the summary: the built-in extractive summary, or the caller's model (the build
 * returns a `summaryRequest`).
 */
summarizer?: Summarizer, 
/**
 * @deprecated Spelled `summarizer` now; still read.
 */
summariser?: Summarizer, 
/**
 * Compaction is due past this many tokens (default: the budget's `maxTokens`; without a
 * budget, 50,000).
 */
triggerTokens?: number, 
/**
 * After compaction the context aims below this (default: the budget's `maxTokens`, the recent
 * messages filling what the summary leaves; without a budget, 0.6 × the trigger).
 */
targetTokens?: number, 
/**
 * The first summary needs at least this many messages (20).
 */
minMessages?: number, 
/**
 * A new summary needs at least this many new messages (10)…
 */
minNewMessages?: number, 
/**
 * …whose tokens exceed this fraction of the current summary's (0.5).
 */
newTokenRatio?: number, 
/**
 * The most tokens a summary may have (4,000).
 */
maxTokens?: number, 
/**
 * The compact instruction; the built-in one by default.
 */
prompt?: string, 
/**
 * Words a summary must contain (case-insensitive).
 */
requiredKeys?: Array<string>, placement?: SummaryPlacement, };

export type Summarizer = "extractive" | "external";

export type SummaryPlacement = "auto" | "system" | "exchange";

export type MemoryOptions = { 
/**
 * At most this many tokens for the turn summaries (the summary budget's rest caps it too).
 */
maxTokens?: number, };

export type StateOptions = { 
/**
 * At most this many tokens for the state's sections (default 2,000; a budget caps them
 * further at a quarter of what the system prompt leaves).
 */
maxTokens?: number, };

export type RequestParts = { 
/**
 * Instructions sent apart from the history: the AI SDK's `system`, the Agents SDK's
 * `instructions`, Anthropic's top-level `system` (a string, or Anthropic's text blocks).
 */
system?: string | ReadonlyArray<{ type: "text"; text: string }>, 
/**
 * The tool definitions as sent: OpenAI Chat's `{ type: "function", function }`, Responses'
 * flat function tools, or Anthropic's `{ name, input_schema }`.
 */
tools?: ReadonlyArray<ToolDefinition | object>, toolChoice?: ToolChoice, 
/**
 * The model (Anthropic's tool-use system prompt depends on it).
 */
model?: string, };

export type CacheOptions = { 
/**
 * How long Anthropic keeps the entries (`"5m"`, the default, or `"1h"`).
 */
ttl?: CacheTtl, 
/**
 * At most this many breakpoints (1 to 4; default 4): leave room for your own on tools.
 */
maxBreakpoints?: number, };

export type CacheTtl = "5m" | "1h";

export type Profile = { name: string, contextWindow: number, 
/**
 * Compaction is due past this fraction of the window (Init 0.75, Execute 0.70).
 */
triggerFraction: number, 
/**
 * After compaction, aim below this fraction (default: the trigger: the recent messages fill
 * what the summary leaves).
 */
targetFraction?: number, 
/**
 * Recent steps kept whole (Init 3, Execute 5).
 */
keepRecentSteps: number, 
/**
 * `o200k_base`, `cl100k_base` or `estimate`.
 */
encoding: EncodingName, format?: Format, };

export type BuildResult = { 
/**
 * What to send: validated against the provider's rules. The list is new on every build; the
 * message objects in it are frozen (deeply) and shared with later builds that emit them unchanged.
 */
messages: AnyMessages, 
/**
 * Where each message comes from: `layout[i]` describes `messages[i]` (Anthropic:
 * `messages.messages[i]`), with the stored messages it carries (several when same-role
 * messages were merged into one); the entries, like `receipt.runs`, are frozen and shared
 * as the messages are.
 */
layout: Array<Readonly<LayoutEntry>>, 
/**
 * Anthropic: where the top-level `system` comes from (absent without one, and in other formats).
 */
systemLayout?: Readonly<LayoutEntry>, tokens: TokensByPart, receipt: Receipt, 
/**
 * Compaction is due: summarise these messages and hand the text to `completeSummary`.
 */
summaryRequest: SummaryRequest | null, 
/**
 * The summary the extractive summariser made during this build, if it did.
 */
newSummary: SummaryRecord | null, 
/**
 * A `prompt_cache_key` for OpenAI (which routes requests with the same key to the same
 * cache): the session's id and a hash of its first message, the same for every call of one
 * conversation.
 */
promptCacheKey: string, };

export type LayoutEntry = { 
/**
 * The stored messages it comes from (none for the summary and the placeholder).
 */
sources: readonly string[], section: Section, action: Action, };

export type Section = "system" | "state" | "pinned" | "summary" | "recent";

export type Action = "dropped" | "summarised" | "thinned" | "digested" | "compressed" | "kept";

export type DropReason = "repair" | "thinning" | "window" | "budget" | "bridge" | "memory";

export type TokensByPart = { system: number, 
/**
 * The session's state sections (`receipt.state`).
 */
state: number, summary: number, recent: number, 
/**
 * The parts of the request given to the build to send beside the messages (`request`:
 * system prompt, tool definitions, tool choice).
 */
request: number, 
/**
 * All of the above plus the reply priming.
 */
total: number, };

export type Receipt = { 
/**
 * The whole stored history as one prompt.
 */
tokensBefore: number, tokensAfter: number, messagesBefore: number, messagesAfter: number, byPart: TokensByPart, budget: BudgetReport | null, withinBudget: boolean, 
/**
 * What happened to every stored message, as runs of alike messages in history order.
 */
runs: Array<Readonly<ReceiptRun>>, 
/**
 * What the repair stage left out or moved: one list shared (not copied) by the builds while
 * the history's repairs stay the same; in JS a frozen array, shared as `runs`' entries are.
 */
repairs: Array<Repair>, 
/**
 * The pinned requests, always in the context: the task (or the messages pinned explicitly)
 * and the latest request.
 */
pinned: Array<PinUse>, summary: SummaryUse | null, 
/**
 * The bridge, when one stands between the summary in force and the recent messages.
 */
bridge: BridgeUse | null, 
/**
 * The memory's turn summaries the context holds (a session with memory).
 */
memory: MemoryUse | null, 
/**
 * The session's state sections the context holds, part by part.
 */
state: StateUse | null, 
/**
 * The images of earlier turns the context shows as placeholders (`imagesSentOnce`).
 */
images: ImagesUse | null, 
/**
 * A placeholder user message was put first (Anthropic needs one and none was left).
 */
placeholder: boolean, notes: Array<string>, 
/**
 * The history's calibration against reported usage, when there is one: the budget above is
 * then in counted tokens (the billed budget over the top of the band).
 */
calibration: CalibratedCount | null, 
/**
 * What this context shares with the previous build's (the prompt cache).
 */
cache: CacheUse | null, 
/**
 * What the request's input is expected to bill with the provider's prompt cache.
 */
cost: CostEstimate | null, };

export type ReceiptRun = { 
/**
 * The first and last ids of the run (the same for a run of one).
 */
from: string, to: string, count: number, action: Action, reason?: DropReason, tokensBefore: number, tokensAfter: number, };

export type ReceiptEntry = { id: string, action: Action, reason?: DropReason, tokensBefore: number, tokensAfter: number, };

export type BudgetReport = { 
/**
 * The most tokens the context may have (`budget.maxTokens`, or the window × the ratio).
 * Claude: this, the trigger and the low-water mark are billed units, as the budget was
 * given; `billedTokens` is the context's size in them.
 */
maxTokens: number, systemTokens: number, 
/**
 * The session's state sections, as they went in.
 */
stateTokens: number, 
/**
 * The pinned requests, as they went in.
 */
pinnedTokens: number, 
/**
 * The summary section's share: at most this much for the summary, the bridge and the memory.
 */
summaryBudget: number, 
/**
 * What the recent messages had: everything the other parts left.
 */
recentBudget: number, 
/**
 * A compaction event happens when the next context would pass this (`maxTokens`, or a
 * lower trigger).
 */
triggerTokens: number, 
/**
 * What an event compacts down to: the system prompt and `lowWaterRatio` of the rest.
 */
lowWaterTokens: number, 
/**
 * What the request's parts sent beside the messages took (`request`).
 */
requestTokens: number, 
/**
 * Claude: the context's size as billed (the request's parts included), which the trigger
 * and the budget were checked against: anchored to
 * the last recorded usage (`recordUsage`) when it still stands, else Claude's rule on the
 * messages (an estimate).
 */
billedTokens?: number, };

export type CacheUse = { 
/**
 * This build was a compaction event: the context was rebuilt from `firstChanged` on.
 */
event: boolean, reason?: EventReason, change: Change, 
/**
 * The leading messages identical to the previous build's, and their tokens.
 */
prefixMessages: number, prefixTokens: number, 
/**
 * The first message that is not the previous build's (none: the context is unchanged).
 */
firstChanged?: number, 
/**
 * Compaction events of this history so far.
 */
events: number, };

export type CostEstimate = { 
/**
 * Input tokens read back from the cache (the prefix the previous request shares with this
 * one, as far as the provider caches it).
 */
cachedTokens: number, 
/**
 * Input tokens written to the cache (Anthropic, with hints: the rest up to the last
 * breakpoint).
 */
writtenTokens: number, 
/**
 * Input tokens billed at the plain input price.
 */
uncachedTokens: number, 
/**
 * The input's cost in uncached-input-token units: reads and writes at their multipliers.
 */
units: number, 
/**
 * In dollars, when `pricing.inputPrice` is given.
 */
price?: number, };

export type PricingOptions = { 
/**
 * The model whose pricing applies (e.g. `"claude-sonnet-4-5"`, `"gpt-4o"`).
 */
model?: string, 
/**
 * A cache read, as a multiple of the input price (Anthropic 0.1; OpenAI 0.1 to 0.5 by model).
 */
read?: number, 
/**
 * A five-minute cache write (Anthropic 1.25; OpenAI bills none: 1).
 */
write5m?: number, 
/**
 * A one-hour cache write (Anthropic 2).
 */
write1h?: number, 
/**
 * The shortest prefix the provider caches (1,024 to 4,096 tokens by model).
 */
minTokens?: number, 
/**
 * Dollars per million uncached input tokens: with it, `receipt.cost.price` is in dollars.
 */
inputPrice?: number, };

export type EventReason = "first" | "budget" | "window" | "options" | "summary" | "history" | "repair" | "requested" | "system" | "grown";

export type Change = "appended" | "unchanged" | "event" | "new";

export type Repair = { id: string, kind: RepairKind, callId?: string, };

export type RepairKind = "unansweredCall" | "orphanResult" | "duplicateResult" | "misplacedPart" | "duplicateSystem" | "emptyAfterRepair" | "movedResult" | "reusedCallId";

export type SummaryUse = { requestId: string, summarisedUntil: string, tokens: number, 
/**
 * Made during this build (the extractive summariser).
 */
fresh: boolean, 
/**
 * Longer than the summary section's share: its head and tail are in the context.
 */
truncated: boolean, };

export type PinUse = { id: string, role: PinRole, 
/**
 * Cut to fit half of what the system prompt leaves: its texts to their head and tail, a
 * request of many parts to its first and last parts.
 */
truncated: boolean, tokensBefore: number, tokensAfter: number, };

export type PinRole = "task" | "latest" | "pinned";

export type BridgeUse = { 
/**
 * The first and last messages it covers.
 */
from: string, until: string, messages: number, tokens: number, };

export type MemoryUse = { 
/**
 * The turns whose summaries are in the context, in order.
 */
turns: Array<number>, tokens: number, 
/**
 * Turns not wholly in the context whose summaries did not fit.
 */
omitted: Array<number>, };

export type StatePart = "skill" | "todos" | "artifacts" | "uploads";

export type StateSectionUse = { part: StatePart, 
/**
 * Lines shown, and lines that did not fit.
 */
lines: number, omitted: number, tokens: number, };

export type StateUse = { sections: Array<StateSectionUse>, tokens: number, };

export type ImagePlaceholder = { 
/**
 * The stored message that holds it.
 */
id: string, turn: number, text: string, };

export type ImagesUse = { replaced: Array<ImagePlaceholder>, 
/**
 * What the messages holding them cost whole, less what they cost with the placeholders.
 */
tokensSaved: number, };

export type SummaryRequest = { id: string, 
/**
 * First and last history ids covered by this compaction (after the previous summary).
 */
from: string, until: string, messageIds: Array<string>, 
/**
 * Ready to send: OpenAI an array, Anthropic `{system?, messages}`; ends with the prompt.
 */
messages: AnyMessages, 
/**
 * The compact prompt with the previous summary folded in.
 */
prompt: string, previousSummary: string | null, maxTokens: number, requiredKeys: Array<string>, 
/**
 * Tokens of what the new summary will stand for, previous summary's originals included.
 */
originalTokens: number, messageCount: number, };

export type SummaryRecord = { 
/**
 * The request that produced it.
 */
requestId: string, 
/**
 * The id of the last message it covers.
 */
summarisedUntil: string, 
/**
 * That message's position in the history.
 */
untilIndex: number, text: string, tokens: number, 
/**
 * Tokens of everything it stands for (all summarised messages, across compactions).
 */
originalTokens: number, 
/**
 * 1 − tokens / original tokens.
 */
compressionRate: number, 
/**
 * Messages it stands for, across compactions.
 */
messageCount: number, 
/**
 * Caller-supplied timestamp, or `seq:N` (the core has no clock).
 */
createdAt: string, source: SummarySource, };

export type SummarySource = "extractive" | "external";

export type SummaryState = { current: SummaryRecord | null, 
/**
 * The compaction under way, if any: while set, no second one starts.
 */
inProgress: PendingSummary | null, 
/**
 * Summaries made so far (numbers request ids and `seq:` timestamps).
 */
generation: number, };

export type PendingSummary = { requestId: string, until: string, untilIndex: number, originalTokens: number, messageCount: number, maxTokens: number, requiredKeys: Array<string>, };

export type Violation = { 
/**
 * Index in the message list, when one message is at fault.
 */
index: number | null, rule: string, message: string, };

export type SessionOptions = { 
/**
 * Letters, digits, '-', '_', '.' or ':' (default "main").
 */
id?: string, 
/**
 * Agent loops allowed (default 10).
 */
maxLoops?: number, 
/**
 * Switches the memory module on (it is off unless configured).
 */
memory?: MemoryChoice, encoding?: EncodingName, 
/**
 * The format appends and reads use when none is given (default OpenAI's).
 */
format?: Format, };

export type MemoryChoice = boolean | MemorySettings;

export type MemorySettings = { 
/**
 * Refuse snapshots longer than this many characters (default 1,048,576).
 */
maxSnapshotChars?: number, };

export type ContextSnapshot = { id: string, turnNumber: number, fullContext: string, summary: string, 
/**
 * The conversation messages of this turn (first and last id), if it had any.
 */
messages?: MessageRange, };

export type MessageRange = { from: string, until: string, };

export type MemorySummary = { id: string, contextId: string, turnNumber: number, summary: string, insights: Array<string>, };

export type TurnInput = { 
/**
 * Defaults to the turn after the last one recorded.
 */
turnNumber?: number, 
/**
 * The workspace the agent rendered this turn (`fullContext`).
 */
workspaceContext: string, 
/**
 * The turn's summary; the built-in one when absent.
 */
summary?: string, insights?: Array<string>, 
/**
 * Refuse a given summary longer than this (what a summariser was asked for).
 */
maxSummaryTokens?: number, };

export type TurnSummaryRequest = { id: string, turnNumber: number, messageIds: Array<string>, 
/**
 * One user message holding the turn's transcript and the instruction, in the requested format.
 */
messages: AnyMessages, prompt: string, maxTokens: number, requiredKeys: Array<string>, };

export type SearchHit = { kind: DocumentKind, id: string, turnNumber: number | null, score: number, };

export type DocumentKind = "snapshot" | "summary" | "message";

export type RecallResult = { turns: Array<RecalledTurn>, truncated: boolean, } | { query: string, results: Array<RecallHit>, truncated: boolean, };

export type RecalledTurn = { turnNumber: number, summary: string, fullContext: string, messages: Array<RecalledMessage>, };

export type RecalledMessage = { id: string, role: string, text: string, 
/**
 * The message's images, described; `answerRecall` attaches them where the format's tool
 * results can carry images (Anthropic, AI SDK), and `history.get(id)` has them in any format.
 */
images?: Array<string>, };

export type RecallHit = { text: string, kind: DocumentKind, id: string, turnNumber: number | null, score: number, };

export type SubagentResult = { ok: boolean, result: string, context_id: string, loops: number, };

export type Artifact = { id: string, 
/**
 * A supported language's name (`supportedLanguages()`).
 */
language: string, description: string, content: string, lineCount: number, charCount: number, 
/**
 * An ISO 8601 date or `seq:N` (the core has no clock).
 */
createdAt: string, };

export type ArtifactInput = { 
/**
 * Letters, digits, '_', '-' or '.', at most 128 (e.g. `code_sales_analysis`).
 */
id: string, language: string, 
/**
 * Given, or made from the first line of the content.
 */
description?: string, content: string, 
/**
 * Default: `seq:N`, N the artifact's number in the session.
 */
createdAt?: string, 
/**
 * Refuse an unsupported language instead of falling back to python (default false).
 */
strictLanguage?: boolean, };

export type LanguageFallback = { requested: string, used: string, };

export type SavedArtifact = { id: string, language: string, fileName: string, description: string, lineCount: number, charCount: number, createdAt: string, languageFallback?: LanguageFallback, };

export type TodoStatus = "pending" | "in_progress" | "completed" | "cancelled";

export type Todo = { content: string, status?: TodoStatus, };

export type UploadedFile = { name: string, 
/**
 * Where the agent finds it (a workspace path or URL).
 */
path?: string, mediaType?: string, 
/**
 * In bytes.
 */
size?: number, description?: string, };

export type AgentState = { todos?: Array<Todo>, 
/**
 * The tools the agent may use now.
 */
allowedTools?: Array<string>, 
/**
 * Tools that stay allowed for the whole session.
 */
persistentTools?: Array<string>, activeSkill?: string, 
/**
 * The agents, skills or tools the user @-mentioned.
 */
mentionedAgents?: Array<string>, 
/**
 * The model the user prefers (vision, code, …).
 */
modelPref?: string, workspacePath?: string, userId?: string, uploadedFiles?: Array<UploadedFile>, };

export type AppState = { 
/**
 * "main", or "subagent-xxxxxxxx".
 */
contextId: string, parentContext: string | null, 
/**
 * The session id that persists it (a sub-agent's is its context id: it is isolated).
 */
threadId: string, loops: number, maxLoops: number, todos?: Array<Todo>, 
/**
 * The tools the agent may use now.
 */
allowedTools?: Array<string>, 
/**
 * Tools that stay allowed for the whole session.
 */
persistentTools?: Array<string>, activeSkill?: string, 
/**
 * The agents, skills or tools the user @-mentioned.
 */
mentionedAgents?: Array<string>, 
/**
 * The model the user prefers (vision, code, …).
 */
modelPref?: string, workspacePath?: string, userId?: string, uploadedFiles?: Array<UploadedFile>, };

export type MemoryExport = { format: "context-compactor/memory", version: 1, contexts: Array<ContextSnapshot>, summaries: Array<MemorySummary>, };

export type SessionExport = { format: "context-compactor/session", version: 1, id: string, parentId: string | null, messageFormat: Format, loops: number, maxLoops: number, subagentsSpawned: number, turnStart: number, metadata: Record<string, unknown>, history: HistoryExport, memory: MemoryExport | null, maxSnapshotChars: number | null, 
/**
 * The artifacts, in the order they were saved (absent: none).
 */
artifacts?: Array<Artifact>, 
/**
 * The agent state (absent: the empty state).
 */
state?: AgentState, };

export type HistoryExport = { encoding: EncodingName, messages: Array<LoggedMessage>, summary: SummaryState, 
/**
 * The ids of the messages pinned explicitly (absent: none).
 */
pinned?: Array<string>, 
/**
 * The context the last build sent, which the next build extends (absent: none was made, or
 * an export from before frames were kept). One that does not fit the messages is not
 * restored: the next build then starts afresh, and its receipt's notes say so.
 */
frame?: FrameState, };

export type FrameState = { 
/**
 * What the frame was made with (the options that shape messages), opaque.
 */
shape: string, summaryGeneration: number, 
/**
 * Compaction events so far.
 */
events: number, 
/**
 * Stored messages accounted for, and the id of the last.
 */
settled: number, settledId?: string, messages: Array<FrozenMessage>, fates: Array<FrozenFates>, receipt: FrozenReceipt, 
/**
 * The session's state as the context last showed it, section by section.
 */
stateShown?: Array<string>, 
/**
 * The summary request the frame's event proposed, while it waits for its summary: a
 * reopened session asks for it again, as the live one does, rather than appending.
 */
summaryRequest?: SummaryRequest, 
/**
 * The budget's maximum as given to the event that made the frame.
 */
givenMax?: number, };

export type FrozenMessage = { 
/**
 * The stored message it carries (none: made up by the build).
 */
id?: string, section: Section, action: Action, tokens: number, 
/**
 * Its form as sent (in `format`), when it is not the stored message whole.
 */
form?: unknown, format?: Format, };

export type FrozenFates = { count: number, action: Action, reason?: DropReason, };

export type FrozenReceipt = { budget: BudgetReport | null, pinned: Array<PinUse>, summary: SummaryUse | null, bridge: BridgeUse | null, memory: MemoryUse | null, state: StateUse | null, images: ImagesUse | null, placeholder: boolean, notes: Array<string>, };

export type LoggedMessage = { id: string, format: Format, message: Message, };

export type StoredRecord = { key: Array<string>, value: string, };

export type SessionChanges = { records: Array<StoredRecord>, remove: Array<Array<string>>, 
/**
 * The commit these records make (the saved one when there are none).
 */
commit: number, };

export type ChangesOptions = { 
/**
 * The time of this save, in milliseconds since the Unix epoch (default `Date.now()`).
 */
now?: number, };

export type PullPlan = { 
/**
 * The stored session is the one this session last saved or loaded: nothing to read.
 */
current: boolean, 
/**
 * The records to read (each by its key) and hand to `pull` with the meta record.
 */
keys: Array<Array<string>>, 
/**
 * Then the records a tail may hold past what this session has, in order: read them up to
 * the first absent one, and hand those to `pull` too (when there are any, even if `current`).
 */
tail: Array<Array<string>>, };

export type PullReport = { 
/**
 * The commit now saved.
 */
commit: number, 
/**
 * The ids of the messages the other writer saved, in order.
 */
appended: Array<string>, 
/**
 * This session's unsaved messages whose ids changed (they now follow the other writer's).
 */
renumbered: Array<Renumbered>, 
/**
 * This session's unsaved memory turns whose numbers changed: `[from, to]`.
 */
renumberedTurns: Array<[number, number]>, 
/**
 * Unsaved changes of this session that gave way to the other writer's (`"summary"`: a
 * summary made here over messages that are no longer where it covered them, or while the
 * other writer stored its own; `"frame"`: the context this session's last build sent, when
 * the other writer stored the context its own build sent since, or when it covered unsaved
 * messages that moved: the next build extends the other writer's, or starts afresh).
 */
superseded: Array<string>, };

export type Renumbered = { from: string, to: string, };

export type SessionInfo = { id: string, parentId: string | null, title: string | null, 
/**
 * Milliseconds since the Unix epoch.
 */
createdAt: number, updatedAt: number, messages: number, tokens: number, 
/**
 * Saves so far (each writer's save adds one).
 */
commit: number, 
/**
 * What it counts its tokens with (its ranks must be loaded before it is opened, in the lite
 * build): `None` when its settings record was not given (see `settings_key`).
 */
encoding: EncodingName | null, };
