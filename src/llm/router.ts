import type { OrganismConfig } from '../config/types.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import type { BudgetManager } from '../usage/budgets.js';
import type { Pricing } from '../usage/pricing.js';
import type { UsageTracker } from '../usage/tracker.js';
import type { UsageEvent } from '../usage/types.js';
import { newId } from '../util/ids.js';
import { ProviderHttpError } from './http-error.js';
import { createProvider } from './providers/index.js';
import { estimateTokens } from './providers/mock.js';
import { abortableSleep, isRetryable, retryDelay, type Sleep } from './retry.js';
import type { BoundLlmClient, CompletionRequest, CompletionResult, LlmProvider } from './types.js';

/** Below this many output tokens a call is not worth making: it is refused instead. */
export const MIN_OUTPUT_TOKENS = 16;

/** Who makes a call: the usage and budget are accounted to this thread and agent. */
export interface CallContext {
  readonly threadId: string;
  readonly agent: string;
  readonly messageId: string | null;
  readonly metadata: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
}

export interface RouterDeps {
  readonly pricing: Pricing;
  readonly tracker: UsageTracker;
  readonly budgets: BudgetManager;
  readonly sleep?: Sleep;
  readonly random?: () => number;
  readonly now?: () => number;
}

/** Max retries per provider, keyed by provider name (from its config). */
type RetryPolicy = (provider: LlmProvider) => number;

/**
 * Routes LLM calls: providers that serve the model, by priority; retries with backoff on
 * retryable failures, then failover to the next provider. Every call reserves thread budget
 * first (a call that could overrun the ceiling never reaches a provider), then settles the
 * real usage and records one usage event with its cost.
 */
export class LlmRouter {
  private readonly providers: LlmProvider[];
  private readonly sleep: Sleep;
  private readonly random: () => number;
  private readonly now: () => number;

  constructor(
    providers: readonly LlmProvider[],
    private readonly deps: RouterDeps,
    private readonly maxRetries: RetryPolicy = () => 3,
  ) {
    this.providers = [...providers].sort((a, b) => a.priority - b.priority);
    this.sleep = deps.sleep ?? abortableSleep;
    this.random = deps.random ?? Math.random;
    this.now = deps.now ?? (() => performance.now());
  }

  static fromConfig(llm: OrganismConfig['llm'], deps: RouterDeps): LlmRouter {
    const retries = new Map(llm.providers.map((p) => [p.name, p.maxRetries]));
    return new LlmRouter(llm.providers.map(createProvider), deps, (p) => retries.get(p.name) ?? 3);
  }

  async complete(request: CompletionRequest, call: CallContext): Promise<CompletionResult> {
    const candidates = this.providers.filter((p) => p.serves(request.model));
    if (candidates.length === 0) throw Errors.LLM_NO_PROVIDER(request.model);
    if (call.signal.aborted) throw Errors.ABORTED(String(call.signal.reason ?? 'aborted'));

    // A thread near its ceiling gets a call with a smaller output limit rather than a refusal;
    // only when not even a useful answer fits is the call refused (BUDGET_EXHAUSTED).
    const promptEstimate = estimateTokens(request.system) + request.messages.reduce((n, m) => n + estimateTokens(m.content), 0);
    const room = this.deps.budgets.headroom(call.threadId) - promptEstimate;
    if (room >= MIN_OUTPUT_TOKENS && room < request.maxOutputTokens) request = { ...request, maxOutputTokens: room };
    const reservation = this.deps.budgets.reserve(call.threadId, promptEstimate + request.maxOutputTokens);
    const started = this.now();
    let attempts = 0;
    let lastError: unknown = null;
    try {
      for (const provider of candidates) {
        const retries = this.maxRetries(provider);
        for (let attempt = 1; attempt <= retries + 1; attempt++) {
          attempts++;
          const requestStart = this.now();
          try {
            const response = await provider.complete({ ...request, agent: call.agent, threadId: call.threadId }, call.signal);
            const providerLatencyMs = this.now() - requestStart;
            const totalLatencyMs = this.now() - started;
            const cost = this.deps.pricing.cost(response.model, response.usage) ?? this.deps.pricing.cost(request.model, response.usage);
            const event: UsageEvent = {
              id: newId(),
              timestamp: Date.now(),
              threadId: call.threadId,
              agentId: call.agent,
              messageId: call.messageId,
              model: response.model,
              provider: provider.name,
              ...response.usage,
              providerLatencyMs,
              totalLatencyMs,
              cost,
              metadata: call.metadata,
            };
            // Record first, so the usage event is attached to the delivery before any
            // threshold warning (which the settle below may emit) is sent.
            this.deps.tracker.record(event);
            this.deps.budgets.settle(reservation, response.usage, call.agent);
            return { ...response, provider: provider.name, providerLatencyMs, totalLatencyMs, attempts, cost };
          } catch (err) {
            if (call.signal.aborted) throw Errors.ABORTED(String(call.signal.reason ?? 'aborted'));
            lastError = err;
            if (!isRetryable(err) || attempt > retries) break;
            await this.sleep(retryDelay(attempt, err, this.random), call.signal);
          }
        }
      }
      throw Errors.LLM_REQUEST_FAILED(candidates.map((p) => p.name).join(', '), describe(lastError));
    } catch (err) {
      this.deps.budgets.cancel(reservation);
      throw err;
    }
  }

  bind(call: CallContext, defaults: { model: string | null; maxOutputTokens: number }): BoundLlmClient {
    return {
      complete: (req) => {
        const model = req.model ?? defaults.model;
        if (!model) return Promise.reject(Errors.LLM_NO_PROVIDER('(none: the listener has no model)'));
        return this.complete(
          { model, system: req.system ?? '', messages: req.messages, maxOutputTokens: req.maxOutputTokens ?? defaults.maxOutputTokens },
          call,
        );
      },
    };
  }
}

function describe(err: unknown): string {
  if (err instanceof ProviderHttpError) return `HTTP ${err.status}: ${err.providerMessage}`;
  if (err instanceof OrganismError) return err.detail;
  if (err instanceof Error) return err.name === 'TimeoutError' ? 'timed out' : err.message;
  return String(err);
}
