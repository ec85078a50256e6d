import type { ApprovalDecision, ApprovalState } from '../../core/approval.js';
import { Errors } from '../../errors/catalogue.js';
import type { FailureReason, OutcomeGuard } from '../../core/delivery.js';
import type { Message } from '../../core/message.js';
import type { UsageEvent } from '../../usage/types.js';
import type { TextSearch } from '../../core/search.js';
import { entryOf, messageOf, pendingMessageOf, textParams, type JournalRow } from '../rows.js';
import type { AskClosing, DeliveryState, Journal, JournalEntry, JournalQuery, JournalStats, KeptJournalStats, MaxAttempts, RecoveredMessages, RecoveryReport } from '../../core/journal.js';
import type { Page } from '../../core/page.js';
import { DELIVERY_STATES, zeroStateCounts } from '../../core/journal.js';
import { AGENT_COUNT_SQL, COUNT_SQL, PgJournalCounts, RECOUNT_STATES_SQL } from './journal-counts.js';
import { insertUsage } from './usage-writes.js';
import type { Reader } from './pool.js';
import type { PgWriter, Tx } from './writer.js';

const PRUNE_BATCH = 1_000;
const DAY_MS = 86_400_000;
const FROM_FOR_DISPATCH: readonly DeliveryState[] = ['PENDING', 'DISPATCHED'];
/** An outcome moves an entry from any state but AWAITING (an ask only a person's answer, or its close, ends). */
const ANY_STATE: readonly DeliveryState[] = DELIVERY_STATES.filter((s) => s !== 'AWAITING');

/**
 * Keeps the entry's latest attempt in earlier_attempts as it goes back to PENDING (SET
 * expressions read the row as it was before the update); `now` is the parameter holding when it
 * was requeued.
 */
export const pgKeepAttemptSql = (outcome: 'failed' | 'interrupted', now: string) =>
  `earlier_attempts = (COALESCE(earlier_attempts::jsonb, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', attempt, 'dispatchedAt', dispatched_at,
    'endedAt', ${outcome === 'failed' ? `COALESCE(failed_at, ${now}::bigint)` : `${now}::bigint`}, 'outcome', '${outcome}', 'failureReason', failure_reason, 'error', error,
    'requeuedAt', ${now}::bigint)))::text, dispatched_at = NULL`;

/**
 * The SET of a failed try going back to PENDING for a retry: kept in earlier_attempts with its
 * reason and error (the row's own are empty while DISPATCHED), attempt + 1, due at `notBefore`.
 * Parameters: the try's attempt, now, reason, error, notBefore.
 */
export const pgRetrySet = (attempt: string, now: string, reason: string, error: string, notBefore: string) =>
  `attempt = ${attempt}::int + 1, next_attempt_at = ${notBefore}::bigint, claimed_by = NULL,
    earlier_attempts = (COALESCE(earlier_attempts::jsonb, '[]'::jsonb) || jsonb_build_array(jsonb_build_object('attempt', ${attempt}::int, 'dispatchedAt', dispatched_at,
    'endedAt', ${now}::bigint, 'outcome', 'failed', 'failureReason', ${reason}::text, 'error', ${error}::text, 'requeuedAt', ${now}::bigint)))::text, dispatched_at = NULL`;

const JOURNAL_COLUMNS = `id, thread_id, sender, recipient, payload_type, payload, metadata, hops, parent_id, msg_timestamp, attempt, state, attempts, created_at, trace_context`;

/** Inserts messages PENDING, once each by id, in their order ($1-$12 their columns, $13 now); RETURNING is the caller's. */
const INSERT_SQL = `INSERT INTO journal (${JOURNAL_COLUMNS})
  SELECT id, thread_id, sender, recipient, payload_type, payload, metadata, hops, parent_id, msg_timestamp, attempt, 'PENDING', attempt - 1, $13::bigint, trace_context
  FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::int[], $9::text[], $10::bigint[], $11::int[], $12::text[])
    AS m(id, thread_id, sender, recipient, payload_type, payload, metadata, hops, parent_id, msg_timestamp, attempt, trace_context)
  ON CONFLICT (id) DO NOTHING`;

