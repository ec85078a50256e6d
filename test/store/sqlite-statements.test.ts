import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { countSqliteStatements, Counter } from '../../bench/children/chains/count.js';
import { send } from '../../src/core/handler.js';
import type { Message } from '../../src/core/message.js';
import type { ThreadRecord } from '../../src/core/thread.js';
import { Organism } from '../../src/organism/organism.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { SqliteJournal } from '../../src/store/sqlite/journal.js';
import { migrate } from '../../src/store/sqlite/migrations.js';
import { SqliteThreadStore } from '../../src/store/sqlite/threads.js';
import { GroupWriter } from '../../src/store/sqlite/writer.js';
import { newId } from '../../src/util/ids.js';
import { listener, loaded } from '../pump/harness.js';

const MESSAGES = 300;
/** Issue 28, target 2: the durable chain's SQL statements per injected message. */
const MAX_STATEMENTS_PER_MESSAGE = 7;

const undo: Array<() => void> = [];
afterEach(() => {
  for (const u of undo.splice(0)) u();
});

/** Counts every better-sqlite3 statement run in this process from now on (transaction control excluded). */
function countStatements(): Counter {
  const counter = new Counter();
  const probe = new Database(':memory:');
  undo.push(countSqliteStatements(Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, unknown>, counter));
  probe.close();
  return counter;
}

describe('SQLite durable chain', () => {
  it(`runs at most ${MAX_STATEMENTS_PER_MESSAGE} SQL statements per message through a 3-hop chain of no-op handlers`, async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-statements-'));
    undo.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const counter = countStatements();
    const organism = new Organism(
      loaded([
        listener('hop1', { peers: ['hop2'], handler: (payload) => send('hop2', payload) }),
        listener('hop2', { peers: ['hop3'], handler: (payload) => send('hop3', payload) }),
        listener('hop3'),
      ]),
      { storage: openSqliteStorage({ dataDir }) },
    );
    await organism.start();
    undo.unshift(() => void organism.stop());
    // Each thread's last record as the pump announced it: the store must hold exactly that.
    const announced = new Map<string, ThreadRecord>();
    let finished = 0;
    const allFinished = new Promise<void>((resolve) =>
      organism.bus.on((e) => {
        if (e.type !== 'thread_updated' && e.type !== 'thread_created') return;
        announced.set(e.thread.id, e.thread);
        if (e.thread.status === 'completed' && ++finished === MESSAGES) resolve();
      }),
    );

    const before = counter.statements;
    const injected = await Promise.all(Array.from({ length: MESSAGES }, (_, i) => organism.inject('hop1', { text: `m${i}` }, { waitMs: 30_000 })));
    await allFinished;
    await organism.stop();
    const perMessage = (counter.statements - before) / MESSAGES;

    // The chain did its work durably: every hop's entry ACKED, every thread completed in the store.
    const reopened = openSqliteStorage({ dataDir });
    try {
      const stats = await reopened.journal.stats();
      expect(stats.counts).toMatchObject({ ACKED: 3 * MESSAGES, PENDING: 0, DISPATCHED: 0, FAILED: 0 });
      const ids = injected.map((r) => r.threadId);
      const threads = await reopened.threads.getMany(ids);
      expect(ids.map((id) => threads.get(id))).toEqual(ids.map((id) => announced.get(id)));
      expect(ids.map((id) => threads.get(id)?.status)).toEqual(new Array(MESSAGES).fill('completed'));
      expect(threads.get(ids[0]!)).toMatchObject({ participants: ['api', 'hop1', 'hop2', 'hop3'], messageCount: 3, error: null });
    } finally {
      reopened.close();
    }
    expect(perMessage).toBeLessThanOrEqual(MAX_STATEMENTS_PER_MESSAGE);
  });
});

/** A journal and thread store on an in-memory database, wired as storage.ts wires them. */
function stores() {
  const db = new Database(':memory:');
  undo.push(() => db.close());
  migrate(db);
  const errors: unknown[] = [];
  const writer = new GroupWriter(db, (err) => errors.push(err));
  const journal = new SqliteJournal(db, writer, { retainDays: 7, failedRetainDays: 30 });
  return { db, writer, journal, threads: new SqliteThreadStore(db, writer), errors };
}

function message(attempt = 1): Message {
  return {
    id: newId(),
    threadId: newId(),
    from: 'api',
    to: 'a',
    payloadType: 'Text',
    payload: { text: 'hi' },
    timestamp: Date.now(),
    parentId: null,
    hops: 0,
    metadata: {},
    attempt,
    traceContext: null,
  };
}

