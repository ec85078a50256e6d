import { describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { ProviderHttpError, parseRetryAfter } from '../../src/llm/http-error.js';
import { BACKOFF_CAP_MS, abortableSleep, isRetryable, retryDelay } from '../../src/llm/retry.js';
import { rejection } from './helpers.js';

const http = (status: number, retryAfterMs: number | null = null) => new ProviderHttpError('p', status, 'msg', retryAfterMs);

describe('what is retried', () => {
  it.each([408, 409, 429, 500, 502, 503, 504, 529])('HTTP %s is retried', (status) => {
    expect(isRetryable(http(status))).toBe(true);
  });

  it.each([400, 401, 403, 404, 422])('HTTP %s is never retried', (status) => {
    expect(isRetryable(http(status))).toBe(false);
  });

  it('timeouts and network failures are retried; aborts and other errors are not', () => {
    expect(isRetryable(Errors.LLM_TIMEOUT(30))).toBe(true);
    expect(isRetryable(Errors.LLM_NETWORK('ECONNRESET'))).toBe(true);
    expect(isRetryable(Errors.ABORTED('killed'))).toBe(false);
    expect(isRetryable(Errors.LLM_BAD_RESPONSE('not JSON'))).toBe(false);
    expect(isRetryable(new Error('bug'))).toBe(false);
  });
});

describe('backoff', () => {
  it('doubles from 1 s with full jitter and is capped at 60 s', () => {
    const top = () => 0.999999;
    expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => retryDelay(n, http(500), top))).toEqual([999, 1999, 3999, 7999, 15999, 31999, 59999, 59999, 59999]);
    expect(retryDelay(5, http(500), () => 0)).toBe(0);
    expect(retryDelay(3, http(500), () => 0.5)).toBe(2000);
  });

  it('uses Retry-After instead of the computed delay, capped', () => {
    expect(retryDelay(1, http(429, 7000), () => 0)).toBe(7000);
    expect(retryDelay(1, http(429, 0), () => 0.9)).toBe(0);
    expect(retryDelay(1, http(429, 3_600_000), () => 0)).toBe(BACKOFF_CAP_MS);
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2025-01-01T00:00:00Z');
  it('reads delay-seconds and HTTP-dates; ignores anything else', () => {
    expect(parseRetryAfter('7', now)).toBe(7000);
    expect(parseRetryAfter(' 1.5 ', now)).toBe(1500);
    expect(parseRetryAfter('Wed, 01 Jan 2025 00:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Tue, 31 Dec 2024 23:59:00 GMT', now)).toBe(0); // in the past
    expect(parseRetryAfter('-3', now)).toBeNull();
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter('', now)).toBeNull();
    expect(parseRetryAfter(null, now)).toBeNull();
  });
});

describe('abortable sleep', () => {
  it('resolves after the delay', async () => {
    await expect(abortableSleep(1, new AbortController().signal)).resolves.toBeUndefined();
  });

  it('refuses at once when the signal is already aborted', async () => {
    const c = new AbortController();
    c.abort('killed');
    const err = await rejection(abortableSleep(60_000, c.signal));
    expect(err.message).toBe(Errors.ABORTED('killed').detail);
  });

  it('wakes with ABORTED when the signal aborts mid-wait (a minute-long wait would time the test out)', async () => {
    const c = new AbortController();
    const pending = abortableSleep(60_000, c.signal);
    setTimeout(() => c.abort('thread killed'), 10);
    const err = await rejection(pending);
    expect(Errors.ABORTED.is(err)).toBe(true);
    expect(err.message).toBe('Aborted: thread killed');
  });
});
