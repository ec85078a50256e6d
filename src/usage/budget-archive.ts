import type { BudgetArchive, ThreadBudgetSnapshot } from '../core/budget.js';

export type { BudgetArchive } from '../core/budget.js';

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
