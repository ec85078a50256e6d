import pg from 'pg';
import { admin } from './pg-admin.js';
import { sqlStatements } from './sql-statements.js';
import { sleep } from './stats.js';

/**
 * Counting the PostgreSQL work of one process on one database, two ways:
 * - in the process, by wrapping node-postgres's `Client.prototype.query` (every Pool query goes
 *   through it): a round trip is one call (a multi-statement simple query is one round trip),
 *   a transaction is each COMMIT sent (several in one multi-statement string count apart) plus
 *   each statement sent outside a transaction block (it commits on its own, reads included);
 * - on the server, from `pg_stat_database` (xact_commit + xact_rollback) of a private database:
 *   every transaction any session ran there, read-only ones included.
 */

/** What the process sent so far. */
export interface ClientCounts {
  readonly roundTrips: number;
  readonly transactions: number;
  /** Round trips by the start of their query text (whitespace folded, 70 characters). */
  readonly byQuery: ReadonlyMap<string, number>;
}

type QueryMethod = (this: pg.Client, ...args: unknown[]) => unknown;

const BEGIN = /^(begin|start\s+transaction)\b/i;
const END = /^(commit|end|rollback)\b/i;
const CONTROL = /^(set\s+local|savepoint|release)\b/i;

/**
 * Counts the round trips and transactions of clients connected to `database` (other clients,
 * such as the admin connection reading the server's statistics, are not counted). Returns a
 * reader of the counts and the restore of the original method.
 */
export function countPgRoundTrips(database: string): { counts(): ClientCounts; restore(): void } {
  const Client = pg.Client as unknown as { prototype: { query: QueryMethod } };
  const original = Client.prototype.query;
  const inBlock = new WeakMap<object, boolean>();
  let roundTrips = 0;
  let transactions = 0;
  const byQuery = new Map<string, number>();
  Client.prototype.query = function (this: pg.Client, ...args: unknown[]): unknown {
    if (this.database === database) {
      const config = args[0] as string | { text?: string } | undefined;
      const text = typeof config === 'string' ? config : (config?.text ?? '');
      roundTrips++;
      const head = text.replace(/\s+/g, ' ').trim().slice(0, 70);
      byQuery.set(head, (byQuery.get(head) ?? 0) + 1);
      for (const statement of sqlStatements(text)) {
        if (BEGIN.test(statement)) inBlock.set(this, true);
        else if (END.test(statement)) {
          transactions++;
          inBlock.set(this, false);
        } else if (!CONTROL.test(statement) && !inBlock.get(this)) transactions++;
      }
    }
    return original.apply(this, args);
  };
  return {
    counts: () => ({ roundTrips, transactions, byQuery: new Map(byQuery) }),
    restore: () => {
      Client.prototype.query = original;
    },
  };
}

/**
 * Transactions committed or rolled back in `database` so far, as the server counts them. A
 * backend reports its counts when it goes idle, at most once a second: `settleMs` of quiet
 * first lets the last ones arrive.
 */
export async function serverTransactions(database: string, settleMs = 1_500): Promise<number> {
  await sleep(settleMs);
  return admin(async (c) => {
    const r = await c.query<{ n: string }>('SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = $1', [database]);
    return Number(r.rows[0]?.n ?? 0);
  });
}
