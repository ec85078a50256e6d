import { loadOrganism } from '../config/index.js';
import type { OrganismConfig } from '../config/types.js';
import { Organism } from '../organism/organism.js';
import { buildApp } from '../service/app.js';
import { openSqliteStorage } from '../store/index.js';
import { createLogger, type LogLevel } from '../util/logger.js';
import { VERSION } from '../version.js';
import { resolveConfigPath, resolveDataDir } from './config-path.js';
import { ExitCode } from './exit-codes.js';
import { resolveTokens } from './tokens.js';

export interface ServeOptions {
  readonly port: number;
  readonly host: string;
  readonly dataDir?: string;
  readonly logLevel: LogLevel;
  readonly auth: boolean;
  readonly drainTimeoutMs: number;
}

export class ServeError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost|\[::1\])$/;

/**
 * One server process: loads the config, opens storage (recovering the journal), serves the
 * API, and shuts down gracefully on SIGTERM/SIGINT (exit 0) or restarts on SIGHUP and
 * POST /organism/restart (exit RESTART for the supervisor).
 */
export async function serveWorker(configArg: string | undefined, options: ServeOptions): Promise<number> {
  const { path, isDemo } = resolveConfigPath(configArg);
  const logger = createLogger(options.logLevel);
  if (!options.auth && !LOOPBACK.test(options.host)) {
    throw new ServeError(`refusing to bind ${options.host} with authentication disabled; use a loopback host or enable auth`, ExitCode.LISTEN);
  }
  const loaded = await loadOrganism(path);
  const dataDir = resolveDataDir(options.dataDir, path, isDemo);
  let storage;
  try {
    storage = openSqliteStorage({ dataDir, retainDays: loaded.config.journal.retainDays, failedRetainDays: loaded.config.journal.failedRetainDays, logger });
  } catch (err) {
    throw new ServeError((err as Error).message, ExitCode.STORAGE);
  }
  const tokens = options.auth ? resolveTokens(loaded.config, dataDir) : { tokens: [], generatedFile: null, problems: [] };
  if (tokens.problems.length > 0) {
    storage.close();
    throw new ServeError(tokens.problems.join('\n'), ExitCode.CONFIG_INVALID);
  }

  const organism = new Organism(loaded, { storage, logger });

  let exitCode: number = ExitCode.OK;
  let shuttingDown: Promise<void> | null = null;
  const shutdown = (code: number): Promise<void> => {
    if (shuttingDown) return shuttingDown;
    exitCode = code;
    shuttingDown = (async () => {
      logger.info({ restart: code === ExitCode.RESTART }, 'shutting down gracefully');
      // The HTTP server stays up while draining, so new injections get a clear 503.
      const stopped = await organism.stop({ timeoutMs: options.drainTimeoutMs });
      logger.info({ journal: stopped.journal, abortedInFlight: stopped.abortedInFlight }, 'journal at shutdown');
      await app.close();
    })();
    return shuttingDown;
  };

  const app = await buildApp({
    organism,
    auth: { tokens: tokens.tokens, enabled: options.auth },
    logger,
    version: VERSION,
    onStop: () => void shutdown(ExitCode.OK),
    onRestart: () => void shutdown(ExitCode.RESTART),
    reloadConfig: () => loadOrganism(path),
    ...(options.auth ? { resolveTokens: (config: OrganismConfig) => resolveTokens(config, dataDir) } : {}),
  });
  // Started after the app is built (schemas compiled): recovered messages start flowing at
  // once, and would otherwise share the event loop with building it (bench scenario 5).
  await organism.start();
  try {
    await app.listen({ port: options.port, host: options.host });
  } catch (err) {
    await organism.stop({ timeoutMs: 1_000 });
    throw new ServeError(`cannot listen on ${options.host}:${options.port}: ${(err as Error).message}`, ExitCode.LISTEN);
  }
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : options.port;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  const base = `http://${host}:${port}`;
  const lines = [
    `organism ${organism.name} serving (config ${path}${isDemo ? ', bundled demo' : ''})`,
    `  API:       ${base}/api/v1`,
    `  OpenAPI:   ${base}/api/v1/openapi.json`,
    `  WebSocket: ws://${host}:${port}/ws`,
    `  Data:      ${dataDir}`,
    options.auth
      ? tokens.generatedFile
        ? `  Token:     operator token in ${tokens.generatedFile} (Authorization: Bearer $(cat ${tokens.generatedFile}))`
        : `  Token:     from ${tokens.tokens.map((t) => t.name).join(', ')}`
      : '  Token:     authentication DISABLED (loopback only)',
  ];
  process.stdout.write(`${lines.join('\n')}\n`);

  process.on('SIGTERM', () => void shutdown(ExitCode.OK));
  process.on('SIGINT', () => void shutdown(ExitCode.OK));
  process.on('SIGHUP', () => void shutdown(ExitCode.RESTART));

  await new Promise<void>((resolve) => app.server.once('close', () => resolve()));
  if (shuttingDown) await shuttingDown;
  return exitCode;
}
