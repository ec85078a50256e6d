import type { ListenerConfig, RetryPolicy } from '../config/types.js';
import type { MaxAttempts } from '../core/journal.js';

/**
 * How long a listener's `retry:` waits after the failed try `attempt` (1-based) before the
 * next: `fixed` always `initial_seconds`; `exponential` doubles it per try (1, 2, 4, ... times
 * `initial_seconds`), never past `max_seconds`. No jitter: the wait is what the journal shows.
 */
export function retryDelayMs(policy: RetryPolicy, attempt: number): number {
  const factor = policy.backoff === 'fixed' ? 1 : 2 ** Math.max(0, Math.min(attempt - 1, 52));
  return Math.round(Math.min(policy.initialSeconds * factor, policy.maxSeconds) * 1000);
}

/** The attempt limits of an organism: `journal.max_attempts`, replaced per listener by its `retry.max_attempts`. */
export function attemptLimits(config: { readonly journal: { readonly maxAttempts: number }; readonly listeners: readonly ListenerConfig[] }): MaxAttempts {
  const byListener: Record<string, number> = {};
  for (const l of config.listeners) if (l.retry) byListener[l.name] = l.retry.maxAttempts;
  return Object.keys(byListener).length === 0 ? config.journal.maxAttempts : { default: config.journal.maxAttempts, byListener };
}
