import Database from 'better-sqlite3';
import fc from 'fast-check';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/pump/message.js';
import { DATABASE_FILE, openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { DELIVERY_STATES, THREAD_STATUSES, type DeliveryState, type ThreadStatus } from '../../src/store/types.js';
import { newId } from '../../src/util/ids.js';

/**
 * List totals and journal stats come from counts kept by triggers, and agent filters from a
 * merge of two index walks: both must answer exactly what plain COUNT(*) and OR queries do.
 */
const opened: SqliteStorage[] = [];
afterEach(() => {
  while (opened.length) opened.pop()!.close();
});

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'organism-counts-'));
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
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('add' as const), from: fc.nat(3), to: fc.nat(3), thread: fc.nat(4), fate: fc.constantFrom('pending' as const, 'dispatched' as const, 'acked' as const, 'failed' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constantFrom('redeliver' as const, 'prune' as const) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('thread' as const), thread: fc.nat(4), status: fc.constantFrom(...THREAD_STATUSES) }) },
);

/** What the plain queries say (ground truth). */
function reference(db: Database.Database, q: { state?: DeliveryState; agent?: string; threadId?: string; limit: number; offset: number; order: 'newest' | 'oldest' }) {
  const where: string[] = [];
  const params: unknown[] = [];
  if (q.state) (where.push('state = ?'), params.push(q.state));
  if (q.threadId) (where.push('thread_id = ?'), params.push(q.threadId));
  if (q.agent) (where.push('(sender = ? OR recipient = ?)'), params.push(q.agent, q.agent));
  const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
  const ids = db.prepare(`SELECT id FROM journal ${clause} ORDER BY seq ${q.order === 'oldest' ? 'ASC' : 'DESC'} LIMIT ? OFFSET ?`).pluck().all(...params, q.limit, q.offset);
  const total = db.prepare(`SELECT COUNT(*) FROM journal ${clause}`).pluck().get(...params);
  return { ids, total };
}