const columns = (db: Database.Database, id: string) =>
  db.prepare('SELECT state, attempt, attempts, dispatched_at IS NOT NULL AS dispatched, acked_at IS NOT NULL AS acked, failed_at IS NOT NULL AS failed FROM journal WHERE id = ?').get(id);

describe('a delivery whose DISPATCHED mark and outcome are queued in one group commit', () => {
  it('writes only the outcome, with the columns the mark would have set', async () => {
    const { db, journal } = stores();
    const acked = message(2);
    const failed = message(3);
    await journal.pending([acked, failed]);
    const counter = countStatements();
    const writes = [journal.dispatched(acked), journal.acked(acked, [], []), journal.dispatched(failed), journal.failed(failed, 'handler_error', 'broke', [], [])];
    await Promise.all(writes);
    expect(counter.statements).toBe(2); // one UPDATE per delivery: no DISPATCHED update
    expect(columns(db, acked.id)).toEqual({ state: 'ACKED', attempt: 2, attempts: 2, dispatched: 1, acked: 1, failed: 0 });
    expect(columns(db, failed.id)).toEqual({ state: 'FAILED', attempt: 3, attempts: 3, dispatched: 1, acked: 0, failed: 1 });
    expect((await journal.stats()).counts).toMatchObject({ PENDING: 0, DISPATCHED: 0, ACKED: 1, FAILED: 1 });
  });

  it('writes both when they land in different commits, and when the batch is redone write by write', async () => {
    const { db, writer, journal, errors } = stores();
    const apart = message();
    await journal.pending([apart]);
    await journal.dispatched(apart);
    expect(columns(db, apart.id)).toMatchObject({ state: 'DISPATCHED', attempts: 1, dispatched: 1 });
    await journal.acked(apart, [], []);
    expect(columns(db, apart.id)).toMatchObject({ state: 'ACKED', attempts: 1, dispatched: 1, acked: 1 });

    // A write of the same commit fails: the writer redoes each write alone, the mark among them.
    const redone = message();
    await journal.pending([redone]);
    const counter = countStatements();
    const writes = Promise.all([journal.dispatched(redone), journal.acked(redone, [], [])]);
    const bad = writer.write(() => {
      throw new Error('refused');
    });
    await expect(bad).rejects.toThrow('refused');
    await writes;
    expect(errors).toHaveLength(1);
    expect(counter.statements).toBe(1 + 2); // the folded ack in the batch rolled back, then the mark and the ack alone
    expect(columns(db, redone.id)).toEqual({ state: 'ACKED', attempt: 1, attempts: 1, dispatched: 1, acked: 1, failed: 0 });
    expect((await journal.stats()).counts).toMatchObject({ PENDING: 0, DISPATCHED: 0, ACKED: 2 });
  });
});

describe('SQLite thread records', () => {
  it('are written once per group commit, one row per thread with its last record, and read back before the commit (get without flushing it)', async () => {
    const { threads } = stores();
    const record = (id: string, n: number): ThreadRecord => ({
      id,
      status: n < 3 ? 'active' : 'completed',
      participants: ['api', 'a', `p${n}`],
      messageCount: n,
      createdAt: 1,
      lastActivity: 1 + n,
      error: n === 3 ? 'it\'s "quoted"' : null,
      metadata: { orgId: 'acme', n: String(n) },
    });
    const counter = countStatements();
    for (let n = 1; n <= 3; n++) for (const id of ['t1', 't2']) threads.put(record(id, n));
    // get answers a record not committed yet from memory, and any other from the file without
    // flushing the group commit (an inject naming its thread reads once per message).
    expect(await threads.get('t1')).toEqual(record('t1', 3));
    expect(counter.statements).toBe(0);
    expect(await threads.get('t3')).toBeNull();
    expect(counter.statements).toBe(1); // the read alone: the upsert still waits for its commit
    expect(await threads.getMany(['t1'])).toEqual(new Map([['t1', record('t1', 3)]])); // flushes
    expect(counter.statements).toBe(3); // one upsert for both threads' last records, then the read
    expect(await threads.get('t2')).toEqual(record('t2', 3)); // committed: read back from the file
    expect(counter.statements).toBe(4);
    threads.put(record('t2', 4));
    expect(await threads.getMany(['t1', 't2'])).toEqual(
      new Map([
        ['t1', record('t1', 3)],
        ['t2', record('t2', 4)],
      ]),
    );
  });
});
