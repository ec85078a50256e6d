import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DATABASE_FILE, openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import { MIGRATIONS } from '../../src/store/sqlite/migrations.js';
import { BudgetManager } from '../../src/usage/budgets.js';

const opened: SqliteStorage[] = [];
afterEach(() => {
  while (opened.length) opened.pop()!.close();
});

describe("SQLite: finished threads' budgets", () => {
  it('an upgrade keeps the budgets of threads that finished before it: their ceiling, their spend from the usage events, their thresholds', () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-budgets-'));
    const db = new Database(path.join(dataDir, DATABASE_FILE));
    // The schema before thread budgets were kept for a thread's life.
    const before = MIGRATIONS.findIndex((m) => m.includes('CREATE TABLE thread_budgets'));
    for (let v = 0; v < before; v++) db.exec(MIGRATIONS[v]!);
    db.pragma(`user_version = ${before}`);
    db.prepare("INSERT INTO thread_ceilings (thread_id, max_tokens) VALUES ('ended', 1000), ('quiet', 300)").run();
    const event = db.prepare(`INSERT INTO usage_events (id, ts, thread_id, agent_id, model, provider, prompt_tokens, completion_tokens, total_tokens,
      provider_latency_ms, total_latency_ms, org_id, metadata) VALUES (?, 0, ?, 'a', 'm', 'p', ?, ?, ?, 1, 1, '', '{}')`);
    event.run('e1', 'ended', 500, 100, 600);
    event.run('e2', 'ended', 150, 50, 200);
    db.close();

    const s = openSqliteStorage({ dataDir });
    opened.push(s);
    expect(s.budgets.archive.get('ended')).toEqual({ threadId: 'ended', maxTokens: 1000, promptTokens: 650, completionTokens: 150, fired: [75] });
    expect(s.budgets.archive.get('quiet')).toEqual({ threadId: 'quiet', maxTokens: 300, promptTokens: 0, completionTokens: 0, fired: [] });
    const ledger = new BudgetManager({ defaultMaxTokens: 50_000, archive: s.budgets.archive });
    expect(ledger.list({ state: 'finished', limit: 10, offset: 0 }).items.map((b) => b.threadId)).toEqual(['ended', 'quiet']);
    // The thread's next inject goes on from there: 75 % counted fired, 90 fires next.
    expect(() => ledger.reserve('ended', 201)).toThrow(expect.objectContaining({ code: 'BUDGET_EXHAUSTED' }));
    expect(ledger.settle(ledger.reserve('ended', 120), { promptTokens: 100, completionTokens: 20 }, 'a').map((e) => e.threshold)).toEqual([90]);
    expect(ledger.list({ state: 'finished', limit: 10, offset: 0 }).items.map((b) => b.threadId)).toEqual(['quiet']);
    expect(ledger.count()).toBe(1);
  });
});
