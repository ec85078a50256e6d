import { afterEach } from 'vitest';
import type { ModelPrice, ProviderConfig } from '../../src/config/types.js';
import { LlmRouter, type CallContext } from '../../src/llm/router.js';
import type { Sleep } from '../../src/llm/retry.js';
import type { CompletionRequest, LlmProvider } from '../../src/llm/types.js';
import { BudgetManager, localBudgetLedger } from '../../src/usage/budgets.js';
import { Pricing } from '../../src/usage/pricing.js';
import { UsageTracker } from '../../src/usage/tracker.js';
import type { UsageEvent } from '../../src/usage/types.js';
import type { ScriptedServer } from './servers/scripted-server.js';

/** Closes every server a test started, after it. */
const open: ScriptedServer[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});
export async function track(server: Promise<ScriptedServer>): Promise<ScriptedServer> {
  const s = await server;
  open.push(s);
  return s;
}

export function providerConfig(over: Partial<ProviderConfig> & Pick<ProviderConfig, 'name' | 'type'>): ProviderConfig {
  return { baseUrl: null, apiKeyEnv: null, models: [], priority: 0, timeoutSeconds: 10, maxRetries: 2, script: {}, ...over };
}

export interface TestRouter {
  router: LlmRouter;
  readonly tracker: UsageTracker;
  readonly budgets: BudgetManager;
  /** Every usage event the tracker published. */
  readonly events: UsageEvent[];
  /** Every backoff delay the router asked for. */
  readonly sleeps: number[];
  /** The fake clock (ms); sleeping advances it. */
  clock: number;
}

/**
 * A router over the given providers with a fake sleep that records delays (and advances a fake
 * clock) instead of waiting, and jitter fixed at 0.5.
 */
export function makeRouter(
  providers: ReadonlyArray<ProviderConfig | LlmProvider>,
  opts: { budget?: number; pricing?: Record<string, ModelPrice>; sleep?: Sleep; fakeClock?: boolean } = {},
): TestRouter {
  const tracker = new UsageTracker();
  const budgets = new BudgetManager({ defaultMaxTokens: opts.budget ?? 100_000 });
  const t: TestRouter = { router: null as unknown as LlmRouter, tracker, budgets, events: [], sleeps: [], clock: 0 };
  tracker.subscribe((e) => t.events.push(e));
  const sleep: Sleep =
    opts.sleep ??
    (async (ms) => {
      t.sleeps.push(ms);
      t.clock += ms;
    });
  const deps = {
    pricing: new Pricing(opts.pricing ?? {}),
    tracker,
    budgets: localBudgetLedger(budgets),
    sleep,
    random: () => 0.5,
    ...(opts.fakeClock ? { now: () => t.clock } : {}),
  };
  const configs = providers.filter((p): p is ProviderConfig => 'script' in p);
  const ready = providers.filter((p): p is LlmProvider => !('script' in p));
  t.router = ready.length > 0 ? new LlmRouter({ ...deps, providers: ready }) : LlmRouter.fromConfig({ providers: configs, pricing: {} }, deps);
  return t;
}

export const call = (signal: AbortSignal = new AbortController().signal, over: Partial<CallContext> = {}): CallContext => ({
  threadId: 't1',
  agent: 'agent-a',
  messageId: 'm1',
  metadata: { orgId: 'acme', userId: 'u7' },
  signal,
  ...over,
});

export const request = (model: string, over: Partial<CompletionRequest> = {}): CompletionRequest => ({
  model,
  system: 'be brief',
  messages: [{ role: 'user', content: 'hello' }],
  maxOutputTokens: 50,
  ...over,
});

/** Polls until `check` holds (generous limit: the machine may be loaded). */
export async function until(check: () => boolean, what: string, limitMs = 10_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** The rejection of `p` (fails the test if it resolves). */
export async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}
