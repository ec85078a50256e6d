import type { UsageEvent } from '../../usage/types.js';
import { usageOf, type UsageRow } from '../rows.js';
import type { BillingSummary, DailyUsage, ThreadUsageTotals, UsageCountersRow, UsageHistoryQuery, UsageRangeQuery, UsageStore } from '../../core/usage.js';
import type { Page } from '../../core/page.js';
import { addThreadModelRows, dayRange, splitRange, zeroCounters } from '../usage-days.js';
import { insertUsage } from './usage-writes.js';
import type { Reader } from './pool.js';
import type { PgWriter } from './writer.js';

const FLUSH_SIZE = 500;
const FLUSH_INTERVAL_MS = 200;
/** Past this many buffered events they are queued for writing at once: spend is never dropped. */
const MAX_BUFFER = 100_000;

const COUNTERS = `SUM(total_tokens) AS "totalTokens", SUM(prompt_tokens) AS "promptTokens", SUM(completion_tokens) AS "completionTokens",
  SUM(request_count) AS "requestCount", SUM(total_cost) AS "totalCost", SUM(unpriced_requests) AS "unpricedRequests"`;

/** The same counters straight from events (the partial days at a range's edges). */
const EVENT_COUNTERS = `COALESCE(SUM(total_tokens), 0) AS "totalTokens", COALESCE(SUM(prompt_tokens), 0) AS "promptTokens",
  COALESCE(SUM(completion_tokens), 0) AS "completionTokens", COUNT(*) AS "requestCount", COALESCE(SUM(cost), 0) AS "totalCost",
  COUNT(*) FILTER (WHERE cost IS NULL) AS "unpricedRequests"`;

type Counters = ReturnType<typeof zeroCounters>;
type Where = { clause: string; params: unknown[] };

/**
 * Persisted usage on PostgreSQL, as on SQLite: events caused by a delivery are committed with
 * its ack (by the journal); the rest are buffered and written in batches through the writer.
 * Billing, daily answers and history totals come from the daily rollup, plus raw events for
 * the partial days at a range's edges.
 */
