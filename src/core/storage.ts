import type { OrganismError } from '../errors/catalogue.js';
import type { CallRecordSink, LlmCallRecord, ToolCallRecord } from '../llm/call-record.js';
import type { DispatchHook, FailureReason } from './delivery.js';
import type { UsageEvent } from '../usage/types.js';
import type { Message } from './message.js';

export type DeliveryState = 'PENDING' | 'DISPATCHED' | 'ACKED' | 'FAILED';
export const DELIVERY_STATES: readonly DeliveryState[] = ['PENDING', 'DISPATCHED', 'ACKED', 'FAILED'];

/** A journal entry: the message plus its delivery record. Also serves as the message history. */
export interface JournalEntry {
  readonly message: Message;
  readonly state: DeliveryState;
  readonly attempts: number;
  readonly createdAt: number;
  readonly dispatchedAt: number | null;
  readonly ackedAt: number | null;
  readonly failedAt: number | null;
  readonly failureReason: FailureReason | null;
  readonly error: string | null;
}

export interface Page<T> {
  readonly items: readonly T[];
  readonly total: number;
}

export interface JournalQuery {
  readonly state?: DeliveryState;
  readonly threadId?: string;
  /** Matches sender or receiver. */
  readonly agent?: string;
  readonly limit: number;
  readonly offset: number;
  /** Default newest first. */
  readonly order?: 'newest' | 'oldest';
}

export interface RecoveryReport {
  readonly bootId: string;
  readonly at: number;
  readonly durationMs: number;
  readonly pending: number;
  readonly redelivered: number;
  readonly failedMaxAttempts: number;
  /** Agents the operator had paused, paused again at boot (set by the organism, not the journal). */
  readonly pausedAgents?: readonly string[];
}

export interface JournalStats {
  readonly counts: Readonly<Record<DeliveryState, number>>;
  /** Age in ms of the oldest PENDING entry, null when none. */
  readonly oldestPendingAgeMs: number | null;
  readonly lastRecovery: RecoveryReport | null;
}

/** Journal figures that cost no scan (what /metrics reads on every scrape). */
export interface KeptJournalStats {
  readonly counts: Readonly<Record<DeliveryState, number>>;
  /** Age in ms of the oldest PENDING entry, null when none. */
  readonly oldestPendingAgeMs: number | null;
}

/** What recovery hands the pump to re-enqueue, in original order. */
export interface RecoveredMessages {
  readonly messages: readonly Message[];
  readonly report: RecoveryReport;
}

/**
 * The message journal: a DispatchHook that also answers queries. The in-memory journal is
 * the default; the SQLite one (store/sqlite) makes it durable.
 */
export interface Journal extends DispatchHook {
  recover(bootId: string, maxAttempts: number): Promise<RecoveredMessages>;
  get(messageId: string): Promise<JournalEntry | null>;
  list(query: JournalQuery): Promise<Page<JournalEntry>>;
  stats(): Promise<JournalStats>;
  /** Counts kept as entries move (no scan of the journal). */
  keptStats(): Promise<KeptJournalStats>;
  /** FAILED -> PENDING with a new attempt; returns the message to enqueue. */
  redeliver(messageId: string): Promise<Message>;
  /** Messages of a thread (oldest first) that involve `agent` (sender or receiver), last `limit`. */
  threadHistory(threadId: string, agent: string, limit: number): Promise<readonly Message[]>;
}

export type ThreadStatus = 'active' | 'completed' | 'error' | 'killed';
export const THREAD_STATUSES: readonly ThreadStatus[] = ['active', 'completed', 'error', 'killed'];

export interface ThreadRecord {
  readonly id: string;
  readonly status: ThreadStatus;
  /** In order of first appearance. */
  readonly participants: readonly string[];
  readonly messageCount: number;
  readonly createdAt: number;
  readonly lastActivity: number;
  readonly error: string | null;
  readonly metadata: Readonly<Record<string, string>>;
}

export interface ThreadQuery {
  readonly status?: ThreadStatus;
  readonly agent?: string;
  readonly limit: number;
  readonly offset: number;
}

/** Persists thread records (newest activity first in lists). */
export interface ThreadStore {
  put(thread: ThreadRecord): void;
  /**
   * Shared mode (a store several processes write): records `thread` killed, changing only its
   * status and last activity when it is stored (its counts and participants are the store's,
   * kept by every process's transactions); resolves once committed.
   */
  kill?(thread: ThreadRecord): Promise<void>;
  get(id: string): Promise<ThreadRecord | null>;
  /** The stored records of these ids (missing ones are absent from the map), in one read. */
  getMany(ids: readonly string[]): Promise<Map<string, ThreadRecord>>;
  list(query: ThreadQuery): Promise<Page<ThreadRecord>>;
}

export type { FailureReason };

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

/** The LLM calls and MCP tool calls of one delivery or thread, oldest first. */
export interface RecordedCalls {
  readonly calls: readonly LlmCallRecord[];
  /** Tool calls requested by the calls above. */
  readonly tools: readonly ToolCallRecord[];
  /** Calls matching before paging (threads page; a delivery's are all returned). */
  readonly total: number;
}

/**
 * Every LLM call and MCP tool call, kept with the journal's retention: a call goes when its
 * delivery's journal entry is pruned (or, in memory, evicted).
 */
export interface LlmCallStore extends CallRecordSink {
  forMessage(messageId: string): Promise<RecordedCalls>;
  forThread(threadId: string, page: { limit: number; offset: number }): Promise<RecordedCalls>;
}

/**
 * Operator decisions that must outlive the process: paused agents (finished threads' budgets are
 * the budget ledger's).
 * An embedded store answers at once; a network database (PostgreSQL) returns promises for what
 * it cannot answer or persist synchronously, and the caller awaits them where it matters.
 */
export interface OperatorStateStore {
  /** The paused agents (a network store answers from what it loaded at open and wrote since). */
  pausedAgents(): readonly string[];
  /** Persisted before it returns, or before its promise resolves (a crash right after a pause keeps the agent paused). */
  setPaused(agent: string, paused: boolean): void | Promise<void>;
  /**
   * Re-reads what other processes may have changed (a database shared by several processes);
   * omitted where this process is the only writer.
   */
  refresh?(): Promise<void>;
}

/** What is wrong with the data directory now, as /health reports it. */
export interface StorageProblem {
  /** degraded: passes by itself (space freed); unhealthy: needs the operator (deleted, damaged). */
  readonly status: 'degraded' | 'unhealthy';
  readonly error: OrganismError;
}

/** A process of a shared organism (a row of PostgreSQL's `workers`), as GET /api/v1/workers shows it. */
export interface WorkerRecord {
  readonly id: string;
  /** `serve` (the control API, with or without handlers) or `worker` (handlers only). */
  readonly kind: 'serve' | 'worker';
  readonly name: string;
  readonly host: string;
  readonly pid: number;
  readonly handlers: boolean;
  readonly configHash: string;
  readonly startedAt: number;
  readonly heartbeatAt: number;
  readonly stoppedAt: number | null;
  /** Heartbeating within its lease and not stopped: its claims are its own. */
  readonly alive: boolean;
  /** `--concurrency`; null: the organism-wide limit. */
  readonly concurrency: number | null;
  readonly inFlight: number;
  readonly leaseMs: number;
}
