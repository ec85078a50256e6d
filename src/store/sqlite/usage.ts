import type Database from 'better-sqlite3';
import type { UsageEvent } from '../../usage/types.js';
import type { BillingSummary, DailyUsage, ThreadUsageTotals, UsageCountersRow, UsageHistoryQuery, UsageRangeQuery, UsageStore } from '../../core/usage.js';
import type { Page } from '../../core/page.js';
import { addThreadModelRows, dayRange, splitRange, zeroCounters } from '../usage-days.js';
import { usageOf, type UsageRow } from '../rows.js';
import { usageInserter } from './usage-writes.js';
import { prepared } from './prepared.js';

const FLUSH_SIZE = 500;
const FLUSH_INTERVAL_MS = 200;
/** Past this many buffered events the caller writes them itself: spend is never dropped. */
const MAX_BUFFER = 100_000;
const THREAD_CHUNK = 500;

const COUNTERS = `SUM(total_tokens) AS totalTokens, SUM(prompt_tokens) AS promptTokens, SUM(completion_tokens) AS completionTokens,
  SUM(request_count) AS requestCount, SUM(total_cost) AS totalCost, SUM(unpriced_requests) AS unpricedRequests`;

/** The same counters straight from events (the partial days at a range's edges). */
const EVENT_COUNTERS = `SUM(total_tokens) AS totalTokens, SUM(prompt_tokens) AS promptTokens, SUM(completion_tokens) AS completionTokens,
  COUNT(*) AS requestCount, TOTAL(cost) AS totalCost, SUM(cost IS NULL) AS unpricedRequests`;

type Counters = ReturnType<typeof zeroCounters>;

/**
 * Persisted usage. Events caused by a delivery are committed with that delivery's ack (by the
 * journal); the rest are buffered and written in batches in the background. Billing and daily
 * answers come from the daily rollup, plus raw events for partial days at the range edges.
 */
export class SqliteUsageStore implements UsageStore {
  private buffer: UsageEvent[] = [];
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;
  private readonly insert: (events: readonly UsageEvent[]) => void;

  constructor(
    private readonly db: Database.Database,
    private readonly onError: (err: unknown) => void,
  ) {
    this.insert = usageInserter(db);
  }

  attach(tracker: { subscribe(fn: (e: UsageEvent) => void): () => void }): void {
    this.unsubscribe?.();
    this.unsubscribe = tracker.subscribe((e) => {
      if (e.messageId !== null) return; // committed with its delivery's ack
      this.buffer.push(e);
      if (this.buffer.length >= MAX_BUFFER) this.writeBuffer();
      else if (this.buffer.length >= FLUSH_SIZE) setImmediate(() => this.writeBuffer());
      else this.timer ??= setTimeout(() => this.writeBuffer(), FLUSH_INTERVAL_MS).unref();
    });
  }

  async flush(): Promise<void> {
    this.writeBuffer();
  }