export class PgUsageStore implements UsageStore {
  private buffer: UsageEvent[] = [];
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly pool: Reader,
    private readonly writer: PgWriter,
  ) {}

  attach(tracker: { subscribe(fn: (e: UsageEvent) => void): () => void }): void {
    this.unsubscribe?.();
    this.unsubscribe = tracker.subscribe((e) => {
      if (e.messageId !== null) return; // committed with its delivery's ack
      this.buffer.push(e);
      if (this.buffer.length >= FLUSH_SIZE) this.queueBuffer();
      else this.timer ??= setTimeout(() => this.queueBuffer(), FLUSH_INTERVAL_MS).unref();
    });
  }

  async flush(): Promise<void> {
    this.queueBuffer();
    await this.writer.flush();
  }

  /** Stops listening; what is buffered is queued, and written when the storage closes (it flushes the writer). */
  close(): void {
    this.queueBuffer();
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  async history(q: UsageHistoryQuery): Promise<Page<UsageEvent>> {
    await this.flush();
    const { clause, params } = filters(q, true);
    const n = params.length;
    const rows = (await this.pool.query<UsageRow>(`SELECT * FROM usage_events ${clause} ORDER BY ts DESC, id DESC LIMIT $${n + 1} OFFSET $${n + 2}`, [...params, q.limit, q.offset])).rows;
    return { items: rows.map(usageOf), total: await this.count(q) };
  }

  /** How many events match: whole days from the rollup, partial days at the edges from the events. */
  private async count(q: UsageHistoryQuery): Promise<number> {
    if (q.threadId || q.userId) {
      // The rollup has no thread or user dimension; these filters are narrow and indexed.
      const { clause, params } = filters(q, true);
      return (await this.pool.query<{ n: number }>(`SELECT COUNT(*) AS n FROM usage_events ${clause}`, params)).rows[0]!.n;
    }
    const { fromDay, toDay, edges } = splitRange(q.startTime, q.endTime);
    let n = 0;
    if (fromDay === null || toDay === null || fromDay < toDay) {
      const { clause, params } = dayFilters(fromDay, toDay, q.orgId, q.agentId, q.model);
      n += (await this.pool.query<{ n: number }>(`SELECT COALESCE(SUM(request_count), 0) AS n FROM usage_daily ${clause}`, params)).rows[0]!.n;
    }
    for (const [start, end] of edges) {
      const { clause, params } = filters({ ...q, startTime: start, endTime: end }, true);
      n += (await this.pool.query<{ n: number }>(`SELECT COUNT(*) AS n FROM usage_events ${clause}`, params)).rows[0]!.n;
    }
    return n;
  }

  async billing(q: UsageRangeQuery): Promise<BillingSummary> {
    await this.flush();
    const total = zeroCounters();
    const byModel: Record<string, Counters> = {};
    const byAgent: Record<string, Counters> = {};
    const byOrg: Record<string, Counters> = {};
    const add = (into: Counters, row: UsageCountersRow) => {
      into.totalTokens += row.totalTokens ?? 0;
      into.promptTokens += row.promptTokens ?? 0;
      into.completionTokens += row.completionTokens ?? 0;
      into.requestCount += row.requestCount ?? 0;
      into.totalCost += row.totalCost ?? 0;
      into.unpricedRequests += row.unpricedRequests ?? 0;
    };
    type Row = UsageCountersRow & { model: string; agentId: string; orgId: string };
    const addRows = (rows: readonly Row[]) => {
      for (const r of rows) {
        add(total, r);
        add((byModel[r.model] ??= zeroCounters()), r);
        add((byAgent[r.agentId] ??= zeroCounters()), r);
        add((byOrg[r.orgId] ??= zeroCounters()), r);
      }
    };
    // Whole days from the rollup...
    const { fromDay, toDay, edges } = splitRange(q.startTime, q.endTime);
    if (fromDay === null || toDay === null || fromDay < toDay) {
      const { clause, params } = dayFilters(fromDay, toDay, q.orgId);
      const sql = `SELECT model, agent_id AS "agentId", org_id AS "orgId", ${COUNTERS} FROM usage_daily ${clause} GROUP BY model, agent_id, org_id`;
      addRows((await this.pool.query<Row>(sql, params)).rows);
    }
    // ...and the partial days at the edges from the events themselves.
    for (const [start, end] of edges) {
      const { clause, params } = filters({ startTime: start, endTime: end, ...(q.orgId ? { orgId: q.orgId } : {}) }, false);
      const sql = `SELECT model, agent_id AS "agentId", org_id AS "orgId", ${EVENT_COUNTERS} FROM usage_events ${clause} GROUP BY model, agent_id, org_id`;
      addRows((await this.pool.query<Row>(sql, params)).rows);
    }
    return { orgId: q.orgId ?? null, startTime: q.startTime ?? null, endTime: q.endTime ?? null, ...total, byModel, byAgent, byOrg };
  }

  /** Whole UTC days: the range selects which days are listed; every one is present. */
  async daily(q: UsageRangeQuery): Promise<DailyUsage> {
    await this.flush();
    const days = dayRange(q.startTime, q.endTime);
    const params: unknown[] = [days[0], days[days.length - 1]];
    let org = '';
    if (q.orgId) {
      params.push(q.orgId);
      org = 'AND org_id = $3';
    }
    const rows = (await this.pool.query<UsageCountersRow & { day: string }>(`SELECT day, ${COUNTERS} FROM usage_daily WHERE day >= $1 AND day <= $2 ${org} GROUP BY day`, params)).rows;
    const byDay = new Map(rows.map((r) => [r.day, r]));
    const out = days.map((date) => {
      const r = byDay.get(date);
      return {
        date,
        totalTokens: r?.totalTokens ?? 0,
        promptTokens: r?.promptTokens ?? 0,
        completionTokens: r?.completionTokens ?? 0,
        requestCount: r?.requestCount ?? 0,
        totalCost: r?.totalCost ?? 0,
        unpricedRequests: r?.unpricedRequests ?? 0,
      };
    });
    return { days: out, count: out.length };
  }

  async threadUsage(threadIds: readonly string[]): Promise<Map<string, ThreadUsageTotals>> {
    await this.flush();
    const out = new Map<string, ThreadUsageTotals>();
    if (threadIds.length === 0) return out;
    const rows = (
      await this.pool.query<Counters & { threadId: string; model: string }>(
        `SELECT thread_id AS "threadId", model, ${EVENT_COUNTERS} FROM usage_events WHERE thread_id = ANY($1::text[]) GROUP BY thread_id, model`,
        [threadIds],
      )
    ).rows;
    addThreadModelRows(out, rows);
    return out;
  }

  /** Hands the buffered events to the writer (kept in order with every other write; a failed batch is reported by it). */
  private queueBuffer(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    this.writer
      .write((tx) => insertUsage(tx, batch))
      .catch(() => {
        // Kept for the next attempt rather than lost (the writer reported the failure).
        this.buffer = batch.concat(this.buffer).slice(-MAX_BUFFER);
      });
  }
}

function filters(q: UsageHistoryQuery | UsageRangeQuery, withListenerModel: boolean): Where {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (column: string, op: string, value: unknown) => {
    params.push(value);
    where.push(`${column} ${op} $${params.length}`);
  };
  if (q.startTime !== undefined) add('ts', '>=', q.startTime);
  if (q.endTime !== undefined) add('ts', '<', q.endTime);
  if (q.orgId) add('org_id', '=', q.orgId);
  if (withListenerModel) {
    const h = q as UsageHistoryQuery;
    if (h.agentId) add('agent_id', '=', h.agentId);
    if (h.model) add('model', '=', h.model);
    if (h.threadId) add('thread_id', '=', h.threadId);
    if (h.userId) add('user_id', '=', h.userId);
  }
  return { clause: where.length ? `WHERE ${where.join(' AND ')}` : '', params };
}

function dayFilters(fromDay: string | null, toDay: string | null, orgId?: string, agentId?: string, model?: string): Where {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(`${sql} $${params.length}`);
  };
  if (fromDay !== null) add('day >=', fromDay);
  if (toDay !== null) add('day <', toDay);
  if (orgId) add('org_id =', orgId);
  if (agentId) add('agent_id =', agentId);
  if (model) add('model =', model);
  return { clause: where.length ? `WHERE ${where.join(' AND ')}` : '', params };
}
