import { loadOrganismToRun } from '../config/index.js';
import type { Organism } from '../organism/organism.js';
import type { SharedStorage } from '../store/postgres/storage.js';
import type { Logger } from '../util/logger.js';

export interface JoinOptions {
  /** The organism's PostgreSQL database (`--store`). */
  readonly url: string;
  /** This process's organism.yaml, re-read when another process announces a reload. */
  readonly configPath: string;
  /** A serve hears the other processes' events (its WebSocket clients see them); a worker does not. */
  readonly hearEvents: boolean;
  /** The shared store of this process: its LISTEN connection (one per process) and its workers row. */
  readonly shared: SharedStorage;
  readonly logger: Logger;
}

/**
 * Links an organism on a PostgreSQL store with the other processes sharing that database
 * (before it starts): events, pause/resume, kill and reload reach every process.
 */
export async function joinSharedOrganism(organism: Organism, options: JoinOptions): Promise<void> {
  // Loaded only for a PostgreSQL store (most organisms run on the embedded SQLite).
  const { PgClusterLink } = await import('../cluster/bus/cluster-link.js');
  const link = PgClusterLink.create({
    url: options.url,
    origin: organism.bootId,
    hearEvents: options.hearEvents,
    logger: options.logger,
    listener: options.shared.listener,
    running: (hash) => options.shared.setConfigHash(hash),
    connectionLost: (err) => options.shared.connectionLost(err),
  });
  organism.joinCluster(link, { reloadConfig: () => loadOrganismToRun(options.configPath) });
}
