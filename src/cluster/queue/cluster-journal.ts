import type { ApprovalParking } from '../../core/approval.js';
import { recordOf, type ThreadRow } from '../../store/postgres/threads.js';
import type pg from 'pg';
import type { FailureReason } from '../../core/delivery.js';
import { EXTERNAL_SENDER, type Message } from '../../core/message.js';
import type { AgentLoad, ClaimedWork, ClaimLimits, DeliveryOutcomeWrite, FencedResult, TakenBack } from '../../core/work-source.js';
import { messageOf, type JournalRow } from '../../store/rows.js';
import { attemptLimitOf, type AskClosing, type MaxAttempts, type RecoveredMessages, type RecoveryReport } from '../../core/journal.js';
import type { Channels } from '../bus/channels.js';
import { claimCall } from './claim-sql.js';
import { PgLots } from './lots.js';
import { COUNT_SQL, FOLD_SLOTS_SQL } from '../../store/postgres/journal-counts.js';
import { PgJournal, pgKeepAttemptSql, pgRetrySet } from '../../store/postgres/journal.js';
import { pgRuntimeError, type Reader } from '../../store/postgres/pool.js';
import { countInjectsAtCommit, countInThreads, type FinishedStatus, isInject, settleThreads, settleThreadsAtCommit } from './cluster-threads.js';
import { insertUsage } from '../../store/postgres/usage-writes.js';
import { FinishedBudgets } from '../../store/postgres/budget-ledger.js';
import { sqlLiteral, type PgWriter, type Tx } from '../../store/postgres/writer.js';

/**
 * Fenced outcomes, set-based: each entry moves to its state ($4) only while DISPATCHED to its
 * worker ($2) at its attempt ($3); returns those that moved. Each entry is found by its id, one
 * index lookup per outcome, whatever the plan's estimates: the statement runs on a generic plan
 * kept per connection, made early (a small journal, few DISPATCHED entries), and written as an
 * UPDATE ... FROM unnest(...) with the fence's conditions on the journal, that plan read every
 * DISPATCHED entry (journal_claimed, estimated at one) once per outcome: 0.7 million rows for a
 * lot of 825 outcomes, 290 ms, and the bigger the lot the slower, so lots grew as the writer
 * fell behind (the PostgreSQL chain's slow rounds, half the rate). The lookup is a subquery the
 * planner keeps apart (OFFSET 0: nothing is pushed into it, so the partial indexes' state never
 * applies), and the update finds the rows it fenced by their key. Then, in the same statement (one
 * round trip), the threads the moved ones touch ($9 for outcome $8: its own, its outgoing
 * messages') are locked in id order, as every transaction here takes them: after the journal
 * rows, as before, in a statement of their own. The locked threads come back once, on the
 * first row (as an array on every row, a lot of n outcomes sent and parsed n² thread ids).
 */
const FENCED_CTES = `
  WITH fenced AS MATERIALIZED (
    SELECT k.seq, o.state, o.reason, o.error
    FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[]) AS o(id, worker, attempt, state, reason, error)
    CROSS JOIN LATERAL (SELECT j.seq, j.state AS now, j.claimed_by, j.attempt FROM journal j WHERE j.id = o.id OFFSET 0) k
    WHERE k.now = 'DISPATCHED' AND k.claimed_by = o.worker AND k.attempt = o.attempt),
  moved AS (
    UPDATE journal j SET state = o.state,
      acked_at = CASE WHEN o.state = 'ACKED' THEN $7::bigint ELSE j.acked_at END,
      failed_at = CASE WHEN o.state = 'FAILED' THEN $7::bigint ELSE j.failed_at END,
      failure_reason = CASE WHEN o.state = 'FAILED' THEN o.reason ELSE j.failure_reason END,
      error = CASE WHEN o.state = 'FAILED' THEN o.error ELSE j.error END
    FROM fenced o
    WHERE j.seq = o.seq
    RETURNING j.id, j.state),
  locked AS (
    SELECT t.id FROM threads t
    WHERE t.id IN (SELECT l.thread FROM unnest($8::text[], $9::text[]) AS l(outcome, thread) JOIN moved ON moved.id = l.outcome)
    ORDER BY t.id FOR UPDATE)`;
