/**
 * The faults, each a phase of one cycle, and what the harness checks while applying them.
 * A phase returns once the organism should be serving again.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import path from 'node:path';
import { openSqliteStorage } from '../../src/store/index.js';
import type { CheckName } from './checks.js';
import { ATTACK_NAMES } from './hostile-llm.js';
import { pausedThroughFault, waitFor } from './paused.js';
import { signal } from './procs.js';
import { sleep, type Random } from './random.js';
import { Serve, StartFailed } from './server.js';
import type { Injector, Accepted, Kind } from './workload.js';

export const PHASES = ['kill-group', 'kill-worker', 'kill-supervisor', 'stop-worker', 'hup-storm', 'api-restart', 'paused-restart', 'disk-full', 'hostile-reply'] as const;
export type Phase = (typeof PHASES)[number];

/** How often each phase is drawn once every selected phase has run once. */
export const PHASE_WEIGHTS: Readonly<Record<Phase, number>> = {
  'kill-group': 3,
  'kill-worker': 2,
  'kill-supervisor': 2,
  'stop-worker': 2,
  'hup-storm': 3,
  'api-restart': 2,
  'paused-restart': 2,
  'disk-full': 1,
  'hostile-reply': 1,
};

/** The supervisor gives up after 5 server process crashes within a minute (by design): stay under it. */
const SERVER_PROCESS_KILLS_PER_MINUTE = 3;
const SERVE_DEADLINE_MS = 30_000;
const SERVER_PROCESS_EXIT_BOUND_MS = 2_000;
const HEALTH_BOUND_MS = 3_000;
const HOSTILE_DEADLINE_MS = 60_000;

/** The run cannot go on meaningfully (the organism is frozen or will not come back). */
export class Fatal extends Error {}

/**
 * Starts `serve` after a kill (both modes); a refused start is a violation, tried again after
 * `clear` (what the kill left behind) up to five times.
 */
export async function startServeOrReport(
  d: { serve: Serve; report: Reporter; time: (what: string, ms: number) => void; cycle: number; clear: () => Promise<unknown> },
  why: string,
): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      d.time('serve start (ms)', await d.serve.start(SERVE_DEADLINE_MS));
      return;
    } catch (err) {
      if (!(err instanceof StartFailed)) throw err;
      d.report('restart-not-refused', `cycle ${d.cycle}, after ${why}, start ${attempt}: ${err.message}`);
      if (attempt >= 5) throw new Fatal(`organism serve would not start after ${why}: ${err.message}`);
      await d.clear();
      await sleep(500 * attempt);
    }
  }
}

export type Reporter = (check: CheckName, detail: string) => void;

export class Harness {
  readonly faults: Record<string, number> = {};
  readonly timings: Record<string, number[]> = {};
  private serverProcessKills: number[] = [];
  cycle = 0;
  /** Phases switched off for the rest of the run (their fault would stop it). */
  readonly disabled = new Set<Phase>();
  /** Threads failed by the harness itself (reported; left out of the durability checks). */
  readonly quarantined = new Set<string>();

  constructor(
    readonly serve: Serve,
    readonly injector: Injector,
    readonly rng: Random,
    readonly report: Reporter,
    /** Root of the small tmpfs holding the data directory (null: no disk-full phase). */
    readonly tmpfsRoot: string | null,
    readonly dataDir: string,
  ) {}

  private count(fault: string): void {
    this.faults[fault] = (this.faults[fault] ?? 0) + 1;
  }

  time(what: string, ms: number): void {
    (this.timings[what] ??= []).push(ms);
  }

  /** Whether killing the server process now keeps the supervisor under its crash-loop limit. */
  mayKillServerProcess(): boolean {
    const now = Date.now();
    this.serverProcessKills = this.serverProcessKills.filter((t) => t > now - 61_000);
    return this.serverProcessKills.length < SERVER_PROCESS_KILLS_PER_MINUTE;
  }

  async run(phase: Phase): Promise<void> {
    this.count(phase);
    switch (phase) {
      case 'kill-group':
        return this.killGroup();
      case 'kill-worker':
        return this.killWorker();
      case 'kill-supervisor':
        return this.killSupervisor();
      case 'stop-worker':
        return this.stopWorker();
      case 'hup-storm':
        return this.hupStorm();
      case 'api-restart':
        return this.apiRestart();
      case 'paused-restart':
        return this.pausedRestart();
      case 'disk-full':
        return this.diskFull();
      case 'hostile-reply':
        return this.hostileReply();
    }
  }

