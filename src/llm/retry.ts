import { Errors } from '../errors/catalogue.js';
import { ProviderHttpError } from './http-error.js';

export const BACKOFF_BASE_MS = 1_000;
export const BACKOFF_CAP_MS = 60_000;

export type Sleep = (ms: number, signal: AbortSignal) => Promise<void>;

/** Sleeps, waking at once with Errors.ABORTED when the signal aborts. */
export const abortableSleep: Sleep = (ms, signal) =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(Errors.ABORTED(String(signal.reason ?? 'aborted')));
    const onAbort = () => {
      clearTimeout(timer);
      reject(Errors.ABORTED(String(signal.reason ?? 'aborted')));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });

/** Statuses worth another try: timeout, conflict, rate limit, server errors (incl. Anthropic's 529). */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/**
 * True for failures another attempt may cure: the statuses above, the provider's timeout and
 * network failures. Never for 400/401/403/404/422 (the same request fails the same way) nor
 * for an abort.
 */
export function isRetryable(err: unknown): boolean {
  if (err instanceof ProviderHttpError) return isRetryableStatus(err.status);
  return Errors.LLM_TIMEOUT.is(err) || Errors.LLM_NETWORK.is(err);
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
