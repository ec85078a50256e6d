import type { RetryPolicy } from '../config/types.js';

/**
 * How long a listener's `retry:` waits after the failed try `attempt` (1-based) before the
 * next: `fixed` always `initial_seconds`; `exponential` doubles it per try (1, 2, 4, ... times
 * `initial_seconds`), never past `max_seconds`. No jitter: the wait is what the journal shows.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  const factor = policy.backoff === 'fixed' ? 1 : 2 ** Math.max(0, Math.min(attempt - 1, 52));
  return Math.round(Math.min(policy.initialSeconds * factor, policy.maxSeconds) * 1000);
}
