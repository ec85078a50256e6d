import type { OrganismConfig } from '../config/types.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import type { Reservation } from '../usage/budgets.js';
import type { BudgetLedger } from '../core/budget.js';
import type { Pricing } from '../usage/pricing.js';
import type { UsageTracker } from '../usage/tracker.js';
import type { UsageEvent } from '../usage/types.js';
import { newId } from '../util/ids.js';
import { createProvider } from './providers/index.js';
import { retryReasonOf, type LlmCallWatch, type LlmObserver } from './observer.js';
import { abortableSleep, isRetryable, retryDelay, type Sleep } from './retry.js';
import type { CallRecorder, LlmCallRecord } from './call-record.js';
import { estimatePromptTokens } from './tokens.js';
import type { Guard } from '../core/guard.js';
import { Redactor } from '../util/pii.js';
import { guardError, guardInput, guardOutput, type GuardTrip } from './guards.js';
import { requestHash } from './request-hash.js';
import { OutputCapWatch } from './usage-check.js';
import { NO_USAGE, type BoundLlmClient, type CallObserver, type CompletionRequest, type CompletionResult, type LlmProvider, type ProviderResponse, type TokenUsage } from './types.js';

/** Below this many output tokens a call is not worth making: it is refused instead. */
export const MIN_OUTPUT_TOKENS = 16;
/** Retries per provider when the provider does not say (its config always does). */
export const DEFAULT_MAX_RETRIES = 3;

/** Who makes a call: the usage and budget are accounted to this thread and agent. */
export interface CallContext {
  readonly threadId: string;
  readonly agent: string;
  readonly messageId: string | null;
  readonly metadata: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
  /** Text deltas as the answer streams in, with the id of the recorded call they belong to. */
  readonly onDelta?: (callId: string, text: string) => void;
  /**
   * The guardrails of the call (organism-wide, then the listener's): input guards run before
   * anything is reserved or sent (a block costs nothing), output guards on the answer before
   * it is returned. With output guards, no live deltas are emitted (the answer is not shown
   * before they pass it).
   */
  readonly guards?: readonly Guard[];
}

/** How a call is recorded beside the request itself. */
export interface CallOptions {
  /** The call repairs an invalid answer. */
  readonly repair?: boolean;
}

/** What the router accounts with, and (for tests) its clock, sleep and randomness. */
export interface RouterDeps {
  readonly pricing: Pricing;
  readonly tracker: UsageTracker;
  readonly budgets: BudgetLedger;
  /** Backoff wait; must reject with Errors.ABORTED as soon as the signal aborts. */
  readonly sleep?: Sleep;
  /** Jitter source in [0, 1). */
  readonly random?: () => number;
  /** Monotonic milliseconds, for latencies. */
  readonly now?: () => number;
  /** Records every provider attempt (llm.record); none = nothing recorded. */
  readonly recorder?: CallRecorder;
  /** Telemetry following each call (chat spans, LLM metrics). */
  readonly observer?: LlmObserver;
  /** llm.max_reply_bytes, which providers hold while reading (their default when absent). */
  readonly maxReplyBytes?: number;
  /** Flags (and logs once per provider) completion tokens over the output cap; none = flagged, not logged. */
  readonly outputCap?: OutputCapWatch;
  /** privacy.redact: live deltas are redacted as they stream (a value split between deltas is still caught). */
  readonly redactor?: Redactor;
  /** Answers a fork's calls from the recorded calls of the thread it was forked from (time travel); none = every call is live. */
  readonly replay?: ReplaySource;
}

/**
 * Where a fork's calls are answered from the record (issue 29): a call whose request hash
 * matches a recorded successful call of the source thread (same agent) is answered with that
 * record; the first that matches none goes live, and the fork stays live from there.
 */
export interface ReplaySource {
  /** This call's thread replays from a record (a fork, not gone live): only then is the request hashed before reserving. */
  replays(call: CallContext): boolean;
  /** The recorded call that answers this request, or null: the call goes live (and so does the fork). */
  answer(call: CallContext, requestHash: string): Promise<LlmCallRecord | null>;
  /** The fork's call `callId` was answered by `recorded` (its tool calls may reuse the recorded results). */
  answered?(callId: string, recorded: LlmCallRecord): void;
}

