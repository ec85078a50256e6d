/**
 * `organism worker` processes of cluster mode, from the built CLI, each in its own process
 * group with the run's marker in its environment (so a leftover is found wherever it went).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { Api } from './api.js';
import { MARKER_ENV } from './procs.js';
import { sleep } from './random.js';
import { CLI } from './server.js';

export interface WorkerProc {
  readonly name: string;
  readonly pid: number;
  readonly child: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** Set once it has exited. */
  exit: { code: number | null; signal: string | null } | null;
  /** Its output since it started (stdout and stderr, from its log file). */
  output(): string;
}

export interface WorkerSettings {
  readonly storeUrl: string;
  readonly leaseSeconds: number;
  readonly marker: string;
  /** Each worker logs to <logDir>/worker-<name>.log. */
  readonly logDir: string;
  readonly env: Readonly<Record<string, string>>;
}

export class Workers {
  /** The workers that should be running (two, between phases). */
  readonly live: WorkerProc[] = [];
  private n = 0;

  constructor(readonly settings: WorkerSettings) {}

  /** Spawns a worker on `configPath`; not yet known to be listed (see listed()). */
  spawn(configPath: string, name = `w${++this.n}`): WorkerProc {
    const s = this.settings;
    const logFile = path.join(s.logDir, `worker-${name}.log`);
    const log = openSync(logFile, 'a');
    const child = spawn(
      process.execPath,
      [CLI, 'worker', configPath, '--store', s.storeUrl, '--name', name, '--lease-seconds', String(s.leaseSeconds), '--drain-timeout', '10', '--log-level', 'warn'],
      { detached: true, stdio: ['ignore', log, log], env: { ...process.env, ...s.env, [MARKER_ENV]: s.marker } },
    );
    closeSync(log);
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
    const w: WorkerProc = {
      name,
      pid: child.pid!,
      child,
      exited,
      exit: null,
      output: () => readFileSync(logFile, 'utf8').slice(-4_000),
    };
    void exited.then((e) => (w.exit = e));
    return w;
  }

  /** Starts a worker on the run's config and waits until serve lists it alive. */
  async start(api: Api, configPath: string, deadlineMs: number): Promise<WorkerProc> {
    const w = this.spawn(configPath);
    this.live.push(w);
    if (!(await this.listed(api, w, deadlineMs)))
      throw new Error(
        `worker ${w.name} (pid ${w.pid}) not listed alive within ${deadlineMs / 1000} s${w.exit ? ` (exited ${w.exit.signal ?? w.exit.code})` : ''}: ${w.output().slice(-600)}`,
      );
    return w;
  }

  forget(w: WorkerProc): void {
    const i = this.live.indexOf(w);
    if (i >= 0) this.live.splice(i, 1);
  }

  /** Waits until GET /api/v1/workers lists the worker alive; false if it exits or the deadline passes. */
  async listed(api: Api, w: WorkerProc, deadlineMs: number): Promise<boolean> {
    const t0 = performance.now();
    while (performance.now() - t0 < deadlineMs && !w.exit) {
      if ((await aliveWorkers(api))?.has(w.pid)) return true;
      await sleep(100);
    }
    return false;
  }
}

/** Pids of the processes GET /api/v1/workers says are alive, or null when it does not answer. */
export async function aliveWorkers(api: Api): Promise<Set<number> | null> {
  const a = await api.request('GET', '/api/v1/workers', undefined, 5_000);
  if (!a.ok || a.status !== 200) return null;
  const rows = (a.body as { workers: Array<{ pid: number; alive: boolean; kind: string }> }).workers;
  return new Set(rows.filter((r) => r.alive && r.kind === 'worker').map((r) => r.pid));
}
