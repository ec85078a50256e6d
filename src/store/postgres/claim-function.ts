/**
 * The claim of a clustered organism's journal as a server function, `organism_claim` (called by
 * PgClusterJournal.claim through src/cluster/queue/claim-sql.ts). A function, not a query
 * string, because planning the claim cost more than running it: sent as text with its values
 * written in, it was planned at every call (0.7 ms of server CPU per claim, ~35 % of all the
 * database's CPU in the 3-hop chain); a PL/pgSQL function keeps its plans per connection. One
 * call is one statement, its own transaction: the claim lock is held only while the server
 * runs it, never across a round trip to a process that a busy machine may not schedule at once.
 *
 * What it does, in order:
 * - Commits asynchronously (synchronous_commit off for its transaction): a claim costs no disk
 *   flush. What a claim lost that way costs: only a crash of the database server (not of an
 *   organism process) can lose it, and then the entry is PENDING again at the same attempt, as
 *   if never claimed. The process that claimed it may be running it: if another process claims
 *   it, the first one's ack fails the fence (`claimed_by`, `attempt`) and is dropped whole, so
 *   the delivery's outcome commits once, but its handler has run twice (the at-least-once of
 *   any redelivery after a crash); if the same process claims it again, it does not start it a
 *   second time (ClusterQueue.startClaimed) and the delivery it runs acks against the new claim.
 *   Nothing else depends on a claim being durable: every later write (the ack, a synchronous
 *   commit) flushes the WAL past it.
 * - Takes the claim lock: the organism-wide limits count DISPATCHED rows, and two claims
 *   counting at once would both see room for the last slot, so the claims of one schema take
 *   turns (FIFO alone would not need it: see the pair check below). The claim's statement runs
 *   after it, with a snapshot taken once the lock is held.
 * - Claims: per listener of the caller that is not paused (organism-wide, in paused_agents), its
 *   oldest PENDING entries of threads not held (thread_holds), that are the oldest open entry of
 *   their (thread, recipient) with none of that pair DISPATCHED, no more than the listener's
 *   room under the per-agent limit; then the oldest of those, no more than the caller's free
 *   slots and the room under the global limit. The limits count handlers running: the
 *   claimer's as it counts them itself (its deliveries booking an outcome run none), and every
 *   DISPATCHED entry of the other processes. The rows are locked SKIP LOCKED (a row being failed by a kill is passed
 *   over, not waited for) and become DISPATCHED, held by the worker, attempts = attempt. The
 *   kept counts move in the same statement.
 *
 * Returns one JSON document per claimed entry, in seq order: `{row, thread}`, the journal row
 * and its thread's row (null if it has none); then one more, `{rooms, room}`: the room each
 * listener had under the per-agent limit (null when none was eligible) and the claim's room in
 * all (the caller's free slots, within the global limit), so that the caller knows whether a
 * limit stopped it.
 */
const claimFunction = (running: string, busy: string) => `organism_claim(
    p_worker TEXT, p_listeners TEXT[], p_max INT, p_global INT, p_per_agent INT, p_now BIGINT, p_slot TEXT, ${running}
  ) RETURNS SETOF JSON LANGUAGE plpgsql VOLATILE
  -- The DISPATCHED entries are counted by an index scan, not a bitmap scan: an index scan marks
  -- the index entries of rows no longer DISPATCHED dead as it meets them, and later claims skip
  -- them; a bitmap scan visits their rows at every claim, ever more until a vacuum.
  SET enable_bitmapscan = off
  AS $claim$
  BEGIN
    PERFORM set_config('synchronous_commit', 'off', true);
    PERFORM pg_advisory_xact_lock(hashtext('organism:claim:' || current_schema()));
    RETURN QUERY
    WITH ${busy},
    room AS (SELECT GREATEST(0, LEAST(p_max, p_global - COALESCE((SELECT SUM(n) FROM busy), 0)))::int AS n),
    agents AS (
      SELECT a.name, GREATEST(0, LEAST(p_per_agent - COALESCE(b.n, 0), (SELECT n FROM room)))::int AS room
      FROM unnest(p_listeners) AS a(name) LEFT JOIN busy b ON b.recipient = a.name
      WHERE a.name NOT IN (SELECT agent FROM paused_agents)
    ),
    candidates AS (
      SELECT c.seq, a.name AS recipient FROM agents a CROSS JOIN LATERAL (
        SELECT j.seq FROM journal j
        WHERE j.state = 'PENDING' AND j.recipient = a.name
          -- A retry waiting out its backoff is not claimed before its time (it still heads its pair).
          AND (j.next_attempt_at IS NULL OR j.next_attempt_at <= p_now)
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
    chosen AS (SELECT seq, recipient FROM candidates ORDER BY seq LIMIT (SELECT n FROM room)),
    -- Each chosen row by its key. Written so that no plan can do otherwise: the function's plans
    -- are kept per connection, some made while the table was empty (as a semi join, a kept
    -- plan read every PENDING row per claim). The recipient too: by seq alone, the PENDING
    -- entries' index (recipient, seq) ties with the primary key in a plan made on a small
    -- journal, and a plan that took it read every PENDING entry of the journal for each row
    -- claimed (17 pages a row with 5,000 waiting; the PostgreSQL chain's slow rounds, claims
    -- at twice the server time). By both it is a lookup whichever index serves it.
    locked AS (
      SELECT l.seq FROM chosen c CROSS JOIN LATERAL (
        SELECT j.seq FROM journal j WHERE j.seq = c.seq AND j.recipient = c.recipient AND j.state = 'PENDING' FOR UPDATE SKIP LOCKED) l),
    claimed AS (
      UPDATE journal j SET state = 'DISPATCHED', claimed_by = p_worker, attempts = j.attempt, dispatched_at = p_now, next_attempt_at = NULL
      FROM locked WHERE j.seq = locked.seq
      RETURNING j.*),
    -- The kept counts, in the claimer's slot: PENDING -n, DISPATCHED +n.
    counted AS (
      INSERT INTO row_counts (name, slot, n)
      SELECT v.name, p_slot, v.sign * c.n FROM (SELECT COUNT(*) AS n FROM claimed) c CROSS JOIN (VALUES ('journal:DISPATCHED', 1), ('journal:PENDING', -1)) AS v(name, sign)
      WHERE c.n > 0
      ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n + excluded.n)
    SELECT d.doc FROM (
      SELECT c.seq AS k, json_build_object('row', to_json(c), 'thread', to_json(t)) AS doc FROM claimed c LEFT JOIN threads t ON t.id = c.thread_id
      UNION ALL
      -- Last, the room the claim had (seen in its snapshot): per listener, and in all.
      SELECT NULL, json_build_object('rooms', (SELECT json_object_agg(name, room) FROM agents), 'room', (SELECT n FROM room))
    ) d ORDER BY d.k NULLS LAST;
  END
  $claim$`;

