import { recordOf, type ThreadRow } from './threads.js';
import type pg from 'pg';
import type { FailureReason } from '../../pump/hooks.js';
import { EXTERNAL_SENDER, type Message } from '../../pump/message.js';
import { isSystemName } from '../../pump/system-messages.js';
import type { ClaimedWork, ClaimLimits, DeliveryOutcomeWrite, FencedResult } from '../../pump/work-source.js';
import { messageOf, type JournalRow } from '../rows.js';
import type { RecoveredMessages, RecoveryReport, ThreadRecord, ThreadStatus } from '../types.js';
import { notify, type Channels } from './channels.js';
import { PgLots } from './lots.js';
import { COUNT_SQL, FOLD_SLOTS_SQL } from './journal-counts.js';
import { PgJournal } from './journal.js';
import { pgStorageError, type Reader } from './pool.js';
import { insertUsage } from './usage-writes.js';
import type { PgWriter, Tx } from './writer.js';

/** The claims of one schema take turns on this lock (see `claim`). */
const CLAIM_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtext('organism:claim:' || current_schema()))`;

/** A limit as an SQL integer literal (an unbounded one as the largest int). */
const intLiteral = (n: number) => String(Number.isFinite(n) ? Math.max(0, Math.min(Math.trunc(n), 2 ** 31 - 1)) : 2 ** 31 - 1);

/**
 * The claim (one statement, after the claim lock): per listener of this process that is not
 * paused (organism-wide, in paused_agents), its oldest PENDING entries that are the oldest open
 * entry of their (thread, recipient) with none of that pair DISPATCHED, no more than the
 * listener's room under the per-agent limit; then the oldest of those, no more than this
 * process's free slots and the room under the global limit. The rows are locked SKIP LOCKED
 * (a row being failed by a kill is passed over, not waited for) and become DISPATCHED, held
 * by this worker, attempts = attempt. Returned with their threads' rows, in seq order; the
 * kept counts move in the same statement.
 */
const CLAIM_SQL = `
  WITH busy AS (SELECT recipient, COUNT(*)::int AS n FROM journal WHERE state = 'DISPATCHED' GROUP BY recipient),
  room AS (SELECT GREATEST(0, LEAST($3::int, $4::int - COALESCE((SELECT SUM(n) FROM busy), 0)))::int AS n),
  agents AS (
    SELECT a.name, GREATEST(0, LEAST($5::int - COALESCE(b.n, 0), (SELECT n FROM room)))::int AS room
    FROM unnest($2::text[]) AS a(name) LEFT JOIN busy b ON b.recipient = a.name
    WHERE a.name NOT IN (SELECT agent FROM paused_agents)
  ),
  candidates AS (
    SELECT c.seq FROM agents a CROSS JOIN LATERAL (
      SELECT j.seq FROM journal j
      WHERE j.state = 'PENDING' AND j.recipient = a.name
        -- The pair's DISPATCHED entry if any, else its oldest PENDING one, must be this one. A
        -- scalar subquery: run per candidate on journal_open by (thread, recipient), whatever the
        -- planner's estimates (as an anti join on a freshly filled table it scanned the recipient).
        AND j.seq = (
          SELECT o.seq FROM journal o
          WHERE o.thread_id = j.thread_id AND o.recipient = j.recipient AND o.state IN ('PENDING', 'DISPATCHED')
          ORDER BY (o.state = 'DISPATCHED') DESC, o.seq LIMIT 1)
      ORDER BY j.seq LIMIT a.room
    ) c WHERE a.room > 0
  ),
  chosen AS (SELECT seq FROM candidates ORDER BY seq LIMIT (SELECT n FROM room)),
  locked AS (SELECT j.seq FROM journal j WHERE j.seq IN (SELECT seq FROM chosen) AND j.state = 'PENDING' FOR UPDATE SKIP LOCKED),
  claimed AS (
    UPDATE journal j SET state = 'DISPATCHED', claimed_by = $1, attempts = j.attempt, dispatched_at = $6
    FROM locked WHERE j.seq = locked.seq
    RETURNING j.*),
  -- The kept counts, in this claimer's slot: PENDING -n, DISPATCHED +n.
  counted AS (
    INSERT INTO row_counts (name, slot, n)
    SELECT v.name, $7, v.sign * c.n FROM (SELECT COUNT(*) AS n FROM claimed) c CROSS JOIN (VALUES ('journal:DISPATCHED', 1), ('journal:PENDING', -1)) AS v(name, sign)
    WHERE c.n > 0
    ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n + excluded.n)
  SELECT c.*, row_to_json(t) AS thread_row FROM claimed c LEFT JOIN threads t ON t.id = c.thread_id ORDER BY c.seq`;

/** Open entries of thread t: while one is left, the thread is not finished. */
const OPEN_ENTRY = `SELECT 1 FROM journal o WHERE o.thread_id = t.id AND o.state IN ('PENDING', 'DISPATCHED')`;

/**
 * Fenced outcomes, set-based: each entry moves to its state ($4) only while DISPATCHED to its
 * worker ($2) at its attempt ($3); returns those that moved.
 */
const FENCED_SQL = `
  UPDATE journal j SET state = o.state,
    acked_at = CASE WHEN o.state = 'ACKED' THEN $7::bigint ELSE j.acked_at END,
    failed_at = CASE WHEN o.state = 'FAILED' THEN $7::bigint ELSE j.failed_at END,
    failure_reason = CASE WHEN o.state = 'FAILED' THEN o.reason ELSE j.failure_reason END,
    error = CASE WHEN o.state = 'FAILED' THEN o.error ELSE j.error END
  FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::text[], $6::text[]) AS o(id, worker, attempt, state, reason, error)
  WHERE j.id = o.id AND j.state = 'DISPATCHED' AND j.claimed_by = o.worker AND j.attempt = o.attempt
  RETURNING j.id, j.state`;

/** Settles threads ($1, with the error each outcome leaves, $2) at $3 (see settleThreads). */
const SETTLE_SQL = `
  UPDATE threads t SET error = COALESCE(t.error, s.error), last_activity = GREATEST(t.last_activity, $3::bigint),
    status = CASE WHEN t.status = 'killed' OR EXISTS (${OPEN_ENTRY}) THEN t.status
                  WHEN COALESCE(t.error, s.error) IS NOT NULL THEN 'error' ELSE 'completed' END
  FROM unnest($1::text[], $2::text[]) AS s(id, error)
  WHERE t.id = s.id
  RETURNING t.id, t.status, NOT EXISTS (${OPEN_ENTRY}) AS finished`;

/**
 * Counts messages into stored threads, one row per thread ($1, participants as JSON arrays
 * $2, counts $3, last activity $4, metadata $5, whether an inject is among them $6); returns
 * the threads it found (see countInThreads).
 */
const COUNT_IN_THREADS_SQL = `
  UPDATE threads t SET
    participants = t.participants || ARRAY(SELECT p FROM json_array_elements_text(i.participants::json) WITH ORDINALITY AS u(p, o) WHERE NOT p = ANY(t.participants) ORDER BY o),
    message_count = t.message_count + i.n,
    last_activity = GREATEST(t.last_activity, i.last),
    status = CASE WHEN i.inject AND t.status <> 'killed' THEN 'active' ELSE t.status END,
    error = CASE WHEN i.inject AND t.status <> 'killed' THEN NULL ELSE t.error END,
    metadata = CASE WHEN i.inject THEN i.metadata ELSE t.metadata END
  FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[], $6::bool[]) AS i(id, participants, n, last, metadata, inject)
  WHERE t.id = i.id
  RETURNING t.id`;

/**
 * Creates threads ($1; participants as JSON arrays $2, counts $3, last activity $4, metadata
 * $5): see countInThreads. Those another transaction created first are left out (not
 * returned); the kept thread count goes up by those created, in slot $6.
 */
const CREATE_THREADS_SQL = `
  WITH created AS (
    INSERT INTO threads (id, status, participants, message_count, created_at, last_activity, error, metadata)
    SELECT i.id, 'active', ARRAY(SELECT json_array_elements_text(i.participants::json)), i.n, i.last, i.last, NULL, i.metadata
    FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[]) AS i(id, participants, n, last, metadata)
    ON CONFLICT (id) DO NOTHING
    RETURNING id),
  counted AS (
    INSERT INTO row_counts (name, slot, n) SELECT 'threads', $6, COUNT(*) FROM created HAVING COUNT(*) > 0
    ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n + excluded.n)
  SELECT id FROM created`;

const NOT_OURS: FencedResult = { committed: false, threadFinished: null };

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

type FinishedStatus = Extract<ThreadStatus, 'completed' | 'error'>;

/** Locks thread rows in id order (the order every transaction here takes them in). */
async function lockThreads(tx: Tx, ids: readonly string[]): Promise<void> {
  const unique = [...new Set(ids)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (unique.length === 0) return;
  await tx.query({ name: 'threads-lock', text: 'SELECT 1 FROM threads WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', values: [unique] });
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
export class PgSharedJournal extends PgJournal {
  /** Acks and failures of claimed deliveries, committed in lots (see commitOutcomes). */
  private readonly outcomes: PgLots<FencedOutcome, FencedResult>;
  /** Injects under limits.max_queue, admitted in lots (see admitInjects). */
  private readonly injects: PgLots<{ messages: readonly Message[]; maxQueue: number }, boolean>;

  constructor(
    pool: Reader,
    writer: PgWriter,
    retention: { retainDays: number; failedRetainDays: number },
    private readonly rawPool: pg.Pool,
    private readonly channels: Channels,
    private readonly where: string,
    /** This process's worker id: its slot of the kept counts. */
    workerId: string,
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
  override async recover(bootId: string, _maxAttempts: number): Promise<RecoveredMessages> {
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

  /** Per recipient, across every process: PENDING and DISPATCHED entries (from the partial indexes). */
  async agentLoad(): Promise<Map<string, { queued: number; inFlight: number }>> {
    await this.writer.flush();
    const rows = (
      await this.pool.query<{ recipient: string; queued: number; in_flight: number }>(
        `SELECT recipient, COUNT(*) FILTER (WHERE state = 'PENDING') AS queued, COUNT(*) FILTER (WHERE state = 'DISPATCHED') AS in_flight
         FROM journal WHERE state IN ('PENDING', 'DISPATCHED') GROUP BY recipient`,
      )
    ).rows;
    return new Map(rows.map((r) => [r.recipient, { queued: r.queued, inFlight: r.in_flight }]));
  }

  /** Claims work for `workerId` (see CLAIM_SQL), with the claimed threads' records. */
  async claim(workerId: string, listeners: readonly string[], max: number, limits: ClaimLimits): Promise<ClaimedWork[]> {
    if (max <= 0 || listeners.length === 0) return [];
    let client: pg.PoolClient;
    try {
      client = await this.rawPool.connect();
    } catch (err) {
      throw pgStorageError(this.where, err);
    }
    let broken = false;
    // A connection cut while checked out emits 'error' on the client: unheard, it ends the process.
    const lost = () => {
      broken = true;
    };
    client.on('error', lost);
    try {
      // The organism-wide limits count DISPATCHED rows: two claims counting at once would both
      // see room for the last slot, so the claims of one schema take turns on a lock (FIFO
      // alone would not need it: see CLAIM_SQL's pair check). The whole transaction goes as one
      // query string, its values written in as literals: the lock is held only while the
      // server runs it, never across a round trip to a process that a busy machine may not
      // schedule at once (claims queued behind such a holder was what limited four workers).
      const literal = (v: string) => client.escapeLiteral(v);
      const values = [
        literal(workerId),
        `ARRAY[${listeners.map(literal).join(', ')}]::text[]`,
        intLiteral(max),
        intLiteral(limits.global),
        intLiteral(limits.perAgent),
        `${Math.trunc(this.now())}::bigint`,
        literal(`${this.counts.slot}/claim`),
      ];
      const claimSql = CLAIM_SQL.replace(/\$(\d)/g, (_, i: string) => values[Number(i) - 1]!);
      const results = (await client.query(`BEGIN; ${CLAIM_LOCK_SQL}; ${claimSql}; COMMIT`)) as unknown as Array<pg.QueryResult<JournalRow & { thread_row: ThreadRow | null }>>;
      const rows = results[2]!.rows;
      return rows.map((r) => ({ message: messageOf(r), thread: r.thread_row ? recordOf(r.thread_row) : null }));
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {
        broken = true;
      });
      throw pgStorageError(this.where, err);
    } finally {
      client.off('error', lost);
      client.release(broken);
    }
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
    const row = (await tx.query<{ n: number }>({ name: 'queue-depth', text: COUNT_SQL, values: ['journal:PENDING'] })).rows[0]!;
    let queued = row.n + this.counts.pendingDelta;
    const admitted = list.map((i) => {
      if (queued >= i.maxQueue) return false;
      queued += i.messages.filter((m) => m.to !== EXTERNAL_SENDER).length;
      return true;
    });
    await this.insertAll(tx, list.filter((_, k) => admitted[k]).flatMap((i) => i.messages));
    return admitted;
  }

  /** The ack of a claimed delivery, fenced: written only while the claim is `workerId`'s, at this attempt. */
  ackClaimed(workerId: string, message: Message, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    return this.outcomes.submit({ workerId, message, to: 'ACKED', reason: null, error: null, outcome });
  }

  failClaimed(workerId: string, message: Message, reason: FailureReason, error: string, outcome: DeliveryOutcomeWrite): Promise<FencedResult> {
    const threadError = reason === 'killed' ? outcome.threadError : (outcome.threadError ?? error);
    return this.outcomes.submit({ workerId, message, to: 'FAILED', reason, error, outcome: { ...outcome, threadError } });
  }

  /**
   * Takes back the claims of workers whose heartbeat is older than their lease or that stopped
   * (and DISPATCHED entries nobody holds): PENDING again with attempt + 1, or FAILED
   * max_attempts once past `maxAttempts`. Returns how many went back to PENDING and FAILED.
   */
  reclaimExpired(maxAttempts: number, onlyWorker?: string, orphans?: OrphanedClaims): Promise<{ retried: number; failed: number }> {
    const now = this.now();
    return this.writer.transaction(async (tx) => {
      const holders = orphans
        ? `j.claimed_by = $1 AND j.dispatched_at < $2::bigint AND NOT (j.id = ANY($3::text[]))`
        : onlyWorker
          ? `j.claimed_by = $1`
          : `(j.claimed_by IS NULL OR j.claimed_by NOT IN (SELECT id FROM workers WHERE stopped_at IS NULL AND heartbeat_at >= $1::bigint - lease_ms))`;
      const params = orphans ? [orphans.worker, orphans.claimedBefore, [...orphans.held]] : [onlyWorker ?? now];
      const taken = (
        await tx.query<{ seq: number; thread_id: string; attempt: number }>(
          `SELECT j.seq, j.thread_id, j.attempt FROM journal j WHERE j.state = 'DISPATCHED' AND ${holders} FOR UPDATE SKIP LOCKED`,
          params,
        )
      ).rows;
      if (taken.length === 0) return { retried: 0, failed: 0 };
      const give = taken.filter((r) => r.attempt + 1 > maxAttempts);
      const retry = taken.filter((r) => r.attempt + 1 <= maxAttempts);
      if (retry.length > 0) {
        await tx.query(`UPDATE journal SET state = 'PENDING', attempt = attempt + 1, claimed_by = NULL WHERE seq = ANY($1::bigint[])`, [retry.map((r) => r.seq)]);
        for (let i = 0; i < retry.length; i++) this.counts.moved('DISPATCHED', 'PENDING');
        await notify(tx, this.channels.work);
      }
      if (give.length > 0) {
        const error = `Gave up after the worker holding it stopped or lost its lease ${maxAttempts} time(s) (journal.max_attempts = ${maxAttempts})`;
        await tx.query(`UPDATE journal SET state = 'FAILED', failed_at = $2, failure_reason = 'max_attempts', error = $3 WHERE seq = ANY($1::bigint[])`, [give.map((r) => r.seq), now, error]);
        for (let i = 0; i < give.length; i++) this.counts.moved('DISPATCHED', 'FAILED');
        await this.settleThreads(tx, new Map(give.map((r) => [r.thread_id, error])), false);
      }
      return { retried: retry.length, failed: give.length };
    });
  }

  /** Journals messages PENDING (an external recipient's at once ACKED), counts them in their threads, and wakes claimers. */
  protected override async insertAll(tx: Tx, messages: readonly Message[], threadsLocked = false): Promise<void> {
    if (messages.length === 0) return;
    await super.insertAll(tx, messages);
    // Nobody claims what is addressed to the outside world: it ends here, recorded and acknowledged.
    const external = messages.filter((m) => m.to === EXTERNAL_SENDER).map((m) => m.id);
    if (external.length > 0) {
      const r = await tx.query(`UPDATE journal SET state = 'ACKED', acked_at = $2 WHERE id = ANY($1::text[]) AND state = 'PENDING'`, [external, this.now()]);
      for (let i = 0; i < (r.rowCount ?? 0); i++) this.counts.moved('PENDING', 'ACKED');
    }
    await this.countInThreads(tx, messages, threadsLocked);
    if (external.length < messages.length) await notify(tx, this.channels.work, [...new Set(messages.filter((m) => m.to !== EXTERNAL_SENDER).map((m) => m.to))].join(','));
  }

  /** A redelivered entry is claimable: wake the claimers now, not at their next poll. */
  protected override async requeued(tx: Tx, recipients: readonly string[]): Promise<void> {
    await notify(tx, this.channels.work, [...new Set(recipients)].join(','));
  }

  /**
   * Commits fenced outcomes (see PgFencedOutcomes) set-based: the entries still DISPATCHED to
   * their worker at their attempt move to ACKED or FAILED in one statement; the others' outcomes
   * are dropped whole. Then, for the committed ones, their outgoing messages and usage, and
   * their threads settled; every thread touched is locked first, in id order, as every
   * transaction here takes them. A thread finished by the lot is reported on its last outcome.
   */
  private async commitOutcomes(tx: Tx, list: readonly FencedOutcome[]): Promise<FencedResult[]> {
    const now = this.now();
    const moved = (
      await tx.query<{ id: string; state: 'ACKED' | 'FAILED' }>({
        name: 'journal-fenced',
        text: FENCED_SQL,
        values: [
          list.map((o) => o.message.id),
          list.map((o) => o.workerId),
          list.map((o) => o.message.attempt),
          list.map((o) => o.to),
          list.map((o) => o.reason),
          list.map((o) => o.error),
          now,
        ],
      })
    ).rows;
    const committed = new Set<string>();
    for (const r of moved) {
      committed.add(r.id);
      this.counts.moved('DISPATCHED', r.state);
    }
    const done = list.filter((o) => committed.has(o.message.id));
    const finished = new Map<string, FinishedStatus | null>();
    if (done.length > 0) {
      const outgoing = done.flatMap((o) => o.outcome.outgoing);
      await lockThreads(tx, [...done.map((o) => o.message.threadId), ...outgoing.map((m) => m.threadId)]);
      await this.insertAll(tx, outgoing, true);
      await insertUsage(tx, done.flatMap((o) => o.outcome.usage));
      // Per thread, the first error of the lot (COALESCE keeps one recorded before it).
      const errors = new Map<string, string | null>();
      for (const o of done) errors.set(o.message.threadId, errors.get(o.message.threadId) ?? o.outcome.threadError);
      for (const [id, status] of await this.settleThreads(tx, errors)) finished.set(id, status);
    }
    const last = new Map(done.map((o) => [o.message.threadId, o]));
    return list.map((o) =>
      committed.has(o.message.id) ? { committed: true, threadFinished: last.get(o.message.threadId) === o ? (finished.get(o.message.threadId) ?? null) : null } : NOT_OURS,
    );
  }

  /**
   * Records each thread's error (the first since its inject) and, when no PENDING or DISPATCHED
   * entry of it is left, finishes it (a killed thread stays killed). Returns the threads it
   * finished. The rows are locked first (here, or by the caller), so the check of their entries
   * (a statement of its own, with a fresh snapshot) sees any inject that committed while this
   * transaction waited for them.
   */
  private async settleThreads(tx: Tx, errors: ReadonlyMap<string, string | null>, locked = true): Promise<Map<string, FinishedStatus>> {
    const ids = [...errors.keys()];
    if (!locked) await lockThreads(tx, ids);
    const r = await tx.query<{ id: string; status: ThreadStatus; finished: boolean }>({
      name: 'threads-settle',
      text: SETTLE_SQL,
      values: [ids, ids.map((id) => errors.get(id) ?? null), this.now()],
    });
    const finished = new Map<string, FinishedStatus>();
    for (const row of r.rows) if (row.finished && (row.status === 'completed' || row.status === 'error')) finished.set(row.id, row.status);
    return finished;
  }

  /**
   * Counts messages in their threads' records: participants in order of first appearance,
   * message count, last activity. An inject (no parent, not from the pump) makes its thread
   * active again with its error cleared and its metadata; a thread not stored yet is created.
   */
  private async countInThreads(tx: Tx, messages: readonly Message[], locked: boolean): Promise<void> {
    const byThread = new Map<string, { participants: string[]; count: number; last: number; inject: Message | null; first: Message }>();
    for (const m of messages) {
      let t = byThread.get(m.threadId);
      if (!t) byThread.set(m.threadId, (t = { participants: [], count: 0, last: 0, inject: null, first: m }));
      for (const name of [m.from, m.to]) if (!isSystemName(name) && !t.participants.includes(name)) t.participants.push(name);
      t.count++;
      t.last = Math.max(t.last, m.timestamp);
      if (m.parentId === null && !isSystemName(m.from)) t.inject = m;
    }
    const entries = [...byThread].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    // Two transactions touching the same threads must lock them in the same order (id order).
    if (!locked && entries.length > 1) await lockThreads(tx, entries.map(([id]) => id));
    const updated = await tx.query<{ id: string }>({
      name: 'threads-count',
      text: COUNT_IN_THREADS_SQL,
      values: [
        entries.map(([id]) => id),
        entries.map(([, t]) => JSON.stringify(t.participants)),
        entries.map(([, t]) => t.count),
        entries.map(([, t]) => t.last),
        entries.map(([, t]) => JSON.stringify((t.inject ?? t.first).metadata)),
        entries.map(([, t]) => t.inject !== null),
      ],
    });
    const stored = new Set(updated.rows.map((r) => r.id));
    const missing = entries.filter(([id]) => !stored.has(id));
    if (missing.length === 0) return;
    // Threads not stored yet (injects'), created; one another transaction created meanwhile is counted into.
    const created = await tx.query<{ id: string }>({
      name: 'threads-create',
      text: CREATE_THREADS_SQL,
      values: [
        missing.map(([id]) => id),
        missing.map(([, t]) => JSON.stringify(t.participants)),
        missing.map(([, t]) => t.count),
        missing.map(([, t]) => t.last),
        missing.map(([, t]) => JSON.stringify((t.inject ?? t.first).metadata)),
        this.counts.slot,
      ],
    });
    if (created.rows.length === missing.length) return;
    // Another transaction created some first (it committed before this insert went on): count into them.
    const made = new Set(created.rows.map((r) => r.id));
    await this.countInThreads(tx, messages.filter((m) => !stored.has(m.threadId) && !made.has(m.threadId)), true);
  }
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
