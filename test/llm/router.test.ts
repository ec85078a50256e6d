import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { abortableSleep } from '../../src/llm/retry.js';
import type { CompletionRequest, LlmProvider, ProviderResponse } from '../../src/llm/types.js';
import { call, makeRouter, providerConfig, rejection, request, track, until, type TestRouter } from './helpers.js';
import { anthropicOk, startAnthropicServer } from './servers/anthropic-server.js';
import { openAiError, openAiOk, startOpenAiServer } from './servers/openai-server.js';
import { startScriptedServer } from './servers/scripted-server.js';

/** A provider under the test's control: `answer` runs on each call (it may look at the router's state). */
function fakeProvider(
  name: string,
  answer: (req: CompletionRequest, signal: AbortSignal) => Promise<ProviderResponse> | ProviderResponse,
  over: Partial<LlmProvider> = {},
): LlmProvider & { calls: CompletionRequest[] } {
  const calls: CompletionRequest[] = [];
  return {
    name,
    type: 'openai',
    priority: 0,
    maxRetries: 2,
    serves: () => true,
    complete: async (req, signal) => {
      calls.push(req);
      return answer(req, signal);
    },
    calls,
    ...over,
  };
}

const usage = (promptTokens: number, completionTokens: number) => ({
  promptTokens,
  completionTokens,
  totalTokens: promptTokens + completionTokens,
  cacheReadTokens: 3,
  cacheWriteTokens: null,
  reasoningTokens: 2,
});

describe('retries', () => {
  it('retries 429 and 503 honouring Retry-After (seconds and HTTP-date), then succeeds; one usage event', async () => {
    const inThirty = new Date(Date.now() + 30_000).toUTCString();
    const s = await track(
      startOpenAiServer({
        replies: [
          { status: 429, body: openAiError('Rate limit reached', 'requests', 'rate_limit_exceeded'), headers: { 'retry-after': '7' } },
          { status: 503, body: openAiError('overloaded'), headers: { 'retry-after': inThirty } },
          { status: 503, body: openAiError('overloaded') },
          { body: openAiOk('ok') },
        ],
      }),
    );
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, maxRetries: 3 })]);
    const result = await t.router.complete(request('gpt-4o'), call());
    expect(result.attempts).toBe(4);
    expect(t.sleeps[0]).toBe(7000);
    expect(t.sleeps[1]).toBeGreaterThan(20_000); // the date, about 30 s away (not the 1 s backoff)
    expect(t.sleeps[1]).toBeLessThanOrEqual(30_000);
    expect(t.sleeps[2]).toBe(2000); // third retry without Retry-After: jitter 0.5 of 4 s
    expect(t.events).toHaveLength(1);
  });

  it('gives up after max_retries and names the provider and the last reason', async () => {
    const s = await track(startOpenAiServer({ replies: [{ status: 500, body: openAiError('boom') }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, maxRetries: 2 })]);
    const err = await rejection(t.router.complete(request('gpt-4o'), call()));
    expect(s.seen).toHaveLength(3);
    expect(t.sleeps).toEqual([500, 1000]);
    expect(err.message).toBe(Errors.LLM_REQUEST_FAILED('oa', 'HTTP 500: boom').detail);
    expect(t.events).toHaveLength(0);
  });

  it.each([400, 401, 403, 404, 422])('never retries HTTP %s', async (status) => {
    const s = await track(startScriptedServer(() => ({ status, body: openAiError(`status ${status}`, 'invalid_request_error') })));
    const backup = await track(startOpenAiServer({ replies: [{ body: openAiOk('backup') }] }));
    const t = makeRouter([
      providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, maxRetries: 3 }),
      providerConfig({ name: 'backup', type: 'openai', baseUrl: backup.url, priority: 5 }),
    ]);
    // Not retried on the same provider; the next provider is still tried (it may be configured differently).
    expect((await t.router.complete(request('gpt-4o'), call())).provider).toBe('backup');
    expect(s.seen).toHaveLength(1);
    expect(t.sleeps).toEqual([]);
  });

  it('retries network failures (nothing listening), then reports them', async () => {
    const gone = await startScriptedServer(() => ({ body: {} }));
    await gone.close();
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: gone.url, maxRetries: 1 })]);
    const err = await rejection(t.router.complete(request('gpt-4o'), call()));
    expect(t.sleeps).toHaveLength(1);
    expect(err.message).toBe(Errors.LLM_REQUEST_FAILED('oa', Errors.LLM_NETWORK('ECONNREFUSED').detail).detail);
  });

  it('times out a slow provider per its timeout_seconds, retries, and closes each timed-out connection', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('slow'), delayMs: 60_000 }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, timeoutSeconds: 0.5, maxRetries: 1 })]);
    const err = await rejection(t.router.complete(request('gpt-4o'), call()));
    expect(err.message).toBe('LLM request to oa failed: timed out after 0.5 s');
    expect(s.seen).toHaveLength(2);
    await until(() => s.closedEarly === 2, 'the server to see both connections closed');
  });
});

