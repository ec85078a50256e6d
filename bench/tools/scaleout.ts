/**
 * `npm run bench:scaleout`: the bench of issue 15 (scale-out on PostgreSQL), in one run.
 *
 * 1. A handler-bound chain (hop1 -> hop2 -> hop3, each handler waits 100 ms like an LLM call)
 *    on one PostgreSQL database: `organism serve --handlers off` takes the injects, and 1, 2
 *    and 4 `organism worker --concurrency 10` processes run the handlers (organism-wide limits
 *    1000, so the per-process 10 is what binds). Per round and worker count: hop1 paused, M
 *    messages injected over HTTP, hop1 resumed, timed from the resume to the last hop3 ack
 *    (read from the journal). Targets: >= 1.7x from 1 to 2 workers, >= 3x from 1 to 4.
 * 2. The journaled 3-hop chain of no-op handlers (bench/children/pump.ts, scenario 2's child)
 *    on PostgreSQL beside SQLite, each round in a fresh process on a fresh database:
 *    messages/s, and inject-to-ack p50/p99 at a steady offered rate.
 *
 * Writes bench/results/scaleout-<date>.md and .json, with the load average at start and end.
 * Environment (defaults in brackets): SCALEOUT_MESSAGES [600] per worker-count round,
 * SCALEOUT_ROUNDS [2], SCALEOUT_WORKERS [1,2,4], SCALEOUT_PUMP_MESSAGES [5000],
 * SCALEOUT_STEADY_RATE [50] msg/s (below what PostgreSQL sustains on a small loaded machine, so latency is not queueing), SCALEOUT_STEADY_SEC [10], SCALEOUT_ONLY [both]: bound|pump
 * (a trial run of one part, written to only-scaleout-<part>-<date>.*, which git ignores), ORGANISM_BENCH_POSTGRES
 * [postgres://postgres@127.0.0.1:5432/postgres] (databases bench_scaleout_<random> are created
 * there and dropped after).
 */
import { execSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { admin, freshDatabase } from '../lib/pg-admin.js';
import { killAll, startBuiltCli, startServer, stopProcess, until, type Running } from '../../test/cli/processes.js';
import type { SteadyResult, ThroughputResult } from '../children/pump.js';
import { benchFile, runChild } from '../lib/child.js';
import { median } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const MESSAGES = num('SCALEOUT_MESSAGES', 600);
const ROUNDS = num('SCALEOUT_ROUNDS', 2);
const WORKER_COUNTS = (process.env['SCALEOUT_WORKERS'] ?? '1,2,4').split(',').map(Number);
const PUMP_MESSAGES = num('SCALEOUT_PUMP_MESSAGES', 5_000);
const STEADY_RATE = num('SCALEOUT_STEADY_RATE', 50);
const STEADY_SEC = num('SCALEOUT_STEADY_SEC', 10);
const ONLY = process.env['SCALEOUT_ONLY'] ?? '';
const HANDLER_MS = 100;
const CONCURRENCY = 10;

const log = (line: string) => process.stdout.write(`${line}\n`);
const load = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

const CHAIN_YAML = `organism: {name: bench-scaleout}
max_concurrent_handlers: 1000
max_concurrent_per_agent: 1000
payloads:
  Text: {fields: {text: string}}
listeners:
  - {name: hop1, handler: ./hops.ts#hop1, payload: Text, peers: [hop2]}
  - {name: hop2, handler: ./hops.ts#hop2, payload: Text, peers: [hop3]}
  - {name: hop3, handler: ./hops.ts#hop3, payload: Text}
`;

const HOPS_TS = `const wait = () => new Promise((r) => setTimeout(r, ${HANDLER_MS}));
export const hop1 = async (p) => (await wait(), { to: 'hop2', payload: p });
export const hop2 = async (p) => (await wait(), { to: 'hop3', payload: p });
export const hop3 = async () => { await wait(); };
`;

interface HandlerBoundRound {
  readonly workers: number;
  readonly round: number;
  readonly messages: number;
  readonly seconds: number;
  readonly messagesPerSec: number;
  readonly deliveriesPerSec: number;
  /** hop1 deliveries claimed while hop1 was paused (0 when pause held). */
  readonly claimedWhilePaused: number;
  /**
   * Sampled every 250 ms over the timed part, means: DISPATCHED entries (a handler running, or its
   * outcome not yet committed: more than the slots means outcomes wait to commit) and PENDING ones.
   */
  readonly meanInFlight: number;
  readonly meanPending: number;
  readonly loadAtEnd: string;
}

async function handlerBound(): Promise<HandlerBoundRound[]> {
  const db = await freshDatabase('bench_scaleout');
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-bench-scaleout-'));
  const config = path.join(dir, 'organism.yaml');
  writeFileSync(config, CHAIN_YAML);
  writeFileSync(path.join(dir, 'hops.ts'), HOPS_TS);
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  pool.on('error', () => {});
  const count = async (sql: string) => Number((await pool.query<{ n: string }>(sql)).rows[0]!.n);
  const results: HandlerBoundRound[] = [];
  try {
    const serve = await startServer(config, ['--store', db.url, '--handlers', 'off', '--data-dir', path.join(dir, 'data')], { built: true });
    const post = (p: string, body?: unknown) => serve.api(p, { method: 'POST', ...(body ? { body: JSON.stringify(body) } : {}) });
    let done = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      for (const n of WORKER_COUNTS) {
        const workers: Running[] = [];
        for (let i = 0; i < n; i++)
          workers.push(startBuiltCli(['worker', config, '--store', db.url, '--concurrency', String(CONCURRENCY), '--name', `bench-${round}-${n}-${i}`, '--log-level', 'warn']));
        const pids = new Set(workers.map((w) => w.child.pid));
        await until(
          async () => {
            const body = (await (await serve.api('/workers')).json()) as { workers: Array<{ pid: number; stoppedAt?: number | null; stopped_at?: number | null }> };
            return body.workers.filter((w) => pids.has(w.pid) && (w.stoppedAt ?? w.stopped_at ?? null) === null).length === n;
          },
          `${n} workers to register (outputs: ${workers.map((w) => w.output()).join(' | ')})`,
          120_000,
        );
        const res = await post('/agents/hop1/pause');
        if (!res.ok) throw new Error(`pause answered ${res.status}: ${await res.text()}`);
        let next = 0;
        await Promise.all(
          Array.from({ length: 20 }, async () => {
            while (next < MESSAGES) {
              next++;
              const r = await post('/inject', { to: 'hop1', payload: { text: `r${round}-w${n}-${next}` } });
              if (!r.ok) throw new Error(`inject answered ${r.status}: ${await r.text()}`);
            }
          }),
        );
        const claimedWhilePaused = (await count(`SELECT count(*) AS n FROM journal WHERE recipient = 'hop1' AND state <> 'PENDING'`)) - done;
        const r = await post('/agents/hop1/resume');
        if (!r.ok) throw new Error(`resume answered ${r.status}: ${await r.text()}`);
        const t0 = performance.now();
        const target = done + MESSAGES;
        // Where the time goes: are the workers' slots full (handler-bound) or is work waiting for claims?
        const samples: Array<{ inFlight: number; pending: number }> = [];
        let sampling = true;
        const sampler = (async () => {
          while (sampling) {
            const r = (
              await pool.query<{ d: string; p: string }>(
                `SELECT count(*) FILTER (WHERE state = 'DISPATCHED') AS d, count(*) FILTER (WHERE state = 'PENDING') AS p FROM journal WHERE state IN ('PENDING', 'DISPATCHED')`,
              )
            ).rows[0]!;
            samples.push({ inFlight: Number(r.d), pending: Number(r.p) });
            await new Promise((res) => setTimeout(res, 250));
          }
        })();
        await until(
          async () => (await count(`SELECT count(*) AS n FROM journal WHERE recipient = 'hop3' AND state = 'ACKED'`)) >= target,
          `${MESSAGES} messages through 3 hops on ${n} workers`,
          600_000,
        );
        const seconds = (performance.now() - t0) / 1000;
        sampling = false;
        await sampler;
        const mean = (pick: (x: { inFlight: number; pending: number }) => number) => samples.reduce((a, x) => a + pick(x), 0) / Math.max(1, samples.length);
        done = target;
        for (const w of workers) await stopProcess(w);
        const result = {
          workers: n,
          round,
          messages: MESSAGES,
          seconds,
          messagesPerSec: MESSAGES / seconds,
          deliveriesPerSec: (3 * MESSAGES) / seconds,
          claimedWhilePaused,
          meanInFlight: mean((x) => x.inFlight),
          meanPending: mean((x) => x.pending),
          loadAtEnd: load(),
        };
        results.push(result);
        log(
          `  round ${round}, ${n} worker(s): ${MESSAGES} messages (${3 * MESSAGES} deliveries of ${HANDLER_MS} ms) in ${seconds.toFixed(2)} s = ${result.messagesPerSec.toFixed(1)} msg/s, DISPATCHED ${result.meanInFlight.toFixed(1)} (handler slots ${n * CONCURRENCY}), PENDING ${result.meanPending.toFixed(0)} (means)${claimedWhilePaused ? ` (${claimedWhilePaused} claimed while paused!)` : ''}; load ${result.loadAtEnd}`,
        );
      }
    }
    await stopProcess(serve);
  } finally {
    killAll();
    await pool.end().catch(() => {});
    await db.drop().catch(() => {});
    removeDir(dir);
  }
  return results;
}