  close(): void {
    this.writeBuffer();
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  async history(q: UsageHistoryQuery): Promise<Page<UsageEvent>> {
    this.writeBuffer();
    const { clause, params } = filters(q, true);
    const rows = prepared(this.db, `SELECT * FROM usage_events ${clause} ORDER BY ts DESC, id DESC LIMIT ? OFFSET ?`).all(...params, q.limit, q.offset) as UsageRow[];
    return { items: rows.map(usageOf), total: this.count(q) };
  }

  /**
   * How many events match: whole days from the rollup (it has org, agent and model), partial
   * days at the edges counted from the events, so the total stays fast at millions of events.
   */
  private count(q: UsageHistoryQuery): number {
    if (q.threadId || q.userId) {
      // The rollup has no thread or user dimension; these filters are narrow and indexed.
      const { clause, params } = filters(q, true);
      return (prepared(this.db, `SELECT COUNT(*) AS n FROM usage_events ${clause}`).get(...params) as { n: number }).n;
    }
    const { fromDay, toDay, edges } = splitRange(q.startTime, q.endTime);
    let n = 0;
    if (fromDay === null || toDay === null || fromDay < toDay) {
      const where: string[] = [];
      const params: unknown[] = [];
      const add = (sql: string, value: unknown) => {
        where.push(sql);
        params.push(value);
      };
      if (fromDay !== null) add('day >= ?', fromDay);
      if (toDay !== null) add('day < ?', toDay);
      if (q.orgId) add('org_id = ?', q.orgId);
      if (q.agentId) add('agent_id = ?', q.agentId);
      if (q.model) add('model = ?', q.model);
      const clause = where.length ? `WHERE ${where.join(' AND ')}` : '';
      n += (prepared(this.db, `SELECT TOTAL(request_count) AS n FROM usage_daily ${clause}`).get(...params) as { n: number }).n;
    }
    for (const [start, end] of edges) {
      const { clause, params } = filters({ ...q, startTime: start, endTime: end }, true);
      n += (prepared(this.db, `SELECT COUNT(*) AS n FROM usage_events ${clause}`).get(...params) as { n: number }).n;
    }
    return n;
  }

  async billing(q: UsageRangeQuery): Promise<BillingSummary> {
    this.writeBuffer();
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
    // Whole days from the rollup...
    const { fromDay, toDay, edges } = splitRange(q.startTime, q.endTime);
    const dayWhere: string[] = [];
    const dayParams: unknown[] = [];
    if (fromDay !== null) {
      dayWhere.push('day >= ?');
      dayParams.push(fromDay);
    }
    if (toDay !== null) {
      dayWhere.push('day < ?');
      dayParams.push(toDay);
    }
    if (q.orgId) {
      dayWhere.push('org_id = ?');
      dayParams.push(q.orgId);
    }
    const clause = dayWhere.length ? `WHERE ${dayWhere.join(' AND ')}` : '';
    if (fromDay === null || toDay === null || fromDay < toDay) {
      const rows = prepared(this.db, `SELECT model, agent_id AS agentId, org_id AS orgId, ${COUNTERS} FROM usage_daily ${clause} GROUP BY model, agent_id, org_id`).all(
        ...dayParams,
      ) as Array<UsageCountersRow & { model: string; agentId: string; orgId: string }>;
      for (const r of rows) {
        add(total, r);
        add((byModel[r.model] ??= zeroCounters()), r);
        add((byAgent[r.agentId] ??= zeroCounters()), r);
        add((byOrg[r.orgId] ??= zeroCounters()), r);
      }
    }
    // ...and the partial days at the edges from the events themselves.
    for (const [start, end] of edges) {
      const { clause: c, params } = filters({ startTime: start, endTime: end, ...(q.orgId ? { orgId: q.orgId } : {}) }, false);
      const rows = prepared(this.db, `SELECT model, agent_id AS agentId, org_id AS orgId, ${EVENT_COUNTERS} FROM usage_events ${c} GROUP BY model, agent_id, org_id`).all(...params) as Array<
        UsageCountersRow & { model: string; agentId: string; orgId: string }
      >;
      for (const r of rows) {
        add(total, r);
        add((byModel[r.model] ??= zeroCounters()), r);
        add((byAgent[r.agentId] ??= zeroCounters()), r);
        add((byOrg[r.orgId] ??= zeroCounters()), r);
      }
    }
    return { orgId: q.orgId ?? null, startTime: q.startTime ?? null, endTime: q.endTime ?? null, ...total, byModel, byAgent, byOrg };
  }

  /** Whole UTC days: the range selects which days are listed; every one is present. */
  async daily(q: UsageRangeQuery): Promise<DailyUsage> {
    this.writeBuffer();
    const days = dayRange(q.startTime, q.endTime);
    const params: unknown[] = [days[0], days[days.length - 1]];
    let org = '';
    if (q.orgId) {
      org = 'AND org_id = ?';
      params.push(q.orgId);
    }
    const rows = prepared(this.db, `SELECT day, ${COUNTERS} FROM usage_daily WHERE day >= ? AND day <= ? ${org} GROUP BY day`).all(...params) as Array<UsageCountersRow & { day: string }>;
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
    this.writeBuffer();
    const out = new Map<string, ThreadUsageTotals>();
    // Chunked: SQLite caps the number of bound parameters of one statement.
    for (let i = 0; i < threadIds.length; i += THREAD_CHUNK) {
      const chunk = threadIds.slice(i, i + THREAD_CHUNK);
      const rows = this.db
        .prepare(`SELECT thread_id AS threadId, model, ${EVENT_COUNTERS} FROM usage_events WHERE thread_id IN (${chunk.map(() => '?').join(',')}) GROUP BY thread_id, model`)
        .all(...chunk) as Array<Counters & { threadId: string; model: string }>;
      addThreadModelRows(out, rows);
    }
    return out;
  }

  private writeBuffer(): void {
    if (this.timer) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.buffer.length === 0) return;
    const batch = this.buffer;
    this.buffer = [];
    try {
      this.db.transaction(() => this.insert(batch))();
    } catch (err) {
      // Kept for the next attempt rather than lost; reported so the operator sees it.
      this.buffer = batch.concat(this.buffer).slice(-MAX_BUFFER);
      this.onError(err);
    }
  }
}

function filters(q: UsageHistoryQuery | UsageRangeQuery, withListenerModel: boolean): { clause: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  if (q.startTime !== undefined) {
    where.push('ts >= ?');
    params.push(q.startTime);
  }
  if (q.endTime !== undefined) {
    where.push('ts < ?');
    params.push(q.endTime);
  }
  if (q.orgId) {
    where.push('org_id = ?');
    params.push(q.orgId);
  }
  if (withListenerModel) {
    const h = q as UsageHistoryQuery;
    if (h.agentId) {
      where.push('agent_id = ?');
      params.push(h.agentId);
    }
    if (h.model) {
      where.push('model = ?');
      params.push(h.model);
    }
    if (h.threadId) {
      where.push('thread_id = ?');
      params.push(h.threadId);
    }
    if (h.userId) {
      where.push('user_id = ?');
      params.push(h.userId);
    }
  }
  return { clause: where.length ? `WHERE ${where.join(' AND ')}` : '', params };
}
