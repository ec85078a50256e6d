/**
 * Cluster mode (PostgreSQL): `serve --handlers off` and two `organism worker` processes on a
 * fresh database of a private PostgreSQL server (never the machine's shared server), with that
 * mode's faults. A phase returns once the organism should be serving again with two workers.
 */
import { closeSync, openSync, readSync, statSync } from 'node:fs';
import type { PrivatePostgres } from '../../test/support/private-postgres.js';
import { effectsOf, fifoViolations, rerunViolations } from '../../test/scaleout/checks.js';
import type { RunLine } from '../../test/scaleout/cluster.js';
import type { EffectsView } from '../../test/crash/effects.js';
import type { Violation } from '../../test/crash/checks.js';
import type { CheckName } from './checks.js';
import { Fatal, startServeOrReport } from './harness.js';
import { pausedThroughFault, waitFor } from './paused.js';
import { gone, signal } from './procs.js';
import { sleep, type Random } from './random.js';
import { Serve } from './server.js';
import type { Injector } from './workload.js';
import { aliveWorkers, type Workers, type WorkerProc } from './workers.js';

export const CLUSTER_PHASES = ['kill-worker', 'stop-worker', 'pg-restart-idle', 'pg-restart-busy', 'kill-serve', 'config-mismatch', 'paused-fault'] as const;
export type ClusterPhase = (typeof CLUSTER_PHASES)[number];

export const CLUSTER_PHASE_WEIGHTS: Readonly<Record<ClusterPhase, number>> = {
  'kill-worker': 3,
  'stop-worker': 2,
  'pg-restart-idle': 2,
  'pg-restart-busy': 3,
  'kill-serve': 2,
  'config-mismatch': 1,
  'paused-fault': 2,
};

/** The workers' lease: short, so a killed or stopped worker's deliveries come back within a cycle. */
export const LEASE_SECONDS = 5;
const SERVE_DEADLINE_MS = 30_000;
const WORKER_DEADLINE_MS = 60_000;
/** How long workers are watched after a database restart (the idle ones exited within 0.2 s in issue 23). */
const WATCH_AFTER_RESTART_MS = 3_000;

/** The handlers' log (cluster mode), read incrementally: the whole run's lines, in the order they happened. */
export class RunsLog {
  readonly runs: RunLine[] = [];
  private offset = 0;
  private partial = '';

  constructor(readonly file: string) {}

  read(): RunLine[] {
    const size = statSync(this.file).size;
    if (size > this.offset) {
      const buf = Buffer.alloc(size - this.offset);
      const fd = openSync(this.file, 'r');
      try {
        readSync(fd, buf, 0, buf.length, this.offset);
      } finally {
        closeSync(fd);
      }
      this.offset = size;
      const lines = (this.partial + buf.toString('utf8')).split('\n');
      this.partial = lines.pop() ?? '';
      // A kill may cut a line short: only whole JSON lines count.
      for (const l of lines) if (l.startsWith('{') && l.endsWith('}')) this.runs.push(JSON.parse(l) as RunLine);
    }
    return this.runs;
  }
}

export interface ClusterDeps {
  readonly serve: Serve;
  readonly workers: Workers;
  readonly pg: PrivatePostgres;
  readonly injector: Injector;
  readonly rng: Random;
  readonly report: (check: CheckName, detail: string) => void;
  readonly configPath: string;
  /** A copy of the config with one setting changed (the config-mismatch phase). */
  readonly otherConfigPath: string;
  /** Stops the steady injectors and the text probes (an idle database restart). */
  readonly quiesce: () => Promise<void>;
  readonly runs: RunsLog;
}

export class ClusterHarness {
  readonly faults: Record<string, number> = {};
  readonly timings: Record<string, number[]> = {};
  readonly disabled = new Set<ClusterPhase>();
  readonly quarantined = new Set<string>();
  cycle = 0;
  /** Workers SIGKILLed (their runs may be repeated). */
  readonly killed = new Set<number>();
  /** Workers SIGSTOPped past their lease (their runs may be repeated, and may start late). */
  readonly stopped = new Set<number>();
  private reported = new Set<string>();
  private checkedRuns = 0;

  constructor(readonly d: ClusterDeps) {}

  private count(fault: string): void {
    this.faults[fault] = (this.faults[fault] ?? 0) + 1;
  }

  time(what: string, ms: number): void {
    (this.timings[what] ??= []).push(ms);
  }

  /** Serve and two workers, the first time. */
  async startAll(): Promise<void> {
    await this.startServe('the first start');
    for (let i = 0; i < 2; i++) await this.d.workers.start(this.d.serve.api, this.d.configPath, WORKER_DEADLINE_MS);
  }

