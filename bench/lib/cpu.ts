import { readFileSync } from 'node:fs';

/**
 * CPU time of the calling thread (user + system, microseconds) from /proc/thread-self/stat, in
 * clock ticks (10 ms: fine over a round of seconds); null where there is no such file.
 * process.cpuUsage() counts every thread of the process, the trace export worker's and V8's
 * GC helpers' too; this is the main thread's alone, the one that runs deliveries and requests.
 */
export function threadCpuMicros(): number | null {
  try {
    const stat = readFileSync('/proc/thread-self/stat', 'utf8');
    // Fields after the command name (in parentheses, may hold spaces): utime and stime are the 14th and 15th of the line.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS;
  } catch {
    return null;
  }
}

/** USER_HZ: 100 on Linux for every architecture the project runs on. */
const CLOCK_TICKS = 100;
