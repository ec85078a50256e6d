import { describe, expect, it } from 'vitest';
import { workPayload } from '../../src/cluster/queue/cluster-journal.js';
import { PgWorkSource } from '../../src/cluster/queue/work-source.js';
import { eventually, listener, loaded } from '../pump/harness.js';
import { withPostgres } from '../store/contract/backends.js';
import { clusterSchemas } from './schema-fixture.js';

/**
 * A process is not woken by its own work notifications: every commit of its own that makes
 * work claimable is followed by a claim round of its own, and the notification, arriving during
 * that round, made it claim a second time for nothing. Other processes' notifications wake it.
 */
describe('work notifications name their sender', () => {
  it("wakes the claimers for other processes' notifications (and for one naming no sender), not for its own", async () => {
    let deliver: ((payload: string) => void) | null = null;
    const source = new PgWorkSource({
      journal: { reclaimExpired: async () => ({ retried: 0, failed: 0, from: [] }) } as never,
      workers: { register: async () => {}, stopped: async () => {} } as never,
      listener: {
        subscribe: async (_channel: string, handler: (payload: string) => void) => {
          deliver = handler;
          return () => {};
        },
        onReconnect: () => () => {},
      } as never,
      channels: { work: 'organism_work:test' } as never,
      me: { id: 'me', kind: 'serve', name: 'me', handlers: true, configHash: '', concurrency: null, leaseMs: 30_000 },
      maxAttempts: 3,
    });
    await source.start();
    try {
      let wakes = 0;
      source.onWork(() => wakes++);
      deliver!(workPayload('me', ['a']));
      expect(wakes).toBe(0);
      deliver!(workPayload('other', ['a', 'b']));
      expect(wakes).toBe(1);
      // An operator's NOTIFY, or a process of an earlier version: no sender, so not this one.
      deliver!('a');
      expect(wakes).toBe(2);
    } finally {
      await source.stop();
    }
  });

  const run = withPostgres('work notifications');
  describe.skipIf(!run)('on PostgreSQL (cluster mode)', () => {
    const cluster = clusterSchemas();

    it('the notification of an inject names the process that committed it, then the recipients', async () => {
      const admin = cluster.place(2);
      const { organism, storage } = await cluster.start(loaded([listener('a')]));
      const client = await admin.connect();
      try {
        const payloads: string[] = [];
        client.on('notification', (n) => payloads.push(n.payload ?? ''));
        await client.query(`LISTEN "${storage.cluster!.channels.work}"`);
        await organism.inject('a', { text: 'hello' });
        await eventually(() => payloads.length > 0, 10_000, 'the work notification');
        expect(payloads[0]).toBe(`${storage.cluster!.workerId}|a`);
      } finally {
        client.release();
      }
    });
  });
});
