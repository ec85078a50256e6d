import type { ThreadBudgetSnapshot } from './budgets.js';

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

/** Highest share of the ceiling used first, then thread id (the order of every budget list). */
export function byShareUsed(a: { threadId: string; maxTokens: number; totalTokens: number }, b: { threadId: string; maxTokens: number; totalTokens: number }): number {
  return share(b) - share(a) || (a.threadId < b.threadId ? -1 : a.threadId > b.threadId ? 1 : 0);
}

function share(x: { maxTokens: number; totalTokens: number }): number {
  return x.maxTokens > 0 ? x.totalTokens / x.maxTokens : 0;
}

const MAX_KEPT = 100_000;

/**
 * The archive of an organism without a data directory: it lasts as long as the process and
 * holds the latest 100,000 finished threads' budgets (the oldest go first).
 */
export class MemoryBudgetArchive implements BudgetArchive {
  private readonly rows = new Map<string, { s: ThreadBudgetSnapshot; live: boolean }>();

  get(threadId: string): ThreadBudgetSnapshot | null {
    return this.rows.get(threadId)?.s ?? null;
  }

  put(s: ThreadBudgetSnapshot, live: boolean): void {
    this.rows.delete(s.threadId); // re-inserted last: a Map iterates in insertion order
    this.rows.set(s.threadId, { s: { ...s, fired: [...s.fired] }, live });
    if (this.rows.size > MAX_KEPT) this.rows.delete(this.rows.keys().next().value!);
  }

  revive(threadId: string): void {
    const row = this.rows.get(threadId);
    if (row) row.live = true;
  }

  clearLive(): void {
    for (const row of this.rows.values()) row.live = false;
  }

  finished(page: { limit: number; offset: number }): { items: ThreadBudgetSnapshot[]; total: number } {
    const all = [...this.rows.values()]
      .filter((r) => !r.live)
      .map((r) => r.s)
      .sort((a, b) => byShareUsed(totals(a), totals(b)));
    return { items: all.slice(page.offset, page.offset + page.limit), total: all.length };
  }
}

function totals(s: ThreadBudgetSnapshot) {
  return { threadId: s.threadId, maxTokens: s.maxTokens, totalTokens: s.promptTokens + s.completionTokens };
}
