import type { BudgetSnapshotStore, ThreadBudgetSnapshot } from '../../core/budget.js';
import type { ScheduleStore } from '../../core/schedule.js';
import type { WebhookStore } from '../../core/webhook.js';
import { MemoryBudgetArchive } from '../../usage/budget-archive.js';
import type pg from 'pg';
import { Errors } from '../../errors/catalogue.js';
import type { Logger } from '../../util/logger.js';
import { PgJournal } from './journal.js';
import type { MaxAttempts } from '../../core/journal.js';
import { PgLlmCallStore } from './llm-calls.js';
import { migratePg } from './migrations.js';
import { PgOperatorState } from './operator-state.js';
import { PgEraser } from './eraser.js';
import { PgScheduleStore, PgWebhookStore } from './interop.js';
import { createPool, pgRuntimeError, pgStorageError, reader, redactUrl } from './pool.js';
import { PgThreadStore } from './threads.js';
import { PgUsageStore } from './usage.js';
import { PgWriter } from './writer.js';
import { channelsFor, currentSchema, PgListener, type Channels } from '../../cluster/bus/channels.js';
import { PgClusterJournal } from '../../cluster/queue/cluster-journal.js';
import { DEFAULT_LEASE_MS, PgWorkSource } from '../../cluster/queue/work-source.js';
import { PgWorkers } from '../../cluster/workers.js';
import { ClusterQueue } from '../../cluster/queue/cluster-queue.js';
import { newId } from '../../util/ids.js';
import { hostname } from 'node:os';
import { PgBudgetLedger } from './budget-ledger.js';
import { isConnectionFailure, PgReachability } from './reachability.js';
import { JournalVacuum, type JournalVacuumOptions } from './vacuum.js';
import type { BudgetLedgerFactory } from '../../core/budget.js';
import type { StorageProblem } from '../../core/storage.js';

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
   * just killed may hold it a moment longer, until the server notices), or of a cluster for a single owner and the other way round. Default 5 s.
   */
  readonly lockWaitMs?: number;
  readonly logger?: Logger;
  /**
   * Cluster mode (issue 15): several processes share the database, which is their work queue.
   * The schema's lock in share mode (a single owner is refused, and refuses it), no blanket recovery; this process registers in `workers` and claims.
   */
  readonly cluster?: ClusterStorageOptions;
  /** The journal's vacuum when the server runs no autovacuum on it (vacuum.ts); false: never. */
  readonly vacuum?: JournalVacuumOptions | false;
}

/** How this process takes part in a clustered organism. */
export interface ClusterStorageOptions {
  readonly kind?: 'serve' | 'worker';
  /** Shown in /api/v1/workers; default: host:pid. */
  readonly name?: string;
  /** False: never claims (`serve --handlers off`). Default true. */
  readonly handlers?: boolean;
  /** `--concurrency`; default: the organism-wide limit. */
  readonly concurrency?: number | null;
  /** The organism this process runs (see config-hash.ts); default ''. */
  readonly configHash?: string;
  /** Default 30 s (`--lease-seconds`, ORGANISM_LEASE_SECONDS). */
  readonly leaseMs?: number;
  /** journal.max_attempts, per listener its retry.max_attempts (a claim taken back past it FAILS); default 3. */
  readonly maxAttempts?: MaxAttempts;
  /**
   * Called with the organism the database runs (null: none stored yet) before this process
   * registers: throwing refuses the open with that error (a worker started with another
   * organism.yaml), and nothing of this process is left in the database.
   */
  readonly checkConfig?: (stored: { hash: string; text: string } | null) => void | Promise<void>;
}

/** What a clustered organism's processes use besides the stores: who runs, the channels, the organism's config. */
export interface ClusterStorage {
  readonly workerId: string;
  readonly workers: PgWorkers;
  readonly channels: Channels;
  /** The process's LISTEN connection (subscribe to more channels on it). */
  readonly listener: PgListener;
  /** The organism stored by serve (meta config_hash / config_text), null before any serve wrote it. */
  storedConfig(): Promise<{ hash: string; text: string } | null>;
  /** Stores the organism this process runs (serve: at boot and reload) and its hash in its workers row. */
  publishConfig(hash: string, text: string): Promise<void>;
  /** This process runs another organism now (a reload): its workers row says so. */
  setConfigHash(hash: string): Promise<void>;
  /**
   * An idle connection of this process opened apart from the store's (the cluster link's) broke:
   * the store's watch checks the server, and logs an outage once. True when it was a connection
   * failure (nothing for the caller to log).
   */
  connectionLost(err: unknown): boolean;
}