describe('SQLite journal and thread counts', () => {
  it('totals, stats and agent-filtered pages equal the plain queries after any mix of writes, state changes, redeliveries and pruning', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 40 }), async (steps) => {
        const dataDir = tmp();
        const s = openSqliteStorage({ dataDir, retainDays: 1, failedRetainDays: 2 });
        opened.push(s);
        const failed: Message[] = [];
        let clock = 0;
        for (const st of steps) {
          if (st.kind === 'add') {
            const m = msg(AGENTS[st.from]!, AGENTS[st.to]!, `t${st.thread}`);
            await s.journal.pending([m]);
            if (st.fate !== 'pending') await s.journal.dispatched(m);
            if (st.fate === 'acked') await s.journal.acked(m, [], []);
            if (st.fate === 'failed') (await s.journal.failed(m, 'handler_error', 'boom', [], []), failed.push(m));
          } else if (st.kind === 'redeliver') {
            const m = failed.shift();
            // It may have been pruned meanwhile.
            if (m) await s.journal.redeliver(m.id).catch((err: { code?: string }) => expect(err.code).toBe('JOURNAL_ENTRY_NOT_FOUND'));
          } else if (st.kind === 'prune') {
            clock += DAY;
            await s.journal.prune(Date.now() + clock + DAY);
          } else if (st.kind === 'thread') {
            s.threads.put({ id: `t${st.thread}`, status: st.status, participants: ['api'], messageCount: 1, createdAt: 1, lastActivity: 2, error: null, metadata: {} });
          }
        }
        await s.journal.list({ limit: 1, offset: 0 }); // flushes queued writes
        const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
        try {
          for (const state of [undefined, ...DELIVERY_STATES]) {
            for (const agent of [undefined, ...AGENTS, 'nobody']) {
              for (const threadId of [undefined, 't1']) {
                for (const [limit, offset] of [[3, 0], [2, 3], [50, 0]] as const) {
                  for (const order of ['newest', 'oldest'] as const) {
                    const q = { ...(state ? { state } : {}), ...(agent ? { agent } : {}), ...(threadId ? { threadId } : {}), limit, offset, order };
                    const page = await s.journal.list(q);
                    expect({ ids: page.items.map((e) => e.message.id), total: page.total }, JSON.stringify(q)).toEqual(reference(db, q));
                  }
                }
              }
            }
          }
          const stats = await s.journal.stats();
          for (const state of DELIVERY_STATES) expect(stats.counts[state]).toBe(db.prepare('SELECT COUNT(*) FROM journal WHERE state = ?').pluck().get(state));
          for (const status of [undefined, ...THREAD_STATUSES]) {
            const page = await s.threads.list({ ...(status ? { status } : {}), limit: 10, offset: 0 });
            expect(page.total).toBe(db.prepare(`SELECT COUNT(*) FROM threads ${status ? 'WHERE status = ?' : ''}`).pluck().get(...(status ? [status] : [])));
          }
        } finally {
          db.close();
        }
      }),
      { numRuns: 25 },
    );
  });

  it('a group commit that rolls back and is retried write by write counts each surviving row once', async () => {
    const s = openSqliteStorage({ dataDir: tmp() });
    opened.push(s);
    const good = msg('api', 'a', 't1');
    const bad = { ...msg('api', 'b', 't2'), payload: { n: 1n } } as unknown as Message; // JSON.stringify throws inside the batch
    const results = await Promise.allSettled([s.journal.pending([good]), s.journal.pending([bad]), s.journal.pending([msg('a', 'a', 't1')])]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect((await s.journal.list({ limit: 10, offset: 0 })).total).toBe(2);
    expect((await s.journal.list({ agent: 'a', limit: 10, offset: 0 })).total).toBe(2);
    expect((await s.journal.list({ agent: 'b', limit: 10, offset: 0 })).total).toBe(0);
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 2, DISPATCHED: 0, ACKED: 0, FAILED: 0 });
  });

  it('a database from a newer organism (higher schema version) is refused, not misread', () => {
    const dataDir = tmp();
    const db = new Database(path.join(dataDir, DATABASE_FILE));
    db.pragma(`user_version = ${MIGRATIONS.length + 1}`);
    db.close();
    expect(() => openSqliteStorage({ dataDir })).toThrow(`database schema version ${MIGRATIONS.length + 1} is newer than this organism (${MIGRATIONS.length})`);
  });

  it('a database written before the counts existed (schema 1) gets them right when it is opened', async () => {
    const dataDir = tmp();
    const db = new Database(path.join(dataDir, DATABASE_FILE));
    db.exec(MIGRATIONS[0]!);
    db.pragma('user_version = 1');
    const insert = db.prepare(`INSERT INTO journal (id, thread_id, sender, recipient, payload_type, payload, metadata, hops, msg_timestamp, attempt, state, attempts, created_at)
      VALUES (?, 't', ?, ?, 'Text', '{}', '{}', 0, 0, 1, ?, 1, 0)`);
    insert.run('m1', 'api', 'a', 'ACKED');
    insert.run('m2', 'a', 'a', 'PENDING');
    insert.run('m3', 'a', 'b', 'ACKED');
    db.prepare(`INSERT INTO threads VALUES ('t', 'completed', '[]', 3, 0, 0, NULL, '{}')`).run();
    db.close();
    const s = openSqliteStorage({ dataDir });
    opened.push(s);
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 1, DISPATCHED: 0, ACKED: 2, FAILED: 0 });
    expect((await s.journal.list({ limit: 10, offset: 0 })).total).toBe(3);
    expect((await s.journal.list({ agent: 'a', limit: 10, offset: 0 })).total).toBe(3);
    expect((await s.journal.list({ agent: 'b', limit: 10, offset: 0 })).total).toBe(1);
    expect((await s.threads.list({ status: 'completed', limit: 10, offset: 0 })).total).toBe(1);
  });
});
