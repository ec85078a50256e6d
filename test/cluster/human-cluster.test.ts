import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { send } from '../../src/core/handler.js';
import type { ResolvedListener } from '../../src/config/types.js';
import { Errors } from '../../src/errors/catalogue.js';
import { Organism } from '../../src/organism/organism.js';
import { openPostgresStorage, type ClusterStorageOptions } from '../../src/store/postgres/index.js';
import { eventually, listener, loaded } from '../pump/harness.js';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';

/**
 * Asks to people in a clustered organism (issue 25): organisms on one schema of the real
 * PostgreSQL, each what one `serve` or `worker` process runs. An ask parked by a worker holds
 * no claim (its worker may go), and two API processes answering it at the same instant: one wins.
 */
const run = withPostgres('asks in cluster mode');

describe.skipIf(!run)('asks to people, organisms sharing PostgreSQL', () => {
  let db: { url: string; drop(): Promise<void> };
  let schema = '';
  const running: Organism[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    schema = `s_${randomBytes(5).toString('hex')}`;
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((o) => o.stop({ timeoutMs: 1_000 }).catch(() => undefined)));
  });
  afterAll(async () => {
    await db.drop();
  });

  const received: Array<{ from: string; messageId: string }> = [];
  const listeners = (): ResolvedListener[] => [
    listener('intake', {
      payloadTypes: ['Text', 'Num'],
      peers: ['desk'],
      handler: (payload, ctx) => {
        if (ctx.from === 'api') return send('desk', { text: `approve ${String(payload['text'])}` }, 'Text');
        received.push({ from: ctx.from, messageId: ctx.messageId });
        return undefined;
      },
    }),
    listener('desk', { payload: 'Text', human: { timeoutSeconds: null, onTimeout: 'fail' } }),
  ];
  const process = async (cluster: ClusterStorageOptions) => {
    const storage = await openPostgresStorage({ url: db.url, schema, cluster: { maxAttempts: 3, leaseMs: 1_000, ...cluster } });
    const organism = new Organism(loaded(listeners()), { storage });
    await organism.start();
    running.push(organism);
    return organism;
  };

  it('a worker parks the ask and goes; the ask stays AWAITING (no lease holds it); two API processes answer at once: one wins, a new worker runs the continuation once', async () => {
    const a = await process({ handlers: false });
    const c = await process({ handlers: false });
    const worker = await process({ kind: 'worker' });
    const { threadId } = await a.inject('intake', { Text: { text: 'refund' } });
    const item = await eventually(async () => (await c.inbox.list({ limit: 10, offset: 0 })).items[0], 10_000, 'the ask listed');
    expect(item).toMatchObject({ threadId, listener: 'desk', from: 'intake' });
    await eventually(async () => (await a.thread(threadId))?.status === 'waiting', 10_000, 'thread waiting');
    expect((await a.storage.journal.keptStats()).counts.DISPATCHED).toBe(0);

    // The parking worker stops; its lease lapses and the API processes take back what it held: not the ask.
    await worker.stop({ timeoutMs: 1_000 });
    running.splice(running.indexOf(worker), 1);
    await new Promise((r) => setTimeout(r, 2_500));
    expect((await a.storage.journal.get(item.id))?.state).toBe('AWAITING');
    expect((await c.inbox.list({ limit: 10, offset: 0 })).items).toEqual([item]);

    const answers = await Promise.allSettled([
      a.inbox.answer(item.id, { payload: { Num: { n: 1 } } }, 'alice'),
      c.inbox.answer(item.id, { payload: { Num: { n: 2 } } }, 'bob'),
      a.inbox.answer(item.id, { payload: { Num: { n: 3 } } }, 'carol'),
      c.inbox.answer(item.id, { payload: { Num: { n: 4 } } }, 'dave'),
    ]);
    expect(answers.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    for (const r of answers) if (r.status === 'rejected') expect(Errors.INBOX_ITEM_CLOSED.is(r.reason)).toBe(true);

    await process({ kind: 'worker' });
    await eventually(() => received.length === 1, 10_000, 'the continuation');
    await eventually(async () => (await c.thread(threadId))?.status === 'completed', 10_000, 'thread completed');
    expect(received).toHaveLength(1);
    expect(received[0]!.from).toBe('desk');
  });
});