  async run(phase: ClusterPhase): Promise<void> {
    this.count(phase);
    switch (phase) {
      case 'kill-worker':
        return this.killWorker();
      case 'stop-worker':
        return this.stopWorker();
      case 'pg-restart-idle':
        return this.pgRestart(false);
      case 'pg-restart-busy':
        return this.pgRestart(true);
      case 'kill-serve':
        return this.killServe();
      case 'config-mismatch':
        return this.configMismatch();
      case 'paused-fault':
        return this.pausedFault();
    }
  }

  async startServe(why: string): Promise<void> {
    await startServeOrReport({ serve: this.d.serve, report: this.d.report, time: (what, ms) => this.time(what, ms), cycle: this.cycle, clear: async () => this.killServeProcesses() }, why);
  }

  /** The serve processes (supervisor and its worker), not the organism workers. */
  private serveProcesses(): number[] {
    const workerPids = new Set(this.d.workers.live.map((w) => w.pid));
    return this.d.serve
      .processes()
      .filter((p) => !p.cmdline.includes(' worker '))
      .filter((p) => !workerPids.has(p.pid))
      .map((p) => p.pid);
  }

  private killServeProcesses(): void {
    for (const pid of this.serveProcesses()) signal(pid, 'SIGKILL');
  }

  private pickWorker(): WorkerProc {
    const w = this.d.rng.pick(this.d.workers.live);
    if (!w) throw new Fatal('no organism worker to pick');
    return w;
  }

  /** Replaces a worker that is gone (killed by the harness or exited on its own). */
  private async replace(w: WorkerProc): Promise<void> {
    this.d.workers.forget(w);
    const t0 = performance.now();
    await this.d.workers.start(this.d.serve.api, this.d.configPath, WORKER_DEADLINE_MS);
    this.time('worker start until listed alive (ms)', performance.now() - t0);
  }

  async killWorker(): Promise<void> {
    const w = this.pickWorker();
    this.killed.add(w.pid);
    signal(w.pid, 'SIGKILL');
    await w.exited;
    await this.replace(w);
  }

  /** SIGSTOP past the lease: the other worker takes its deliveries back; after SIGCONT it must go on. */
  async stopWorker(): Promise<void> {
    const w = this.pickWorker();
    this.stopped.add(w.pid);
    signal(w.pid, 'SIGSTOP');
    await sleep(LEASE_SECONDS * 1000 + this.d.rng.int(1_000, 2_500));
    signal(w.pid, 'SIGCONT');
    const t0 = performance.now();
    if (await this.d.workers.listed(this.d.serve.api, w, WORKER_DEADLINE_MS)) this.time('stopped worker listed alive again after SIGCONT (ms)', performance.now() - t0);
    else await this.lost(w, 'SIGSTOP past its lease and SIGCONT');
  }

  /** A worker that exited (or stopped heartbeating) on its own: a violation; replaced so the run goes on. */
  private async lost(w: WorkerProc, after: string): Promise<void> {
    const how = w.exit ? `exited (${w.exit.signal ?? `code ${w.exit.code}`})` : 'is not listed alive';
    this.d.report('workers-ride-out', `cycle ${this.cycle}: worker ${w.name} (pid ${w.pid}) ${how} after ${after}: ${w.output().trim().split('\n').slice(-3).join(' | ').slice(0, 600)}`);
    // Its deliveries are taken back and run again: that is the takeover working, not another
    // violation (the worker's death is the one reported).
    this.killed.add(w.pid);
    if (!w.exit) {
      signal(w.pid, 'SIGKILL');
      await w.exited;
    }
    await this.replace(w);
  }

