import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { isConnectionFailure } from '../../src/store/postgres/reachability.js';

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
