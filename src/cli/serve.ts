import { loadOrganismToRun } from '../config/index.js';
import type { LoadedOrganism, OrganismConfig } from '../config/types.js';
import type { TracingSettings } from '../telemetry/settings.js';
import type { Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { buildApp, type Closing } from '../service/app.js';
import { consoleBuilt } from '../service/console.js';
import { resolveTracing, traceLogFields, tracesDestination } from '../telemetry/settings.js';
import { bootOrganism } from '../organism/boot.js';
import { resolveStore } from './store-option.js';
import { resolveCluster, type ClusterFlags } from './cluster-options.js';
import { createLogger, type Logger, type LogLevel } from '../util/logger.js';
import { VERSION } from '../version.js';
import { resolveConfigPath, resolveDataDir } from './config-path.js';
import { startDemoTraffic, type DemoTraffic } from './demo-traffic.js';
import { ConfigWatcher } from './watch.js';
import { keepsTypes, writeTypes } from './types.js';
import { checkBindable, ServeError } from './bind.js';
import { ExitCode } from './exit-codes.js';
import { resolveTokens } from './tokens.js';
import { SERVER_PROCESS_ENV } from './supervisor.js';
import { serveAccepted, SupervisorChannel } from './server-channel.js';
import { ensurePrivateDir, openToOthers } from '../util/private-files.js';

export { checkBindable, ServeError };

export interface ServeOptions {
  readonly port: number;
  readonly host: string;
  readonly dataDir?: string;
  /** `--store`: a PostgreSQL URL instead of the data directory's SQLite store (the data directory then keeps only the generated token). */
  readonly store?: string;
  readonly logLevel: LogLevel;
  /** `--slow-request`: requests this slow or slower are logged at warn (0: never); default 1 s. */
  readonly slowRequestMs?: number;
  readonly auth: boolean;
  readonly drainTimeoutMs: number;
  /** Inject a demo question every this many ms (`--demo-traffic`); omitted: no demo traffic. */
  readonly demoTrafficMs?: number;
  /** `--handlers`, `--concurrency`, `--name`, `--lease-seconds`, `--exclusive` (PostgreSQL store only). */
  readonly cluster?: ClusterFlags;
  /** `--watch`: reload when organism.yaml or a handler module changes (see ConfigWatcher). */
  readonly watch?: boolean;
}

/** Open connections may finish their requests this long once the organism has drained. */
const CONNECTION_GRACE_MS = 2_000;
/** An orphaned server process (its supervisor died) drains this long, and is gone within ORPHAN_EXIT_MS. */
const ORPHAN_DRAIN_MS = 1_000;
const ORPHAN_EXIT_MS = 1_800;

/**
 * One server process: loads the config, opens storage (recovering the journal), serves the
 * API, and shuts down gracefully on SIGTERM/SIGINT (exit 0) or restarts on SIGHUP and
 * POST /organism/restart (exit RESTART for the supervisor). Under a supervisor it serves on
 * the supervisor's listening socket, and exits within ORPHAN_EXIT_MS if the supervisor dies.
 */
export async function serveProcess(configArg: string | undefined, options: ServeOptions): Promise<number> {
  const { path, isDemo } = resolveConfigPath(configArg);
  // Lines written inside a delivery carry its trace_id and span_id (none when tracing is off).
  const logger = createLogger(options.logLevel, 'organism', traceLogFields);
  checkBindable(options.host, options.auth);
  const supervisor = SupervisorChannel.connect();
  // Started by a supervisor that is gone already: serving alone would outlive it.
  if (!supervisor && process.env[SERVER_PROCESS_ENV] === '1') throw new ServeError('the supervisor is gone; not starting', ExitCode.FAILURE);
  let orphaned: (() => void) | null = null;
  supervisor?.onDisconnect(() => {
    logger.warn('the supervisor is gone; shutting down');
    // Whatever happens below, this process must not outlive its supervisor for long.
    setTimeout(() => process.exit(ExitCode.FAILURE), ORPHAN_EXIT_MS).unref();
    if (orphaned) orphaned();
    else process.exit(ExitCode.FAILURE); // still booting: nothing to drain
  });
  await supervisor?.loading();
  const loaded = await loadOrganismToRun(path);
  let tracingSettings;
  try {
    tracingSettings = resolveTracing(loaded.config.telemetry, { name: loaded.config.name, version: VERSION });
  } catch (err) {
    throw new ServeError((err as Error).message, ExitCode.CONFIG_INVALID);
  }
  const dataDir = resolveDataDir(options.dataDir, path, isDemo);
  // It holds full prompts and answers (and perhaps the operator token): said once, at start.
  const openMode = openToOthers(dataDir);
  if (openMode) {
    logger.warn({ dataDir, mode: openMode }, `the data directory ${dataDir} is readable by other users (mode ${openMode}) while it holds prompts, answers and tokens: chmod 700 it`);
  }
  let store;
  let cluster;
  try {
    store = resolveStore(options.store);
    cluster = resolveCluster('serve', store, options.cluster ?? {});
  } catch (err) {
    throw new ServeError((err as Error).message, ExitCode.USAGE);
  }
  const storageFailed = (err: unknown) => new ServeError((err as Error).message, ExitCode.STORAGE);
  // Cluster mode: the database is the work queue of every serve and worker process; with
  // --exclusive (cluster null) this process owns it and schedules its deliveries itself.
  const { organism, where } = await bootOrganism({
    config: loaded,
    store: store.kind === 'postgres' ? { kind: 'postgres', url: store.url, cluster } : { kind: 'sqlite', dataDir },
    role: 'serve',
    logger,
    storeFailed: storageFailed,
  });
  const storage = organism.storage;
  let storeLabel = dataDir;
  if (store.kind === 'postgres') {
    storeLabel = `${where}${!cluster ? ' (exclusive: this process alone)' : cluster.handlers ? '' : ' (API only: --handlers off)'}`;
    try {
      ensurePrivateDir(dataDir); // the generated token's home
    } catch (err) {
      throw storageFailed(err);
    }
  }
  const tokens = options.auth ? resolveTokens(loaded.config, dataDir) : { tokens: [], generatedFile: null, problems: [] };
  if (tokens.problems.length > 0) {
    await storage.close();
    throw new ServeError(tokens.problems.join('\n'), ExitCode.CONFIG_INVALID);
  }

  // The OpenTelemetry SDK is loaded only when tracing is on.
  const tracing = tracingSettings ? new (await import('../telemetry/tracing.js')).OrganismTracing(tracingSettings, { logger }) : null;
  tracing?.attach(organism);

  // Built by `npm install` (vite) next to the compiled server: dist/console beside dist/cli.
  const consoleDir = fileURLToPath(new URL('../console/', import.meta.url));
  const hasConsole = consoleBuilt(consoleDir);
  let demo: DemoTraffic | null = null;
  let watcher: ConfigWatcher | null = null;

  let exitCode: number = ExitCode.OK;
  let shuttingDown: Promise<void> | null = null;
  let closing: Closing | null = null;
  const shutdown = (code: number): Promise<void> => {
    if (shuttingDown) return shuttingDown;
    exitCode = code;
    const restart = code === ExitCode.RESTART;
    closing = { drained: false, restart };
    shuttingDown = (async () => {
      logger.info({ restart }, 'shutting down gracefully');
      demo?.stop();
      watcher?.close();
      // The HTTP server stays up while draining: reads answer, new injections get a clear 503.
      const stopped = await organism.stop({ timeoutMs: options.drainTimeoutMs });
      logger.info({ journal: stopped.journal, abortedInFlight: stopped.abortedInFlight }, 'journal at shutdown');
      closing = { drained: true, restart };
      supervisor?.close();
      await closeGently(app.server, connections, CONNECTION_GRACE_MS);
      await app.close();
      // Spans still buffered go out before the process ends (bounded by the exporter's timeout).
      await tracing?.shutdown().catch((err: unknown) => logger.warn({ err }, 'flushing traces failed'));
    })();
    return shuttingDown;
  };
  orphaned = () => {
    if (shuttingDown) return;
    exitCode = ExitCode.FAILURE;
    // Nobody will hand this process connections or restart it: stop accepting first, then
    // give in-flight work a short bound (what is aborted stays in the journal for recovery).
    shuttingDown = (async () => {
      watcher?.close();
      await app.close();
      await organism.stop({ timeoutMs: ORPHAN_DRAIN_MS });
    })();
  };

  const app = await buildApp({
    organism,
    auth: { tokens: tokens.tokens, enabled: options.auth },
    logger,
    ...(options.slowRequestMs !== undefined ? { requestLog: { slowMs: options.slowRequestMs } } : {}),
    version: VERSION,
    onStop: () => void shutdown(ExitCode.OK),
    onRestart: () => void shutdown(ExitCode.RESTART),
    reloadConfig: () => loadOrganismToRun(path),
    ...(tracing ? { tracing: { provider: tracing.provider, traceProbes: loaded.config.telemetry?.traceProbes === true } } : {}),
    ...(hasConsole ? { consoleDir } : {}),
    ...(options.auth ? { resolveTokens: (config: OrganismConfig) => resolveTokens(config, dataDir) } : {}),
    closing: () => closing,
  });
  // A reload followed from another serve of a clustered organism (not through this process's
  // POST /organism/reload, which sets them itself) changes this one's tokens too: a token
  // revoked there must not go on working here.
  if (options.auth) {
    organism.bus.on((event) => {
      if (event.type !== 'reload' || !event.result.changed.some((k) => k.startsWith('auth.tokens'))) return;
      const next = resolveTokens(organism.config, dataDir);
      if (next.problems.length > 0) logger.error({ problems: next.problems }, 'the reloaded auth tokens cannot be resolved here; keeping the previous ones');
      else app.setAuthTokens(next.tokens);
    });
  }
  // Every connection, accepted here or handed over by the supervisor (server.getConnections
  // counts only the former), so a shutdown can let each finish its request.
  const connections = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    connections.add(socket);
    socket.once('close', () => connections.delete(socket));
  });
  // Started after the app is built (schemas compiled): recovered messages start flowing at
  // once, and would otherwise share the event loop with building it (bench scenario 5).
  await organism.start();
  // Installed once listening and before the supervisor hears "ready": it passes on a SIGHUP
  // that came during the boot as soon as it does, and the server process must not miss that one.
  const handleSignals = () => {
    process.on('SIGTERM', () => void shutdown(ExitCode.OK));
    process.on('SIGINT', () => void shutdown(ExitCode.OK));
    process.on('SIGHUP', () => void shutdown(ExitCode.RESTART));
  };
  try {
    if (supervisor) {
      const listener = await supervisor.listener();
      // Connections the received server accepts before Fastify takes its handle over.
      listener.on('connection', serveAccepted(app.server));
      // server.listen(handle) serves on an existing socket; Node ignores the host then (one
      // that is not 'localhost' keeps Fastify from binding extra addresses of its own).
      await app.listen({ host: '127.0.0.1', handle: (listener as unknown as { _handle: unknown })._handle } as { host: string });
      handleSignals();
      supervisor.ready(serveAccepted(app.server));
    } else {
      await app.listen({ port: options.port, host: options.host });
      handleSignals();
    }
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
    hasConsole ? `  Console:   ${base}/` : `  Console:   not built (run npm run build:console)`,
    `  API:       ${base}/api/v1`,
    `  OpenAPI:   ${base}/api/v1/openapi.json`,
    `  WebSocket: ws://${host}:${port}/ws`,
    `  Data:      ${storeLabel}`,
    options.auth
      ? tokens.generatedFile
        ? `  Token:     operator token in ${tokens.generatedFile} (Authorization: Bearer $(cat ${tokens.generatedFile}))`
        : `  Token:     from ${tokens.tokens.map((t) => t.name).join(', ')}`
      : '  Token:     authentication DISABLED (loopback only)',
    ...telemetryLines(loaded.config, tracingSettings, base),
  ];
  if (options.watch) {
    // In the server process (supervised or not), beside the organism it reloads: a restart
    // starts a new server process, and with it a new watcher.
    // A TypeScript project's organism-env.d.ts follows organism.yaml and the modules' payload types.
    const types = keepsTypes(path) ? (l: LoadedOrganism) => refreshTypes(l, logger) : undefined;
    types?.(loaded);
    watcher = new ConfigWatcher({ configPath: path, sources: loaded.sources ?? [], reload: (o) => app.reloadOrganism(o), logger, ...(types ? { onLoaded: types } : {}) });
    const modules = watcher.watched().length - 1;
    lines.push(`  Watching:  ${path}${modules > 0 ? ` and ${modules} handler file${modules === 1 ? '' : 's'}` : ''} (reloads on change)`);
  }
  if (options.demoTrafficMs !== undefined) {
    demo = startDemoTraffic(organism, options.demoTrafficMs, logger);
    lines.push(demo.target ? `  Demo:      a question to ${demo.target} every ${options.demoTrafficMs / 1000} s` : '  Demo:      no agent to send demo questions to');
  }
  process.stdout.write(`${lines.join('\n')}\n`);

  // The data directory deleted or replaced under us: staying up would only refuse work, and
  // what this process acknowledged lives on a deleted file until it exits. So it drains (acks
  // still commit to the open file), storage.close saves a rescue copy beside the directory,
  // and the process exits STORAGE: a service manager starts it afresh; the supervisor does
  // not (a fatal code), so nothing spins. The storage logged the loss, once, at error level.
  storage.onLost?.(() => void shutdown(ExitCode.STORAGE));

  await new Promise<void>((resolve) => app.server.once('close', () => resolve()));
  if (shuttingDown) await shuttingDown;
  return exitCode;
}

