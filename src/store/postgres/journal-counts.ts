import type { DeliveryState } from '../../core/journal.js';
import { DELIVERY_STATES, zeroStateCounts } from '../../core/journal.js';
import { sqlLiteral, type PgTransactionHook, type Tx } from './writer.js';

/**
 * The journal's row counts in `row_counts` (all entries, entries per state) and
 * `journal_agent_counts` (per listener, the entries it sent or received). Changes are summed in
 * memory while a transaction runs and written at its end, inside it: a few updates per
 * transaction, not per row. `begin` drops the sums of an attempt that rolled back. Being rows
 * of the database (not figures in one process's memory), they stay right whichever process
 * moves an entry.
 *
 * Each count is the sum of its slots: a process adds only to its own `slot` (its worker id in a
 * clustered organism, '' otherwise), so processes committing at once never wait on one another's
 * count rows (one row per count was the lock every transaction of every process queued on).
 */
export class PgJournalCounts implements PgTransactionHook {
  /** The slot this process adds to (set once, before the first write). */
  slot = '';
  private total = 0;
  private readonly listeners = new Map<string, number>();
  private readonly states: Record<DeliveryState, number> = zeroStateCounts();

  begin(): void {
    this.total = 0;
    this.listeners.clear();
    for (const k of DELIVERY_STATES) this.states[k] = 0;
  }

  /** An entry went from one state to another (null: inserted or deleted). */
  moved(from: DeliveryState | null, to: DeliveryState | null): void {
    if (from) this.states[from]--;
    if (to) this.states[to]++;
  }

  /** How many entries this transaction made PENDING so far, less those it moved out of PENDING (not in `row_counts` until commit). */
  get pendingDelta(): number {
    return this.states.PENDING;
  }

  /** The per-state counts were just recounted from the rows in this transaction: what moved before is in them. */
  statesRecounted(): void {
    for (const k of DELIVERY_STATES) this.states[k] = 0;
  }

  /** An entry from `sender` to `recipient` was inserted (+1) or deleted (-1). */
  changed(sender: string, recipient: string, delta: 1 | -1): void {
    this.total += delta;
    this.listeners.set(sender, (this.listeners.get(sender) ?? 0) + delta);
    if (recipient !== sender) this.listeners.set(recipient, (this.listeners.get(recipient) ?? 0) + delta);
  }

  /** Adds the sums to this process's slots, with the COMMIT (one round trip with it, see Tx.atCommit). */
  commit(tx: Tx): void {
    const rows: string[] = [];
    const slot = sqlLiteral(this.slot);
    if (this.total !== 0) rows.push(`('journal', ${slot}, ${this.total})`);
    for (const k of DELIVERY_STATES) if (this.states[k] !== 0) rows.push(`(${sqlLiteral(`journal:${k}`)}, ${slot}, ${this.states[k]})`);
    if (rows.length > 0) tx.atCommit(`INSERT INTO row_counts (name, slot, n) VALUES ${rows.join(', ')} ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n + excluded.n`);
    const listeners = [...this.listeners].filter(([, d]) => d !== 0);
    if (listeners.length > 0) {
      // Sorted, so two processes committing at once lock the rows in the same order.
      listeners.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      const values = listeners.map(([agent, n]) => `(${sqlLiteral(agent)}, ${slot}, ${n})`).join(', ');
      tx.atCommit(`INSERT INTO journal_agent_counts (agent, slot, n) VALUES ${values} ON CONFLICT (agent, slot) DO UPDATE SET n = journal_agent_counts.n + excluded.n`);
    }
    this.begin();
  }
}

/** A kept count: the sum of its slots ($1: the count's name). */
export const COUNT_SQL = `SELECT COALESCE(SUM(n), 0) AS n FROM row_counts WHERE name = $1`;

/** A listener's kept count of entries: the sum of its slots ($1: the listener). */
export const AGENT_COUNT_SQL = `SELECT COALESCE(SUM(n), 0) AS n FROM journal_agent_counts WHERE agent = $1`;

/** Adds one to the kept thread count in the slot given by the parameter `$slot` when the CTE `up` inserted its thread. */
export const countInsertedThread = (slot: string) => `INSERT INTO row_counts (name, slot, n) SELECT 'threads', ${slot}, 1 WHERE (SELECT inserted FROM up)
  ON CONFLICT (name, slot) DO UPDATE SET n = row_counts.n + 1`;

/**
 * Folds the slots of processes that are not running (a slot is `<worker id>` or `<worker id>/<role>`) (stopped, or past their lease, or never
 * registered) into the base slot '': the slots a clustered organism keeps stay about as many as
 * its live processes. The sums do not change: the delete and the add are one statement, and a
 * process that was only late adds to a fresh slot row afterwards.
 */
export const FOLD_SLOTS_SQL = [
  ['row_counts', 'name'],
  ['journal_agent_counts', 'agent'],
].map(
  ([table, key]) => `WITH gone AS (
    DELETE FROM ${table} c WHERE c.slot <> '' AND split_part(c.slot, '/', 1) NOT IN (SELECT id FROM workers WHERE stopped_at IS NULL AND heartbeat_at >= $1::bigint - lease_ms)
    RETURNING c.${key}, c.n)
  INSERT INTO ${table} (${key}, slot, n) SELECT ${key}, '', SUM(n) FROM gone GROUP BY ${key}
  ON CONFLICT (${key}, slot) DO UPDATE SET n = ${table}.n + excluded.n`,
);

/** Recounts entries per state from the rows (at recovery: puts right anything the counts missed; the slots go into the base). */
export const RECOUNT_STATES_SQL = `
  WITH small AS (
    SELECT s.state, (SELECT COUNT(*) FROM journal j WHERE j.state = s.state) AS n
    FROM (VALUES ('PENDING'), ('DISPATCHED'), ('AWAITING'), ('FAILED')) AS s(state)
  ), total AS (SELECT COALESCE(SUM(n), 0) AS n FROM row_counts WHERE name = 'journal'),
  cleared AS (DELETE FROM row_counts WHERE name LIKE 'journal:%' AND slot <> '')
  INSERT INTO row_counts (name, slot, n) SELECT c.name, '', c.n FROM (
    SELECT 'journal:' || state AS name, n FROM small
    UNION ALL SELECT 'journal:ACKED', (SELECT n FROM total) - (SELECT COALESCE(SUM(n), 0) FROM small)
  ) AS c
  ON CONFLICT (name, slot) DO UPDATE SET n = excluded.n`;
