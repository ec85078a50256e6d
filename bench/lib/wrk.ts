import { execFile, execFileSync, spawnSync } from 'node:child_process';

/**
 * wrk (Debian's package) for HTTP throughput: a C load generator that costs the machine far
 * less CPU per request than autocannon, so on a small machine it measures the server rather
 * than the client. Installed with apt-get when missing (the bench runs as root on its machine;
 * elsewhere install it yourself).
 */
export function ensureWrk(log: (line: string) => void = () => undefined): string {
  const found = spawnSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  if (process.getuid?.() !== 0) throw new Error('wrk is not installed (apt-get install wrk; this harness installs it only when run as root)');
  log('installing wrk (apt-get install -y wrk)');
  execFileSync('apt-get', ['install', '-y', '--no-install-recommends', 'wrk'], { stdio: 'ignore', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  const installed = spawnSync('sh', ['-c', 'command -v wrk'], { encoding: 'utf8' }).stdout.trim();
  if (!installed) throw new Error('apt-get install wrk did not install wrk');
  return installed;
}

export interface WrkResult {
  readonly requestsPerSec: number;
  readonly requests: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** Responses outside 2xx/3xx. */
  readonly non2xx: number;
  /** Socket errors (connect, read, write, timeout). */
  readonly errors: number;
}

const UNIT_MS: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

function durationMs(text: string): number {
  const m = /^([\d.]+)(us|ms|s|m)$/.exec(text.trim());
  return m ? Number(m[1]) * UNIT_MS[m[2]!]! : Number.NaN;
}

/** Reads wrk's text report (run with --latency). */
export function parseWrk(out: string): WrkResult {
  const rps = /Requests\/sec:\s+([\d.]+)/.exec(out);
  const total = /(\d+) requests in/.exec(out);
  if (!rps || !total) throw new Error(`unreadable wrk output:\n${out}`);
  const pct = (p: string) => {
    const m = new RegExp(`^\\s+${p}%\\s+(\\S+)`, 'm').exec(out);
    return m ? durationMs(m[1]!) : Number.NaN;
  };
  const non2xx = /Non-2xx or 3xx responses:\s+(\d+)/.exec(out);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(out);
  return {
    requestsPerSec: Number(rps[1]),
    requests: Number(total[1]),
    p50Ms: pct('50'),
    p99Ms: pct('99'),
    non2xx: non2xx ? Number(non2xx[1]) : 0,
    errors: socket ? socket.slice(1).reduce((n, v) => n + Number(v), 0) : 0,
  };
}

/** One wrk run (`-t threads -c connections -d seconds --latency`), headers as `-H`. */
export function runWrk(url: string, options: { threads: number; connections: number; seconds: number; headers?: Record<string, string>; wrk?: string }): Promise<WrkResult> {
  const args = ['-t', String(options.threads), '-c', String(options.connections), '-d', `${options.seconds}s`, '--latency'];
  for (const [k, v] of Object.entries(options.headers ?? {})) args.push('-H', `${k}: ${v}`);
  args.push(url);
  // Asynchronous: the parent's event loop keeps serving its IPC channels meanwhile.
  return new Promise((resolve, reject) => {
    execFile(options.wrk ?? 'wrk', args, { encoding: 'utf8', timeout: (options.seconds + 30) * 1000 }, (err, stdout, stderr) => {
      if (err) return reject(new Error(`wrk failed: ${err.message}\n${stderr}`));
      try {
        resolve(parseWrk(stdout));
      } catch (e) {
        reject(e);
      }
    });
  });
}