export interface RouterOptions extends RouterDeps {
  readonly providers: readonly LlmProvider[];
}

/** The successful attempt, as the accounting needs it. */
interface Success {
  readonly provider: LlmProvider;
  readonly response: ProviderResponse;
  readonly providerLatencyMs: number;
  readonly attempts: number;
  /** The record of the successful attempt, completed (cost) by the accounting. */
  readonly record: LlmCallRecord;
}

/** An aborted call, with the usage its provider had reported before the abort (if any). */
class AbortedCall extends Error {
  constructor(
    readonly error: OrganismError,
    readonly provider: LlmProvider,
    readonly usage: TokenUsage | null,
    readonly model: string,
  ) {
    super(error.message);
  }
}

/**
 * Routes LLM calls: providers that serve the model, by priority; retries with backoff on
 * retryable failures, then failover to the next provider. Every call reserves thread budget
 * first (a call that could overrun the ceiling never reaches a provider), then settles the
 * real usage and records one usage event with its cost; a failed or aborted call cancels its
 * reservation.
 */
export class LlmRouter {
  private readonly providers: LlmProvider[];
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly now: () => number;
  private readonly outputCap: OutputCapWatch;

  constructor(private readonly opts: RouterOptions) {
    this.outputCap = opts.outputCap ?? new OutputCapWatch(null);
    // A stable sort: equal priorities keep their configured order.
    this.providers = [...opts.providers].sort((a, b) => a.priority - b.priority);
    this.sleep = opts.sleep ?? abortableSleep;
    this.random = opts.random ?? Math.random;
    this.now = opts.now ?? (() => performance.now());
  }

  static fromConfig(llm: Pick<OrganismConfig['llm'], 'providers' | 'pricing'>, deps: RouterDeps): LlmRouter {
    return new LlmRouter({ ...deps, providers: llm.providers.map(createProvider) });
  }

  async complete(request: CompletionRequest, call: CallContext, options: CallOptions = {}): Promise<CompletionResult> {
    const candidates = this.providers.filter((p) => p.serves(request.model));
    if (candidates.length === 0) throw Errors.LLM_NO_PROVIDER(request.model);
    if (call.signal.aborted) throw aborted(call.signal);

    const guards = call.guards ?? [];
    if (guards.some((g) => g.input)) {
      const base = { agent: call.agent, threadId: call.threadId, messageId: call.messageId, model: request.model };
      const guarded = await guardInput(guards, base, request.system, request.messages);
      if (!guarded.ok) {
        // Refused before any reservation or provider request: it cost nothing.
        this.recordTrip(call, request, options, guarded.trip);
        throw guardError(call.agent, guarded.trip);
      }
      request = { ...request, system: guarded.system, messages: guarded.messages };
    }
    const replay = this.opts.replay;
    if (replay?.replays(call)) {
      // Sized as the live call would be (without reserving: a replayed call charges nothing).
      const sized = await this.size(request, call.threadId, estimatePromptTokens(request));
      const hash = requestHash(call.agent, sized);
      const recorded = await replay.answer(call, hash);
      if (recorded) return this.replayed(recorded, call, hash, options);
    }

    const started = this.now();
    const { request: sized, reservation } = await this.reserve(request, call.threadId);
    const hash = requestHash(call.agent, sized);
    const watch = this.opts.observer?.started({ ...sized, agent: call.agent, threadId: call.threadId }) ?? null;
    let success: Success;
    try {
      const limit = this.opts.maxReplyBytes !== undefined ? { maxReplyBytes: this.opts.maxReplyBytes } : {};
      success = await this.attempt(candidates, { ...sized, ...limit, agent: call.agent, threadId: call.threadId }, call, { ...options, requestHash: hash }, watch);
    } catch (err) {
      if (err instanceof AbortedCall && err.usage && err.usage.totalTokens > 0) {
        // A stream cut short had cost what its provider reported so far: that is accounted.
        await this.usageEvent(call, err.provider, err.model, request.model, err.usage, 0, this.now() - started, reservation);
      } else {
        await this.opts.budgets.cancel(reservation);
      }
      const failure = err instanceof AbortedCall ? err.error : err;
      watch?.failed(failure);
      throw failure;
    }
    const totalLatencyMs = this.now() - started;
    let trip: GuardTrip | null = null;
    if (guards.some((g) => g.output)) {
      const { response } = success;
      const base = { agent: call.agent, threadId: call.threadId, messageId: call.messageId, model: request.model };
      const guarded = await guardOutput(guards, base, response.content, response.toolCalls ?? []);
      if (guarded.ok) {
        const rewritten = { ...response, content: guarded.text, toolCalls: guarded.toolCalls };
        const record = success.record.response
          ? { ...success.record, response: { ...success.record.response, text: guarded.text, toolCalls: guarded.toolCalls.map((c) => ({ ...c })) } }
          : success.record;
        success = { ...success, response: rewritten, record };
      } else {
        trip = guarded.trip;
        success = { ...success, record: { ...success.record, error: tripText(trip), guard: { name: trip.guard, stage: trip.stage, reason: trip.reason } } };
      }
    }
    // The answer was paid for whatever the guards say of it: it is accounted (and recorded) first.
    const result = await this.account(success, request.model, reservation, call, totalLatencyMs);
    if (trip) {
      const error = guardError(call.agent, trip);
      watch?.failed(error);
      throw error;
    }
    watch?.succeeded(result);
    return result;
  }

