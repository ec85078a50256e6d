import type { ApprovalDecision, ApprovalState } from '../../core/approval.js';
import type Database from 'better-sqlite3';
import { Errors } from '../../errors/catalogue.js';
import type { FailureReason, OutcomeGuard } from '../../core/delivery.js';
import type { Message } from '../../core/message.js';
import type { UsageEvent } from '../../usage/types.js';
import {
  attemptLimitOf,
  zeroStateCounts,
  type AskClosing,
  type DeliveryState,
  type Journal,
  type JournalEntry,
  type JournalQuery,
  type JournalStats,
  type KeptJournalStats,
  type MaxAttempts,
  type RecoveredMessages,
  type RecoveryReport,
} from '../../core/journal.js';
import type { Page } from '../../core/page.js';
import type { TextSearch } from '../../core/search.js';
import { entryOf, messageOf, pendingMessageOf, textParams, type JournalRow } from '../rows.js';
import { usageInserter } from './usage-writes.js';
import { JournalCounts } from './journal-counts.js';
import type { GroupWriter } from './writer.js';
import { prepared } from './prepared.js';

const PRUNE_BATCH = 1_000;
// INDEXED BY: left to itself the planner takes journal_state and walks every ACKED row to
// find none old enough (~200 ms per step at 1M rows, on the event loop, at every interval).
export const PRUNE_ACKED_SQL = `DELETE FROM journal WHERE rowid IN
  (SELECT rowid FROM journal INDEXED BY journal_acked_at WHERE state = 'ACKED' AND acked_at < ? LIMIT ?) RETURNING sender, recipient`;
export const PRUNE_FAILED_SQL = `DELETE FROM journal WHERE rowid IN
  (SELECT rowid FROM journal INDEXED BY journal_failed_at WHERE state = 'FAILED' AND failed_at < ? LIMIT ?) RETURNING sender, recipient`;
const DAY_MS = 86_400_000;

/**
 * Keeps the entry's latest attempt in earlier_attempts as it goes back to PENDING (SET
 * expressions read the row as it was before the update); `@now` is when it was requeued.
 */
export const keepAttemptSql = (outcome: 'failed' | 'interrupted') =>
  `earlier_attempts = json_insert(COALESCE(earlier_attempts, '[]'), '$[#]', json_object('attempt', attempt, 'dispatchedAt', dispatched_at,
    'endedAt', ${outcome === 'failed' ? 'COALESCE(failed_at, @now)' : '@now'}, 'outcome', '${outcome}', 'failureReason', failure_reason, 'error', error,
    'requeuedAt', @now)), dispatched_at = NULL`;
/** A journal row whose payload or error contains the searched text (two parameters: textParams). */
export const TEXT_MATCH = `(payload LIKE ? ESCAPE '\\' OR error LIKE ? ESCAPE '\\')`;
const FROM_FOR_DISPATCH: readonly DeliveryState[] = ['PENDING', 'DISPATCHED'];
const FROM_FOR_RETRY: readonly DeliveryState[] = ['DISPATCHED', 'PENDING'];
const FROM_FOR_ACK: readonly DeliveryState[] = ['DISPATCHED', 'PENDING', 'FAILED', 'ACKED'];
const FROM_FOR_FAIL: readonly DeliveryState[] = ['DISPATCHED', 'PENDING', 'ACKED', 'FAILED'];
/** An outcome whose DISPATCHED mark it carries: the entry is most likely PENDING still. */
const FOLDED_FROM_FOR_ACK: readonly DeliveryState[] = ['PENDING', 'DISPATCHED', 'FAILED', 'ACKED'];
const FOLDED_FROM_FOR_FAIL: readonly DeliveryState[] = ['PENDING', 'DISPATCHED', 'ACKED', 'FAILED'];
/** The states a DISPATCHED mark moves an entry from (the states a folded outcome writes the mark's columns from). */
const dispatchable = (state: DeliveryState) => state === 'PENDING' || state === 'DISPATCHED';

/** A delivery's DISPATCHED mark, queued in the group writer and not run yet. */
interface QueuedDispatch {
  readonly attempt: number;
  /** Its outcome was queued behind it in the same group commit and writes the mark's columns too. */
  folded: boolean;
}

