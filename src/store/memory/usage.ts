import type { UsageEvent } from '../../usage/types.js';
import type { BillingSummary, DailyUsage, ThreadUsageTotals, UsageHistoryQuery, UsageRangeQuery, UsageStore } from '../../core/usage.js';
import type { Page } from '../../core/page.js';
import { addEvent, dayRange, utcDay, zeroCounters } from '../usage-days.js';

/** Usage events in memory (bounded: the oldest go first), with the same queries as SQLite. */
export class MemoryUsageStore implements UsageStore {
  private events: UsageEvent[] = [];
  private unsubscribe: (() => void) | null = null;

  constructor(private readonly maxEvents = 1_000_000) {}

  attach(tracker: { subscribe(fn: (e: UsageEvent) => void): () => void }): void {
    this.unsubscribe?.();
    this.unsubscribe = tracker.subscribe((e) => this.add(e));
  }

  add(e: UsageEvent): void {
    this.events.push(e);
    if (this.events.length > this.maxEvents) this.events = this.events.slice(-Math.floor(this.maxEvents * 0.9));
  }

  async history(q: UsageHistoryQuery): Promise<Page<UsageEvent>> {
    const matches = this.inRange(q).filter(
      (e) => (!q.agentId || e.agentId === q.agentId) && (!q.model || e.model === q.model) && (!q.threadId || e.threadId === q.threadId) && (!q.userId || e.metadata['userId'] === q.userId),
    );
    matches.sort((a, b) => b.timestamp - a.timestamp || (a.id < b.id ? 1 : -1));
    return { items: matches.slice(q.offset, q.offset + q.limit), total: matches.length };
  }

  async billing(q: UsageRangeQuery): Promise<BillingSummary> {
    const total = zeroCounters();
    const byModel: Record<string, ReturnType<typeof zeroCounters>> = {};
    const byAgent: Record<string, ReturnType<typeof zeroCounters>> = {};
    const byOrg: Record<string, ReturnType<typeof zeroCounters>> = {};
    for (const e of this.inRange(q)) {
      addEvent(total, e);
      addEvent((byModel[e.model] ??= zeroCounters()), e);
      addEvent((byAgent[e.agentId] ??= zeroCounters()), e);
      addEvent((byOrg[e.metadata['orgId'] ?? ''] ??= zeroCounters()), e);
    }
    return { orgId: q.orgId ?? null, startTime: q.startTime ?? null, endTime: q.endTime ?? null, ...total, byModel, byAgent, byOrg };
  }

  async daily(q: UsageRangeQuery): Promise<DailyUsage> {
    const days = dayRange(q.startTime, q.endTime);
    const byDay = new Map(days.map((d) => [d, zeroCounters()]));
    for (const e of this.inRange(q)) {
      const c = byDay.get(utcDay(e.timestamp));
      if (c) addEvent(c, e);
    }
    const rows = days.map((date) => ({ date, ...byDay.get(date)! }));
    return { days: rows, count: rows.length };
  }

  async threadUsage(threadIds: readonly string[]): Promise<Map<string, ThreadUsageTotals>> {
    const wanted = new Set(threadIds);
    const out = new Map<string, ThreadUsageTotals & { byModel: Record<string, ReturnType<typeof zeroCounters>> }>();
    for (const e of this.events) {
      if (!wanted.has(e.threadId)) continue;
      let t = out.get(e.threadId);
      if (!t) out.set(e.threadId, (t = { threadId: e.threadId, ...zeroCounters(), byModel: {} }));
      addEvent(t, e);
      addEvent((t.byModel[e.model] ??= zeroCounters()), e);
    }
    return out;
  }

  async flush(): Promise<void> {}

  close(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
  }

  private inRange(q: UsageRangeQuery): UsageEvent[] {
    return this.events.filter(
      (e) => (q.startTime === undefined || e.timestamp >= q.startTime) && (q.endTime === undefined || e.timestamp < q.endTime) && (!q.orgId || e.metadata['orgId'] === q.orgId),
    );
  }
}
