import { type ChildProcess, spawn } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './port.js';
import { benchFile, startServer } from './child.js';
import { processCpuMicros } from './server-cpu.js';
import { removeDir, tempDir } from './tmp.js';
import { ensureWrk, runWrk, type WrkResult } from './wrk.js';

/**
 * Issue 28's HTTP target, measured its way: a supervised `organism serve` of the bundled demo
 * (auth on, the generated operator token) under `wrk -t2 -c100 -d5s` on GET /api/v1/agents,
 * alternated with a bare node:http server answering {"hello":"world"}. A round runs bare, then
 * each variant, each followed by bare again, rotating the variants' order, so a noisy neighbour
 * hits both sides of a ratio: each variant's ratio is to the mean of the bare runs on either
 * side. Used by bench/tools/wrk-http.ts (variants, profiles) and the bench's http scenario.
 */

/** One `BIN serve` to measure (BIN: a bin/organism.js; args go to serve, e.g. `--log-level info`). */
export interface ServeVariant {
  readonly name: string;
  readonly bin: string;
  readonly args: readonly string[];
}

/** This checkout's compiled CLI (`npm run build` first: serve runs dist/). */
export const DEFAULT_BIN = fileURLToPath(new URL('../../bin/organism.js', import.meta.url));

export interface WrkComparisonOptions {
  readonly variants: readonly ServeVariant[];
  readonly rounds: number;
  readonly seconds: number;
  readonly threads?: number;
  readonly connections?: number;
  readonly route?: string;
  /** Every serve process (supervisor and server process) writes a CPU profile into this directory. */
  readonly cpuProf?: string;
  readonly log?: (line: string) => void;
}

/** Per round, in round order. */
export interface VariantRounds {
  readonly variant: ServeVariant;
  readonly rps: number[];
  /** The mean of the bare runs either side of each of this variant's runs. */
  readonly bareRps: number[];
  readonly ratios: number[];
  readonly p99Ms: number[];
  /** Server CPU (the serve process tree, user + system) per request, µs. */
  readonly cpuUs: number[];
  readonly bareCpuUs: number[];
  readonly cpuRatios: number[];
  readonly logLinesPerRequest: number[];
}

export interface WrkComparison {
  readonly threads: number;
  readonly connections: number;
  readonly seconds: number;
  readonly route: string;
  readonly variants: readonly VariantRounds[];
  /** Every measured bare run. */
  readonly bareRps: readonly number[];
  readonly bareCpuUs: readonly number[];
}

/** CPU time (user + system) of a process and its descendants, in µs (Linux /proc; NaN elsewhere). */
export function treeCpuMicros(pid: number): number {
  const own = processCpuMicros(pid);
  if (own === null) return Number.NaN;
  let us = own;
  try {
    for (const child of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) us += treeCpuMicros(Number(child));
  } catch {
    // gone, or no /proc
  }
  return us;
}

interface ServeProcess {
  readonly pid: number;
  readonly url: string;
  readonly token: string;
  readonly logFile: string;
  stop(): Promise<void>;
}

async function startServe(v: ServeVariant, cpuProf: string | undefined): Promise<ServeProcess> {
  const dataDir = tempDir(`wrk-${v.name}`);
  const port = await freePort();
  const logFile = path.join(dataDir, 'serve.log');
  const fd = openSync(logFile, 'a');
  // Supervised (the default): the supervisor owns the socket and hands connections over.
  // The supervisor forks its server process with the same node options (profiled too).
  const nodeArgs = cpuProf ? ['--cpu-prof', '--cpu-prof-dir', path.resolve(cpuProf)] : [];
  const child: ChildProcess = spawn(process.execPath, [...nodeArgs, v.bin, 'serve', '--port', String(port), '--data-dir', dataDir, ...v.args], {
    stdio: ['ignore', fd, fd],
    env: { ...process.env, ORGANISM_API_TOKEN: '' },
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${v.name}: serve exited (${child.exitCode}); see ${logFile}:\n${readFileSync(logFile, 'utf8')}`);
    try {
      if ((await fetch(`${url}/health`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`${v.name}: serve not healthy within 60 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const token = readFileSync(path.join(dataDir, 'operator-token'), 'utf8').trim();
  return {
    pid: child.pid!,
    url,
    token,
    logFile,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r));
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(killer);
      }
      removeDir(dataDir);
    },
  };
}

