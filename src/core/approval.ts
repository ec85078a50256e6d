/**
 * Tool calls that need approval (issue 25): an LLM agent's round whose calls include one of its
 * `approval:` tools stops before anything of it is sent or run; the delivery's journal entry
 * waits AWAITING with this state until a person approves (as proposed, or edited) or rejects
 * it. The decision is written with the move out of AWAITING (back to PENDING), so the
 * continuation that runs after it (here or after a restart, on any worker) reads it again and
 * never asks again.
 */
import type { ChatMessage } from './llm.js';
import type { Outgoing } from './handler.js';

/** One call of the round the model proposed, with the JSON Schema its arguments must meet. */
export interface ProposedCall {
  readonly id: string;
  readonly name: string;
  /** The model's arguments, parsed (an object), or the raw text when it was not a JSON object. */
  readonly arguments: unknown;
  /** The tool's parameters (what an edit is validated against). */
  readonly parameters: Readonly<Record<string, unknown>>;
  /** True when this call's tool is one of the agent's `approval:` tools. */
  readonly needsApproval: boolean;
}

/** A person's decision on a pending approval. */
export interface ApprovalDecision {
  readonly kind: 'approved' | 'rejected';
  /** Approved: each call's arguments as they run (the model's, or the person's edit), by call id. */
  readonly arguments: Readonly<Record<string, unknown>>;
  readonly note: string | null;
  readonly by: string;
  readonly at: number;
}

/** What the delivery was doing when it stopped: enough to continue it after a restart. */
export interface ApprovalState {
  /** The conversation of this delivery so far, ending with the assistant turn that proposed the calls. */
  readonly conversation: readonly ChatMessage[];
  readonly proposedCalls: readonly ProposedCall[];
  /** Messages earlier rounds of this delivery accepted (sent when the delivery ends). */
  readonly outgoing: readonly Outgoing[];
  /** Rounds of tool calls run so far (max_tool_rounds counts them). */
  readonly toolRounds: number;
  readonly repairUsed: boolean;
  /** The recorded LLM call that proposed the calls (tool calls run after approval are recorded against it). */
  readonly llmCallId?: string;
  /** Set by the person's decision (absent while it waits). */
  readonly decision?: ApprovalDecision;
}

/** A delivery parked for approval: its state and the usage its LLM calls caused so far. */
export interface ApprovalParking {
  readonly state: ApprovalState;
  readonly usage: readonly import('./usage.js').UsageEvent[];
}

/**
 * Thrown by the tool agent when a round needs approval: the pump parks the delivery AWAITING
 * with `state` (not an error: the delivery is neither acked nor failed).
 */
export class ApprovalNeeded {
  constructor(readonly state: ApprovalState) {}
}
