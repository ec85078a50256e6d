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
 * plugs in here; every step answers with a promise (an embedded journal's is resolved when it
 * returns, its write done), awaited where the guarantee needs it:
 * - `pending` before inject returns (and for recovery nothing is re-journaled);
 * - `acked` before the outgoing messages are queued: outgoing messages are journaled
 *   PENDING in the same transaction as the ack, with the usage the delivery caused.
 */
export interface DispatchHook {
  pending(messages: readonly Message[]): Promise<void>;
  dispatched(message: Message): Promise<void>;
  acked(message: Message, outgoing: readonly Message[], usage: readonly UsageEvent[]): Promise<void>;
  failed(message: Message, reason: FailureReason, error: string, outgoing: readonly Message[], usage: readonly UsageEvent[]): Promise<void>;
}

const DONE: Promise<void> = Promise.resolve();

/** Default hook: nothing to persist. */
export const memoryDispatchHook: DispatchHook = {
  pending: () => DONE,
  dispatched: () => DONE,
  acked: () => DONE,
  failed: () => DONE,
};
