import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { isConnectionFailure, PgReachability } from '../../src/store/postgres/reachability.js';
import type { Logger } from '../../src/util/logger.js';
import { freePort, until } from '../cli/processes.js';
import { createTestDatabase, withPostgres } from './contract/backends.js';
import { PgProxy, viaProxy } from './pg-proxy.js';

/** What marks the database unreachable (injects refused, /health degraded) and what does not. */
describe('isConnectionFailure', () => {
  it('is true for a server that is not there or a connection that broke', () => {
    for (const code of ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '08006', '57P01', '57P03']) {
      expect(isConnectionFailure(Object.assign(new Error('x'), { code })), code).toBe(true);
    }
    expect(isConnectionFailure(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isConnectionFailure(new Error('timeout exceeded when trying to connect'))).toBe(true);
    expect(isConnectionFailure(Errors.STORAGE_UNAVAILABLE('db', 'x'))).toBe(true);
  });

  it('is false for a statement the server refused, and for other errors', () => {
    for (const code of ['23505', '42P01', '40P01', '53100']) {
      expect(isConnectionFailure(Object.assign(new Error('x'), { code })), code).toBe(false);
    }
    expect(isConnectionFailure(Errors.STORAGE_FAILED('db', 'x'))).toBe(false);
    expect(isConnectionFailure(null)).toBe(false);
    expect(isConnectionFailure('ECONNREFUSED')).toBe(false);
  });
});

describe.skipIf(!withPostgres('PostgreSQL reachability tests'))('PgReachability on a real server', () => {
  it('with no traffic at all, notices the server gone and back by its own checks: one line each way', async () => {
    const db = await createTestDatabase();
    const proxy = new PgProxy(await freePort());
    await proxy.open();
    const lines: string[] = [];
    const logger = { error: (_o: unknown, msg: string) => lines.push(`error ${msg}`), warn: (_o: unknown, msg: string) => lines.push(`warn ${msg}`) } as unknown as Logger;
    const watch = new PgReachability(viaProxy(db.url, proxy), 'the test database', logger, { checkMs: 100, retryMs: 50, maxRetryMs: 200, timeoutMs: 1_000 });
    try {
      await new Promise((r) => setTimeout(r, 500)); // a few checks that pass
      expect(watch.problem()).toBeNull();
      await proxy.cut();
      const down = await until(() => watch.problem(), 'the check to notice', 30_000);
      expect(down).toMatchObject({ status: 'degraded', error: { code: 'STORAGE_UNAVAILABLE', status: 503 } });
      expect(down.error.detail).toMatch(/^Database the test database cannot be reached/);
      await new Promise((r) => setTimeout(r, 1_000)); // several failed checks: still one line
      await proxy.open();
      await until(() => watch.problem() === null, 'the check to see it back', 30_000);
      expect(lines).toEqual([
        'error PostgreSQL cannot be reached: new messages are refused until it answers; retrying with backoff',
        'warn PostgreSQL answers again: messages are accepted again',
      ]);
    } finally {
      watch.close();
      await proxy.cut();
      await db.drop();
    }
  }, 120_000);

  it('a store that timed out waiting for a connection (a busy pool) gets a check, not an outage; a refused connection is believed at once and then checked back', async () => {
    const db = await createTestDatabase();
    const watch = new PgReachability(db.url, 'db', undefined, { checkMs: 60_000, retryMs: 50, maxRetryMs: 200, timeoutMs: 2_000 });
    try {
      expect(watch.failed(new Error('timeout exceeded when trying to connect'))).toBe(false);
      expect(watch.problem()).toBeNull();
      await new Promise((r) => setTimeout(r, 300)); // the check it asked for answered
      expect(watch.problem()).toBeNull();
      expect(watch.failed(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))).toBe(true);
      expect(watch.problem()?.error.code).toBe('STORAGE_UNAVAILABLE');
      await until(() => watch.problem() === null, 'the check to find the server there', 30_000);
    } finally {
      watch.close();
      await db.drop();
    }
  }, 60_000);
});