/** A list's time range as WHERE terms: `startColumn >= startTime`, `endColumn < endTime` (each when given). */
export function timeRange(where: string[], params: unknown[], q: { startTime?: number; endTime?: number }, startColumn: string, endColumn: string): void {
  if (q.startTime !== undefined) {
    where.push(`${startColumn} >= ?`);
    params.push(q.startTime);
  }
  if (q.endTime !== undefined) {
    where.push(`${endColumn} < ?`);
    params.push(q.endTime);
  }
}

/** The lowest seq a text search reads (the newest `window` entries, a walk of the primary key) and whether older entries were left unread. */
export function searchWindow(db: Database.Database, search: TextSearch): { floor: number; truncated: boolean } {
  const rows = prepared(db, 'SELECT seq FROM journal ORDER BY seq DESC LIMIT 2 OFFSET ?').all(search.window - 1) as Array<{ seq: number }>;
  return { floor: rows[0]?.seq ?? 0, truncated: rows.length === 2 };
}

/**
 * The certified-mail journal on SQLite. Every transition is written through the group writer,
 * so concurrent writes of one tick share a transaction and resolve after it commits; an ack
 * commits its outgoing messages (PENDING) and the usage it caused in that same transaction.
 */
export class SqliteJournal implements Journal {
  private readonly insert: Database.Statement;
  private readonly setDispatched: Database.Statement;
  private readonly setAcked: Database.Statement;
  private readonly setFailed: Database.Statement;
  private readonly setDispatchedAcked: Database.Statement;
  private readonly setDispatchedFailed: Database.Statement;
  /** DISPATCHED marks queued in the group writer and not run yet, by message id. */
  private readonly queuedDispatches = new Map<string, QueuedDispatch>();
  private readonly insertUsage: (events: readonly UsageEvent[]) => void;
  private readonly counts: JournalCounts;
  private lastRecovery: RecoveryReport | null;

  constructor(
    private readonly db: Database.Database,
    private readonly writer: GroupWriter,
    private readonly retention: { retainDays: number; failedRetainDays: number },
    private readonly now: () => number = Date.now,
  ) {
    this.insert = db.prepare(`INSERT OR IGNORE INTO journal
      (id, thread_id, sender, recipient, payload_type, payload, metadata, hops, parent_id, msg_timestamp, attempt, state, attempts, created_at, trace_context)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, ?, ?)`);
    // Each transition names the state it leaves, so the kept per-state counts know what moved.
    this.setDispatched = db.prepare(`UPDATE journal SET state = 'DISPATCHED', attempts = ?, attempt = ?, dispatched_at = ?, next_attempt_at = NULL WHERE id = ? AND state = ?`);
    this.setAcked = db.prepare(`UPDATE journal SET state = 'ACKED', acked_at = ? WHERE id = ? AND state = ?`);
    this.setFailed = db.prepare(`UPDATE journal SET state = 'FAILED', failed_at = ?, failure_reason = ?, error = ? WHERE id = ? AND state = ?`);
    // An outcome with its DISPATCHED mark folded in: the columns both updates would have set.
    const mark = 'attempts = @attempt, attempt = @attempt, dispatched_at = @now, next_attempt_at = NULL';
    // Positional (now, attempt, attempt, now, id, from): the chain's most frequent update, no parameter object.
    this.setDispatchedAcked = db.prepare(`UPDATE journal SET state = 'ACKED', acked_at = ?, attempts = ?, attempt = ?, dispatched_at = ?, next_attempt_at = NULL WHERE id = ? AND state = ?`);
    this.setDispatchedFailed = db.prepare(`UPDATE journal SET state = 'FAILED', failed_at = @now, failure_reason = @reason, error = @error, ${mark} WHERE id = @id AND state = @from`);
    this.insertUsage = usageInserter(db);
    this.counts = new JournalCounts(db);
    writer.addHook(this.counts);
    this.counts.resetStates(this.stateCounts());
    const saved = db.prepare(`SELECT value FROM meta WHERE key = 'last_recovery'`).get() as { value: string } | undefined;
    this.lastRecovery = saved ? (JSON.parse(saved.value) as RecoveryReport) : null;
  }

  pending(messages: readonly Message[]): Promise<void> {
    return this.writer.write(() => this.insertAll(messages));
  }

