import { Command, Option } from 'commander';
import { fileURLToPath } from 'node:url';
import { ConfigInvalidError, formatConfigProblem } from '../config/errors.js';
import { VERSION } from '../version.js';
import { checkBindable, ServeError } from './bind.js';
import { ExitCode } from './exit-codes.js';
import { portOption, secondsOption } from './options.js';
import { supervise, SERVER_PROCESS_ENV } from './supervisor.js';
import { concurrencyOption, LEASE_ENV, leaseOption } from './cluster-options.js';

// Each command loads its modules when it runs: the supervisor of `serve` only owns the socket
// and restarts the server process, and loading the whole server (Fastify, SQLite, telemetry, the MCP SDK)
// there too cost a full second of CPU at every start.

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function collect(value: string, previous: string[]): string[] {
  return [...previous, value];
}

/** Prints a failure the way operators need it: what and where, never a stack trace. */
function report(err: unknown): number {
  if (err instanceof ConfigInvalidError) {
    for (const p of err.problems) process.stderr.write(`${formatConfigProblem(p)}\n`);
    return ExitCode.CONFIG_INVALID;
  }
  if (err instanceof ServeError) {
    process.stderr.write(`organism: ${err.message}\n`);
    return err.exitCode;
  }
  process.stderr.write(`organism: ${err instanceof Error ? err.message : String(err)}\n`);
  if (process.env['ORGANISM_DEBUG']) process.stderr.write(`${(err as Error)?.stack ?? ''}\n`);
  return ExitCode.FAILURE;
}

const program = new Command()
  .name('organism')
  .description('Runtime and operator control service for multi-agent LLM organisms')
  .version(VERSION)
  .exitOverride((err) => {
    process.exit(err.exitCode === 0 ? 0 : ExitCode.USAGE);
  });

const logLevel = () => new Option('--log-level <level>', 'log level').choices(LOG_LEVELS).default('info');

program
  .command('serve')
  .description('serve the control API (REST + WebSocket) for an organism')
  .argument('[config]', 'organism.yaml (default: ./organism.yaml, else the bundled demo)')
  .option('-p, --port <port>', 'HTTP port', portOption, 8080)
  .option('-H, --host <host>', 'bind address', '127.0.0.1')
  .option('--data-dir <dir>', 'data directory (default: $ORGANISM_DATA_DIR or .organism/ beside the config)')
  .option('--store <url>', 'keep the journal, threads and usage in PostgreSQL (postgres://user@host/db; default: $ORGANISM_STORE, else SQLite in the data directory)')
  .option('--no-auth', 'disable authentication (refused unless the host is loopback)')
  .option('--drain-timeout <seconds>', 'how long in-flight work may take on stop/restart', secondsOption(0, 86_400), 30)
  .option('--no-supervisor', 'run the server in this process (no same-PID restarts)')
  .option('--slow-request <seconds>', 'log requests that take this long or longer at warn (0: never; every request is logged at debug)', secondsOption(0, 86_400), 1)
  .option('--demo-traffic [seconds]', 'inject a demo question into the first agent every N seconds (default 3)', secondsOption(0.05, 86_400))
  .option('--watch', 'reload when organism.yaml or a handler module it names changes (as POST /organism/reload; an edit that does not load is logged and the running configuration kept)')
  .addOption(new Option('--handlers <on|off>', 'PostgreSQL store: run handlers here (on, the default) or serve the API only (off)').choices(['on', 'off']))
  .option('--concurrency <n>', 'PostgreSQL store: handlers this process runs at once at most (default: limits.max_concurrent_handlers)', concurrencyOption)
  .option('--name <name>', "PostgreSQL store: this process's name in /api/v1/workers (default: host:pid)")
  .option('--lease-seconds <seconds>', `PostgreSQL store: a process silent this long has its deliveries taken over (default: $${LEASE_ENV}, else 30)`, leaseOption)
  .option('--exclusive', "PostgreSQL store: this process owns the organism's schema (no workers, no other serve); deliveries are scheduled here, as with SQLite")
  .addOption(logLevel())
  .action(async (config: string | undefined, opts) => {
    const serverProcess = process.env[SERVER_PROCESS_ENV] === '1' || opts.supervisor === false;
    if (!serverProcess) {
      try {
        checkBindable(opts.host, opts.auth);
      } catch (err) {
        process.exit(report(err));
      }
      process.exit(await supervise(fileURLToPath(import.meta.url), process.argv.slice(2), { port: opts.port, host: opts.host }));
    }
    const supervised = process.env[SERVER_PROCESS_ENV] === '1';
    // Until the server installs its own handlers (its boot takes a while): a server process whose
    // supervisor is gone must not finish booting and serve on its own, and a SIGHUP meant for
    // the supervisor (a hangup of the whole process group) must not kill it.
    const orphaned = () => process.exit(ExitCode.FAILURE);
    const ignore = () => undefined;
    if (supervised) {
      if (!process.connected) orphaned();
      process.once('disconnect', orphaned);
      process.on('SIGHUP', ignore);
    }
    try {
      const { serveProcess } = await import('./serve.js');
      process.off('disconnect', orphaned);
      process.exit(
        await serveProcess(config, {
          port: opts.port,
          host: opts.host,
          dataDir: opts.dataDir,
          ...(opts.store !== undefined ? { store: opts.store } : {}),
          logLevel: opts.logLevel,
          slowRequestMs: opts.slowRequest * 1000,
          auth: opts.auth,
          drainTimeoutMs: opts.drainTimeout * 1000,
          ...(opts.demoTraffic !== undefined ? { demoTrafficMs: (opts.demoTraffic === true ? 3 : opts.demoTraffic) * 1000 } : {}),
          watch: opts.watch === true,
          cluster: { handlers: opts.handlers, concurrency: opts.concurrency, name: opts.name, leaseSeconds: opts.leaseSeconds, exclusive: opts.exclusive },
        }),
      );
    } catch (err) {
      process.exit(report(err));
    }
  });

