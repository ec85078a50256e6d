import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { DATABASE_FILE, openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import { PRUNE_ACKED_SQL, PRUNE_FAILED_SQL } from '../../src/store/sqlite/journal.js';

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

// The journal's rules are asserted on SQLite and PostgreSQL alike by test/store/contract; what
// is SQLite's own (query plans, the data directory) stays here.
describe('SQLite journal', () => {
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
});
