import type { BudgetListQuery, BudgetPage, BudgetThresholdEvent, BudgetView, Reservation } from '../usage/budgets.js';

/** A value, or its promise: the embedded ledger answers at once, a database ledger later. */
export type Maybe<T> = T | Promise<T>;

/**
 * Where thread budgets are kept and spent. The embedded implementation is BudgetManager (in
 * memory, saved as snapshots: one process owns the organism); the shared one keeps each
 * budget as a database row that every process reserves against atomically
 * (store/postgres/budget-ledger.ts). Callers await what may be a promise; the rules (when a
 * reservation is refused, thresholds once each, ceiling changes, a budget kept for the
 * thread's whole life) are BudgetManager's.
 */
export interface BudgetLedger {
  /** The ceiling of budgets created from now on (a reload may change it). */
  defaultMaxTokens: number;
  /** Whether the thread has a budget, live or finished. */
  has(threadId: string): Maybe<boolean>;
  /** The thread's budget, live or finished (`active: false`). */
  get(threadId: string): Maybe<BudgetView | null>;
  /** Budgets in a state, highest share of the ceiling used first. */
  list(query: BudgetListQuery): Maybe<BudgetPage>;
  /** Live budgets (their threads have not finished). */
  count(): Maybe<number>;
  headroom(threadId: string): Maybe<number>;
  /** Throws (or rejects with) BUDGET_EXHAUSTED when `tokens` could take the thread past its ceiling. */
  reserve(threadId: string, tokens: number): Maybe<Reservation>;
  /** Real usage replaces the reservation; returns the thresholds this call crossed (also told to onThreshold listeners). */
  settle(r: Reservation, usage: { promptTokens: number; completionTokens: number }, agent: string): Maybe<BudgetThresholdEvent[]>;
  cancel(r: Reservation): Maybe<void>;
  /** A finished thread's budget takes the ceiling and stays finished. */
  setCeiling(threadId: string, maxTokens: number, options?: { create?: boolean }): Maybe<BudgetView>;
  /**
   * The thread has finished (completed, error, killed): its budget is no longer live but is
   * kept, spend and ceiling, for the thread's next inject. Nobody waits for it: a database
   * ledger logs its own failures.
   */
  finish(threadId: string): void;
  onThreshold(fn: (e: BudgetThresholdEvent) => void): () => void;
  /** Stops background work (a shared ledger's lease renewal); the embedded one has none. */
  close?(): Maybe<void>;
}

/** Makes a store's ledger (the organism passes its default ceiling and where listener failures go). */
export type BudgetLedgerFactory = (options: { defaultMaxTokens: number; onListenerError?: (err: unknown) => void }) => BudgetLedger;
