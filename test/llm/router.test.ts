import { afterEach, describe, expect, it } from 'vitest';
import type { ProviderConfig } from '../../src/config/types.js';
import { Errors } from '../../src/errors/catalogue.js';
import { LlmRouter } from '../../src/llm/router.js';
import { BudgetManager } from '../../src/usage/budgets.js';
import { Pricing } from '../../src/usage/pricing.js';
import { UsageTracker } from '../../src/usage/tracker.js';
import type { UsageEvent } from '../../src/usage/types.js';
import { anthropicError, anthropicOk, openAiError, openAiOk, startProtocolServer } from './protocol-server.js';

const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

async function server(...args: Parameters<typeof startProtocolServer>) {
  const s = await startProtocolServer(...args);
  servers.push(s);
  return s;
}

function provider(over: Partial<ProviderConfig> & Pick<ProviderConfig, 'name' | 'type'>): ProviderConfig {
  return { baseUrl: null, apiKeyEnv: null, models: [], priority: 0, timeoutSeconds: 10, maxRetries: 2, script: {}, ...over };
}

function router(providers: ProviderConfig[], opts: { budget?: number; pricing?: Pricing } = {}) {
  const tracker = new UsageTracker();
  const budgets = new BudgetManager({ defaultMaxTokens: opts.budget ?? 100_000 });
  const events: UsageEvent[] = [];
  tracker.subscribe((e) => events.push(e));
  const sleeps: number[] = [];
  const r = LlmRouter.fromConfig(
    { providers, pricing: {} },
    { pricing: opts.pricing ?? new Pricing(), tracker, budgets, sleep: async (ms) => void sleeps.push(ms), random: () => 0.5 },
  );
  return { router: r, tracker, budgets, events, sleeps };
}

const call = (signal = new AbortController().signal) => ({
  threadId: 't1',
  agent: 'agent-a',
  messageId: 'm1',
  metadata: { orgId: 'acme' },
  signal,
});
const req = (model: string) => ({ model, system: 'be brief', messages: [{ role: 'user' as const, content: 'hello' }], maxOutputTokens: 50 });

describe('OpenAI-compatible provider', () => {
  it('sends the key from its env var and maps usage incl. cached and reasoning tokens', async () => {
    process.env['TEST_OPENAI_KEY'] = 'sk-test-secret-123';
    const s = await server([
      { body: openAiOk('hi there', { prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 7 } }) },
    ]);
    const { router: r, events } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url, apiKeyEnv: 'TEST_OPENAI_KEY' })]);
    const result = await r.complete(req('gpt-4o-mini'), call());
    expect(result.content).toBe('hi there');
    expect(s.seen[0]!.path).toBe('/chat/completions');
    expect(s.seen[0]!.headers['authorization']).toBe('Bearer sk-test-secret-123');
    expect(s.seen[0]!.body).toMatchObject({ model: 'gpt-4o-mini', max_tokens: 50, messages: [{ role: 'system', content: 'be brief' }, { role: 'user', content: 'hello' }] });
    expect(result.usage).toEqual({ promptTokens: 100, completionTokens: 20, totalTokens: 120, cacheReadTokens: 40, cacheWriteTokens: null, reasoningTokens: 7 });
    expect(events).toHaveLength(1);
    const e = events[0]!;
    expect(e).toMatchObject({ threadId: 't1', agentId: 'agent-a', messageId: 'm1', provider: 'oa', model: 'gpt-4o-mini-2024-07-18', metadata: { orgId: 'acme' } });
    // gpt-4o-mini: 0.15 / 0.6 per 1M; cached tokens billed at the prompt price (no cache price set)
    expect(e.cost).toBeCloseTo((100 * 0.15 + 20 * 0.6) / 1e6, 12);
  });

  it('retries 429 honouring Retry-After, then succeeds; the key never appears in errors', async () => {
    process.env['TEST_OPENAI_KEY'] = 'sk-test-secret-123';
    const s = await server([
      { status: 429, body: openAiError('Rate limit reached', 'rate_limit'), headers: { 'retry-after': '7' } },
      { status: 503, body: openAiError('overloaded') },
      { body: openAiOk('ok') },
    ]);
    const { router: r, sleeps, events } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url, apiKeyEnv: 'TEST_OPENAI_KEY' })]);
    const result = await r.complete(req('gpt-4o'), call());
    expect(result.attempts).toBe(3);
    expect(sleeps).toEqual([7000, 1000]); // Retry-After, then jittered backoff (0.5 * 2000)
    expect(events).toHaveLength(1);
    expect(events[0]!.totalLatencyMs).toBeGreaterThanOrEqual(events[0]!.providerLatencyMs);
  });

  it('does not retry a 400 or 401 and reports the provider message without the key', async () => {
    process.env['TEST_OPENAI_KEY'] = 'sk-test-secret-123';
    const s = await server([{ status: 401, body: openAiError('Incorrect API key provided', 'invalid_request_error') }]);
    const { router: r, budgets } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url, apiKeyEnv: 'TEST_OPENAI_KEY' })]);
    const err = await r.complete(req('gpt-4o'), call()).catch((e: unknown) => e);
    expect(s.seen).toHaveLength(1);
    expect(Errors.LLM_REQUEST_FAILED.is(err)).toBe(true);
    expect(String((err as Error).message)).toContain('Incorrect API key provided');
    expect(String((err as Error).message)).not.toContain('sk-test-secret-123');
    expect(budgets.get('t1')?.reservedTokens).toBe(0); // reservation cancelled
  });

  it('works without any key (Ollama, vLLM, LM Studio)', async () => {
    const s = await server([{ body: openAiOk('local') }]);
    const { router: r } = router([provider({ name: 'ollama', type: 'openai', baseUrl: `${s.url}/v1` })]);
    await r.complete(req('llama3'), call());
    expect(s.seen[0]!.path).toBe('/v1/chat/completions');
    expect(s.seen[0]!.headers['authorization']).toBeUndefined();
  });
});

