import { describe, expect, it } from 'vitest';
import { MemoryUsageStore, type UsageStore } from '../../../src/store/index.js';
import { UsageTracker } from '../../../src/usage/tracker.js';
import type { UsageEvent } from '../../../src/usage/types.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend } from './backends.js';

const t = (iso: string) => Date.parse(iso);
const t0 = t;

function event(ts: string, over: Partial<UsageEvent> = {}, org = 'acme'): UsageEvent {
  return {
    id: newId(),
    timestamp: t(ts),
    threadId: 'th',
    agentId: 'writer',
    messageId: null,
    model: 'gpt-4o',
    provider: 'p',
    promptTokens: 100,
    completionTokens: 50,
    totalTokens: 150,
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    providerLatencyMs: 5,
    totalLatencyMs: 9,
    cost: 0.01,
    metadata: { orgId: org, userId: 'u' },
    ...over,
  };
}

const EVENTS = [
  event('2026-03-01T23:59:59.999Z'),
  event('2026-03-02T00:00:00.000Z', { agentId: 'critic', model: 'claude-sonnet-4' }),
  event('2026-03-02T12:00:00.000Z', { cost: null, model: 'mystery' }, 'other'),
  event('2026-03-04T08:00:00.000Z'),
];

/** The usage store's rules, for any store `make` opens (empty). */
function usageRules(make: () => UsageStore | Promise<UsageStore>): void {
  async function loaded() {
    const store = await make();
    const tracker = new UsageTracker();
    store.attach(tracker);
    for (const e of EVENTS) tracker.record(e);
    await store.flush();
    return { store, tracker };
  }

  it('history: newest first, every filter honoured by `total`, paging', async () => {
    const { store } = await loaded();
    const all = await store.history({ limit: 2, offset: 0 });
    expect(all.total).toBe(4);
    expect(all.items.map((e) => new Date(e.timestamp).toISOString())).toEqual(['2026-03-04T08:00:00.000Z', '2026-03-02T12:00:00.000Z']);
    expect((await store.history({ orgId: 'acme', limit: 1, offset: 0 })).total).toBe(3);
    expect((await store.history({ agentId: 'critic', limit: 10, offset: 0 })).total).toBe(1);
    expect((await store.history({ model: 'gpt-4o', limit: 10, offset: 0 })).total).toBe(2);
    const range = await store.history({ startTime: t('2026-03-02T00:00:00Z'), endTime: t('2026-03-03T00:00:00Z'), limit: 10, offset: 0 });
    expect(range.total).toBe(2);
    expect((await store.history({ limit: 10, offset: 3 })).items).toHaveLength(1);
  });

  it('billing: totals by model, agent and org; unpriced counted apart; exact at sub-day edges', async () => {
    const { store } = await loaded();
    const all = await store.billing({});
    expect(all).toMatchObject({ requestCount: 4, totalTokens: 600, unpricedRequests: 1, orgId: null });
    expect(all.totalCost).toBeCloseTo(0.03, 10);
    expect(all.byModel['gpt-4o']).toMatchObject({ requestCount: 2 });
    expect(all.byAgent['critic']).toMatchObject({ requestCount: 1 });
    expect(all.byOrg['other']).toMatchObject({ requestCount: 1, unpricedRequests: 1 });
    const edge = await store.billing({ startTime: t('2026-03-01T23:59:59.999Z'), endTime: t('2026-03-02T00:00:00.001Z') });
    expect(edge.requestCount).toBe(2);
    const acme = await store.billing({ orgId: 'acme', startTime: t('2026-03-02T00:00:00Z') });
    expect(acme).toMatchObject({ requestCount: 2, orgId: 'acme' });
  });

  it('daily: UTC days, every day of the range present and zero-filled', async () => {
    const { store } = await loaded();
    const d = await store.daily({ startTime: t('2026-03-01T00:00:00Z'), endTime: t('2026-03-06T00:00:00Z') });
    expect(d.count).toBe(5);
    expect(d.days.map((x) => [x.date, x.requestCount])).toEqual([
      ['2026-03-01', 1],
      ['2026-03-02', 2],
      ['2026-03-03', 0],
      ['2026-03-04', 1],
      ['2026-03-05', 0],
    ]);
    expect(d.days[2]).toMatchObject({ totalTokens: 0, totalCost: 0 });
    const org = await store.daily({ orgId: 'other', startTime: t('2026-03-02T00:00:00Z'), endTime: t('2026-03-03T00:00:00Z') });
    expect(org.days).toEqual([expect.objectContaining({ date: '2026-03-02', requestCount: 1 })]);
  });

  it('keeps persisting after the live tracker is reset', async () => {
    const { store, tracker } = await loaded();
    tracker.reset();
    tracker.record(event('2026-03-05T00:00:00Z'));
    await store.flush();
    expect((await store.history({ limit: 10, offset: 0 })).total).toBe(5);
    expect(tracker.totals().requestCount).toBe(1);
  });

  it('history filtered by thread and by user, with totals', async () => {
    const { store, tracker } = await loaded();
    tracker.record(event('2026-03-04T09:00:00.000Z', { threadId: 'other' }));
    tracker.record({ ...event('2026-03-04T10:00:00.000Z'), metadata: { orgId: 'acme', userId: 'v' } });
    await store.flush();
    expect((await store.history({ threadId: 'other', limit: 10, offset: 0 })).total).toBe(1);
    expect((await store.history({ userId: 'v', limit: 10, offset: 0 })).items.map((e) => e.metadata['userId'])).toEqual(['v']);
    expect((await store.history({ userId: 'u', limit: 2, offset: 0 })).total).toBe(5);
  });

  it('thread usage: counters per thread and per model, threads without events absent', async () => {
    const { store } = await loaded();
    const usage = await store.threadUsage(['th', 'nothing']);
    expect([...usage.keys()]).toEqual(['th']);
    expect(usage.get('th')).toMatchObject({ threadId: 'th', requestCount: 4, totalTokens: 600, unpricedRequests: 1 });
    expect(usage.get('th')!.byModel['gpt-4o']).toMatchObject({ requestCount: 2, promptTokens: 200 });
    expect((await store.threadUsage([])).size).toBe(0);
  });
}