/** Exported for the test of its plan (test/cluster/outcome-lot.test.ts). */
export const FENCED_SQL = `${FENCED_CTES}
  SELECT m.id, m.state, CASE WHEN row_number() OVER () = 1 THEN (SELECT array_agg(id) FROM locked) END AS locked FROM moved m`;

/**
 * The same fence for a lot expected to commit whole, sent with the COMMIT: it raises (see
 * lot-check.ts) unless all $10 outcomes moved and all $11 threads they touch were locked.
 */
const FENCED_WHOLE_SQL = `${FENCED_CTES}
  SELECT organism_check(c.moved = $10 AND c.locked = $11,
    format('%s of %s outcomes still held their claim and %s of %s threads were found', c.moved, $10::int, c.locked, $11::int))
  FROM (SELECT (SELECT COUNT(*) FROM moved)::int AS moved, (SELECT COUNT(*) FROM locked)::int AS locked) c`;

/**
 * A lot of injects admitted whole, checked with its COMMIT: it raises (see lot-check.ts)
 * unless the queue's depth (the kept count of PENDING entries) is below $1.
 */
const QUEUE_ROOM_SQL = `
  SELECT organism_check(d.n < $1, format('the queue holds %s entries, the lot had room for all its injects below %s', d.n, $1::bigint))
  FROM (SELECT COALESCE(SUM(n), 0) AS n FROM row_counts WHERE name = 'journal:PENDING') d`;

const NOT_OURS: FencedResult = { committed: false, threadFinished: null };

/** What organism_claim returns (see claim-function.ts): a claimed entry, then the rooms. */
interface ClaimedRow {
  readonly row: JournalRow;
  readonly thread: ThreadRow | null;
}
interface ClaimRooms {
  readonly rooms: Record<string, number> | null;
  readonly room: number;
}
type ClaimDocument = ClaimedRow | ClaimRooms;

/**
 * Whether a limit stopped the claim: it took all the room it had in all, or some listener all
 * of its room (none at all included: its backlog was not even looked at).
 */
export function cappedBy(claimed: ReadonlyArray<{ message: Message }>, rooms: ClaimRooms): boolean {
  if (claimed.length >= rooms.room) return true;
  const taken = new Map<string, number>();
  for (const c of claimed) taken.set(c.message.to, (taken.get(c.message.to) ?? 0) + 1);
  return Object.entries(rooms.rooms ?? {}).some(([name, room]) => (taken.get(name) ?? 0) >= room);
}

/** The ack or failure of a claimed delivery, as commitOutcomes writes it. */
interface FencedOutcome {
  readonly workerId: string;
  readonly message: Message;
  readonly to: 'ACKED' | 'FAILED';
  /** FAILED only. */
  readonly reason: FailureReason | null;
  readonly error: string | null;
  readonly outcome: DeliveryOutcomeWrite;
}

/**
 * The journal of an organism whose processes share the database (issue 15). PostgreSQL is the
 * work queue: nothing is queued in a process's memory; processes claim PENDING entries
 * (`claim`), and commit each outcome fenced by the claim (`ackClaimed`, `failClaimed`).
 *
 * Also, in the same transactions as the entries (no process keeps a thread in memory that
 * another could contradict), it keeps the thread records: an inject makes its thread active
 * (error cleared), every message journaled counts in its thread, and an outcome that leaves no
 * PENDING or DISPATCHED entry of the thread finishes it (completed, or error when a delivery
 * failed or a send was refused since the inject). Every transaction that journals PENDING
 * entries NOTIFYs the work channel (a wake-up hint, delivered at commit).
 *
 * Why claims are journal rows under SELECT … FOR UPDATE SKIP LOCKED, not graphile-worker or
 * pg-boss jobs: see the commit that introduced this file.
 */
export class PgClusterJournal extends PgJournal {
  /** Acks and failures of claimed deliveries, committed in lots (see commitOutcomes). */
  private readonly outcomes: PgLots<FencedOutcome, FencedResult>;
  /** Injects under limits.max_queue, admitted in lots (see admitInjects). */
  private readonly injects: PgLots<{ messages: readonly Message[]; maxQueue: number }, boolean>;
  /** Threads whose budget an outcome's transaction finished with them (the budget ledger reads it). */
  readonly finishedBudgets = new FinishedBudgets();
  /** Outcomes and injects whose lot was sent whole with its COMMIT once (see fenceWithCommit, roomWithCommit). */
  private readonly triedWhole = new WeakSet<object>();