describe('failover', () => {
  it('tries providers by priority (lower first) and fails over once one exhausts its retries', async () => {
    const bad = await track(startOpenAiServer({ replies: [{ status: 500, body: openAiError('boom') }] }));
    const good = await track(startAnthropicServer({ replies: [{ body: anthropicOk('from backup') }] }));
    const unused = await track(startOpenAiServer({ replies: [{ body: openAiOk('never') }] }));
    const t = makeRouter([
      providerConfig({ name: 'last', type: 'openai', baseUrl: unused.url, priority: 9 }),
      providerConfig({ name: 'backup', type: 'anthropic', baseUrl: good.url, priority: 2 }),
      providerConfig({ name: 'primary', type: 'openai', baseUrl: bad.url, priority: 1, maxRetries: 1 }),
    ]);
    const result = await t.router.complete(request('claude-sonnet-4'), call());
    expect(result).toMatchObject({ provider: 'backup', content: 'from backup', attempts: 3 });
    expect(bad.seen).toHaveLength(2);
    expect(unused.seen).toHaveLength(0);
    expect(t.events.map((e) => e.provider)).toEqual(['backup']);
  });

  it('when every provider fails, the error names each with its reason', async () => {
    const a = await track(startOpenAiServer({ replies: [{ status: 500, body: openAiError('boom') }] }));
    const b = await track(startOpenAiServer({ replies: [{ status: 401, body: openAiError('bad key', 'invalid_request_error') }] }));
    const t = makeRouter([
      providerConfig({ name: 'a', type: 'openai', baseUrl: a.url, priority: 1, maxRetries: 0 }),
      providerConfig({ name: 'b', type: 'openai', baseUrl: b.url, priority: 2 }),
    ]);
    const err = await rejection(t.router.complete(request('gpt-4o'), call()));
    expect(err.message).toBe(Errors.LLM_REQUEST_FAILED('a, b', 'a: HTTP 500: boom; b: HTTP 401: bad key').detail);
  });

  it('chooses only providers that serve the model (names or prefixes)', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('x') }] }));
    const other = await track(startOpenAiServer({ replies: [{ body: openAiOk('y') }] }));
    const t = makeRouter([
      providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, models: ['gpt-'], priority: 2 }),
      providerConfig({ name: 'exact', type: 'openai', baseUrl: other.url, models: ['llama3'], priority: 1 }),
    ]);
    const err = await rejection(t.router.complete(request('claude-opus-4'), call()));
    expect(err.message).toBe(Errors.LLM_NO_PROVIDER('claude-opus-4').detail);
    expect((await t.router.complete(request('gpt-4o'), call())).provider).toBe('oa');
    expect((await t.router.complete(request('llama3'), call())).provider).toBe('exact');
    expect(other.seen).toHaveLength(1);
  });
});