describe('Anthropic provider', () => {
  it('speaks the Messages API and maps cache tokens', async () => {
    process.env['TEST_ANTHROPIC_KEY'] = 'ant-secret';
    const s = await server([{ body: anthropicOk('bonjour', { cache_read_input_tokens: 30, cache_creation_input_tokens: 5 }) }]);
    const { router: r, events } = router([provider({ name: 'an', type: 'anthropic', baseUrl: s.url, apiKeyEnv: 'TEST_ANTHROPIC_KEY' })]);
    const result = await r.complete(req('claude-sonnet-4'), call());
    expect(s.seen[0]!.path).toBe('/v1/messages');
    expect(s.seen[0]!.headers['x-api-key']).toBe('ant-secret');
    expect(s.seen[0]!.headers['anthropic-version']).toBe('2023-06-01');
    expect(s.seen[0]!.body).toMatchObject({ model: 'claude-sonnet-4', system: 'be brief', max_tokens: 50 });
    expect(result.content).toBe('bonjour');
    expect(result.usage).toMatchObject({ promptTokens: 85, completionTokens: 10, cacheReadTokens: 30, cacheWriteTokens: 5 });
    expect(events[0]!.cost).toBeCloseTo((85 * 3 + 10 * 15) / 1e6, 12);
  });

  it('treats 529 overloaded as retryable', async () => {
    const s = await server([{ status: 529, body: anthropicError('overloaded_error', 'Overloaded') }, { body: anthropicOk('fine') }]);
    const { router: r } = router([provider({ name: 'an', type: 'anthropic', baseUrl: s.url })]);
    expect((await r.complete(req('claude-opus-4'), call())).content).toBe('fine');
    expect(s.seen).toHaveLength(2);
  });
});

