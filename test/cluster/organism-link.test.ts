import { pino } from 'pino';
import type pg from 'pg';
import { Writable } from 'node:stream';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OrganismEvent } from '../../src/events/types.js';
import type { LoadedOrganism } from '../../src/config/types.js';
import { Organism, type StorageParts } from '../../src/organism/organism.js';
import { MemoryJournal, MemoryUsageStore } from '../../src/store/index.js';
import { PgClusterLink } from '../../src/cluster/bus/cluster-link.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { PgOperatorState } from '../../src/store/postgres/operator-state.js';
import { createPool, reader } from '../../src/store/postgres/pool.js';
import { PgThreadStore } from '../../src/store/postgres/threads.js';
import { PgWriter } from '../../src/store/postgres/writer.js';
import type { Logger } from '../../src/util/logger.js';
import { deferred, eventually, listener, loaded } from '../pump/harness.js';
import { createTestDatabase, withPostgres, testPool } from '../store/contract/backends.js';

/**
 * Organisms of one process each, in one test process, linked over the real PostgreSQL: what
 * one does (kill, pause, reload, events) reaches the others through the cluster link. The
 * first owns the database (the PostgreSQL store); the others keep their journal in memory and
 * share the database's threads and operator state, as cluster-mode processes do.
 */
const run = withPostgres('organism cluster link');

interface Member {
  readonly organism: Organism;
  readonly logs: string[];
}

function capturingLogger(): { logger: Logger; logs: string[] } {
  const logs: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      logs.push(chunk.toString());
      done();
    },
  });
  return { logger: pino({ level: 'info' }, stream) as unknown as Logger, logs };
}