  /** Starts a fresh `serve` after the whole organism died; a refused start is a violation. */
  async startServe(why: string): Promise<void> {
    await startServeOrReport({ serve: this.serve, report: this.report, time: (what, ms) => this.time(what, ms), cycle: this.cycle, clear: () => this.killLeftovers() }, why);
  }

  /** SIGKILLs whatever the organism left running (after a violation was reported). */
  async killLeftovers(): Promise<number[]> {
    const left = this.serve.processes();
    for (const p of left) signal(p.pid, 'SIGKILL');
    await Serve.waitGone(
      left.map((p) => p.pid),
      5_000,
    );
    return left.map((p) => p.pid);
  }

  private async backInService(previousBoot: string | null, what: string): Promise<void> {
    const t0 = performance.now();
    const current = this.serve.current!;
    while (performance.now() - t0 < SERVE_DEADLINE_MS) {
      if (current.exit) {
        // The supervisor gave up (or died): the service is down until someone starts it.
        this.report('back-in-service', `cycle ${this.cycle}: organism serve exited (${current.exit.signal ?? current.exit.code}) after ${what}: ${this.serve.logTail()}`);
        await this.killLeftovers();
        await this.startServe(`organism serve exited after ${what}`);
        return;
      }
      const boot = await this.serve.bootId();
      if (boot && boot !== previousBoot) {
        this.time(`${what}: back in service (ms)`, performance.now() - t0);
        return;
      }
      await sleep(25);
    }
    this.report('back-in-service', `cycle ${this.cycle}: no new server process served within ${SERVE_DEADLINE_MS / 1000} s after ${what}`);
    throw new Fatal(`the organism did not come back after ${what}`);
  }

  async killGroup(): Promise<void> {
    const pids = this.serve.processes().map((p) => p.pid);
    const exited = this.serve.current!.exited;
    this.injector.refusalAllowed = true;
    signal(-this.serve.supervisorPid, 'SIGKILL');
    await exited;
    if ((await Serve.waitGone(pids, 5_000)) === null) {
      this.report('no-process-left', `cycle ${this.cycle}: processes ${pids.join(', ')} still running 5 s after SIGKILL of their process group`);
      await this.killLeftovers();
    }
    await this.startServe('SIGKILL of the process group');
    this.injector.refusalAllowed = false;
  }

  async killWorker(): Promise<void> {
    const boot = await this.serve.bootId();
    const serverProcess = this.serve.serverProcessPid();
    if (serverProcess === null) throw new Fatal('no server process to kill');
    this.serverProcessKills.push(Date.now());
    signal(serverProcess, 'SIGKILL');
    await this.backInService(boot, 'SIGKILL of the server process');
  }

  async killSupervisor(): Promise<void> {
    const serverProcess = this.serve.serverProcessPid();
    const exited = this.serve.current!.exited;
    this.injector.refusalAllowed = true;
    signal(this.serve.supervisorPid, 'SIGKILL');
    await exited;
    if (serverProcess !== null) {
      const took = await Serve.waitGone([serverProcess], SERVER_PROCESS_EXIT_BOUND_MS);
      if (took === null) {
        const left = await this.killLeftovers();
        this.report(
          'worker-dies-with-supervisor',
          `cycle ${this.cycle}: server process ${serverProcess} still running ${SERVER_PROCESS_EXIT_BOUND_MS / 1000} s after its supervisor was SIGKILLed (killed by the harness: ${left.join(', ')})`,
        );
      } else {
        this.time('worker exit after supervisor SIGKILL (ms)', took);
      }
    }
    await this.startServe('SIGKILL of the supervisor');
    this.injector.refusalAllowed = false;
  }

  async stopWorker(): Promise<void> {
    const serverProcess = this.serve.serverProcessPid();
    if (serverProcess === null) throw new Fatal('no server process to stop');
    const ms = this.rng.int(1_000, 3_000);
    signal(serverProcess, 'SIGSTOP');
    await sleep(ms);
    signal(serverProcess, 'SIGCONT');
    const t0 = performance.now();
    while (!(await this.serve.healthy(2_000))) {
      if (performance.now() - t0 > SERVE_DEADLINE_MS) {
        this.report('back-in-service', `cycle ${this.cycle}: /health did not answer within ${SERVE_DEADLINE_MS / 1000} s after SIGCONT`);
        throw new Fatal('the organism did not answer after SIGCONT');
      }
      await sleep(25);
    }
  }

