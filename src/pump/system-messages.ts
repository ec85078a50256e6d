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
