import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DATABASE_FILE, openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';

const opened: SqliteStorage[] = [];
afterEach(() => {
  while (opened.length) opened.pop()!.close();
});

const tmp = () => mkdtempSync(path.join(os.tmpdir(), 'organism-counts-'));

// The kept counts' rules are asserted on SQLite and PostgreSQL alike by
// test/store/contract/counts.contract.test.ts; the upgrade of an old SQLite file stays here.
describe('SQLite journal and thread counts', () => {
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
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 1, DISPATCHED: 0, AWAITING: 0, ACKED: 2, FAILED: 0 });
    expect((await s.journal.list({ limit: 10, offset: 0 })).total).toBe(3);
    expect((await s.journal.list({ agent: 'a', limit: 10, offset: 0 })).total).toBe(3);
    expect((await s.journal.list({ agent: 'b', limit: 10, offset: 0 })).total).toBe(1);
    expect((await s.threads.list({ status: 'completed', limit: 10, offset: 0 })).total).toBe(1);
  });
});
