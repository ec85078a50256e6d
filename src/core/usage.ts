import type { TokenUsage } from './llm.js';
import type { Page } from './page.js';

/** One LLM call, as recorded by the usage tracker: its token counts are the provider's. */
export interface UsageEvent extends TokenUsage {
  /** Unique id of the event (UUIDv7). */
  readonly id: string;
  /** Milliseconds since the epoch. */
  readonly timestamp: number;
  readonly threadId: string;
  readonly agentId: string;
  /** The delivery (message id) whose handler made the call, if any. */
  readonly messageId: string | null;
  readonly model: string;
  readonly provider: string;
  /** Time spent in the successful provider request. */
  readonly providerLatencyMs: number;
  /** Wall time of the whole call including retries and backoff waits. */
  readonly totalLatencyMs: number;
  /** USD; null when the model has no price (counted as unpriced, never 0). */
  readonly cost: number | null;
  /** The thread's metadata (orgId, userId, ...). */
  readonly metadata: Readonly<Record<string, string>>;
}

/** Called with every usage event (`UsageTracker.subscribe`). */
export type UsageSubscriber = (event: UsageEvent) => void;

/** Counters of a billing or daily bucket. */
export interface UsageCountersRow {
  readonly totalTokens: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly requestCount: number;
  readonly totalCost: number;
  readonly unpricedRequests: number;
}

export interface UsageRangeQuery {
  /** ms since the epoch, inclusive */
  readonly startTime?: number;
  /** ms since the epoch, exclusive */
  readonly endTime?: number;
  readonly orgId?: string;
}

export interface UsageHistoryQuery extends UsageRangeQuery {
  readonly agentId?: string;
  readonly model?: string;
  readonly threadId?: string;
  /** The `userId` of the metadata the message was injected with. */
  readonly userId?: string;
  readonly limit: number;
  readonly offset: number;
}

export interface BillingSummary extends UsageCountersRow {
  readonly orgId: string | null;
  readonly startTime: number | null;
  readonly endTime: number | null;
  readonly byModel: Readonly<Record<string, UsageCountersRow>>;
  readonly byAgent: Readonly<Record<string, UsageCountersRow>>;
  readonly byOrg: Readonly<Record<string, UsageCountersRow>>;
}

export interface DailyUsageRow extends UsageCountersRow {
  /** UTC day, YYYY-MM-DD */
  readonly date: string;
}

export interface DailyUsage {
  readonly days: readonly DailyUsageRow[];
  readonly count: number;
}

/** One thread's usage: its counters and the same per model. */
export interface ThreadUsageTotals extends UsageCountersRow {
  readonly threadId: string;
  readonly byModel: Readonly<Record<string, UsageCountersRow>>;
}

/** The persisted usage store: history, billing and daily usage. */
export interface UsageStore {
  /** Usage of these threads from the persisted events (threads without any are absent). */
  threadUsage(threadIds: readonly string[]): Promise<Map<string, ThreadUsageTotals>>;
  /** Subscribes to the live tracker (called once, at start). */
  attach(tracker: { subscribe(fn: (e: UsageEvent) => void): () => void }): void;
  history(q: UsageHistoryQuery): Promise<Page<UsageEvent>>;
  billing(q: UsageRangeQuery): Promise<BillingSummary>;
  daily(q: UsageRangeQuery): Promise<DailyUsage>;
  flush(): Promise<void>;
  close(): void;
}

/** Days of a daily-usage answer at most (every day present, zero-filled). */
export const MAX_DAILY_RANGE_DAYS = 366;

/** Without a start time, daily usage covers this many days up to the end. */
export const DEFAULT_DAILY_RANGE_DAYS = 30;
