import fc from 'fast-check';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/postgres/pool.js';
import { migratePg, PG_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { PgBudgetLedger } from '../../src/store/postgres/budget-ledger.js';
import { openSqliteStorage } from '../../src/store/index.js';
import type { BudgetArchive } from '../../src/usage/budget-archive.js';
import { BudgetManager, localBudgetLedger, type BudgetThresholdEvent, type Reservation } from '../../src/usage/budgets.js';
import type { BudgetLedger } from '../../src/core/budget.js';
import { newId } from '../../src/util/ids.js';
import { freePort, killAll, startProcess, until } from '../cli/processes.js';
import { PgProxy, viaProxy } from './pg-proxy.js';
import { createTestDatabase, withPostgres } from './contract/backends.js';

/**
 * The budget ledger contract: the embedded BudgetManager and the PostgreSQL ledger answer the
 * same operations the same way; then what only the shared ledger must do: reservations of
 * two processes racing on one thread never pass the ceiling, each threshold fires once
 * organism-wide, and a reservation whose holder was killed -9 is given back once it expires.
 */
const usePg = withPostgres('budget ledger tests');
let db: { url: string; drop(): Promise<void> } | null = null;
const pools: pg.Pool[] = [];
const ledgers: BudgetLedger[] = [];

beforeAll(async () => {
  if (!usePg) return;
  db = await createTestDatabase();
  const pool = createPool({ url: db.url, max: 2 });
  await migratePg(pool);
  await pool.end();
});
afterEach(async () => {
  killAll();
  for (const l of ledgers.splice(0)) await l.close?.();
});
afterAll(async () => {
  for (const p of pools.splice(0)) await p.end().catch(() => {});
  await db?.drop();
});

/** A ledger on its own pool, as another process would have. */
function pgLedger(defaultMaxTokens: number, leaseMs = 30_000, url = db!.url): PgBudgetLedger {
  const pool = createPool({ url, max: 4 });
  pool.on('error', () => {});
  pools.push(pool);
  const l = new PgBudgetLedger(pool, 'test', { defaultMaxTokens, leaseMs });
  ledgers.push(l);
  return l;
}

/** The archive of an embedded organism with a data directory (a real SQLite file). */
function sqliteArchive(): BudgetArchive {
  const storage = openSqliteStorage({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'organism-ledger-')) });
  storages.push(storage);
  return storage.budgets.archive;
}
const storages: Array<{ close(): void }> = [];
afterAll(() => {
  for (const s of storages.splice(0)) s.close();
});

const kinds: Array<{ name: string; make: (max: number) => BudgetLedger; skip: boolean }> = [
  { name: 'embedded (BudgetManager)', make: (max) => localBudgetLedger(new BudgetManager({ defaultMaxTokens: max })), skip: false },
  { name: 'embedded, finished budgets in SQLite', make: (max) => localBudgetLedger(new BudgetManager({ defaultMaxTokens: max, archive: sqliteArchive() })), skip: false },
  { name: 'PostgreSQL', make: (max) => pgLedger(max), skip: !usePg },
];

const use = (prompt: number, completion: number) => ({ promptTokens: prompt, completionTokens: completion });

