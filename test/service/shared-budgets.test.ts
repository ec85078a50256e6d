import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool } from '../../src/store/postgres/pool.js';
import { PgBudgetLedger } from '../../src/store/postgres/budget-ledger.js';
import type { PostgresStorage } from '../../src/store/postgres/index.js';
import { startService, STORAGE_KINDS, type Service } from './fixture.js';

/**
 * On PostgreSQL the budget routes answer from the database, not from the process: what
 * another process (here a ledger on its own pool) spent and set is what the API shows, and a
 * ceiling set through the API holds for that other process's reservations.
 */
describe.skipIf(!STORAGE_KINDS.includes('postgres'))('thread budgets shared through PostgreSQL', () => {
  let svc: Service;
  let other: PgBudgetLedger;
  const pools: Array<{ end(): Promise<void> }> = [];

  beforeAll(async () => {
    svc = await startService({ storage: 'postgres' });
    // The test database has no password: the storage's redacted address is its URL.
    const pool = createPool({ url: (svc.organism.storage as unknown as PostgresStorage).where, max: 2 });
    pool.on('error', () => {});
    pools.push(pool);
    other = new PgBudgetLedger(pool, 'other process', { defaultMaxTokens: svc.organism.budgets.defaultMaxTokens });
  });
  afterAll(async () => {
    other.close();
    for (const p of pools) await p.end();
    await svc.close();
  });

  it('reads what another process spent; a ceiling set through the API refuses that process past it', async () => {
    const r = await other.reserve('elsewhere', 1_000);
    await other.settle(r, { promptTokens: 600, completionTokens: 200 }, 'agent');
    const one = await svc.request('GET', '/api/v1/usage/threads/elsewhere');
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ threadId: 'elsewhere', totalTokens: 800, active: true });
    const all = await svc.request('GET', '/api/v1/usage/threads');
    expect(all.body.threads.map((t: { threadId: string }) => t.threadId)).toContain('elsewhere');
    expect((await svc.request('GET', '/api/v1/usage')).body.usage.activeThreads).toBe(all.body.count);

    const set = await svc.request('PUT', '/api/v1/usage/threads/elsewhere', { body: { maxTokens: 1_000 } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ maxTokens: 1_000, totalTokens: 800, remaining: 200 });
    await expect(other.reserve('elsewhere', 201)).rejects.toMatchObject({ code: 'BUDGET_EXHAUSTED' });
    const fits = await other.reserve('elsewhere', 200);
    await other.cancel(fits);
    // A ceiling set before a thread's first call is the one the other process reserves under.
    expect((await svc.request('PUT', '/api/v1/usage/threads/planned', { body: { maxTokens: 50 } })).status).toBe(200);
    await expect(other.reserve('planned', 51)).rejects.toMatchObject({ code: 'BUDGET_EXHAUSTED' });
  });
});
