import type pg from 'pg';
import { Errors } from '../../errors/catalogue.js';
import type { Logger } from '../../util/logger.js';
import { PgJournal } from './journal.js';
import { PgLlmCallStore } from './llm-calls.js';
import { migratePg } from './migrations.js';
import { PgOperatorState } from './operator-state.js';
import { createPool, pgStorageError, reader, redactUrl } from './pool.js';
import { PgThreadStore } from './threads.js';
import { PgUsageStore } from './usage.js';
import { PgWriter } from './writer.js';
import { PgBudgetLedger } from './budget-ledger.js';
import { PgReachability } from './reachability.js';
import type { BudgetLedgerFactory } from '../../usage/ledger.js';
import type { StorageProblem } from '../types.js';

const PRUNE_INTERVAL_MS = 10 * 60_000;

export interface PostgresStorageOptions {
  /** postgres://user[:password]@host[:port]/database */
  readonly url: string;
  /** The schema the tables live in (created if missing); default: the connection's search_path. */
  readonly schema?: string;
  readonly retainDays?: number;
  readonly failedRetainDays?: number;
  /** Connections in the pool (one of them is the writer's while it commits). */
  readonly poolSize?: number;
  /**
   * How long to wait for the database to be free of another organism process (one that was
   * just killed may hold it a moment longer, until the server notices). Default 5 s.
   */
  readonly lockWaitMs?: number;
  readonly logger?: Logger;
}

export interface PostgresStorage {
  /** The database, without its password. */
  readonly where: string;
  readonly journal: PgJournal;
  readonly threads: PgThreadStore;
  readonly usage: PgUsageStore;
  readonly llmCalls: PgLlmCallStore;
  readonly operator: PgOperatorState;
  readonly budgets: { load(): Promise<unknown[]>; save(snapshots: unknown[]): Promise<void> };
  /** Thread budgets as rows every process of the organism reserves against (see PgBudgetLedger). */
  readonly budgetLedger: BudgetLedgerFactory;
  /** The server is unreachable now (STORAGE_UNAVAILABLE), or null. */
  problem(): StorageProblem | null;
  /** Resolves once every write queued so far has committed. */
  flush(): Promise<void>;
  /** Flushes, then closes the pool. */
  close(): Promise<void>;
}

/**
 * Opens the organism's PostgreSQL database: connects, applies migrations (refusing a schema
 * from a newer organism) and loads what must answer synchronously (paused agents). Anything
 * wrong (unreachable, refused login, missing database, newer schema) is a clear StorageError
 * naming the database without its password.
 *
 * Durability: a write's promise resolves after its COMMIT, which PostgreSQL makes durable
 * (synchronous_commit, the server's default) before answering.
 */
export async function openPostgresStorage(options: PostgresStorageOptions): Promise<PostgresStorage> {
  const where = redactUrl(options.url);
  const logger = options.logger;
  const pool = createPool({ url: options.url, ...(options.schema ? { schema: options.schema } : {}), ...(options.poolSize ? { max: options.poolSize } : {}) });
  // An unreachable server is logged once by the watch (going away, coming back), not per write.
  let reach: PgReachability | null = null;
  const report = (err: unknown) => {
    if (!reach?.problem()) logger?.error({ err: pgStorageError(where, err) }, 'storage write failed');
  };
  // An idle connection that breaks (server restart) must not crash the process; the pool replaces it.
  pool.on('error', (err) => {
    if (!reach?.failed(err)) logger?.warn({ err: pgStorageError(where, err) }, 'an idle PostgreSQL connection failed');
  });
  const writer = new PgWriter(pool, report, (err) => {
    reach?.failed(err); // the raw error: it tells a connection failure from a refused write
    return pgStorageError(where, err);
  });
  const db = reader(pool, where, (err) => reach?.failed(err));
  const journal = new PgJournal(db, writer, { retainDays: options.retainDays ?? 7, failedRetainDays: options.failedRetainDays ?? 30 });
  const operator = new PgOperatorState(db, writer);
  let owner: OwnerLock | null = null;
  try {
    if (options.schema) await pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`); // the name is checked by createPool
    owner = await takeOwnership(pool, where, options.lockWaitMs ?? 5_000, (err) =>
      logger?.error({ err: pgStorageError(where, err) }, 'lost the connection that holds this organism\'s database lock'),
    );
    await migratePg(pool);
    await journal.load();
    await operator.load();
  } catch (err) {
    owner?.release();
    await pool.end().catch(() => {});
    throw pgStorageError(where, err);
  }
  reach = new PgReachability(options.url, where, logger);
  const usage = new PgUsageStore(db, writer);
  const pruneTimer = setInterval(() => void journal.prune().catch(report), PRUNE_INTERVAL_MS).unref();
  const catchUp = setTimeout(() => void journal.prune().catch(report), 0); // after downtime

  let closing: Promise<void> | null = null;
  return {
    where,
    journal,
    threads: new PgThreadStore(db, writer),
    usage,
    llmCalls: new PgLlmCallStore(db, writer),
    operator,
    budgetLedger: (o) => new PgBudgetLedger(pool, where, { ...o, ...(logger ? { logger } : {}) }),
    problem: () => reach?.problem() ?? null,
    budgets: {
      load: async () => {
        await writer.flush();
        return (await db.query<{ data: string }>('SELECT data FROM budgets')).rows.map((r) => JSON.parse(r.data) as unknown);
      },
      save: (snapshots) =>
        writer.write(async (tx) => {
          const list = snapshots as Array<{ threadId: string }>;
          await tx.query('DELETE FROM budgets');
          if (list.length > 0) {
            await tx.query('INSERT INTO budgets (thread_id, data) SELECT * FROM unnest($1::text[], $2::text[])', [list.map((s) => s.threadId), list.map((s) => JSON.stringify(s))]);
          }
        }),
    },
    flush: () => writer.flush(),
    close() {
      closing ??= (async () => {
        clearInterval(pruneTimer);
        clearTimeout(catchUp);
        reach?.close();
        usage.close();
        await writer.flush();
        owner?.release();
        await pool.end();
      })();
      return closing;
    },
  };
}

interface OwnerLock {
  release(): void;
}

/**
 * One organism process per database schema, until workers share it (issue 15): recovery takes
 * every DISPATCHED entry as interrupted, which is only true when no other process is running
 * them. A session advisory lock on a connection held out of the pool for the storage's
 * lifetime; the server drops it when that connection ends, however the process ends.
 */
async function takeOwnership(pool: pg.Pool, where: string, waitMs: number, onLost: (err: unknown) => void): Promise<OwnerLock> {
  const client = await pool.connect();
  // Out of the pool, its failures (server restart, connection cut) reach no pool handler.
  client.on('error', onLost);
  const deadline = Date.now() + waitMs;
  try {
    for (;;) {
      const r = await client.query<{ locked: boolean; schema: string }>(`SELECT pg_try_advisory_lock(hashtext('organism:' || current_schema())) AS locked, current_schema() AS schema`);
      const { locked, schema } = r.rows[0]!;
      if (locked) break;
      if (Date.now() >= deadline) throw Errors.STORAGE_DATABASE_IN_USE(where, schema);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (err) {
    client.release(true);
    throw err;
  }
  // Closing the connection (not returning it to the pool) is what releases the lock.
  return { release: () => client.release(true) };
}