for (const kind of kinds) {
  describe.skipIf(kind.skip)(`budget ledger contract: ${kind.name}`, () => {
    it('a lookup creates no budget; the first reservation does, at the default ceiling', async () => {
      const l = kind.make(1_000);
      const t = `t-${newId()}`;
      expect(await l.has(t)).toBe(false);
      expect(await l.get(t)).toBeNull();
      expect(await l.headroom(t)).toBe(1_000);
      expect(await l.has(t)).toBe(false);
      const r = await l.reserve(t, 300);
      expect(await l.get(t)).toMatchObject({ threadId: t, maxTokens: 1_000, totalTokens: 0, reservedTokens: 300, remaining: 1_000, isExhausted: false });
      expect(await l.headroom(t)).toBe(700);
      await l.cancel(r);
      expect(await l.get(t)).toMatchObject({ reservedTokens: 0 });
    });

    it('refuses exactly when used + reserved + request would pass the ceiling, with BUDGET_EXHAUSTED', async () => {
      const l = kind.make(1_000);
      const t = `t-${newId()}`;
      const a = await l.reserve(t, 600);
      await expect(Promise.resolve().then(() => l.reserve(t, 401))).rejects.toMatchObject({ code: 'BUDGET_EXHAUSTED' });
      const b = await l.reserve(t, 400);
      await l.settle(a, use(100, 50), 'agent');
      await l.cancel(b);
      expect(await l.get(t)).toMatchObject({ promptTokens: 100, completionTokens: 50, totalTokens: 150, reservedTokens: 0, remaining: 850 });
      await expect(Promise.resolve().then(() => l.reserve(t, 851))).rejects.toThrow(`Token budget exhausted for thread ${t}: 150 of 1000 tokens used, this call needs up to 851`);
      await expect(Promise.resolve().then(() => l.reserve(t, -1))).rejects.toThrow(RangeError);
    });

    it('settles a reservation once; thresholds fire once each, in order, also when one call jumps several', async () => {
      const l = kind.make(1_000);
      const t = `t-${newId()}`;
      const heard: BudgetThresholdEvent[] = [];
      l.onThreshold((e) => heard.push(e));
      const r1 = await l.reserve(t, 800);
      const fired = await l.settle(r1, use(500, 300), 'writer');
      expect(fired.map((e) => e.threshold)).toEqual([75]);
      expect(fired[0]).toMatchObject({ threadId: t, agent: 'writer', severity: 'warning', percentUsed: 80, tokensUsed: 800, tokensRemaining: 200, maxTokens: 1_000 });
      expect(await l.settle(r1, use(500, 300), 'writer')).toEqual([]); // a repeated settle bills nothing
      expect(await l.get(t)).toMatchObject({ totalTokens: 800 });
      const r2 = await l.reserve(t, 200);
      expect((await l.settle(r2, use(0, 190), 'writer')).map((e) => [e.threshold, e.severity])).toEqual([
        [90, 'critical'],
        [95, 'final'],
      ]);
      expect(heard.map((e) => e.threshold)).toEqual([75, 90, 95]);
      expect(await l.get(t)).toMatchObject({ totalTokens: 990, percentUsed: 99, remaining: 10 });
    });

    it('setCeiling: creates with create, refuses below usage, re-arms thresholds the thread is now below', async () => {
      const l = kind.make(1_000);
      const t = `t-${newId()}`;
      await expect(Promise.resolve().then(() => l.setCeiling(t, 500))).rejects.toMatchObject({ code: 'BUDGET_NOT_FOUND' });
      expect(await l.setCeiling(t, 500, { create: true })).toMatchObject({ maxTokens: 500, totalTokens: 0 });
      const r = await l.reserve(t, 400);
      expect((await l.settle(r, use(300, 100), 'a')).map((e) => e.threshold)).toEqual([75]);
      await expect(Promise.resolve().then(() => l.setCeiling(t, 399))).rejects.toMatchObject({ code: 'BUDGET_BELOW_USAGE' });
      await expect(Promise.resolve().then(() => l.setCeiling(t, 0))).rejects.toThrow(RangeError);
      expect(await l.setCeiling(t, 1_000)).toMatchObject({ maxTokens: 1_000, percentUsed: 40 });
      const again = await l.reserve(t, 400);
      expect((await l.settle(again, use(350, 0), 'a')).map((e) => e.threshold)).toEqual([75]); // re-armed
    });

    it("finish: the budget is kept, not live; a late settle bills it; the thread's next call goes on from its spend and ceiling", async () => {
      const l = kind.make(1_000);
      const t = `t-${newId()}`;
      const live = async () => (await l.list({ state: 'live', limit: 1000, offset: 0 })).items.map((b) => b.threadId);
      const finished = async () => (await l.list({ state: 'finished', limit: 1000, offset: 0 })).items.map((b) => b.threadId);
      await l.settle(await l.reserve(t, 100), use(60, 40), 'a');
      expect(await l.setCeiling(t, 500)).toMatchObject({ maxTokens: 500, active: true });
      const late = await l.reserve(t, 100);
      const before = await l.count();
      l.finish(t);
      await until(async () => (await l.get(t))?.active === false, 'the finish');
      expect(await l.count()).toBe(before - 1);
      expect(await live()).not.toContain(t);
      expect(await finished()).toContain(t);
      // A call in flight when the thread ended (a kill) is still billed.
      await l.settle(late, use(10, 10), 'a');
      expect(await l.get(t)).toMatchObject({ threadId: t, maxTokens: 500, totalTokens: 120, reservedTokens: 0, active: false });
      // A finished thread's ceiling can change: it stays finished.
      expect(await l.setCeiling(t, 400)).toMatchObject({ maxTokens: 400, totalTokens: 120, active: false });
      // An inject into the thread: its next call spends the same budget, live again.
      expect(await l.headroom(t)).toBe(280);
      await expect(Promise.resolve().then(() => l.reserve(t, 281))).rejects.toMatchObject({ code: 'BUDGET_EXHAUSTED' });
      const next = await l.reserve(t, 280);
      await l.settle(next, use(200, 80), 'a');
      expect(await l.get(t)).toMatchObject({ maxTokens: 400, totalTokens: 400, isExhausted: true, active: true });
      expect(await live()).toContain(t);
      expect(await finished()).not.toContain(t);
      l.finish(t);
      await until(async () => (await l.get(t))?.active === false, 'the second finish');
      // Exhausted for good: the call after the next inject is refused, as it would have been live.
      await expect(Promise.resolve().then(() => l.reserve(t, 1))).rejects.toMatchObject({ code: 'BUDGET_EXHAUSTED' });
      expect(await l.get(t)).toMatchObject({ totalTokens: 400, maxTokens: 400 });
    });

    it('lists by state and pages: live, finished, all (highest share used first)', async () => {
      const l = kind.make(1_000);
      const tag = newId();
      const ids = [10, 20, 30, 40].map((n) => ({ id: `p-${tag}-${n}`, n }));
      for (const { id, n } of ids) await l.settle(await l.reserve(id, n * 10), use(n * 10, 0), 'a');
      l.finish(ids[1]!.id);
      l.finish(ids[3]!.id);
      await until(async () => (await l.get(ids[3]!.id))?.active === false && (await l.get(ids[1]!.id))?.active === false, 'the finishes');
      const mine = async (state: 'live' | 'finished' | 'all') =>
        (await l.list({ state, limit: 1000, offset: 0 })).items.filter((b) => b.threadId.includes(tag)).map((b) => `${b.threadId.slice(-2)}:${b.active}`);
      expect(await mine('live')).toEqual(['30:true', '10:true']);
      expect(await mine('finished')).toEqual(['40:false', '20:false']);
      expect(await mine('all')).toEqual(['40:false', '30:true', '20:false', '10:true']);
      const all = await l.list({ state: 'all', limit: 1000, offset: 0 });
      const page = await l.list({ state: 'all', limit: 2, offset: 1 });
      expect(page.total).toBe(all.total);
      expect(page.items.map((b) => b.threadId)).toEqual(all.items.slice(1, 3).map((b) => b.threadId));
    });

    it('lists live budgets highest percentUsed first', async () => {
      const l = kind.make(1_000);
      const low = `t-${newId()}`;
      const high = `t-${newId()}`;
      await l.settle(await l.reserve(low, 100), use(100, 0), 'a');
      await l.settle(await l.reserve(high, 900), use(900, 0), 'a');
      const listed = (await l.list({ state: 'live', limit: 1000, offset: 0 })).items.filter((b) => b.threadId === low || b.threadId === high).map((b) => b.threadId);
      expect(listed).toEqual([high, low]);
    });
  });
}