describe.skipIf(!run)('organisms linked through PostgreSQL', () => {
  let db: { url: string; drop(): Promise<void> };
  let admin: pg.Pool;
  const members: Organism[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = testPool({ connectionString: db.url, max: 2 });
  });
  afterEach(async () => {
    await Promise.all(members.splice(0).map((o) => o.stop({ timeoutMs: 1_000 }).catch(() => undefined)));
    await admin.query('TRUNCATE paused_agents, threads, meta').catch(() => undefined);
  });
  afterAll(async () => {
    await admin.end();
    await db.drop();
  });

  /** A process sharing the database's threads and operator state (its journal in memory). */
  async function clusterStorage(): Promise<StorageParts> {
    const pool = createPool({ url: db.url, max: 3 });
    const writer = new PgWriter(pool, () => {});
    const r = reader(pool, 'test');
    const operator = new PgOperatorState(r, writer);
    await operator.load();
    return {
      journal: new MemoryJournal(),
      threads: new PgThreadStore(r, writer),
      usage: new MemoryUsageStore(),
      operator,
      flush: () => writer.flush(),
      close: async () => {
        await writer.flush();
        await pool.end();
      },
    };
  }

  async function member(config: LoadedOrganism, opts: { owner?: boolean; reloadConfig?: () => Promise<LoadedOrganism> } = {}): Promise<Member> {
    const storage = opts.owner ? await openPostgresStorage({ url: db.url }) : await clusterStorage();
    const { logger, logs } = capturingLogger();
    const organism = new Organism(config, { storage, logger });
    organism.joinCluster(PgClusterLink.create({ url: db.url, origin: organism.bootId, hearEvents: true, logger }), opts.reloadConfig ? { reloadConfig: opts.reloadConfig } : {});
    await organism.start();
    members.push(organism);
    return { organism, logs };
  }

  it("a kill in one process aborts the thread's in-flight handler in another", async () => {
    const started = deferred<string>();
    const aborted = deferred<number>();
    const waiter = listener('waiter', {
      handler: (_p, ctx) =>
        new Promise((_resolve, reject) => {
          started.resolve(ctx.threadId);
          ctx.signal.addEventListener('abort', () => {
            aborted.resolve(performance.now());
            reject(new Error('aborted'));
          });
        }),
    });
    const config = loaded([waiter]);
    const a = await member(config, { owner: true });
    const b = await member(config);
    const { threadId } = await b.organism.inject('waiter', { text: 'wait' });
    await started.promise;
    await b.organism.storage.flush!(); // its thread record is in the database
    const killedAt = performance.now();
    await a.organism.killThread(threadId);
    const abortedAt = await aborted.promise;
    console.log(`kill in process A -> abort in process B: ${(abortedAt - killedAt).toFixed(1)} ms`);
    const thread = await eventually(async () => {
      const t = await b.organism.thread(threadId);
      return t?.status === 'killed' ? t : null;
    });
    expect(thread.status).toBe('killed');
  });

  it('pause and resume in one process hold in another, and in one started after the pause', async () => {
    const ran: string[] = [];
    const worker = listener('worker', { handler: (p) => void ran.push(String(p['text'])) });
    const config = loaded([worker]);
    const a = await member(config, { owner: true });
    const b = await member(config);
    await a.organism.pauseListener('worker');
    await eventually(() => b.organism.agent('worker').state === 'paused', 10_000, 'B to pause');
    await b.organism.inject('worker', { text: 'held' });
    const c = await member(config); // started while paused
    expect(c.organism.agent('worker').state).toBe('paused');
    expect(c.organism.lastRecovery?.pausedAgents).toEqual(['worker']);
    expect(ran).toEqual([]);
    await a.organism.resumeListener('worker');
    await eventually(() => ran.includes('held'), 10_000, 'the held message to run on B');
    await eventually(() => c.organism.agent('worker').state !== 'paused', 10_000, 'C to resume');
  });

  it('a pause stored while a process was cut off holds there once its link is back', async () => {
    const config = loaded([listener('worker')]);
    await member(config, { owner: true });
    const b = await member(config);
    // Stored without a notification: only the resync after the reconnect can tell B.
    await admin.query(`INSERT INTO paused_agents (agent, since) VALUES ('worker', 0)`);
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'organism-listen' AND datname = current_database()`);
    await eventually(() => b.organism.agent('worker').state === 'paused', 20_000, 'B to pause after its reconnect');
  });

  it('a reload reaches a process with the same organism.yaml; one with another file says what differs and keeps its configuration', async () => {
    const before = loaded([listener('worker', { timeoutSeconds: 30 })]);
    const after = loaded([listener('worker', { timeoutSeconds: 30 }), listener('added')]);
    const elsewhere = loaded([listener('worker', { timeoutSeconds: 60 }), listener('added')]);
    const a = await member(before, { owner: true });
    const b = await member(before, { reloadConfig: async () => after });
    const c = await member(before, { reloadConfig: async () => elsewhere });
    a.organism.reload(after);
    await a.organism.shareReload();
    await eventually(() => b.organism.hasListener('added'), 10_000, 'B to reload');
    expect(b.organism.configIdentity.hash).toBe(a.organism.configIdentity.hash);
    await eventually(() => c.logs.some((l) => l.includes('still running the previous configuration')), 10_000, 'C to refuse');
    expect(c.organism.hasListener('added')).toBe(false);
    const line = c.logs.find((l) => l.includes('still running the previous configuration'))!;
    expect(line).toContain("listeners[worker].timeoutSeconds: 60 here, 30 in the database's organism");
  });

  it("one process's events reach another's live views (not its own metrics), once each and in order", async () => {
    const echo = listener('echo', { handler: (p) => ({ to: 'sink', payload: p }), peers: ['sink'] });
    const sink = listener('sink');
    const config = loaded([echo, sink]);
    const a = await member(config, { owner: true });
    const b = await member(config);
    const relayed: Array<{ event: OrganismEvent; origin: string | null }> = [];
    const local: OrganismEvent[] = [];
    b.organism.bus.on((event, origin) => relayed.push({ event, origin }), { relayed: true });
    b.organism.bus.on((event) => local.push(event));
    const ownOnA: OrganismEvent[] = [];
    a.organism.bus.on((event) => ownOnA.push(event));
    const threads: string[] = [];
    for (let i = 0; i < 20; i++) threads.push((await a.organism.inject('echo', { text: `m${i}` })).threadId);
    const published = () => ownOnA.filter((e) => e.type !== 'organism_status' && e.type !== 'reload');
    await eventually(() => published().filter((e) => e.type === 'thread_updated' && e.thread.status !== 'active').length === 20, 10_000, 'A to finish');
    await eventually(() => relayed.length >= published().length, 10_000, "A's events at B");
    expect(relayed.map((r) => r.event)).toEqual(JSON.parse(JSON.stringify(published())));
    expect(relayed.every((r) => r.origin === a.organism.bootId)).toBe(true);
    expect(local).toEqual([]); // B ran nothing; A's events are not B's own
  });
});
