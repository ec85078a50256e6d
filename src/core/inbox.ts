/**
 * The inbox (issue 25): what waits for a person. An ask is a message to a `builtin:human`
 * listener, parked AWAITING in the journal until a person answers or rejects it, it expires,
 * or its thread is killed.
 */

/** An open item, as GET /api/v1/inbox lists it. */
export interface InboxItem {
  /** The item's id: the ask's message id. */
  readonly id: string;
  readonly kind: 'ask' | 'approval';
  readonly threadId: string;
  readonly messageId: string;
  /** The human listener asked. */
  readonly listener: string;
  /** Who asked (the asker an answer replies to by default). */
  readonly from: string;
  readonly payloadType: string;
  readonly payload: Readonly<Record<string, unknown>>;
  /** Approvals: the calls the model proposed, in order (`arguments` parsed). */
  readonly proposedCalls?: readonly { readonly id: string; readonly name: string; readonly arguments: unknown }[];
  /** The JSON Schema an answer's payload must meet (a reply to the asker); approvals: what `calls` of an approve (an edit) must meet. */
  readonly answerSchema: Readonly<Record<string, unknown>>;
  /** The JSON Schema an answer sent on to each of the listener's peers (`to`) must meet, by peer name. */
  readonly peerSchemas: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** When it started to wait. */
  readonly createdAt: number;
  /** When it expires unanswered (null: never). */
  readonly expiresAt: number | null;
}

/** How an item closed. */
export type InboxOutcome = 'answered' | 'approved' | 'edited' | 'rejected' | 'expired' | 'killed';

/** An item that closed, as the `inbox_closed` event tells it. */
export interface InboxClosed {
  readonly id: string;
  readonly kind: 'ask' | 'approval';
  readonly threadId: string;
  readonly listener: string;
  readonly outcome: InboxOutcome;
  /** Who closed it: a token's name, `timeout`, `kill`. */
  readonly by: string;
  readonly at: number;
  readonly note: string | null;
  /** The message the close sent (an answer, or the SystemError to the asker); null: none. */
  readonly sentId: string | null;
}

/** Open items, for GET /organism and the snapshot. */
export interface InboxCounts {
  readonly open: number;
  readonly asks: number;
  readonly approvals: number;
}
