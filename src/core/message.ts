/** A message as it travels through the pump. The pump stamps `from`; handlers cannot. */
export interface Message {
  /** Time-sortable unique id (UUIDv7). */
  readonly id: string;
  /** Names the whole conversation, across every hop and agent. */
  readonly threadId: string;
  readonly from: string;
  readonly to: string;
  readonly payloadType: string;
  readonly payload: Record<string, unknown>;
  /** Milliseconds since the epoch when the message was created. */
  readonly timestamp: number;
  /** The message this one answers or was caused by. */
  readonly parentId: string | null;
  /** Number of hops since the injected root (root = 0). */
  readonly hops: number;
  /** Propagated along the thread (orgId, userId, ...). */
  readonly metadata: Readonly<Record<string, string>>;
  /** Delivery attempt, 1 on first delivery; raised by journal recovery. */
  readonly attempt: number;
  /**
   * W3C traceparent of the delivery that sent it (or, for a message from outside, of the
   * caller's span): journaled with the message, so a thread stays one trace across restarts.
   */
  readonly traceContext?: string | null;
  /**
   * A retry waiting out its backoff (listener `retry:`): the delivery must not start before
   * this time (ms). Set on the message the journal hands back for a retry and on a recovered
   * one whose wait was not over; the journal keeps it as the entry's `nextAttemptAt`.
   */
  readonly notBefore?: number;
}

/** Senders that are not listeners. */
export const EXTERNAL_SENDER = 'api';
/** The sender of the pump's own messages (SystemError). */
export const SYSTEM_SENDER = 'system.pump';
/** The sender of budget warnings. */
export const BUDGET_SENDER = 'system.budget';

/** Payload types every listener may receive from the pump itself. */
export const SYSTEM_ERROR_TYPE = 'SystemError';
/** The payload type of a budget warning. */
export const BUDGET_WARNING_TYPE = 'BudgetWarning';

/** Listeners whose names start with `system.` are built-ins: they never receive SystemErrors. */
export function isSystemName(name: string): boolean {
  return name.startsWith('system.');
}
