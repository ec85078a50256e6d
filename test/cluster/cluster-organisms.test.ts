import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ResolvedListener } from '../../src/config/types.js';
import { Errors } from '../../src/errors/catalogue.js';
import { Organism } from '../../src/organism/organism.js';
import { openPostgresStorage, type ClusterStorageOptions } from '../../src/store/postgres/index.js';
import { buildApp } from '../../src/service/app.js';
import { snapshotBody } from '../../src/service/ws/snapshot.js';
import { deferred, eventually, listener, loaded } from '../pump/harness.js';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';

/**
 * Whole organisms in cluster mode, several on one schema of the real PostgreSQL (each one is
 * what one `serve` or `worker` process runs): what an operator reads or is refused as the
 * organism's, not one process's.
 */
const run = withPostgres('cluster-mode organisms');

describe.skipIf(!run)('organisms sharing PostgreSQL', () => {
  let db: { url: string; drop(): Promise<void> };
  let schema = '';
  const running: Organism[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await Promise.all(running.splice(0).map((o) => o.stop({ timeoutMs: 1_000 }).catch(() => undefined)));
  });
  afterAll(async () => {
    await db.drop();
  });

  const place = () => {
    schema = `s_${randomBytes(5).toString('hex')}`;
  };
  /** One more process on the schema. */
  const process = async (listeners: ResolvedListener[], cluster: ClusterStorageOptions, maxQueue = 10_000) => {
    const storage = await openPostgresStorage({ url: db.url, schema, cluster: { maxAttempts: 3, ...cluster } });
    const organism = new Organism(loaded(listeners, { maxQueue, maxConcurrentHandlers: 1, maxConcurrentPerAgent: 1 }), { storage });
    await organism.start();
    running.push(organism);
    return organism;
  };

  it('a retry in a cluster: the try that threw goes back to the store, due after its backoff, and a worker runs it then, up to ctx.attempt 3', async () => {
    place();
    const tries: Array<{ attempt: number; at: number }> = [];
    const retry = { maxAttempts: 3, backoff: 'exponential' as const, initialSeconds: 0.2, maxSeconds: 5 };
    const flaky = listener('w', {
      retry,
      handler: (_p, ctx) => {
        tries.push({ attempt: ctx.attempt, at: Date.now() });
        if (tries.length < 3) throw new Error(`try ${tries.length} broke`);
      },
    });
    const api = await process([listener('w')], { handlers: false });
    await process([flaky], { kind: 'worker', name: 'w1' });
    const { threadId, messageId } = await api.inject('w', { text: 'x' });
    await eventually(async () => (await api.thread(threadId))?.status === 'completed', 20_000, 'the thread to complete');
    expect(tries.map((t) => t.attempt)).toEqual([1, 2, 3]);
    expect(tries[1]!.at - tries[0]!.at).toBeGreaterThanOrEqual(200);
    expect(tries[2]!.at - tries[1]!.at).toBeGreaterThanOrEqual(400);
    const entry = (await api.storage.journal.get(messageId))!;
    expect(entry).toMatchObject({ state: 'ACKED', attempts: 3, nextAttemptAt: null });
    expect(entry.earlierAttempts.map((a) => [a.attempt, a.outcome, a.failureReason])).toEqual([
      [1, 'failed', 'handler_error'],
      [2, 'failed', 'handler_error'],
    ]);
  });

  it('limits.max_queue bounds the organism-wide queue: injects past it are refused busy whichever API process takes them, and a waiting one gets in once a worker claims', async () => {
    place();
    const api = { handlers: false } as const;
    const [a, b] = [await process([listener('w')], api, 3), await process([listener('w')], api, 3)];
    await a.inject('w', { text: 'one' });
    await b.inject('w', { text: 'two' });
    await a.inject('w', { text: 'three' });
    // Each process alone holds fewer than 3: only the database's count says the queue is full.
    await expect(b.inject('w', { text: 'four' })).rejects.toThrow(Errors.ORGANISM_BUSY(3).detail);
    await expect(a.inject('w', { text: 'five' })).rejects.toThrow(Errors.ORGANISM_BUSY(3).detail);
    const patient = b.inject('w', { text: 'patient' }, { waitMs: 30_000 });
    const gate = deferred();
    const started: string[] = [];
    await process(
      [
        listener('w', {
          handler: async (p: unknown) => {
            started.push((p as { text: string }).text);
            await gate.promise;
          },
        }),
      ],
      { kind: 'worker' },
      3,
    );
    // The worker claims one (maxConcurrentHandlers 1): two stay PENDING, so one more fits.
    await expect(patient).resolves.toMatchObject({ threadId: expect.any(String) });
    expect(started).toEqual(['one']);
    await expect(a.inject('w', { text: 'six' })).rejects.toThrow(Errors.ORGANISM_BUSY(3).detail);
    gate.resolve();
  });

  it('injects arriving together at one process are admitted one by one against the count (one write batch may hold several)', async () => {
    place();
    const a = await process([listener('w')], { handlers: false }, 3);
    await a.inject('w', { text: 'first' });
    const results = await Promise.allSettled([1, 2, 3].map((i) => a.inject('w', { text: `burst ${i}` })));
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(2);
    const refused = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(refused.map((r) => (r.reason as Error).message)).toEqual([Errors.ORGANISM_BUSY(3).message]);
  });

  it('the WebSocket snapshot shows agents as the whole organism runs them (queue depth from the database)', async () => {
    place();
    const a = await process([listener('w')], { handlers: false });
    const b = await process([listener('w')], { handlers: false });
    await a.inject('w', { text: 'waits' });
    await a.inject('w', { text: 'waits too' });
    const body = await eventually(async () => {
      const s = (await snapshotBody(b, null)) as { agents: Array<{ name: string; queueDepth: number }> };
      return s.agents.find((x) => x.name === 'w')?.queueDepth === 2 ? s : null;
    });
    expect(body.agents).toHaveLength(1);
  });

  it('/api/v1/organism and the snapshot count the active threads of every process, not only those this one touched', async () => {
    place();
    const a = await process([listener('w')], { handlers: false });
    const b = await process([listener('w')], { handlers: false });
    await a.inject('w', { text: 'one' });
    await a.inject('w', { text: 'two' });
    const app = await buildApp({ organism: b, auth: { tokens: [{ name: 'ops', role: 'operator', token: 'operator-token-0123456789' }] }, version: 'test' });
    try {
      const res = await app.inject({ method: 'GET', url: '/api/v1/organism', headers: { authorization: 'Bearer operator-token-0123456789' } });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ activeThreads: 2, journal: { counts: { PENDING: 2 } } });
    } finally {
      await app.close();
    }
    expect(((await snapshotBody(b, null)) as { organism: { activeThreads: number } }).organism.activeThreads).toBe(2);
  });
});
