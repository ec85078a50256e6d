import { loadOrganismToRun } from '../config/index.js';
import type { Organism } from '../organism/organism.js';
import { bootOrganism } from '../organism/boot.js';
import { createLogger, type LogLevel } from '../util/logger.js';
import { resolveConfigPath, resolveDataDir } from './config-path.js';
import type { ThreadRecord } from '../core/thread.js';
import { ExitCode } from './exit-codes.js';
import { formatEvent } from './traffic.js';

export interface RunOptions {
  readonly inject: string[];
  readonly once: boolean;
  readonly dataDir?: string;
  readonly logLevel: LogLevel;
}

/** Parses `target=JSON` (the JSON is the payload, with or without its type name). */
export function parseInjectArg(arg: string): { to: string; payload: unknown } {
  const eq = arg.indexOf('=');
  if (eq <= 0) throw new Error(`--inject expects TARGET=JSON, got: ${arg}`);
  const to = arg.slice(0, eq);
  try {
    return { to, payload: JSON.parse(arg.slice(eq + 1)) };
  } catch (err) {
    throw new Error(`--inject ${to}: the payload is not valid JSON (${(err as Error).message})`);
  }
}

/** `organism run`: the organism headless, its traffic printed line by line. */
export async function runCommand(configArg: string | undefined, options: RunOptions): Promise<number> {
  const { path, isDemo } = resolveConfigPath(configArg);
  const loaded = await loadOrganismToRun(path);
  const logger = createLogger(options.logLevel);
  const { organism } = await bootOrganism({
    config: loaded,
    store: options.dataDir ? { kind: 'sqlite', dataDir: resolveDataDir(options.dataDir, path, isDemo) } : { kind: 'memory' },
    role: 'run',
    logger,
  });
  organism.bus.on((event) => {
    const line = formatEvent(event);
    if (line) process.stdout.write(`${line}\n`);
  });
  process.stdout.write(`organism ${organism.name}: ${organism.agents().length} listeners (${path})\n`);
  await organism.start();

  const injections = options.inject.length > 0 || !isDemo ? options.inject : [`researcher={"Question":{"text":"tide pools"}}`];
  const threadIds: string[] = [];
  for (const arg of injections) {
    const { to, payload } = parseInjectArg(arg);
    threadIds.push((await organism.inject(to, payload, { waitMs: 5_000 })).threadId);
  }

  const stop = async () => {
    await organism.stop({ timeoutMs: 10_000 });
    return 0;
  };
  if (options.once) {
    await waitUntilIdle(organism);
    const threads = await Promise.all(threadIds.map((id) => organism.thread(id)));
    await stop();
    const failed = failedThreads(threads);
    for (const line of failed) process.stderr.write(`organism run: ${line}\n`);
    return failed.length > 0 ? ExitCode.THREAD_FAILED : ExitCode.OK;
  }
  return new Promise((resolve) => {
    const onSignal = () => void stop().then(resolve);
    process.once('SIGINT', onSignal);
    process.once('SIGTERM', onSignal);
  });
}

/** One line per thread that ended in \`error\` or was killed, naming it and its error. */
export function failedThreads(threads: readonly (ThreadRecord | null)[]): string[] {
  return threads.flatMap((t) => {
    if (!t || (t.status !== 'error' && t.status !== 'killed')) return [];
    const how = t.status === 'killed' ? 'was killed' : 'ended in error';
    return [`thread ${t.id} ${how}${t.error ? `: ${t.error}` : ''}`];
  });
}

async function waitUntilIdle(organism: Organism): Promise<void> {
  // Idle = no live thread. Checked on every thread event rather than on a timer.
  if (organism.activeThreads === 0) return;
  await new Promise<void>((resolve) => {
    const off = organism.bus.on((event) => {
      if (event.type === 'thread_updated' && organism.activeThreads === 0) {
        off();
        resolve();
      }
    });
  });
}