describe('budget', () => {
  it('reserves the estimated prompt plus the output limit before the call, then settles the real usage', async () => {
    let reservedDuringCall = -1;
    let t: TestRouter;
    const p = fakeProvider('p', () => {
      reservedDuringCall = t.budgets.get('t1')!.reservedTokens;
      return { content: 'ok', model: 'gpt-4o', usage: usage(30, 7) };
    });
    t = makeRouter([p]);
    // 'be brief' = 2 tokens, 'hello' = 2 tokens, plus 50 output tokens
    await t.router.complete(request('gpt-4o'), call());
    expect(reservedDuringCall).toBe(54);
    expect(t.budgets.get('t1')).toMatchObject({ totalTokens: 37, reservedTokens: 0 });
  });

  it('a call that could exceed the budget is refused and never reaches the server', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('x') }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })], { budget: 15 });
    const err = await rejection(t.router.complete(request('gpt-4o'), call()));
    expect(Errors.BUDGET_EXHAUSTED.is(err)).toBe(true);
    expect(s.seen).toHaveLength(0);
    expect(t.budgets.get('t1')).toMatchObject({ totalTokens: 0, reservedTokens: 0 });
    expect(t.events).toHaveLength(0);
  });

  it('near the ceiling, lowers the output limit to what fits instead of refusing', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('short', { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 }) }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })], { budget: 40 });
    await t.router.complete(request('gpt-4o'), call()); // prompt estimate 4 tokens, 50 asked, 36 fit
    expect(s.seen[0]!.body['max_tokens']).toBe(36);
    expect(t.budgets.get('t1')).toMatchObject({ totalTokens: 8, reservedTokens: 0 });
  });

  it('cancels the reservation when the call fails', async () => {
    const s = await track(startOpenAiServer({ replies: [{ status: 400, body: openAiError('bad request', 'invalid_request_error') }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    await rejection(t.router.complete(request('gpt-4o'), call()));
    expect(t.budgets.get('t1')).toMatchObject({ totalTokens: 0, reservedTokens: 0 });
  });

  it('settles the budget even when recording the usage throws, and never retries that as a provider failure', async () => {
    const p = fakeProvider('p', () => ({ content: 'ok', model: 'gpt-4o', usage: usage(10, 5) }));
    const t = makeRouter([p]);
    t.tracker.record = () => {
      throw new Error('tracker broke');
    };
    const err = await rejection(t.router.complete(request('gpt-4o'), call()));
    expect(err.message).toBe('tracker broke');
    expect(p.calls).toHaveLength(1);
    expect(t.budgets.get('t1')).toMatchObject({ totalTokens: 15, reservedTokens: 0 });
  });
});

describe('usage events', () => {
  it('records one event with the real usage, cost, latencies (provider vs total incl. retries and waits), metadata and message id', async () => {
    let t: TestRouter;
    let n = 0;
    // Each request takes 100 ms on the fake clock; the first two fail in a retryable way.
    const retryable = fakeProvider('p', () => {
      t.clock += 100;
      if (++n < 3) throw Errors.LLM_NETWORK('ECONNRESET');
      return { content: 'ok', model: 'gpt-4o-2024-08-06', usage: usage(1000, 200) };
    });
    t = makeRouter([retryable], { fakeClock: true, pricing: { 'gpt-4o': { prompt: 2, completion: 10, cacheRead: null, cacheWrite: null } } });
    const result = await t.router.complete(request('gpt-4o'), call(undefined, { messageId: 'msg-9' }));
    expect(t.sleeps).toEqual([500, 1000]);
    expect(t.events).toHaveLength(1);
    const e = t.events[0]!;
    expect(e).toMatchObject({
      threadId: 't1',
      agentId: 'agent-a',
      messageId: 'msg-9',
      model: 'gpt-4o-2024-08-06',
      provider: 'p',
      promptTokens: 1000,
      completionTokens: 200,
      totalTokens: 1200,
      cacheReadTokens: 3,
      cacheWriteTokens: null,
      reasoningTokens: 2,
      providerLatencyMs: 100,
      totalLatencyMs: 300 + 1500,
      metadata: { orgId: 'acme', userId: 'u7' },
    });
    expect(e.cost).toBeCloseTo((1000 * 2 + 200 * 10) / 1e6, 12);
    expect(typeof e.id).toBe('string');
    expect(result).toMatchObject({ cost: e.cost, providerLatencyMs: 100, totalLatencyMs: 1800, attempts: 3, provider: 'p' });
  });

  it('an unpriced model records cost null and counts as unpriced', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('x', {}, 'mystery-1') }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    const result = await t.router.complete(request('mystery-1'), call());
    expect(result.cost).toBeNull();
    expect(t.events[0]!.cost).toBeNull();
    expect(t.tracker.totals()).toMatchObject({ requestCount: 1, unpricedRequests: 1, totalCost: 0 });
  });

  it('prices a dated model name the provider reports by the default table (gpt-4o-mini)', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('x') }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    await t.router.complete(request('gpt-4o-mini'), call());
    expect(t.events[0]!.cost).toBeCloseTo((100 * 0.15 + 20 * 0.6) / 1e6, 12);
  });
});

