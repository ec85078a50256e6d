import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { FENCED_SQL } from '../../src/cluster/queue/cluster-journal.js';
import { EXTERNAL_SENDER, type Message } from '../../src/core/message.js';
import type { PostgresStorage } from '../../src/store/postgres/index.js';
import { withPostgres } from '../store/contract/backends.js';
import { message, sentFor, usageOf as usage } from './entries.js';
import { clusterSchemas } from './schema-fixture.js';

/**
 * A lot of fenced outcomes on a clustered journal whose messages stay in the lot's threads is
 * one round trip: the fence goes with the COMMIT and raises (organism_check) unless every
 * outcome still held its claim, and then the lot is written again with the fence first, only
 * the outcomes still held committed. Either way the journal, the threads and the kept counts
 * must be what the fence-first path alone made.
 */
const run = withPostgres('outcome lots on a clustered journal');
const NO_OUTCOME = { outgoing: [], usage: [], threadError: null } as const;

describe.skipIf(!run)('outcome lots on a clustered PostgreSQL journal', () => {
  const cluster = clusterSchemas();

  /** The kept counts against the rows: both say the same. */
  const countsMatchRows = async (storage: PostgresStorage, admin: pg.Pool) => {
    const stats = await storage.journal.stats();
    const byState = Object.fromEntries((await admin.query<{ state: string; n: number }>('SELECT state, COUNT(*)::int AS n FROM journal GROUP BY state')).rows.map((r) => [r.state, r.n]));
    for (const state of ['PENDING', 'DISPATCHED', 'ACKED', 'FAILED'] as const) expect(stats.counts[state], state).toBe(byState[state] ?? 0);
  };

  it('commits a lot whose messages stay in its threads in one round trip, the fence with the COMMIT', async () => {
    const admin = cluster.place(2);
    const storage = await cluster.open();
    // Warm: the first lot on a connection prepares its statements.
    await storage.journal.pending([message('w', 'a', 'warm')]);
    const [warm] = await storage.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    await storage.work!.ack(warm!.message, { outgoing: [message('w', 'b', 'next', warm!.message)], usage: [], threadError: null });

    await storage.journal.pending([message('t1', 'a', 'one'), message('t2', 'a', 'two')]);
    const [c1, c2] = (await storage.work!.claim(['a'], 10, { global: 10, perAgent: 10 })).map((c) => c.message);
    const next = message('t1', 'b', 'next', c1!);
    const { result, sent } = await sentFor([c1!.id, c2!.id], () =>
      Promise.all([storage.work!.ack(c1!, { outgoing: [next], usage: [usage(c1!, 5)], threadError: null }), storage.work!.fail(c2!, 'handler_error', 'boom', NO_OUTCOME)]),
    );
    expect(result).toEqual([
      { committed: true, threadFinished: null },
      { committed: true, threadFinished: 'error' },
    ]);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(
      /^BEGIN; SET LOCAL plan_cache_mode = force_generic_plan; EXECUTE "organism:journal-fenced-whole".*"organism:journal-insert-counted".*"organism:usage-insert".*"organism:threads-count-settle".*COMMIT$/s,
    );
    // The reply is counted into t1 by the statement that settles it, not by one of its own.
    expect(sent[0]).not.toContain('"organism:threads-count"');
    expect((await admin.query(`SELECT thread_id, recipient, state, error FROM journal WHERE thread_id IN ('t1', 't2') ORDER BY seq`)).rows).toEqual([
      { thread_id: 't1', recipient: 'a', state: 'ACKED', error: null },
      { thread_id: 't2', recipient: 'a', state: 'FAILED', error: 'boom' },
      { thread_id: 't1', recipient: 'b', state: 'PENDING', error: null },
    ]);
    expect((await admin.query(`SELECT id, status, message_count, participants FROM threads WHERE id IN ('t1', 't2') ORDER BY id`)).rows).toEqual([
      // t1 counted its reply (to b) and settled in one statement, one row version.
      { id: 't1', status: 'active', message_count: 2, participants: ['api', 'a', 'b'] },
      { id: 't2', status: 'error', message_count: 1, participants: ['api', 'a'] },
    ]);
    expect((await admin.query(`SELECT thread_id, prompt_tokens::int AS n FROM usage_events`)).rows).toEqual([{ thread_id: 't1', n: 5 }]);
    await countsMatchRows(storage, admin);
  });

  it("finds a lot's entries by their ids on a plan made while the journal was small, never by reading every DISPATCHED entry once per outcome", async () => {
    const admin = cluster.place(2);
    const storage = await cluster.open();
    const plans = await admin.connect();
    try {
      // The fence runs on a generic plan kept per connection, made at its first lot: here, with
      // one entry in the journal.
      await storage.journal.pending([message('w', 'a', 'warm')]);
      await plans.query(`PREPARE fence AS ${FENCED_SQL}`);
      await plans.query('SET plan_cache_mode = force_generic_plan');
      await plans.query(`EXPLAIN EXECUTE fence('{}', '{}', '{}', '{}', '{}', '{}', 0, '{}', '{}')`);
      const N = 300;
      await storage.journal.pending(Array.from({ length: N }, (_, i) => message(`t${i}`, 'a', `m${i}`)));
      const claimed = (await storage.work!.claim(['a'], N + 1, { global: 1_000, perAgent: 1_000 })).map((c) => c.message);
      expect(claimed).toHaveLength(N + 1);
      const array = (items: ReadonlyArray<string | number | null>) => plans.escapeLiteral(`{${items.map((v) => (v === null ? 'NULL' : `"${v}"`)).join(',')}}`);
      const args = [
        array(claimed.map((m) => m.id)),
        array(claimed.map(() => storage.work!.workerId)),
        array(claimed.map((m) => m.attempt)),
        array(claimed.map(() => 'ACKED')),
        array(claimed.map(() => null)),
        array(claimed.map(() => null)),
        Date.now(),
        array(claimed.map((m) => m.id)),
        array(claimed.map((m) => m.threadId)),
      ];
      await plans.query('BEGIN');
      const plan = JSON.stringify((await plans.query(`EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE fence(${args.join(', ')})`)).rows[0]['QUERY PLAN']);
      await plans.query('ROLLBACK');
      // Every outcome moved; no DISPATCHED entry read but by its id, no pair of rows compared.
      expect(plan).toMatch(/"Node Type":"ModifyTable","Operation":"Update".*?"Actual Rows":301/);
      expect(plan).not.toContain('journal_claimed');
      expect(plan).not.toContain('Rows Removed by Join Filter');
    } finally {
      plans.release();
    }
  });

  it('writes a lot again with the fence first when an outcome lost its claim: the others commit, that one is dropped whole', async () => {
    const admin = cluster.place(2);
    const storage = await cluster.open();
    await storage.journal.pending([message('t1', 'a', 'one'), message('t2', 'a', 'two'), message('t3', 'a', 'three')]);
    const [c1, c2, c3] = (await storage.work!.claim(['a'], 10, { global: 10, perAgent: 10 })).map((c) => c.message);
    // t2's claim was taken back and claimed again elsewhere meanwhile.
    await admin.query(`UPDATE journal SET claimed_by = 'elsewhere', attempt = 2, attempts = 2 WHERE id = $1`, [c2!.id]);
    const outcome = (m: Message, tokens: number) => ({ outgoing: [message(m.threadId, 'b', `after ${m.id}`, m)], usage: [usage(m, tokens)], threadError: null });
    const { result, sent } = await sentFor([c1!.id, c2!.id, c3!.id], () =>
      Promise.all([storage.work!.ack(c1!, outcome(c1!, 1)), storage.work!.ack(c2!, outcome(c2!, 2)), storage.work!.ack(c3!, outcome(c3!, 3))]),
    );
    expect(result).toEqual([
      { committed: true, threadFinished: null },
      { committed: false, threadFinished: null },
      { committed: true, threadFinished: null },
    ]);
    // Sent whole, refused by the check, rolled back; then the fence first, the rest with the COMMIT.
    expect(sent[0]).toMatch(/EXECUTE "organism:journal-fenced-whole".*COMMIT$/s);
    expect(sent[1]).toBe('ROLLBACK');
    expect(sent[2]).toMatch(/^BEGIN; (PREPARE .*; )?EXECUTE "organism:journal-fenced"\(/s);
    expect(sent.slice(3).join('\n')).not.toContain('journal-fenced');
    expect((await admin.query(`SELECT thread_id, recipient, state, claimed_by FROM journal ORDER BY seq`)).rows).toEqual([
      { thread_id: 't1', recipient: 'a', state: 'ACKED', claimed_by: storage.work!.workerId },
      { thread_id: 't2', recipient: 'a', state: 'DISPATCHED', claimed_by: 'elsewhere' },
      { thread_id: 't3', recipient: 'a', state: 'ACKED', claimed_by: storage.work!.workerId },
      { thread_id: 't1', recipient: 'b', state: 'PENDING', claimed_by: null },
      { thread_id: 't3', recipient: 'b', state: 'PENDING', claimed_by: null },
    ]);
    expect((await admin.query(`SELECT thread_id, prompt_tokens::int AS n FROM usage_events ORDER BY thread_id`)).rows).toEqual([
      { thread_id: 't1', n: 1 },
      { thread_id: 't3', n: 3 },
    ]);
    expect((await admin.query(`SELECT id, message_count FROM threads ORDER BY id`)).rows).toEqual([
      { id: 't1', message_count: 2 },
      { id: 't2', message_count: 1 },
      { id: 't3', message_count: 2 },
    ]);
    await countsMatchRows(storage, admin);
  });

  it('writes a lot again with the fence first when a thread of it is gone (erased meanwhile)', async () => {
    const admin = cluster.place(2);
    const storage = await cluster.open();
    await storage.journal.pending([message('t1', 'a', 'one'), message('t2', 'a', 'two')]);
    const [c1, c2] = (await storage.work!.claim(['a'], 10, { global: 10, perAgent: 10 })).map((c) => c.message);
    await admin.query(`DELETE FROM threads WHERE id = 't2'`);
    const { result, sent } = await sentFor([c1!.id, c2!.id], () => Promise.all([storage.work!.ack(c1!, NO_OUTCOME), storage.work!.ack(c2!, NO_OUTCOME)]));
    expect(result).toEqual([
      { committed: true, threadFinished: 'completed' },
      { committed: true, threadFinished: null },
    ]);
    expect(sent[0]).toMatch(/journal-fenced-whole/);
    expect(sent[1]).toBe('ROLLBACK');
    expect(sent[2]).toMatch(/EXECUTE "organism:journal-fenced"\(/);
    expect((await admin.query(`SELECT thread_id, state FROM journal ORDER BY seq`)).rows).toEqual([
      { thread_id: 't1', state: 'ACKED' },
      { thread_id: 't2', state: 'ACKED' },
    ]);
    await countsMatchRows(storage, admin);
  });

  it('sends the fence first for a lot that sends into another thread or to the outside world', async () => {
    const admin = cluster.place(2);
    const storage = await cluster.open();
    await storage.journal.pending([message('t1', 'a', 'one'), message('t2', 'a', 'two')]);
    const [c1, c2] = (await storage.work!.claim(['a'], 10, { global: 10, perAgent: 10 })).map((c) => c.message);
    const elsewhere = message('t-new', 'b', 'forked', c1!);
    const first = await sentFor([c1!.id], () => storage.work!.ack(c1!, { outgoing: [elsewhere], usage: [], threadError: null }));
    expect(first.result).toEqual({ committed: true, threadFinished: 'completed' });
    expect(first.sent[0]).toMatch(/^BEGIN; (PREPARE .*; )?EXECUTE "organism:journal-fenced"\(/s);
    const reply = message('t2', EXTERNAL_SENDER, 'out', c2!);
    const second = await sentFor([c2!.id], () => storage.work!.ack(c2!, { outgoing: [reply], usage: [], threadError: null }));
    expect(second.result.committed).toBe(true);
    expect(second.sent[0]).toMatch(/EXECUTE "organism:journal-fenced"\(/);
    expect(second.sent.join('\n')).not.toContain('journal-fenced-whole');
    expect((await admin.query(`SELECT thread_id, recipient, state FROM journal ORDER BY seq`)).rows).toEqual([
      { thread_id: 't1', recipient: 'a', state: 'ACKED' },
      { thread_id: 't2', recipient: 'a', state: 'ACKED' },
      { thread_id: 't-new', recipient: 'b', state: 'PENDING' },
      { thread_id: 't2', recipient: EXTERNAL_SENDER, state: 'ACKED' },
    ]);
    await countsMatchRows(storage, admin);
  });
});