/** INSERT_SQL, the rows it inserts counted in the kept counts' slot $14 (see insertAllAtCommit). */
const INSERT_COUNTED_SQL = `WITH ins AS (${INSERT_SQL} RETURNING sender, recipient),
  total AS (
    INSERT INTO row_counts (name, slot, n) SELECT v.name, $14::text, c.n FROM (SELECT COUNT(*) AS n FROM ins) c CROSS JOIN (VALUES ('journal'), ('journal:PENDING')) AS v(name)
    WHERE c.n > 0 ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n + excluded.n),
  agents AS (
    INSERT INTO journal_agent_counts (agent, slot, n)
    SELECT a.agent, $14::text, COUNT(*) FROM (SELECT sender AS agent FROM ins UNION ALL SELECT recipient FROM ins WHERE recipient <> sender) a GROUP BY a.agent ORDER BY a.agent
    ON CONFLICT (agent, slot) DO UPDATE SET n = journal_agent_counts.n + excluded.n)
  SELECT 1`;

/** Deletes a batch of old entries of one state, with the LLM calls recorded for them. */
const pruneSql = (state: 'ACKED' | 'FAILED', column: 'acked_at' | 'failed_at') => `
  WITH gone AS (
    DELETE FROM journal WHERE seq IN (SELECT seq FROM journal WHERE state = '${state}' AND ${column} < $1 LIMIT $2)
    RETURNING id, sender, recipient
  ), calls AS (DELETE FROM llm_calls WHERE message_id IN (SELECT id FROM gone)),
  tools AS (DELETE FROM llm_tool_calls WHERE message_id IN (SELECT id FROM gone))
  SELECT sender, recipient FROM gone`;
export const PG_PRUNE_ACKED_SQL = pruneSql('ACKED', 'acked_at');
export const PG_PRUNE_FAILED_SQL = pruneSql('FAILED', 'failed_at');

/** A journal row whose payload or error contains the searched text: parameters $n (in the payload's JSON) and $n+1 (in the error). */
export const pgTextMatch = (n: number) => `(payload ILIKE $${n} ESCAPE '\\' OR error ILIKE $${n + 1} ESCAPE '\\')`;

/** The lowest seq a text search reads (the newest `window` entries, a walk of the primary key) and whether older entries were left unread. */
export async function pgSearchWindow(pool: Reader, search: TextSearch): Promise<{ floor: number; truncated: boolean }> {
  const rows = (await pool.query<{ seq: number }>('SELECT seq FROM journal ORDER BY seq DESC LIMIT 2 OFFSET $1', [search.window - 1])).rows;
  return { floor: rows[0]?.seq ?? 0, truncated: rows.length === 2 };
}

/**
 * The certified-mail journal on PostgreSQL, with the SQLite journal's rules. Every transition
 * goes through the write-behind writer (one transaction per batch, in order); an ack commits
 * its outgoing messages (PENDING) and the usage it caused in that same transaction. Reads wait
 * for the writes queued before them.
 *
 * Here one process owns the journal: recovery takes over every DISPATCHED entry as
 * interrupted. Processes sharing it (claims, leases) use PgClusterJournal (cluster-journal.ts).
 */
export class PgJournal implements Journal {
  protected readonly counts = new PgJournalCounts();
  protected lastRecovery: RecoveryReport | null = null;

  constructor(
    protected readonly pool: Reader,
    protected readonly writer: PgWriter,
    private readonly retention: { retainDays: number; failedRetainDays: number },
    protected readonly now: () => number = Date.now,
  ) {
    writer.addHook(this.counts);
  }

  /** Reads the last recovery report (called once at open). */
  async load(): Promise<void> {
    const saved = (await this.pool.query<{ value: string }>(`SELECT value FROM meta WHERE key = 'last_recovery'`)).rows[0];
    this.lastRecovery = saved ? (JSON.parse(saved.value) as RecoveryReport) : null;
  }

