import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { migrate } from '../../src/store/sqlite/migrations.js';
import { SqliteThreadStore } from '../../src/store/sqlite/threads.js';
import { GroupWriter } from '../../src/store/sqlite/writer.js';
import type { ThreadRecord } from '../../src/core/thread.js';

const open: Database.Database[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const db of open.splice(0)) db.close();
});

function store() {
  const db = new Database(':memory:');
  open.push(db);
  migrate(db);
  const errors: unknown[] = [];
  const threads = new SqliteThreadStore(db, new GroupWriter(db, (err) => errors.push(err)));
  return { db, threads, errors };
}

const record = (status: ThreadRecord['status'], error: string | null = null): ThreadRecord => ({
  id: 't-1',
  status,
  participants: ['a'],
  messageCount: 2,
  createdAt: 1,
  lastActivity: 2,
  error,
  metadata: {},
});

async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    // setImmediate, not setTimeout: one test fakes setTimeout.
    await new Promise((r) => setImmediate(r));
  }
}

describe('SQLite thread records when a write fails', () => {
  it('are written again once writes succeed (a thread must not stay active in the store after it ended)', async () => {
    const { db, threads, errors } = store();
    threads.put(record('active'));
    expect((await threads.get('t-1'))?.status).toBe('active');
    // Writes refused, as on a full disk: the thread's final record fails.
    db.pragma('query_only = ON');
    threads.put(record('error', 'budget exhausted'));
    await until(async () => errors.length > 0, 'the failed write');
    db.pragma('query_only = OFF');
    await until(async () => (await threads.get('t-1'))?.status === 'error', 'the record written again');
    expect((await threads.get('t-1'))?.error).toBe('budget exhausted');
  });

  it('a newer record of the thread wins over the retry of an older one', async () => {
    // The retry timer (setTimeout) is faked and fired when the test says, not waited for.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { db, threads, errors } = store();
    db.pragma('query_only = ON');
    threads.put(record('active'));
    await until(async () => errors.length > 0, 'the failed write');
    // The failed write scheduled its retry.
    await until(async () => vi.getTimerCount() === 1, 'the retry to be scheduled');
    db.pragma('query_only = OFF');
    threads.put(record('completed'));
    await until(async () => (db.prepare('SELECT status FROM threads WHERE id = ?').get('t-1') as { status: string } | undefined)?.status === 'completed', 'the newer record committed');
    vi.runOnlyPendingTimers(); // the retry of the older record
    await new Promise((r) => setImmediate(r)); // any write it queued runs
    await new Promise((r) => setImmediate(r));
    expect(errors).toHaveLength(1);
    expect((await threads.get('t-1'))?.status).toBe('completed');
  });

  it('are written again right after the next commit, without waiting for the retry timer', async () => {
    // Wired as storage.ts wires it: a commit tells the thread store the disk has room again.
    // The retry timer (setTimeout) is faked and never advanced, so only the commit can retry.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const db = new Database(':memory:');
    open.push(db);
    migrate(db);
    const errors: unknown[] = [];
    let threads: SqliteThreadStore | null = null;
    const writer = new GroupWriter(
      db,
      (err) => errors.push(err),
      () => threads?.afterCommit(),
    );
    threads = new SqliteThreadStore(db, writer);
    db.pragma('query_only = ON');
    threads.put(record('error', 'budget exhausted'));
    await until(async () => errors.length > 0, 'the failed write');
    db.pragma('query_only = OFF');
    // Any other write that commits (here another thread's record) brings the failed one back.
    threads.put({ ...record('active'), id: 't-2' });
    await until(async () => (await threads!.get('t-1'))?.status === 'error', 'the record written again after a commit');
  });

  it('a write that failed before it ran (its transaction could not begin) does not swallow the records put after it', async () => {
    const db = new Database(':memory:');
    open.push(db);
    migrate(db);
    const errors: unknown[] = [];
    const writer = new GroupWriter(db, (err) => errors.push(err));
    let refuse = true;
    writer.addHook({
      begin: () => {
        if (refuse) throw new Error('cannot begin');
      },
      commit: () => undefined,
    });
    const threads = new SqliteThreadStore(db, writer);
    threads.put(record('active'));
    await until(async () => errors.length > 0, 'the failed write');
    refuse = false;
    const other = { ...record('completed'), id: 't-2' };
    threads.put(other);
    expect(await threads.get('t-2')).toEqual(other);
    // The failed one is written again too.
    await until(async () => (await threads.get('t-1'))?.status === 'active', 'the record written again');
  });

  it('are read in place of their rows by list and getMany while their write fails (a thread is not listed waiting after its ask was answered)', async () => {
    const { db, threads, errors } = store();
    const other = (id: string, lastActivity: number): ThreadRecord => ({ ...record('waiting'), id, lastActivity });
    threads.put({ ...record('waiting'), lastActivity: 5 });
    threads.put(other('t-0', 1));
    threads.put(other('t-9', 9));
    await until(async () => (await threads.list({ status: 'waiting', limit: 10, offset: 0 })).total === 3, 'the records committed');
    // Full disk: the answered ask's thread goes on (active), its record cannot be written.
    db.pragma('query_only = ON');
    threads.put({ ...record('active'), lastActivity: 7 });
    await until(async () => errors.length > 0, 'the failed write');
    const waiting = await threads.list({ status: 'waiting', limit: 10, offset: 0 });
    expect(waiting.items.map((t) => t.id)).toEqual(['t-9', 't-0']);
    expect(waiting.total).toBe(2);
    const active = await threads.list({ status: 'active', limit: 10, offset: 0 });
    expect(active.items.map((t) => [t.id, t.status])).toEqual([['t-1', 'active']]);
    expect(active.total).toBe(1);
    // All of them, newest activity first, paged as the rows would be.
    const all = await threads.list({ limit: 2, offset: 0 });
    expect(all.items.map((t) => t.id)).toEqual(['t-9', 't-1']);
    expect(all.total).toBe(3);
    expect((await threads.list({ limit: 2, offset: 2 })).items.map((t) => t.id)).toEqual(['t-0']);
    expect((await threads.list({ agent: 'a', startTime: 6, limit: 10, offset: 0 })).items.map((t) => t.id)).toEqual(['t-9', 't-1']);
    expect((await threads.list({ agent: 'nobody', limit: 10, offset: 0 })).total).toBe(0);
    expect((await threads.getMany(['t-1', 't-0'])).get('t-1')?.status).toBe('active');
    // Once the disk has room the row says so too.
    db.pragma('query_only = OFF');
    await until(async () => (db.prepare('SELECT status FROM threads WHERE id = ?').get('t-1') as { status: string }).status === 'active', 'the record written again');
    expect((await threads.list({ status: 'waiting', limit: 10, offset: 0 })).total).toBe(2);
  });
});