describe('memory usage store', () => usageRules(() => new MemoryUsageStore()));

eachBackend('usage store contract', (backend) => {
  usageRules(async () => (await backend.place().open()).usage);

  it('events of a delivery are committed with its ack, not from the live tracker', async () => {
    const s = await backend.place().open();
    const tracker = new UsageTracker();
    s.usage.attach(tracker);
    const withDelivery = event('2026-03-04T08:00:00.000Z', { messageId: 'm1' });
    tracker.record(withDelivery); // the tracker sees it live; the journal commits it with the ack
    await s.usage.flush();
    expect((await s.usage.history({ limit: 10, offset: 0 })).total).toBe(0);
    const m = { id: 'm1', threadId: 'th', from: 'api', to: 'writer', payloadType: 'Text', payload: {}, timestamp: 0, parentId: null, hops: 0, metadata: {}, attempt: 1 };
    await s.journal.acked(m, [], [withDelivery]);
    expect((await s.usage.history({ limit: 10, offset: 0 })).items.map((e) => e.id)).toEqual([withDelivery.id]);
    expect((await s.usage.billing({})).requestCount).toBe(1);
  });

  it('spend survives a reopen, with the rollup and the events agreeing', async () => {
    const place = backend.place();
    const s = await place.open();
    const tracker = new UsageTracker();
    s.usage.attach(tracker);
    for (const e of EVENTS) tracker.record(e);
    await s.close(); // closing writes what is buffered
    const t = await place.open();
    const all = await t.usage.billing({});
    expect(all).toMatchObject({ requestCount: 4, totalTokens: 600, unpricedRequests: 1 });
    const days = await t.usage.daily({ startTime: t0('2026-03-01T00:00:00Z'), endTime: t0('2026-03-05T00:00:00Z') });
    expect(days.days.reduce((n, d) => n + d.requestCount, 0)).toBe(4);
    expect((await t.usage.history({ limit: 1, offset: 0 })).total).toBe(4);
  });
});
