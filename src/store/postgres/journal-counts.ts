import type { DeliveryState } from '../types.js';
import { DELIVERY_STATES } from '../types.js';
import type { PgTransactionHook, Tx } from './writer.js';

/**
 * The journal's row counts in `row_counts` (all entries, entries per state) and
 * `journal_agent_counts` (per agent, the entries it sent or received). Changes are summed in
 * memory while a transaction runs and written at its end, inside it: a few updates per
 * transaction, not per row. `begin` drops the sums of an attempt that rolled back. Being rows
 * of the database (not figures in one process's memory), they stay right whichever process
 * moves an entry.
 */
export class PgJournalCounts implements PgTransactionHook {
  private total = 0;
  private readonly agents = new Map<string, number>();
  private readonly states: Record<DeliveryState, number> = { PENDING: 0, DISPATCHED: 0, ACKED: 0, FAILED: 0 };

  begin(): void {
    this.total = 0;
    this.agents.clear();
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
    this.agents.set(sender, (this.agents.get(sender) ?? 0) + delta);
    if (recipient !== sender) this.agents.set(recipient, (this.agents.get(recipient) ?? 0) + delta);
  }

  async commit(tx: Tx): Promise<void> {
    const names: string[] = [];
    const deltas: number[] = [];
    if (this.total !== 0) (names.push('journal'), deltas.push(this.total));
    for (const k of DELIVERY_STATES) if (this.states[k] !== 0) (names.push(`journal:${k}`), deltas.push(this.states[k]));
    if (names.length > 0) {
      await tx.query({
        name: 'counts-add',
        text: 'UPDATE row_counts r SET n = r.n + d.delta FROM unnest($1::text[], $2::bigint[]) AS d(name, delta) WHERE r.name = d.name',
        values: [names, deltas],
      });
    }
    const agents = [...this.agents].filter(([, d]) => d !== 0);
    if (agents.length > 0) {
      // Sorted, so two processes committing at once lock the rows in the same order.
      agents.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
      await tx.query({
        name: 'counts-agents',
        text: `INSERT INTO journal_agent_counts (agent, n) SELECT * FROM unnest($1::text[], $2::bigint[])
         ON CONFLICT (agent) DO UPDATE SET n = journal_agent_counts.n + excluded.n`,
        values: [agents.map(([a]) => a), agents.map(([, d]) => d)],
      });
    }
    this.begin();
  }
}

/** Recounts entries per state from the rows (at recovery: puts right anything the counts missed). */
export const RECOUNT_STATES_SQL = `
  WITH small AS (
    SELECT s.state, (SELECT COUNT(*) FROM journal j WHERE j.state = s.state) AS n
    FROM (VALUES ('PENDING'), ('DISPATCHED'), ('FAILED')) AS s(state)
  ), total AS (SELECT n FROM row_counts WHERE name = 'journal')
  UPDATE row_counts r SET n = c.n FROM (
    SELECT 'journal:' || state AS name, n FROM small
    UNION ALL SELECT 'journal:ACKED', (SELECT n FROM total) - (SELECT COALESCE(SUM(n), 0) FROM small)
  ) AS c WHERE r.name = c.name`;