  /**
   * The DISPATCHED mark, written by the group commit it is queued in, unless the delivery's
   * outcome (acked or failed) is queued in that same commit: the outcome's update then sets the
   * mark's columns too (attempts, attempt, dispatched_at) and the mark writes nothing. Both
   * would commit in one transaction, so no reader and no crash can see the entry DISPATCHED in
   * between: a crash sees the entry as before both (PENDING, its attempt redelivered as the
   * same attempt, as when neither committed) or after both (the outcome, with the attempt count
   * the mark would have written). An outcome in a later commit finds the mark written as before.
   * When the writer redoes a failed batch write by write, nothing is folded (see GroupWriter).
   * (A delivery that waits for a person before its outcome, once that exists, commits its mark
   * first: its outcome is never in the same commit.)
   */
  dispatched(message: Message): Promise<void> {
    const queued: QueuedDispatch = { attempt: message.attempt, folded: false };
    this.queuedDispatches.set(message.id, queued);
    return this.writer.write((alone) => {
      if (this.queuedDispatches.get(message.id) === queued) this.queuedDispatches.delete(message.id);
      if (queued.folded && !alone) return;
      const now = this.now();
      this.transition(message, 'DISPATCHED', FROM_FOR_DISPATCH, (from) => this.setDispatched.run(message.attempt, message.attempt, now, message.id, from).changes);
    });
  }

  /** The delivery's DISPATCHED mark, if it is queued in the writer's next commit: the outcome queued now carries it. */
  private foldDispatch(message: Message): QueuedDispatch | null {
    const queued = this.queuedDispatches.get(message.id);
    if (!queued || queued.attempt !== message.attempt) return null;
    this.queuedDispatches.delete(message.id);
    queued.folded = true;
    return queued;
  }

  /**
   * The outcome's guard as the writer checks it: an outcome it drops gives its folded mark back
   * (the writer checks every job before the batch runs, so the mark, queued earlier, is then
   * written by its own job and the attempt stays counted).
   */
  private unfoldIfDropped(guard: OutcomeGuard | undefined, folded: QueuedDispatch | null): OutcomeGuard | undefined {
    if (!guard || !folded) return guard;
    return () => {
      const refused = guard();
      if (refused) folded.folded = false;
      return refused;
    };
  }

