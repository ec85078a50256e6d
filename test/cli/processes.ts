import { spawn, spawnSync, type ChildProcess, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * The one place for tests that run the real `organism` CLI (or another command) as child
 * processes: starting, waiting for, reading and killing them.
 */

export const MAIN = path.resolve('src/cli/main.ts');
export const TOKEN = 'test-operator-token-123';

type Env = Record<string, string | undefined>;

export interface Running {
  readonly child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  readonly exited: Promise<number | null>;
}

const started: ChildProcess[] = [];

/** `node --import tsx src/cli/main.ts <args>`: the CLI from the sources, as a command line. */
export function cliCommand(args: string[]): string[] {
  return [process.execPath, '--import', 'tsx', MAIN, ...args];
}

/** Starts `command <args>` (env over this process's; an undefined value unsets); killed by `killAll` if still running. */
export function startProcess(command: string, args: string[], opts: { env?: Env; cwd?: string } = {}): Running {
  const child = spawn(command, args, { cwd: opts.cwd, env: { ...process.env, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
}

/** Starts `organism <args>` from the sources, with the test operator token; killed by `killAll` if still running. */
export function startCli(args: string[], env: Env = {}): Running {
  const [command, ...rest] = cliCommand(args);
  return startProcess(command!, rest, { env: { ORGANISM_API_TOKEN: TOKEN, ...env } });
}

/** The built CLI (bin/organism.js -> dist/), as an installed package runs it. */
export const BIN = path.resolve('bin/organism.js');

/**
 * Starts `organism <args>` from the build (dist/, `npm run build` first), with the test
 * operator token; killed by `killAll` if still running. Starts faster and uses less memory
 * than the sources through tsx, which counts when a test runs several processes at once.
 */
export function startBuiltCli(args: string[], env: Env = {}): Running {
  if (!existsSync(path.resolve('dist/cli/main.js'))) throw new Error('dist/ is missing: run `npm run build` in this worktree first');
  return startProcess(process.execPath, [BIN, ...args], { env: { ORGANISM_API_TOKEN: TOKEN, ...env } });
}

/** Runs `organism <args>` from the sources to completion, with the test operator token; `wrapper` goes before `node`. */
export function runCli(args: string[], opts: { env?: Env; timeoutMs?: number; wrapper?: string[] } = {}): SpawnSyncReturns<string> {
  const [command, ...rest] = [...(opts.wrapper ?? []), ...cliCommand(args)];
  return spawnSync(command!, rest, { encoding: 'utf8', env: { ...process.env, ORGANISM_API_TOKEN: TOKEN, ...opts.env }, timeout: opts.timeoutMs ?? 120_000 });
}

/** Sends `signal` to the process itself (not its descendants) unless it has exited; its exit code. */
export async function stopProcess(running: Running, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  if (running.child.exitCode === null && running.child.signalCode === null) running.child.kill(signal);
  return running.exited;
}

/** SIGKILLs every process these helpers started and their descendants. */
export function killAll(): void {
  for (const child of started.splice(0)) {
    if (child.pid === undefined) continue;
    for (const pid of processTree(child.pid).reverse()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

/** Polls `fn` until it returns something truthy (generous deadline: machines are loaded). */
export async function until<T>(fn: () => Promise<T | null | undefined | false> | T | null | undefined | false, what: string, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch {
      // not there yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The base URL from a `serve` banner (the port may have been 0). */
export async function servedAt(running: Running): Promise<string> {
  const match = await until(() => /API: +(http:\/\/[^/\s]+)\/api\/v1/.exec(running.output()), `the serve banner (output: ${running.output()})`);
  return match[1]!;
}

/** Authenticated JSON requests to `base`/api/v1. */
export function api(base: string) {
  return (p: string, init: RequestInit = {}) =>
    fetch(`${base}/api/v1${p}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...(init.headers ?? {}) } });
}

/** A loopback port free at the time of asking. */
export async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** A fresh directory holding `organism.yaml` (and any other files given). */
export function organismDir(yaml: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-test-'));
  writeFileSync(path.join(dir, 'organism.yaml'), yaml);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

export interface ServerProcess extends Running {
  /** `http://127.0.0.1:PORT` */
  readonly base: string;
  /** An authenticated request to /api/v1 (JSON). */
  api(p: string, init?: RequestInit): Promise<Response>;
  /** Polls `check` (errors count as "not yet") until it returns a truthy value. */
  until: typeof until;
}

/**
 * Starts `organism serve CONFIG --port 0` in its own process and waits for it to listen.
 * `--no-supervisor` by default, so the child is the server itself (its PID, its CPU time).
 * `built`: the build in dist/ instead of the sources.
 */
export async function startServer(configPath: string, extraArgs: string[] = [], opts: { supervisor?: boolean; env?: Record<string, string>; built?: boolean } = {}): Promise<ServerProcess> {
  const running = (opts.built ? startBuiltCli : startCli)(
    ['serve', configPath, '--port', '0', '--log-level', 'warn', ...(opts.supervisor ? [] : ['--no-supervisor']), ...extraArgs],
    opts.env,
  );
  const listening = until(() => /API: +(http:\/\/[^/\s]+)\/api\/v1/.exec(running.output())?.[1], 'the server to listen', 90_000);
  const died = running.exited.then((code) => Promise.reject(new Error(`the server exited (code ${code}) before listening`)));
  const base = await Promise.race([listening, died]).catch((err: Error) => {
    throw new Error(`${err.message}; output:\n${running.output()}`);
  });
  died.catch(() => undefined); // settles later, when the server exits
  return { ...running, base, api: api(base), until };
}

interface ProcStat {
  readonly pid: number;
  readonly ppid: number;
  /** utime + stime in clock ticks. */
  readonly ticks: number;
}

function readStat(pid: number): ProcStat | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: fields count from the last ')'.
    const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { pid, ppid: Number(fields[1]), ticks: Number(fields[11]) + Number(fields[12]) };
  } catch {
    return null;
  }
}

/** `pid` and all its live descendants, parents first (from /proc). */
export function processTree(pid: number): number[] {
  const stats = readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readStat(Number(name)))
    .filter((s): s is ProcStat => s !== null);
  const tree = readStat(pid) ? [pid] : [];
  for (let i = 0; i < tree.length; i++) for (const s of stats) if (s.ppid === tree[i]) tree.push(s.pid);
  return tree;
}

/** The state letter of `pid` (R, S, Z, ...), from /proc; null when there is no such process. */
export function procState(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
  } catch {
    return null;
  }
}

/** Whether `pid` runs (a zombie has exited: only its exit status is left). */
export function alive(pid: number): boolean {
  const state = procState(pid);
  return state !== null && state !== 'Z';
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU time (user + system, ms) the process `pid` has used. */
export function cpuMsOf(pid: number): number {
  const stat = readStat(pid);
  if (!stat) throw new Error(`no process ${pid}`);
  return (stat.ticks * 1000) / CLOCK_TICKS;
}

/**
 * CPU used by the process tree of `pid` over `ms` of wall time, as a fraction of one core.
 * A resource check, not a timing assertion: an idle process uses (almost) none.
 */
export async function cpuShare(pid: number, ms: number): Promise<number> {
  // Processes of the tree at the start; one started meanwhile is not counted (none is expected).
  const before = new Map(processTree(pid).map((p) => [p, readStat(p)?.ticks ?? 0]));
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, ms));
  let usedTicks = 0;
  for (const [p, ticks] of before) {
    const now = readStat(p);
    if (now) usedTicks += now.ticks - ticks; // a process that exited meanwhile took its count along
  }
  const used = usedTicks / CLOCK_TICKS;
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  return used / elapsed;
}

/** Voluntary context switches of every thread of `pid` (Linux): how often it went to sleep, so how often it woke. */
function voluntarySwitches(pid: number): number {
  let n = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    const status = readFileSync(`/proc/${pid}/task/${tid}/status`, 'utf8');
    n += Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? 0);
  }
  return n;
}

/**
 * How many times a second the threads of `pid` woke up over `ms` of wall time. Unlike CPU
 * shares, this barely moves with the machine's load: a timer firing every 10 ms shows as 100+.
 */
export async function wakeupsPerSecond(pid: number, ms: number): Promise<number> {
  const before = voluntarySwitches(pid);
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, ms));
  const after = voluntarySwitches(pid);
  return (after - before) / (Number(process.hrtime.bigint() - t0) / 1e9);
}

/**
 * organism.yaml of `name` whose one listener, `worker` (./worker.ts#work), takes Job {n};
 * `settings` go after the name, `listener` (indented keys) into the listener.
 */
export function jobYaml(name: string, settings = '', listener = ''): string {
  return `organism: {name: ${name}}
${settings}payloads:
  Job: {fields: {n: integer}}
listeners:
  - name: worker
    handler: ./worker.ts#work
    payload: Job
${listener}`;
}

/** An organism with one code listener whose jobs take a while (so restarts find work in flight). */
export function jobOrganism(): { dir: string; config: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-life-'));
  const config = path.join(dir, 'organism.yaml');
  writeFileSync(config, jobYaml('jobs', 'max_concurrent_per_agent: 2\n'));
  writeFileSync(path.join(dir, 'worker.ts'), `export const work = async () => { await new Promise((r) => setTimeout(r, 40)); };\n`);
  return { dir, config };
}