  async hupStorm(): Promise<void> {
    const boot = await this.serve.bootId();
    const n = this.rng.int(2, 4);
    for (let i = 0; i < n; i++) {
      signal(this.serve.supervisorPid, 'SIGHUP');
      await sleep(this.rng.int(20, 400));
    }
    this.count(`SIGHUP (${n} per storm)`);
    await this.backInService(boot, 'a SIGHUP storm');
    await this.settleRestarts();
  }

  async apiRestart(): Promise<void> {
    const boot = await this.serve.bootId();
    const a = await this.serve.api.request('POST', '/api/v1/organism/restart');
    if (a.ok && a.status === 503) return; // already restarting: not our fault to count
    if (!a.ok || a.status !== 202) this.report('back-in-service', `cycle ${this.cycle}: POST /organism/restart answered ${a.ok ? a.status : a.error}`);
    await this.backInService(boot, 'POST /organism/restart');
  }

  /** A storm's last SIGHUP may land on the new server process: wait until one boot keeps serving. */
  private async settleRestarts(): Promise<void> {
    let boot = await this.serve.bootId();
    const t0 = performance.now();
    while (performance.now() - t0 < SERVE_DEADLINE_MS) {
      await sleep(300);
      const now = await this.serve.bootId();
      if (now && now === boot) return;
      boot = now;
    }
  }

  /** Pause thinker, hold messages for it, restart in one of the ways, check it held them. */
  async pausedRestart(): Promise<void> {
    const ways: Record<string, () => Promise<void>> = {
      'hup-storm': async () => {
        const boot = await this.serve.bootId();
        signal(this.serve.supervisorPid, 'SIGHUP');
        await this.backInService(boot, 'SIGHUP while paused');
      },
      'api-restart': () => this.apiRestart(),
      'kill-group': () => this.killGroup(),
      'kill-supervisor': () => this.killSupervisor(),
      ...(this.mayKillServerProcess() ? { 'kill-worker': () => this.killWorker() } : {}),
    };
    const way = await pausedThroughFault({ api: this.serve.api, injector: this.injector, rng: this.rng, report: this.report, cycle: this.cycle }, ways);
    this.count(`paused-restart via ${way}`);
  }

  /** Fills the data directory's tmpfs to the last byte, keeps injecting, then frees it. */
  async diskFull(): Promise<void> {
    const root = this.tmpfsRoot!;
    const ballast = path.join(root, 'ballast');
    const free = () => {
      const s = statfsSync(root);
      return s.bavail * s.bsize;
    };
    try {
      execFileSync('fallocate', ['-l', String(Math.max(free() - 4 * 2 ** 20, 4096)), ballast], { stdio: 'ignore' });
    } catch {
      // the writes below fill it instead
    }
    // fallocate leaves some slack: write the rest until the file system refuses.
    const fd = openSync(ballast, 'a');
    try {
      for (const size of [2 ** 20, 4096, 512]) {
        const chunk = Buffer.alloc(size, 1);
        try {
          for (;;) writeSync(fd, chunk);
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        }
      }
    } finally {
      closeSync(fd);
    }
    const refusedBefore = (this.injector.outcomes['507'] ?? 0) + (this.injector.outcomes['503'] ?? 0) + (this.injector.outcomes['500'] ?? 0);
    const until = performance.now() + this.rng.int(800, 1_600);
    let healthyAfterRefusal = 0;
    let unhealthy = 0;
    while (performance.now() < until) {
      const refused = (this.injector.outcomes['507'] ?? 0) + (this.injector.outcomes['503'] ?? 0) + (this.injector.outcomes['500'] ?? 0) > refusedBefore;
      const h = await this.serve.api.request('GET', '/health', undefined, 2_000);
      const status = h.ok ? (h.body as { status?: string }).status : h.error;
      if (status !== 'healthy') unhealthy++;
      else if (refused) healthyAfterRefusal++;
      await sleep(100);
    }
    const refused = (this.injector.outcomes['507'] ?? 0) + (this.injector.outcomes['503'] ?? 0) + (this.injector.outcomes['500'] ?? 0) - refusedBefore;
    this.faults['disk-full: injects refused while full'] = (this.faults['disk-full: injects refused while full'] ?? 0) + refused;
    if (refused > 0 && unhealthy === 0 && healthyAfterRefusal > 0) {
      this.report('disk-full-answered', `cycle ${this.cycle}: ${refused} injects refused on the full disk, yet /health said healthy ${healthyAfterRefusal} times after that`);
    }
    unlinkSync(ballast);
    if (this.serve.current && (await Promise.race([this.serve.current.exited.then(() => true), sleep(0).then(() => false)]))) {
      this.report('disk-full-answered', `cycle ${this.cycle}: organism serve exited while the disk was full`);
      await this.killLeftovers();
      await this.startServe('a full disk');
    }
  }