  acked(message: Message, outgoing: readonly Message[], usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<void> {
    return this.settle(message, 'ACKED', outgoing, usage, guard, (now, from, mark) =>
      mark ? this.setDispatchedAcked.run(now, message.attempt, message.attempt, now, message.id, from) : this.setAcked.run(now, message.id, from),
    );
  }

  failed(message: Message, reason: FailureReason, error: string, outgoing: readonly Message[], usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<void> {
    return this.settle(message, 'FAILED', outgoing, usage, guard, (now, from, mark) =>
      mark ? this.setDispatchedFailed.run({ now, reason, error, attempt: message.attempt, id: message.id, from }) : this.setFailed.run(now, reason, error, message.id, from),
    );
  }

  /**
   * An outcome with what it caused, its DISPATCHED mark folded in when that is queued in the
   * same commit (`update` gets `mark` true when its statement is to set the mark's columns too).
   */
  private settle(
    message: Message,
    to: 'ACKED' | 'FAILED',
    outgoing: readonly Message[],
    usage: readonly UsageEvent[],
    guard: OutcomeGuard | undefined,
    update: (now: number, from: DeliveryState, mark: boolean) => { changes: number },
  ): Promise<void> {
    const folded = this.foldDispatch(message);
    return this.writer.write(
      (alone) => {
        const now = this.now();
        const fold = folded !== null && !alone;
        const from = to === 'ACKED' ? (fold ? FOLDED_FROM_FOR_ACK : FROM_FOR_ACK) : fold ? FOLDED_FROM_FOR_FAIL : FROM_FOR_FAIL;
        this.transition(message, to, from, (state) => update(now, state, fold && dispatchable(state)).changes);
        this.insertAll(outgoing);
        this.insertUsage(usage);
      },
      this.unfoldIfDropped(guard, folded),
    );
  }

  awaiting(message: Message, expiresAt: number | null, approval?: ApprovalState, usage: readonly UsageEvent[] = []): Promise<void> {
    return this.writer.write(() => {
      const now = this.now();
      this.transition(
        message,
        'AWAITING',
        FROM_FOR_DISPATCH,
        (from) =>
          prepared(
            this.db,
            `UPDATE journal SET state = 'AWAITING', attempts = @attempt, attempt = @attempt, dispatched_at = COALESCE(dispatched_at, @now), expires_at = @expiresAt,
               approval = COALESCE(@approval, approval) WHERE id = @id AND state = @from`,
          ).run({ attempt: message.attempt, now, expiresAt, approval: approval ? JSON.stringify(approval) : null, id: message.id, from }).changes,
      );
      this.insertUsage(usage);
    });
  }

  /** The guard of "first decision wins": AWAITING -> PENDING with the decision, only while AWAITING. */
  async decideApproval(messageId: string, decision: ApprovalDecision): Promise<boolean> {
    let decided = false;
    await this.writer.write(() => {
      const { changes } = prepared(
        this.db,
        `UPDATE journal SET state = 'PENDING', approval = json_set(approval, '$.decision', json(@decision)), closed_by = @by, closed_note = @note
         WHERE id = @id AND state = 'AWAITING' AND approval IS NOT NULL`,
      ).run({ decision: JSON.stringify(decision), by: decision.by, note: decision.note, id: messageId });
      if (changes === 0) return;
      decided = true;
      this.counts.moved('AWAITING', 'PENDING');
    });
    return decided;
  }

  async closeAsk(messageId: string, closing: AskClosing): Promise<boolean> {
    let closed = false;
    await this.writer.write(() => {
      const now = this.now();
      const { changes } = prepared(
        this.db,
        `UPDATE journal SET state = @state, acked_at = CASE WHEN @state = 'ACKED' THEN @now ELSE acked_at END,
           failed_at = CASE WHEN @state = 'FAILED' THEN @now ELSE failed_at END, failure_reason = @reason, error = @error,
           closed_by = @by, closed_note = @note
         WHERE id = @id AND state = 'AWAITING'`,
      ).run({ state: closing.state, now, reason: closing.reason, error: closing.error, by: closing.by, note: closing.note, id: messageId });
      if (changes === 0) return;
      closed = true;
      this.counts.moved('AWAITING', closing.state);
      this.insertAll(closing.outgoing);
    });
    return closed;
  }

  async openAsks(): Promise<readonly JournalEntry[]> {
    this.writer.flush();
    return (prepared(this.db, `SELECT * FROM journal INDEXED BY journal_state WHERE state = 'AWAITING' ORDER BY seq`).all() as JournalRow[]).map(entryOf);
  }

  async failedThreads(threadIds: readonly string[]): Promise<ReadonlySet<string>> {
    if (threadIds.length === 0) return new Set();
    this.writer.flush();
    // One statement for any number of ids (a bound-parameter list would hit SQLite's limit).
    const rows = prepared(this.db, `SELECT DISTINCT thread_id FROM journal WHERE thread_id IN (SELECT value FROM json_each(?)) AND state = 'FAILED' AND failure_reason IS NOT 'killed'`)
      .raw()
      .all(JSON.stringify(threadIds)) as Array<[string]>;
    return new Set(rows.map((r) => r[0]));
  }

  /**
   * The failed try kept in earlier_attempts with its reason and error (the row's own columns
   * are empty while DISPATCHED), back to PENDING at the next attempt, due at `notBefore`. From
   * PENDING too: the try's DISPATCHED mark is not retried when its write fails.
   */
  retried(message: Message, reason: FailureReason, error: string, notBefore: number, usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<Message> {
    const next = message.attempt + 1;
    return this.writer
      .write(() => {
        const update = prepared(
          this.db,
          `UPDATE journal SET state = 'PENDING', attempt = @next, next_attempt_at = @notBefore,
            earlier_attempts = json_insert(COALESCE(earlier_attempts, '[]'), '$[#]', json_object('attempt', @attempt, 'dispatchedAt', dispatched_at,
              'endedAt', @now, 'outcome', 'failed', 'failureReason', @reason, 'error', @error, 'requeuedAt', @now)), dispatched_at = NULL
           WHERE id = @id AND state = @from AND attempt = @attempt`,
        );
        const params = { next, notBefore, attempt: message.attempt, now: this.now(), reason, error, id: message.id };
        this.transition(message, 'PENDING', FROM_FOR_RETRY, (from) => update.run({ ...params, from }).changes);
        this.insertUsage(usage);
      }, guard)
      .then(() => ({ ...message, attempt: next, notBefore }));
  }

  /**
   * After a crash: PENDING entries go out again in their original order; DISPATCHED ones (the
   * process died mid-handler) go out with attempt + 1, or FAIL once past `maxAttempts`.
   */
  async recover(bootId: string, maxAttempts: MaxAttempts): Promise<RecoveredMessages> {
    this.writer.flush();
    const started = performance.now();
    let redelivered = 0;
    let failedMaxAttempts = 0;
    let messages: Message[] = [];
    this.db.transaction(() => {
      const interrupted = prepared(this.db, `SELECT * FROM journal WHERE state = 'DISPATCHED'`).all() as JournalRow[];
      const retry = prepared(this.db, `UPDATE journal SET state = 'PENDING', attempt = @next, ${keepAttemptSql('interrupted')} WHERE id = @id`);
      for (const row of interrupted) {
        const next = row.attempt + 1;
        const limit = attemptLimitOf(maxAttempts, row.recipient);
        if (next > limit.max) {
          this.setFailed.run(this.now(), 'max_attempts', `Gave up after ${row.attempt} interrupted attempt(s) (${limit.key} = ${limit.max})`, row.id, 'DISPATCHED');
          failedMaxAttempts++;
        } else {
          retry.run({ next, id: row.id, now: this.now() });
          redelivered++;
        }
      }
      const rows = prepared(this.db, `SELECT * FROM journal WHERE state = 'PENDING' ORDER BY seq`).all() as JournalRow[];
      // A retry waiting out its backoff keeps its time (pendingMessageOf): not run early.
      messages = rows.map(pendingMessageOf);
      const report: RecoveryReport = {
        bootId,
        at: this.now(),
        durationMs: 0,
        pending: rows.length - redelivered,
        redelivered,
        failedMaxAttempts,
      };
      this.lastRecovery = report;
    })();
    this.counts.resetStates(this.stateCounts());
    const report = { ...this.lastRecovery!, durationMs: Math.round((performance.now() - started) * 100) / 100 };
    this.lastRecovery = report;
    prepared(this.db, `INSERT OR REPLACE INTO meta (key, value) VALUES ('last_recovery', ?)`).run(JSON.stringify(report));
    return { messages, report };
  }

  async get(messageId: string): Promise<JournalEntry | null> {
    this.writer.flush();
    const row = prepared(this.db, 'SELECT * FROM journal WHERE id = ?').get(messageId) as JournalRow | undefined;
    return row ? entryOf(row) : null;
  }

  async list(q: JournalQuery): Promise<Page<JournalEntry>> {
    this.writer.flush();
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.state) {
      where.push('state = ?');
      params.push(q.state);
    }
    if (q.threadId) {
      where.push('thread_id = ?');
      params.push(q.threadId);
    }
    if (q.agent) {
      where.push('(sender = ? OR recipient = ?)');
      params.push(q.agent, q.agent);
    }
    timeRange(where, params, q, 'created_at', 'created_at');
    const search = q.text ? searchWindow(this.db, q.text) : null;
    if (q.text && search) {
      where.push(`seq >= ? AND ${TEXT_MATCH}`);
      params.push(search.floor, ...textParams(q.text.text));
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const order = q.order === 'oldest' ? 'ASC' : 'DESC';
    const plain = q.startTime === undefined && q.endTime === undefined && !q.text;
    const rows = (
      q.agent && !q.threadId && plain
        ? this.listByListener(q, order)
        : prepared(this.db, `SELECT * FROM journal ${clause} ORDER BY seq ${order} LIMIT ? OFFSET ?`).all(...params, q.limit, q.offset)
    ) as JournalRow[];
    // A page that is not full (and not past the end) gives the total: a search that finds few
    // entries scans the window once, not twice.
    const known = rows.length < q.limit && (rows.length > 0 || q.offset === 0);
    const total = plain
      ? this.count(q, clause, params)
      : known
        ? q.offset + rows.length
        : (prepared(this.db, `SELECT COUNT(*) AS n FROM journal ${clause}`).get(...params) as { n: number }).n;
    return { items: rows.map(entryOf), total, ...(search ? { searchTruncated: search.truncated } : {}) };
  }

  /**
   * A listener's entries, as the newest (or oldest) of its sent and of its received ones merged:
   * each side walks its own index for limit + offset rows. Left to itself, SQLite gathers every
   * match of `sender = ? OR recipient = ?` and sorts them (0.5 s for one listener of a 1M-row journal).
   */
  private listByListener(q: JournalQuery, order: 'ASC' | 'DESC'): unknown[] {
    const state = q.state ? 'AND state = @state' : '';
    const side = (column: string) => `SELECT seq FROM (SELECT seq FROM journal WHERE ${column} = @agent ${state} ORDER BY seq ${order} LIMIT @reach)`;
    return prepared(this.db, `SELECT * FROM journal WHERE seq IN (${side('sender')} UNION ALL ${side('recipient')}) ORDER BY seq ${order} LIMIT @limit OFFSET @offset`).all({
      agent: q.agent,
      ...(q.state ? { state: q.state } : {}),
      reach: q.limit + q.offset,
      limit: q.limit,
      offset: q.offset,
    });
  }

  /** Matches before paging: from the kept row counts (journal-counts.ts) where they answer the query, else COUNT(*). */
  private count(q: JournalQuery, clause: string, params: readonly unknown[]): number {
    if (!q.threadId && !(q.state && q.agent)) {
      if (q.agent) return (prepared(this.db, 'SELECT n FROM journal_agent_counts WHERE agent = ?').get(q.agent) as { n: number } | undefined)?.n ?? 0;
      if (q.state) return this.stateCounts()[q.state];
      return this.entryCount();
    }
    return (prepared(this.db, `SELECT COUNT(*) AS n FROM journal ${clause}`).get(...params) as { n: number }).n;
  }

  private entryCount(): number {
    return (prepared(this.db, `SELECT n FROM row_counts WHERE name = 'journal'`).get() as { n: number }).n;
  }

  /** Entries per state: the small states counted on the state index, ACKED the remainder of all. */
  private stateCounts(): Record<DeliveryState, number> {
    const counts: Record<DeliveryState, number> = zeroStateCounts();
    const small = prepared(this.db, `SELECT state, COUNT(*) AS n FROM journal INDEXED BY journal_state WHERE state IN ('PENDING', 'DISPATCHED', 'AWAITING', 'FAILED') GROUP BY state`);
    let rest = this.entryCount();
    for (const r of small.all() as Array<{ state: DeliveryState; n: number }>) {
      counts[r.state] = r.n;
      rest -= r.n;
    }
    counts.ACKED = rest;
    return counts;
  }

  async stats(): Promise<JournalStats> {
    this.writer.flush();
    const counts = this.stateCounts();
    this.counts.resetStates(counts);
    const oldest = prepared(this.db, `SELECT MIN(created_at) AS t FROM journal WHERE state = 'PENDING'`).get() as { t: number | null };
    return { counts, oldestPendingAgeMs: oldest.t === null ? null : this.now() - oldest.t, lastRecovery: this.lastRecovery };
  }

  /**
   * Entries per state from the kept counts and the oldest PENDING entry's age from one seek on
   * the state index (the lowest seq of a state is its oldest entry): no scan, for /metrics.
   */
  async keptStats(): Promise<KeptJournalStats> {
    const oldest = prepared(this.db, `SELECT created_at AS t FROM journal INDEXED BY journal_state WHERE state = 'PENDING' ORDER BY seq LIMIT 1`).get() as { t: number } | undefined;
    return { counts: this.counts.states, oldestPendingAgeMs: oldest ? Math.max(0, this.now() - oldest.t) : null };
  }

  async redeliver(messageId: string): Promise<Message> {
    this.writer.flush();
    const row = prepared(this.db, 'SELECT * FROM journal WHERE id = ?').get(messageId) as JournalRow | undefined;
    if (!row) throw Errors.JOURNAL_ENTRY_NOT_FOUND(messageId);
    if (row.state !== 'FAILED') throw Errors.JOURNAL_NOT_REDELIVERABLE(messageId, row.state);
    const attempt = row.attempt + 1;
    await this.writer.write(() => {
      const { changes } = prepared(
        this.db,
        `UPDATE journal SET state = 'PENDING', attempt = @attempt, ${keepAttemptSql('failed')}, failed_at = NULL, failure_reason = NULL, error = NULL, next_attempt_at = NULL WHERE id = @id AND state = 'FAILED'`,
      ).run({ attempt, id: messageId, now: this.now() });
      if (changes > 0) this.counts.moved('FAILED', 'PENDING');
    });
    return { ...messageOf(row), attempt };
  }

  async threadHistory(threadId: string, agent: string, limit: number): Promise<readonly Message[]> {
    this.writer.flush();
    const rows = prepared(this.db, `SELECT * FROM journal WHERE thread_id = ? AND (sender = ? OR recipient = ?) ORDER BY seq DESC LIMIT ?`).all(
      threadId,
      agent,
      agent,
      limit,
    ) as JournalRow[];
    return rows.reverse().map(messageOf);
  }

  /**
   * Deletes ACKED entries older than retainDays and FAILED ones older than failedRetainDays,
   * one small batch per call; returns how many went (0 = nothing left to prune).
   */
  pruneStep(now = this.now()): number {
    let deleted = 0;
    this.writer.flush(); // acks still queued are due as well
    this.writer.transaction(() => {
      const acked = prepared(this.db, PRUNE_ACKED_SQL).all(now - this.retention.retainDays * DAY_MS, PRUNE_BATCH) as Array<{ sender: string; recipient: string }>;
      const failed = prepared(this.db, PRUNE_FAILED_SQL).all(now - this.retention.failedRetainDays * DAY_MS, PRUNE_BATCH) as Array<{ sender: string; recipient: string }>;
      for (const r of acked) this.counts.changed(r.sender, r.recipient, -1), this.counts.moved('ACKED', null);
      for (const r of failed) this.counts.changed(r.sender, r.recipient, -1), this.counts.moved('FAILED', null);
      deleted = acked.length + failed.length;
    });
    return deleted;
  }

  /** Prunes everything due, yielding to the event loop between batches. */
  async prune(now = this.now()): Promise<number> {
    let total = 0;
    for (;;) {
      const n = this.pruneStep(now);
      total += n;
      if (n === 0) return total;
      await new Promise((r) => setImmediate(r));
    }
  }

  private insertAll(messages: readonly Message[]): void {
    const createdAt = this.now();
    for (const m of messages) {
      // Positional parameters: a parameter object costs better-sqlite3 a lookup per name (2.5 -> 1.6 µs per insert in a probe).
      const { changes } = this.insert.run(
        m.id,
        m.threadId,
        m.from,
        m.to,
        m.payloadType,
        JSON.stringify(m.payload),
        JSON.stringify(m.metadata),
        m.hops,
        m.parentId,
        m.timestamp,
        m.attempt,
        m.attempt - 1,
        createdAt,
        m.traceContext ?? null,
      );
      if (changes > 0) {
        this.counts.changed(m.from, m.to, 1);
        this.counts.moved(null, 'PENDING');
      }
    }
  }

  /**
   * Moves an entry to `to` from the first of `from` it is in (the usual state first, so the
   * common case is one update). An entry that was never journaled is inserted PENDING first.
   */
  private transition(message: Message, to: DeliveryState, from: readonly DeliveryState[], run: (from: DeliveryState) => number): void {
    for (const state of from) {
      if (run(state) > 0) {
        if (state !== to) this.counts.moved(state, to);
        return;
      }
    }
    if (this.ensure(message) && run('PENDING') > 0) this.counts.moved('PENDING', to);
  }

  /**
   * Inserts the entry of a message that was never journaled PENDING (the update found no row);
   * true when it was inserted. Updating first spares the common case an insert attempt: with
   * eight indexes on the journal, that was a third of its write time (bench scenario 2).
   */
  private ensure(message: Message): boolean {
    const before = prepared(this.db, 'SELECT 1 FROM journal WHERE id = ?').get(message.id);
    if (before) return false;
    this.insertAll([message]);
    return true;
  }
}