interface PumpRound {
  readonly store: 'sqlite' | 'postgres';
  readonly throughput: ThroughputResult;
  readonly steady: SteadyResult;
}

async function pumpRound(store: 'sqlite' | 'postgres', mode: 'throughput' | 'steady'): Promise<ThroughputResult | SteadyResult> {
  const dataDir = tempDir(`scaleout-${store}`);
  const db = store === 'postgres' ? await freshDatabase('bench_scaleout') : null;
  try {
    const input = { mode, dataDir, messages: mode === 'throughput' ? PUMP_MESSAGES : 0, rate: STEADY_RATE, seconds: STEADY_SEC, ...(db ? { postgresUrl: db.url } : {}) };
    return await runChild(benchFile('children/pump.ts'), input, { timeoutMs: 900_000, what: `pump ${mode} on ${store}` });
  } finally {
    await db?.drop().catch(() => {});
    removeDir(dataDir);
  }
}

async function pumpBeside(): Promise<PumpRound[]> {
  const rounds: PumpRound[] = [];
  for (let r = 1; r <= ROUNDS; r++) {
    for (const store of ['sqlite', 'postgres'] as const) {
      const throughput = (await pumpRound(store, 'throughput')) as ThroughputResult;
      const steady = (await pumpRound(store, 'steady')) as SteadyResult;
      rounds.push({ store, throughput, steady });
      log(
        `  round ${r}, ${store}: ${Math.round(throughput.messagesPerSec)} msg/s (${PUMP_MESSAGES} through 3 hops, ${Math.round(throughput.cpuMicrosPerMessage)} µs CPU/msg); ` +
          `steady ${Math.round(steady.offeredPerSec)}/s: inject-to-ack p50 ${steady.firstHopP50Ms.toFixed(2)} ms, p99 ${steady.firstHopP99Ms.toFixed(2)} ms, 3 hops p99 ${steady.endToEndP99Ms.toFixed(2)} ms; load ${load()}`,
      );
    }
  }
  return rounds;
}

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

