import { describe, expect, it } from 'vitest';
import { pgStorageError } from '../../src/store/postgres/pool.js';
import { storageError } from '../../src/store/index.js';

/**
 * Issue 23, item 2: which store errors retrying cannot cure. Those become STORAGE_REJECTED (a
 * delivery whose outcome it was fails once); the rest stay errors that pass (retried until the
 * write commits). The real refusals are exercised against real processes in
 * test/cli/unstorable-input.test.ts; this pins the whole table.
 */
const fault = (code: string, message = 'boom') => Object.assign(new Error(message), { code });

describe('store errors that retrying cannot cure', () => {
  it.each([
    ['22021', 'invalid byte sequence for encoding "UTF8": 0x00'],
    ['22P05', 'unsupported Unicode escape sequence'],
    ['22001', 'value too long'],
    ['23505', 'duplicate key value'],
    ['23514', 'check constraint'],
    ['54000', 'index row size exceeds maximum'],
  ])('PostgreSQL SQLSTATE %s is STORAGE_REJECTED (422), naming the reason and the code', (code, message) => {
    const err = pgStorageError('postgres://db', fault(code, message));
    expect(err).toMatchObject({ code: 'STORAGE_REJECTED', status: 422 });
    expect(err.detail).toContain(`${message} (SQLSTATE ${code})`);
  });

  it.each(['08006', '08001', '57P01', '57P03', '53300', '53100', '40001', '40P01', 'ECONNRESET', 'ECONNREFUSED', ''])('PostgreSQL %s passes: STORAGE_FAILED, retried', (code) => {
    expect(pgStorageError('postgres://db', fault(code))).toMatchObject({ code: 'STORAGE_FAILED' });
  });

  it.each(['SQLITE_CONSTRAINT', 'SQLITE_CONSTRAINT_UNIQUE', 'SQLITE_CONSTRAINT_TRIGGER', 'SQLITE_MISMATCH', 'SQLITE_TOOBIG'])('SQLite %s is STORAGE_REJECTED', (code) => {
    expect(storageError('/data/organism.db', fault(code, 'refused'))).toMatchObject({ code: 'STORAGE_REJECTED', status: 422 });
  });

  it.each(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_IOERR_WRITE', 'SQLITE_FULL'])('SQLite %s is not', (code) => {
    expect(storageError('/data/organism.db', fault(code, 'busy')).code).not.toBe('STORAGE_REJECTED');
  });
});
