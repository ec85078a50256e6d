import { Errors } from '../../errors/catalogue.js';
import type { FailureReason, OutcomeGuard } from '../../core/delivery.js';
import type { UsageEvent } from '../../core/usage.js';
import type { Message } from '../../core/message.js';
import type { ApprovalDecision, ApprovalState } from '../../core/approval.js';
import {
  zeroStateCounts,
  type AskClosing,
  type DeliveryState,
  type EarlierAttempt,
  type Journal,
  type JournalEntry,
  type JournalQuery,
  type JournalStats,
  type KeptJournalStats,
  type RecoveredMessages,
} from '../../core/journal.js';
import type { Page } from '../../core/page.js';
import { entryMatches, type TextSearch } from '../../core/search.js';
import { BoundedMap } from './bounded-map.js';
import { ERASED_PAYLOAD, erasedAttempts, erasedText } from '../erasure.js';

/** The journal writes in memory as it is called: every write is done when it returns. */
const DONE: Promise<void> = Promise.resolve();

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/**
 * (Usage needs no journaling here: the memory usage store takes every event from the tracker.)
 *
 * The default journal when no data directory is used: the same lifecycle and queries as the
 * durable one, bounded in memory (the oldest finished entries go first). Nothing survives the
 * process, so recovery has nothing to do.
 */
export class MemoryJournal implements Journal {
  private readonly bounded: BoundedMap<Mutable<JournalEntry>>;
  private readonly entries: Map<string, Mutable<JournalEntry>>;
  /** Entries per state, kept as they move (read by /metrics without a scan). */
  private readonly counts: Record<DeliveryState, number> = zeroStateCounts();
  /** PENDING entries in the order they became PENDING: the first is the oldest. */
  private readonly pendingIds = new Set<string>();

  constructor(
    maxEntries = 100_000,
    private readonly now: () => number = Date.now,
  ) {
    this.bounded = new BoundedMap(
      maxEntries,
      (e) => e.state === 'ACKED' || e.state === 'FAILED',
      (e) => this.counts[e.state]--,
    );
    this.entries = this.bounded.entries;
  }

  pending(messages: readonly Message[]): Promise<void> {
    for (const m of messages) this.put(m);
    return DONE;
  }

  dispatched(message: Message): Promise<void> {
    const e = this.entries.get(message.id) ?? this.put(message);
    this.move(e, 'DISPATCHED');
    e.attempts = message.attempt;
    e.dispatchedAt = this.now();
    return DONE;
  }

  /** Written at once: the guard is checked as the call is made (that is this journal's commit). */
  acked(message: Message, outgoing: readonly Message[], _usage?: readonly UsageEvent[], guard?: OutcomeGuard): Promise<void> {
    const refused = guard?.();
    if (refused) return Promise.reject(refused);
    const e = this.entries.get(message.id) ?? this.put(message);
    // An open ask is closed by closeAsk only (as the SQL journals' transitions leave it alone).
    if (e.state === 'AWAITING') return DONE;
    this.move(e, 'ACKED');
    e.ackedAt = this.now();
    this.bounded.finished(message.id, e);
    for (const m of outgoing) this.put(m);
    return DONE;
  }

  failed(message: Message, reason: FailureReason, error: string, outgoing: readonly Message[], _usage?: readonly UsageEvent[], guard?: OutcomeGuard): Promise<void> {
    const refused = guard?.();
    if (refused) return Promise.reject(refused);
    const e = this.entries.get(message.id) ?? this.put(message);
    if (e.state === 'AWAITING') return DONE;
    this.move(e, 'FAILED');
    e.failedAt = this.now();
    e.failureReason = reason;
    e.error = error;
    this.bounded.finished(message.id, e);
    for (const m of outgoing) this.put(m);
    return DONE;
  }

