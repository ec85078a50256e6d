import { loadOrganismToRun } from '../config/index.js';
import { Errors, OrganismError } from '../errors/catalogue.js';
import { bootOrganism } from '../organism/boot.js';
import { createLogger, type LogLevel } from '../util/logger.js';
import { ServeError } from './bind.js';
import { resolveConfigPath } from './config-path.js';
import { ExitCode } from './exit-codes.js';
import { resolveCluster, type ClusterFlags } from './cluster-options.js';
import { resolveStore } from './store-option.js';

export interface WorkerOptions extends Omit<ClusterFlags, 'handlers'> {
  readonly store?: string;
  readonly logLevel: LogLevel;
  readonly drainTimeoutMs: number;
}

/**
 * `organism worker`: handlers only, no HTTP, on the organism's PostgreSQL database. It claims
 * deliveries with the other processes, and on SIGTERM/SIGINT (or SIGHUP) stops claiming, lets
 * what it runs finish (up to the drain timeout) and gives back what is left.
 *
 * Not supervised, unlike `serve`: serve's supervisor exists to keep the listening socket
 * through restarts and to restart in place (SIGHUP, POST /organism/restart); a worker has no
 * socket and no restart endpoint, its claims survive it (given back at stop, taken back after
 * its lease when it dies), so the service manager (systemd Restart=, a container's restart
 * policy) restarting the process is all it needs.
 */
export async function workerCommand(configArg: string | undefined, options: WorkerOptions): Promise<number> {
  let store;
  let cluster;
  try {
    store = resolveStore(options.store);
    cluster = resolveCluster('worker', store, options)!;
  } catch (err) {
    throw new ServeError((err as Error).message, ExitCode.USAGE);
  }
  if (store.kind !== 'postgres') throw new ServeError(Errors.SHARED_STORE_REQUIRED('organism worker').detail, ExitCode.USAGE);
  const { path } = resolveConfigPath(configArg);
  const logger = createLogger(options.logLevel, 'organism-worker');
  const loaded = await loadOrganismToRun(path);

  // Pauses, kills and reloads made anywhere reach this worker; its events reach every serve.
  const {
    organism,
    where,
    cluster: member,
  } = await bootOrganism({
    config: loaded,
    store: { kind: 'postgres', url: store.url, cluster },
    role: 'worker',
    logger,
    storeFailed: (err) => {
      if (Errors.WORKER_CONFIG_MISMATCH.is(err)) return new ServeError(err.detail, ExitCode.CONFIG_INVALID);
      return new ServeError(err instanceof OrganismError ? err.detail : (err as Error).message, ExitCode.STORAGE);
    },
  });
  await organism.start();
  const work = member!;
  const concurrency = Math.min(work.concurrency ?? Infinity, loaded.config.maxConcurrentHandlers);
  process.stdout.write(
    [
      `organism worker ${cluster.name ?? work.workerId} running ${organism.name} (config ${path})`,
      `  Store:       ${where}`,
      `  Worker id:   ${work.workerId}`,
      `  Concurrency: ${concurrency} (organism-wide limits: ${loaded.config.maxConcurrentHandlers} handlers, ${loaded.config.maxConcurrentPerAgent} per agent)`,
      `  Lease:       ${cluster.leaseMs / 1000} s`,
      '',
    ].join('\n'),
  );

  return new Promise<number>((resolve) => {
    // What keeps the process running until it is told to stop. A worker serves no socket, and
    // the store's timers (heartbeat, poll, reconnects) do not hold the event loop open: with
    // the database gone (a restart, an outage) an idle worker would otherwise have nothing
    // left to wait on, and Node would end it mid-await (exit 13) instead of riding it out.
    const running = setInterval(() => {}, 1 << 30);
    let stopping = false;
    const stop = () => {
      if (stopping) return;
      stopping = true;
      logger.info('shutting down gracefully');
      void organism
        .stop({ timeoutMs: options.drainTimeoutMs })
        .then((report) => {
          logger.info({ abortedInFlight: report.abortedInFlight }, 'worker stopped');
          clearInterval(running);
          resolve(ExitCode.OK);
        })
        .catch((err: unknown) => {
          logger.error({ err }, 'stopping failed');
          clearInterval(running);
          resolve(ExitCode.FAILURE);
        });
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
    process.on('SIGHUP', stop);
  });
}
