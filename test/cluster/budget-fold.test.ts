import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { BudgetLedger } from '../../src/core/budget.js';
import type { Message } from '../../src/core/message.js';
import { openPostgresStorage, type PostgresStorage } from '../../src/store/postgres/index.js';
import { newId } from '../../src/util/ids.js';
import { createTestDatabase, testPool, withPostgres } from '../store/contract/backends.js';

/**
 * A clustered organism finishes a thread's budget in the transaction of the outcome that
 * finishes the thread (the settle), not with one more statement per thread after it: the row
 * stops being live there, and stays, spend, ceiling and fired thresholds and all (a thread's
 * budget is its whole life's: it never resets when the thread completes). The ledger's own
 * finish of that thread then sends nothing.
 */
const run = withPostgres('budget finished in the settle transaction');
const NO_OUTCOME = { outgoing: [], usage: [], threadError: null } as const;

interface BudgetRow {
  live: boolean;
  max_tokens: number;
  prompt_tokens: number;
  completion_tokens: number;
  reserved: number;
  fired: number[];
}

describe.skipIf(!run)("a thread's budget finished with its last outcome (cluster mode, PostgreSQL)", () => {
  let db: { url: string; drop(): Promise<void> };
  let admin: pg.Pool;
  let storage: PostgresStorage;
  let ledger: BudgetLedger;

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await ledger?.close();
    await storage?.close().catch(() => undefined);
    await admin?.end();
  });
  afterAll(async () => {
    await db.drop();
  });

  const open = async () => {
    const schema = `s_${randomBytes(5).toString('hex')}`;
    admin = testPool({ connectionString: db.url, max: 2, options: `-c search_path=${schema}` });
    storage = await openPostgresStorage({ url: db.url, schema, cluster: { maxAttempts: 3 } });
    ledger = storage.budgetLedger({ defaultMaxTokens: 1_000 });
  };
  const message = (threadId: string, to: string): Message => ({
    id: newId(),
    threadId,
    from: 'api',
    to,
    payloadType: 'Text',
    payload: { text: 'x' },
    timestamp: Date.now(),
    parentId: null,
    hops: 0,
    metadata: {},
    attempt: 1,
  });
  const budget = async (threadId: string) =>
    (await admin.query<BudgetRow>('SELECT live, max_tokens::int, prompt_tokens::int, completion_tokens::int, reserved::int, fired FROM thread_budgets WHERE thread_id = $1', [threadId]))
      .rows[0];
  /** Journals a message of the thread (an inject), claims and acks it: the thread's last outcome. */
  const runOnce = async (threadId: string) => {
    const m = message(threadId, 'a');
    await storage.journal.pending([m]);
    const [claimed] = await storage.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    expect(claimed!.message.id).toBe(m.id);
    return { m, result: await storage.work!.ack(claimed!.message, NO_OUTCOME) };
  };

  it("finishes the budget in the transaction of the thread's last ack, keeping its spend; the ledger's finish sends nothing; the next inject goes on from it", async () => {
    await open();
    const t = 'thread-1';
    // The thread spends 800 of its 1000 tokens (75 % fired) while its first message runs.
    const r = await ledger.reserve(t, 900);
    expect(await ledger.settle(r, { promptTokens: 500, completionTokens: 300 }, 'a')).toEqual([expect.objectContaining({ threshold: 75 })]);
    expect(await budget(t)).toEqual({ live: true, max_tokens: 1_000, prompt_tokens: 500, completion_tokens: 300, reserved: 0, fired: [75] });

    const { m, result } = await runOnce(t);
    expect(result).toEqual({ committed: true, threadFinished: 'completed' });
    // Not live any more, nothing reset; written by the very transaction that acked the entry.
    expect(await budget(t)).toEqual({ live: false, max_tokens: 1_000, prompt_tokens: 500, completion_tokens: 300, reserved: 0, fired: [75] });
    const xmin = async (sql: string, id: string) => (await admin.query<{ x: string }>(sql, [id])).rows[0]!.x;
    expect(await xmin('SELECT xmin::text AS x FROM thread_budgets WHERE thread_id = $1', t)).toBe(await xmin('SELECT xmin::text AS x FROM journal WHERE id = $1', m.id));

    // The pump's finish of the thread it was told finished sends no statement.
    const pool = (ledger as unknown as { pool: pg.Pool }).pool;
    const sent: string[] = [];
    const query = pool.query.bind(pool);
    (pool as unknown as { query: (...a: unknown[]) => unknown }).query = (...a: unknown[]) => {
      sent.push(String(a[0]));
      return (query as (...b: unknown[]) => unknown)(...a);
    };
    ledger.finish(t);
    (pool as unknown as { query: unknown }).query = query;
    expect(sent).toEqual([]);

    // The next inject goes on from the spend: 200 tokens are left, not 1000.
    await expect(ledger.reserve(t, 300)).rejects.toMatchObject({ code: 'BUDGET_EXHAUSTED' });
    const again = await ledger.reserve(t, 150);
    expect((await budget(t))!.live).toBe(true);
    await ledger.settle(again, { promptTokens: 100, completionTokens: 50 }, 'a');
    expect((await runOnce(t)).result).toEqual({ committed: true, threadFinished: 'completed' });
    expect(await budget(t)).toEqual({ live: false, max_tokens: 1_000, prompt_tokens: 600, completion_tokens: 350, reserved: 0, fired: [75, 90, 95] });
  });

  it('leaves the budget live while the thread has work left', async () => {
    await open();
    const t = 'thread-2';
    await ledger.settle(await ledger.reserve(t, 10), { promptTokens: 5, completionTokens: 5 }, 'a');
    const [first, second] = [message(t, 'a'), message(t, 'a')];
    await storage.journal.pending([first, second]);
    const [claimed] = await storage.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    expect(await storage.work!.ack(claimed!.message, NO_OUTCOME)).toEqual({ committed: true, threadFinished: null });
    expect((await budget(t))!.live).toBe(true);
  });
});
