import type { Page } from '../../core/page.js';
import type { ThreadQuery, ThreadRecord, ThreadStatus, ThreadStore } from '../../core/thread.js';
import { COUNT_SQL, countInsertedThread } from './journal-counts.js';
import type { Reader } from './pool.js';
import type { PgWriter } from './writer.js';
import { pgSearchWindow, pgTextMatch } from './journal.js';
import { textParams } from '../rows.js';

/** A row of `threads` as pg reads it. */
export interface ThreadRow {
  id: string;
  status: ThreadStatus;
  participants: string[];
  message_count: number;
  created_at: number;
  last_activity: number;
  error: string | null;
  metadata: string;
}

export const recordOf = (r: ThreadRow): ThreadRecord => ({
  id: r.id,
  status: r.status,
  participants: r.participants,
  messageCount: r.message_count,
  createdAt: r.created_at,
  lastActivity: r.last_activity,
  error: r.error,
  metadata: JSON.parse(r.metadata) as Record<string, string>,
});

/**
 * Thread records on PostgreSQL. `put` is write-behind (the interface is synchronous: the pump
 * records thread state on its hot path without waiting); the write goes into the writer's next
 * transaction, in order, and reads wait for it.
 */
export class PgThreadStore implements ThreadStore {
  /** Gets waiting for the next read, by thread id (see get). */
  private gets = new Map<string, Array<{ resolve(t: ThreadRecord | null): void; reject(err: unknown): void }>>();

  constructor(
    private readonly pool: Reader,
    private readonly writer: PgWriter,
    /** This process's slot of the kept counts (journal-counts.ts). */
    private readonly slot = '',
  ) {}

  put(t: ThreadRecord): void {
    void this.writer
      .write(async (tx) => {
        // xmax = 0 on the upserted row: it was inserted, not updated (the kept thread count);
        // one statement, one round trip.
        await tx.query({
          name: 'thread-put',
          text: `WITH up AS (
              INSERT INTO threads (id, status, participants, message_count, created_at, last_activity, error, metadata)
              VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
              ON CONFLICT (id) DO UPDATE SET status = excluded.status, participants = excluded.participants,
                message_count = excluded.message_count, last_activity = excluded.last_activity, error = excluded.error, metadata = excluded.metadata
              RETURNING (xmax = 0) AS inserted)
            ${countInsertedThread('$9')}`,
          values: [t.id, t.status, t.participants, t.messageCount, t.createdAt, t.lastActivity, t.error, JSON.stringify(t.metadata), this.slot],
        });
      })
      .catch(() => {}); // reported by the writer's error handler
  }

  async kill(t: ThreadRecord): Promise<void> {
    await this.writer.write(async (tx) => {
      await tx.query({
        name: 'thread-kill',
        text: `WITH up AS (
            INSERT INTO threads (id, status, participants, message_count, created_at, last_activity, error, metadata)
            VALUES ($1, 'killed', $2, $3, $4, $5, $6, $7)
            ON CONFLICT (id) DO UPDATE SET status = 'killed', last_activity = GREATEST(threads.last_activity, excluded.last_activity)
            RETURNING (xmax = 0) AS inserted)
          ${countInsertedThread('$8')}`,
        values: [t.id, t.participants, t.messageCount, t.createdAt, t.lastActivity, t.error, JSON.stringify(t.metadata), this.slot],
      });
    });
  }

  /**
   * Gets asked within one turn of the event loop are read together: one flush and one query
   * for a batch of injects naming their threads (the pump reads each such thread), not one
   * round trip and one transaction each.
   */
  get(id: string): Promise<ThreadRecord | null> {
    return new Promise((resolve, reject) => {
      const waiting = this.gets.get(id);
      if (waiting) waiting.push({ resolve, reject });
      else this.gets.set(id, [{ resolve, reject }]);
      if (this.gets.size === 1 && waiting === undefined) setImmediate(() => void this.readGets());
    });
  }

  private async readGets(): Promise<void> {
    const batch = this.gets;
    this.gets = new Map();
    try {
      const found = await this.getMany([...batch.keys()]);
      for (const [id, waiting] of batch) for (const w of waiting) w.resolve(found.get(id) ?? null);
    } catch (err) {
      for (const waiting of batch.values()) for (const w of waiting) w.reject(err);
    }
  }

  async getMany(ids: readonly string[]): Promise<Map<string, ThreadRecord>> {
    await this.writer.flush();
    const found = new Map<string, ThreadRecord>();
    if (ids.length === 0) return found;
    const rows = (await this.pool.query<ThreadRow>('SELECT * FROM threads WHERE id = ANY($1::text[])', [ids])).rows;
    for (const row of rows) found.set(row.id, recordOf(row));
    return found;
  }

  async list(q: ThreadQuery): Promise<Page<ThreadRecord>> {
    await this.writer.flush();
    const where: string[] = [];
    const params: unknown[] = [];
    if (q.status) {
      params.push(q.status);
      where.push(`status = $${params.length}`);
    }
    if (q.agent) {
      params.push([q.agent]);
      where.push(`participants @> $${params.length}::text[]`);
    }
    if (q.startTime !== undefined) {
      params.push(q.startTime);
      where.push(`last_activity >= $${params.length}`);
    }
    if (q.endTime !== undefined) {
      params.push(q.endTime);
      where.push(`created_at < $${params.length}`);
    }
    const search = q.text ? await pgSearchWindow(this.pool, q.text) : null;
    if (q.text && search) {
      // The matching entries of the window first (a range of the primary key), then their threads.
      params.push(search.floor, ...textParams(q.text.text));
      const n = params.length - 2;
      where.push(`id IN (SELECT thread_id FROM journal WHERE seq >= $${n} AND ${pgTextMatch(n + 1)})`);
    }
    const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
    const n = params.length;
    const rows = (await this.pool.query<ThreadRow>(`SELECT * FROM threads ${clause} ORDER BY last_activity DESC, id DESC LIMIT $${n + 1} OFFSET $${n + 2}`, [...params, q.limit, q.offset]))
      .rows;
    return { items: rows.map(recordOf), total: await this.count(q, clause, params), ...(search ? { searchTruncated: search.truncated } : {}) };
  }

  /**
   * Matches before paging: all threads from the kept count, completed ones as the remainder of
   * the other (small) statuses counted on their index, else COUNT(*).
   */
  private async count(q: ThreadQuery, clause: string, params: readonly unknown[]): Promise<number> {
    const countWhere = async (where: string, args: readonly unknown[]) => (await this.pool.query<{ n: number }>(`SELECT COUNT(*) AS n FROM threads ${where}`, [...args])).rows[0]!.n;
    if (q.agent || q.startTime !== undefined || q.endTime !== undefined || q.text || (q.status && q.status !== 'completed')) return countWhere(clause, params);
    const all = (await this.pool.query<{ n: number }>(COUNT_SQL, ['threads'])).rows[0]!.n;
    return q.status === 'completed' ? all - (await countWhere(`WHERE status IN ('active', 'waiting', 'error', 'killed')`, [])) : all;
  }
}