  constructor(
    pool: Reader,
    writer: PgWriter,
    retention: { retainDays: number; failedRetainDays: number },
    private readonly rawPool: pg.Pool,
    private readonly channels: Channels,
    private readonly where: string,
    /** This process's worker id: its slot of the kept counts, and the sender named in its work notifications. */
    private readonly workerId: string,
    now: () => number = Date.now,
  ) {
    super(pool, writer, retention, now);
    this.counts.slot = workerId;
    this.outcomes = new PgLots(writer, (tx, list) => this.commitOutcomes(tx, list));
    this.injects = new PgLots(writer, (tx, list) => this.admitInjects(tx, list));
  }

  /** Folds the kept-count slots of processes that are not running into the base (run at each heartbeat). */
  foldCountSlots(): Promise<void> {
    return this.writer.write(async (tx) => {
      for (const sql of FOLD_SLOTS_SQL) await tx.query(sql, [this.now()]);
    });
  }

  /**
   * No blanket recovery: DISPATCHED entries may be running in other processes. Only the
   * expired-lease rule takes claims back (PgWorkSource, every heartbeat). Nothing is handed
   * back to queue in memory: the pump claims what is PENDING.
   */
  override async recover(bootId: string, _maxAttempts: MaxAttempts): Promise<RecoveredMessages> {
    const started = performance.now();
    await this.writer.flush();
    const pending = (await this.pool.query<{ n: number }>(COUNT_SQL, ['journal:PENDING'])).rows[0]!.n;
    const report: RecoveryReport = {
      bootId,
      at: this.now(),
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      pending,
      redelivered: 0,
      failedMaxAttempts: 0,
    };
    this.lastRecovery = report;
    return { messages: [], report };
  }

  /**
   * Per recipient, across every process: PENDING and DISPATCHED entries (from the partial
   * indexes), and the thread of its latest claimed delivery.
   */
  async agentLoad(): Promise<Map<string, AgentLoad>> {
    await this.writer.flush();
    const rows = (
      await this.pool.query<{ recipient: string; queued: number; in_flight: number; current_thread: string | null }>(
        `SELECT recipient, COUNT(*) FILTER (WHERE state = 'PENDING') AS queued, COUNT(*) FILTER (WHERE state = 'DISPATCHED') AS in_flight,
           (array_agg(thread_id ORDER BY dispatched_at DESC, seq DESC) FILTER (WHERE state = 'DISPATCHED'))[1] AS current_thread
         FROM journal WHERE state IN ('PENDING', 'DISPATCHED') GROUP BY recipient`,
      )
    ).rows;
    return new Map(rows.map((r) => [r.recipient, { queued: r.queued, inFlight: r.in_flight, currentThread: r.current_thread }]));
  }

  /** Claims work for `workerId` (see claim-function.ts), with the claimed threads' records. */
  async claim(workerId: string, listeners: readonly string[], max: number, limits: ClaimLimits): Promise<Array<Omit<ClaimedWork, 'claimedAt'>> & { capped: boolean }> {
    // No free slot: what a freed one could take is unknown.
    if (max <= 0 || listeners.length === 0) return Object.assign([], { capped: max <= 0 });
    // One statement, its own transaction, on any pooled connection (the pool drops one that
    // broke): the function takes the claim lock, since the organism-wide limits count
    // DISPATCHED rows, and holds it only while the server runs it (see claim-function.ts).
    const call = claimCall({
      workerId,
      listeners,
      max,
      global: limits.global,
      perAgent: limits.perAgent,
      running: limits.running ?? null,
      now: this.now(),
      slot: `${this.counts.slot}/claim`,
    });
    let docs: ClaimDocument[];
    try {
      docs = (await this.rawPool.query<{ claim: ClaimDocument }>(call)).rows.map((r) => r.claim);
    } catch (err) {
      throw pgRuntimeError(this.where, err);
    }
    const last = docs.pop() as ClaimRooms;
    const claimed = (docs as ClaimedRow[]).map((r) => ({ message: messageOf(r.row), thread: r.thread ? recordOf(r.thread) : null }));
    return Object.assign(claimed, { capped: cappedBy(claimed, last) });
  }