/** Where telemetry goes, so an operator sees at start whether metrics and traces are on. */
function telemetryLines(config: OrganismConfig, tracing: TracingSettings | null, base: string): string[] {
  const metrics = config.metrics ?? { enabled: true, public: false };
  const probes = config.telemetry?.traceProbes === true ? 'probes and scrapes traced too' : 'GET /health and /metrics untraced';
  return [
    metrics.enabled ? `  Metrics:   ${base}/metrics (Prometheus text${metrics.public ? ', no token needed' : ', viewer token'})` : '  Metrics:   off (metrics.enabled: false)',
    tracing
      ? `  Tracing:   OTLP ${tracing.protocol} to ${tracesDestination(tracing)} as service ${tracing.serviceName} (${probes})`
      : '  Tracing:   off (set telemetry.otlp.endpoint or OTEL_EXPORTER_OTLP_ENDPOINT)',
  ];
}

/**
 * Stops accepting, then lets open connections end by themselves (every response now closes
 * its connection) for up to `graceMs`. http.Server#close would drop idle connections at once,
 * racing a request a client is sending on one; net.Server#close only stops the listener.
 */
async function closeGently(server: Server, connections: ReadonlySet<Socket>, graceMs: number): Promise<void> {
  const deadline = Date.now() + graceMs;
  if (server.listening) NetServer.prototype.close.call(server);
  while (connections.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
}

/** Rewrites organism-env.d.ts when what it declares changed; a failure to write is logged, never fatal. */
function refreshTypes(loaded: LoadedOrganism, logger: Logger): void {
  try {
    const { file, changed } = writeTypes(loaded);
    if (changed) logger.info({ file }, `watch: ${file} rewritten (the organism's types changed)`);
  } catch (err) {
    logger.warn({ err }, 'watch: could not write organism-env.d.ts');
  }
}
