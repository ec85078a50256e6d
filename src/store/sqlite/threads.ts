import type Database from 'better-sqlite3';
import type { Page } from '../../core/page.js';
import type { ThreadQuery, ThreadRecord, ThreadStatus, ThreadStore } from '../../core/thread.js';
import type { GroupWriter } from './writer.js';
import { prepared } from './prepared.js';
import { searchWindow, TEXT_MATCH, timeRange } from './journal.js';
import { textParams } from '../rows.js';

interface ThreadRow {
  id: string;
  status: ThreadStatus;
  participants: string;
  message_count: number;
  created_at: number;
  last_activity: number;
  error: string | null;
  metadata: string;
}

const recordOf = (r: ThreadRow): ThreadRecord => ({
  id: r.id,
  status: r.status,
  participants: JSON.parse(r.participants) as string[],
  messageCount: r.message_count,
  createdAt: r.created_at,
  lastActivity: r.last_activity,
  error: r.error,
  metadata: JSON.parse(r.metadata) as Record<string, string>,
});

/** A record as the row the batched upsert reads (UPSERT_BATCH_SQL). */
const rowOf = (t: ThreadRecord): unknown[] => [t.id, t.status, JSON.stringify(t.participants), t.messageCount, t.createdAt, t.lastActivity, t.error, JSON.stringify(t.metadata)];

/** A thread record whose write failed (a full disk) is written again after this long. */
const RETRY_MS = 500;
/** How long an active thread's newer active record may wait for its write (see SqliteThreadStore.put). */
export const DEFER_MS = 1_000;

/**
 * Every queued record in one statement: the batch is a JSON array of rows, each an array of the
 * columns in order, participants and metadata as their JSON text (rowOf). Positions and text
 * cost SQLite less than objects it re-serialises: 7.7 -> 6.3 µs per record (a probe of 400k
 * upserts in batches of 100, each thread written four times, the threads table's two indexes).
 */
const UPSERT_BATCH_SQL = `INSERT INTO threads (id, status, participants, message_count, created_at, last_activity, error, metadata)
  SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3, value ->> 4, value ->> 5, value ->> 6, value ->> 7
  FROM json_each(?) WHERE true
  ON CONFLICT (id) DO UPDATE SET status = excluded.status, participants = excluded.participants,
    message_count = excluded.message_count, last_activity = excluded.last_activity, error = excluded.error, metadata = excluded.metadata`;

/**
 * Thread records on SQLite, written through the group writer: the records put during one tick
 * are one write of that tick's transaction, the last record of each thread only, all of them in
 * one statement (a thread's record is put several times per message; each upsert re-serialised
 * its participants and metadata). Reads see every record put: `get` answers from the records not
 * committed yet, the other reads flush the writer first.
 *
 * A thread stored active whose newer record is active too (its count, participants and last
 * activity moved while it works) is written within DEFER_MS, not in the next commit: a thread
 * lives across several group commits (a 3-hop chain: four or five) and its record went into each
 * of them, 4.4 upserts per message, the most expensive write of the chain. Its first record and
 * any other status (completed, error, waiting, killed) go into the next commit as before; so
 * does any record while an earlier one of the thread is not committed yet. Reads see the newest
 * record as they did: `get` from memory, `list` and `getMany` write what waits first, and so
 * does closing. What a crash loses is what it lost before, over a longer time: the thread record
 * is written behind the journal, and recovery goes by the journal (a thread left active with
 * nothing to do is closed from it, its last failure read there).
 *
 * A write that fails (the disk full) is tried again until it commits, unless a newer record of
 * the thread came meanwhile: the pump writes a finished thread's record once, and nothing else
 * would ever correct a thread left `active` in the store while its work had ended.
 */
export class SqliteThreadStore implements ThreadStore {
  private readonly upsert: Database.Statement;
  /** Records written but not committed yet, the latest per thread. */
  private readonly uncommitted = new Map<string, ThreadRecord>();
  /** The records of the write queued in the writer and not run yet (null: none is queued). */
  private queued: Map<string, ThreadRecord> | null = null;
  private readonly toRetry = new Set<string>();
  private retryTimer: NodeJS.Timeout | null = null;
  /** Threads whose committed record is active, as far as this process wrote them. */
  private readonly storedActive = new Set<string>();
  /** Active records of threads stored active, waiting (at most DEFER_MS) for their write. */
  private readonly deferred = new Map<string, ThreadRecord>();
  private deferTimer: NodeJS.Timeout | null = null;