  /** PostgreSQL restarted (fast or immediate) with the workers idle or running handlers. */
  async pgRestart(busy: boolean): Promise<void> {
    const api = this.d.serve.api;
    const stats = async () => {
      const a = await api.request('GET', '/api/v1/journal/stats', undefined, 10_000);
      return a.ok && a.status === 200 ? (a.body as { counts: Record<string, number> }).counts : null;
    };
    let state: string;
    if (busy) {
      const inFlight = await waitFor(async () => ((await stats())?.['DISPATCHED'] ?? 0) > 0, 10_000);
      state = inFlight ? 'busy' : 'busy (nothing was in flight at the instant)';
    } else {
      await this.d.quiesce();
      const idle = await waitFor(async () => {
        const c = await stats();
        return c !== null && c['PENDING'] === 0 && c['DISPATCHED'] === 0;
      }, 30_000);
      state = idle ? 'idle' : 'idle (the journal had not drained in 30 s)';
    }
    const mode = this.d.rng.pick(['fast', 'immediate'] as const);
    this.count(`PostgreSQL restart: ${mode}, workers ${state}`);
    const before = [...this.d.workers.live];
    const t0 = performance.now();
    this.d.pg.stop(mode);
    // Short outages: one longer than the lease would let others take deliveries back (documented).
    await sleep(this.d.rng.int(0, 300));
    this.d.pg.start();
    this.time('PostgreSQL down (ms)', performance.now() - t0);
    await sleep(WATCH_AFTER_RESTART_MS);
    const h0 = performance.now();
    if (!(await waitFor(() => this.d.serve.healthy(2_000), SERVE_DEADLINE_MS))) {
      this.d.report(
        'workers-ride-out',
        `cycle ${this.cycle}: serve not healthy within ${SERVE_DEADLINE_MS / 1000} s after a PostgreSQL restart (${mode}, ${state}): ${this.d.serve.logTail()}`,
      );
      throw new Fatal('serve did not come back after a PostgreSQL restart');
    }
    this.time('serve healthy after the PostgreSQL restart (ms)', performance.now() - h0);
    if (this.d.serve.current?.exit) {
      this.d.report('workers-ride-out', `cycle ${this.cycle}: serve exited after a PostgreSQL restart: ${this.d.serve.logTail()}`);
      await this.startServe('a PostgreSQL restart');
    }
    for (const w of before) {
      if (w.exit || !(await this.d.workers.listed(api, w, SERVE_DEADLINE_MS))) await this.lost(w, `a PostgreSQL restart (${mode}, workers ${state})`);
    }
  }

  /** serve SIGKILLed (its whole process group) and started again; the workers go on. */
  async killServe(): Promise<void> {
    const pids = this.serveProcesses();
    const exited = this.d.serve.current!.exited;
    this.d.injector.refusalAllowed = true;
    signal(-this.d.serve.supervisorPid, 'SIGKILL');
    await exited;
    if ((await Serve.waitGone(pids, 5_000)) === null) {
      this.d.report('no-process-left', `cycle ${this.cycle}: serve processes ${pids.join(', ')} still running 5 s after SIGKILL of their process group`);
      this.killServeProcesses();
    }
    await this.startServe('SIGKILL of serve');
    this.d.injector.refusalAllowed = false;
  }

  /** A worker with another organism.yaml: refused at start (exit code 3, naming the difference). */
  async configMismatch(): Promise<void> {
    const w = this.d.workers.spawn(this.d.otherConfigPath, `mismatch-${this.cycle}`);
    let listedAlive = false;
    const t0 = performance.now();
    while (!w.exit && performance.now() - t0 < WORKER_DEADLINE_MS) {
      if ((await aliveWorkers(this.d.serve.api))?.has(w.pid)) listedAlive = true;
      await sleep(100);
    }
    if (!w.exit) {
      this.d.report('config-mismatch-refused', `cycle ${this.cycle}: a worker with another organism.yaml still runs ${WORKER_DEADLINE_MS / 1000} s after it started`);
      signal(w.pid, 'SIGKILL');
      await w.exited;
      return;
    }
    this.time('mismatched worker refused (ms)', performance.now() - t0);
    const out = w.output();
    if (w.exit.code !== 3)
      this.d.report('config-mismatch-refused', `cycle ${this.cycle}: the mismatched worker exited ${w.exit.signal ?? `code ${w.exit.code}`}, expected code 3: ${out.slice(-300)}`);
    if (!/max_?hops/i.test(out)) this.d.report('config-mismatch-refused', `cycle ${this.cycle}: the mismatched worker's refusal does not name the difference (max_hops): ${out.slice(-300)}`);
    if (listedAlive) this.d.report('config-mismatch-refused', `cycle ${this.cycle}: the mismatched worker was listed alive in GET /api/v1/workers`);
  }

  async pausedFault(): Promise<void> {
    const way = await pausedThroughFault(
      { api: this.d.serve.api, injector: this.d.injector, rng: this.d.rng, report: this.d.report, cycle: this.cycle },
      {
        'kill-serve': () => this.killServe(),
        'kill-worker': () => this.killWorker(),
        'pg-restart': () => this.pgRestart(true),
      },
    );
    this.count(`paused-fault via ${way}`);
  }

  /** Every worker the harness did not stop is still running (one that exited on its own is replaced). */
  async checkWorkers(): Promise<void> {
    for (const w of [...this.d.workers.live]) if (w.exit) await this.lost(w, `cycle ${this.cycle}'s phase`);
  }

