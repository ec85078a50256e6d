/**
 * Processes of the organism under test, found through /proc: every process `serve` starts
 * carries the run's marker in its environment (children inherit it), so a worker that
 * outlived its supervisor is found wherever it was reparented.
 */
import { readdirSync, readFileSync } from 'node:fs';

export const MARKER_ENV = 'CHAOS_RUN';

export interface Proc {
  readonly pid: number;
  readonly ppid: number;
  /** R, S, T (stopped), Z (zombie), ... */
  readonly state: string;
  readonly cmdline: string;
}

function stat(pid: number): { ppid: number; state: string } | null {
  try {
    const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name is in parentheses and may hold spaces: read after its last ')'.
    const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
    return { state: rest[0]!, ppid: Number(rest[1]) };
  } catch {
    return null;
  }
}

/** Live (non-zombie) processes whose environment holds MARKER_ENV=marker. */
export function markedProcesses(marker: string): Proc[] {
  const needle = `${MARKER_ENV}=${marker}`;
  const out: Proc[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      if (!env.includes(needle)) continue;
      const s = stat(pid);
      if (!s || s.state === 'Z') continue;
      out.push({ pid, ppid: s.ppid, state: s.state, cmdline: readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim() });
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return out;
}

/** Whether a process has exited (a zombie counts: it runs nothing and holds nothing). */
export function gone(pid: number): boolean {
  const s = stat(pid);
  return s === null || s.state === 'Z';
}

export function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}
