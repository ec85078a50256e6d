import type { BudgetThresholdEvent, Reservation, ThreadBudgetInfo } from './budgets.js';

/** A value, or its promise: the embedded ledger answers at once, a database ledger later. */
export type Maybe<T> = T | Promise<T>;

/**
 * Where thread budgets are kept and spent. The embedded implementation is BudgetManager (in
 * memory, saved as snapshots: one process owns the organism); the shared one keeps each
 * budget as a database row that every process reserves against atomically
 * (store/postgres/budget-ledger.ts). Callers await what may be a promise; the rules (when a
 * reservation is refused, thresholds once each, ceiling changes) are BudgetManager's.
 */
export interface BudgetLedger {
  /** The ceiling of budgets created from now on (a reload may change it). */
  defaultMaxTokens: number;
  has(threadId: string): Maybe<boolean>;
  get(threadId: string): Maybe<ThreadBudgetInfo | null>;
  /** Live budgets, highest percentUsed first. */
  list(): Maybe<ThreadBudgetInfo[]>;
  count(): Maybe<number>;
  headroom(threadId: string): Maybe<number>;
  /** Throws (or rejects with) BUDGET_EXHAUSTED when `tokens` could take the thread past its ceiling. */
  reserve(threadId: string, tokens: number): Maybe<Reservation>;
  /** Real usage replaces the reservation; returns the thresholds this call crossed (also told to onThreshold listeners). */
  settle(r: Reservation, usage: { promptTokens: number; completionTokens: number }, agent: string): Maybe<BudgetThresholdEvent[]>;
  cancel(r: Reservation): Maybe<void>;
  setCeiling(threadId: string, maxTokens: number, options?: { create?: boolean }): Maybe<ThreadBudgetInfo>;
  /**
   * The thread has ended: its budget goes (release listeners hear its final figures). Nobody
   * waits for it: a database ledger logs its own failures.
   */
  release(threadId: string): void;
  onRelease(fn: (final: ThreadBudgetInfo) => void): () => void;
  onThreshold(fn: (e: BudgetThresholdEvent) => void): () => void;
  /** Stops background work (a shared ledger's lease renewal); the embedded one has none. */
  close?(): Maybe<void>;
}

/** Makes a store's ledger (the organism passes its default ceiling and where listener failures go). */
export type BudgetLedgerFactory = (options: { defaultMaxTokens: number; onListenerError?: (err: unknown) => void }) => BudgetLedger;
