import type { OrganismError } from '../errors/catalogue.js';
import type { BudgetLedgerFactory, BudgetSnapshotStore } from './budget.js';
import type { Journal } from './journal.js';
import type { CallRecordSink, LlmCallRecord, ToolCallRecord } from './llm.js';
import type { ThreadErasure, ThreadHold, ThreadStore } from './thread.js';
import type { UsageStore } from './usage.js';
import type { DeliveryQueue } from './queue.js';
import type { ScheduleStore } from './schedule.js';
import type { WebhookStore } from './webhook.js';

/** The LLM calls and MCP tool calls of one delivery or thread (oldest first) or agent (newest first). */
export interface RecordedCalls {
  readonly calls: readonly LlmCallRecord[];
  /** Tool calls requested by the calls above. */
  readonly tools: readonly ToolCallRecord[];
  /** Calls matching before paging (threads and agents page; a delivery's are all returned). */
  readonly total: number;
}

/**
 * Every LLM call and MCP tool call, kept with the journal's retention: a call goes when its
 * delivery's journal entry is pruned (or, in memory, evicted).
 */
export interface LlmCallStore extends CallRecordSink {
  forMessage(messageId: string): Promise<RecordedCalls>;
  forThread(threadId: string, page: { limit: number; offset: number }): Promise<RecordedCalls>;
  /** One agent's calls across its threads, newest first (failed attempts included). */
  forAgent(agent: string, page: { limit: number; offset: number }): Promise<RecordedCalls>;
  /** A thread's calls that carry a request hash (what a fork replays from), oldest first, at most `limit`. */
  hashed(threadId: string, limit: number): Promise<LlmCallRecord[]>;
}

/**
 * Operator decisions that must outlive the process: paused agents (finished threads' budgets are
 * the budget ledger's).
 * The list of paused agents is answered from memory (a network store's: what it loaded at open
 * and wrote since); a change resolves once persisted (an embedded store writes it before
 * `setPaused` returns, so a failed write throws at once).
 */
export interface OperatorStateStore {
  /** The paused agents (a network store answers from what it loaded at open and wrote since). */
  pausedAgents(): readonly string[];
  /** Persisted before it returns, or before its promise resolves (a crash right after a pause keeps the agent paused). */
  setPaused(agent: string, paused: boolean): Promise<void>;
  /**
   * Re-reads what other processes may have changed (a database shared by several processes);
   * omitted where this process is the only writer.
   */
  refresh?(): Promise<void>;
  /** A thread's hold row (held, or resumed and kept for the loop breaker), read from the store (another process may have changed it). */
  threadHold(threadId: string): Promise<ThreadHold | null>;
  /** The threads held now, oldest hold first. */
  heldThreads(): Promise<readonly ThreadHold[]>;
  /** Writes a thread's hold row (insert or replace); resolves once persisted. */
  setThreadHold(hold: ThreadHold): Promise<void>;
}

/**
 * Erasure (issue 30): a thread's payloads, recorded LLM and tool calls and recorded events are
 * replaced by tombstones in one transaction; the journal entries keep their states, attempts
 * and times, usage events (numbers) and budgets stay as they are, so usage and billing totals
 * are exact; the erasure itself is recorded.
 */
export interface ThreadEraser {
  erase(threadId: string, by: string, at: number): Promise<ThreadErasure>;
  /** The thread's erasure, if it was erased. */
  erasureOf(threadId: string): Promise<ThreadErasure | null>;
}

/** What is wrong with the data directory now, as /health reports it. */
export interface StorageProblem {
  /** degraded: passes by itself (space freed); unhealthy: needs the operator (deleted, damaged). */
  readonly status: 'degraded' | 'unhealthy';
  readonly error: OrganismError;
}

/**
 * Where the organism keeps its journal, threads, usage and budgets. Every member is present:
 * completeStorage (store/complete.ts) gives what a store lacks its in-memory or do-nothing
 * default, so the organism never asks whether a store has one.
 */
export interface OrganismStorage {
  readonly journal: Journal;
  readonly threads: ThreadStore;
  readonly usage: UsageStore;
  /** Recorded LLM and MCP tool calls (default: in memory). */
  readonly llmCalls: LlmCallStore;
  /** Where the embedded budget ledger saves its budgets (default: nothing saved, finished threads' budgets in memory). */
  readonly budgets: BudgetSnapshotStore;
  /**
   * A shared store's budget ledger (every process reserves against the same rows); null:
   * budgets live in this process (BudgetManager) and are saved through `budgets`.
   */
  readonly budgetLedger: BudgetLedgerFactory | null;
  /** Paused agents and held threads (default: in memory, as long as the process lives). */
  readonly operator: OperatorStateStore;
  /** Erases threads (default: the memory stores' own erasure). */
  readonly eraser: ThreadEraser;
  /** Schedules added at run time and every schedule's claimed ticks (default: in memory). */
  readonly schedules: ScheduleStore;
  /** Journaled webhook deliveries (default: in memory). */
  readonly webhooks: WebhookStore;
  /** What is wrong with the data directory now (default: nothing can be). */
  problem(): StorageProblem | null;
  /** Where messages wait for delivery (default: the embedded queue over `journal`; a clustered store brings its claim queue). */
  readonly queue: DeliveryQueue;
  /** Called once if the store is deleted or replaced under the running process (default: it cannot be). */
  onLost(listener: (error: OrganismError) => void): void;
  /** Resolves once every write queued so far has committed (default: writes commit as they are made). */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** What a store must have; completeStorage supplies the rest. */
export type StorageParts = Pick<OrganismStorage, 'journal' | 'threads' | 'usage'> &
  Partial<Omit<OrganismStorage, 'journal' | 'threads' | 'usage' | 'close'>> & { close(): void | Promise<void> };
