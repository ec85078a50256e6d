/**
 * The claim of a clustered organism's journal (see PgClusterJournal.claim): one call of the
 * server function `organism_claim` (src/store/postgres/claim-function.ts says what it does and
 * why it commits asynchronously), as a prepared statement.
 */
import type pg from 'pg';

/** A limit as an SQL integer (an unbounded one as the largest int). */
const int = (n: number) => (Number.isFinite(n) ? Math.max(0, Math.min(Math.trunc(n), 2 ** 31 - 1)) : 2 ** 31 - 1);

/** What one claim asks for. */
export interface ClaimRequest {
  readonly workerId: string;
  readonly listeners: readonly string[];
  /** This process's free slots. */
  readonly max: number;
  readonly global: number;
  readonly perAgent: number;
  readonly now: number;
  /** The kept-count slot the claim adds to. */
  readonly slot: string;
  /** This claimer's handlers running now, per listener (null: count its DISPATCHED entries instead). */
  readonly running: ReadonlyMap<string, number> | null;
}

/**
 * The call, one statement and so its own transaction (the function takes the claim lock inside
 * it): each row's `claim` is `{row, thread}`, the claimed journal row and its thread's row.
 */
export function claimCall(r: ClaimRequest): pg.QueryConfig {
  return {
    name: 'journal-claim',
    text: 'SELECT claim FROM organism_claim($1, $2::text[], $3, $4, $5, $6, $7, $8::text[], $9::int[]) AS claim',
    values: [
      r.workerId,
      r.listeners,
      int(r.max),
      int(r.global),
      int(r.perAgent),
      Math.trunc(r.now),
      r.slot,
      r.running && [...r.running.keys()],
      r.running && [...r.running.values()].map(int),
    ],
  };
}
