import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ResolvedListener } from '../../src/config/types.js';
import { Organism } from '../../src/organism/organism.js';
import { openPostgresStorage, type ClusterStorageOptions } from '../../src/store/postgres/index.js';
import { eventually, listener, loaded } from '../pump/harness.js';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';

/**
 * The loop breaker in a cluster (issue 30): the deliveries of one ping-pong thread land on two
 * worker processes, each judging the thread by its journal in the database (not by what it ran
 * itself); the thread is held before its 50th message, every claim passes over it while held,
 * and a resume from the API process lets the workers claim it again.
 */
const run = withPostgres('the loop breaker in a cluster');

describe.skipIf(!run)('the loop breaker across worker processes', () => {
  let db: { url: string; drop(): Promise<void> };
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

  const schema = `s_${randomBytes(5).toString('hex')}`;
  const process = async (listeners: ResolvedListener[], cluster: ClusterStorageOptions) => {
    const storage = await openPostgresStorage({ url: db.url, schema, cluster: { maxAttempts: 3, ...cluster } });
    const organism = new Organism(loaded(listeners, { maxConcurrentHandlers: 4, maxConcurrentPerAgent: 1, maxHops: 1000 }), { storage });
    await organism.start();
    running.push(organism);
    return organism;
  };

  it('holds a ping-pong whose deliveries run on two workers before its 50th message; resumed, the workers go on', async () => {
    const ranOn: string[] = [];
    const pingPong = (worker: string) => [
      listener('ping', { peers: ['pong'], handler: (p) => (ranOn.push(worker), { to: 'pong', payload: p as Record<string, unknown> }) }),
      listener('pong', { peers: ['ping'], handler: (p) => (ranOn.push(worker), { to: 'ping', payload: p as Record<string, unknown> }) }),
    ];
    const api = await process(pingPong('api'), { handlers: false });
    await process(pingPong('w1'), { kind: 'worker', name: 'w1' });
    await process(pingPong('w2'), { kind: 'worker', name: 'w2' });
    const { threadId } = await api.inject('ping', { text: 'same ball' });
    const hold = await eventually(async () => (await api.holds.of(threadId))?.held && (await api.holds.of(threadId)), 30_000, 'the thread held');
    expect(hold).toMatchObject({ by: 'loop_guard', rule: 'cycle' });
    const atRest = async () => {
      const page = await api.queries.journal.list({ threadId, limit: 1000, offset: 0, order: 'oldest' });
      return page.items.some((e) => e.state === 'PENDING') && page.items.every((e) => e.state !== 'DISPATCHED') ? page.items : null;
    };
    const entries = await eventually(atRest, 20_000, 'the held thread at rest');
    expect(entries.length).toBeLessThan(50);
    expect(new Set(ranOn)).toEqual(new Set(['w1', 'w2']));
    expect((await api.threadView(threadId)).status).toBe('held');

    // The resume is the API process's; the workers' claims take the thread again, and it is held again.
    const before = entries.length;
    await api.resumeThread(threadId, 'ops', true);
    await eventually(async () => (await api.holds.of(threadId))?.held, 30_000, 'held again');
    const after = await eventually(atRest, 20_000, 'at rest again');
    expect(after.length).toBeGreaterThan(before + 20);
    expect(after.length).toBeLessThan(before + 90);
  });
});