  /**
   * Journals injected messages PENDING unless the organism-wide queue (PENDING entries, from
   * the kept count, plus what this transaction already made PENDING) holds `maxQueue` or more:
   * then nothing is written and false is returned (limits.max_queue, as in embedded mode).
   *
   * The count is read without a lock: locking its row before the thread rows an inject updates
   * would invert the order every other transaction takes them in (thread rows, then the counts
   * at commit) and deadlock. So two processes admitting at the same instant may each take the
   * last slot: the queue may pass max_queue by what other processes commit meanwhile, never
   * by more within one process (its writes commit one transaction after another).
   */
  pendingWithin(messages: readonly Message[], maxQueue: number): Promise<boolean> {
    return this.injects.submit({ messages, maxQueue });
  }

  override pending(messages: readonly Message[]): Promise<void> {
    return this.injects.submit({ messages, maxQueue: Infinity }).then(() => undefined);
  }

  /** A lot of pendingWithin calls: admitted in order while the queue has room, journaled together. */
  private async admitInjects(tx: Tx, list: ReadonlyArray<{ messages: readonly Message[]; maxQueue: number }>): Promise<boolean[]> {
    if (this.roomWithCommit(tx, list)) {
      await this.journalInjects(
        tx,
        list.flatMap((i) => i.messages),
      );
      return list.map(() => true);
    }
    const row = (await tx.query<{ n: number }>({ name: 'queue-depth', text: COUNT_SQL, values: ['journal:PENDING'] })).rows[0]!;
    let queued = row.n + this.counts.pendingDelta;
    const admitted = list.map((i) => {
      if (queued >= i.maxQueue) return false;
      queued += i.messages.filter((m) => m.to !== EXTERNAL_SENDER).length;
      return true;
    });
    await this.journalInjects(
      tx,
      list.filter((_, k) => admitted[k]).flatMap((i) => i.messages),
    );
    return admitted;
  }

  /**
   * Admits a lot of injects whole without reading the queue's depth first: the check goes with
   * the COMMIT (QUEUE_ROOM_SQL), one round trip less. Every inject of the lot is admitted if the
   * depth is below the least of its max_queue less what the transaction made PENDING before it;
   * should it not be, the check raises, the transaction rolls back and the writer runs the lot
   * again, the depth read first (a lot is tried whole once). With no limit (`pending`), no check.
   * False: nothing was queued.
   */
  private roomWithCommit(tx: Tx, list: ReadonlyArray<{ messages: readonly Message[]; maxQueue: number }>): boolean {
    if (list.some((i) => this.triedWhole.has(i))) return false;
    let before = this.counts.pendingDelta;
    let below = Number.POSITIVE_INFINITY;
    for (const i of list) {
      below = Math.min(below, i.maxQueue - before);
      before += i.messages.filter((m) => m.to !== EXTERNAL_SENDER).length;
    }
    if (below !== Number.POSITIVE_INFINITY && !tx.atCommit({ name: 'queue-room', text: QUEUE_ROOM_SQL, values: [below] })) return false;
    for (const i of list) this.triedWhole.add(i);
    return true;
  }

  /**
   * A lot of injects journaled PENDING: their threads counted (or created) and the messages
   * inserted with the COMMIT (countInjectsAtCommit), nothing of the lot read back before it.
   * Other lots (replies, external recipients, values that cannot be written in) as insertAll.
   */
  private async journalInjects(tx: Tx, messages: readonly Message[]): Promise<void> {
    if (messages.length === 0) return;
    const recipients = messages.map((m) => m.to);
    if (recipients.includes(EXTERNAL_SENDER) || !countInjectsAtCommit(tx, messages, this.counts.slot)) return this.insertAll(tx, messages);
    if (!this.insertAllAtCommit(tx, messages)) await super.insertAll(tx, messages);
    notifyAtCommit(tx, this.channels.work, workPayload(this.workerId, recipients));
  }

  /** Whether the claim of `message` is still `workerId`'s, at this attempt (not taken back since). */
  async holdsClaim(workerId: string, message: Message): Promise<boolean> {
    const r = await this.pool.query(`SELECT 1 FROM journal WHERE id = $1 AND state = 'DISPATCHED' AND claimed_by = $2 AND attempt = $3`, [message.id, workerId, message.attempt]);
    return r.rows.length > 0;
  }

  /** The ack of a claimed delivery, fenced: written only while the claim is `workerId`'s, at this attempt. */
  ackClaimed(workerId: string, message: Message, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    return this.settled(message, this.outcomes.submit({ workerId, message, to: 'ACKED', reason: null, error: null, outcome }));
  }

