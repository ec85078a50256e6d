import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ThreadRecord } from '../../src/core/thread.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { migrate } from '../../src/store/sqlite/migrations.js';
import { DEFER_MS, SqliteThreadStore } from '../../src/store/sqlite/threads.js';
import { GroupWriter } from '../../src/store/sqlite/writer.js';

const open: Database.Database[] = [];
const dirs: string[] = [];
afterEach(() => {
  vi.useRealTimers();
  for (const db of open.splice(0)) db.close();
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function store() {
  const db = new Database(':memory:');
  open.push(db);
  migrate(db);
  const writer = new GroupWriter(db, () => {});
  const threads = new SqliteThreadStore(db, writer);
  /** The record as committed in the file, the writer flushed (as a read of another store would). */
  const stored = () => {
    writer.flush();
    return db.prepare('SELECT status, message_count AS n FROM threads WHERE id = ?').get('t-1') as { status: string; n: number } | undefined;
  };
  /** Lets the write-behind put's commit land and its promise settle. */
  const committed = async () => {
    writer.flush();
    for (let i = 0; i < 3; i++) await new Promise((r) => setImmediate(r));
  };
  return { threads, stored, committed };
}

const record = (status: ThreadRecord['status'], messageCount: number): ThreadRecord => ({
  id: 't-1',
  status,
  participants: ['a'],
  messageCount,
  createdAt: 1,
  lastActivity: messageCount,
  error: null,
  metadata: {},
});

describe('SQLite thread records of a thread stored active', () => {
  it('a newer active record waits (at most DEFER_MS) for its write; get and list see it at once', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { threads, stored, committed } = store();
    threads.put(record('active', 1));
    await committed();
    expect(stored()).toEqual({ status: 'active', n: 1 });
    threads.put(record('active', 2));
    threads.put(record('active', 3));
    await committed();
    expect(stored()).toEqual({ status: 'active', n: 1 });
    expect((await threads.get('t-1'))?.messageCount).toBe(3);
    vi.advanceTimersByTime(DEFER_MS);
    await committed();
    expect(stored()).toEqual({ status: 'active', n: 3 });
  });

  it('list and getMany write what waits first', async () => {
    const { threads, stored, committed } = store();
    threads.put(record('active', 1));
    await committed();
    threads.put(record('active', 2));
    expect((await threads.list({ limit: 10, offset: 0 })).items.map((t) => t.messageCount)).toEqual([2]);
    expect(stored()).toEqual({ status: 'active', n: 2 });
    threads.put(record('active', 3));
    expect((await threads.getMany(['t-1'])).get('t-1')?.messageCount).toBe(3);
  });

  it('its first record, any other status and any record while an earlier one is uncommitted go into the next commit', async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const { threads, stored, committed } = store();
    threads.put(record('active', 1));
    threads.put(record('active', 2)); // the first is not committed yet
    await committed();
    expect(stored()).toEqual({ status: 'active', n: 2 });
    threads.put(record('active', 3)); // waits
    threads.put(record('completed', 4)); // goes now, and the waiting one is dropped
    await committed();
    expect(stored()).toEqual({ status: 'completed', n: 4 });
    vi.advanceTimersByTime(DEFER_MS);
    await committed();
    expect(stored()).toEqual({ status: 'completed', n: 4 });
    threads.put(record('active', 5)); // revived: stored completed, written at once
    await committed();
    expect(stored()).toEqual({ status: 'active', n: 5 });
  });

  it('closing the storage writes what waits', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'thread-defer-'));
    dirs.push(dir);
    const first = openSqliteStorage({ dataDir: dir });
    first.threads.put(record('active', 1));
    await first.threads.list({ limit: 1, offset: 0 });
    await new Promise((r) => setImmediate(r));
    first.threads.put(record('active', 7));
    first.close();
    const again = openSqliteStorage({ dataDir: dir });
    try {
      expect((await again.threads.get('t-1'))?.messageCount).toBe(7);
    } finally {
      again.close();
    }
  });
});
