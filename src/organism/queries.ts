import type { EventBus, EventListener, ListenOptions } from '../events/bus.js';
import type { BillingSummary, DailyUsage, UsageHistoryQuery, UsageRangeQuery } from '../core/usage.js';
import type { JournalEntry, JournalQuery, JournalStats, KeptJournalStats } from '../core/journal.js';
import type { LlmCallStore, RecordedCalls } from '../core/storage.js';
import type { Page } from '../core/page.js';
import type { ThreadQuery, ThreadRecord } from '../core/thread.js';
import type { BudgetListQuery, BudgetPage } from '../usage/budgets.js';
import type { BudgetLedger } from '../core/budget.js';
import type { UsageEvent } from '../usage/types.js';
import type { OrganismStorage } from '../core/storage.js';

/** The journal as the control service reads it. */
export interface JournalQueries {
  list(query: JournalQuery): Promise<Page<JournalEntry>>;
  get(messageId: string): Promise<JournalEntry | null>;
  stats(): Promise<JournalStats>;
  /** Counts kept as entries move (no scan of the journal: for /metrics). */
  keptStats(): Promise<KeptJournalStats>;
}

/** Stored thread records (newest activity first). */
export interface ThreadQueries {
  list(query: ThreadQuery): Promise<Page<ThreadRecord>>;
}

/** Persisted usage events and their sums. */
export interface UsageQueries {
  history(query: UsageHistoryQuery): Promise<Page<UsageEvent>>;
  billing(query: UsageRangeQuery): Promise<BillingSummary>;
  daily(query: UsageRangeQuery): Promise<DailyUsage>;
}

/** Thread budgets (changing one goes through Organism.setThreadBudget). */
export interface BudgetQueries {
  /** Live budgets (their threads have not finished). */
  count(): Promise<number>;
  list(query: BudgetListQuery): Promise<BudgetPage>;
  /** The ceiling of budgets created from now on. */
  readonly defaultMaxTokens: number;
}

/** Recorded LLM and MCP tool calls. */
export interface LlmCallQueries {
  forMessage(messageId: string): Promise<RecordedCalls>;
  forThread(threadId: string, page: { limit: number; offset: number }): Promise<RecordedCalls>;
  /** One agent's calls, newest first. */
  forAgent(agent: string, page: { limit: number; offset: number }): Promise<RecordedCalls>;
}

/** The organism's events as they happen (live views). */
export interface EventQueries {
  /** Subscribes; returns the unsubscribe. */
  on(listener: EventListener, options?: ListenOptions): () => void;
}

/**
 * What the control service reads of an organism, so routes never hold the storage, the
 * ledger or the bus. Each read goes to the store at the moment it is made.
 */
export interface OrganismQueries {
  readonly journal: JournalQueries;
  readonly threads: ThreadQueries;
  readonly usage: UsageQueries;
  readonly budgets: BudgetQueries;
  readonly llmCalls: LlmCallQueries;
  readonly events: EventQueries;
}

export function organismQueries(parts: { readonly storage: OrganismStorage; readonly budgets: BudgetLedger; readonly llmCalls: LlmCallStore; readonly bus: EventBus }): OrganismQueries {
  const { storage, budgets, llmCalls, bus } = parts;
  return {
    journal: {
      list: (query) => storage.journal.list(query),
      get: (messageId) => storage.journal.get(messageId),
      stats: () => storage.journal.stats(),
      keptStats: () => storage.journal.keptStats(),
    },
    threads: { list: (query) => storage.threads.list(query) },
    usage: {
      history: (query) => storage.usage.history(query),
      billing: (query) => storage.usage.billing(query),
      daily: (query) => storage.usage.daily(query),
    },
    budgets: {
      count: async () => budgets.count(),
      list: async (query) => budgets.list(query),
      get defaultMaxTokens() {
        return budgets.defaultMaxTokens;
      },
    },
    llmCalls: {
      forMessage: (messageId) => llmCalls.forMessage(messageId),
      forThread: (threadId, page) => llmCalls.forThread(threadId, page),
      forAgent: (agent, page) => llmCalls.forAgent(agent, page),
    },
    events: { on: (listener, options) => bus.on(listener, options) },
  };
}
