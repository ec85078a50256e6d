import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * Scenarios run their measured work in child processes: each starts with a clean heap, and a
 * server never shares an event loop with its load generator. Children are TypeScript run
 * through tsx and talk to the parent over the IPC channel.
 */

type ChildMessage<T> = { readonly type: 'ready'; readonly info: T } | { readonly type: 'result'; readonly result: T } | { readonly type: 'error'; readonly error: string };

export const benchFile = (relative: string): string => fileURLToPath(new URL(`../${relative}`, import.meta.url));

/** BENCH_PROFILE=DIR: every child writes a CPU profile there (for explaining a miss). */
function profileArgs(): string[] {
  const dir = process.env['BENCH_PROFILE'];
  return dir ? ['--cpu-prof', '--cpu-prof-dir', dir] : [];
}

function spawnChild(file: string, input: unknown, execArgv: readonly string[]): ChildProcess {
  return fork(file, [JSON.stringify(input)], {
    execArgv: ['--import', 'tsx', ...profileArgs(), ...execArgv],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env },
  });
}

function waitForMessage<T>(child: ChildProcess, kind: 'ready' | 'result', timeoutMs: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      child.kill('SIGKILL');
      reject(new Error(`${what}: no ${kind} within ${Math.round(timeoutMs / 1000)} s`));
    }, timeoutMs);
    const onMessage = (m: ChildMessage<T>) => {
      if (m.type === 'error') {
        cleanup();
        reject(new Error(`${what}: ${m.error}`));
      } else if (m.type === kind) {
        cleanup();
        resolve(m.type === 'ready' ? m.info : (m as { result: T }).result);
      }
    };
    const onExit = (code: number | null, signal: string | null) => {
      cleanup();
      reject(new Error(`${what}: exited (${signal ?? code}) before ${kind}`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

/** Runs a child to completion and returns what it reported. */
export async function runChild<T>(file: string, input: unknown, options: { timeoutMs: number; execArgv?: readonly string[]; what?: string }): Promise<T> {
  const child = spawnChild(file, input, options.execArgv ?? []);
  const what = options.what ?? file;
  try {
    return await waitForMessage<T>(child, 'result', options.timeoutMs, what);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
  }
}

export interface RunningServer<T> {
  readonly info: T;
  readonly pid: number;
  /** Sends a command and waits for its answer (for servers that take commands). */
  request<R>(command: Record<string, unknown>, timeoutMs?: number): Promise<R>;
  stop(): Promise<void>;
}

/** Starts a long-lived child (a server) and resolves once it reports ready. */
export async function startServer<T>(file: string, input: unknown, options: { timeoutMs?: number; execArgv?: readonly string[]; what?: string } = {}): Promise<RunningServer<T>> {
  const child = spawnChild(file, input, options.execArgv ?? []);
  const what = options.what ?? file;
  const info = await waitForMessage<T>(child, 'ready', options.timeoutMs ?? 120_000, what);
  let nextId = 1;
  return {
    info,
    pid: child.pid!,
    request<R>(command: Record<string, unknown>, timeoutMs = 300_000): Promise<R> {
      const id = nextId++;
      return new Promise<R>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.off('message', onMessage);
          reject(new Error(`${what}: no answer to ${String(command['cmd'])} within ${timeoutMs} ms`));
        }, timeoutMs);
        const onMessage = (m: { type: string; id?: number; result?: R; error?: string }) => {
          if (m.id !== id) return;
          clearTimeout(timer);
          child.off('message', onMessage);
          if (m.type === 'error') reject(new Error(`${what}: ${m.error}`));
          else resolve(m.result as R);
        };
        child.on('message', onMessage);
        child.send({ ...command, id });
      });
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

// ------------------------------------------------------------------ inside a child

/** The input the parent passed to this child. */
export function childInput<T>(): T {
  return JSON.parse(process.argv[2] ?? '{}') as T;
}

function send(message: unknown): Promise<void> {
  return new Promise((resolve) => {
    if (!process.send) {
      process.stdout.write(`${JSON.stringify(message)}\n`);
      resolve();
      return;
    }
    process.send(message, () => resolve());
  });
}

/** Runs a child's job and reports its result (or its error) to the parent, then exits. */
export function childMain<I, R>(job: (input: I) => Promise<R>): void {
  job(childInput<I>())
    .then(async (result) => {
      await send({ type: 'result', result });
      process.exit(0);
    })
    .catch(async (err: unknown) => {
      await send({ type: 'error', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
      process.exit(1);
    });
}

/** Tells the parent a server child is ready; handles its commands until SIGTERM. */
export async function serverReady<T>(info: T, commands: Record<string, (command: Record<string, unknown>) => Promise<unknown>> = {}): Promise<void> {
  process.on('message', (m: Record<string, unknown>) => {
    const handler = commands[String(m['cmd'])];
    if (!handler) {
      void send({ type: 'error', id: m['id'], error: `unknown command ${String(m['cmd'])}` });
      return;
    }
    handler(m).then(
      (result) => send({ type: 'result', id: m['id'], result }),
      (err: unknown) => send({ type: 'error', id: m['id'], error: err instanceof Error ? err.message : String(err) }),
    );
  });
  await send({ type: 'ready', info });
}

/** Reports a failure to start to the parent, then exits. */
export async function serverFailed(err: unknown): Promise<never> {
  await send({ type: 'error', error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
}
