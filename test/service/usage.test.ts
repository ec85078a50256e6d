import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, organismYaml, probe, startService, STORAGE_KINDS, type Service, type StorageKind } from './fixture.js';

describe.each<StorageKind>(STORAGE_KINDS)('usage with %s storage', (kind) => {
  let svc: Service;
  let threadId: string;

  beforeAll(async () => {
    svc = await startService({ storage: kind });
    // The shouter is paused so the thread stays active (a budget is released when its thread ends).
    await svc.request('POST', '/api/v1/agents/shouter/pause');
    const res = await svc.request('POST', '/api/v1/inject', {
      body: { to: 'greeter', payload: { Greeting: { name: 'Ada' } }, metadata: { orgId: 'acme', userId: 'u-1' } },
    });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    threadId = res.body.threadId;
    await eventually(async () => (await svc.request('GET', '/api/v1/agents/shouter')).body.queueDepth === 1 || null, 'greeter to message the shouter');
  });
  afterAll(async () => {
    await svc?.close();
  });

  describe('live usage and budgets', () => {
    it('GET /usage reports totals, per agent, per model and threads with a budget', async () => {
      const res = await svc.request('GET', '/api/v1/usage');
      expect(res.status).toBe(200);
      const { usage } = res.body;
      expect(usage.totals.requestCount).toBe(1);
      expect(usage.totals.totalTokens).toBeGreaterThan(0);
      expect(usage.totals.totalTokens).toBe(usage.totals.promptTokens + usage.totals.completionTokens);
      expect(usage.totals.totalCost).toBeGreaterThan(0);
      expect(usage.byAgent).toEqual([expect.objectContaining({ agentId: 'greeter', requestCount: 1 })]);
      expect(usage.byModel).toHaveLength(1);
      expect(usage.activeThreads).toBe(1);
    });

    it('GET /usage/threads lists budgets with the default ceiling', async () => {
      const res = await svc.request('GET', '/api/v1/usage/threads');
      expect(res.body).toMatchObject({ count: 1, defaultMaxTokens: 50000 });
      expect(res.body.threads[0]).toMatchObject({ threadId, maxTokens: 50000, isExhausted: false });
    });

    it('GET /usage/threads/{id} computes percentUsed and remaining', async () => {
      const res = await svc.request('GET', `/api/v1/usage/threads/${threadId}`);
      expect(res.status).toBe(200);
      const b = res.body;
      expect(b.totalTokens).toBe(b.promptTokens + b.completionTokens);
      expect(b.remaining).toBe(50000 - b.totalTokens);
      expect(b.percentUsed).toBe(Math.round((b.totalTokens / 50000) * 1000) / 10);
    });

    it('PUT /usage/threads/{id} changes the ceiling (snake_case accepted)', async () => {
      const res = await svc.request('PUT', `/api/v1/usage/threads/${threadId}`, { body: { max_tokens: 80000 } });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ threadId, maxTokens: 80000 });
      expect((await svc.request('GET', `/api/v1/usage/threads/${threadId}`)).body.maxTokens).toBe(80000);
      for (const maxTokens of [-1, 0]) {
        const bad = await svc.request('PUT', `/api/v1/usage/threads/${threadId}`, { body: { maxTokens } });
        expect(bad.status).toBe(422);
        expect(bad.body.detail).toBe('body.maxTokens must be >= 1');
      }
    });

    it('PUT /usage/threads/{id} below what the thread used is 422 saying the least ceiling to set', async () => {
      const used = (await svc.request('GET', `/api/v1/usage/threads/${threadId}`)).body.totalTokens as number;
      expect(used).toBeGreaterThan(1);
      const res = await svc.request('PUT', `/api/v1/usage/threads/${threadId}`, { body: { maxTokens: used - 1 } });
      expect(res.status).toBe(422);
      expect(res.body).toMatchObject({ code: 'BUDGET_BELOW_USAGE' });
      expect(res.body.detail).toContain(`set maxTokens to at least ${used}`);
      const exact = await svc.request('PUT', `/api/v1/usage/threads/${threadId}`, { body: { maxTokens: used } });
      expect(exact.body).toMatchObject({ maxTokens: used, remaining: 0, isExhausted: true });
      await svc.request('PUT', `/api/v1/usage/threads/${threadId}`, { body: { maxTokens: 80000 } });
    });

    it('GET /usage/threads/{unknown} -> 404 without creating a budget', async () => {
      const res = await svc.request('GET', '/api/v1/usage/threads/no-budget');
      expect(res.status).toBe(404);
      expect(res.body.detail).toBe('No budget found for thread: no-budget');
      expect((await svc.request('GET', '/api/v1/usage')).body.usage.activeThreads).toBe(1);
    });

    it('per agent and per model, zeros when nothing is recorded', async () => {
      const greeter = await svc.request('GET', '/api/v1/usage/agents/greeter');
      expect(greeter.body).toMatchObject({ agentId: 'greeter', requestCount: 1 });
      const model = (await svc.request('GET', '/api/v1/usage')).body.usage.byModel[0].model;
      expect((await svc.request('GET', `/api/v1/usage/models/${model}`)).body.requestCount).toBe(1);
      const zeros = { totalTokens: 0, promptTokens: 0, completionTokens: 0, requestCount: 0, totalCost: 0, unpricedRequests: 0 };
      expect((await svc.request('GET', '/api/v1/usage/agents/nobody')).body).toEqual({ agentId: 'nobody', ...zeros });
      expect((await svc.request('GET', '/api/v1/usage/models/no-model')).body).toEqual({ model: 'no-model', ...zeros });
    });
  });

  describe('persisted usage', () => {
    it('history with filters and a total that honours them', async () => {
      const all = await eventually(async () => {
        const r = await svc.request('GET', '/api/v1/usage/history');
        return r.body.total >= 1 ? r.body : null;
      }, 'usage event to persist');
      expect(all).toMatchObject({ count: 1, total: 1, offset: 0, limit: 100 });
      expect(all.events[0]).toMatchObject({ threadId, agentId: 'greeter', metadata: { orgId: 'acme', userId: 'u-1' } });
      expect(all.events[0].timestamp).toMatch(/Z$/);
      const acme = await svc.request('GET', '/api/v1/usage/history?org_id=acme&agent_id=greeter');
      expect(acme.body.total).toBe(1);
      const other = await svc.request('GET', '/api/v1/usage/history?orgId=other');
      expect(other.body).toMatchObject({ total: 0, events: [] });
      const future = await svc.request('GET', '/api/v1/usage/history?startTime=2999-01-01T00:00:00Z');
      expect(future.body.total).toBe(0);
    });

    it("history by thread: only that thread's LLM calls (thread_id accepted)", async () => {
      await eventually(async () => ((await svc.request('GET', '/api/v1/usage/history')).body.total >= 1 ? true : null), 'usage event to persist');
      const mine = await svc.request('GET', `/api/v1/usage/history?threadId=${threadId}`);
      expect(mine.body.total).toBe(1);
      expect(mine.body.events[0].threadId).toBe(threadId);
      expect((await svc.request('GET', `/api/v1/usage/history?thread_id=${threadId}`)).body.total).toBe(1);
      expect((await svc.request('GET', '/api/v1/usage/history?threadId=no-such-thread')).body).toMatchObject({ total: 0, events: [] });
    });

    it.each([
      ['start_time=yesterday', 'startTime must be an ISO 8601 date or time (e.g. 2025-01-31T12:00:00Z), not: "yesterday"'],
      ['endTime=2025-01-31T12:00:00', 'endTime must be an ISO 8601 date or time (e.g. 2025-01-31T12:00:00Z), not: "2025-01-31T12:00:00"'],
      ['startTime=2025-02-01&endTime=2025-01-01', 'startTime (2025-02-01) must not be after endTime (2025-01-01)'],
    ])('bad times -> 422 (%s)', async (query, detail) => {
      for (const route of ['history', 'billing', 'daily']) {
        const res = await svc.request('GET', `/api/v1/usage/${route}?${query}`);
        expect(res.status).toBe(422);
        expect(res.body.detail).toBe(detail);
      }
    });

    it('history limit is 1..1000', async () => {
      expect((await svc.request('GET', '/api/v1/usage/history?limit=1001')).body.detail).toBe('limit must be <= 1000');
      expect((await svc.request('GET', '/api/v1/usage/history?limit=1000')).status).toBe(200);
    });

    it('billing summary by model, agent and organization', async () => {
      const res = await svc.request('GET', '/api/v1/usage/billing?org_id=acme&start_time=2000-01-01');
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ orgId: 'acme', startTime: '2000-01-01T00:00:00.000Z', endTime: null, requestCount: 1 });
      expect(res.body.byAgent.greeter.requestCount).toBe(1);
      expect(Object.keys(res.body.byModel)).toHaveLength(1);
      expect(res.body.byOrg.acme.totalTokens).toBe(res.body.totalTokens);
    });

    it('daily usage per UTC day, zero-filled', async () => {
      const today = new Date().toISOString().slice(0, 10);
      const res = await svc.request('GET', '/api/v1/usage/daily');
      expect(res.status).toBe(200);
      expect(res.body.count).toBe(res.body.days.length);
      expect(res.body.days.find((d: { date: string }) => d.date === today)).toMatchObject({ requestCount: 1 });
      expect(res.body.days.filter((d: { requestCount: number }) => d.requestCount === 0).length).toBe(res.body.count - 1);
    });

    it('POST /usage/reset clears live usage only; the thread goes on', async () => {
      const res = await svc.request('POST', '/api/v1/usage/reset');
      expect(res.body).toEqual({ success: true, message: 'Usage tracking reset' });
      expect((await svc.request('GET', '/api/v1/usage')).body.usage.totals.requestCount).toBe(0);
      expect((await svc.request('GET', '/api/v1/usage/history')).body.total).toBe(1);
      await svc.request('POST', '/api/v1/agents/shouter/resume');
      await eventually(() => probe().calls.find((c) => c.threadId === threadId && c.listener === 'shouter'), 'shouter to announce');
      expect(probe().calls.find((c) => c.threadId === threadId)!.text).toBe('Hello, Ada!');
    });
  });
});

