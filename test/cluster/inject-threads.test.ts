import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/message.js';
import { newId } from '../../src/util/ids.js';
import { withPostgres } from '../store/contract/backends.js';
import { sentFor } from './entries.js';
import { clusterSchemas } from './schema-fixture.js';

/**
 * An inject on a clustered organism's journal (PgClusterJournal.pendingWithin) is one round
 * trip: the queue checked for room, its threads counted or created (one upsert), the messages
 * journaled and the claimers woken, with the COMMIT; a lot the queue has no room for all of is
 * written again with the depth read first. Its threads' records and the
 * kept thread count must be what the statement-by-statement path made: every message counted
 * into its thread, each thread created once, also when several processes inject into the same
 * new threads at once.
 */
const run = withPostgres('injects on a clustered journal');

const inject = (threadId: string, text: string, metadata: Record<string, string> = {}): Message => ({
  id: newId(),
  threadId,
  from: 'api',
  to: 'a',
  payloadType: 'Text',
  payload: { text },
  timestamp: Date.now(),
  parentId: null,
  hops: 0,
  metadata,
  attempt: 1,
});

describe.skipIf(!run)('injects on a clustered PostgreSQL journal', () => {
  const cluster = clusterSchemas();

  it('journals an inject in one round trip: the queue checked for room, its thread created, with the COMMIT', async () => {
    cluster.place(1);
    const storage = await cluster.open();
    const journal = storage.journal as unknown as { pendingWithin(messages: readonly Message[], maxQueue: number): Promise<boolean> };
    // Warm: the first inject on a connection prepares its statements.
    await journal.pendingWithin([inject('warm', 'w')], 1_000);
    const m = inject('t-new', 'hello');
    const { result, sent } = await sentFor([m.id], () => journal.pendingWithin([m], 1_000), ['queue-depth']);
    expect(result).toBe(true);
    expect(sent).toHaveLength(1);
    expect(sent[0]).toMatch(/^BEGIN; EXECUTE "organism:queue-room"\(1000\).*EXECUTE "organism:threads-upsert-injected".*EXECUTE "organism:journal-insert-counted".*pg_notify.*COMMIT$/s);
    const thread = await storage.threads.get('t-new');
    expect(thread).toMatchObject({ status: 'active', participants: ['api', 'a'], messageCount: 1, error: null });
    expect((await storage.journal.get(m.id))?.state).toBe('PENDING');
  });

  it('writes a lot of injects again with the depth read first when the queue has no room for all of them: admitted in order while there is room', async () => {
    cluster.place(1);
    const storage = await cluster.open();
    const journal = storage.journal as unknown as { pendingWithin(messages: readonly Message[], maxQueue: number): Promise<boolean> };
    expect(await journal.pendingWithin([inject('t1', 'one'), inject('t2', 'two')], 4)).toBe(true);
    const [a, b, c] = [inject('t3', 'three'), inject('t4', 'four'), inject('t5', 'five')];
    // Two PENDING: room for two more under 4. Sent together, they reach the writer as one lot.
    const { result, sent } = await sentFor([a.id, b.id, c.id], () => Promise.all([journal.pendingWithin([a], 4), journal.pendingWithin([b], 4), journal.pendingWithin([c], 4)]), [
      'queue-depth',
    ]);
    expect(result).toEqual([true, true, false]);
    expect(sent[0]).toMatch(/EXECUTE "organism:queue-room"\(2\).*COMMIT$/s);
    expect(sent[1]).toBe('ROLLBACK');
    expect(sent[2]).toMatch(/^BEGIN; (PREPARE .*; )?EXECUTE "organism:queue-depth"/s);
    expect(sent.slice(3).join('\n')).not.toContain('queue-room');
    expect((await storage.journal.stats()).counts.PENDING).toBe(4);
    expect(await storage.journal.get(c.id)).toBeNull();
    expect(await storage.threads.get('t5')).toBeNull();
  });

  it('counts every message into its thread and creates each thread once while three processes inject into the same new threads at once', async () => {
    const admin = cluster.place(2);
    const procs = await Promise.all([cluster.open(), cluster.open(), cluster.open()]);
    const threads = Array.from({ length: 8 }, (_, i) => `race-${i}`);
    const rounds = 5;
    for (let r = 0; r < rounds; r++) {
      await Promise.all(
        procs.map((p, k) =>
          (p.journal as unknown as { pendingWithin(messages: readonly Message[], maxQueue: number): Promise<boolean> }).pendingWithin(
            // Each process its own order of the threads, several in one inject.
            (k % 2 === 0 ? threads : [...threads].reverse()).map((t) => inject(t, `${r}/${k}`)),
            100_000,
          ),
        ),
      );
    }
    const rows = (await admin.query<{ id: string; message_count: number; status: string }>('SELECT id, message_count, status FROM threads ORDER BY id')).rows;
    expect(rows).toEqual(threads.toSorted().map((id) => ({ id, message_count: rounds * procs.length, status: 'active' })));
    // The kept thread count (what GET /threads totals read): each thread once.
    expect((await procs[0]!.threads.list({ limit: 0, offset: 0 })).total).toBe(threads.length);
    const kept = (await admin.query<{ n: string }>(`SELECT COALESCE(SUM(n), 0) AS n FROM row_counts WHERE name = 'threads'`)).rows[0]!.n;
    expect(Number(kept)).toBe(threads.length);
  });

  it('an inject into a stored thread makes it active again with its metadata and no error; a killed thread stays killed, its messages counted', async () => {
    cluster.place(1);
    const storage = await cluster.open();
    const journal = storage.journal as unknown as { pendingWithin(messages: readonly Message[], maxQueue: number): Promise<boolean> };
    await journal.pendingWithin([inject('done', 'first', { run: '1' }), inject('stopped', 'first')], 1_000);
    const done = (await storage.threads.get('done'))!;
    storage.threads.put({ ...done, status: 'error', error: 'it broke' });
    const stopped = (await storage.threads.get('stopped'))!;
    await storage.threads.kill!({ ...stopped, status: 'killed' });
    await journal.pendingWithin([inject('done', 'again', { run: '2' }), inject('stopped', 'again')], 1_000);
    expect(await storage.threads.get('done')).toMatchObject({ status: 'active', error: null, metadata: { run: '2' }, messageCount: 2 });
    expect(await storage.threads.get('stopped')).toMatchObject({ status: 'killed', messageCount: 2 });
  });
});