describe('cancellation', () => {
  it('an abort cancels the in-flight HTTP request: the server sees the connection close', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('too late'), delayMs: 60_000 }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    const controller = new AbortController();
    const pending = t.router.complete(request('gpt-4o'), call(controller.signal));
    await until(() => s.seen.length === 1, 'the request to reach the server');
    controller.abort('killed');
    const err = await rejection(pending);
    expect(err.message).toBe(Errors.ABORTED('killed').detail);
    await until(() => s.closedEarly === 1, 'the server to see the connection close');
    expect(s.seen).toHaveLength(1);
    expect(t.events).toHaveLength(0);
    expect(t.budgets.get('t1')?.reservedTokens).toBe(0);
  });

  it('an abort during a backoff wait stops waiting at once, with no further attempt', async () => {
    const s = await track(startOpenAiServer({ replies: [{ status: 429, body: openAiError('slow down'), headers: { 'retry-after': '50' } }] }));
    const t = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, maxRetries: 5 })], { sleep: abortableSleep });
    const controller = new AbortController();
    const pending = t.router.complete(request('gpt-4o'), call(controller.signal));
    await until(() => s.seen.length === 1, 'the first request');
    controller.abort('killed');
    const err = await rejection(pending); // a 50 s wait would time the test out
    expect(Errors.ABORTED.is(err)).toBe(true);
    expect(s.seen).toHaveLength(1);
    expect(t.budgets.get('t1')?.reservedTokens).toBe(0);
  });

  it('an already aborted call reaches no provider and reserves nothing', async () => {
    const p = fakeProvider('p', () => ({ content: 'x', model: 'm', usage: usage(1, 1) }));
    const t = makeRouter([p]);
    const c = new AbortController();
    c.abort('killed');
    expect(Errors.ABORTED.is(await rejection(t.router.complete(request('gpt-4o'), call(c.signal))))).toBe(true);
    expect(p.calls).toHaveLength(0);
    expect(t.budgets.has('t1')).toBe(false);
  });
});

describe('bound client', () => {
  it('fills in the listener model and output limit, and accounts to the bound thread and agent', async () => {
    const p = fakeProvider('p', () => ({ content: 'x', model: 'gpt-4o', usage: usage(1, 1) }));
    const t = makeRouter([p]);
    const client = t.router.bind(call(undefined, { threadId: 't9', agent: 'writer' }), { model: 'gpt-4o', maxOutputTokens: 123 });
    await client.complete({ messages: [{ role: 'user', content: 'hi' }] });
    await client.complete({ messages: [{ role: 'user', content: 'hi' }], model: 'gpt-4o-mini', maxOutputTokens: 7, system: 'sys' });
    expect(p.calls[0]).toMatchObject({ model: 'gpt-4o', maxOutputTokens: 123, system: '', agent: 'writer', threadId: 't9' });
    expect(p.calls[1]).toMatchObject({ model: 'gpt-4o-mini', maxOutputTokens: 7, system: 'sys' });
    expect(t.events.map((e) => [e.threadId, e.agentId])).toEqual([
      ['t9', 'writer'],
      ['t9', 'writer'],
    ]);
  });

  it('a listener without a model gets LLM_NO_PROVIDER', async () => {
    const t = makeRouter([fakeProvider('p', () => ({ content: 'x', model: 'm', usage: usage(1, 1) }))]);
    const err = await rejection(t.router.bind(call(), { model: null, maxOutputTokens: 10 }).complete({ messages: [] }));
    expect(Errors.LLM_NO_PROVIDER.is(err)).toBe(true);
  });
});