  failClaimed(workerId: string, message: Message, reason: FailureReason, error: string, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    const threadError = reason === 'killed' ? outcome.threadError : (outcome.threadError ?? error);
    return this.settled(message, this.outcomes.submit({ workerId, message, to: 'FAILED', reason, error, outcome: { ...outcome, threadError } }));
  }

  /**
   * A failed try of a claimed delivery back to PENDING for a retry, fenced like an outcome:
   * only while the claim is `workerId`'s at this attempt. Claimers pass the entry over until
   * its next_attempt_at (see claim-sql.ts); it blocks its thread's later messages to the same
   * listener meanwhile, as any oldest PENDING entry of the pair does. Null: not ours any more.
   */
  retryClaimed(workerId: string, message: Message, reason: FailureReason, error: string, notBefore: number, outcome: DeliveryOutcomeWrite): Promise<Message | null> {
    const now = this.now();
    return this.writer.transaction(async (tx) => {
      const r = await tx.query(
        `UPDATE journal SET state = 'PENDING', ${pgRetrySet('$4', '$5', '$6', '$7', '$8')}
         WHERE id = $1 AND state = 'DISPATCHED' AND claimed_by = $2 AND attempt = $3`,
        [message.id, workerId, message.attempt, message.attempt, now, reason, error, notBefore],
      );
      if ((r.rowCount ?? 0) === 0) return null;
      this.counts.moved('DISPATCHED', 'PENDING');
      await insertUsage(tx, outcome.usage);
      return { ...message, attempt: message.attempt + 1, notBefore };
    });
  }

  /** An outcome that finished its thread finished its budget in the same commit (see settleThreads): the ledger is told. */
  private async settled(message: Message, result: Promise<FencedResult>): Promise<FencedResult> {
    const r = await result;
    if (r.threadFinished) this.finishedBudgets.add(message.threadId);
    return r;
  }

  /**
   * An ask's claimed delivery stops to wait for a person, fenced like an outcome: DISPATCHED to
   * `workerId` at its attempt -> AWAITING, the claim released (no lease holds it: a lease taken
   * back never touches it), and its thread settled (`waiting` while nothing else of it is open).
   */
  parkClaimed(workerId: string, message: Message, expiresAt: number | null, approval?: ApprovalParking): Promise<FencedResult> {
    return this.writer.transaction(async (tx) => {
      const now = this.now();
      const r = await tx.query(
        `UPDATE journal SET state = 'AWAITING', claimed_by = NULL, expires_at = $4, approval = COALESCE($5, approval) WHERE id = $1 AND state = 'DISPATCHED' AND claimed_by = $2 AND attempt = $3`,
        [message.id, workerId, message.attempt, expiresAt, approval ? JSON.stringify(approval.state) : null],
      );
      if ((r.rowCount ?? 0) === 0) return { ...NOT_OURS };
      if (approval) await insertUsage(tx, approval.usage);
      this.counts.moved('DISPATCHED', 'AWAITING');
      const finished = await settleThreads(tx, new Map([[message.threadId, null]]), now, false);
      return { committed: true, threadFinished: finished.get(message.threadId) ?? null };
    });
  }

  /** The thread of a decided approval is active again while its continuation runs (any worker claims it). */
  protected override async approvalDecided(tx: Tx, threadId: string): Promise<void> {
    await tx.query(`UPDATE threads SET status = 'active' WHERE id = $1 AND status = 'waiting'`, [threadId]);
  }

  /** The thread of a closed ask is active again while what the close sent runs; settled as any outcome's. */
  protected override async askClosed(tx: Tx, threadId: string, closing: AskClosing): Promise<void> {
    await tx.query(`UPDATE threads SET status = 'active' WHERE id = $1 AND status = 'waiting'`, [threadId]);
    const error = closing.state === 'FAILED' && closing.reason !== 'killed' ? closing.error : null;
    await settleThreads(tx, new Map([[threadId, error]]), this.now(), false);
  }

