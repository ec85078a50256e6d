/** Thread budgets: what a budget is, the ledger that keeps and spends them, and where they are saved. */

/** How close a thread is to its token budget: 75 % warning, 90 % critical, 95 % final. */
export type BudgetSeverity = 'warning' | 'critical' | 'final';

/** A thread's token budget and what it has used. */
export interface ThreadBudgetInfo {
  readonly threadId: string;
  readonly maxTokens: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  /** Tokens held by calls in flight. */
  readonly reservedTokens: number;
  readonly remaining: number;
  /** totalTokens / maxTokens * 100, one decimal; 0 when maxTokens <= 0. */
  readonly percentUsed: number;
  readonly isExhausted: boolean;
}

/** A thread's usage crossed a budget threshold (sent to the agent as a BudgetWarning). */
export interface BudgetThresholdEvent {
  readonly threadId: string;
  readonly agent: string;
  readonly severity: BudgetSeverity;
  readonly threshold: 75 | 90 | 95;
  readonly percentUsed: number;
  readonly tokensUsed: number;
  readonly tokensRemaining: number;
  readonly maxTokens: number;
  readonly message: string;
}

/** Tokens held for one LLM call until its usage is known. */
export interface Reservation {
  readonly id: number;
  readonly threadId: string;
  readonly tokens: number;
}

/** What is persisted per thread (and restored at start). */
export interface ThreadBudgetSnapshot {
  readonly threadId: string;
  readonly maxTokens: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly fired: readonly number[];
}

/** A budget as the API shows it: `active` false once its thread has finished. */
export type BudgetView = ThreadBudgetInfo & { readonly active: boolean };

/** Which budgets a list holds: live (the thread has not finished), finished, or both. */
export type BudgetState = 'live' | 'finished' | 'all';

/** Which page of budgets `BudgetManager.list` returns. */
export interface BudgetListQuery {
  readonly state: BudgetState;
  readonly limit: number;
  readonly offset: number;
}

/** One page of budgets. */
export interface BudgetPage {
  readonly items: BudgetView[];
  /** Budgets in that state before paging. */
  readonly total: number;
}

/**
 * Where the embedded ledger (BudgetManager) keeps the budgets of threads that have finished:
 * a thread's budget is its whole life's, so an inject into a finished thread continues from
 * these figures. Synchronous: a reservation recalls a finished thread's budget at once (the
 * SQLite store answers synchronously; PostgreSQL keeps every budget as a row instead).
 * Live budgets are in the ledger's memory; a row flagged live is one that runs again (its
 * figures there are those it had when it last finished).
 */
export interface BudgetArchive {
  get(threadId: string): ThreadBudgetSnapshot | null;
  /** Keeps a budget's figures; `live: false` once its thread has finished. */
  put(s: ThreadBudgetSnapshot, live: boolean): void;
  /** The thread runs again (its budget is back in the ledger's memory). */
  revive(threadId: string): void;
  /** At boot, before the live budgets are restored: nothing is live yet. */
  clearLive(): void;
  /** Finished budgets, highest share of the ceiling used first, then by thread id. */
  finished(page: { limit: number; offset: number }): { items: ThreadBudgetSnapshot[]; total: number };
}

/**
 * Where thread budgets are kept and spent. The embedded implementation is BudgetManager (in
 * memory, saved as snapshots: one process owns the organism); the shared one keeps each
 * budget as a database row that every process reserves against atomically
 * (store/postgres/budget-ledger.ts). Every answer is a promise (the embedded one resolves at
 * once: see localBudgetLedger in usage/budgets.ts); the rules (when a
 * reservation is refused, thresholds once each, ceiling changes, a budget kept for the
 * thread's whole life) are BudgetManager's.
 */
export interface BudgetLedger {
  /** The ceiling of budgets created from now on (a reload changes it through changeDefault). */
  defaultMaxTokens: number;
  /** Whether the thread has a budget, live or finished. */
  has(threadId: string): Promise<boolean>;
  /** The thread's budget, live or finished (`active: false`). */
  get(threadId: string): Promise<BudgetView | null>;
  /** Budgets in a state, highest share of the ceiling used first. */
  list(query: BudgetListQuery): Promise<BudgetPage>;
  /** Live budgets (their threads have not finished). */
  count(): Promise<number>;
  headroom(threadId: string): Promise<number>;
  /** Throws (or rejects with) BUDGET_EXHAUSTED when `tokens` could take the thread past its ceiling. */
  reserve(threadId: string, tokens: number): Promise<Reservation>;
  /** Real usage replaces the reservation; returns the thresholds this call crossed (also told to onThreshold listeners). */
  settle(r: Reservation, usage: { promptTokens: number; completionTokens: number }, agent: string): Promise<BudgetThresholdEvent[]>;
  cancel(r: Reservation): Promise<void>;
  /**
   * The default ceiling changed (a reload of `max_tokens_per_thread`): threads whose budget is
   * created from now on get it, and so does every live budget whose ceiling is the previous
   * default, its spend kept (one the operator set to another value keeps it). Resolves to how
   * many live budgets took it.
   */
  changeDefault(maxTokens: number): Promise<number>;
  /** A finished thread's budget takes the ceiling and stays finished. */
  setCeiling(threadId: string, maxTokens: number, options?: { create?: boolean }): Promise<BudgetView>;
  /**
   * The thread has finished (completed, error, killed): its budget is no longer live but is
   * kept, spend and ceiling, for the thread's next inject. Nobody waits for it: a database
   * ledger logs its own failures.
   */
  finish(threadId: string): void;
  onThreshold(fn: (e: BudgetThresholdEvent) => void): () => void;
  /** Stops background work (a shared ledger's lease renewal); the embedded one has none. */
  close(): Promise<void>;
}

/** Makes a store's ledger (the organism passes its default ceiling and where listener failures go). */
export type BudgetLedgerFactory = (options: { defaultMaxTokens: number; onListenerError?: (err: unknown) => void }) => BudgetLedger;

/** Where an embedded organism saves its budgets (the shared store keeps them as ledger rows instead). */
export interface BudgetSnapshotStore {
  /** The budgets saved last (live ones: finished threads' are in the archive). */
  load(): Promise<ThreadBudgetSnapshot[]>;
  save(snapshots: ThreadBudgetSnapshot[]): Promise<void>;
  /** Finished threads' budgets. */
  readonly archive: BudgetArchive;
}