const lineCount = (file: string): number => {
  const text = readFileSync(file, 'utf8');
  let n = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
};

/** Runs the comparison (installs wrk with apt-get when missing and run as root; throws otherwise). */
export async function compareWithBare(options: WrkComparisonOptions): Promise<WrkComparison> {
  const { variants, rounds, seconds, threads = 2, connections = 100, route = '/api/v1/agents', cpuProf, log = () => undefined } = options;
  const wrk = ensureWrk(log);
  const bare = await startServer<{ port: number }>(benchFile('servers/bare-http.ts'), { json: true }, { what: 'bare node:http server' });
  const serves: ServeProcess[] = [];
  try {
    for (const v of variants) serves.push(await startServe(v, cpuProf));
    const bareUrl = `http://127.0.0.1:${bare.info.port}/`;
    const measure = async (i: number | 'bare', secs: number): Promise<WrkResult & { logLines: number; cpuUs: number }> => {
      const s = i === 'bare' ? null : serves[i]!;
      const before = s ? lineCount(s.logFile) : 0;
      const pid = s ? s.pid : bare.pid;
      const cpuBefore = treeCpuMicros(pid);
      const r = await runWrk(s ? `${s.url}${route}` : bareUrl, {
        threads,
        connections,
        seconds: secs,
        wrk,
        ...(s ? { headers: { authorization: `Bearer ${s.token}` } } : {}),
      });
      if (r.non2xx > 0) throw new Error(`${i === 'bare' ? 'bare' : variants[i]!.name}: ${r.non2xx} non-2xx responses of ${r.requests}`);
      // Server CPU per request: steadier than req/s on a shared machine (a neighbour takes
      // cores, not much of the work a request needs), so each lever's cost is read from it too.
      return { ...r, logLines: s ? lineCount(s.logFile) - before : 0, cpuUs: (treeCpuMicros(pid) - cpuBefore) / r.requests };
    };
    // Warm-up: JIT, caches and the first connections, unmeasured.
    await measure('bare', 2);
    for (let i = 0; i < serves.length; i++) await measure(i, 2);

    const results: VariantRounds[] = variants.map((variant) => ({
      variant,
      rps: [],
      bareRps: [],
      ratios: [],
      p99Ms: [],
      cpuUs: [],
      bareCpuUs: [],
      cpuRatios: [],
      logLinesPerRequest: [],
    }));
    const bareRps: number[] = [];
    const bareCpuUs: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const order = variants.map((_, i) => (i + round) % variants.length);
      let before = await measure('bare', seconds);
      bareRps.push(before.requestsPerSec);
      bareCpuUs.push(before.cpuUs);
      log(`round ${round + 1} bare: ${Math.round(before.requestsPerSec)} req/s, p99 ${before.p99Ms} ms`);
      for (const i of order) {
        const r = await measure(i, seconds);
        const after = await measure('bare', seconds);
        bareRps.push(after.requestsPerSec);
        bareCpuUs.push(after.cpuUs);
        // The bare runs on either side: a neighbour's burst during one of them counts half.
        const base = (before.requestsPerSec + after.requestsPerSec) / 2;
        const baseCpu = (before.cpuUs + after.cpuUs) / 2;
        const v = results[i]!;
        v.rps.push(r.requestsPerSec);
        v.bareRps.push(base);
        v.ratios.push(r.requestsPerSec / base);
        v.p99Ms.push(r.p99Ms);
        v.cpuUs.push(r.cpuUs);
        v.bareCpuUs.push(baseCpu);
        v.cpuRatios.push(r.cpuUs / baseCpu);
        v.logLinesPerRequest.push(r.logLines / r.requests);
        log(
          `round ${round + 1} ${variants[i]!.name}: ${Math.round(r.requestsPerSec)} req/s, p99 ${r.p99Ms} ms, ${(r.logLines / r.requests).toFixed(2)} log lines/request, ratio ${(r.requestsPerSec / base).toFixed(3)}, ${r.cpuUs.toFixed(1)} µs CPU/request; bare ${Math.round(after.requestsPerSec)} req/s, ${after.cpuUs.toFixed(1)} µs CPU/request`,
        );
        before = after;
      }
    }
    return { threads, connections, seconds, route, variants: results, bareRps, bareCpuUs };
  } finally {
    for (const s of serves) await s.stop();
    await bare.stop();
  }
}
