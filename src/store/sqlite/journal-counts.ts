import type Database from 'better-sqlite3';
import { DELIVERY_STATES, zeroStateCounts, type DeliveryState } from '../../core/journal.js';
import type { TransactionHook } from './writer.js';

/** Recounts the journal's row counts from its rows (at migration, or after rows were written by other means). */
export const RECOUNT_JOURNAL_SQL = `
  INSERT INTO row_counts (name, n) SELECT 'journal', COUNT(*) FROM journal WHERE true ON CONFLICT (name) DO UPDATE SET n = excluded.n;
  DELETE FROM journal_agent_counts;
  INSERT INTO journal_agent_counts (agent, n)
    SELECT agent, COUNT(*) FROM (SELECT sender AS agent FROM journal UNION ALL SELECT recipient FROM journal WHERE recipient <> sender) GROUP BY agent;
`;

/**
 * The journal's row counts (all entries, and per listener the entries it sent or received) in
 * `row_counts` and `journal_agent_counts`. Changes are summed in memory while a transaction
 * runs and written at its end, inside it: a few small updates per transaction instead of a
 * trigger per row. `begin` drops the sums of an attempt that rolled back.
 *
 * Entries per state are kept in memory only (counted once at open and after recovery, then
 * moved with every committed transition), so `/metrics` reads them without a scan.
 */
export class JournalCounts implements TransactionHook {
  private total = 0;
  private readonly listeners = new Map<string, number>();
  private readonly stateDelta: Record<DeliveryState, number> = zeroStateCounts();
  private readonly kept: Record<DeliveryState, number> = zeroStateCounts();
  private readonly addTotal: Database.Statement;
  private readonly addListener: Database.Statement;

  constructor(db: Database.Database) {
    this.addTotal = db.prepare(`UPDATE row_counts SET n = n + ? WHERE name = 'journal'`);
    this.addListener = db.prepare(`INSERT INTO journal_agent_counts (agent, n) VALUES (?, ?) ON CONFLICT (agent) DO UPDATE SET n = n + excluded.n`);
  }

  begin(): void {
    this.total = 0;
    this.listeners.clear();
    for (const k of STATES) this.stateDelta[k] = 0;
  }

  /** An entry went from one state to another (null: inserted or deleted). */
  moved(from: DeliveryState | null, to: DeliveryState | null): void {
    if (from) this.stateDelta[from]--;
    if (to) this.stateDelta[to]++;
  }

  /** Sets the per-state counts from a count of the rows (at open and after recovery). */
  resetStates(counts: Readonly<Record<DeliveryState, number>>): void {
    for (const k of STATES) this.kept[k] = counts[k];
  }

  /** Entries per state as of the last commit. */
  get states(): Readonly<Record<DeliveryState, number>> {
    return { ...this.kept };
  }

  /** An entry from `sender` to `recipient` was inserted (+1) or deleted (-1). */
  changed(sender: string, recipient: string, delta: 1 | -1): void {
    this.total += delta;
    this.listeners.set(sender, (this.listeners.get(sender) ?? 0) + delta);
    if (recipient !== sender) this.listeners.set(recipient, (this.listeners.get(recipient) ?? 0) + delta);
  }

  commit(): void {
    if (this.total !== 0) this.addTotal.run(this.total);
    for (const [listener, delta] of this.listeners) if (delta !== 0) this.addListener.run(listener, delta);
    // Applied in memory just before the commit: a commit failure after this point would throw
    // out of the transaction, and the next recount (stats(), recovery) puts them right.
    for (const k of STATES) this.kept[k] += this.stateDelta[k];
    this.begin();
  }
}

const STATES: readonly DeliveryState[] = DELIVERY_STATES;