async function main(): Promise<void> {
  const startedAt = new Date().toISOString();
  const loadAtStart = load();
  const machine = `${os.cpus().length} x ${os.cpus()[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${process.platform} ${os.release()}, Node ${process.version}`;
  const pgVersion = await admin(async (c) => (await c.query<{ server_version: string }>('SHOW server_version')).rows[0]!.server_version);
  log(`organism scale-out bench, ${machine}, PostgreSQL ${pgVersion}, load average ${loadAtStart}`);

  log(`\n== Handler-bound chain: 3 hops x ${HANDLER_MS} ms handlers, --concurrency ${CONCURRENCY} per worker, workers ${WORKER_COUNTS.join(', ')}`);
  const bound = ONLY === 'pump' ? [] : await handlerBound();
  log(`\n== Journaled 3-hop chain of no-op handlers, SQLite beside PostgreSQL`);
  const pump = ONLY === 'bound' ? [] : await pumpBeside();
  const loadAtEnd = load();

  const rate = (n: number) => median(bound.filter((b) => b.workers === n).map((b) => b.messagesPerSec));
  const base = rate(WORKER_COUNTS[0]!);
  const gains = WORKER_COUNTS.map((n) => ({ workers: n, messagesPerSec: rate(n), ratio: rate(n) / base }));
  const target = (n: number) => (n === 2 ? 1.7 : n === 4 ? 3 : null);
  const med = (store: string, pick: (p: PumpRound) => number) => median(pump.filter((p) => p.store === store).map(pick));

  const lines = [
    `# Scale-out bench (${startedAt.slice(0, 10)})`,
    '',
    `Command: \`npm run bench:scaleout\` (bench/tools/scaleout.ts), commit ${commit()}, started ${startedAt}. ${machine}; PostgreSQL ${pgVersion} on 127.0.0.1.`,
    `Load average (1, 5, 15 min) at start: ${loadAtStart}; at end: ${loadAtEnd}. Medians of ${ROUNDS} rounds.`,
    '',
    `## Handler-bound chain: 1 vs 2 vs 4 workers`,
    '',
    `3 hops, each handler waits ${HANDLER_MS} ms (an LLM call's wait); \`organism serve --handlers off\` takes the injects over HTTP; each \`organism worker\` runs with \`--concurrency ${CONCURRENCY}\`; organism-wide limits 1000. Per round: hop1 paused, ${MESSAGES} messages injected, hop1 resumed, timed from the resume to the last hop3 ack in the journal. Ideal: ${((CONCURRENCY * 1000) / HANDLER_MS / 3).toFixed(1)} msg/s per worker.`,
    '',
    '| Workers | msg/s (median) | Rounds | vs 1 worker | Target | Result | DISPATCHED (mean) / handler slots | PENDING (mean) |',
    '|---|---|---|---|---|---|---|---|',
    ...gains.map((g) => {
      const t = target(g.workers);
      const rounds = bound
        .filter((b) => b.workers === g.workers)
        .map((b) => b.messagesPerSec.toFixed(1))
        .join(', ');
      const mine = bound.filter((b) => b.workers === g.workers);
      const inFlight = median(mine.map((b) => b.meanInFlight));
      const waiting = median(mine.map((b) => b.meanPending));
      return `| ${g.workers} | ${g.messagesPerSec.toFixed(1)} | ${rounds} | ${g.ratio.toFixed(2)}x | ${t ? `>= ${t}x` : '—'} | ${t ? (g.ratio >= t ? 'met' : '**missed**') : '—'} | ${inFlight.toFixed(1)} / ${g.workers * CONCURRENCY} | ${waiting.toFixed(0)} |`;
    }),
    '',
    bound.length === 0
      ? 'Not run (SCALEOUT_ONLY).'
      : bound.some((b) => b.claimedWhilePaused > 0)
        ? `Note: in some rounds hop1 deliveries were claimed while hop1 was paused (${bound.map((b) => b.claimedWhilePaused).join(', ')}): those rounds started early.`
        : 'Pause held in every round (no hop1 delivery claimed before the resume).',
    '',
    `## Journaled 3-hop chain of no-op handlers: SQLite beside PostgreSQL`,
    '',
    `Scenario 2's child (bench/children/pump.ts), one organism process, default limits, a fresh store per round. Throughput: ${PUMP_MESSAGES} messages injected, timed to the last hop3 ack. Steady: ${STEADY_RATE} new threads/s offered for ${STEADY_SEC} s after a 2,000-message warm-up; latency from each message's scheduled time to its first-hop ack (inject-to-ack) and to its third-hop ack.`,
    '',
    '| Store | msg/s | CPU µs/msg | inject-to-ack p50 | inject-to-ack p99 | 3 hops p50 | 3 hops p99 |',
    '|---|---|---|---|---|---|---|',
    ...(['sqlite', 'postgres'] as const).map(
      (s) =>
        `| ${s === 'sqlite' ? 'SQLite' : 'PostgreSQL'} | ${Math.round(med(s, (p) => p.throughput.messagesPerSec))} | ${Math.round(med(s, (p) => p.throughput.cpuMicrosPerMessage))} | ${med(s, (p) => p.steady.firstHopP50Ms).toFixed(2)} ms | ${med(s, (p) => p.steady.firstHopP99Ms).toFixed(2)} ms | ${med(s, (p) => p.steady.endToEndP50Ms).toFixed(2)} ms | ${med(s, (p) => p.steady.endToEndP99Ms).toFixed(2)} ms |`,
    ),
    '',
  ];
  const dir = fileURLToPath(new URL('../results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const out = path.join(dir, `${ONLY ? `only-scaleout-${ONLY}-` : 'scaleout-'}${startedAt.slice(0, 10)}`);
  writeFileSync(`${out}.md`, `${lines.join('\n')}\n`);
  writeFileSync(
    `${out}.json`,
    `${JSON.stringify({ startedAt, machine, pgVersion, commit: commit(), loadAtStart, loadAtEnd, settings: { MESSAGES, ROUNDS, WORKER_COUNTS, PUMP_MESSAGES, STEADY_RATE, STEADY_SEC, HANDLER_MS, CONCURRENCY }, handlerBound: bound, gains, pump }, null, 2)}\n`,
  );
  log(`\n${lines.join('\n')}\nWrote ${path.relative(process.cwd(), out)}.md and .json`);
}

main().catch((err: unknown) => {
  killAll();
  process.stderr.write(`bench:scaleout: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