  /**
   * Takes back the claims of workers whose heartbeat is older than their lease or that stopped
   * (and DISPATCHED entries nobody holds): PENDING again with attempt + 1, or FAILED
   * max_attempts once past `maxAttempts`. Returns how many went back to PENDING and FAILED, in
   * all and per process that held them.
   */
  reclaimExpired(maxAttempts: MaxAttempts, onlyWorker?: string, orphans?: OrphanedClaims): Promise<Reclaimed> {
    const now = this.now();
    return this.writer.transaction(async (tx) => {
      const holders = orphans
        ? `j.claimed_by = $1 AND j.dispatched_at < $2::bigint AND NOT (j.id = ANY($3::text[]))`
        : onlyWorker
          ? `j.claimed_by = $1`
          : `(j.claimed_by IS NULL OR j.claimed_by NOT IN (SELECT id FROM workers WHERE stopped_at IS NULL AND heartbeat_at >= $1::bigint - lease_ms))`;
      const params = orphans ? [orphans.worker, orphans.claimedBefore, [...orphans.held]] : [onlyWorker ?? now];
      const taken = (
        await tx.query<{ seq: number; thread_id: string; recipient: string; attempt: number; claimed_by: string | null }>(
          `SELECT j.seq, j.thread_id, j.recipient, j.attempt, j.claimed_by FROM journal j WHERE j.state = 'DISPATCHED' AND ${holders} FOR UPDATE SKIP LOCKED`,
          params,
        )
      ).rows;
      if (taken.length === 0) return { retried: 0, failed: 0, from: [] };
      const outOfAttempts = (r: { recipient: string; attempt: number }) => r.attempt + 1 > attemptLimitOf(maxAttempts, r.recipient).max;
      const give = taken.filter(outOfAttempts);
      const retry = taken.filter((r) => !outOfAttempts(r));
      if (retry.length > 0) {
        await tx.query(`UPDATE journal SET state = 'PENDING', attempt = attempt + 1, claimed_by = NULL, ${pgKeepAttemptSql('interrupted', '$2')} WHERE seq = ANY($1::bigint[])`, [
          retry.map((r) => r.seq),
          now,
        ]);
        for (let i = 0; i < retry.length; i++) this.counts.moved('DISPATCHED', 'PENDING');
        notifyAtCommit(tx, this.channels.work, workPayload(this.workerId, []));
      }
      if (give.length > 0) {
        // One error per limit (journal.max_attempts, or a listener's retry.max_attempts).
        const errors = new Map<string, typeof give>();
        for (const r of give) {
          const limit = attemptLimitOf(maxAttempts, r.recipient);
          const error = `Gave up after the worker holding it stopped or lost its lease ${limit.max} time(s) (${limit.key} = ${limit.max})`;
          errors.set(error, [...(errors.get(error) ?? []), r]);
        }
        const threadErrors = new Map<string, string>();
        for (const [error, rows] of errors) {
          await tx.query(`UPDATE journal SET state = 'FAILED', failed_at = $2, failure_reason = 'max_attempts', error = $3 WHERE seq = ANY($1::bigint[])`, [
            rows.map((r) => r.seq),
            now,
            error,
          ]);
          for (const r of rows) if (!threadErrors.has(r.thread_id)) threadErrors.set(r.thread_id, error);
        }
        for (let i = 0; i < give.length; i++) this.counts.moved('DISPATCHED', 'FAILED');
        await settleThreads(tx, threadErrors, now, false);
      }
      const holderIds = [...new Set(taken.map((r) => r.claimed_by).filter((id): id is string => id !== null))];
      const names = new Map(
        holderIds.length === 0 ? [] : (await tx.query<{ id: string; name: string }>('SELECT id, name FROM workers WHERE id = ANY($1::text[])', [holderIds])).rows.map((r) => [r.id, r.name]),
      );
      const from = new Map<string | null, { worker: string | null; name: string | null; retried: number; failed: number }>();
      for (const r of taken) {
        let one = from.get(r.claimed_by);
        if (!one) from.set(r.claimed_by, (one = { worker: r.claimed_by, name: r.claimed_by === null ? null : (names.get(r.claimed_by) ?? null), retried: 0, failed: 0 }));
        if (outOfAttempts(r)) one.failed++;
        else one.retried++;
      }
      return { retried: retry.length, failed: give.length, from: [...from.values()] };
    });
  }