export interface PostgresStorage {
  /** The database, without its password. */
  readonly where: string;
  readonly journal: PgJournal;
  readonly threads: PgThreadStore;
  readonly usage: PgUsageStore;
  readonly llmCalls: PgLlmCallStore;
  readonly operator: PgOperatorState;
  readonly eraser: PgEraser;
  readonly schedules: ScheduleStore;
  readonly webhooks: WebhookStore;
  /** Budget snapshots (kept for the contract; the organism spends from `budgetLedger`'s rows instead); `archive` is in memory. */
  readonly budgets: BudgetSnapshotStore;
  /** Cluster mode: the work source the pump claims from (absent: one process owns the database). */
  readonly work?: PgWorkSource;
  readonly cluster?: ClusterStorage;
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
 * from a newer organism) and loads what must answer synchronously (paused listeners). Anything
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
    if (!connectionLost(err)) logger?.warn({ err: pgStorageError(where, err) }, 'an idle PostgreSQL connection failed');
  });
  const writer = new PgWriter(pool, report, (err) => {
    reach?.failed(err); // the raw error: it tells a connection failure from a refused write
    return pgRuntimeError(where, err);
  });
  // A connection held open that breaks (idle in a pool, the LISTEN one) has the watch check the
  // server at once: it logs an outage, once; a connection ended alone is replaced, unlogged.
  // True when it was a connection failure (nothing for the caller to log).
  const connectionLost = (err: unknown): boolean => {
    if (!isConnectionFailure(err)) return false;
    reach?.suspect(err);
    return reach !== null;
  };
  const db = reader(pool, where, (err) => reach?.failed(err));
  const retention = { retainDays: options.retainDays ?? 7, failedRetainDays: options.failedRetainDays ?? 30 };
  const operator = new PgOperatorState(db, writer);
  let owner: OwnerLock | null = null;
  let journal: PgJournal;
  let cluster: { storage: ClusterStorage; work: PgWorkSource } | null = null;
  let listener: PgListener | null = null;
  try {
    // The name is checked by createPool. Processes starting together may race to create it (unique_violation).
    if (options.schema)
      await pool.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`).catch((err: { code?: string }) => {
        if (err.code !== '23505') throw err;
      });
    // Cluster mode: several processes run the organism; claims and leases replace the single owner.
    // Each holds the schema's lock in share mode, so that a single owner and a cluster refuse each other.
    owner = await takeOwnership(pool, where, options.lockWaitMs ?? 5_000, options.cluster ? 'shared' : 'exclusive', (err) => {
      if (options.cluster && connectionLost(err)) return;
      logger?.error({ err: pgStorageError(where, err) }, "lost the connection that holds this organism's database lock");
    });
    await migratePg(pool);
    if (options.cluster) {
      const channels = channelsFor(await currentSchema(pool));
      const workerId = newId();
      const clusterJournal = new PgClusterJournal(db, writer, retention, pool, channels, where, workerId);
      journal = clusterJournal;
      listener = new PgListener({
        connectionString: options.url,
        ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
        where,
        watch: {
          suspect: connectionLost,
          get outages() {
            return reach?.outages ?? 0;
          },
        },
        ...(logger ? { logger } : {}),
      });
      await listener.start();
      cluster = openCluster(options.cluster, { id: workerId, db, journal: clusterJournal, listener, channels, connectionLost, ...(logger ? { logger } : {}) });
    } else {
      journal = new PgJournal(db, writer, retention);
    }
    await journal.load();
    await operator.load();
    if (cluster && options.cluster?.checkConfig) await options.cluster.checkConfig(await cluster.storage.storedConfig());
    await cluster?.work.start();
  } catch (err) {
    owner?.release();
    await listener?.close();
    await pool.end().catch(() => {});
    throw pgStorageError(where, err);
  }
  reach = new PgReachability(options.url, where, logger);
  const usage = new PgUsageStore(db, writer);
  const pruneTimer = setInterval(() => void journal.prune().catch(report), PRUNE_INTERVAL_MS).unref();
  const vacuum = options.vacuum === false ? null : new JournalVacuum(db, logger, options.vacuum);
  await vacuum?.start().catch((err: unknown) => logger?.warn({ err: pgStorageError(where, err) }, "could not read the server's vacuum settings; the journal is left to them"));
  const catchUp = setTimeout(() => void journal.prune().catch(report), 0); // after downtime

  let closing: Promise<void> | null = null;
  const threads = new PgThreadStore(db, writer, cluster?.storage.workerId ?? '');
  return {
    where,
    journal,
    threads,
    usage,
    llmCalls: new PgLlmCallStore(db, writer),
    operator,
    eraser: new PgEraser(db, writer),
    schedules: new PgScheduleStore(db),
    webhooks: new PgWebhookStore(db),
    ...(cluster ? { work: cluster.work, cluster: cluster.storage, queue: new ClusterQueue(cluster.work, journal, threads) } : {}),
    // In a clustered organism a reservation's holder is the process's worker id, and it expires with that process's lease.
    budgetLedger: (o) =>
      new PgBudgetLedger(pool, where, {
        ...o,
        ...(logger ? { logger } : {}),
        ...(cluster ? { holder: cluster.storage.workerId, leaseMs: options.cluster?.leaseMs ?? DEFAULT_LEASE_MS, finished: (journal as PgClusterJournal).finishedBudgets } : {}),
      }),
    problem: () => reach?.problem() ?? null,
    budgets: {
      archive: new MemoryBudgetArchive(),
      load: async () => {
        await writer.flush();
        return (await db.query<{ data: string }>('SELECT data FROM budgets')).rows.map((r) => JSON.parse(r.data) as ThreadBudgetSnapshot);
      },
      save: (snapshots) =>
        writer.write(async (tx) => {
          const list = snapshots;
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
        await vacuum?.close();
        reach?.close();
        usage.close();
        await cluster?.work.stop();
        await listener?.close();
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
 * One organism process per database schema (`exclusive`), or any number sharing it (`shared`:
 * a cluster's serve and worker processes), never both: recovery in a single owner takes every
 * DISPATCHED entry as interrupted, which is only true when no other process is running them.
 * A session advisory lock, exclusive or in share mode, on a connection held out of the pool for
 * the storage's lifetime; the server drops it when that connection ends, however the process
 * ends. Refused after `waitMs` (a process just killed may hold it until the server notices),
 * naming what holds it.
 */
async function takeOwnership(pool: pg.Pool, where: string, waitMs: number, mode: 'exclusive' | 'shared', onLost: (err: unknown) => void): Promise<OwnerLock> {
  const client = await pool.connect();
  // Out of the pool, its failures (server restart, connection cut) reach no pool handler.
  client.on('error', onLost);
  const deadline = Date.now() + waitMs;
  const KEY = `hashtext('organism:' || current_schema())`;
  try {
    for (;;) {
      const fn = mode === 'exclusive' ? 'pg_try_advisory_lock' : 'pg_try_advisory_lock_shared';
      const r = await client.query<{ locked: boolean; schema: string }>(`SELECT ${fn}(${KEY}) AS locked, current_schema() AS schema`);
      const { locked, schema } = r.rows[0]!;
      if (locked) break;
      if (Date.now() >= deadline) {
        if (mode === 'shared') throw Errors.STORAGE_DATABASE_EXCLUSIVE(where, schema);
        // Held in share mode (a cluster) if a share lock is granted; else by another single owner.
        const probe = await client.query<{ shared: boolean }>(`SELECT pg_try_advisory_lock_shared(${KEY}) AS shared`);
        if (!probe.rows[0]!.shared) throw Errors.STORAGE_DATABASE_IN_USE(where, schema);
        await client.query(`SELECT pg_advisory_unlock_shared(${KEY})`);
        throw Errors.STORAGE_DATABASE_CLUSTERED(where, schema);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } catch (err) {
    client.release(true);
    throw err;
  }
  // Closing the connection (not returning it to the pool) is what releases the lock.
  return { release: () => client.release(true) };
}

function openCluster(
  o: ClusterStorageOptions,
  deps: {
    id: string;
    db: ReturnType<typeof reader>;
    journal: PgClusterJournal;
    listener: PgListener;
    channels: Channels;
    connectionLost: (err: unknown) => boolean;
    logger?: Logger;
  },
): { storage: ClusterStorage; work: PgWorkSource } {
  const workers = new PgWorkers(deps.db);
  const id = deps.id;
  const work = new PgWorkSource({
    journal: deps.journal,
    workers,
    listener: deps.listener,
    channels: deps.channels,
    maxAttempts: o.maxAttempts ?? 3,
    me: {
      id,
      kind: o.kind ?? 'serve',
      name: o.name ?? `${hostname()}:${process.pid}`,
      handlers: o.handlers ?? true,
      configHash: o.configHash ?? '',
      concurrency: o.concurrency ?? null,
      leaseMs: o.leaseMs ?? DEFAULT_LEASE_MS,
    },
    ...(deps.logger ? { logger: deps.logger } : {}),
  });
  const storage: ClusterStorage = {
    workerId: id,
    workers,
    channels: deps.channels,
    listener: deps.listener,
    async storedConfig() {
      const rows = (await deps.db.query<{ key: string; value: string }>(`SELECT key, value FROM meta WHERE key IN ('config_hash', 'config_text')`)).rows;
      const hash = rows.find((r) => r.key === 'config_hash')?.value;
      const text = rows.find((r) => r.key === 'config_text')?.value;
      return hash !== undefined && text !== undefined ? { hash, text } : null;
    },
    async publishConfig(hash, text) {
      await deps.db.query(`INSERT INTO meta (key, value) VALUES ('config_hash', $1), ('config_text', $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [hash, text]);
      await workers.setConfigHash(id, hash);
    },
    setConfigHash: (hash) => workers.setConfigHash(id, hash),
    connectionLost: deps.connectionLost,
  };
  return { storage, work };
}
