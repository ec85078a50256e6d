import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** The real CLI (from source, through tsx), as `organism serve` runs it. */
export const MAIN = path.resolve('src/cli/main.ts');
export const TOKEN = 'test-operator-token-123';

export interface ServerProcess {
  readonly child: ChildProcess;
  /** `http://127.0.0.1:PORT` */
  readonly base: string;
  readonly exited: Promise<number | null>;
  output(): string;
  /** An authenticated request to /api/v1 (JSON). */
  api(p: string, init?: RequestInit): Promise<Response>;
  /** Polls `check` (errors count as "not yet") until it returns a truthy value. */
  until<T>(check: () => Promise<T | null | undefined | false> | T | null | undefined | false, what: string, timeoutMs?: number): Promise<T>;
}

const started: ChildProcess[] = [];

/** SIGKILLs every server a test started and left running (call from afterEach). */
export function killServers(): void {
  for (const c of started.splice(0)) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}

/** A fresh directory holding `organism.yaml` (and any other files given). */
export function organismDir(yaml: string, files: Record<string, string> = {}): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-hostile-'));
  writeFileSync(path.join(dir, 'organism.yaml'), yaml);
  for (const [name, text] of Object.entries(files)) writeFileSync(path.join(dir, name), text);
  return dir;
}

export async function until<T>(check: () => Promise<T | null | undefined | false> | T | null | undefined | false, what: string, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Starts `organism serve CONFIG --port 0` in its own process and waits for it to listen.
 * `--no-supervisor` by default, so the child is the server itself (its PID, its CPU time).
 */
export async function startServer(configPath: string, extraArgs: string[] = [], opts: { supervisor?: boolean; env?: Record<string, string> } = {}): Promise<ServerProcess> {
  const args = ['--import', 'tsx', MAIN, 'serve', configPath, '--port', '0', '--log-level', 'warn', ...(opts.supervisor ? [] : ['--no-supervisor']), ...extraArgs];
  const child = spawn(process.execPath, args, { env: { ...process.env, ORGANISM_API_TOKEN: TOKEN, ...opts.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const listening = until(() => /API: +(http:\/\/[^/\s]+)\/api\/v1/.exec(output)?.[1], 'the server to listen', 90_000);
  const died = exited.then((code) => Promise.reject(new Error(`the server exited (code ${code}) before listening`)));
  const base = await Promise.race([listening, died]).catch((err: Error) => {
    throw new Error(`${err.message}; output:\n${output}`);
  });
  died.catch(() => undefined); // settles later, when the server exits
  return {
    child,
    base,
    exited,
    output: () => output,
    api: (p, init = {}) => fetch(`${base}/api/v1${p}`, { ...init, headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', ...(init.headers ?? {}) } }),
    until,
  };
}

/** CPU time (user + system, ms) the process has used, from /proc/PID/stat. */
export function cpuMsOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // the command name may hold spaces
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15)
  return ticks * 10; // USER_HZ is 100 on Linux
}