describe.each<StorageKind>(STORAGE_KINDS)("a thread's budget and usage over its life (%s storage)", (kind) => {
  let svc: Service;
  beforeAll(async () => {
    svc = await startService({ storage: kind });
  });
  afterAll(async () => {
    await svc?.close();
  });
  const inject = (threadId: string) => svc.request('POST', '/api/v1/inject', { body: { to: 'greeter', threadId, payload: { Greeting: { name: 'Ada' } } } });
  const finished = (threadId: string) =>
    eventually(async () => {
      const t = await svc.request('GET', `/api/v1/threads/${threadId}`);
      return t.status === 200 && t.body.status !== 'active' ? t.body : null;
    }, `thread ${threadId} to finish`);

  it('a ceiling set before the thread starts is the one it runs under', async () => {
    const early = await svc.request('PUT', '/api/v1/usage/threads/planned-tight', { body: { maxTokens: 1 } });
    expect(early.status).toBe(200);
    expect(early.body).toMatchObject({ threadId: 'planned-tight', maxTokens: 1, totalTokens: 0, remaining: 1, active: true });
    expect((await inject('planned-tight')).status).toBe(200);
    const thread = await finished('planned-tight');
    expect(thread.status).toBe('error');
    const failed = await svc.request('GET', '/api/v1/journal?state=FAILED');
    expect(failed.body.entries.find((e: { threadId: string }) => e.threadId === 'planned-tight')).toMatchObject({ failureReason: 'budget_exhausted' });
  });

  it('after a thread ends its budget is kept: shown finished, not counted live, its ceiling still settable for a later inject', async () => {
    expect((await svc.request('PUT', '/api/v1/usage/threads/planned-roomy', { body: { maxTokens: 12345 } })).status).toBe(200);
    expect((await inject('planned-roomy')).status).toBe(200);
    const thread = await finished('planned-roomy');
    expect(thread.status).toBe('completed');
    expect(thread.usage.requestCount).toBe(1);
    expect(thread.usage.totalTokens).toBeGreaterThan(0);
    expect(thread.usage.totalTokens).toBe(thread.usage.promptTokens + thread.usage.completionTokens);
    const models = Object.values(thread.usage.byModel) as Array<{ totalTokens: number; requestCount: number }>;
    expect(models).toHaveLength(1);
    expect(models[0]).toMatchObject({ totalTokens: thread.usage.totalTokens, requestCount: 1 });

    const budget = await svc.request('GET', '/api/v1/usage/threads/planned-roomy');
    expect(budget.status).toBe(200);
    expect(budget.body).toMatchObject({ threadId: 'planned-roomy', maxTokens: 12345, totalTokens: thread.usage.totalTokens, reservedTokens: 0, active: false });
    // Live budgets only in the default list; ?state=finished and ?state=all show it.
    const ids = async (query: string) => (await svc.request('GET', `/api/v1/usage/threads${query}`)).body.threads.map((t: { threadId: string }) => t.threadId);
    await eventually(async () => !(await ids('')).includes('planned-roomy') || null, 'the budget to be finished everywhere');
    expect(await ids('?state=live')).not.toContain('planned-roomy');
    expect(await ids('?state=finished')).toContain('planned-roomy');
    expect(await ids('?state=all')).toContain('planned-roomy');
    const raised = await svc.request('PUT', '/api/v1/usage/threads/planned-roomy', { body: { maxTokens: 99999 } });
    expect(raised.status).toBe(200);
    expect(raised.body).toMatchObject({ maxTokens: 99999, totalTokens: thread.usage.totalTokens, active: false });
    expect((await svc.request('GET', '/api/v1/usage/threads/planned-roomy')).body).toMatchObject({ maxTokens: 99999, active: false });
  });

  it("a killed thread's budget is kept and shown, but its ceiling can no longer change (the thread takes no more messages)", async () => {
    await svc.request('POST', '/api/v1/agents/shouter/pause');
    try {
      expect((await inject('to-kill')).status).toBe(200);
      await eventually(async () => (await svc.request('GET', '/api/v1/usage/threads/to-kill')).body.totalTokens > 0 || null, 'the greeter to spend');
      expect((await svc.request('POST', '/api/v1/threads/to-kill/kill')).status).toBe(200);
    } finally {
      await svc.request('POST', '/api/v1/agents/shouter/resume');
    }
    await eventually(async () => (await svc.request('GET', '/api/v1/usage/threads/to-kill')).body.active === false || null, 'the budget to be finished');
    const late = await svc.request('PUT', '/api/v1/usage/threads/to-kill', { body: { maxTokens: 99999 } });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ code: 'BUDGET_THREAD_FINISHED', detail: 'Thread to-kill has finished (killed); its budget can no longer change' });
  });

  it('PUT for a thread that does not exist yet creates its budget (200), which its first inject runs under', async () => {
    const early = await svc.request('PUT', '/api/v1/usage/threads/not-yet', { body: { maxTokens: 4321 } });
    expect(early.status).toBe(200);
    expect(early.body).toMatchObject({ threadId: 'not-yet', maxTokens: 4321, totalTokens: 0, remaining: 4321, reservedTokens: 0, active: true });
    expect((await svc.request('GET', '/api/v1/threads/not-yet')).status).toBe(404);
    expect((await inject('not-yet')).status).toBe(200);
    const thread = await finished('not-yet');
    expect(thread.status).toBe('completed');
    expect((await svc.request('GET', '/api/v1/usage/threads/not-yet')).body).toMatchObject({ maxTokens: 4321, totalTokens: thread.usage.totalTokens, active: false });
  });

  it.each([
    ['%00', 'U+0000 at position 0'],
    ['a%0Ab', 'U+000A at position 1'],
    ['x%7F', 'U+007F at position 1'],
    ['%C2%85y', 'U+0085 at position 0'],
  ])('PUT or GET with a control character in the thread id (%s) is 422 naming it, and creates nothing', async (id, where) => {
    const before = (await svc.request('GET', '/api/v1/usage/threads?state=all')).body.total;
    const res = await svc.request('PUT', `/api/v1/usage/threads/${id}`, { body: { maxTokens: 100 } });
    expect(res.status).toBe(422);
    expect(res.body).toMatchObject({ code: 'INVALID_REQUEST', detail: `threadId contains the control character ${where}; identifiers are printable text` });
    expect(res.body.errors).toEqual([{ location: 'params', field: 'threadId', message: `contains the control character ${where}; identifiers are printable text` }]);
    expect((await svc.request('GET', '/api/v1/usage/threads?state=all')).body.total).toBe(before);
    // A lookup too (PostgreSQL could not even look a NUL up).
    const lookup = await svc.request('GET', `/api/v1/usage/threads/${id}`);
    expect(lookup.status).toBe(422);
    expect(lookup.body.detail).toBe(`threadId contains the control character ${where}; identifiers are printable text`);
  });

  it('GET /usage/threads: state, limit and offset are checked like every query parameter', async () => {
    const bad = await svc.request('GET', '/api/v1/usage/threads?state=done');
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toBe('state must be one of live, finished, all');
    expect((await svc.request('GET', '/api/v1/usage/threads?limit=0')).body.detail).toBe('limit must be >= 1');
    expect((await svc.request('GET', '/api/v1/usage/threads?limit=1001')).body.detail).toBe('limit must be <= 1000');
    expect((await svc.request('GET', '/api/v1/usage/threads?status=all')).body.detail).toBe('status is not a parameter of this route (valid parameters: state, limit, offset)');
    const page = await svc.request('GET', '/api/v1/usage/threads?state=all&limit=1&offset=1');
    expect(page.status).toBe(200);
    expect(page.body).toMatchObject({ state: 'all', limit: 1, offset: 1, count: page.body.threads.length });
    expect(page.body.total).toBeGreaterThanOrEqual(page.body.count);
  });

  it('a thread without LLM calls carries zero usage', async () => {
    const res = await svc.request('POST', '/api/v1/inject', { body: { to: 'shouter', payload: { Text: { text: 'hi' } } } });
    const thread = await finished(res.body.threadId);
    expect(thread.usage).toEqual({ totalTokens: 0, promptTokens: 0, completionTokens: 0, requestCount: 0, totalCost: 0, unpricedRequests: 0, byModel: {} });
    expect((await svc.request('GET', `/api/v1/usage/threads/${res.body.threadId}`)).status).toBe(404);
  });
});