  constructor(
    private readonly db: Database.Database,
    private readonly writer: GroupWriter,
  ) {
    this.upsert = db.prepare(UPSERT_BATCH_SQL);
  }

  put(t: ThreadRecord): void {
    const earlier = this.uncommitted.get(t.id);
    this.uncommitted.set(t.id, t);
    this.toRetry.delete(t.id);
    if (t.status === 'active' && this.storedActive.has(t.id) && (earlier === undefined || this.deferred.get(t.id) === earlier)) {
      this.deferred.set(t.id, t);
      if (!this.deferTimer) {
        this.deferTimer = setTimeout(() => this.writeDeferred(), DEFER_MS);
        this.deferTimer.unref();
      }
      return;
    }
    this.deferred.delete(t.id);
    this.write(t);
  }

  /** The records waiting (see put) go into the next commit. */
  writeDeferred(): void {
    if (this.deferTimer) {
      clearTimeout(this.deferTimer);
      this.deferTimer = null;
    }
    if (this.deferred.size === 0 || !this.db.open) return;
    const records = [...this.deferred.values()];
    this.deferred.clear();
    for (const record of records) this.write(record);
  }

  private write(t: ThreadRecord): void {
    if (this.queued) {
      this.queued.set(t.id, t);
      return;
    }
    const batch = new Map([[t.id, t]]);
    this.queued = batch;
    this.writer
      .write(() => {
        // From here on a record put goes to the next write (this one may be running in the commit).
        if (this.queued === batch) this.queued = null;
        this.upsert.run(JSON.stringify(Array.from(batch.values(), rowOf)));
      })
      .then(
        () => {
          for (const record of batch.values()) {
            if (record.status === 'active') this.storedActive.add(record.id);
            else this.storedActive.delete(record.id);
            if (this.uncommitted.get(record.id) === record) this.uncommitted.delete(record.id);
          }
        },
        () => {
          // The write may have failed before it ran (the transaction could not begin): records
          // put since go to a new write, and those put into this one are retried with the rest.
          if (this.queued === batch) this.queued = null;
          // Reported by the writer's error handler; tried again unless a newer record came.
          for (const record of batch.values()) if (this.uncommitted.get(record.id) === record) this.toRetry.add(record.id);
          if (this.toRetry.size > 0) this.scheduleRetry();
        },
      );
  }

  /** Something committed (the disk has room again): records whose write failed go now. */
  afterCommit(): void {
    if (this.toRetry.size === 0) return;
    setImmediate(() => this.retryNow());
  }

  private retryNow(): void {
    if (!this.db.open) return;
    for (const id of [...this.toRetry]) {
      const record = this.uncommitted.get(id);
      if (record) this.put(record);
    }
  }