  retried(message: Message, reason: FailureReason, error: string, notBefore: number, _usage?: readonly UsageEvent[], guard?: OutcomeGuard): Promise<Message> {
    const refused = guard?.();
    if (refused) return Promise.reject(refused);
    const e = this.entries.get(message.id) ?? this.put(message);
    const now = this.now();
    const next: Message = { ...e.message, attempt: message.attempt + 1, notBefore };
    const earlier: EarlierAttempt = { attempt: message.attempt, dispatchedAt: e.dispatchedAt, endedAt: now, outcome: 'failed', failureReason: reason, error, requeuedAt: now };
    this.move(e, 'PENDING');
    // The entry keeps its message without notBefore (what history and the API show); nextAttemptAt says when.
    Object.assign(e, { message: { ...e.message, attempt: next.attempt }, dispatchedAt: null, nextAttemptAt: notBefore, earlierAttempts: [...e.earlierAttempts, earlier] });
    return Promise.resolve(next);
  }

  awaiting(message: Message, expiresAt: number | null, approval?: ApprovalState): Promise<void> {
    const e = this.entries.get(message.id) ?? this.put(message);
    if (e.state !== 'PENDING' && e.state !== 'DISPATCHED') return DONE;
    this.move(e, 'AWAITING');
    e.attempts = message.attempt;
    e.dispatchedAt ??= this.now();
    e.expiresAt = expiresAt;
    if (approval) e.approval = structuredClone(approval);
    return DONE;
  }

  async decideApproval(messageId: string, decision: ApprovalDecision): Promise<boolean> {
    const e = this.entries.get(messageId);
    if (!e || e.state !== 'AWAITING' || !e.approval) return false;
    this.move(e, 'PENDING');
    e.approval = { ...e.approval, decision: structuredClone(decision) };
    e.closedBy = decision.by;
    e.closedNote = decision.note;
    return true;
  }

  async closeAsk(messageId: string, closing: AskClosing): Promise<boolean> {
    const e = this.entries.get(messageId);
    if (!e || e.state !== 'AWAITING') return false;
    this.move(e, closing.state);
    if (closing.state === 'ACKED') e.ackedAt = this.now();
    else Object.assign(e, { failedAt: this.now(), failureReason: closing.reason, error: closing.error });
    e.closedBy = closing.by;
    e.closedNote = closing.note;
    this.bounded.finished(messageId, e);
    for (const m of closing.outgoing) this.put(m);
    return true;
  }

  async openAsks(): Promise<readonly JournalEntry[]> {
    return [...this.entries.values()].filter((e) => e.state === 'AWAITING').map((e) => ({ ...e }));
  }

  async failedThreads(threadIds: readonly string[]): Promise<ReadonlySet<string>> {
    const wanted = new Set(threadIds);
    const out = new Set<string>();
    for (const e of this.entries.values()) if (e.state === 'FAILED' && e.failureReason !== 'killed' && wanted.has(e.message.threadId)) out.add(e.message.threadId);
    return out;
  }

  async recover(bootId: string): Promise<RecoveredMessages> {
    return { messages: [], report: { bootId, at: this.now(), durationMs: 0, pending: 0, redelivered: 0, failedMaxAttempts: 0 } };
  }

  async get(messageId: string): Promise<JournalEntry | null> {
    return this.entries.get(messageId) ?? null;
  }

  async list(q: JournalQuery): Promise<Page<JournalEntry>> {
    const search = q.text;
    // Map order is insertion order, i.e. oldest first; a text search reads the newest `window`.
    const all = [...this.entries.values()];
    const read = search ? all.slice(Math.max(0, all.length - search.window)) : all;
    const matches = read.filter(
      (e) =>
        (!q.state || e.state === q.state) &&
        (!q.threadId || e.message.threadId === q.threadId) &&
        (!q.agent || e.message.from === q.agent || e.message.to === q.agent) &&
        (q.startTime === undefined || e.createdAt >= q.startTime) &&
        (q.endTime === undefined || e.createdAt < q.endTime) &&
        (!search || entryMatches(e.message.payload, e.error, search.text)),
    );
    if (q.order !== 'oldest') matches.reverse();
    return { items: matches.slice(q.offset, q.offset + q.limit), total: matches.length, ...(search ? { searchTruncated: all.length > search.window } : {}) };
  }

