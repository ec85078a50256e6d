/**
 * The organism under test: `organism serve` from the built CLI (bin/organism.js -> dist),
 * supervised, in its own process group, exactly as an operator runs it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync, statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Api } from './api.js';
import { gone, markedProcesses, MARKER_ENV, type Proc } from './procs.js';
import { sleep } from './random.js';

export const CLI = fileURLToPath(new URL('../../bin/organism.js', import.meta.url));

export interface ServeSettings {
  readonly configPath: string;
  readonly dataDir: string;
  readonly port: number;
  readonly token: string;
  readonly marker: string;
  readonly logFile: string;
  readonly env: Readonly<Record<string, string>>;
  /** More arguments of `serve` (cluster mode: --store, --handlers off, --lease-seconds). */
  readonly extraArgs?: readonly string[];
}

export interface Started {
  readonly supervisor: ChildProcess;
  readonly exited: Promise<{ code: number | null; signal: string | null }>;
  /** Set once the supervisor has exited. */
  exit: { code: number | null; signal: string | null } | null;
}

/** Why a start did not come up: it exited first (a refused restart) or never answered. */
export class StartFailed extends Error {
  constructor(
    message: string,
    readonly exitCode: number | null,
  ) {
    super(message);
  }
}

export class Serve {
  readonly api: Api;
  current: Started | null = null;

  constructor(readonly settings: ServeSettings) {
    this.api = new Api(`http://127.0.0.1:${settings.port}`, settings.token);
  }

  get supervisorPid(): number {
    return this.current?.supervisor.pid ?? -1;
  }

  /** Starts `organism serve`; resolves once /health answers, rejects if it exits first. */
  async start(deadlineMs = 60_000): Promise<number> {
    const s = this.settings;
    const log = openSync(s.logFile, 'a');
    const logStart = statSync(s.logFile).size;
    const supervisor = spawn(
      process.execPath,
      [CLI, 'serve', s.configPath, '--data-dir', s.dataDir, '--port', String(s.port), '--drain-timeout', '10', '--log-level', 'warn', ...(s.extraArgs ?? [])],
      { detached: true, stdio: ['ignore', log, log], env: { ...process.env, ...s.env, ORGANISM_API_TOKEN: s.token, [MARKER_ENV]: s.marker } },
    );
    closeSync(log);
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => supervisor.on('exit', (code, signal) => r({ code, signal })));
    const started: Started = { supervisor, exited, exit: null };
    void exited.then((e) => (started.exit = e));
    this.current = started;
    const t0 = performance.now();
    while (performance.now() - t0 < deadlineMs) {
      if (started.exit) {
        const e = started.exit;
        throw new StartFailed(`organism serve exited (${e.signal ?? e.code}) before serving: ${this.logTail(logStart)}`, e.code);
      }
      if (await this.healthy(1_000)) return performance.now() - t0;
      await sleep(25);
    }
    throw new StartFailed(`organism serve did not answer /health within ${deadlineMs / 1000} s`, null);
  }

  /** The last lines organism serve wrote (since `from`, a byte offset of its log). */
  logTail(from = 0, lines = 3): string {
    const text = readFileSync(this.settings.logFile, 'utf8');
    return text
      .slice(Math.max(from, text.length - 20_000))
      .trim()
      .split('\n')
      .slice(-lines)
      .join(' | ');
  }

  async healthy(timeoutMs: number): Promise<boolean> {
    const a = await this.api.request('GET', '/health', undefined, timeoutMs);
    return a.ok && a.status === 200;
  }

  /** The bootId of the server process serving now, or null. */
  async bootId(): Promise<string | null> {
    const a = await this.api.request('GET', '/api/v1/organism', undefined, 2_000);
    return a.ok && a.status === 200 ? ((a.body as { bootId?: string }).bootId ?? null) : null;
  }

  /** Waits until a server process other than `previousBootId` serves. */
  async waitForNewBoot(previousBootId: string | null, deadlineMs: number): Promise<boolean> {
    const t0 = performance.now();
    while (performance.now() - t0 < deadlineMs) {
      const id = await this.bootId();
      if (id && id !== previousBootId) return true;
      await sleep(25);
    }
    return false;
  }

  /** The organism's processes now (supervisor, server processes, and anything they left behind). */
  processes(): Proc[] {
    return markedProcesses(this.settings.marker);
  }

  /** The server process: a marked child of the supervisor. */
  serverProcessPid(): number | null {
    const sup = this.supervisorPid;
    return this.processes().find((p) => p.ppid === sup && p.cmdline.includes(' serve '))?.pid ?? null;
  }

  async waitForServerProcess(deadlineMs: number, not?: number | null): Promise<number | null> {
    const t0 = performance.now();
    while (performance.now() - t0 < deadlineMs) {
      const pid = this.serverProcessPid();
      if (pid !== null && pid !== not) return pid;
      await sleep(20);
    }
    return null;
  }

  /** Waits until every pid is gone; returns how long it took, or null past the deadline. */
  static async waitGone(pids: readonly number[], deadlineMs: number): Promise<number | null> {
    const t0 = performance.now();
    for (;;) {
      if (pids.every(gone)) return performance.now() - t0;
      if (performance.now() - t0 > deadlineMs) return null;
      await sleep(10);
    }
  }
}