  /**
   * Journals messages PENDING (an external recipient's at once ACKED), counts them in their
   * threads, and wakes claimers. `lockedThreads`: threads this transaction holds locked (they
   * exist); when every message's thread is one of them, their count goes with the COMMIT.
   */
  protected override async insertAll(tx: Tx, messages: readonly Message[], lockedThreads: ReadonlySet<string> | null = null, countThreads = true): Promise<void> {
    if (messages.length === 0) return;
    // Nobody claims what is addressed to the outside world: it ends here, recorded and acknowledged.
    const external = messages.filter((m) => m.to === EXTERNAL_SENDER).map((m) => m.id);
    const allLocked = lockedThreads !== null && messages.every((m) => lockedThreads.has(m.threadId));
    // Into stored threads this transaction holds, nothing to ack at once: journaled with the COMMIT.
    if (!(allLocked && external.length === 0 && this.insertAllAtCommit(tx, messages))) await super.insertAll(tx, messages);
    if (external.length > 0) {
      const r = await tx.query(`UPDATE journal SET state = 'ACKED', acked_at = $2 WHERE id = ANY($1::text[]) AND state = 'PENDING'`, [external, this.now()]);
      for (let i = 0; i < (r.rowCount ?? 0); i++) this.counts.moved('PENDING', 'ACKED');
    }
    if (countThreads) await countInThreads(tx, messages, { locked: lockedThreads !== null, slot: this.counts.slot, atCommit: allLocked });
    const claimable = messages.filter((m) => m.to !== EXTERNAL_SENDER).map((m) => m.to);
    if (claimable.length > 0) notifyAtCommit(tx, this.channels.work, workPayload(this.workerId, claimable));
  }

  /** A redelivered entry is claimable: wake the claimers now, not at their next poll. */
  protected override async requeued(tx: Tx, recipients: readonly string[]): Promise<void> {
    notifyAtCommit(tx, this.channels.work, workPayload(this.workerId, recipients));
  }

  /**
   * Commits a lot of fenced outcomes (see PgLots) set-based: the entries still DISPATCHED to
   * their worker at their attempt move to ACKED or FAILED in one statement; the others' outcomes
   * are dropped whole. Then, for the committed ones, their outgoing messages and usage, and
   * their threads settled; every thread touched is locked first, in id order, as every
   * transaction here takes them. A thread finished by the lot is reported on its last outcome.
   * A lot whose messages stay in its threads sends that statement with the COMMIT instead of on
   * a round trip of its own (fenceWithCommit).
   */
  private async commitOutcomes(tx: Tx, list: readonly FencedOutcome[]): Promise<FencedResult[]> {
    const now = this.now();
    const touched = list.flatMap((o) => [o.message.threadId, ...o.outcome.outgoing.map((m) => m.threadId)].map((thread) => [o.message.id, thread] as const));
    const values = [
      list.map((o) => o.message.id),
      list.map((o) => o.workerId),
      list.map((o) => o.message.attempt),
      list.map((o) => o.to),
      list.map((o) => o.reason),
      list.map((o) => o.error),
      now,
      touched.map(([outcome]) => outcome),
      touched.map(([, thread]) => thread),
    ];
    const threads = new Set(touched.map(([, thread]) => thread));
    if (this.fenceWithCommit(tx, list, values, threads)) {
      for (const o of list) this.counts.moved('DISPATCHED', o.to);
      return this.writeCommitted(tx, list, list, threads, now);
    }
    const moved = (await tx.query<{ id: string; state: 'ACKED' | 'FAILED'; locked: string[] | null }>({ name: 'journal-fenced', text: FENCED_SQL, values })).rows;
    const committed = new Set<string>();
    for (const r of moved) {
      committed.add(r.id);
      this.counts.moved('DISPATCHED', r.state);
    }
    // Their threads were locked by the fenced statement.
    const locked = new Set(moved.find((r) => r.locked !== null)?.locked ?? []);
    return this.writeCommitted(
      tx,
      list,
      list.filter((o) => committed.has(o.message.id)),
      locked,
      now,
    );
  }

