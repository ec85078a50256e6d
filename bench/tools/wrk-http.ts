/**
 * Issue 28's HTTP target, measured its way: a supervised `organism serve` of the bundled demo
 * (auth on, the generated operator token) under `wrk -t2 -c100 -d5s` on GET /api/v1/agents,
 * alternated with a bare node:http server answering {"hello":"world"}; each round's ratio is
 * organism/bare, the figure is the median over rounds.
 *
 *   node --import tsx bench/tools/wrk-http.ts [--rounds 3] [--seconds 5] [--threads 2] [--connections 100]
 *       [--variant NAME=BIN[,ARG...]]... [--path /api/v1/agents] [--out bench/results/FILE.md] [--cpu-prof DIR]
 *
 * The measurement itself is bench/lib/wrk-serve.ts (the bench's http scenario runs it too).
 * Every variant is its own `BIN serve` (BIN: a bin/organism.js, by default this checkout's; the
 * extra ARGs go to serve, e.g. `--log-level,info`) started once; a round runs bare, then each
 * variant, each followed by bare again, rotating the variants' order, so a noisy neighbour hits
 * both sides of a ratio. Build first (`npm run build`): serve runs the compiled dist/.
 * The server's stderr goes to a file; the lines it wrote per request are reported too.
 * --cpu-prof DIR: every serve process (supervisor and server process) writes a CPU profile
 * there (summarize the largest with bench/tools/profile-summary.ts).
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { median, sig } from '../lib/stats.js';
import { compareWithBare, DEFAULT_BIN, type ServeVariant } from '../lib/wrk-serve.js';

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
const variants: ServeVariant[] = argv
  .flatMap((a, i) => (a === '--variant' && argv[i + 1] ? [argv[i + 1]!] : []))
  .map((spec) => {
    const eq = spec.indexOf('=');
    const [bin, ...args] = spec.slice(eq + 1).split(',');
    return { name: spec.slice(0, eq), bin: path.resolve(bin || DEFAULT_BIN), args };
  });
if (variants.length === 0) variants.push({ name: 'serve', bin: DEFAULT_BIN, args: [] });

const log = (line: string) => process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const result = await compareWithBare({ variants, rounds, seconds, threads, connections, route, ...(cpuProf ? { cpuProf } : {}), log });
  const load = os.loadavg().map((l) => l.toFixed(2));
  const header = `wrk -t${threads} -c${connections} -d${seconds}s on GET ${route}, ${rounds} rounds, bare node:http {"hello":"world"} alternated; load average ${load.join(' ')}; ${new Date().toISOString()}`;
  const table = [
    '| variant | serve args | req/s (median) | bare req/s (median) | ratio per round | **median ratio** | p99 ms (median) | server CPU µs/request (median) | bare CPU µs/request (median) | CPU ratio (median) | log lines/request |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...result.variants.map(
      (v) =>
        `| ${v.variant.name} | ${v.variant.args.join(' ') || '(none)'} | ${Math.round(median(v.rps))} | ${Math.round(median(result.bareRps))} | ${v.ratios.map((r) => sig(r, 3)).join(', ')} | **${sig(median(v.ratios), 3)}** | ${sig(median(v.p99Ms), 3)} | ${sig(median(v.cpuUs), 3)} | ${sig(median(result.bareCpuUs), 3)} | ${sig(median(v.cpuRatios), 3)} | ${sig(median(v.logLinesPerRequest), 2)} |`,
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
}

await main();
