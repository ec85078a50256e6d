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
  /** A person rejected an ask (builtin:human); the error is their note. */
  | 'rejected'
  /** The store refused to write the delivery's outcome for what it held (see STORAGE_REJECTED). */
  | 'storage_rejected'
  /** A guardrail (`guards:`) blocked an LLM call of the handler; the error names the guard and its reason. */
  | 'guardrail';

/**
 * Checked just before a delivery's outcome commits: an error drops the write (nothing of it is
 * written) and is what the write rejects with. A kill that was answered while the outcome waited
 * for its group commit (or for a database to take writes again) must win over the outcome.
 */
export type OutcomeGuard = () => Error | null;

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
  acked(message: Message, outgoing: readonly Message[], usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<void>;
  failed(message: Message, reason: FailureReason, error: string, outgoing: readonly Message[], usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<void>;
}

const DONE: Promise<void> = Promise.resolve();

/** Default hook: nothing to persist. */
export const memoryDispatchHook: DispatchHook = {
  pending: () => DONE,
  dispatched: () => DONE,
  acked: () => DONE,
  failed: () => DONE,
};