/**
 * Schema versions 15 and 17: handlers running per listener counted from every DISPATCHED entry
 * but the claimer's own whose handler has ended (`p_booking`, booking their outcome), looked up
 * in a hash of the list (NOT IN a subquery is a hashed subplan: as id = ANY(p_booking), a
 * parameter the function's kept plan cannot hash, each DISPATCHED row was compared with every
 * id of the list; 0.69 -> 0.17 ms of server time with 240 entries DISPATCHED and booking).
 */
const BOOKING_CLAIM = claimFunction(
  'p_booking TEXT[]',
  `busy AS (
      SELECT recipient, COUNT(*)::int AS n FROM journal
      WHERE state = 'DISPATCHED' AND (claimed_by <> p_worker OR id NOT IN (SELECT unnest(p_booking)))
      GROUP BY recipient)`,
);

/**
 * Schema version 18: the claimer's handlers running per listener as it counts them itself
 * (`p_running` names, `p_running_n` counts), and the DISPATCHED entries of every other process;
 * the claimer's own entries are not read at all. A claimer that books a backlog of outcomes
 * (its handlers ended, the writer behind) had every claim read each of those entries again and
 * send their ids: ~600 on the PostgreSQL chain, ~0.5 ms of each claim's server time. Each
 * range on journal_claimed (below and above the claimer's id) is an index scan of the others'
 * entries alone. With p_running NULL the claimer's own DISPATCHED entries count instead (a
 * caller that does not know what runs).
 */
const RUNNING_CLAIM = claimFunction(
  'p_running TEXT[], p_running_n INT[]',
  `busy AS (
      SELECT recipient, SUM(n)::int AS n FROM (
        SELECT recipient, 1 AS n FROM journal WHERE state = 'DISPATCHED' AND claimed_by < p_worker
        UNION ALL SELECT recipient, 1 FROM journal WHERE state = 'DISPATCHED' AND claimed_by > p_worker
        UNION ALL SELECT recipient, 1 FROM journal WHERE state = 'DISPATCHED' AND claimed_by IS NULL
        UNION ALL SELECT recipient, 1 FROM journal WHERE state = 'DISPATCHED' AND claimed_by = p_worker AND p_running IS NULL
        UNION ALL SELECT r.name, r.n FROM unnest(p_running, p_running_n) AS r(name, n)
      ) b GROUP BY recipient)`,
);

export const PG_CLAIM_FUNCTION_MIGRATION = `CREATE FUNCTION ${BOOKING_CLAIM};`;

/** The booking looked up in a hash; a database migrated before gets the function a new one is created with. */
export const PG_CLAIM_BOOKING_MIGRATION = `CREATE OR REPLACE FUNCTION ${BOOKING_CLAIM};`;

/** The claimer's own running handlers as it counts them (see RUNNING_CLAIM); the booking variant goes. */
export const PG_CLAIM_RUNNING_MIGRATION = `
  DROP FUNCTION organism_claim(TEXT, TEXT[], INT, INT, INT, BIGINT, TEXT, TEXT[]);
  CREATE FUNCTION ${RUNNING_CLAIM};`;

/** Schema version 19: each claimed row locked by (recipient, seq) (see `locked`); a database migrated before gets the function a new one is created with. */
export const PG_CLAIM_LOOKUP_MIGRATION = `CREATE OR REPLACE FUNCTION ${RUNNING_CLAIM};`;
