import type { OperatorStateStore } from '../../core/storage.js';
import type { ThreadHold } from '../../core/thread.js';
import { HOLD_COLUMNS, holdFromRow, holdValues, type HoldRow } from '../hold-rows.js';
import type { Reader } from './pool.js';
import type { PgWriter } from './writer.js';

/**
 * Operator state on PostgreSQL. Paused listeners are read at open and kept in memory, so
 * `pausedAgents` answers synchronously; `refresh` reads them again when another process of a
 * clustered organism paused or resumed one. Each change is committed through the writer, in order with the
 * other writes, and its promise resolves after the commit.
 */
export class PgOperatorState implements OperatorStateStore {
  private paused = new Set<string>();
  /** Changes made by this process (a refresh that overlaps one keeps it). */
  private changes = 0;

  constructor(
    private readonly pool: Reader,
    private readonly writer: PgWriter,
    private readonly now: () => number = Date.now,
  ) {}

  async load(): Promise<void> {
    const rows = (await this.pool.query<{ agent: string }>('SELECT agent FROM paused_agents ORDER BY since, agent')).rows;
    this.paused = new Set(rows.map((r) => r.agent));
  }

  /**
   * The paused set as stored (other processes of a clustered organism pause and resume too). The
   * writes queued here commit first; a change made here while it reads wins (it is newer).
   */
  async refresh(): Promise<void> {
    await this.writer.flush();
    const before = this.changes;
    const rows = (await this.pool.query<{ agent: string }>('SELECT agent FROM paused_agents ORDER BY since, agent')).rows;
    if (this.changes === before) this.paused = new Set(rows.map((r) => r.agent));
  }

  pausedAgents(): readonly string[] {
    return [...this.paused];
  }

  /** The in-memory copy follows the operator at once (the pump pauses at once); the promise says whether it was stored. */
  setPaused(agent: string, paused: boolean): Promise<void> {
    if (paused) this.paused.add(agent);
    else this.paused.delete(agent);
    this.changes++;
    const since = this.now();
    return this.writer.write(async (tx) => {
      if (paused) await tx.query('INSERT INTO paused_agents (agent, since) VALUES ($1, $2) ON CONFLICT (agent) DO NOTHING', [agent, since]);
      else await tx.query('DELETE FROM paused_agents WHERE agent = $1', [agent]);
    });
  }

  /** Read from the database (another process may have held or resumed it); this process's queued writes commit first. */
  async threadHold(threadId: string): Promise<ThreadHold | null> {
    await this.writer.flush();
    const row = (await this.pool.query<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM thread_holds WHERE thread_id = $1`, [threadId])).rows[0];
    return row ? holdFromRow(row) : null;
  }

  async heldThreads(): Promise<readonly ThreadHold[]> {
    await this.writer.flush();
    return (await this.pool.query<HoldRow>(`SELECT ${HOLD_COLUMNS} FROM thread_holds WHERE held ORDER BY held_at, thread_id`)).rows.map(holdFromRow);
  }

  /** Committed through the writer, in order with the other writes; resolves after the commit. */
  setThreadHold(hold: ThreadHold): Promise<void> {
    const values = holdValues(hold, hold.held);
    return this.writer.write(async (tx) => {
      await tx.query(
        `INSERT INTO thread_holds (${HOLD_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         ON CONFLICT (thread_id) DO UPDATE SET held = excluded.held, rule = excluded.rule, reason = excluded.reason, evidence = excluded.evidence,
           held_by = excluded.held_by, held_at = excluded.held_at, resumed_at = excluded.resumed_at, resumed_by = excluded.resumed_by, limit_factor = excluded.limit_factor`,
        values,
      );
    });
  }
}