  /** The record of a call an input guard refused: no provider, no usage, the request as it would have gone. */
  private recordTrip(call: CallContext, request: CompletionRequest, options: CallOptions, trip: GuardTrip): void {
    this.opts.recorder?.call({
      id: newId(),
      threadId: call.threadId,
      messageId: call.messageId,
      agent: call.agent,
      provider: '',
      model: request.model,
      responseModel: null,
      attempt: 0,
      repair: options.repair ?? false,
      startedAt: Date.now(),
      latencyMs: 0,
      request: { model: request.model, system: request.system, messages: request.messages },
      tools: (request.tools ?? []).map((t) => t.name),
      response: null,
      usage: null,
      maxOutputTokens: request.maxOutputTokens,
      overOutputCap: false,
      cost: null,
      error: tripText(trip),
      guard: { name: trip.guard, stage: trip.stage, reason: trip.reason },
    });
  }

  bind(call: CallContext, defaults: { model: string | null; maxOutputTokens: number }): BoundLlmClient {
    return {
      complete: (req) => {
        const model = req.model ?? defaults.model;
        if (!model) return Promise.reject(Errors.LLM_NO_PROVIDER('(none: the listener has no model)'));
        return this.complete(
          {
            model,
            system: req.system ?? '',
            messages: req.messages,
            maxOutputTokens: req.maxOutputTokens ?? defaults.maxOutputTokens,
            ...(req.tools && req.tools.length > 0 ? { tools: req.tools } : {}),
          },
          call,
          { repair: req.repair ?? false },
        );
      },
    };
  }

  /**
   * Reserves the estimated prompt plus the output limit. A thread near its ceiling gets a
   * smaller output limit rather than a refusal; only when not even a useful answer fits is the
   * call refused (BUDGET_EXHAUSTED, thrown by the budget ledger). With a shared ledger another
   * process may take tokens between the headroom read and the reservation: a refusal then
   * sizes the call once more on what is left (an unchanged size is refused as it was).
   */
  private async reserve(request: CompletionRequest, threadId: string): Promise<{ request: CompletionRequest; reservation: Reservation }> {
    const promptEstimate = estimatePromptTokens(request);
    const size = () => this.size(request, threadId, promptEstimate);
    const sized = await size();
    try {
      return { request: sized, reservation: await this.opts.budgets.reserve(threadId, promptEstimate + sized.maxOutputTokens) };
    } catch (err) {
      if (!Errors.BUDGET_EXHAUSTED.is(err)) throw err;
      const resized = await size();
      if (resized.maxOutputTokens >= sized.maxOutputTokens) throw err;
      return { request: resized, reservation: await this.opts.budgets.reserve(threadId, promptEstimate + resized.maxOutputTokens) };
    }
  }

