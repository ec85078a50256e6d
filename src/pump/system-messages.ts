import { newId } from '../util/ids.js';
import type { FailureReason } from '../core/delivery.js';
import { SYSTEM_ERROR_TYPE, SYSTEM_SENDER, type Message } from '../core/message.js';

/** Builds the SystemError message that tells `to` why something it caused did not happen. */
export function systemErrorMessage(cause: Message, to: string, reason: FailureReason, error: string, now: number, about?: { messageId: string; to: string }): Message {
  return {
    id: newId(),
    threadId: cause.threadId,
    from: SYSTEM_SENDER,
    to,
    payloadType: SYSTEM_ERROR_TYPE,
    payload: {
      error,
      code: reason,
      reason,
      messageId: about?.messageId ?? cause.id,
      ...(about ? { to: about.to } : {}),
    },
    timestamp: now,
    parentId: cause.id,
    hops: cause.hops + 1,
    metadata: cause.metadata,
    attempt: 1,
  };
}

/**
 * The final failure of a delivery of `listener`, routed to its `on_error` listener: a
 * SystemError sent by the listener itself (not by `system.*`), so the target's handler runs
 * on it (see Deliveries.deliver). `attempts`: the tries the delivery had.
 */
export function routedFailureMessage(cause: Message, listener: string, target: string, reason: FailureReason, error: string, now: number): Message {
  return {
    ...systemErrorMessage(cause, target, reason, error, now, { messageId: cause.id, to: listener }),
    from: listener,
    payload: { error, code: reason, reason, messageId: cause.id, to: listener, attempts: cause.attempt },
  };
}
