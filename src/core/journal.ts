import type { DispatchHook, FailureReason, OutcomeGuard } from './delivery.js';
import type { ApprovalDecision, ApprovalState } from './approval.js';
import type { UsageEvent } from './usage.js';
import type { Message } from './message.js';
import type { Page } from './page.js';
import type { TextSearch } from './search.js';

/** The message journal: every delivery's record, its states and the queries on it. */

/**
 * AWAITING (an extension of the spec's journal table): a message to a `builtin:human` listener
 * (an ask) waits for a person, holding no handler slot, lease or connection, until it is
 * answered (ACKED), rejected, expired or its thread killed (FAILED).
 */
export type DeliveryState = 'PENDING' | 'DISPATCHED' | 'AWAITING' | 'ACKED' | 'FAILED';

export const DELIVERY_STATES: readonly DeliveryState[] = ['PENDING', 'DISPATCHED', 'AWAITING', 'ACKED', 'FAILED'];

/** Per-state counts, all zero. */
export function zeroStateCounts(): Record<DeliveryState, number> {
  return { PENDING: 0, DISPATCHED: 0, AWAITING: 0, ACKED: 0, FAILED: 0 };
}

/**
 * How an open ask (an AWAITING entry) ends: `ACKED` (answered: `outgoing` is the answer) or
 * `FAILED` (rejected, expired, killed: `outgoing` is the SystemError to the asker, if any).
 * Written only while the entry is still AWAITING, with `outgoing` in the same transaction.
 */
export interface AskClosing {
  readonly state: 'ACKED' | 'FAILED';
  readonly reason: FailureReason | null;
  /** FAILED: the error text (a rejection's note). */
  readonly error: string | null;
  /** Who closed it (a token's name, `timeout`, `kill`). */
  readonly by: string;
  /** The person's note (answers and rejections). */
  readonly note: string | null;
  readonly outgoing: readonly Message[];
}

/**
 * An attempt of a delivery that did not end it: it failed and an operator sent it again, or the
 * process holding it died (or lost its lease) and it was taken back. Kept when the entry goes
 * back to PENDING, so the entry's own fields always describe its latest attempt.
 */
export interface EarlierAttempt {
  /** 1-based: the entry's `attempts` when this attempt was dispatched. */
  readonly attempt: number;
  readonly dispatchedAt: number | null;
  /** When it failed, or (interrupted) when it was taken back. */
  readonly endedAt: number;
  /** `failed`: the handler (or the pump) failed it; `interrupted`: its process died or lost its lease. */
  readonly outcome: 'failed' | 'interrupted';
  readonly failureReason: FailureReason | null;
  readonly error: string | null;
  /** When the entry became PENDING again (the next attempt's queue wait starts here). */
  readonly requeuedAt: number;
}

/** A journal entry: the message plus its delivery record. Also serves as the message history. */
export interface JournalEntry {
  readonly message: Message;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly createdAt: number;
  readonly dispatchedAt: number | null;
  readonly ackedAt: number | null;
  readonly failedAt: number | null;
  readonly failureReason: FailureReason | null;
  readonly error: string | null;
  /** The attempts before the latest one, oldest first (empty for most entries). */
  readonly earlierAttempts: readonly EarlierAttempt[];
  /** A PENDING retry waiting out its backoff: not delivered before this time (ms). Null or absent: as soon as it can. */
  readonly nextAttemptAt?: number | null;
  /** An ask (to a `builtin:human` listener): when it expires unanswered (null or absent: never). */
  readonly expiresAt?: number | null;
  /** An ask that was closed: who closed it (a token's name, `timeout`, `kill`). */
  readonly closedBy?: string | null;
  /** An ask that was closed: the person's note. */
  readonly closedNote?: string | null;
  /** A delivery that stopped for tool calls needing approval: the proposal (and, once decided, the decision). */
  readonly approval?: ApprovalState | null;
}

export interface JournalQuery {
  readonly state?: DeliveryState;
  readonly threadId?: string;
  /** Matches sender or receiver. */
  readonly agent?: string;
  /** Entries created at or after this time (ms). */
  readonly startTime?: number;
  /** Entries created before this time (ms). */
  readonly endTime?: number;
  /** Entries whose payload or error contains this text (read among the newest `window` entries). */
  readonly text?: TextSearch;
  readonly limit: number;
  readonly offset: number;
  /** Default newest first. */
  readonly order?: 'newest' | 'oldest';
}

