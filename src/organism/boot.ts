import { loadOrganismToRun } from '../config/index.js';
import { configDifferences, fingerprint } from '../config/fingerprint.js';
import type { LoadedOrganism } from '../config/types.js';
import { Errors } from '../errors/catalogue.js';
import { openSqliteStorage } from '../store/index.js';
import type { ClusterStorage, ClusterStorageOptions } from '../store/postgres/index.js';
import type { Logger } from '../util/logger.js';
import { Organism } from './organism.js';
import type { StorageParts } from '../core/storage.js';
import { attemptLimits } from '../pump/retry-policy.js';

/** Where the organism's state lives. */
export type BootStore =
  /** Nothing kept: the process's memory (`organism run` without `--data-dir`). */
  | { readonly kind: 'memory' }
  /** The embedded SQLite store in a data directory. */
  | { readonly kind: 'sqlite'; readonly dataDir: string }
  /**
   * A PostgreSQL database, the work queue of every process of the cluster; `cluster: null` (serve
   * --exclusive): this process owns it alone, and schedules its deliveries itself as on SQLite.
   */
  | { readonly kind: 'postgres'; readonly url: string; readonly cluster: Omit<ClusterStorageOptions, 'configHash' | 'maxAttempts' | 'checkConfig'> | null };

/**
 * Which command the process runs. `serve` names the organism a cluster's database runs (at boot,
 * and at each reload) and hears the other processes' events for its live views; a `worker`
 * refuses to run another configuration than the stored one (naming it only when none is) and
 * hears no events; `run` is one process alone.
 */
export type BootRole = 'serve' | 'worker' | 'run';

export type BootOptions = {
  /** The organism.yaml to run, loaded and checked; a reload another process announces re-reads its file. */
  readonly config: LoadedOrganism;
  readonly logger: Logger;
  /**
   * Opening the store failed (and for `serve`, naming the organism in it): what to throw
   * instead (the CLI turns it into its exit code). Omitted: the store's error.
   */
  readonly storeFailed?: (err: unknown) => unknown;
} & ({ readonly role: 'serve' | 'worker'; readonly store: BootStore } | { readonly role: 'run'; readonly store: Exclude<BootStore, { kind: 'postgres' }> });

export interface BootedOrganism {
  /** Built and, on a cluster's database, linked with the other processes; not started yet. */
  readonly organism: Organism;
  /** Where its state lives, as operators are told (a redacted URL, the data directory, or `memory`). */
  readonly where: string;
  /** A clustered process's identity in the `workers` table and its own handler cap (null: embedded). */
  readonly cluster: { readonly workerId: string; readonly concurrency: number | null } | null;
}

/**
 * The start-up `serve`, `worker` and `run` share: opens the store (recovery happens at
 * `organism.start()`), on PostgreSQL names or checks the organism the database runs, builds
 * the organism and joins the other processes sharing the database.
 */
export async function bootOrganism(options: BootOptions): Promise<BootedOrganism> {
  const { config: loaded, store, logger } = options;
  const refused = (err: unknown) => options.storeFailed?.(err) ?? err;
  if (store.kind === 'memory') return { organism: new Organism(loaded, { logger }), where: 'memory', cluster: null };
  const retention = { retainDays: loaded.config.journal.retainDays, failedRetainDays: loaded.config.journal.failedRetainDays };
  if (store.kind === 'sqlite') {
    let storage: StorageParts;
    try {
      // `organism run` has always kept the store's default retention (not organism.yaml's).
      storage = openSqliteStorage({ dataDir: store.dataDir, ...(options.role === 'run' ? {} : retention), logger });
    } catch (err) {
      throw refused(err);
    }
    return { organism: new Organism(loaded, { storage, logger }), where: store.dataDir, cluster: null };
  }

  // Loaded only for a PostgreSQL store (most organisms run on the embedded SQLite).
  const { openPostgresStorage } = await import('../store/postgres/index.js');
  if (store.cluster === null) {
    // One process owns the schema (others are refused): no organism to name for workers, no
    // other process to hear; its journal is recovered at start and the embedded queue runs it.
    let owned;
    try {
      owned = await openPostgresStorage({ url: store.url, ...retention, logger });
    } catch (err) {
      throw refused(err);
    }
    return { organism: new Organism(loaded, { storage: owned, logger }), where: owned.where, cluster: null };
  }
  const mine = fingerprint(loaded.config);
  const worker = options.role === 'worker';
  let pg;
  try {
    pg = await openPostgresStorage({
      url: store.url,
      ...retention,
      logger,
      cluster: {
        ...store.cluster,
        configHash: mine.hash,
        maxAttempts: attemptLimits(loaded.config),
        ...(worker
          ? {
              checkConfig: (stored: { hash: string; text: string } | null) => {
                if (stored && stored.hash !== mine.hash) {
                  throw Errors.WORKER_CONFIG_MISMATCH(mine.hash, stored.hash, configDifferences(mine.text, stored.text).join('; '));
                }
              },
            }
          : {}),
      },
    });
    // serve names the organism the database runs (workers started with another one are refused), at boot and at each reload.
    if (!worker) await pg.cluster!.publishConfig(mine.hash, mine.text);
  } catch (err) {
    throw refused(err);
  }
  // No serve has stored the organism yet: the first process to start names it.
  if (worker && (await pg.cluster!.storedConfig()) === null) await pg.cluster!.publishConfig(mine.hash, mine.text);

  const organism = new Organism(loaded, { storage: pg, logger });
  // Events, pauses, kills and reloads reach every process; a reload stores the organism and
  // announces it (POST /organism/reload -> Organism.shareReload). A serve hears the other
  // processes' events (its WebSocket clients see them); a worker does not.
  await joinOtherProcesses(organism, { url: store.url, reloadFrom: loaded.path, hearEvents: !worker, cluster: pg.cluster!, logger });
  const work = pg.work!;
  return { organism, where: pg.where, cluster: { workerId: work.workerId, concurrency: work.concurrency } };
}

/**
 * Links an organism on a PostgreSQL store with the other processes sharing that database
 * (before it starts): events, pause/resume, kill and reload reach every process.
 */
async function joinOtherProcesses(
  organism: Organism,
  options: {
    readonly url: string;
    /** This process's organism.yaml, re-read when another process announces a reload. */
    readonly reloadFrom: string | null;
    readonly hearEvents: boolean;
    /** The cluster store of this process: its LISTEN connection (one per process) and its workers row. */
    readonly cluster: ClusterStorage;
    readonly logger: Logger;
  },
): Promise<void> {
  const { PgClusterLink } = await import('../cluster/bus/cluster-link.js');
  const link = PgClusterLink.create({
    url: options.url,
    origin: organism.bootId,
    hearEvents: options.hearEvents,
    logger: options.logger,
    listener: options.cluster.listener,
    running: (hash) => options.cluster.setConfigHash(hash),
    connectionLost: (err) => options.cluster.connectionLost(err),
  });
  const reloadFrom = options.reloadFrom;
  organism.joinCluster(link, reloadFrom === null ? {} : { reloadConfig: () => loadOrganismToRun(reloadFrom) });
}
