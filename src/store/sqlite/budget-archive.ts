import type Database from 'better-sqlite3';
import type { BudgetArchive } from '../../usage/budget-archive.js';
import type { ThreadBudgetSnapshot } from '../../usage/budgets.js';
import { SHARE_USED } from './migrations.js';
import { prepared } from './prepared.js';

interface Row {
  threadId: string;
  maxTokens: number;
  promptTokens: number;
  completionTokens: number;
  fired: string;
}

const COLUMNS = 'thread_id AS threadId, max_tokens AS maxTokens, prompt_tokens AS promptTokens, completion_tokens AS completionTokens, fired';

/** Finished threads' budgets in the database (table thread_budgets), written at once: a crash keeps them. */
export class SqliteBudgetArchive implements BudgetArchive {
  constructor(private readonly db: Database.Database) {}

  get(threadId: string): ThreadBudgetSnapshot | null {
    const row = prepared(this.db, `SELECT ${COLUMNS} FROM thread_budgets WHERE thread_id = ?`).get(threadId) as Row | undefined;
    return row ? snapshot(row) : null;
  }

  put(s: ThreadBudgetSnapshot, live: boolean): void {
    prepared(
      this.db,
      `INSERT INTO thread_budgets (thread_id, max_tokens, prompt_tokens, completion_tokens, fired, live) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT (thread_id) DO UPDATE SET max_tokens = excluded.max_tokens, prompt_tokens = excluded.prompt_tokens,
         completion_tokens = excluded.completion_tokens, fired = excluded.fired, live = excluded.live`,
    ).run(s.threadId, s.maxTokens, s.promptTokens, s.completionTokens, JSON.stringify(s.fired), live ? 1 : 0);
  }

  revive(threadId: string): void {
    prepared(this.db, 'UPDATE thread_budgets SET live = 1 WHERE thread_id = ? AND live = 0').run(threadId);
  }

  clearLive(): void {
    prepared(this.db, 'UPDATE thread_budgets SET live = 0 WHERE live = 1').run();
  }

  finished(page: { limit: number; offset: number }): { items: ThreadBudgetSnapshot[]; total: number } {
    const rows = prepared(this.db, `SELECT ${COLUMNS} FROM thread_budgets WHERE live = 0 ORDER BY ${SHARE_USED} DESC, thread_id LIMIT ? OFFSET ?`).all(page.limit, page.offset) as Row[];
    const { n } = prepared(this.db, 'SELECT COUNT(*) AS n FROM thread_budgets WHERE live = 0').get() as { n: number };
    return { items: rows.map(snapshot), total: n };
  }
}

function snapshot(row: Row): ThreadBudgetSnapshot {
  let fired: unknown;
  try {
    fired = JSON.parse(row.fired);
  } catch {
    fired = [];
  }
  const { fired: _, ...figures } = row;
  return { ...figures, fired: Array.isArray(fired) ? fired.filter((t): t is number => typeof t === 'number') : [] };
}
