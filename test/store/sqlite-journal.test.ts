import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import type { Message } from '../../src/pump/message.js';
import { DATABASE_FILE, openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import { PRUNE_ACKED_SQL, PRUNE_FAILED_SQL } from '../../src/store/sqlite/journal.js';
import type { UsageEvent } from '../../src/usage/types.js';
import { newId } from '../../src/util/ids.js';

const opened: SqliteStorage[] = [];
afterEach(() => {
  while (opened.length) opened.pop()!.close();
});

function tmp(): string {
  return mkdtempSync(path.join(os.tmpdir(), 'organism-store-'));
}

function open(dataDir = tmp()) {
  const s = openSqliteStorage({ dataDir });
  opened.push(s);
  return s;
}

function msg(over: Partial<Message> = {}): Message {
  return { id: newId(), threadId: 't1', from: 'api', to: 'a', payloadType: 'Text', payload: { text: 'x' }, timestamp: Date.now(), parentId: null, hops: 0, metadata: { orgId: 'acme' }, attempt: 1, ...over };
}

function usage(messageId: string | null, over: Partial<UsageEvent> = {}): UsageEvent {
  return {
    id: newId(), timestamp: Date.now(), threadId: 't1', agentId: 'a', messageId, model: 'm', provider: 'p', promptTokens: 10, completionTokens: 5, totalTokens: 15,
    cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null, providerLatencyMs: 1, totalLatencyMs: 2, cost: 0.5, metadata: { orgId: 'acme' }, ...over,
  };
}

describe('SQLite journal', () => {
  it('moves entries PENDING -> DISPATCHED -> ACKED, committing outgoing messages and usage with the ack', async () => {
    const s = open();
    const m = msg();
    await s.journal.pending([m]);
    expect((await s.journal.get(m.id))?.state).toBe('PENDING');
    void s.journal.dispatched(m);
    const out = msg({ from: 'a', to: 'b', parentId: m.id, hops: 1 });
    await s.journal.acked(m, [out], [usage(m.id)]);
    const entry = await s.journal.get(m.id);
    expect(entry).toMatchObject({ state: 'ACKED', attempts: 1 });
    expect(entry?.ackedAt).toBeTypeOf('number');
    expect((await s.journal.get(out.id))?.state).toBe('PENDING');
    expect((await s.usage.history({ limit: 10, offset: 0 })).total).toBe(1);
  });

  it('group-commits concurrent writers: all resolve, all durable, in order', async () => {
    const s = open();
    const messages = Array.from({ length: 200 }, (_, i) => msg({ payload: { text: String(i) } }));
    await Promise.all(messages.map((m) => s.journal.pending([m])));
    const page = await s.journal.list({ limit: 500, offset: 0, order: 'oldest' });
    expect(page.total).toBe(200);
    expect(page.items.map((e) => e.message.payload['text'])).toEqual(messages.map((_, i) => String(i)));
  });

  it('a redelivered ack does not bill its usage twice', async () => {
    const s = open();
    const m = msg();
    const u = usage(m.id);
    await s.journal.pending([m]);
    await s.journal.acked(m, [], [u]);
    await s.journal.acked(m, [], [u]);
    expect((await s.usage.billing({})).requestCount).toBe(1);
  });

  it('recovers PENDING in order, DISPATCHED with attempt + 1, and fails those past max attempts', async () => {
    const dir = tmp();
    const s = openSqliteStorage({ dataDir: dir });
    const a = msg({ payload: { text: 'a' } });
    const b = msg({ payload: { text: 'b' } });
    const c = msg({ payload: { text: 'c' }, attempt: 3 });
    await s.journal.pending([a, b, c]);
    await s.journal.dispatched(b);
    await s.journal.dispatched(c);
    s.close(); // as if the process died here

    const t = open(dir);
    const { messages, report } = await t.journal.recover('boot-2', 3);
    expect(messages.map((m) => [m.payload['text'], m.attempt])).toEqual([
      ['a', 1],
      ['b', 2],
    ]);
    expect(report).toMatchObject({ bootId: 'boot-2', pending: 1, redelivered: 1, failedMaxAttempts: 1 });
    expect(await t.journal.get(c.id)).toMatchObject({ state: 'FAILED', failureReason: 'max_attempts' });
    expect((await t.journal.stats()).lastRecovery).toMatchObject({ bootId: 'boot-2', redelivered: 1 });
  });

  it('redelivers FAILED entries only (409 otherwise, 404 when unknown)', async () => {
    const s = open();
    const m = msg();
    await s.journal.pending([m]);
    await expect(s.journal.redeliver(m.id)).rejects.toThrow(Errors.JOURNAL_NOT_REDELIVERABLE(m.id, 'PENDING').detail);
    await s.journal.failed(m, 'handler_error', 'boom', [], []);
    const again = await s.journal.redeliver(m.id);
    expect(again.attempt).toBe(2);
    expect(await s.journal.get(m.id)).toMatchObject({ state: 'PENDING', error: null });
    await expect(s.journal.redeliver('nope')).rejects.toThrow('Journal entry not found: nope');
  });

  it('prunes ACKED entries after retain_days and FAILED after 30 days, leaving the rest', async () => {
    const s = open();
    const acked = msg();
    const failed = msg();
    const pending = msg();
    await s.journal.pending([acked, failed, pending]);
    await s.journal.acked(acked, [], []);
    await s.journal.failed(failed, 'timeout', 't', [], []);
    const day = 86_400_000;
    expect(await s.journal.prune(Date.now() + 6 * day)).toBe(0);
    expect(await s.journal.prune(Date.now() + 8 * day)).toBe(1);
    expect(await s.journal.get(acked.id)).toBeNull();
    expect(await s.journal.get(failed.id)).not.toBeNull();
    expect(await s.journal.prune(Date.now() + 31 * day)).toBe(1);
    expect(await s.journal.get(pending.id)).not.toBeNull();
  });

  it('pruning reads only the old entries through the partial indexes, not every ACKED row', () => {
    const dataDir = tmp();
    open(dataDir);
    const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
    try {
      const plan = (sql: string) => (db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(0, 1) as { detail: string }[]).map((r) => r.detail).join('\n');
      expect(plan(PRUNE_ACKED_SQL)).toContain('journal_acked_at');
      expect(plan(PRUNE_FAILED_SQL)).toContain('journal_failed_at');
    } finally {
      db.close();
    }
  });

  it('lists with filters, totals and paging, newest first', async () => {
    const s = open();
    const ms = [msg({ threadId: 'x' }), msg({ threadId: 'y', from: 'a', to: 'b' }), msg({ threadId: 'x', to: 'b' })];
    await s.journal.pending(ms);
    const byThread = await s.journal.list({ threadId: 'x', limit: 1, offset: 0 });
    expect(byThread.total).toBe(2);
    expect(byThread.items[0]!.message.id).toBe(ms[2]!.id);
    expect((await s.journal.list({ agent: 'b', limit: 10, offset: 0 })).total).toBe(2);
    expect((await s.journal.list({ state: 'ACKED', limit: 10, offset: 0 })).total).toBe(0);
    expect((await s.journal.stats()).counts).toEqual({ PENDING: 3, DISPATCHED: 0, ACKED: 0, FAILED: 0 });
  });
});

describe('the data directory', () => {
  it('refuses a second process on the same data directory, with a clear message', () => {
    const dir = tmp();
    open(dir);
    const script = `import { openSqliteStorage } from ${JSON.stringify(path.resolve('src/store/index.ts'))};
      try { openSqliteStorage({ dataDir: ${JSON.stringify(dir)} }); console.log('OPENED'); } catch (e) { console.log('REFUSED ' + e.message); }`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(r.stdout.trim()).toBe(`REFUSED ${Errors.STORAGE_LOCKED(dir, process.pid).detail}`);
  });

  it('takes over a lock left by a process that no longer exists', () => {
    const dir = tmp();
    writeFileSync(path.join(dir, 'organism.lock'), '999999999');
    expect(() => open(dir)).not.toThrow();
  });

  it('refuses a corrupt database file', () => {
    const dir = tmp();
    writeFileSync(path.join(dir, 'organism.db'), Buffer.alloc(8192, 7));
    expect(() => open(dir)).toThrow(/is not a valid organism database/);
  });

  it.skipIf(process.getuid?.() === 0)('refuses an unwritable directory', () => {
    const dir = tmp();
    chmodSync(dir, 0o500);
    expect(() => open(path.join(dir, 'sub'))).toThrow(/is not writable/);
  });

  it('refuses a directory that cannot be created (even as root)', () => {
    const file = path.join(tmp(), 'plain-file');
    writeFileSync(file, 'x');
    const dir = path.join(file, 'data');
    expect(() => open(dir)).toThrow(Errors.STORAGE_UNWRITABLE(dir, 'ENOTDIR').detail);
  });

  // A real full file system: a 64 KiB tmpfs (root only; skipped where mounting is not allowed).
  it('refuses a full disk with a clear message, whether the lock or the database cannot be written', (ctx) => {
    const mnt = tmp();
    if (process.getuid?.() !== 0 || spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', mnt]).status !== 0) return ctx.skip();
    try {
      writeFileSync(path.join(mnt, 'fill'), Buffer.alloc(60 * 1024)); // room for the lock, not for the database
      expect(() => open(path.join(mnt, 'a'))).toThrow(/^The disk holding .*a is full \(\d+ bytes free\): free space there/);
      expect(readdirSync(path.join(mnt, 'a'))).not.toContain('organism.pid'); // released
      writeFileSync(path.join(mnt, 'fill'), Buffer.alloc(64 * 1024 - 1)); // no room at all
      expect(() => open(path.join(mnt, 'b'))).toThrow(/^Data directory .*b is not writable: the disk is full \(\d+ bytes free\)$/);
      // Only the lock, which takes no space (it is never written); no half-written PID file.
      expect(readdirSync(path.join(mnt, 'b'))).toEqual(['organism.lock']);
      expect(statSync(path.join(mnt, 'b', 'organism.lock')).size).toBe(0);
      expect(spawnSync('umount', [mnt]).status).toBe(0); // busy if a refused open kept a file open
    } finally {
      spawnSync('umount', ['-l', mnt]);
    }
  });

  it('refuses a data directory path that is a file', () => {
    const file = path.join(tmp(), 'file');
    writeFileSync(file, 'x');
    expect(() => open(file)).toThrow(/is not writable/);
  });

  it('keeps thread records and budgets across reopen', async () => {
    const dir = tmp();
    const s = openSqliteStorage({ dataDir: dir });
    s.threads.put({ id: 't1', status: 'active', participants: ['api', 'a'], messageCount: 2, createdAt: 1, lastActivity: 2, error: null, metadata: { orgId: 'o' } });
    s.budgets.save([{ threadId: 't1', maxTokens: 10 }]);
    s.close();
    const t = open(dir);
    expect(await t.threads.get('t1')).toMatchObject({ status: 'active', participants: ['api', 'a'] });
    expect(t.budgets.load()).toEqual([{ threadId: 't1', maxTokens: 10 }]);
    expect((await t.threads.list({ agent: 'a', limit: 10, offset: 0 })).total).toBe(1);
    expect((await t.threads.list({ agent: 'zz', limit: 10, offset: 0 })).total).toBe(0);
  });
});