describe.skipIf(!usePg)('PostgreSQL budget ledger across processes', () => {
  it('two ledgers (two pools) racing reservations on one thread never pass its ceiling, and each threshold fires once organism-wide (property)', async () => {
    const a = pgLedger(0);
    const b = pgLedger(0);
    let heard: BudgetThresholdEvent[] = [];
    a.onThreshold((e) => heard.push(e));
    b.onThreshold((e) => heard.push(e));
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 100, max: 5_000 }),
        fc.array(fc.record({ tokens: fc.integer({ min: 1, max: 800 }), side: fc.boolean(), spend: fc.double({ min: 0, max: 1, noNaN: true }) }), { minLength: 2, maxLength: 40 }),
        async (ceiling, calls) => {
          a.defaultMaxTokens = ceiling;
          b.defaultMaxTokens = ceiling;
          heard = [];
          const t = `race-${newId()}`;
          // Every call at once: reserve, then (if granted) settle part of it.
          const outcomes = await Promise.all(
            calls.map(async (c) => {
              const l = c.side ? a : b;
              let r: Reservation;
              try {
                r = await l.reserve(t, c.tokens);
              } catch (err) {
                expect(err).toMatchObject({ code: 'BUDGET_EXHAUSTED' });
                return 0;
              }
              const spent = Math.floor(c.tokens * c.spend);
              await l.settle(r, use(spent, 0), 'agent');
              return spent;
            }),
          );
          const final = (await a.get(t))!;
          expect(final.reservedTokens).toBe(0);
          expect(final.totalTokens).toBe(outcomes.reduce((x, y) => x + y, 0));
          expect(final.totalTokens).toBeLessThanOrEqual(ceiling);
          const counts = new Map<number, number>();
          for (const e of heard) counts.set(e.threshold, (counts.get(e.threshold) ?? 0) + 1);
          for (const threshold of [75, 90, 95]) {
            expect(counts.get(threshold) ?? 0).toBe((final.totalTokens / ceiling) * 100 >= threshold ? 1 : 0);
          }
        },
      ),
      { numRuns: 25 },
    );
  }, 120_000);

  it('many concurrent reservations of the last tokens: exactly as many are granted as fit', async () => {
    const a = pgLedger(1_000);
    const b = pgLedger(1_000);
    const t = `last-${newId()}`;
    const tries = await Promise.allSettled(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).reserve(t, 100)));
    expect(tries.filter((x) => x.status === 'fulfilled')).toHaveLength(10);
    expect(tries.filter((x) => x.status === 'rejected').every((x) => (x as PromiseRejectedResult).reason.code === 'BUDGET_EXHAUSTED')).toBe(true);
    expect(await a.get(t)).toMatchObject({ reservedTokens: 1_000, totalTokens: 0 });
  }, 120_000);

  it('a reservation whose holder was killed -9 is given back once it expires; a live holder keeps renewing its own', async () => {
    const t = `crash-${newId()}`;
    const script = `
      import { createPool } from './src/store/postgres/pool.ts';
      import { PgBudgetLedger } from './src/store/postgres/budget-ledger.ts';
      const pool = createPool({ url: process.env.DB_URL });
      const ledger = new PgBudgetLedger(pool, 'child', { defaultMaxTokens: 1000, leaseMs: 600, holder: 'child-' + process.pid });
      await ledger.reserve(process.env.THREAD, 900);
      console.log('reserved');
      setInterval(() => {}, 1000);
    `;
    const child = startProcess(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { DB_URL: db!.url, THREAD: t } });
    await until(() => child.output().includes('reserved'), `the child's reservation (output: ${child.output()})`);
    const other = pgLedger(1_000, 600);
    // Alive, the child renews its reservation: it outlives several leases.
    await new Promise((r) => setTimeout(r, 2_000));
    await expect(other.reserve(t, 200)).rejects.toMatchObject({ code: 'BUDGET_EXHAUSTED' });
    expect(await other.get(t)).toMatchObject({ reservedTokens: 900 });
    child.child.kill('SIGKILL');
    await child.exited;
    // Dead, it renews nothing: the reservation expires and is given back (by a sweep or by the refused reserve).
    const r = await until(() => other.reserve(t, 200).catch(() => null), "the dead holder's reservation to expire", 30_000);
    expect(await other.get(t)).toMatchObject({ reservedTokens: 200, totalTokens: 0 });
    await other.settle(r, use(150, 0), 'agent');
    expect(await other.get(t)).toMatchObject({ reservedTokens: 0, totalTokens: 150 });
  }, 120_000);

  it('two processes reserving and settling on one thread at once never pass its ceiling', async () => {
    const t = `procs-${newId()}`;
    const script = `
      import { createPool } from './src/store/postgres/pool.ts';
      import { PgBudgetLedger } from './src/store/postgres/budget-ledger.ts';
      const pool = createPool({ url: process.env.DB_URL, max: 4 });
      const ledger = new PgBudgetLedger(pool, 'child', { defaultMaxTokens: 5000 });
      let spent = 0;
      await Promise.all(Array.from({ length: 60 }, async (_, i) => {
        try {
          const r = await ledger.reserve(process.env.THREAD, 37 + (i % 50));
          const used = (i * 7) % (37 + (i % 50));
          await ledger.settle(r, { promptTokens: used, completionTokens: 0 }, 'a');
          spent += used;
        } catch (err) {
          if (err.code !== 'BUDGET_EXHAUSTED') throw err;
        }
      }));
      console.log('spent ' + spent);
      ledger.close();
      await pool.end();
    `;
    const children = [0, 1].map(() => startProcess(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { env: { DB_URL: db!.url, THREAD: t } }));
    const codes = await Promise.all(children.map((c) => c.exited));
    expect(codes, children.map((c) => c.output()).join('\n')).toEqual([0, 0]);
    const spent = children.map((c) => Number(/spent (\d+)/.exec(c.output())![1]));
    const row = (await pgLedger(5_000).get(t))!;
    expect(row.reservedTokens).toBe(0);
    expect(row.totalTokens).toBe(spent[0]! + spent[1]!);
    expect(row.totalTokens).toBeLessThanOrEqual(5_000);
  }, 120_000);

  it('while the database cannot be reached: a reservation waits for it (within a lease), a settlement is kept and lands once it is back', async () => {
    const proxy = new PgProxy(await freePort());
    await proxy.open();
    const remote = pgLedger(1_000, 3_000, viaProxy(db!.url, proxy));
    const local = pgLedger(1_000, 3_000);
    const t = `down-${newId()}`;
    const r = await remote.reserve(t, 500);
    await proxy.cut();
    setTimeout(() => void proxy.open(), 400);
    const waited = await remote.reserve(t, 100); // tried again until the proxy is back
    await remote.cancel(waited);
    const dropped = await remote.reserve(t, 50);
    await proxy.cut();
    await expect(remote.get(t)).rejects.toMatchObject({ code: 'STORAGE_UNAVAILABLE', status: 503 }); // a read: the catalogue's outage error (Retry-After)
    await remote.cancel(dropped); // never fails: the reservation expires instead
    expect(await remote.settle(r, use(300, 100), 'a')).toEqual([]); // not yet recorded: kept
    expect(await local.get(t)).toMatchObject({ totalTokens: 0 });
    await proxy.open();
    // The spend lands; the reservation whose cancel was lost expires and is swept.
    await until(
      async () => {
        const b = await local.get(t);
        return b?.totalTokens === 400 && b.reservedTokens === 0;
      },
      'the kept settlement to land and the lost cancel to expire',
      30_000,
    );
    await proxy.cut();
  }, 120_000);

  it("a finish waits while a delivery of the thread is PENDING or DISPATCHED anywhere (another process's part of the thread)", async () => {
    const l = pgLedger(1_000, 30_000);
    const t = `shared-${newId()}`;
    await l.settle(await l.reserve(t, 100), use(50, 0), 'a');
    const pool = createPool({ url: db!.url, max: 1 });
    pools.push(pool);
    const id = newId();
    await pool.query(
      `INSERT INTO journal (id, thread_id, sender, recipient, payload_type, payload, metadata, hops, msg_timestamp, attempt, state, attempts, created_at)
       VALUES ($1, $2, 'a', 'b', 'Text', '{}', '{}', 1, 0, 1, 'DISPATCHED', 1, 0)`,
      [id, t],
    );
    l.finish(t); // this process is done with the thread; another still works on it
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await l.get(t)).toMatchObject({ totalTokens: 50, active: true });
    await pool.query(`UPDATE journal SET state = 'ACKED' WHERE id = $1`, [id]);
    await until(async () => (await l.get(t))?.active === false, 'the finish once the delivery ended');
    expect(await l.get(t)).toMatchObject({ totalTokens: 50 });
  }, 120_000);

  it('a budget left live by a process that died before finishing it is finished by any process once its thread has ended', async () => {
    const l = pgLedger(1_000, 30_000);
    const ended = `ended-${newId()}`;
    const running = `running-${newId()}`;
    const planned = `planned-${newId()}`;
    for (const t of [ended, running]) await l.settle(await l.reserve(t, 100), use(50, 0), 'a');
    await l.setCeiling(planned, 500, { create: true });
    const pool = createPool({ url: db!.url, max: 1 });
    pools.push(pool);
    for (const [t, status] of [
      [ended, 'completed'],
      [running, 'active'],
    ] as const) {
      await pool.query(`INSERT INTO threads (id, status, participants, message_count, created_at, last_activity, error, metadata) VALUES ($1, $2, '{a}', 1, 0, 0, NULL, '{}')`, [t, status]);
    }
    expect(await l.finishEnded()).toBeGreaterThanOrEqual(1);
    expect(await l.get(ended)).toMatchObject({ totalTokens: 50, active: false });
    expect(await l.get(running)).toMatchObject({ active: true });
    expect(await l.get(planned)).toMatchObject({ maxTokens: 500, active: true }); // no thread yet: its first inject runs under it
  });

  it('the migration carries budgets saved as snapshots by a single-process organism over to rows', async () => {
    const fresh = await createTestDatabase();
    try {
      const pool = createPool({ url: fresh.url, max: 1 });
      await pool.query(PG_MIGRATIONS[0]!);
      await pool.query('CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version VALUES (1)');
      await pool.query('INSERT INTO budgets (thread_id, data) VALUES ($1, $2), ($3, $4)', [
        'saved',
        JSON.stringify({ threadId: 'saved', maxTokens: 2_000, promptTokens: 1_200, completionTokens: 400, fired: [75, 0.8] }),
        'broken',
        JSON.stringify({ threadId: 'broken' }),
      ]);
      // A thread that finished before the upgrade: its ceiling was kept, its spend is in the usage events.
      await pool.query("INSERT INTO thread_ceilings (thread_id, max_tokens) VALUES ('ended', 1000)");
      await pool.query(
        `INSERT INTO usage_events (id, ts, thread_id, agent_id, model, provider, prompt_tokens, completion_tokens, total_tokens, provider_latency_ms, total_latency_ms, org_id, metadata)
         VALUES ('e1', 0, 'ended', 'a', 'm', 'p', 500, 100, 600, 1, 1, '', '{}'), ('e2', 1, 'ended', 'a', 'm', 'p', 150, 50, 200, 1, 1, '', '{}')`,
      );
      await migratePg(pool);
      await pool.end();
      const l = pgLedger(1_000, 30_000, fresh.url);
      expect(await l.get('saved')).toMatchObject({ maxTokens: 2_000, totalTokens: 1_600, reservedTokens: 0 });
      expect(await l.get('ended')).toMatchObject({ maxTokens: 1_000, promptTokens: 650, completionTokens: 150, active: false });
      expect(await l.count()).toBe(1);
      // Its next inject goes on from that spend; 75 % counted as fired, so the next settle sends 90 only.
      await expect(l.reserve('ended', 201)).rejects.toMatchObject({ code: 'BUDGET_EXHAUSTED' });
      expect((await l.settle(await l.reserve('ended', 120), use(100, 20), 'a')).map((e) => e.threshold)).toEqual([90]);
      expect(await l.has('broken')).toBe(false);
      // 75 % had fired before the upgrade: the next settle sends 90 only.
      const r = await l.reserve('saved', 200);
      expect((await l.settle(r, use(0, 200), 'a')).map((e) => e.threshold)).toEqual([90]);
      l.close();
    } finally {
      for (const p of pools.splice(0)) await p.end().catch(() => {});
      await fresh.drop();
    }
  }, 120_000);
});
