import type { Message } from '../../core/message.js';
import { isSystemName } from '../../core/message.js';
import type { ThreadStatus } from '../../core/thread.js';
import type pg from 'pg';
import type { Tx } from '../../store/postgres/writer.js';

/**
 * Thread records in a clustered organism, kept by the journal's own transactions (no process
 * keeps a thread in memory that another could contradict), set-based for a lot of messages or
 * outcomes at once. Every transaction locks the thread rows it touches in id order.
 */

/**
 * The settle of threads, SETTLE_SQL and COUNT_SETTLE_SQL: `input` the threads (i.id) with the
 * error each outcome leaves (i.error), `set` what else the update sets. SETTLE_SQL settles
 * threads ($1, with their errors $2) at $3 (see settleThreads). The
 * budget of a thread it finishes (completed or error) stops being live in the same statement:
 * its row stays, spend, ceiling and fired thresholds untouched (a thread's budget is its whole
 * life's, never reset), and the thread's next reservation makes it live again. This is the
 * ledger's finish (PgBudgetLedger.finish) done where the thread is found finished, under the
 * thread's lock, instead of one more statement per thread after the commit.
 *
 * Whether each thread has an open entry (PENDING or DISPATCHED: not finished) or an open ask
 * (AWAITING, issue 25: `waiting` while nothing else is open) is looked up per thread, on
 * journal_open and journal_thread, once: a LATERAL probe with LIMIT 1 stays a lookup of the
 * thread's own entries, where an EXISTS in the update was planned as a hash of every open
 * entry of the organism (its cost grew with the queue, ~10 ms a lot with a few thousand
 * open). One snapshot, the statement's, as before.
 */
const settleSql = (o: { input: string; columns: string; set: string }) => `
  WITH s AS (
    SELECT i.id, i.error, ${o.columns} o.open IS NOT NULL AS open, a.asking IS NOT NULL AS asking
    FROM ${o.input}
    LEFT JOIN LATERAL (SELECT true AS open FROM journal o WHERE o.thread_id = i.id AND o.state IN ('PENDING', 'DISPATCHED') LIMIT 1) o ON true
    LEFT JOIN LATERAL (SELECT true AS asking FROM journal a WHERE a.thread_id = i.id AND a.state = 'AWAITING' LIMIT 1) a ON true),
  settled AS (
    UPDATE threads t SET ${o.set} error = COALESCE(t.error, s.error),
      status = CASE WHEN t.status = 'killed' OR s.open THEN t.status
                    WHEN s.asking THEN 'waiting'
                    WHEN COALESCE(t.error, s.error) IS NOT NULL THEN 'error' ELSE 'completed' END
    FROM s
    WHERE t.id = s.id
    RETURNING t.id, t.status, NOT s.open AND NOT s.asking AS finished),
  released AS (
    UPDATE thread_budgets b SET live = false FROM settled
    WHERE b.thread_id = settled.id AND b.live AND settled.finished AND settled.status IN ('completed', 'error'))
  SELECT id, status, finished FROM settled`;

const SETTLE_SQL = settleSql({ input: 'unnest($1::text[], $2::text[]) AS i(id, error)', columns: '', set: 'last_activity = GREATEST(t.last_activity, $3::bigint),' });

/**
 * SETTLE_SQL with the lot's outgoing messages counted into the same threads in the same update
 * (see settleThreadsAtCommit): one new row version per thread per lot, where counting and then
 * settling made two (each a heap tuple and an entry in every index of threads: ~2 of the ~5
 * thread row versions a message made on the 3-hop chain). Per thread $1: its error $2, and
 * what its outgoing messages add (participants as JSON arrays $3, counts $4, last activity $5;
 * '[]', 0, 0 for a thread with none). Equivalent to COUNT_IN_THREADS_SQL then SETTLE_SQL for
 * messages none of which is an inject (the count then changes neither status, error nor
 * metadata); the journal rows of the messages are written before it, so the open check sees them.
 */
const COUNT_SETTLE_SQL = settleSql({
  input: 'unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::bigint[]) AS i(id, error, participants, n, last)',
  columns: 'i.participants, i.n, i.last,',
  set: `participants = t.participants || ARRAY(SELECT p FROM json_array_elements_text(s.participants::json) WITH ORDINALITY AS u(p, o) WHERE NOT p = ANY(t.participants) ORDER BY o),
      message_count = t.message_count + s.n, last_activity = GREATEST(t.last_activity, s.last, $6::bigint),`,
});

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

/**
 * Counts injects in their threads, creating those not stored yet, in one statement (see
 * countInjectsAtCommit): countInThreads' update of an inject and its create, as an upsert, so
 * that a thread another transaction creates meanwhile is waited for and counted into. Rows in
 * id order (the order every transaction here locks threads in). Inserted rows have no xmax;
 * updated ones do: the kept thread count goes up by those created, in slot $6.
 */