  private scheduleRetry(): void {
    if (this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.retryNow();
    }, RETRY_MS);
    this.retryTimer.unref();
  }

  async get(id: string): Promise<ThreadRecord | null> {
    // A record put and not committed yet is the newest; any other is in the file already. Not
    // flushing keeps the group commit whole: an inject naming its thread reads here every time.
    const pending = this.uncommitted.get(id);
    if (pending) return pending;
    const row = prepared(this.db, 'SELECT * FROM threads WHERE id = ?').get(id) as ThreadRow | undefined;
    return row ? recordOf(row) : null;
  }

  async getMany(ids: readonly string[]): Promise<Map<string, ThreadRecord>> {
    this.writeDeferred();
    this.writer.flush();
    const found = new Map<string, ThreadRecord>();
    // One statement for any number of ids (a bound-parameter list would hit SQLite's limit).
    const rows = prepared(this.db, 'SELECT * FROM threads WHERE id IN (SELECT value FROM json_each(?))').all(JSON.stringify(ids)) as ThreadRow[];
    for (const row of rows) found.set(row.id, recordOf(row));
    // A record whose write failed (a full disk) is newer than its row.
    for (const id of ids) {
      const pending = this.uncommitted.get(id);
      if (pending) found.set(id, pending);
    }
    return found;
  }

  async list(q: ThreadQuery): Promise<Page<ThreadRecord>> {
    this.writeDeferred();
    this.writer.flush();
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.status) {
      where.push('status = ?');
      params.push(q.status);
    }
    if (q.agent) {
      where.push('EXISTS (SELECT 1 FROM json_each(threads.participants) WHERE value = ?)');
      params.push(q.agent);
    }
    // Active at or after the start (last activity), created before the end.
    timeRange(where, params, q, 'last_activity', 'created_at');
    const search = q.text ? searchWindow(this.db, q.text) : null;
    let textIds: Set<string> | null = null;
    if (q.text && search) {
      // The threads of the window's matching entries, read once (a range of the primary key):
      // as a subquery, the list and its count would each scan the window again.
      const ids = (
        prepared(this.db, `SELECT DISTINCT thread_id FROM journal WHERE seq >= ? AND ${TEXT_MATCH}`)
          .raw()
          .all(search.floor, ...textParams(q.text.text)) as Array<[string]>
      ).map((r) => r[0]);
      where.push('id IN (SELECT value FROM json_each(?))');
      params.push(JSON.stringify(ids));
      textIds = new Set(ids);
    }
    const truncated = search ? { searchTruncated: search.truncated } : {};
    // Written and flushed, the records left uncommitted are those whose write failed (a full
    // disk; they are retried) and those whose commit has not been told yet: the newest of their
    // threads, read in place of their rows, or a listing says a thread is still what it was
    // (waiting on an ask its answer closed, active after it ended) while the disk is full.
    if (this.uncommitted.size > 0) return { ...this.listOverlaid(q, where, params, textIds), ...truncated };
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const rows = prepared(this.db, `SELECT * FROM threads ${clause} ORDER BY last_activity DESC, id DESC LIMIT ? OFFSET ?`).all(...params, q.limit, q.offset) as ThreadRow[];
    return { items: rows.map(recordOf), total: this.count(q, clause, params), ...truncated };
  }

  /** list, with the uncommitted records (few: see list) matched in memory and merged into the rows of the others. */
  private listOverlaid(q: ThreadQuery, where: readonly string[], params: readonly unknown[], textIds: ReadonlySet<string> | null): Page<ThreadRecord> {
    const pending = [...this.uncommitted.values()];
    const ids = JSON.stringify(pending.map((t) => t.id));
    const rows = prepared(this.db, `SELECT * FROM threads WHERE ${[...where, 'id NOT IN (SELECT value FROM json_each(?))'].join(' AND ')} ORDER BY last_activity DESC, id DESC LIMIT ?`).all(
      ...params,
      ids,
      q.offset + q.limit,
    ) as ThreadRow[];
    const matching = pending.filter(
      (t) =>
        (!q.status || t.status === q.status) &&
        (!q.agent || t.participants.includes(q.agent)) &&
        (q.startTime === undefined || t.lastActivity >= q.startTime) &&
        (q.endTime === undefined || t.createdAt < q.endTime) &&
        (!textIds || textIds.has(t.id)),
    );
    const merged = [...rows.map(recordOf), ...matching].sort((a, b) => b.lastActivity - a.lastActivity || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    // The count as list's, less the rows of these threads it counted (a few key lookups), plus their records that match.
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const counted = (prepared(this.db, `SELECT COUNT(*) AS n FROM threads WHERE ${[...where, 'id IN (SELECT value FROM json_each(?))'].join(' AND ')}`).get(...params, ids) as { n: number })
      .n;
    const total = this.count(q, clause, params) - counted + matching.length;
    return { items: merged.slice(q.offset, q.offset + q.limit), total };
  }

  /**
   * Matches before paging: all threads from the trigger-kept count, completed ones as the
   * remainder of the other (small) statuses counted on their index, else COUNT(*).
   */
  private count(q: ThreadQuery, clause: string, params: readonly unknown[]): number {
    const countWhere = (where: string, ...args: unknown[]) => (prepared(this.db, `SELECT COUNT(*) AS n FROM threads ${where}`).get(...args) as { n: number }).n;
    if (q.agent || q.startTime !== undefined || q.endTime !== undefined || q.text || (q.status && q.status !== 'completed')) return countWhere(clause, ...params);
    const all = (prepared(this.db, `SELECT n FROM row_counts WHERE name = 'threads'`).get() as { n: number }).n;
    return q.status === 'completed' ? all - countWhere(`INDEXED BY threads_status WHERE status IN ('active', 'waiting', 'error', 'killed')`) : all;
  }
}
