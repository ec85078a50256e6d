import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { LoadedOrganism } from '../../src/config/types.js';
import { Organism } from '../../src/organism/organism.js';
import type { ClusterHandlers, ClusterLink } from '../../src/cluster/link.js';
import { PgClusterLink } from '../../src/cluster/bus/cluster-link.js';
import { openPostgresStorage, type PostgresStorage } from '../../src/store/postgres/index.js';
import { deferred, eventually, listener, loaded } from '../pump/harness.js';
import { createTestDatabase, testPool, withPostgres } from '../store/contract/backends.js';

/**
 * A kill that commits while a claim of the same thread is on its way back (issue 23, item 10):
 * the claim read the thread before the kill (active), and must not revive it nor run its
 * delivery. The claim is held mid-statement by a row lock on its kept-count slot (taken after
 * the statement read the thread), the kill commits, then the lock goes.
 */
const run = withPostgres('kill while a claim is in flight');

describe.skipIf(!run)('a kill racing a claim of its thread (cluster mode, PostgreSQL)', () => {
  let db: { url: string; drop(): Promise<void> };
  let admin: pg.Pool;
  const organisms: Organism[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = testPool({ connectionString: db.url, max: 3 });
  });
  afterEach(async () => {
    await Promise.all(organisms.splice(0).map((o) => o.stop({ timeoutMs: 1_000 }).catch(() => undefined)));
    await admin.query('TRUNCATE journal, threads, workers, row_counts, paused_agents').catch(() => undefined);
  });
  afterAll(async () => {
    await admin.end();
    await db.drop();
  });

  /** A process of the organism; `commands` hears each command the link hands it (after handing it on). */
  async function proc(config: LoadedOrganism, handlers: boolean, commands?: (kind: string) => void): Promise<{ organism: Organism; storage: PostgresStorage }> {
    const storage = await openPostgresStorage({ url: db.url, cluster: { handlers, maxAttempts: 3 } });
    const organism = new Organism(config, { storage });
    const link = PgClusterLink.create({ url: db.url, origin: organism.bootId, hearEvents: false, listener: storage.cluster!.listener });
    const heard: ClusterLink = Object.assign(Object.create(link) as ClusterLink, {
      start: (h: ClusterHandlers) => link.start({ ...h, command: (c, o) => (h.command(c, o), commands?.(c.kind)) }),
    });
    organism.joinCluster(heard);
    await organism.start();
    organisms.push(organism);
    return { organism, storage };
  }

  /** Holds `workerId`'s claims in their statement (after it read the threads) until `release`. */
  async function holdClaims(workerId: string): Promise<{ waiting(): Promise<void>; release(): Promise<void> }> {
    const client = await admin.connect();
    await client.query('BEGIN');
    await client.query(`INSERT INTO row_counts (name, slot, n) VALUES ('journal:DISPATCHED', $1, 0) ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n`, [`${workerId}/claim`]);
    return {
      waiting: async () => {
        await eventually(
          async () => {
            const r = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%organism_claim(%' AND datname = current_database()`);
            return r.rows[0].n > 0;
          },
          30_000,
          'a claim to wait on the held slot',
        );
      },
      release: async () => {
        await client.query('ROLLBACK');
        client.release();
      },
    };
  }

  const waiterConfig = (started: () => void) =>
    loaded([
      listener('waiter', {
        handler: (_p, ctx) =>
          new Promise((_resolve, reject) => {
            started();
            ctx.signal.addEventListener('abort', () => reject(new Error('aborted')));
          }),
      }),
    ]);

  async function entry(id: string): Promise<{ state: string; failure_reason: string | null }> {
    return (await admin.query('SELECT state, failure_reason FROM journal WHERE id = $1', [id])).rows[0];
  }

  it('killed in the process whose claim is in flight: the claim comes back refused, every read says killed, the handler never runs', async () => {
    let ran = 0;
    const p = await proc(
      waiterConfig(() => ran++),
      true,
    );
    const held = await holdClaims(p.storage.cluster!.workerId);
    const { threadId, messageId } = await p.organism.inject('waiter', { text: 'x' });
    await held.waiting();
    await p.organism.killThread(threadId);
    expect((await p.organism.thread(threadId))?.status).toBe('killed');
    await held.release();
    // The claim is back once its entry is FAILED (refused; PENDING until the held claim commits), or its handler ran.
    await eventually(async () => ran > 0 || (await entry(messageId)).state === 'FAILED', 30_000, 'the claim to come back');
    expect((await p.organism.thread(threadId))?.status).toBe('killed'); // was: active, messageCount 1
    expect(ran).toBe(0);
    expect(await entry(messageId)).toEqual({ state: 'FAILED', failure_reason: 'killed' });
    expect((await admin.query('SELECT status FROM threads WHERE id = $1', [threadId])).rows[0].status).toBe('killed');
  });

  it('inject then kill at once, 100 times, while other threads keep claims in flight: once the kill answers the stored thread is killed and stays so', async () => {
    const config = loaded(
      [
        listener('waiter', { handler: (_p, ctx) => new Promise((_r, reject) => ctx.signal.addEventListener('abort', () => reject(new Error('aborted')))) }),
        listener('busy', { handler: () => new Promise((r) => setTimeout(r, 5)) }),
      ],
      { maxConcurrentHandlers: 200, maxConcurrentPerAgent: 100 },
    );
    const p = await proc(config, true);
    let traffic = true;
    const background = (async () => {
      for (let n = 0; traffic; n++) await p.organism.inject('busy', { text: `b${n}` });
    })();
    const stored = async (id: string) => (await admin.query('SELECT status FROM threads WHERE id = $1', [id])).rows[0]?.status as string;
    const killed: string[] = [];
    try {
      for (let i = 0; i < 100; i++) {
        const { threadId } = await p.organism.inject('waiter', { text: `w${i}` });
        await p.organism.killThread(threadId);
        killed.push(threadId);
        expect([i, await stored(threadId), (await p.organism.thread(threadId))?.status]).toEqual([i, 'killed', 'killed']);
      }
    } finally {
      traffic = false;
      await background;
    }
    await eventually(
      async () => (await admin.query(`SELECT count(*)::int AS n FROM journal WHERE recipient = 'waiter' AND state IN ('PENDING', 'DISPATCHED')`)).rows[0].n === 0,
      30_000,
      'every waiter delivery to end',
    );
    for (const id of killed) expect([id, await stored(id)]).toEqual([id, 'killed']);
  });

  it('killed through another process (serve --handlers off) after the worker sent its claim: the worker refuses the claim when it comes back', async () => {
    let ran = 0;
    const config = waiterConfig(() => ran++);
    const api = await proc(config, false);
    const killHeard = deferred();
    const worker = await proc(config, true, (kind) => kind === 'kill' && killHeard.resolve());
    const held = await holdClaims(worker.storage.cluster!.workerId);
    const { threadId, messageId } = await api.organism.inject('waiter', { text: 'x' });
    await held.waiting();
    await api.organism.killThread(threadId);
    expect((await api.organism.thread(threadId))?.status).toBe('killed');
    // The worker has heard the kill (applied in order, on a microtask; setImmediate runs after those).
    await killHeard.promise;
    await new Promise((r) => setImmediate(r));
    await held.release();
    await eventually(async () => ran > 0 || (await entry(messageId)).state === 'FAILED', 30_000, 'the claim to come back');
    expect(ran).toBe(0);
    expect(await entry(messageId)).toEqual({ state: 'FAILED', failure_reason: 'killed' });
    for (const o of [api.organism, worker.organism]) expect((await o.thread(threadId))?.status).toBe('killed');
  });
});