  /** Hostile replies (and a huge mock echo) while /health is probed. */
  async hostileReply(): Promise<void> {
    const kinds: Kind[] = this.rng
      .shuffle(ATTACK_NAMES)
      .slice(0, this.rng.int(1, 2))
      .map((a) => `hostile:${a}` as const);
    if (this.rng.next() < 0.5) kinds.push('huge');
    let probing = true;
    let worst = 0;
    const prober = (async () => {
      while (probing) {
        const h = await this.serve.api.request('GET', '/health', undefined, 30_000);
        worst = Math.max(worst, h.ms);
        await sleep(100);
      }
    })();
    const sent: Accepted[] = [];
    for (const k of kinds) {
      this.count(`hostile: ${k}`);
      const a = await this.injector.inject(k, 60_000);
      if (a) sent.push(a);
    }
    const ended = await waitFor(async () => {
      for (const s of sent) {
        const page = await this.serve.api.request('GET', `/api/v1/journal?threadId=${s.threadId}&limit=100`, undefined, 30_000);
        if (!page.ok || page.status !== 200) return false;
        if ((page.body as { entries: Array<{ deliveryState: string }> }).entries.some((e) => e.deliveryState === 'PENDING' || e.deliveryState === 'DISPATCHED')) return false;
      }
      return true;
    }, HOSTILE_DEADLINE_MS);
    probing = false;
    await prober;
    this.time('hostile phase: slowest /health (ms)', worst);
    if (worst > HEALTH_BOUND_MS) this.report('hostile-reply-bounded', `cycle ${this.cycle}: /health took ${Math.round(worst)} ms while ${kinds.join(', ')} replies were handled`);
    if (!ended) {
      this.report(
        'hostile-reply-bounded',
        `cycle ${this.cycle}: ${kinds.join(', ')} still in flight after ${HOSTILE_DEADLINE_MS / 1000} s; their threads are quarantined and the phase is off for the rest of the run`,
      );
      await this.quarantine(sent.map((s) => s.threadId));
      this.disabled.add('hostile-reply');
    }
  }

  /**
   * A delivery that freezes the server would freeze it again after every restart: with the
   * organism stopped, its threads' open deliveries are failed in the journal, so the run can go
   * on with the other phases.
   */
  private async quarantine(threadIds: readonly string[]): Promise<void> {
    const pids = this.serve.processes().map((p) => p.pid);
    const exited = this.serve.current!.exited;
    this.injector.refusalAllowed = true;
    signal(-this.serve.supervisorPid, 'SIGKILL');
    await exited;
    await Serve.waitGone(pids, 5_000);
    await this.killLeftovers();
    let storage;
    for (let tries = 1; ; tries++) {
      try {
        storage = openSqliteStorage({ dataDir: this.dataDir });
        break;
      } catch (err) {
        // A PID lock outlives its holder until the zombie is reaped (the kernel-held lock does not).
        if (tries >= 100) throw err;
        await sleep(100);
      }
    }
    try {
      for (const threadId of threadIds) {
        this.quarantined.add(threadId);
        const open = await storage.journal.list({ threadId, limit: 100_000, offset: 0 });
        for (const e of open.items) {
          if (e.state === 'PENDING' || e.state === 'DISPATCHED')
            await storage.journal.failed(e.message, 'killed', 'quarantined by the chaos harness: this delivery froze the server', [], []);
        }
      }
    } finally {
      storage.close();
    }
    await this.startServe('quarantining a hostile reply');
    this.injector.refusalAllowed = false;
  }
}