  /**
   * Sends the lot's fence with the COMMIT, the lot written as if it commits whole (one round trip
   * for the outcomes, where the fence alone took one): when every message it sends stays in the
   * threads of its outcomes (stored, and locked by the fence) and none goes to the outside world.
   * Should an outcome have lost its claim, or a thread be gone, the check raises, the transaction
   * rolls back and the writer runs the lot again: that time the fence goes first (a lot is tried
   * whole once). False: nothing was queued.
   */
  private fenceWithCommit(tx: Tx, list: readonly FencedOutcome[], values: readonly unknown[], threads: ReadonlySet<string>): boolean {
    if (list.some((o) => this.triedWhole.has(o))) return false;
    const own = new Set(list.map((o) => o.message.threadId));
    if (threads.size !== own.size || list.some((o) => o.outcome.outgoing.some((m) => m.to === EXTERNAL_SENDER))) return false;
    // On its generic plan (planned once per connection, not at every lot). Planned on an empty
    // journal it reads the DISPATCHED entries' partial index (no more rows than handlers run
    // organism-wide); an ANALYZE of the table makes the server plan it again.
    if (!tx.atCommit({ name: 'journal-fenced-whole', text: FENCED_WHOLE_SQL, values: [...values, list.length, threads.size], generic: true })) return false;
    for (const o of list) this.triedWhole.add(o);
    return true;
  }

  /**
   * The rest of a lot of outcomes, for those whose fence held (`done`): their outgoing messages
   * and usage, and their threads settled, all with the COMMIT where their values allow.
   * `locked`: the threads the fence locked.
   */
  private async writeCommitted(tx: Tx, list: readonly FencedOutcome[], done: readonly FencedOutcome[], locked: ReadonlySet<string>, now: number): Promise<FencedResult[]> {
    const committed = new Set(done.map((o) => o.message.id));
    const last = new Map(done.map((o) => [o.message.threadId, o]));
    // Filled in place once the lot committed (a caller may hold a result already: PgLots.alone).
    const results = list.map((o): { committed: boolean; threadFinished: FencedResult['threadFinished'] } =>
      committed.has(o.message.id) ? { committed: true, threadFinished: null } : { ...NOT_OURS },
    );
    if (done.length === 0) return results;
    // Per thread, the first error of the lot (COALESCE keeps one recorded before it).
    const errors = new Map<string, string | null>();
    for (const o of done) errors.set(o.message.threadId, errors.get(o.message.threadId) ?? o.outcome.threadError);
    const outgoing = done.flatMap((o) => o.outcome.outgoing);
    // Replies within the lot's own threads are counted into them by the statement that settles
    // them (one row version per thread, not two); anything else is counted as it is journaled.
    const countedBySettle = outgoing.every((m) => m.to !== EXTERNAL_SENDER && !isInject(m) && errors.has(m.threadId) && locked.has(m.threadId));
    await this.insertAll(tx, outgoing, locked, !countedBySettle);
    await insertUsage(
      tx,
      done.flatMap((o) => o.outcome.usage),
      { atCommit: true },
    );
    // Settled with the COMMIT; the results say which threads finished once it committed.
    const finished = (threads: ReadonlyMap<string, FinishedStatus>) =>
      list.forEach((o, i) => {
        const status = last.get(o.message.threadId) === o ? threads.get(o.message.threadId) : undefined;
        if (status) results[i]!.threadFinished = status;
      });
    await settleThreadsAtCommit(tx, errors, now, finished, countedBySettle ? { messages: outgoing, slot: this.counts.slot } : undefined);
    return results;
  }
}

/**
 * A work notification's payload: the process that committed the work (its worker id), then its
 * recipients. The sender skips its own (see PgWorkSource.start): each of its commits that makes
 * work claimable is followed by a claim round of its own anyway.
 */
export function workPayload(workerId: string, recipients: readonly string[]): string {
  return `${workerId}|${[...new Set(recipients)].join(',')}`;
}

/** Wakes the claimers (NOTIFY, delivered at commit anyway): sent with the transaction's COMMIT. */
function notifyAtCommit(tx: Tx, channel: string, payload = ''): void {
  tx.atCommit(`SELECT pg_notify(${sqlLiteral(channel)}, ${sqlLiteral(payload)})`);
}

/** What reclaimExpired took back: in all, and per process that held it. */
export interface Reclaimed {
  readonly retried: number;
  readonly failed: number;
  readonly from: readonly TakenBack[];
}

/**
 * Claims a live process holds in the database but not in memory: a claim whose COMMIT
 * reached the server while the connection broke (the process saw an error and never
 * delivered it). Older than a lease and not among the deliveries it runs, they go back.
 */
export interface OrphanedClaims {
  readonly worker: string;
  readonly held: Iterable<string>;
  readonly claimedBefore: number;
}