/**
 * Issue 23, item 1: inject into a thread, let it complete, inject again into the same thread
 * id, twelve times. The budget is the thread's whole life's: its spend accumulates over the
 * exchanges, never passes the ceiling, and once exhausted the thread's LLM calls are refused.
 */
describe.each<StorageKind>(STORAGE_KINDS)("a thread's budget across repeated injects into one thread id (%s storage)", (kind) => {
  const CEILING = 2_500; // a few greetings' worth (each call ~350-450 tokens, growing with the thread's history)
  let svc: Service;
  beforeAll(async () => {
    svc = await startService({ storage: kind, yaml: organismYaml().replace('max_tokens_per_thread: 50000', `max_tokens_per_thread: ${CEILING}`) });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it('spend accumulates over the exchanges and never passes the ceiling; an exhausted thread is refused the LLM call', async () => {
    const threadId = 'long-chat';
    const spends: number[] = [];
    const statuses: string[] = [];
    for (let round = 0; round < 12; round++) {
      const res = await svc.request('POST', '/api/v1/inject', { body: { to: 'greeter', threadId, payload: { Greeting: { name: `round ${round}` } } } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      const thread = await eventually(async () => {
        const t = await svc.request('GET', `/api/v1/threads/${threadId}`);
        const last = t.body.messages?.find((m: { id: string }) => m.id === res.body.messageId);
        return t.body.status !== 'active' && last && last.deliveryState !== 'PENDING' && last.deliveryState !== 'DISPATCHED' ? t.body : null;
      }, `round ${round} to finish`);
      statuses.push(thread.status);
      const budget = await eventually(async () => {
        const b = await svc.request('GET', `/api/v1/usage/threads/${threadId}`);
        return b.status === 200 && b.body.active === false ? b.body : null;
      }, `round ${round}'s budget to be finished`);
      expect(budget.maxTokens).toBe(CEILING);
      expect(budget.totalTokens).toBeLessThanOrEqual(CEILING);
      expect(budget.reservedTokens).toBe(0);
      // The thread's whole life: what the usage store holds for it, every exchange's calls.
      expect(budget.totalTokens).toBe(thread.usage.totalTokens);
      spends.push(budget.totalTokens);
      // Nothing live is left between exchanges.
      expect((await svc.request('GET', '/api/v1/usage')).body.usage.activeThreads).toBe(0);
      expect((await svc.request('GET', '/api/v1/usage/threads')).body).toMatchObject({ threads: [], count: 0 });
    }
    // It accumulates: each completed exchange adds its calls to the same budget ...
    const completed = statuses.filter((s) => s === 'completed').length;
    expect(completed).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < completed; i++) expect(spends[i]).toBeGreaterThan(spends[i - 1]!);
    // ... until the ceiling refuses the next call: from then on every exchange fails on the budget.
    expect(statuses.slice(0, completed).every((s) => s === 'completed')).toBe(true);
    expect(statuses.slice(completed).every((s) => s === 'error')).toBe(true);
    expect(completed).toBeLessThan(12);
    expect(new Set(spends.slice(completed))).toEqual(new Set([spends[completed - 1]]));
    const failed = await svc.request('GET', `/api/v1/journal?state=FAILED&threadId=${threadId}&limit=100`);
    expect(failed.body.entries).toHaveLength(12 - completed);
    for (const e of failed.body.entries) expect(e).toMatchObject({ failureReason: 'budget_exhausted' });
    // Every LLM call of the thread, summed from the persisted usage events: within the ceiling.
    const history = await eventually(async () => {
      const h = await svc.request('GET', `/api/v1/usage/history?threadId=${threadId}&limit=1000`);
      return h.body.total === completed ? h.body : null;
    }, 'the usage events');
    const persisted = history.events.reduce((n: number, e: { totalTokens: number }) => n + e.totalTokens, 0);
    expect(persisted).toBe(spends.at(-1));
    expect(persisted).toBeLessThanOrEqual(CEILING);
    expect((await svc.request('GET', '/api/v1/usage/threads?state=finished')).body.threads).toEqual([
      expect.objectContaining({ threadId, totalTokens: persisted, maxTokens: CEILING, active: false }),
    ]);
  });
});