program
  .command('worker')
  .description('run handlers only (no HTTP) for an organism in cluster mode (one PostgreSQL store); any number of them, on any machine')
  .argument('[config]', 'organism.yaml (default: ./organism.yaml, else the bundled demo); the one the serve processes run')
  .option('--store <url>', "the organism's PostgreSQL database (postgres://user@host/db; default: $ORGANISM_STORE)")
  .option('--concurrency <n>', 'handlers this process runs at once at most (default: limits.max_concurrent_handlers)', concurrencyOption)
  .option('--name <name>', "this process's name in /api/v1/workers (default: host:pid)")
  .option('--lease-seconds <seconds>', `a process silent this long has its deliveries taken over (default: $${LEASE_ENV}, else 30)`, leaseOption)
  .option('--drain-timeout <seconds>', 'how long in-flight work may take on stop', secondsOption(0, 86_400), 30)
  .addOption(logLevel())
  .action(async (config: string | undefined, opts) => {
    try {
      const { workerCommand } = await import('./worker.js');
      process.exit(
        await workerCommand(config, {
          ...(opts.store !== undefined ? { store: opts.store } : {}),
          ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
          ...(opts.name !== undefined ? { name: opts.name } : {}),
          ...(opts.leaseSeconds !== undefined ? { leaseSeconds: opts.leaseSeconds } : {}),
          logLevel: opts.logLevel,
          drainTimeoutMs: opts.drainTimeout * 1000,
        }),
      );
    } catch (err) {
      process.exit(report(err));
    }
  });

program
  .command('run')
  .description('run an organism headless and print its traffic')
  .argument('[config]', 'organism.yaml (default: ./organism.yaml, else the bundled demo)')
  .option('-i, --inject <target=json>', 'inject a message at start (repeatable)', collect, [])
  .option('--once', 'exit when every thread has finished')
  .option('--data-dir <dir>', 'keep a durable journal in this directory')
  .addOption(logLevel().default('warn'))
  .action(async (config: string | undefined, opts) => {
    try {
      const { runCommand } = await import('./run.js');
      process.exit(await runCommand(config, { inject: opts.inject, once: Boolean(opts.once), dataDir: opts.dataDir, logLevel: opts.logLevel }));
    } catch (err) {
      process.exit(report(err));
    }
  });

program
  .command('check')
  .description('validate an organism.yaml and print every problem')
  .argument('[config]', 'organism.yaml (default: ./organism.yaml, else the bundled demo)')
  .option('--probe', 'also start each MCP server of mcp_servers and list its tools (check is offline without it)')
  .option('--no-types', 'do not refresh organism-env.d.ts nor type-check the handler modules (done when it or a tsconfig.json is beside organism.yaml)')
  .action(async (config: string | undefined, opts: { probe?: boolean; types?: boolean }) => {
    try {
      const { checkCommand } = await import('./check.js');
      process.exit(await checkCommand(config, { probe: opts.probe === true, types: opts.types !== false }));
    } catch (err) {
      process.exit(report(err));
    }
  });

program
  .command('replay')
  .description('replay exported cassettes (GET /api/v1/threads/{id}/export) offline against a configuration: identical, changed or regression each')
  .argument('<cassettes...>', 'cassette files')
  .option('-c, --config <file>', 'organism.yaml (default: ./organism.yaml, else the bundled demo)')
  .action(async (cassettes: string[], opts: { config?: string }) => {
    try {
      const { replayCommand } = await import('./replay.js');
      process.exit(await replayCommand(cassettes, opts.config));
    } catch (err) {
      process.exit(report(err));
    }
  });

program
  .command('types')
  .description('write organism-env.d.ts beside organism.yaml: TypeScript types of its payloads, listeners and peers for defineHandler')
  .argument('[config]', 'organism.yaml (default: ./organism.yaml)')
  .option('-o, --out <file>', 'write the declarations here instead')
  .action(async (config: string | undefined, opts: { out?: string }) => {
    try {
      const { typesCommand } = await import('./types.js');
      process.exit(await typesCommand(config, opts.out !== undefined ? { out: opts.out } : {}));
    } catch (err) {
      process.exit(report(err));
    }
  });

program
  .command('init')
  .description('write a starter organism (organism.yaml, a TypeScript handler, package.json, tsconfig.json)')
  .argument('[dir]', 'target directory', '.')
  .action(async (dir: string) => {
    try {
      const { initCommand } = await import('./init.js');
      process.exit(await initCommand(dir));
    } catch (err) {
      process.exit(report(err));
    }
  });

await program.parseAsync(process.argv);