describe('routing, failover, budgets and cancellation', () => {
  it('fails over by priority after the first provider exhausts its retries', async () => {
    const bad = await server([{ status: 500, body: openAiError('boom') }]);
    const good = await server([{ body: anthropicOk('from backup') }]);
    const { router: r, events } = router([
      provider({ name: 'backup', type: 'anthropic', baseUrl: good.url, priority: 2 }),
      provider({ name: 'primary', type: 'openai', baseUrl: bad.url, priority: 1, maxRetries: 1 }),
    ]);
    const result = await r.complete(req('claude-sonnet-4'), call());
    expect(result.provider).toBe('backup');
    expect(bad.seen).toHaveLength(2);
    expect(events.map((e) => e.provider)).toEqual(['backup']);
  });

  it('chooses only providers that serve the model (names or prefixes)', async () => {
    const s = await server([{ body: openAiOk('x') }]);
    const { router: r } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url, models: ['gpt-'] })]);
    await expect(r.complete(req('claude-opus-4'), call())).rejects.toThrow(Errors.LLM_NO_PROVIDER('claude-opus-4').detail);
    await expect(r.complete(req('gpt-4o'), call())).resolves.toBeDefined();
  });

  it('near the ceiling, lowers the output limit to what fits instead of refusing', async () => {
    const s = await server([{ body: openAiOk('short', { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 }) }]);
    const { router: r, budgets } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url })], { budget: 40 });
    await r.complete(req('gpt-4o'), call()); // prompt estimate 4 tokens, 50 asked, 36 fit
    expect(s.seen[0]!.body['max_tokens']).toBe(36);
    expect(budgets.get('t1')).toMatchObject({ totalTokens: 8, reservedTokens: 0 });
  });

  it('reserves the budget before calling: a call that could exceed it never reaches the provider', async () => {
    const s = await server([{ body: openAiOk('x') }]);
    const { router: r, budgets } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url })], { budget: 15 });
    const err = await r.complete(req('gpt-4o'), call()).catch((e: unknown) => e);
    expect(Errors.BUDGET_EXHAUSTED.is(err)).toBe(true);
    expect(s.seen).toHaveLength(0);
    expect(budgets.get('t1')).toMatchObject({ totalTokens: 0, reservedTokens: 0 });
  });

  it('an abort cancels the in-flight HTTP request promptly', async () => {
    const s = await server([{ body: openAiOk('too late'), delayMs: 30_000 }]);
    const { router: r, events, budgets } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    const controller = new AbortController();
    const pending = r.complete(req('gpt-4o'), call(controller.signal));
    while (s.seen.length === 0) await new Promise((res) => setTimeout(res, 5));
    controller.abort('killed');
    const err = await pending.catch((e: unknown) => e);
    expect(Errors.ABORTED.is(err)).toBe(true);
    while (s.aborted === 0) await new Promise((res) => setTimeout(res, 5));
    expect(s.aborted).toBe(1);
    expect(events).toHaveLength(0);
    expect(budgets.get('t1')?.reservedTokens).toBe(0);
  });

  it('times out a slow provider per its timeout_seconds', async () => {
    const s = await server([{ body: openAiOk('slow'), delayMs: 30_000 }]);
    const { router: r } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url, timeoutSeconds: 0.1, maxRetries: 0 })]);
    await expect(r.complete(req('gpt-4o'), call())).rejects.toThrow(/timed out/);
  });

  it('an unpriced model records cost null and counts as unpriced', async () => {
    const s = await server([{ body: { ...openAiOk('x'), model: 'mystery-1' } }]);
    const { router: r, tracker, events } = router([provider({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    await r.complete(req('mystery-1'), call());
    expect(events[0]!.cost).toBeNull();
    expect(tracker.totals()).toMatchObject({ requestCount: 1, unpricedRequests: 1, totalCost: 0 });
  });
});

describe('mock provider', () => {
  const xml = (fields: string) => `<message from="api">\n<Question>${fields}</Question>\n</message>`;

  it('plays the agent script in turn with field substitution, and counts tokens', async () => {
    const { router: r } = router([
      provider({ name: 'mock', type: 'mock', script: { 'agent-a': ['<reply><A><t>{{text|upper}}</t></A></reply>', 'second {{text}}'] } }),
    ]);
    const first = await r.complete({ ...req('mock-1'), messages: [{ role: 'user', content: xml('<text>a &amp; b</text>') }] }, call());
    expect(first.content).toBe('<reply><A><t>A &amp; B</t></A></reply>');
    expect(first.usage.promptTokens).toBeGreaterThan(0);
    expect(first.usage.completionTokens).toBe(Math.ceil(first.content.length / 4));
    const second = await r.complete(
      { ...req('mock-1'), messages: [{ role: 'user', content: xml('<text>x</text>') }, { role: 'assistant', content: 'earlier' }, { role: 'user', content: xml('<text>y</text>') }] },
      call(),
    );
    expect(second.content).toBe('second y');
  });

  it('derives a reply from the input when the agent has no script', async () => {
    const { router: r } = router([provider({ name: 'mock', type: 'mock' })]);
    const a = await r.complete({ ...req('mock-1'), messages: [{ role: 'user', content: xml('<text>hello</text>') }] }, call());
    const b = await r.complete({ ...req('mock-1'), messages: [{ role: 'user', content: xml('<text>hello</text>') }] }, call());
    expect(a.content).toBe(b.content);
    expect(a.content).toContain('hello');
    expect(a.content).toContain('<done/>');
  });
});
