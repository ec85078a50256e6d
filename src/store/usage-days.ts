import { zeroCounters } from '../usage/tracker.js';
import type { ThreadUsageTotals } from '../core/usage.js';
import { DEFAULT_DAILY_RANGE_DAYS, MAX_DAILY_RANGE_DAYS } from '../core/usage.js';

const DAY_MS = 86_400_000;

/** The UTC day (YYYY-MM-DD) of a timestamp. */
export function utcDay(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/**
 * The UTC days a daily-usage query covers: from the start's day to the day before the
 * (exclusive) end — or, without an end, today; without a start, DEFAULT_DAILY_RANGE_DAYS days.
 * Longer ranges are cut to the last MAX_DAILY_RANGE_DAYS days.
 */
export function dayRange(startTime: number | undefined, endTime: number | undefined, now = Date.now()): string[] {
  const endDay = Math.floor(((endTime ?? now + 1) - 1) / DAY_MS);
  let startDay = startTime !== undefined ? Math.floor(startTime / DAY_MS) : endDay - DEFAULT_DAILY_RANGE_DAYS + 1;
  if (endDay - startDay + 1 > MAX_DAILY_RANGE_DAYS) startDay = endDay - MAX_DAILY_RANGE_DAYS + 1;
  const days: string[] = [];
  for (let d = startDay; d <= endDay; d++) days.push(utcDay(d * DAY_MS));
  return days;
}

/**
 * Splits [start, end) into whole UTC days [fromDay, toDay) (answered by the rollup) and the
 * partial-day edges (answered by raw events).
 */
export function splitRange(start: number | undefined, end: number | undefined) {
  const edges: Array<[number, number]> = [];
  let fromDay: string | null = null;
  let toDay: string | null = null;
  let firstWhole = start;
  let lastWhole = end;
  if (start !== undefined) {
    firstWhole = Math.ceil(start / DAY_MS) * DAY_MS;
    fromDay = utcDay(firstWhole);
  }
  if (end !== undefined) {
    lastWhole = Math.floor(end / DAY_MS) * DAY_MS;
    toDay = utcDay(lastWhole);
  }
  if (start !== undefined && end !== undefined && firstWhole! > lastWhole!) {
    // The whole range lies within one day.
    return { fromDay: '9999-12-31', toDay: '0000-01-01', edges: [[start, end] as [number, number]] };
  }
  if (start !== undefined && firstWhole! > start) edges.push([start, firstWhole!]);
  if (end !== undefined && lastWhole! < end) edges.push([lastWhole!, end]);
  return { fromDay, toDay, edges };
}

export { addUsage as addEvent, zeroCounters } from '../usage/tracker.js';

type Counters = ReturnType<typeof zeroCounters>;

/** Adds rows of `GROUP BY thread_id, model` to each thread's totals and its per-model counters. */
export function addThreadModelRows(out: Map<string, ThreadUsageTotals>, rows: Iterable<Counters & { threadId: string; model: string }>): void {
  for (const { threadId, model, ...counters } of rows) {
    let t = out.get(threadId) as (Counters & { threadId: string; byModel: Record<string, Counters> }) | undefined;
    if (!t) out.set(threadId, (t = { threadId, ...zeroCounters(), byModel: {} }));
    t.byModel[model] = counters;
    t.totalTokens += counters.totalTokens;
    t.promptTokens += counters.promptTokens;
    t.completionTokens += counters.completionTokens;
    t.requestCount += counters.requestCount;
    t.totalCost += counters.totalCost;
    t.unpricedRequests += counters.unpricedRequests;
  }
}
