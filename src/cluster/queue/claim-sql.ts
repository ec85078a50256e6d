/**
 * The claim query of a clustered organism's journal (see PgClusterJournal.claim): the whole
 * transaction as one query string, its values written in as literals.
 */

/** The claims of one schema take turns on this lock (see `claim`). */
const CLAIM_LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtext('organism:claim:' || current_schema()))`;

/** A limit as an SQL integer literal (an unbounded one as the largest int). */
const intLiteral = (n: number) => String(Number.isFinite(n) ? Math.max(0, Math.min(Math.trunc(n), 2 ** 31 - 1)) : 2 ** 31 - 1);

/**
 * The claim (one statement, after the claim lock): per listener of this process that is not
 * paused (organism-wide, in paused_agents), its oldest PENDING entries of threads not held
 * (thread_holds), that are the oldest open
 * entry of their (thread, recipient) with none of that pair DISPATCHED, no more than the
 * listener's room under the per-agent limit; then the oldest of those, no more than this
 * process's free slots and the room under the global limit. The limits count handlers
 * running: every DISPATCHED entry but those of this claimer whose handler has ended (booking,
 * their outcome not committed yet). The rows are locked SKIP LOCKED
 * (a row being failed by a kill is passed over, not waited for) and become DISPATCHED, held
 * by this worker, attempts = attempt. Returned with their threads' rows, in seq order; the
 * kept counts move in the same statement.
 */
const CLAIM_SQL = `
  WITH busy AS (
    SELECT recipient, COUNT(*)::int AS n FROM journal
    -- The claimer's own deliveries whose handler has ended (booking their outcome) run no handler.
    WHERE state = 'DISPATCHED' AND NOT (claimed_by = $1 AND id = ANY($8::text[]))
    GROUP BY recipient),
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
        -- A retry waiting out its backoff is not claimed before its time (it still heads its pair).
        AND (j.next_attempt_at IS NULL OR j.next_attempt_at <= $6::bigint)
        -- A held thread's entries stay PENDING until it is resumed (issue 30).
        AND NOT EXISTS (SELECT 1 FROM thread_holds h WHERE h.thread_id = j.thread_id AND h.held)
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
    UPDATE journal j SET state = 'DISPATCHED', claimed_by = $1, attempts = j.attempt, dispatched_at = $6, next_attempt_at = NULL
    FROM locked WHERE j.seq = locked.seq
    RETURNING j.*),
  -- The kept counts, in this claimer's slot: PENDING -n, DISPATCHED +n.
  counted AS (
    INSERT INTO row_counts (name, slot, n)
    SELECT v.name, $7, v.sign * c.n FROM (SELECT COUNT(*) AS n FROM claimed) c CROSS JOIN (VALUES ('journal:DISPATCHED', 1), ('journal:PENDING', -1)) AS v(name, sign)
    WHERE c.n > 0
    ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n + excluded.n)
  SELECT c.*, row_to_json(t) AS thread_row FROM claimed c LEFT JOIN threads t ON t.id = c.thread_id ORDER BY c.seq`;

/** What one claim asks for. */
export interface ClaimRequest {
  readonly workerId: string;
  readonly listeners: readonly string[];
  /** This process's free slots. */
  readonly max: number;
  readonly global: number;
  readonly perAgent: number;
  readonly now: number;
  /** The kept-count slot the claim adds to. */
  readonly slot: string;
  /** This claimer's deliveries whose handler has ended (their outcome being written): not counted against the limits. */
  readonly booking: readonly string[];
}

/**
 * A claim commits asynchronously (`synchronous_commit = off`): the server answers before its
 * WAL is flushed, so a claim costs no disk flush. What a claim lost that way costs: only a
 * crash of the database server (not of an organism process) can lose it, and then the entry
 * is PENDING again at the same attempt, as if never claimed. The process that claimed it may
 * be running it: if another process claims it, the first one's ack fails the fence
 * (`claimed_by`, `attempt`) and is dropped whole, so the delivery's outcome commits once, but
 * its handler has run twice (the at-least-once of any redelivery after a crash); if the same
 * process claims it again, it does not start it a second time (ClusterQueue.startClaimed) and
 * the delivery it runs acks against the new claim. Nothing else depends on a claim being
 * durable: every later write (the ack, a synchronous commit) flushes the WAL past it.
 */
const ASYNC_COMMIT_SQL = 'SET LOCAL synchronous_commit = off';

/** Where the claimed rows are among the results of claimTransaction's query. */
export const CLAIM_RESULT = 3;

/**
 * BEGIN, asynchronous commit, the claim lock, the claim and COMMIT as one simple-protocol
 * query (result CLAIM_RESULT holds the claimed rows). Names go through `escapeLiteral` (the pg
 * client's), limits as clamped integers: nothing of a request is ever read as SQL.
 */
export function claimTransaction(r: ClaimRequest, escapeLiteral: (v: string) => string): string {
  const values = [
    escapeLiteral(r.workerId),
    `ARRAY[${r.listeners.map(escapeLiteral).join(', ')}]::text[]`,
    intLiteral(r.max),
    intLiteral(r.global),
    intLiteral(r.perAgent),
    `${Math.trunc(r.now)}::bigint`,
    escapeLiteral(r.slot),
    `ARRAY[${r.booking.map(escapeLiteral).join(', ')}]::text[]`,
  ];
  return `BEGIN; ${ASYNC_COMMIT_SQL}; ${CLAIM_LOCK_SQL}; ${CLAIM_SQL.replace(/\$(\d)/g, (_, i: string) => values[Number(i) - 1]!)}; COMMIT`;
}
