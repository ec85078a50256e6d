/**
 * Issue 28's HTTP target, measured its way: a supervised `organism serve` of the bundled demo
 * (auth on, the generated operator token) under `wrk -t2 -c100 -d5s` on GET /api/v1/agents,
 * alternated with a bare node:http server answering {"hello":"world"}; each round's ratio is
 * organism/bare, the figure is the median over rounds.
 *
 *   node --import tsx bench/tools/wrk-http.ts [--rounds 3] [--seconds 5] [--threads 2] [--connections 100]
 *       [--variant NAME=BIN[,ARG...]]... [--path /api/v1/agents] [--out bench/results/FILE.md] [--cpu-prof DIR]
 *
 * Every variant is its own `BIN serve` (BIN: a bin/organism.js, by default this checkout's; the
 * extra ARGs go to serve, e.g. `--log-level,info`) started once; a round runs bare, then each
 * variant, each followed by bare again, rotating the variants' order, so a noisy neighbour hits
 * both sides of a ratio. Build first (`npm run build`): serve runs the compiled dist/.
 * The server's stderr goes to a file; the lines it wrote per request are reported too.
 * --cpu-prof DIR: every serve process (supervisor and server process) writes a CPU profile
 * there (summarize the largest with bench/tools/profile-summary.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchFile, startServer } from '../lib/child.js';
import { median, sig } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';
import { ensureWrk, runWrk, type WrkResult } from '../lib/wrk.js';

interface Variant {
  readonly name: string;
  readonly bin: string;
  readonly args: readonly string[];
}

const argv = process.argv.slice(2);
const flag = (name: string, fallback: string): string => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1]! : fallback;
};
const rounds = Number(flag('rounds', '3'));
const seconds = Number(flag('seconds', '5'));
const threads = Number(flag('threads', '2'));
const connections = Number(flag('connections', '100'));
const route = flag('path', '/api/v1/agents');
const out = flag('out', '');
const cpuProf = flag('cpu-prof', '');
const defaultBin = fileURLToPath(new URL('../../bin/organism.js', import.meta.url));
const variants: Variant[] = argv
  .flatMap((a, i) => (a === '--variant' && argv[i + 1] ? [argv[i + 1]!] : []))
  .map((spec) => {
    const eq = spec.indexOf('=');
    const [bin, ...args] = spec.slice(eq + 1).split(',');
    return { name: spec.slice(0, eq), bin: path.resolve(bin || defaultBin), args };
  });
if (variants.length === 0) variants.push({ name: 'serve', bin: defaultBin, args: [] });

const log = (line: string) => process.stdout.write(`${line}\n`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** CPU time (user + system) of a process and its descendants, in µs (Linux /proc; NaN elsewhere). */
function treeCpuMicros(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // utime and stime are fields 14 and 15 (1-based), in clock ticks (USER_HZ, 100 on Linux).
    let us = ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100;
    for (const child of readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean)) us += treeCpuMicros(Number(child));
    return us;
  } catch {
    return Number.NaN;
  }
}

interface ServeProcess {
  readonly pid: number;
  readonly url: string;
  readonly token: string;
  readonly logFile: string;
  stop(): Promise<void>;
}

async function startServe(v: Variant): Promise<ServeProcess> {
  const dataDir = tempDir(`wrk-${v.name}`);
  const port = await freePort();
  const logFile = path.join(dataDir, 'serve.log');
  const { openSync } = await import('node:fs');
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

async function main(): Promise<void> {
  const wrk = ensureWrk(log);
  const bare = await startServer<{ port: number }>(benchFile('servers/bare-http.ts'), { json: true }, { what: 'bare node:http server' });
  const serves: ServeProcess[] = [];
  try {
    for (const v of variants) serves.push(await startServe(v));
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

    const ratios: number[][] = variants.map(() => []);
    const rps: number[][] = variants.map(() => []);
    const p99: number[][] = variants.map(() => []);
    const lines: number[][] = variants.map(() => []);
    const cpu: number[][] = variants.map(() => []);
    const cpuRatios: number[][] = variants.map(() => []);
    const bareRps: number[] = [];
    const bareCpu: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const order = variants.map((_, i) => (i + round) % variants.length);
      let before = await measure('bare', seconds);
      bareRps.push(before.requestsPerSec);
      bareCpu.push(before.cpuUs);
      log(`round ${round + 1} bare: ${Math.round(before.requestsPerSec)} req/s, p99 ${before.p99Ms} ms`);
      for (const i of order) {
        const r = await measure(i, seconds);
        const after = await measure('bare', seconds);
        bareRps.push(after.requestsPerSec);
        bareCpu.push(after.cpuUs);
        // The bare runs on either side: a neighbour's burst during one of them counts half.
        const base = (before.requestsPerSec + after.requestsPerSec) / 2;
        ratios[i]!.push(r.requestsPerSec / base);
        rps[i]!.push(r.requestsPerSec);
        p99[i]!.push(r.p99Ms);
        lines[i]!.push(r.logLines / r.requests);
        cpu[i]!.push(r.cpuUs);
        cpuRatios[i]!.push(r.cpuUs / ((before.cpuUs + after.cpuUs) / 2));
        log(
          `round ${round + 1} ${variants[i]!.name}: ${Math.round(r.requestsPerSec)} req/s, p99 ${r.p99Ms} ms, ${sig(r.logLines / r.requests, 2)} log lines/request, ratio ${sig(r.requestsPerSec / base, 3)}, ${sig(r.cpuUs, 3)} µs CPU/request; bare ${Math.round(after.requestsPerSec)} req/s, ${sig(after.cpuUs, 3)} µs CPU/request`,
        );
        before = after;
      }
    }
    const load = os.loadavg().map((l) => l.toFixed(2));
    const header = `wrk -t${threads} -c${connections} -d${seconds}s on GET ${route}, ${rounds} rounds, bare node:http {"hello":"world"} alternated; load average ${load.join(' ')}; ${new Date().toISOString()}`;
    const table = [
      '| variant | serve args | req/s (median) | bare req/s (median) | ratio per round | **median ratio** | p99 ms (median) | server CPU µs/request (median) | bare CPU µs/request (median) | CPU ratio (median) | log lines/request |',
      '|---|---|---|---|---|---|---|---|---|---|---|',
      ...variants.map(
        (v, i) =>
          `| ${v.name} | ${v.args.join(' ') || '(none)'} | ${Math.round(median(rps[i]!))} | ${Math.round(median(bareRps))} | ${ratios[i]!.map((r) => sig(r, 3)).join(', ')} | **${sig(median(ratios[i]!), 3)}** | ${sig(median(p99[i]!), 3)} | ${sig(median(cpu[i]!), 3)} | ${sig(median(bareCpu), 3)} | ${sig(median(cpuRatios[i]!), 3)} | ${sig(median(lines[i]!), 2)} |`,
      ),
    ];
    log(`\n${header}\n\n${table.join('\n')}`);
    if (out) {
      const existed = (() => {
        try {
          return statSync(out).size > 0;
        } catch {
          return false;
        }
      })();
      writeFileSync(out, `${existed ? `${readFileSync(out, 'utf8')}\n` : ''}${header}\n\n${table.join('\n')}\n`);
    }
  } finally {
    for (const s of serves) await s.stop();
    await bare.stop();
  }
}

await main();