  pending(messages: readonly Message[]): Promise<void> {
    return this.writer.write((tx) => this.insertAll(tx, messages));
  }

  dispatched(message: Message): Promise<void> {
    return this.writer.write((tx) =>
      this.transition(tx, message, 'DISPATCHED', FROM_FOR_DISPATCH, `attempts = $3, attempt = $3, dispatched_at = $4, next_attempt_at = NULL`, [message.attempt, this.now()]),
    );
  }

  acked(message: Message, outgoing: readonly Message[], usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<void> {
    return this.writer.write(async (tx) => {
      await this.transition(tx, message, 'ACKED', ANY_STATE, `acked_at = $3`, [this.now()]);
      await this.insertAll(tx, outgoing);
      await insertUsage(tx, usage);
    }, guard);
  }

  failed(message: Message, reason: FailureReason, error: string, outgoing: readonly Message[], usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<void> {
    return this.writer.write(async (tx) => {
      await this.transition(tx, message, 'FAILED', ANY_STATE, `failed_at = $3, failure_reason = $4, error = $5`, [this.now(), reason, error]);
      await this.insertAll(tx, outgoing);
      await insertUsage(tx, usage);
    }, guard);
  }

  /** A failed try back to PENDING for a retry (see Journal.retried), with the usage it caused. */
  retried(message: Message, reason: FailureReason, error: string, notBefore: number, usage: readonly UsageEvent[], guard?: OutcomeGuard): Promise<Message> {
    return this.writer
      .write(async (tx) => {
        await this.transition(tx, message, 'PENDING', ['DISPATCHED', 'PENDING'], pgRetrySet('$3', '$4', '$5', '$6', '$7'), [message.attempt, this.now(), reason, error, notBefore]);
        await insertUsage(tx, usage);
      }, guard)
      .then(() => ({ ...message, attempt: message.attempt + 1, notBefore }));
  }

  awaiting(message: Message, expiresAt: number | null, approval?: ApprovalState, usage: readonly UsageEvent[] = []): Promise<void> {
    return this.writer.write(async (tx) => {
      await this.transition(
        tx,
        message,
        'AWAITING',
        FROM_FOR_DISPATCH,
        `attempts = $3, attempt = $3, dispatched_at = COALESCE(j.dispatched_at, $4), expires_at = $5, approval = COALESCE($6, j.approval)`,
        [message.attempt, this.now(), expiresAt, approval ? JSON.stringify(approval) : null],
      );
      await insertUsage(tx, usage);
    });
  }

  /**
   * The guard of "first decision wins": AWAITING -> PENDING with the decision, only while
   * AWAITING (a second decider waits on the row's lock, then finds it PENDING).
   */
  async decideApproval(messageId: string, decision: ApprovalDecision): Promise<boolean> {
    let decided = false;
    await this.writer.write(async (tx) => {
      decided = false;
      const r = await tx.query<{ thread_id: string; recipient: string }>(
        `UPDATE journal SET state = 'PENDING', approval = (approval::jsonb || jsonb_build_object('decision', $2::jsonb))::text, closed_by = $3, closed_note = $4
         WHERE id = $1 AND state = 'AWAITING' AND approval IS NOT NULL RETURNING thread_id, recipient`,
        [messageId, JSON.stringify(decision), decision.by, decision.note],
      );
      const row = r.rows[0];
      if (!row) return;
      decided = true;
      this.counts.moved('AWAITING', 'PENDING');
      await this.approvalDecided(tx, row.thread_id);
      await this.requeued(tx, [row.recipient]);
    });
    return decided;
  }

  /**
   * The guard of "first answer wins": the conditional update AWAITING -> closed. Two processes
   * closing it at once: the second waits on the row's lock, then finds it no longer AWAITING.
   */
  async closeAsk(messageId: string, closing: AskClosing): Promise<boolean> {
    let closed = false;
    await this.writer.write(async (tx) => {
      closed = false;
      const now = this.now();
      const r = await tx.query<{ thread_id: string }>(
        `UPDATE journal SET state = $2, acked_at = CASE WHEN $2 = 'ACKED' THEN $3::bigint ELSE acked_at END,
           failed_at = CASE WHEN $2 = 'FAILED' THEN $3::bigint ELSE failed_at END, failure_reason = $4, error = $5, closed_by = $6, closed_note = $7
         WHERE id = $1 AND state = 'AWAITING' RETURNING thread_id`,
        [messageId, closing.state, now, closing.reason, closing.error, closing.by, closing.note],
      );
      const row = r.rows[0];
      if (!row) return;
      closed = true;
      this.counts.moved('AWAITING', closing.state);
      await this.insertAll(tx, closing.outgoing);
      await this.askClosed(tx, row.thread_id, closing);
    });
    return closed;
  }

  /** A pending approval of the thread was decided in `tx` (its delivery is PENDING again). Nothing to do when one process owns the journal. */
  protected async approvalDecided(_tx: Tx, _threadId: string): Promise<void> {}

  /** An ask of the thread was closed in `tx`. Nothing to do when one process owns the journal (its pump keeps the thread's record). */
  protected async askClosed(_tx: Tx, _threadId: string, _closing: AskClosing): Promise<void> {}

  async openAsks(): Promise<readonly JournalEntry[]> {
    await this.writer.flush();
    return (await this.pool.query<JournalRow>(`SELECT * FROM journal WHERE state = 'AWAITING' ORDER BY seq`)).rows.map(entryOf);
  }

  async failedThreads(threadIds: readonly string[]): Promise<ReadonlySet<string>> {
    if (threadIds.length === 0) return new Set();
    await this.writer.flush();
    const rows = await this.pool.query<{ thread_id: string }>(
      `SELECT DISTINCT thread_id FROM journal WHERE thread_id = ANY($1::text[]) AND state = 'FAILED' AND failure_reason IS DISTINCT FROM 'killed'`,
      [threadIds],
    );
    return new Set(rows.rows.map((r) => r.thread_id));
  }

  /**
   * After a crash: PENDING entries go out again in their original order; DISPATCHED ones (the
   * process died mid-handler) go out with attempt + 1, or FAIL once past `maxAttempts`. The
   * per-state counts are recounted from the rows in the same transaction.
   */
  async recover(bootId: string, maxAttempts: MaxAttempts): Promise<RecoveredMessages> {
    const started = performance.now();
    const { rows, redelivered, failedMaxAttempts } = await this.writer.transaction(async (tx) => {
      // A listener's retry.max_attempts ($3, by recipient) replaces journal.max_attempts ($2) for it.
      const byListener = typeof maxAttempts === 'number' ? {} : maxAttempts.byListener;
      const failed = await tx.query(
        `UPDATE journal SET state = 'FAILED', failed_at = $1, failure_reason = 'max_attempts',
           error = 'Gave up after ' || attempt || ' interrupted attempt(s) (' ||
             CASE WHEN $3::jsonb ? recipient THEN 'listeners.' || recipient || '.retry.max_attempts = ' || ($3::jsonb ->> recipient)
               ELSE 'journal.max_attempts = ' || $2::int END || ')'
         WHERE state = 'DISPATCHED' AND attempt + 1 > COALESCE(($3::jsonb ->> recipient)::int, $2::int)`,
        [this.now(), typeof maxAttempts === 'number' ? maxAttempts : maxAttempts.default, JSON.stringify(byListener)],
      );
      const retried = await tx.query(`UPDATE journal SET state = 'PENDING', attempt = attempt + 1, ${pgKeepAttemptSql('interrupted', '$1')} WHERE state = 'DISPATCHED'`, [this.now()]);
      await tx.query(RECOUNT_STATES_SQL);
      this.counts.statesRecounted(); // writes batched before this one are in the recount
      const pending = await tx.query<JournalRow>(`SELECT * FROM journal WHERE state = 'PENDING' ORDER BY seq`);
      return { rows: pending.rows, redelivered: retried.rowCount ?? 0, failedMaxAttempts: failed.rowCount ?? 0 };
    });
    const report: RecoveryReport = {
      bootId,
      at: this.now(),
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      pending: rows.length - redelivered,
      redelivered,
      failedMaxAttempts,
    };
    this.lastRecovery = report;
    await this.pool.query(`INSERT INTO meta (key, value) VALUES ('last_recovery', $1) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [JSON.stringify(report)]);
    // A retry waiting out its backoff keeps its time (pendingMessageOf): not run early.
    return { messages: rows.map(pendingMessageOf), report };
  }

  async get(messageId: string): Promise<JournalEntry | null> {
    await this.writer.flush();
    const row = (await this.pool.query<JournalRow>('SELECT * FROM journal WHERE id = $1', [messageId])).rows[0];
    return row ? entryOf(row) : null;
  }

  async list(q: JournalQuery): Promise<Page<JournalEntry>> {
    await this.writer.flush();
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: (n: number) => string, value: unknown) => {
      params.push(value);
      where.push(sql(params.length));
    };
    if (q.state) add((n) => `state = $${n}`, q.state);
    if (q.threadId) add((n) => `thread_id = $${n}`, q.threadId);
    if (q.agent) add((n) => `(sender = $${n} OR recipient = $${n})`, q.agent);
    if (q.startTime !== undefined) add((n) => `created_at >= $${n}`, q.startTime);
    if (q.endTime !== undefined) add((n) => `created_at < $${n}`, q.endTime);
    const search = q.text ? await pgSearchWindow(this.pool, q.text) : null;
    if (q.text && search) {
      add((n) => `seq >= $${n}`, search.floor);
      const [inPayload, inError] = textParams(q.text.text);
      params.push(inPayload, inError);
      where.push(pgTextMatch(params.length - 1));
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const order = q.order === 'oldest' ? 'ASC' : 'DESC';
    const n = params.length;
    const plain = q.startTime === undefined && q.endTime === undefined && !q.text;
    const rows =
      q.agent && !q.threadId && plain
        ? await this.listByListener(q, order)
        : (await this.pool.query<JournalRow>(`SELECT * FROM journal ${clause} ORDER BY seq ${order} LIMIT $${n + 1} OFFSET $${n + 2}`, [...params, q.limit, q.offset])).rows;
    const total = plain ? await this.count(q, clause, params) : (await this.pool.query<{ n: number }>(`SELECT COUNT(*) AS n FROM journal ${clause}`, params)).rows[0]!.n;
    return { items: rows.map(entryOf), total, ...(search ? { searchTruncated: search.truncated } : {}) };
  }

  /**
   * A listener's entries, as the newest (or oldest) of its sent and of its received ones merged:
   * each side walks its own index for limit + offset rows, instead of gathering and sorting
   * every match of `sender = $1 OR recipient = $1`.
   */
  private async listByListener(q: JournalQuery, order: 'ASC' | 'DESC'): Promise<JournalRow[]> {
    const state = q.state ? 'AND state = $5' : '';
    const side = (column: string) => `(SELECT seq FROM journal WHERE ${column} = $1 ${state} ORDER BY seq ${order} LIMIT $2)`;
    const params: unknown[] = [q.agent, q.limit + q.offset, q.limit, q.offset, ...(q.state ? [q.state] : [])];
    const sql = `SELECT * FROM journal WHERE seq IN (${side('sender')} UNION ALL ${side('recipient')}) ORDER BY seq ${order} LIMIT $3 OFFSET $4`;
    return (await this.pool.query<JournalRow>(sql, params)).rows;
  }

  /** Matches before paging: from the kept counts where they answer the query, else COUNT(*). */
  private async count(q: JournalQuery, clause: string, params: readonly unknown[]): Promise<number> {
    if (!q.threadId && !(q.state && q.agent)) {
      if (q.agent) return (await this.pool.query<{ n: number }>(AGENT_COUNT_SQL, [q.agent])).rows[0]!.n;
      const name = q.state ? `journal:${q.state}` : 'journal';
      return (await this.pool.query<{ n: number }>(COUNT_SQL, [name])).rows[0]!.n;
    }
    return (await this.pool.query<{ n: number }>(`SELECT COUNT(*) AS n FROM journal ${clause}`, [...params])).rows[0]!.n;
  }

  /** Entries per state from the kept counts. */
  private async stateCounts(): Promise<Record<DeliveryState, number>> {
    const counts: Record<DeliveryState, number> = zeroStateCounts();
    const rows = (await this.pool.query<{ name: string; n: number }>(`SELECT name, SUM(n) AS n FROM row_counts WHERE name LIKE 'journal:%' GROUP BY name`)).rows;
    for (const r of rows) counts[r.name.slice('journal:'.length) as DeliveryState] = r.n;
    return counts;
  }

  async stats(): Promise<JournalStats> {
    await this.writer.flush();
    const counts = await this.stateCounts();
    const oldest = await this.oldestPending();
    return { counts, oldestPendingAgeMs: oldest === null ? null : this.now() - oldest, lastRecovery: this.lastRecovery };
  }

  /** The kept counts and the oldest PENDING entry's creation from one seek on the state index: no scan, for /metrics. */
  async keptStats(): Promise<KeptJournalStats> {
    const [counts, oldest] = await Promise.all([this.stateCounts(), this.oldestPending()]);
    return { counts, oldestPendingAgeMs: oldest === null ? null : Math.max(0, this.now() - oldest) };
  }

  private async oldestPending(): Promise<number | null> {
    const row = (await this.pool.query<{ t: number }>(`SELECT created_at AS t FROM journal WHERE state = 'PENDING' ORDER BY seq LIMIT 1`)).rows[0];
    return row ? row.t : null;
  }

  async redeliver(messageId: string): Promise<Message> {
    await this.writer.flush();
    const row = (await this.pool.query<JournalRow>('SELECT * FROM journal WHERE id = $1', [messageId])).rows[0];
    if (!row) throw Errors.JOURNAL_ENTRY_NOT_FOUND(messageId);
    if (row.state !== 'FAILED') throw Errors.JOURNAL_NOT_REDELIVERABLE(messageId, row.state);
    const attempt = row.attempt + 1;
    await this.writer.write(async (tx) => {
      const r = await tx.query(
        `UPDATE journal SET state = 'PENDING', attempt = $1, ${pgKeepAttemptSql('failed', '$3')}, failed_at = NULL, failure_reason = NULL, error = NULL, next_attempt_at = NULL WHERE id = $2 AND state = 'FAILED'`,
        [attempt, messageId, this.now()],
      );
      if ((r.rowCount ?? 0) > 0) {
        this.counts.moved('FAILED', 'PENDING');
        await this.requeued(tx, [row.recipient]);
      }
    });
    return { ...messageOf(row), attempt };
  }

  /** Entries addressed to `recipients` became PENDING again in `tx` (an operator's redeliver). Nothing to do when one process owns the journal. */
  protected async requeued(_tx: Tx, _recipients: readonly string[]): Promise<void> {}

  async threadHistory(threadId: string, agent: string, limit: number): Promise<readonly Message[]> {
    await this.writer.flush();
    const rows = (await this.pool.query<JournalRow>(`SELECT * FROM journal WHERE thread_id = $1 AND (sender = $2 OR recipient = $2) ORDER BY seq DESC LIMIT $3`, [threadId, agent, limit]))
      .rows;
    return rows.reverse().map(messageOf);
  }

  /**
   * Deletes ACKED entries older than retainDays and FAILED ones older than failedRetainDays
   * (with their recorded LLM calls), one small batch per call; returns how many went.
   */
  pruneStep(now = this.now()): Promise<number> {
    return this.writer.transaction(async (tx) => {
      const acked = (await tx.query<{ sender: string; recipient: string }>(PG_PRUNE_ACKED_SQL, [now - this.retention.retainDays * DAY_MS, PRUNE_BATCH])).rows;
      const failed = (await tx.query<{ sender: string; recipient: string }>(PG_PRUNE_FAILED_SQL, [now - this.retention.failedRetainDays * DAY_MS, PRUNE_BATCH])).rows;
      for (const r of acked) this.counts.changed(r.sender, r.recipient, -1), this.counts.moved('ACKED', null);
      for (const r of failed) this.counts.changed(r.sender, r.recipient, -1), this.counts.moved('FAILED', null);
      return acked.length + failed.length;
    });
  }

  /** Prunes everything due, one batch per transaction. */
  async prune(now = this.now()): Promise<number> {
    let total = 0;
    for (;;) {
      const n = await this.pruneStep(now);
      total += n;
      if (n === 0) return total;
    }
  }

  /** Inserts messages PENDING (once each, by id) in one statement, in their order. */
  protected async insertAll(tx: Tx, messages: readonly Message[]): Promise<void> {
    if (messages.length === 0) return;
    const inserted = await tx.query<{ sender: string; recipient: string }>({
      name: 'journal-insert',
      text: `${INSERT_SQL} RETURNING sender, recipient`,
      values: this.insertValues(messages),
    });
    for (const r of inserted.rows) {
      this.counts.changed(r.sender, r.recipient, 1);
      this.counts.moved(null, 'PENDING');
    }
  }

  /**
   * insertAll with the statement sent with the COMMIT (Tx.atCommit: one round trip less), the
   * rows it inserts counted in this process's slots by the statement itself (what the kept
   * counts add at commit otherwise). False when it cannot be written with its values in: then
   * nothing was done.
   */
  protected insertAllAtCommit(tx: Tx, messages: readonly Message[]): boolean {
    if (messages.length === 0) return true;
    return tx.atCommit({ name: 'journal-insert-counted', text: INSERT_COUNTED_SQL, values: [...this.insertValues(messages), this.counts.slot] });
  }

  /** The values of INSERT_SQL for `messages`. */
  private insertValues(messages: readonly Message[]): unknown[] {
    const col = <T>(f: (m: Message) => T) => messages.map(f);
    return [
      col((m) => m.id),
      col((m) => m.threadId),
      col((m) => m.from),
      col((m) => m.to),
      col((m) => m.payloadType),
      col((m) => JSON.stringify(m.payload)),
      col((m) => JSON.stringify(m.metadata)),
      col((m) => m.hops),
      col((m) => m.parentId),
      col((m) => m.timestamp),
      col((m) => m.attempt),
      col((m) => m.traceContext ?? null),
      this.now(),
    ];
  }

  /**
   * Moves an entry to `to` if it is in one of `from`, learning the state it left in the same
   * statement (for the kept counts). An entry that was never journaled is inserted PENDING
   * first; one in another state is left as it is.
   */
  private async transition(tx: Tx, message: Message, to: DeliveryState, from: readonly DeliveryState[], set: string, values: readonly unknown[]): Promise<void> {
    const sql = `WITH old AS (SELECT seq, state FROM journal WHERE id = $1 AND state = ANY($2::text[]) FOR UPDATE)
      UPDATE journal j SET state = '${to}', ${set} FROM old WHERE j.seq = old.seq RETURNING old.state AS "from"`;
    const run = async () => (await tx.query<{ from: DeliveryState }>({ name: `journal-to-${to}`, text: sql, values: [message.id, from, ...values] })).rows[0]?.from;
    let left = await run();
    if (left === undefined) {
      const exists = (await tx.query({ name: 'journal-exists', text: 'SELECT 1 FROM journal WHERE id = $1', values: [message.id] })).rowCount;
      if (exists) return;
      await this.insertAll(tx, [message]);
      left = await run();
    }
    if (left !== undefined && left !== to) this.counts.moved(left, to);
  }
}