  /** The threads with an entry whose payload or error contains the text, among the newest `window` entries. */
  threadsMatching(search: TextSearch): { ids: Set<string>; truncated: boolean } {
    const all = [...this.entries.values()];
    const ids = new Set<string>();
    for (const e of all.slice(Math.max(0, all.length - search.window))) if (entryMatches(e.message.payload, e.error, search.text)) ids.add(e.message.threadId);
    return { ids, truncated: all.length > search.window };
  }

  async stats(): Promise<JournalStats> {
    const counts: Record<DeliveryState, number> = zeroStateCounts();
    let oldestPending: number | null = null;
    for (const e of this.entries.values()) {
      counts[e.state]++;
      if (e.state === 'PENDING' && (oldestPending === null || e.createdAt < oldestPending)) oldestPending = e.createdAt;
    }
    return { counts, oldestPendingAgeMs: oldestPending === null ? null : this.now() - oldestPending, lastRecovery: null };
  }

  async redeliver(messageId: string): Promise<Message> {
    const e = this.entries.get(messageId);
    if (!e) throw Errors.JOURNAL_ENTRY_NOT_FOUND(messageId);
    if (e.state !== 'FAILED') throw Errors.JOURNAL_NOT_REDELIVERABLE(messageId, e.state);
    const message: Message = { ...e.message, attempt: e.message.attempt + 1 };
    const now = this.now();
    const earlier: EarlierAttempt = {
      attempt: e.message.attempt,
      dispatchedAt: e.dispatchedAt,
      endedAt: e.failedAt ?? now,
      outcome: 'failed',
      failureReason: e.failureReason,
      error: e.error,
      requeuedAt: now,
    };
    this.move(e, 'PENDING');
    Object.assign(e, { message, dispatchedAt: null, failedAt: null, failureReason: null, error: null, nextAttemptAt: null, earlierAttempts: [...e.earlierAttempts, earlier] });
    return message;
  }

  async keptStats(): Promise<KeptJournalStats> {
    let oldestPendingAgeMs: number | null = null;
    for (const id of this.pendingIds) {
      const e = this.entries.get(id);
      if (e) oldestPendingAgeMs = Math.max(0, this.now() - e.createdAt);
      break;
    }
    return { counts: { ...this.counts }, oldestPendingAgeMs };
  }

  private move(e: Mutable<JournalEntry>, to: DeliveryState): void {
    this.counts[e.state]--;
    this.counts[to]++;
    if (e.state === 'PENDING') this.pendingIds.delete(e.message.id);
    if (to === 'PENDING') this.pendingIds.add(e.message.id);
    else e.nextAttemptAt = null; // a retry's next try time is a PENDING entry's only
    e.state = to;
  }

  async threadHistory(threadId: string, agent: string, limit: number): Promise<readonly Message[]> {
    const out: Message[] = [];
    for (const e of this.entries.values()) {
      const m = e.message;
      if (m.threadId === threadId && (m.from === agent || m.to === agent)) out.push(m);
    }
    return out.slice(-limit);
  }

  /** Erasure (issue 30): the thread's entries keep their states, attempts and times; their text becomes tombstones. How many. */
  eraseThread(threadId: string): number {
    let n = 0;
    for (const e of this.entries.values()) {
      if (e.message.threadId !== threadId) continue;
      e.message = { ...e.message, payload: { ...ERASED_PAYLOAD } };
      e.error = erasedText(e.error);
      e.earlierAttempts = erasedAttempts(e.earlierAttempts);
      if (e.closedNote !== undefined) e.closedNote = erasedText(e.closedNote);
      if (e.approval !== undefined) e.approval = null;
      n++;
    }
    return n;
  }

  private put(message: Message): Mutable<JournalEntry> {
    const entry: Mutable<JournalEntry> = {
      message,
      state: 'PENDING',
      attempts: message.attempt - 1,
      createdAt: this.now(),
      dispatchedAt: null,
      ackedAt: null,
      failedAt: null,
      failureReason: null,
      error: null,
      earlierAttempts: [],
      nextAttemptAt: null,
    };
    const replaced = this.entries.get(message.id);
    if (replaced) {
      this.counts[replaced.state]--;
      this.pendingIds.delete(message.id);
    }
    this.counts.PENDING++;
    this.pendingIds.add(message.id);
    this.bounded.set(message.id, entry);
    return entry;
  }
}
