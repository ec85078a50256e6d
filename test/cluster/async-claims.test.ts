import pg from 'pg';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { deferred, eventually, listener, loaded } from '../pump/harness.js';
import { withPostgres } from '../store/contract/backends.js';
import { clusterSchemas } from './schema-fixture.js';

/**
 * Claims commit asynchronously (synchronous_commit = off, see src/cluster/queue/claim-sql.ts):
 * a crash of the database server may lose a claim the claimer was told had committed. The
 * entry is then PENDING again, at the same attempt, while the process that claimed it runs it.
 * Claimed again by that process, it must not start a second time: the delivery under way acks
 * against the new claim, and the handler runs once.
 */
const run = withPostgres('asynchronous claims');

describe.skipIf(!run)('asynchronous claims (cluster mode, PostgreSQL)', () => {
  const cluster = clusterSchemas();

  it('runs each claim as one statement (its own transaction) whose commit is asynchronous: synchronous_commit is off in the transaction that claims', async () => {
    const admin = cluster.place(2);
    const storage = await cluster.open();
    // Every query the claim sends.
    const sent: unknown[] = [];
    const Client = pg.Client as unknown as { prototype: { query: (...args: unknown[]) => unknown } };
    const original = Client.prototype.query;
    const clients: unknown[] = [];
    Client.prototype.query = function (this: unknown, ...args: unknown[]) {
      sent.push(args[0]);
      clients.push(this);
      return original.apply(this, args);
    };
    try {
      await storage.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    } finally {
      Client.prototype.query = original;
    }
    // One statement, no BEGIN or SET around it: the function's transaction is the claim's. (The
    // heartbeat and poll of the open store may send queries of their own meanwhile.)
    const texts = sent.map((q) => (typeof q === 'string' ? q : (q as { text: string }).text));
    const claims = texts.flatMap((t, i) => (t.includes('organism_claim(') ? [i] : []));
    expect(claims.map((i) => texts[i])).toEqual([expect.stringMatching(/^SELECT claim FROM organism_claim\(/)]);
    // Nothing else on the claim's connection while it was checked out for the claim.
    expect(texts.filter((_, i) => clients[i] === clients[claims[0]!] && i !== claims[0])).toEqual([]);
    // The setting the function makes holds for the rest of its transaction, its commit included.
    const client = await admin.connect();
    try {
      await client.query('BEGIN');
      expect((await client.query('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('on');
      await client.query(`SELECT organism_claim('w', ARRAY['a'], 1, 10, 10, 0, 'w/claim', ARRAY[]::text[], ARRAY[]::int[])`);
      expect((await client.query('SHOW synchronous_commit')).rows[0].synchronous_commit).toBe('off');
    } finally {
      await client.query('ROLLBACK');
      client.release();
    }
  });

  it('a claim the database lost is claimed again by the process running it, which does not start it twice: the handler runs once, the entry is acked once', async () => {
    const admin = cluster.place(2);
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) });
    const gate = deferred();
    const started = deferred();
    let runs = 0;
    const config = loaded([
      listener('slow', {
        handler: async () => {
          runs++;
          started.resolve();
          await gate.promise;
        },
      }),
    ]);
    const { organism, storage } = await cluster.start(config, { logger });
    const workerId = storage.cluster!.workerId;

    const { threadId, messageId } = await organism.inject('slow', { text: 'once' });
    await started.promise;
    // The database lost the claim (its commit never reached the disk before a server crash):
    // the entry and the kept counts are as before it, PENDING at the same attempt.
    await admin.query(`UPDATE journal SET state = 'PENDING', claimed_by = NULL, dispatched_at = NULL, attempts = attempt - 1 WHERE id = $1 AND state = 'DISPATCHED'`, [messageId]);
    await admin.query(`UPDATE row_counts SET n = n + CASE name WHEN 'journal:PENDING' THEN 1 ELSE -1 END WHERE slot = $1 AND name IN ('journal:PENDING', 'journal:DISPATCHED')`, [
      `${workerId}/claim`,
    ]);
    await admin.query('SELECT pg_notify($1, $2)', [storage.cluster!.channels.work, 'slow']);

    // Claimed again, by the only process there is: the one still running it.
    await eventually(
      async () => (await admin.query(`SELECT 1 FROM journal WHERE id = $1 AND state = 'DISPATCHED' AND claimed_by = $2`, [messageId, workerId])).rowCount === 1,
      20_000,
      'the entry to be claimed again',
    );
    const guarded = () => lines.some((l) => l.includes('not started twice'));
    await eventually(() => guarded() || runs > 1, 20_000, 'the claim to come back to the process');
    gate.resolve();

    await eventually(async () => (await organism.thread(threadId))?.status === 'completed', 20_000, 'the thread to complete');
    expect(runs).toBe(1);
    expect(guarded()).toBe(true);
    const entries = (await admin.query(`SELECT id, state, attempt, attempts, claimed_by FROM journal ORDER BY seq`)).rows;
    expect(entries).toEqual([{ id: messageId, state: 'ACKED', attempt: 1, attempts: 1, claimed_by: workerId }]);
    const counts = (await admin.query(`SELECT name, SUM(n)::int AS n FROM row_counts WHERE name LIKE 'journal:%' GROUP BY name ORDER BY name`)).rows;
    expect(counts).toEqual([
      { name: 'journal:ACKED', n: 1 },
      { name: 'journal:DISPATCHED', n: 0 },
      { name: 'journal:FAILED', n: 0 },
      { name: 'journal:PENDING', n: 0 },
    ]);
  }, 90_000);
});
