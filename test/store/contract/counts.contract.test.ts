import fc from 'fast-check';
import { expect, it } from 'vitest';
import type { Message } from '../../../src/core/message.js';
import { DELIVERY_STATES, type DeliveryState, type Journal } from '../../../src/core/journal.js';
import { THREAD_STATUSES, type ThreadStatus } from '../../../src/core/thread.js';
import { newId } from '../../../src/util/ids.js';
import { eachBackend, type Place, type StoreUnderTest } from './backends.js';

// `held` is never a stored status: a hold lives in thread_holds and is laid over the record when read
// (test/store/contract/safety.contract.test.ts covers status=held).
const STORED_STATUSES = THREAD_STATUSES.filter((s) => s !== 'held');

/**
 * List totals and journal stats come from kept counts, and agent filters from a merge of two
 * index walks: whatever the writes, they must answer exactly what plain COUNT(*) and OR
 * queries over the rows do.
 */
const AGENTS = ['api', 'a', 'b', 'c'] as const;
const DAY = 86_400_000;

function msg(from: string, to: string, threadId: string): Message {
  return { id: newId(), threadId, from, to, payloadType: 'Text', payload: { text: 'x' }, timestamp: Date.now(), parentId: null, hops: 0, metadata: {}, attempt: 1 };
}

type Step =
  | { kind: 'add'; from: number; to: number; thread: number; fate: 'pending' | 'dispatched' | 'acked' | 'failed' }
  | { kind: 'redeliver' | 'prune' }
  | { kind: 'thread'; thread: number; status: ThreadStatus };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('add' as const),
      from: fc.nat(3),
      to: fc.nat(3),
      thread: fc.nat(4),
      fate: fc.constantFrom('pending' as const, 'dispatched' as const, 'acked' as const, 'failed' as const),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('redeliver' as const, 'prune' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('thread' as const), thread: fc.nat(4), status: fc.constantFrom(...STORED_STATUSES) }) },
);

type ListQuery = { state?: DeliveryState; agent?: string; threadId?: string; limit: number; offset: number; order: 'newest' | 'oldest' };

/** What the plain queries say (ground truth). */
async function reference(place: Place, q: ListQuery) {
  const where: string[] = [];
  const params: unknown[] = [];
  if (q.state) where.push('state = ?'), params.push(q.state);
  if (q.threadId) where.push('thread_id = ?'), params.push(q.threadId);
  if (q.agent) where.push('(sender = ? OR recipient = ?)'), params.push(q.agent, q.agent);
  const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const ids = (
    await place.rows<{ id: string }>(`SELECT id FROM journal ${clause} ORDER BY seq ${q.order === 'oldest' ? 'ASC' : 'DESC'} LIMIT ? OFFSET ?`, [...params, q.limit, q.offset])
  ).map((r) => r.id);
  const total = Number((await place.rows<{ n: number }>(`SELECT COUNT(*) AS n FROM journal ${clause}`, params))[0]!.n);
  return { ids, total };
}

const countRows = async (place: Place, sql: string, params: unknown[] = []) => Number((await place.rows<{ n: number }>(sql, params))[0]!.n);

type Op = 'add' | 'dispatch' | 'ack' | 'fail' | 'ackUnjournaled' | 'failUnjournaled' | 'redeliver' | 'prune' | 'reopen';
const op = fc.constantFrom<Op>('add', 'add', 'dispatch', 'ack', 'fail', 'ackUnjournaled', 'failUnjournaled', 'redeliver', 'prune', 'reopen');

/** Applies one operation to a random entry (by index into what was journaled). */
async function apply(journal: Journal & { prune(now?: number): Promise<number> }, known: Message[], o: Op, pick: number, clock: { t: number }): Promise<void> {
  const m = known.length ? known[pick % known.length]! : null;
  const fresh = () => {
    const f = msg('a', 'b', 't');
    known.push(f);
    return f;
  };
  switch (o) {
    case 'add':
      return journal.pending([fresh()]);
    case 'dispatch':
      return m ? journal.dispatched(m) : undefined;
    case 'ack':
      return m ? journal.acked(m, [], []) : undefined;
    case 'fail':
      return m ? journal.failed(m, 'handler_error', 'boom', [], []) : undefined;
    case 'ackUnjournaled':
      return journal.acked(fresh(), [msg('b', 'c', 't')], []);
    case 'failUnjournaled':
      return journal.failed(fresh(), 'killed', 'gone', [], []);
    case 'redeliver':
      if (m) await journal.redeliver(m.id).catch(() => {});
      return;
    case 'prune':
      clock.t += 3 * DAY;
      await journal.prune(Date.now() + clock.t);
      return;
    case 'reopen':
      return;
  }
}

