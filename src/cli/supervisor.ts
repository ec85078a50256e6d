import { fork, type ChildProcess } from 'node:child_process';
import { ExitCode } from './exit-codes.js';

/** Exit codes that mean "the worker cannot start": restarting would fail the same way. */
const FATAL_CODES = new Set<number>([ExitCode.USAGE, ExitCode.CONFIG_INVALID, ExitCode.STORAGE, ExitCode.LISTEN]);
const CRASH_WINDOW_MS = 60_000;
const MAX_CRASHES = 5;

export const WORKER_ENV = 'ORGANISM_SERVE_WORKER';

/**
 * `organism serve` runs as a small supervisor that keeps the PID the operator started (so
 * systemd and friends keep tracking it) and runs the server in a worker process. Node 20 has
 * no exec-style self-replacement (process.execve arrived in later Node versions), so a
 * graceful restart is: the worker drains and exits with RESTART, the supervisor starts a new
 * worker on the same port. SIGHUP to the supervisor asks the worker for that restart;
 * SIGTERM/SIGINT ask it to shut down. A crashing worker is restarted with backoff.
 */
export function supervise(script: string, args: readonly string[]): Promise<number> {
  return new Promise((resolve) => {
    let worker: ChildProcess | null = null;
    let stopping = false;
    const crashes: number[] = [];

    const start = () => {
      worker = fork(script, [...args], {
        env: { ...process.env, [WORKER_ENV]: '1' },
        stdio: 'inherit',
      });
      worker.on('exit', (code, signal) => {
        worker = null;
        const exitCode = code ?? (signal ? 128 + (signalNumber(signal) ?? 0) : ExitCode.FAILURE);
        if (stopping) return finish(exitCode === ExitCode.RESTART ? ExitCode.OK : exitCode);
        if (exitCode === ExitCode.RESTART) return start();
        if (exitCode === ExitCode.OK) return finish(ExitCode.OK);
        if (FATAL_CODES.has(exitCode)) return finish(exitCode);
        const now = Date.now();
        crashes.push(now);
        while (crashes.length > 0 && crashes[0]! < now - CRASH_WINDOW_MS) crashes.shift();
        if (crashes.length >= MAX_CRASHES) {
          process.stderr.write(`organism: worker crashed ${crashes.length} times within a minute; giving up\n`);
          return finish(ExitCode.FAILURE);
        }
        const delay = Math.min(250 * 2 ** (crashes.length - 1), 5_000);
        process.stderr.write(`organism: worker exited (${signal ?? code}); restarting in ${delay} ms\n`);
        setTimeout(start, delay);
      });
    };

    const finish = (code: number) => {
      process.off('SIGHUP', onHup);
      process.off('SIGTERM', onTerm);
      process.off('SIGINT', onTerm);
      resolve(code);
    };
    const onHup = () => {
      if (worker && !stopping) worker.kill('SIGHUP');
    };
    const onTerm = () => {
      stopping = true;
      if (worker) worker.kill('SIGTERM');
      else finish(ExitCode.OK);
    };
    process.on('SIGHUP', onHup);
    process.on('SIGTERM', onTerm);
    process.on('SIGINT', onTerm);
    start();
  });
}

function signalNumber(signal: NodeJS.Signals): number | undefined {
  const map: Partial<Record<NodeJS.Signals, number>> = { SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 };
  return map[signal];
}
