import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Helpers for tests that run the real `organism` CLI as child processes. */

export const MAIN = path.resolve('src/cli/main.ts');
export const TOKEN = 'test-operator-token-123';

export interface Running {
  readonly child: ChildProcess;
  /** Everything the process wrote to stdout and stderr so far. */
  output(): string;
  readonly exited: Promise<number | null>;
}

const started: ChildProcess[] = [];

/** Starts `organism <args>` from the sources; killed by `killAll` if still running. */
export function startCli(args: string[], env: Record<string, string | undefined> = {}): Running {
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...args], {
    env: { ...process.env, ORGANISM_API_TOKEN: TOKEN, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  started.push(child);
  let text = '';
  child.stdout!.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => text, exited };
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

export function api(base: string) {
  return (p: string, init: RequestInit = {}) =>
    fetch(`${base}/api/v1${p}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...(init.headers ?? {}) } });
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

/** Whether `pid` runs (a zombie has exited: only its exit status is left). */
export function alive(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

const CLOCK_TICKS = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/**
 * CPU used by the process tree of `pid` over `ms` of wall time, as a fraction of one core.
 * A resource check, not a timing assertion: an idle process uses (almost) none.
 */
export async function cpuShare(pid: number, ms: number): Promise<number> {
  const pids = processTree(pid);
  const ticks = () => pids.reduce((sum, p) => sum + (readStat(p)?.ticks ?? 0), 0);
  const before = ticks();
  const t0 = process.hrtime.bigint();
  await new Promise((r) => setTimeout(r, ms));
  const used = (ticks() - before) / CLOCK_TICKS;
  const elapsed = Number(process.hrtime.bigint() - t0) / 1e9;
  return used / elapsed;
}

/** An organism with one code listener whose jobs take a while (so restarts find work in flight). */
export function jobOrganism(): { dir: string; config: string } {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-life-'));
  const config = path.join(dir, 'organism.yaml');
  writeFileSync(
    config,
    `organism: {name: jobs}
max_concurrent_per_agent: 2
payloads:
  Job: {fields: {n: integer}}
listeners:
  - name: worker
    handler: ./worker.ts#work
    payload: Job
`,
  );
  writeFileSync(path.join(dir, 'worker.ts'), `export const work = async () => { await new Promise((r) => setTimeout(r, 40)); };\n`);
  return { dir, config };
}