const UPSERT_INJECTED_SQL = `
  WITH up AS (
    INSERT INTO threads AS t (id, status, participants, message_count, created_at, last_activity, error, metadata)
    SELECT i.id, 'active', ARRAY(SELECT json_array_elements_text(i.participants::json)), i.n, i.last, i.last, NULL, i.metadata
    FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::text[]) WITH ORDINALITY AS i(id, participants, n, last, metadata, o)
    ORDER BY i.o
    ON CONFLICT (id) DO UPDATE SET
      participants = t.participants || ARRAY(SELECT p FROM unnest(excluded.participants) WITH ORDINALITY AS u(p, o) WHERE NOT p = ANY(t.participants) ORDER BY o),
      message_count = t.message_count + excluded.message_count,
      last_activity = GREATEST(t.last_activity, excluded.last_activity),
      status = CASE WHEN t.status <> 'killed' THEN 'active' ELSE t.status END,
      error = CASE WHEN t.status <> 'killed' THEN NULL ELSE t.error END,
      metadata = excluded.metadata
    RETURNING t.xmax = 0 AS created),
  counted AS (
    INSERT INTO row_counts (name, slot, n) SELECT 'threads', $6::text, COUNT(*) FROM up WHERE created HAVING COUNT(*) > 0
    ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n + excluded.n)
  SELECT 1`;

/** An inject: no parent, not from the pump (it makes its thread active again). */
export const isInject = (m: Message): boolean => m.parentId === null && !isSystemName(m.from);

export type FinishedStatus = Extract<ThreadStatus, 'completed' | 'error'>;

