import { readdirSync, readFileSync } from 'node:fs';

/**
 * CPU time of server processes (Redis, PostgreSQL backends) over a measured window, read from
 * /proc/<pid>/stat (user + system of all the process's threads). Linux only: elsewhere every
 * reading is null and so is the total.
 */

/** USER_HZ: 100 on Linux for every architecture the project runs on. */
const CLOCK_TICKS = 100;

/** A process's CPU time so far in microseconds, or null if it is gone (or there is no /proc). */
export function processCpuMicros(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

export interface ServerCpuMeter {
  /** Stops sampling; the CPU microseconds the watched processes spent since the meter started, or null if none could be read. */
  stop(): Promise<number | null>;
}

/**
 * Samples the processes `pids()` names every `everyMs` from now until stop(). A process seen at
 * the start counts from its reading then; one that appears later counts its whole life (a new
 * backend's start-up is part of the work). A process that exits between two samples loses at
 * most `everyMs` of its CPU time.
 */
export async function meterServerCpu(pids: () => Promise<readonly number[]>, everyMs = 100): Promise<ServerCpuMeter> {
  const first = new Map<number, number>();
  const last = new Map<number, number>();
  const sample = async (initial: boolean) => {
    for (const pid of await pids()) {
      const now = processCpuMicros(pid);
      if (now === null) continue;
      if (!first.has(pid)) first.set(pid, initial ? now : 0);
      last.set(pid, now);
    }
  };
  await sample(true);
  let running = true;
  const loop = (async () => {
    while (running) {
      await new Promise((r) => setTimeout(r, everyMs));
      if (running) await sample(false);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      await sample(false);
      if (last.size === 0) return null;
      let total = 0;
      for (const [pid, now] of last) total += now - (first.get(pid) ?? 0);
      return total;
    },
  };
}

/**
 * The PostgreSQL backends serving one database on this machine, found by their process titles
 * ("postgres: 15/main: <user> <database> <host>(<port>) <state>"), which the server sets by
 * default on Linux. No connection of its own: listing them costs the server nothing.
 */
export function postgresBackendsOf(database: string): () => Promise<number[]> {
  const mark = ` ${database} `;
  return async () => {
    const pids: number[] = [];
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
        if (title.startsWith('postgres: ') && title.includes(mark)) pids.push(Number(entry));
      } catch {
        // Gone between the listing and the read.
      }
    }
    return pids;
  };
}
