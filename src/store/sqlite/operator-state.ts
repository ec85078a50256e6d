import type Database from 'better-sqlite3';
import type { OperatorStateStore } from '../../core/storage.js';
import type { ThreadHold } from '../../core/thread.js';
import { HOLD_COLUMNS, holdFromRow, holdValues, type HoldRow } from '../hold-rows.js';
import { prepared } from './prepared.js';

/** Operator state in the database, written at once (not batched): a pause survives any crash. */
export class SqliteOperatorState implements OperatorStateStore {
  constructor(
    private readonly db: Database.Database,
    private readonly now: () => number = Date.now,
  ) {}

  pausedAgents(): readonly string[] {
    return (prepared(this.db, 'SELECT agent FROM paused_agents ORDER BY since, agent').all() as Array<{ agent: string }>).map((r) => r.agent);
  }

  /** Written before it returns (a failed write throws at once); the promise is resolved. */
  setPaused(agent: string, paused: boolean): Promise<void> {
    if (paused) prepared(this.db, 'INSERT OR IGNORE INTO paused_agents (agent, since) VALUES (?, ?)').run(agent, this.now());
    else prepared(this.db, 'DELETE FROM paused_agents WHERE agent = ?').run(agent);
    return Promise.resolve();
  }

  async threadHold(threadId: string): Promise<ThreadHold | null> {
    const row = prepared(this.db, `SELECT ${HOLD_COLUMNS} FROM thread_holds WHERE thread_id = ?`).get(threadId) as HoldRow | undefined;
    return row ? holdFromRow(row) : null;
  }

  async heldThreads(): Promise<readonly ThreadHold[]> {
    return (prepared(this.db, `SELECT ${HOLD_COLUMNS} FROM thread_holds WHERE held = 1 ORDER BY held_at, thread_id`).all() as HoldRow[]).map(holdFromRow);
  }

  /** Written before it returns (a failed write throws at once). */
  async setThreadHold(hold: ThreadHold): Promise<void> {
    prepared(this.db, `INSERT OR REPLACE INTO thread_holds (${HOLD_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`).run(...holdValues(hold, hold.held ? 1 : 0));
  }
}
