/**
 * `npm run bench`: runs every scenario, prints the table and writes bench/results/latest.json
 * and latest.md. Environment:
 *   BENCH_SCALE=quick|full   sizes (default full; quick finishes in a few minutes)
 *   BENCH_ONLY=http,pump,... run a subset (written to results/only-<names>.* instead); also
 *                            `npm run bench -- --scenarios peers` (or --scenarios=http,pump)
 *   BENCH_TMPDIR=DIR         where scenario databases go (default: the OS temp directory)
 */
import { execSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { markdownReport, markdownTable } from './lib/report.js';
import type { ScenarioResult } from './lib/result.js';
import { scaleFromEnv, type Scale } from './lib/scale.js';
import { runHttp } from './scenarios/http.js';
import { runMemory } from './scenarios/memory.js';
import { runPeers } from './scenarios/peers.js';
import { runPump } from './scenarios/pump.js';
import { runRecovery } from './scenarios/recovery.js';
import { runUsage } from './scenarios/usage.js';
import { runWs } from './scenarios/ws.js';

type Scenario = { readonly key: string; readonly scenario: number; readonly title: string; readonly run: (scale: Scale, log: (line: string) => void) => Promise<ScenarioResult> };

const SCENARIOS: readonly Scenario[] = [
  { key: 'http', scenario: 1, title: 'Control plane over HTTP', run: runHttp },
  { key: 'pump', scenario: 2, title: 'Pump with the SQLite journal', run: runPump },
  { key: 'usage', scenario: 3, title: 'Usage recording and queries', run: runUsage },
  { key: 'ws', scenario: 4, title: 'WebSocket fan-out', run: runWs },
  { key: 'recovery', scenario: 5, title: 'Boot recovery', run: runRecovery },
  { key: 'memory', scenario: 6, title: 'Memory', run: runMemory },
  { key: 'peers', scenario: 7, title: 'organism beside BullMQ, pg-boss and graphile-worker', run: runPeers },
];

const log = (line: string) => process.stdout.write(`${line}\n`);

function commit(): string {
  try {
    const sha = execSync('git rev-parse --short HEAD', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
    const dirty = execSync('git status --porcelain -- src bench', { stdio: ['ignore', 'pipe', 'ignore'] })
      .toString()
      .trim();
    return dirty ? `${sha} (with uncommitted changes)` : sha;
  } catch {
    return 'unknown';
  }
}

/** `--scenarios a,b` or `--scenarios=a,b` (repeatable): the same as BENCH_ONLY. */
function scenariosArgument(args: readonly string[]): string[] {
  const names: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--scenarios') names.push(args[++i] ?? '');
    else if (arg.startsWith('--scenarios=')) names.push(arg.slice('--scenarios='.length));
    else throw new Error(`unknown argument ${arg} (known: --scenarios NAME[,NAME...])`);
  }
  return names;
}

async function main(): Promise<void> {
  const scale = scaleFromEnv();
  const only = [process.env['BENCH_ONLY'] ?? '', ...scenariosArgument(process.argv.slice(2))]
    .join(',')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = only.filter((k) => !SCENARIOS.some((s) => s.key === k));
  if (unknown.length) throw new Error(`BENCH_ONLY / --scenarios: unknown scenario(s) ${unknown.join(', ')}; known: ${SCENARIOS.map((s) => s.key).join(', ')}`);
  const selected = only.length ? SCENARIOS.filter((s) => only.includes(s.key)) : SCENARIOS;
  const startedAt = new Date().toISOString();
  const t0 = performance.now();
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  const machine = `${os.cpus().length} x ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${process.platform} ${os.release()}, Node ${process.version}`;
  log(`organism benchmarks, ${scale.name} scale, ${machine}`);
  const write = (results: readonly ScenarioResult[], elapsedMs: number, complete: boolean): string => {
    const info = { scale: scale.name, startedAt, seconds: elapsedMs / 1000, machine, commit: commit(), complete };
    const dir = fileURLToPath(new URL('./results/', import.meta.url));
    mkdirSync(dir, { recursive: true });
    const base = only.length ? `only-${only.join('-')}` : 'latest';
    writeFileSync(path.join(dir, `${base}.json`), `${JSON.stringify({ ...info, scaleSettings: scale, scenarios: results }, null, 2)}\n`);
    writeFileSync(path.join(dir, `${base}.md`), markdownReport(info, results));
    return base;
  };

  const results: ScenarioResult[] = [];
  for (const s of selected) {
    log(`\n== ${s.scenario}. ${s.title}`);
    const started = performance.now();
    try {
      const r = await s.run(scale, log);
      results.push(r);
      log(markdownTable([r]));
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      log(`  FAILED: ${message}`);
      results.push({
        scenario: s.scenario,
        title: s.title,
        rows: [],
        context: {},
        notes: [`The scenario failed: ${message}`],
        seconds: (performance.now() - started) / 1000,
        skipped: `failed: ${message.split('\n')[0]}`,
      });
    }
    // Written after every scenario: a long run that is stopped keeps what it measured.
    write(results, performance.now() - t0, false);
  }

  const base = write(results, performance.now() - t0, true);
  log(`\n${markdownTable(results)}\n\nWrote bench/results/${base}.json and ${base}.md (${Math.round((performance.now() - t0) / 1000)} s).`);
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
