import { describe, expect, it } from 'vitest';
import { deferred, eventually, listener, loaded } from '../pump/harness.js';
import { withPostgres } from '../store/contract/backends.js';
import { clusterSchemas } from './schema-fixture.js';

/**
 * max_concurrent_per_agent counts handlers running, in cluster mode as embedded: a delivery
 * whose handler ended while its outcome is still committing (DISPATCHED in the store) holds
 * no slot, so the next claim of its listener goes out beside that commit rather than after it.
 */
const run = withPostgres('claims beside outcomes being booked');

describe.skipIf(!run)('claims beside outcomes being booked (cluster mode, PostgreSQL)', () => {
  const cluster = clusterSchemas();

  it("starts the next delivery of a listener at its limit once the running handler ended, while that delivery's ack still waits to commit", async () => {
    const admin = cluster.place(3);
    const firstRuns = deferred();
    const gate = deferred();
    const started: string[] = [];
    const config = loaded(
      [
        listener('a', {
          handler: async (payload) => {
            const text = (payload as { text: string }).text;
            started.push(text);
            if (text === 'first') {
              firstRuns.resolve();
              await gate.promise;
            }
          },
        }),
      ],
      { maxConcurrentPerAgent: 1 },
    );
    const { organism } = await cluster.start(config);

    const first = await organism.inject('a', { text: 'first' });
    await firstRuns.promise;
    const second = await organism.inject('a', { text: 'second' });
    // The first delivery's ack will wait on its thread's row (its commit locks it), held here.
    const holder = await admin.connect();
    try {
      await holder.query('BEGIN');
      await holder.query('SELECT 1 FROM threads WHERE id = $1 FOR UPDATE', [first.threadId]);
      gate.resolve();
      // The handler of the second runs while the first is still DISPATCHED, its ack not committed.
      await eventually(() => started.includes('second'), 10_000, 'the second delivery to start');
      const states = (await admin.query<{ id: string; state: string }>('SELECT id, state FROM journal WHERE id = ANY($1::text[])', [[first.messageId, second.messageId]])).rows;
      expect(Object.fromEntries(states.map((r) => [r.id, r.state]))).toEqual({ [first.messageId]: 'DISPATCHED', [second.messageId]: 'DISPATCHED' });
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
    }
    for (const { threadId } of [first, second]) await eventually(async () => (await organism.thread(threadId))?.status === 'completed', 20_000, 'the threads to complete');
    expect(started).toEqual(['first', 'second']);
    const acked = (await admin.query<{ n: number }>(`SELECT COUNT(*)::int AS n FROM journal WHERE state = 'ACKED'`)).rows[0]!.n;
    expect(acked).toBe(2);
  }, 60_000);
});