eachBackend('kept counts contract', (backend) => {
  it('totals, stats and agent-filtered pages equal the plain queries after any mix of writes, state changes, redeliveries and pruning', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const place = backend.place();
        const s = await place.open({ retainDays: 1, failedRetainDays: 2 });
        const failed: Message[] = [];
        let clock = 0;
        for (const st of steps) {
          if (st.kind === 'add') {
            const m = msg(AGENTS[st.from]!, AGENTS[st.to]!, `t${st.thread}`);
            await s.journal.pending([m]);
            if (st.fate !== 'pending') await s.journal.dispatched(m);
            if (st.fate === 'acked') await s.journal.acked(m, [], []);
            if (st.fate === 'failed') await s.journal.failed(m, 'handler_error', 'boom', [], []), failed.push(m);
          } else if (st.kind === 'redeliver') {
            const m = failed.shift();
            // It may have been pruned meanwhile.
            if (m) await s.journal.redeliver(m.id).catch((err: { code?: string }) => expect(err.code).toBe('JOURNAL_ENTRY_NOT_FOUND'));
          } else if (st.kind === 'prune') {
            clock += DAY;
            await s.journal.prune(Date.now() + clock + DAY);
          } else if (st.kind === 'thread') {
            s.threads.put({
              id: `t${st.thread}`,
              status: st.status,
              participants: ['api', AGENTS[st.thread % 4]!],
              messageCount: 1,
              createdAt: 1,
              lastActivity: 2,
              error: null,
              metadata: {},
            });
          }
        }
        await s.journal.list({ limit: 1, offset: 0 }); // waits for queued writes
        await s.threads.list({ limit: 1, offset: 0 });
        for (const state of [undefined, ...DELIVERY_STATES]) {
          for (const agent of [undefined, ...AGENTS, 'nobody']) {
            for (const threadId of [undefined, 't1']) {
              for (const [limit, offset] of [
                [3, 0],
                [2, 3],
                [50, 0],
              ] as const) {
                for (const order of ['newest', 'oldest'] as const) {
                  const q = { ...(state ? { state } : {}), ...(agent ? { agent } : {}), ...(threadId ? { threadId } : {}), limit, offset, order };
                  const page = await s.journal.list(q);
                  expect({ ids: page.items.map((e) => e.message.id), total: page.total }, JSON.stringify(q)).toEqual(await reference(place, q));
                }
              }
            }
          }
        }
        const stats = await s.journal.stats();
        for (const state of DELIVERY_STATES) expect(stats.counts[state], state).toBe(await countRows(place, 'SELECT COUNT(*) AS n FROM journal WHERE state = ?', [state]));
        for (const status of [undefined, ...STORED_STATUSES]) {
          for (const agent of [undefined, 'a', 'nobody']) {
            const page = await s.threads.list({ ...(status ? { status } : {}), ...(agent ? { agent } : {}), limit: 10, offset: 0 });
            const all = await s.threads.list({ limit: 100, offset: 0 });
            const expected = all.items.filter((t) => (!status || t.status === status) && (!agent || t.participants.includes(agent)));
            expect(page.total, `${status} ${agent}`).toBe(expected.length);
            expect(page.items.map((t) => t.id)).toEqual(expected.slice(0, 10).map((t) => t.id));
          }
          expect((await s.threads.list({ ...(status ? { status } : {}), limit: 10, offset: 0 })).total).toBe(
            await countRows(place, `SELECT COUNT(*) AS n FROM threads ${status ? 'WHERE status = ?' : ''}`, status ? [status] : []),
          );
        }
        await s.close();
      }),
      { numRuns: 15 },
    );
  }, 300_000);

  it('entries per state kept for /metrics equal COUNT(*) per state after any mix of transitions, prunes and reopen-with-recovery', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(op, fc.nat(50)), { minLength: 1, maxLength: 40 }), async (steps) => {
        const place = backend.place();
        let s: StoreUnderTest = await place.open({ retainDays: 1, failedRetainDays: 2 });
        const known: Message[] = [];
        const clock = { t: 0 };
        for (const [o, pick] of steps) {
          if (o === 'reopen') {
            await s.close();
            s = await place.open({ retainDays: 1, failedRetainDays: 2 });
            await s.journal.recover(newId(), 3);
            continue;
          }
          await apply(s.journal, known, o, pick, clock);
        }
        await s.journal.get('flush'); // waits for queued writes
        const kept = await s.journal.keptStats();
        for (const state of DELIVERY_STATES) expect(kept.counts[state], state).toBe(await countRows(place, 'SELECT COUNT(*) AS n FROM journal WHERE state = ?', [state]));
        const oldest = await place.rows<{ t: number | null }>(`SELECT MIN(created_at) AS t FROM journal WHERE state = 'PENDING'`);
        expect(kept.oldestPendingAgeMs === null).toBe(oldest[0]!.t === null);
        await s.close();
      }),
      { numRuns: 25 },
    );
  }, 300_000);
});
