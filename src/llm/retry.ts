import { Errors } from '../errors/catalogue.js';
import { ProviderHttpError } from './http-error.js';

export const BACKOFF_BASE_MS = 1_000;
export const BACKOFF_CAP_MS = 60_000;

export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/** Sleeps, waking early with an error when the signal aborts. */
export const abortableSleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(Errors.ABORTED(String(signal.reason ?? 'aborted')));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(Errors.ABORTED(String(signal.reason ?? 'aborted')));
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** 408, 409, 429, 5xx (incl. Anthropic's 529) and network failures are worth another try. */
export function isRetryable(err: unknown): boolean {
  if (err instanceof ProviderHttpError) return [408, 409, 429].includes(err.status) || err.status >= 500;
  if (err instanceof Error && (err.name === 'AbortError' || err.name === 'TimeoutError')) return err.name === 'TimeoutError';
  return err instanceof TypeError; // fetch's network errors
}

/**
 * Delay before retry number `attempt` (1-based): the server's Retry-After when given (capped),
 * otherwise exponential backoff with full jitter: random(0, min(cap, base * 2^(attempt-1))).
 */
export function retryDelay(attempt: number, err: unknown, random: () => number = Math.random): number {
  if (err instanceof ProviderHttpError && err.retryAfterMs !== null) return Math.min(err.retryAfterMs, BACKOFF_CAP_MS);
  const ceiling = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1));
  return Math.floor(random() * ceiling);
}