/** Locks thread rows in id order (the order every transaction here takes them in). */
export async function lockThreads(tx: Tx, ids: readonly string[]): Promise<void> {
  const unique = [...new Set(ids)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  if (unique.length === 0) return;
  await tx.query({ name: 'threads-lock', text: 'SELECT 1 FROM threads WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', values: [unique] });
}

/**
 * Records each thread's error (the first since its inject) and, when no PENDING or DISPATCHED
 * entry of it is left, finishes it (a killed thread stays killed) and its budget (see
 * SETTLE_SQL). Returns the threads it finished. The rows are locked first (here, or by the caller), so the check of their entries
 * (a statement of its own, with a fresh snapshot) sees any inject that committed while this
 * transaction waited for them.
 */
export async function settleThreads(tx: Tx, errors: ReadonlyMap<string, string | null>, now: number, locked = true): Promise<Map<string, FinishedStatus>> {
  const ids = [...errors.keys()];
  if (!locked) await lockThreads(tx, ids);
  const r = await tx.query<SettledRow>({
    name: 'threads-settle',
    text: SETTLE_SQL,
    values: [ids, ids.map((id) => errors.get(id) ?? null), now],
  });
  return finishedOf(r.rows);
}

/**
 * settleThreads with the statement sent with the COMMIT (Tx.atCommit: one round trip less per
 * lot of outcomes); `finished` hears the threads it finished once the transaction committed.
 * The caller has locked the rows. A statement that cannot be written with its values in goes
 * at once, as settleThreads. `counted`: messages journaled by this transaction, to be counted
 * into their threads by the same statement (COUNT_SETTLE_SQL); none may be an inject (see
 * isInject) and each must be in a thread settled here (`errors`).
 */
export async function settleThreadsAtCommit(
  tx: Tx,
  errors: ReadonlyMap<string, string | null>,
  now: number,
  finished: (threads: Map<string, FinishedStatus>) => void,
  counted: { readonly messages: readonly Message[]; readonly slot: string } = { messages: [], slot: '' },
): Promise<void> {
  if (counted.messages.length > 0) return countAndSettle(tx, errors, now, finished, counted);
  const ids = [...errors.keys()];
  const values = [ids, ids.map((id) => errors.get(id) ?? null), now];
  if (!tx.atCommit({ name: 'threads-settle', text: SETTLE_SQL, values, generic: true }, settledTo(finished))) finished(await settleThreads(tx, errors, now));
}

/** settleThreadsAtCommit's one statement for both (COUNT_SETTLE_SQL); each on a round trip of its own when the values cannot be written in. */
async function countAndSettle(
  tx: Tx,
  errors: ReadonlyMap<string, string | null>,
  now: number,
  finished: (threads: Map<string, FinishedStatus>) => void,
  counted: { readonly messages: readonly Message[]; readonly slot: string },
): Promise<void> {
  const ids = [...errors.keys()];
  const byThread = new Map(tallies(counted.messages));
  const values = [
    ids,
    ids.map((id) => errors.get(id) ?? null),
    ids.map((id) => JSON.stringify(byThread.get(id)?.participants ?? [])),
    ids.map((id) => byThread.get(id)?.count ?? 0),
    ids.map((id) => byThread.get(id)?.last ?? 0),
    now,
  ];
  if (tx.atCommit({ name: 'threads-count-settle', text: COUNT_SETTLE_SQL, values, generic: true }, settledTo(finished))) return;
  await countInThreads(tx, counted.messages, { locked: true, slot: counted.slot });
  finished(await settleThreads(tx, errors, now));
}

interface SettledRow {
  id: string;
  status: ThreadStatus;
  finished: boolean;
}

/** The result of a settle sent with the COMMIT, as the threads it finished, told to `finished`. */
const settledTo =
  (finished: (threads: Map<string, FinishedStatus>) => void) =>
  (r: pg.QueryResult): void =>
    finished(finishedOf(r.rows as SettledRow[]));

function finishedOf(rows: readonly SettledRow[]): Map<string, FinishedStatus> {
  const finished = new Map<string, FinishedStatus>();
  for (const row of rows) if (row.finished && (row.status === 'completed' || row.status === 'error')) finished.set(row.id, row.status);
  return finished;
}

/**
 * Counts messages in their threads' records: participants in order of first appearance,
 * message count, last activity. An inject (no parent, not from the pump) makes its thread
 * active again with its error cleared and its metadata; a thread not stored yet is created.
 */
export async function countInThreads(tx: Tx, messages: readonly Message[], o: { locked: boolean; slot: string; atCommit?: boolean }): Promise<void> {
  const entries = tallies(messages);
  const values = [...threadColumns(entries), entries.map(([, t]) => t.inject !== null)];
  // Threads the caller holds locked, so stored: counted with the COMMIT (one round trip less).
  if (o.atCommit && tx.atCommit({ name: 'threads-count', text: COUNT_IN_THREADS_SQL, values, generic: true })) return;
  // Two transactions touching the same threads must lock them in the same order (id order).
  if (!o.locked && entries.length > 1)
    await lockThreads(
      tx,
      entries.map(([id]) => id),
    );
  const updated = await tx.query<{ id: string }>({
    name: 'threads-count',
    text: COUNT_IN_THREADS_SQL,
    values,
  });
  const stored = new Set(updated.rows.map((r) => r.id));
  const missing = entries.filter(([id]) => !stored.has(id));
  if (missing.length === 0) return;
  // Threads not stored yet (injects'), created; one another transaction created meanwhile is counted into.
  const created = await tx.query<{ id: string }>({
    name: 'threads-create',
    text: CREATE_THREADS_SQL,
    values: [...threadColumns(missing), o.slot],
  });
  if (created.rows.length === missing.length) return;
  // Another transaction created some first (it committed before this insert went on): count into them.
  const made = new Set(created.rows.map((r) => r.id));
  await countInThreads(
    tx,
    messages.filter((m) => !stored.has(m.threadId) && !made.has(m.threadId)),
    { ...o, locked: true, atCommit: false },
  );
}

/**
 * countInThreads for a lot of injects alone (no parent, not from the pump: each thread's
 * messages make it active again), sent with the COMMIT: one round trip with it where
 * countInThreads takes two or three before it. False when the lot holds other messages or its
 * values cannot be written in: then nothing was queued.
 */
export function countInjectsAtCommit(tx: Tx, messages: readonly Message[], slot: string): boolean {
  if (!messages.every(isInject)) return false;
  const values = [...threadColumns(tallies(messages)), slot];
  return tx.atCommit({ name: 'threads-upsert-injected', text: UPSERT_INJECTED_SQL, values, generic: true });
}

interface ThreadTally {
  readonly participants: string[];
  count: number;
  last: number;
  inject: Message | null;
  readonly first: Message;
}

/** Per thread (in id order): its participants in order of first appearance, count, last activity, inject. */
function tallies(messages: readonly Message[]): Array<[string, ThreadTally]> {
  const byThread = new Map<string, ThreadTally>();
  for (const m of messages) {
    let t = byThread.get(m.threadId);
    if (!t) byThread.set(m.threadId, (t = { participants: [], count: 0, last: 0, inject: null, first: m }));
    for (const name of [m.from, m.to]) if (!isSystemName(name) && !t.participants.includes(name)) t.participants.push(name);
    t.count++;
    t.last = Math.max(t.last, m.timestamp);
    if (isInject(m)) t.inject = m;
  }
  return [...byThread].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A thread tally per row, as the columns COUNT_IN_THREADS_SQL and CREATE_THREADS_SQL take ($1-$5). */
function threadColumns(rows: ReadonlyArray<readonly [string, ThreadTally]>): unknown[] {
  return [
    rows.map(([id]) => id),
    rows.map(([, t]) => JSON.stringify(t.participants)),
    rows.map(([, t]) => t.count),
    rows.map(([, t]) => t.last),
    rows.map(([, t]) => JSON.stringify((t.inject ?? t.first).metadata)),
  ];
}
