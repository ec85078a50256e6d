/**
 * Outbound webhooks (issue 31): events journaled as deliveries in the store, sent by one
 * process (claimed with a lease), retried with backoff until the receiver accepts (at least once).
 */

export type WebhookDeliveryState = 'pending' | 'delivered' | 'failed';

/** One event to one webhook: the message and where its sending stands. */
export interface WebhookDelivery {
  /** `msg_...`: the Standard Webhooks `webhook-id`, also the receiver's idempotency key. */
  readonly id: string;
  /** The webhook's name (organism.yaml `webhooks[].name`, default its index). */
  readonly webhook: string;
  /** The event name as configured (`thread_completed`, ...). */
  readonly event: string;
  /** The JSON body sent, exactly as signed. */
  readonly body: string;
  readonly state: WebhookDeliveryState;
  /** Sends tried so far. */
  readonly attempts: number;
  /** When it may be sent (again) (ms). */
  readonly nextAttemptAt: number;
  readonly createdAt: number;
  readonly deliveredAt: number | null;
  /** The HTTP status of the last try (null: no answer: refused, timed out). */
  readonly lastStatus: number | null;
  readonly lastError: string | null;
}

/** The deliveries of one webhook by state. */
export interface WebhookCounts {
  readonly pending: number;
  readonly delivered: number;
  readonly failed: number;
}

export interface WebhookStore {
  /** Journals a delivery; false (nothing written) when one with this id exists. */
  enqueue(delivery: { id: string; webhook: string; event: string; body: string; createdAt: number }): Promise<boolean>;
  /**
   * Takes up to `limit` pending deliveries due by `now` whose lease is free or expired, leased to
   * `owner` until `now + leaseMs` (another process's claim skips them).
   */
  claim(owner: string, now: number, leaseMs: number, limit: number): Promise<WebhookDelivery[]>;
  /** The receiver accepted it (a 2xx). Only the lease holder's write counts. */
  delivered(id: string, owner: string, now: number, status: number): Promise<void>;
  /** Another try at `nextAttemptAt` (attempts + 1), or `failed` for good when `final`. */
  attemptFailed(id: string, owner: string, result: { nextAttemptAt: number; status: number | null; error: string; final: boolean }): Promise<void>;
  /** Newest first; `webhook`/`state` narrow it. */
  recent(query: { webhook?: string; state?: WebhookDeliveryState; limit: number }): Promise<WebhookDelivery[]>;
  /** Counts by webhook name. */
  counts(): Promise<Record<string, WebhookCounts>>;
  /** Drops delivered and failed deliveries created before `before`. */
  prune(before: number): Promise<void>;
}

/**
 * The events a webhook may subscribe to. `loop_detected` is accepted ahead of its source (a
 * loop guard); it is sent once the runtime reports it.
 */
export const WEBHOOK_EVENTS = [
  'thread_completed',
  'thread_failed',
  'thread_killed',
  'inbox_opened',
  'inbox_closed',
  'budget_warning',
  'budget_exhausted',
  'delivery_failed',
  'schedule_fired',
  'loop_detected',
] as const;

/** An event name a webhook can subscribe to (`webhooks[].events`). */
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** A `webhooks:` entry of organism.yaml, resolved. */
export interface WebhookConfig {
  /** Its name in the API and the console (default `webhook-<n>`, n its 1-based place in the list). */
  readonly name: string;
  readonly url: string;
  readonly events: readonly WebhookEvent[];
  /** The variable holding the `whsec_...` signing secret (read at start, never stored). */
  readonly secretEnv: string;
  /** Per send. */
  readonly timeoutSeconds: number;
  /** Sends in all before a delivery is marked failed. */
  readonly maxAttempts: number;
  /** The wait after the first failed send; it doubles after each, up to `maxBackoffSeconds`. */
  readonly initialBackoffSeconds: number;
  readonly maxBackoffSeconds: number;
}