export interface RecoveryReport {
  readonly bootId: string;
  readonly at: number;
  readonly durationMs: number;
  readonly pending: number;
  readonly redelivered: number;
  readonly failedMaxAttempts: number;
  /** Agents the operator had paused, paused again at boot (set by the organism, not the journal). */
  readonly pausedAgents?: readonly string[];
}

export interface JournalStats {
  readonly counts: Readonly<Record<DeliveryState, number>>;
  /** Age in ms of the oldest PENDING entry, null when none. */
  readonly oldestPendingAgeMs: number | null;
  readonly lastRecovery: RecoveryReport | null;
}

/** Journal figures that cost no scan (what /metrics reads on every scrape). */
export interface KeptJournalStats {
  readonly counts: Readonly<Record<DeliveryState, number>>;
  /** Age in ms of the oldest PENDING entry, null when none. */
  readonly oldestPendingAgeMs: number | null;
}

/**
 * How many attempts a delivery gets before an interrupted one (a crash, a lost lease) fails
 * max_attempts: `journal.max_attempts`, or per listener its `retry.max_attempts`, which
 * replaces it for that listener's deliveries.
 */
export type MaxAttempts = number | { readonly default: number; readonly byListener: Readonly<Record<string, number>> };

/** The attempt limit of deliveries to `recipient`, and the organism.yaml key that sets it. */
export function attemptLimitOf(limit: MaxAttempts, recipient: string): { max: number; key: string } {
  const own = typeof limit === 'number' ? undefined : limit.byListener[recipient];
  if (own !== undefined) return { max: own, key: `listeners.${recipient}.retry.max_attempts` };
  return { max: typeof limit === 'number' ? limit : limit.default, key: 'journal.max_attempts' };
}

/** What recovery hands the pump to re-enqueue, in original order. */
export interface RecoveredMessages {
  readonly messages: readonly Message[];
  readonly report: RecoveryReport;
}

/**
 * The message journal: a DispatchHook that also answers queries. The in-memory journal is
 * the default; the SQLite one (store/sqlite) makes it durable.
 */
export interface Journal extends DispatchHook {
  recover(bootId: string, maxAttempts: MaxAttempts): Promise<RecoveredMessages>;
  get(messageId: string): Promise<JournalEntry | null>;
  list(query: JournalQuery): Promise<Page<JournalEntry>>;
  stats(): Promise<JournalStats>;
  /** Counts kept as entries move (no scan of the journal). */
  keptStats(): Promise<KeptJournalStats>;
  /**
   * A delivery whose handler failed goes back to PENDING for its listener's `retry:` (in one
   * write, with the usage the failed try caused): this attempt kept in `earlierAttempts`
   * (`failed`, with its reason and error), attempt + 1, and `nextAttemptAt` = `notBefore`,
   * which a restart honours (recovery hands the message back with its `notBefore`). Returns
   * the message to place, its `notBefore` set.
   */
  retried(message: Message, reason: FailureReason, error: string, notBefore: number, usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<Message>;
  /** FAILED -> PENDING with a new attempt; returns the message to enqueue. */
  redeliver(messageId: string): Promise<Message>;
  /** Messages of a thread (oldest first) that involve `agent` (sender or receiver), last `limit`. */
  threadHistory(threadId: string, agent: string, limit: number): Promise<readonly Message[]>;
  /**
   * An ask's delivery stops to wait for a person: PENDING or DISPATCHED -> AWAITING (embedded:
   * one process owns the journal; a cluster parks it through its queue, fenced by the claim).
   */
  awaiting(message: Message, expiresAt: number | null, approval?: ApprovalState, usage?: readonly UsageEvent[]): Promise<void>;
  /**
   * Decides a pending approval: AWAITING -> PENDING (its delivery continues) with the decision
   * written into its approval state, in one conditional update. False (nothing written) when it
   * was no longer AWAITING: the first decision wins.
   */
  decideApproval(messageId: string, decision: ApprovalDecision): Promise<boolean>;
  /**
   * Closes an open ask: AWAITING -> `closing.state`, its outgoing messages journaled PENDING in the
   * same transaction. False (nothing written) when it was no longer AWAITING: the first close wins.
   */
  closeAsk(messageId: string, closing: AskClosing): Promise<boolean>;
  /** Every AWAITING entry, oldest first. */
  openAsks(): Promise<readonly JournalEntry[]>;
  /**
   * Which of these threads have an entry FAILED other than by a kill (at any time): recovery
   * reads the failure since the latest inject (a walk of the thread's entries) of those alone,
   * not of every thread it resumes.
   */
  failedThreads(threadIds: readonly string[]): Promise<ReadonlySet<string>>;
}
