import { describe, expect, it } from 'vitest';
import type { ScheduleSpec, ScheduleStore } from '../../../src/core/schedule.js';
import type { WebhookStore } from '../../../src/core/webhook.js';
import { MemoryScheduleStore } from '../../../src/store/memory/schedules.js';
import { MemoryWebhookStore } from '../../../src/store/memory/webhooks.js';
import { eachBackend } from './backends.js';

const spec = (name: string): ScheduleSpec => ({ name, cron: null, timezone: null, every: '1m', to: 'desk', payload: { text: 'x' }, catchUp: true });

/** What every schedule store does (memory, SQLite, PostgreSQL). */
function scheduleContract(open: () => Promise<{ schedules: ScheduleStore; reopen?: () => Promise<ScheduleStore> }>) {
  it('a tick is claimed once; the cursor is the latest claimed tick, else the first sighting', async () => {
    const { schedules: s } = await open();
    expect(await s.cursor('a', 1000)).toBe(1000);
    expect(await s.cursor('a', 5000)).toBe(1000); // first sighting kept
    expect(await s.claim({ schedule: 'a', tickAt: 60_000, claimedAt: 60_001, late: false, outcome: null })).toBe(true);
    expect(await s.claim({ schedule: 'a', tickAt: 60_000, claimedAt: 60_002, late: false, outcome: null })).toBe(false);
    expect(await s.claim({ schedule: 'a', tickAt: 120_000, claimedAt: 120_001, late: true, outcome: 'skipped' })).toBe(true);
    expect(await s.cursor('a', 130_000)).toBe(120_000);
    await s.settle('a', 60_000, 'fired', 'thread-1', null);
    expect(await s.ticks('a', 10)).toEqual([
      { schedule: 'a', tickAt: 120_000, claimedAt: 120_001, late: true, outcome: 'skipped', threadId: null, error: null },
      { schedule: 'a', tickAt: 60_000, claimedAt: 60_001, late: false, outcome: 'fired', threadId: 'thread-1', error: null },
    ]);
    await s.prune(1);
    expect((await s.ticks('a', 10)).map((t) => t.tickAt)).toEqual([120_000]);
  });

  it('an unsettled tick is listed once stale and taken over by one process (compare-and-set on its claim time)', async () => {
    const { schedules: s } = await open();
    await s.claim({ schedule: 'a', tickAt: 60_000, claimedAt: 61_000, late: false, outcome: null });
    await s.claim({ schedule: 'a', tickAt: 120_000, claimedAt: 121_000, late: false, outcome: null });
    await s.settle('a', 120_000, 'fired', 't', null);
    expect(await s.unsettled(61_000)).toEqual([]);
    expect((await s.unsettled(200_000)).map((t) => t.tickAt)).toEqual([60_000]);
    expect(await s.reclaim('a', 60_000, 61_000, 300_000)).toBe(true);
    expect(await s.reclaim('a', 60_000, 61_000, 300_001)).toBe(false); // taken already
    expect(await s.unsettled(200_000)).toEqual([]);
    expect(await s.reclaim('a', 120_000, 121_000, 300_000)).toBe(false); // settled
  });

  it('run-time schedules are added once, listed oldest first and removed with their ticks', async () => {
    const { schedules: s, reopen } = await open();
    expect(await s.add(spec('b'), 2)).toBe(true);
    expect(await s.add(spec('a'), 1)).toBe(true);
    expect(await s.add(spec('a'), 3)).toBe(false);
    await s.claim({ schedule: 'a', tickAt: 60_000, claimedAt: 60_000, late: false, outcome: null });
    const again = reopen ? await reopen() : s;
    expect(await again.list()).toEqual([
      { spec: spec('a'), createdAt: 1 },
      { spec: spec('b'), createdAt: 2 },
    ]);
    expect(await again.remove('a')).toBe(true);
    expect(await again.remove('a')).toBe(false);
    expect(await again.ticks('a', 10)).toEqual([]);
    expect(await again.cursor('a', 7)).toBe(7);
  });
}

/** What every webhook store does. */
function webhookContract(open: () => Promise<{ webhooks: WebhookStore }>) {
  const d = (id: string, createdAt: number) => ({ id, webhook: 'ops', event: 'thread_completed', body: `{"id":"${id}"}`, createdAt });

  it('a delivery is stored once, leased to one owner, retried later, delivered or failed for good', async () => {
    const { webhooks: w } = await open();
    expect(await w.enqueue(d('msg_1', 100))).toBe(true);
    expect(await w.enqueue(d('msg_1', 100))).toBe(false);
    expect(await w.enqueue(d('msg_2', 101))).toBe(true);
    const a = await w.claim('A', 200, 1000, 10);
    expect(a.map((x) => x.id)).toEqual(['msg_1', 'msg_2']);
    expect(await w.claim('B', 300, 1000, 10)).toEqual([]); // leased to A
    await w.attemptFailed('msg_1', 'A', { nextAttemptAt: 5000, status: 500, error: 'HTTP 500', final: false });
    await w.delivered('msg_2', 'B', 300, 200); // not B's: ignored
    await w.delivered('msg_2', 'A', 300, 204);
    expect(await w.claim('B', 4000, 1000, 10)).toEqual([]); // msg_1 not due yet
    const b = await w.claim('B', 5000, 1000, 10);
    expect(b).toEqual([expect.objectContaining({ id: 'msg_1', attempts: 1, lastStatus: 500, lastError: 'HTTP 500', state: 'pending' })]);
    await w.attemptFailed('msg_1', 'B', { nextAttemptAt: 9000, status: null, error: 'ECONNREFUSED', final: true });
    expect(await w.claim('C', 100_000, 1000, 10)).toEqual([]);
    expect(await w.counts()).toEqual({ ops: { pending: 0, delivered: 1, failed: 1 } });
    expect(await w.recent({ state: 'failed', limit: 10 })).toEqual([expect.objectContaining({ id: 'msg_1', attempts: 2, lastError: 'ECONNREFUSED', lastStatus: null })]);
    expect((await w.recent({ webhook: 'ops', limit: 10 })).map((x) => x.id)).toEqual(['msg_2', 'msg_1']);
    expect(await w.recent({ webhook: 'other', limit: 10 })).toEqual([]);
    await w.prune(101);
    expect((await w.recent({ limit: 10 })).map((x) => x.id)).toEqual(['msg_2']);
  });

  it('a lease that ran out lets another owner take the delivery', async () => {
    const { webhooks: w } = await open();
    await w.enqueue(d('msg_9', 0));
    expect((await w.claim('A', 10, 100, 10)).length).toBe(1);
    expect(await w.claim('B', 50, 100, 10)).toEqual([]);
    expect((await w.claim('B', 111, 100, 10)).map((x) => x.id)).toEqual(['msg_9']);
    await w.delivered('msg_9', 'A', 120, 200); // A's lease is gone: its late answer is ignored
    expect((await w.recent({ limit: 1 }))[0]!.state).toBe('pending');
  });
}

describe('schedule and webhook stores (memory)', () => {
  scheduleContract(async () => ({ schedules: new MemoryScheduleStore() }));
  webhookContract(async () => ({ webhooks: new MemoryWebhookStore() }));
});

eachBackend('schedule and webhook stores', (backend) => {
  scheduleContract(async () => {
    const place = backend.place();
    const s = await place.open();
    return {
      schedules: s.schedules,
      reopen: async () => {
        await s.close();
        return (await place.open()).schedules;
      },
    };
  });
  webhookContract(async () => ({ webhooks: (await backend.place().open()).webhooks }));
});
