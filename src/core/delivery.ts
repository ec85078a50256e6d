import type { Message } from './message.js';
import type { UsageEvent } from './usage.js';

/** Why a delivery ended without an ack. */
export type FailureReason =
  | 'handler_error'
  | 'timeout'
  | 'peer_denied'
  | 'invalid_payload'
  | 'invalid_result'
  | 'killed'
  | 'budget_exhausted'
  | 'hop_limit'
  | 'unknown_target'
  | 'max_attempts'
  | 'shutdown'
  /** The store refused to write the delivery's outcome for what it held (see STORAGE_REJECTED). */
  | 'storage_rejected';

/**
 * The dispatch lifecycle, called by the pump at each delivery step. The durable journal
 * plugs in here; returned promises are awaited where the guarantee needs it:
 * - `pending` before inject returns (and for recovery nothing is re-journaled);
 * - `acked` before the outgoing messages are queued: outgoing messages are journaled
 *   PENDING in the same transaction as the ack, with the usage the delivery caused.
 */
export interface DispatchHook {
  pending(messages: readonly Message[]): void | Promise<void>;
  dispatched(message: Message): void | Promise<void>;
  acked(message: Message, outgoing: readonly Message[], usage: readonly UsageEvent[]): void | Promise<void>;
  failed(
    message: Message,
    reason: FailureReason,
    error: string,
    outgoing: readonly Message[],
    usage: readonly UsageEvent[],
  ): void | Promise<void>;
}

/** Default hook: nothing to persist. */
export const memoryDispatchHook: DispatchHook = {
  pending() {},
  dispatched() {},
  acked() {},
  failed() {},
};