  /** The request with its output limit lowered to what the thread's budget leaves (when that is still a useful answer). */
  private async size(request: CompletionRequest, threadId: string, promptEstimate: number): Promise<CompletionRequest> {
    const room = (await this.opts.budgets.headroom(threadId)) - promptEstimate;
    return room >= MIN_OUTPUT_TOKENS && room < request.maxOutputTokens ? { ...request, maxOutputTokens: room } : request;
  }

  /**
   * A fork's call answered from the record: recorded in the fork as `replayed` (the original
   * usage shown, zero cost), no usage event, no budget reserved or settled, no provider called.
   */
  private replayed(recorded: LlmCallRecord, call: CallContext, hash: string, options: CallOptions): CompletionResult {
    const response = recorded.response!;
    const { record: _mode, ...rest } = recorded;
    const record: LlmCallRecord = {
      ...rest,
      id: newId(),
      threadId: call.threadId,
      messageId: call.messageId,
      agent: call.agent,
      attempt: 1,
      repair: options.repair ?? false,
      startedAt: Date.now(),
      latencyMs: 0,
      cost: 0,
      requestHash: hash,
      replayed: true,
      replayOf: recorded.id,
    };
    this.opts.recorder?.call(record);
    this.opts.replay?.answered?.(record.id, recorded);
    const toolCalls = response.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments ?? '' }));
    return {
      content: response.text ?? '',
      toolCalls,
      finishReason: response.finishReason,
      model: recorded.responseModel ?? recorded.model,
      usage: recorded.usage ?? NO_USAGE,
      provider: recorded.provider,
      providerLatencyMs: 0,
      totalLatencyMs: 0,
      attempts: 1,
      cost: 0,
      callId: record.id,
      overOutputCap: recorded.overOutputCap,
    };
  }

  /** Each candidate in priority order, with its retries; throws the final failure. Every attempt is recorded. */
  private async attempt(
    candidates: readonly LlmProvider[],
    request: CompletionRequest,
    call: CallContext,
    options: CallOptions & { requestHash: string },
    watch: LlmCallWatch | null = null,
  ): Promise<Success> {
    const { signal } = call;
    let attempts = 0;
    const failures: Array<{ provider: string; reason: string }> = [];
    for (const provider of candidates) {
      const retries = provider.maxRetries ?? DEFAULT_MAX_RETRIES;
      for (let attempt = 1; ; attempt++) {
        attempts++;
        const requestStart = this.now();
        const record = this.startRecord(call, provider, request, attempts, options);
        let reported: TokenUsage | null = null;
        const live = call.onDelta && this.opts.recorder?.mode === 'full' && !(call.guards ?? []).some((g) => g.output) ? this.liveText(call, record.id) : null;
        const observer: CallObserver = {
          onRequest: (body) => {
            record.request = body;
          },
          onUsage: (usage) => {
            reported = usage;
          },
          // Live text is shown only where the recorded text would be (llm.record: full), redacted as it streams.
          ...(live ? { onDelta: (text: string) => live.push(text) } : {}),
        };
        try {
          const response = await provider.complete(request, signal, observer).finally(() => live?.end());
          const done: LlmCallRecord = {
            ...record,
            latencyMs: this.now() - requestStart,
            responseModel: response.model,
            response: {
              text: response.content,
              toolCalls: (response.toolCalls ?? []).map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
              finishReason: response.finishReason ?? null,
            },
            usage: response.usage,
            overOutputCap: this.outputCap.check(provider.name, request.model, request.maxOutputTokens, response.usage),
          };
          return { provider, response, providerLatencyMs: this.now() - requestStart, attempts, record: done };
        } catch (err) {
          const usage = reported as TokenUsage | null;
          const failed = signal.aborted ? aborted(signal) : err;
          this.opts.recorder?.call({
            ...record,
            latencyMs: this.now() - requestStart,
            usage,
            overOutputCap: usage !== null && this.outputCap.check(provider.name, request.model, request.maxOutputTokens, usage),
            cost: usage ? this.opts.pricing.cost(request.model, usage) : null,
            error: describe(failed),
          });
          if (signal.aborted) throw new AbortedCall(aborted(signal), provider, usage, request.model);
          if (!isRetryable(err) || attempt > retries) {
            failures.push({ provider: provider.name, reason: describe(err) });
            break;
          }
          const delayMs = retryDelay(attempt, err, this.random);
          watch?.retried(provider.name, retryReasonOf(err), delayMs);
          await this.sleep(delayMs, signal);
        }
      }
    }
    const names = failures.map((f) => f.provider).join(', ');
    const reasons = failures.length === 1 ? failures[0]!.reason : failures.map((f) => `${f.provider}: ${f.reason}`).join('; ');
    throw Errors.LLM_REQUEST_FAILED(names, reasons);
  }

  /** The live deltas of one attempt, through privacy.redact's streaming redactor. */
  private liveText(call: CallContext, callId: string): { push(text: string): void; end(): void } {
    const emit = (text: string) => call.onDelta!(callId, text);
    return (this.opts.redactor ?? Redactor.NONE).stream(emit);
  }

  private startRecord(
    call: CallContext,
    provider: LlmProvider,
    request: CompletionRequest,
    attempt: number,
    options: CallOptions & { requestHash: string },
  ): { -readonly [K in keyof LlmCallRecord]: LlmCallRecord[K] } {
    return {
      id: newId(),
      threadId: call.threadId,
      messageId: call.messageId,
      agent: call.agent,
      provider: provider.name,
      model: request.model,
      responseModel: null,
      attempt,
      repair: options.repair ?? false,
      startedAt: Date.now(),
      latencyMs: 0,
      request: null,
      tools: (request.tools ?? []).map((t) => t.name),
      response: null,
      usage: null,
      maxOutputTokens: request.maxOutputTokens,
      overOutputCap: false,
      cost: null,
      error: null,
      requestHash: options.requestHash,
    };
  }

  /** Records the successful call, one usage event, then the budget settles (which may send threshold warnings). */
  private async account(s: Success, askedModel: string, reservation: Reservation, call: CallContext, totalLatencyMs: number): Promise<CompletionResult> {
    const { response, provider } = s;
    const cost = await this.usageEvent(call, provider, response.model, askedModel, response.usage, s.providerLatencyMs, totalLatencyMs, reservation);
    this.opts.recorder?.call({ ...s.record, cost });
    return {
      ...response,
      toolCalls: response.toolCalls ?? [],
      finishReason: response.finishReason ?? null,
      provider: provider.name,
      providerLatencyMs: s.providerLatencyMs,
      totalLatencyMs,
      attempts: s.attempts,
      cost,
      callId: s.record.id,
      overOutputCap: s.record.overOutputCap,
    };
  }

  /** Publishes one usage event and settles the reservation with `usage`; returns the cost. */
  private async usageEvent(
    call: CallContext,
    provider: LlmProvider,
    model: string,
    askedModel: string,
    usage: TokenUsage,
    providerLatencyMs: number,
    totalLatencyMs: number,
    reservation: Reservation,
  ): Promise<number | null> {
    // The reported model is often a dated variant of the one asked for; price by either.
    const cost = this.opts.pricing.cost(model, usage) ?? this.opts.pricing.cost(askedModel, usage);
    const event: UsageEvent = {
      id: newId(),
      timestamp: Date.now(),
      threadId: call.threadId,
      agentId: call.agent,
      messageId: call.messageId,
      model,
      provider: provider.name,
      ...usage,
      providerLatencyMs,
      totalLatencyMs,
      cost,
      metadata: call.metadata,
    };
    // Record first, so the usage event is attached to the delivery before any threshold
    // warning (which settle may emit) is sent.
    try {
      this.opts.tracker.record(event);
    } finally {
      // The tokens were spent whatever happened to the record: the budget must know.
      await this.opts.budgets.settle(reservation, usage, call.agent);
    }
    return cost;
  }
}

function tripText(trip: GuardTrip): string {
  return `guardrail: ${trip.guard} (${trip.stage}): ${trip.reason}`;
}

function aborted(signal: AbortSignal): OrganismError {
  return Errors.ABORTED(String(signal.reason ?? 'aborted'));
}

/** The reason part of LLM_REQUEST_FAILED: catalogue texts as they are, anything else by message. */
function describe(err: unknown): string {
  if (err instanceof OrganismError) return err.detail;
  if (err instanceof Error) return err.message;
  return String(err);
}
