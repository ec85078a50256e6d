import type Database from 'better-sqlite3';
import type { OperatorStateStore } from '../../core/storage.js';
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
}