  /**
   * Cluster mode's checks over the handlers' log: no delivery claimed twice, rerun only
   * after its process was killed or stopped past its lease, attempts increasing, per-thread
   * FIFO; each violation is reported once. Returns the effects view for the durability checks.
   */
  logChecks(ordered: ReadonlyMap<string, readonly string[]>): EffectsView {
    const runs = this.d.runs.read();
    const excusedPids = new Set([...this.killed, ...this.stopped]);
    // A worker resumed after SIGSTOP past its lease may start a run of a delivery that was taken
    // back and run again with a higher attempt meanwhile: such a late start is judged by
    // acked-not-rerun (the journal's state when it started), not counted again as a rerun or
    // out of order.
    const highest = new Map<string, number>();
    for (const r of runs) if (r.ev === 'start') highest.set(r.messageId, Math.max(highest.get(r.messageId) ?? 0, r.attempt));
    const late = (r: RunLine) => r.ev === 'start' && this.stopped.has(r.pid) && r.attempt < highest.get(r.messageId)!;
    const found: Violation[] = [
      ...rerunViolations(
        runs.filter((r) => !late(r)),
        excusedPids,
      ),
      ...fifoViolations(runs, ordered, late),
    ];
    for (const v of found) {
      if (this.reported.has(v.detail)) continue;
      this.reported.add(v.detail);
      this.d.report(v.check as CheckName, `cycle ${this.cycle}: ${v.detail}`);
    }
    const all = effectsOf(runs);
    // Runs of ACKED deliveries: only this cycle's new ones (earlier ones were reported then).
    const fresh = effectsOf(runs.slice(this.checkedRuns));
    this.checkedRuns = runs.length;
    return { ...all, violations: fresh.violations };
  }

  /**
   * Exactly serve's supervisor and its server process, and the two organism workers (each with what
   * it runs itself): anything else was left behind by a fault.
   */
  async checkProcesses(cycle: number): Promise<void> {
    const sup = this.d.serve.supervisorPid;
    const workerPids = new Set(this.d.workers.live.map((w) => w.pid));
    let problem = '';
    let strays: number[] = [];
    for (let i = 0; i < 40; i++) {
      const procs = this.d.serve.processes();
      const byPid = new Map(procs.map((p) => [p.pid, p]));
      const rooted = (pid: number): boolean => {
        for (let p = byPid.get(pid); p; p = byPid.get(p.ppid)) if (p.pid === sup || workerPids.has(p.pid)) return true;
        return false;
      };
      const serveChildren = procs.filter((p) => p.ppid === sup && p.cmdline.includes(' serve '));
      const stray = procs.filter((p) => !rooted(p.pid));
      const missing = [...workerPids].filter((pid) => gone(pid));
      strays = stray.map((p) => p.pid);
      problem = [
        ...stray.map((p) => `${p.pid} (parent ${p.ppid}, state ${p.state}): ${p.cmdline}`),
        ...(serveChildren.length === 1 ? [] : [`${serveChildren.length} server processes of serve (${serveChildren.map((p) => p.pid).join(', ')})`]),
        ...missing.map((pid) => `organism worker ${pid} is gone`),
      ].join('; ');
      if (!problem) return;
      await sleep(100);
    }
    this.d.report('no-process-left', `cycle ${cycle}: ${problem}`);
    for (const pid of strays) signal(pid, 'SIGKILL');
  }

  /** SIGTERM to every worker and to serve: each must exit 0; nothing may be left. */
  async stopAll(): Promise<void> {
    for (const w of [...this.d.workers.live]) {
      signal(w.pid, 'SIGTERM');
      const e = await Promise.race([w.exited, sleep(60_000).then(() => null)]);
      if (e?.code !== 0) this.d.report('graceful-stop', `SIGTERM: worker ${w.name} ${e ? `exited with ${e.signal ?? e.code}` : 'still running after 60 s'}`);
      this.d.workers.forget(w);
    }
    const exited = this.d.serve.current!.exited;
    signal(this.d.serve.supervisorPid, 'SIGTERM');
    const stop = await Promise.race([exited, sleep(60_000).then(() => null)]);
    if (stop?.code !== 0) this.d.report('graceful-stop', `SIGTERM: organism serve ${stop ? `exited with ${stop.signal ?? stop.code}` : 'still running after 60 s'}`);
  }
}

/** The config with one setting changed: a worker started with it must be refused. */
export function mismatchedConfig(text: string): string {
  const changed = text.replace(/^max_hops: (\d+)$/m, (_, n: string) => `max_hops: ${Number(n) + 1}`);
  if (changed === text) throw new Error('chaos/organism/organism.yaml has no max_hops line to change');
  return changed;
}
