/**
 * Scenario 1: the control plane over HTTP. The demo organism (durable storage, auth on), a
 * bare node:http hello-world and a Fastify hello-world each run in their own child process;
 * autocannon (100 connections) runs here. Rounds interleave the targets, rotating their order.
 * Each server reports its CPU time, so every run also yields CPU microseconds per request.
 * Then issue 28's target the way it is stated: a supervised `organism serve` under wrk against
 * a bare node:http server (bench/lib/wrk-serve.ts, also bench/tools/wrk-http.ts).
 */
import { benchFile, startServer, type RunningServer } from '../lib/child.js';
import { load, type LoadResult } from '../lib/http-load.js';
import { atLeast, atMost, row, skippedRow, type ScenarioResult } from '../lib/result.js';
import type { Scale } from '../lib/scale.js';
import { median, sig } from '../lib/stats.js';
import { compareWithBare, DEFAULT_BIN, type WrkComparison } from '../lib/wrk-serve.js';
import { removeDir, tempDir } from '../lib/tmp.js';
import type { OrganismServerInfo, OrganismServerInput } from '../servers/organism-http.js';

type Target = 'bare' | 'fastify' | 'agents' | 'usage' | 'messages' | 'agentsOff' | 'agentsMetrics' | 'agentsTraced';
const TARGETS: readonly Target[] = ['bare', 'fastify', 'agents', 'usage', 'messages', 'agentsOff', 'agentsMetrics', 'agentsTraced'];
const PATHS: Record<Target, string> = {
  bare: '/',
  fastify: '/',
  agentsOff: '/api/v1/agents',
  agentsMetrics: '/api/v1/agents',
  agentsTraced: '/api/v1/agents',
  agents: '/api/v1/agents',
  usage: '/api/v1/usage',
  messages: '/api/v1/messages?limit=50',
};

interface Run extends LoadResult {
  /** Server CPU time (user + system) per request, all its threads. */
  readonly cpuUsPerRequest: number;
  /** The same, the server's main thread alone (NaN off Linux). */
  readonly mainCpuUsPerRequest: number;
}

type CpuUsage = { user: number; system: number; main: number | null };
type ExportStats = { exported: number; failed: number; exports: number; dropped: number };

export async function runHttp(scale: Scale, log: (line: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const dataDir = tempDir('http');
  const servers: RunningServer<{ port: number }>[] = [];
  const offDir = tempDir('http-off');
  const tracedDir = tempDir('http-traced');
  const metricsDir = tempDir('http-metrics');
  try {
    const bare = await startServer<{ port: number }>(benchFile('servers/bare-http.ts'), {}, { what: 'bare http server' });
    servers.push(bare);
    const fastify = await startServer<{ port: number }>(benchFile('servers/bare-http.ts'), { fastify: true }, { what: 'fastify hello server' });
    servers.push(fastify);
    const input: OrganismServerInput = { dataDir, organism: 'demo', seedThreads: scale.http.seedThreads };
    const org = await startServer<OrganismServerInfo>(benchFile('servers/organism-http.ts'), input, { what: 'organism server' });
    servers.push(org);
    // The same organism with telemetry off, metrics on and tracing on (100 % sampled), each in its own
    // process serving only /agents (the metrics-on server above also serves /usage and /messages).
    const off = await startServer<OrganismServerInfo>(benchFile('servers/organism-http.ts'), { ...input, dataDir: offDir, telemetry: 'off' }, { what: 'organism server, telemetry off' });
    servers.push(off);
    const metricsOn = await startServer<OrganismServerInfo>(
      benchFile('servers/organism-http.ts'),
      { ...input, dataDir: metricsDir, telemetry: 'metrics' },
      { what: 'organism server, metrics on' },
    );
    servers.push(metricsOn);
    const traced = await startServer<OrganismServerInfo>(
      benchFile('servers/organism-http.ts'),
      { ...input, dataDir: tracedDir, telemetry: 'tracing' },
      { what: 'organism server, tracing on' },
    );
    servers.push(traced);
    const serverOf = (t: Target): RunningServer<OrganismServerInfo | { port: number }> =>
      t === 'bare' ? bare : t === 'fastify' ? fastify : t === 'agentsOff' ? off : t === 'agentsMetrics' ? metricsOn : t === 'agentsTraced' ? traced : org;
    const authOf = (s: RunningServer<OrganismServerInfo | { port: number }>) => ({ authorization: `Bearer ${(s.info as OrganismServerInfo).token}` });
    const { connections, durationSec, warmupSec } = scale.http;

    const measure = async (t: Target, seconds: number): Promise<Run> => {
      const server = serverOf(t);
      const before = await server.request<CpuUsage>({ cmd: 'cpu' });
      const r = await load(`http://127.0.0.1:${server.info.port}${PATHS[t]}`, {
        connections,
        durationSec: seconds,
        ...(server !== bare && server !== fastify ? { headers: authOf(server) } : {}),
      });
      const after = await server.request<CpuUsage>({ cmd: 'cpu' });
      if (r.errors > 0 || r.non2xx > 0) throw new Error(`${t}: ${r.errors} errors and ${r.non2xx} non-2xx responses out of ${r.requests}`);
      const cpu = after.user - before.user + (after.system - before.system);
      const main = after.main !== null && before.main !== null ? after.main - before.main : Number.NaN;
      return { ...r, cpuUsPerRequest: r.requests ? cpu / r.requests : Number.NaN, mainCpuUsPerRequest: r.requests ? main / r.requests : Number.NaN };
    };

    for (const t of TARGETS) await measure(t, warmupSec);
    const runs: Record<Target, Run[]> = { bare: [], fastify: [], agents: [], usage: [], messages: [], agentsOff: [], agentsMetrics: [], agentsTraced: [] };
    for (let round = 0; round < scale.rounds; round++) {
      const order = TARGETS.map((_, i) => TARGETS[(i + round) % TARGETS.length]!);
      for (const t of order) {
        const r = await measure(t, durationSec);
        runs[t].push(r);
        log(
          `  round ${round + 1} ${t}: ${Math.round(r.requestsPerSec)} req/s, p99 ${r.p99Ms} ms, ${Math.round(r.cpuUsPerRequest)} µs CPU/request (${Math.round(r.mainCpuUsPerRequest)} main thread)`,
        );
      }
    }
    const rawPageUs = await org.request<number>({ cmd: 'rawPage' });
    // Every request's span was exported (a run that dropped spans did less work than it claims).
    const traceStats = (await traced.request<ExportStats | null>({ cmd: 'traceStats' }))!;
    const tracedRequests = runs.agentsTraced.reduce((n, r) => n + r.requests, 0);
    if (traceStats.dropped > 0 || traceStats.failed > 0 || traceStats.exported < tracedRequests) {
      throw new Error(`tracing server: ${JSON.stringify(traceStats)} for at least ${tracedRequests} measured requests`);
    }

    // The autocannon servers sit idle meanwhile (nothing polls them).
    const wrk = await measureWrk(scale, log);
    const rps = (t: Target) => runs[t].map((r) => r.requestsPerSec);
    const p99 = (t: Target) => runs[t].map((r) => r.p99Ms);
    const cpu = (t: Target) => sig(median(runs[t].map((r) => r.cpuUsPerRequest)), 3);
    const mainCpu = (t: Target) => sig(median(runs[t].map((r) => r.mainCpuUsPerRequest)), 3);
    const bareRps = { name: 'bare node:http', unit: 'req/s', rounds: rps('bare') };
    const bareP99 = { name: 'bare node:http p99', unit: 'ms', rounds: p99('bare') };
    const offRps = { name: 'GET /api/v1/agents, telemetry off (same run)', unit: 'req/s', rounds: rps('agentsOff') };
    const offCpu = { name: 'server CPU per request, telemetry off (same run)', unit: 'µs', rounds: runs.agentsOff.map((r) => r.cpuUsPerRequest) };
    const offMainCpu = { name: 'server main-thread CPU per request, telemetry off (same run)', unit: 'µs', rounds: runs.agentsOff.map((r) => r.mainCpuUsPerRequest) };
    const rows = [
      wrkRow(wrk),
      ...(wrk.comparison
        ? [
            row({
              scenario: 1,
              metric: 'Server CPU per GET /api/v1/agents under wrk (supervised serve, all its processes), vs bare node:http (context)',
              unit: 'µs',
              rounds: wrk.comparison.variants[0]!.cpuUs,
              baseline: { name: 'bare node:http CPU per request', unit: 'µs', rounds: wrk.comparison.variants[0]!.bareCpuUs },
              target: null,
            }),
          ]
        : []),
      row({
        scenario: 1,
        metric: 'GET /api/v1/agents throughput under autocannon (in-process server, context)',
        unit: 'req/s',
        rounds: rps('agents'),
        baseline: bareRps,
        target: null,
      }),
      row({
        scenario: 1,
        metric: 'GET /api/v1/agents with metrics on (default), vs off',
        unit: 'req/s',
        rounds: rps('agentsMetrics'),
        baseline: offRps,
        target: atLeast(0.95, '>= 0.95x off (metrics cost <= 5 %)', 'ratio'),
      }),
      row({
        scenario: 1,
        metric: 'GET /api/v1/agents with tracing on (100 % sampled, HTTP spans), vs off',
        unit: 'req/s',
        rounds: rps('agentsTraced'),
        baseline: offRps,
        target: atLeast(0.75, '>= 0.75x off (tracing cost <= 25 %)', 'ratio'),
      }),
      row({
        scenario: 1,
        metric: 'Server CPU per GET /api/v1/agents with metrics on, vs off (context)',
        unit: 'µs',
        rounds: runs.agentsMetrics.map((r) => r.cpuUsPerRequest),
        baseline: offCpu,
        target: null,
      }),
      row({
        scenario: 1,
        metric: "Server CPU per GET /api/v1/agents with tracing on, vs off (context; all threads, the export worker's included)",
        unit: 'µs',
        rounds: runs.agentsTraced.map((r) => r.cpuUsPerRequest),
        baseline: offCpu,
        target: null,
      }),
      row({
        scenario: 1,
        metric: 'Server main-thread CPU per GET /api/v1/agents with tracing on, vs off (context)',
        unit: 'µs',
        rounds: runs.agentsTraced.map((r) => r.mainCpuUsPerRequest),
        baseline: offMainCpu,
        target: null,
      }),
      row({ scenario: 1, metric: 'GET /api/v1/messages?limit=50 throughput', unit: 'req/s', rounds: rps('messages'), baseline: bareRps, target: atLeast(0.3, '>= 0.3x bare', 'ratio') }),
      row({ scenario: 1, metric: 'GET /api/v1/usage throughput', unit: 'req/s', rounds: rps('usage'), baseline: bareRps, target: null }),
      row({ scenario: 1, metric: 'Fastify hello-world throughput (context)', unit: 'req/s', rounds: rps('fastify'), baseline: bareRps, target: null }),
      row({ scenario: 1, metric: 'GET /api/v1/agents p99 latency', unit: 'ms', rounds: p99('agents'), baseline: bareP99, target: atMost(20, '<= 20 ms') }),
      row({ scenario: 1, metric: 'GET /api/v1/messages?limit=50 p99 latency', unit: 'ms', rounds: p99('messages'), baseline: bareP99, target: atMost(20, '<= 20 ms') }),
      row({ scenario: 1, metric: 'GET /api/v1/usage p99 latency', unit: 'ms', rounds: p99('usage'), baseline: bareP99, target: atMost(20, '<= 20 ms') }),
    ];
    const cpuLine = TARGETS.map((t) => `${t} ${cpu(t)}`).join(', ');
    const mainCpuLine = TARGETS.map((t) => `${t} ${mainCpu(t)}`).join(', ');
    return {
      scenario: 1,
      title: 'Control plane over HTTP',
      rows,
      context: {
        connections,
        durationSec,
        rounds: scale.rounds,
        organism: 'bundled demo, SQLite storage, auth on (Bearer token)',
        seededThreads: scale.http.seedThreads,
        journalRows: org.info.journalRows,
        usageEvents: org.info.usageEvents,
        serverCpuUsPerRequest: Object.fromEntries(TARGETS.map((t) => [t, cpu(t)])),
        serverMainThreadCpuUsPerRequest: Object.fromEntries(TARGETS.map((t) => [t, mainCpu(t)])),
        traceStats,
        rawSqlitePageUs: sig(rawPageUs, 3),
        runs,
        wrk: wrk.comparison ?? { skipped: wrk.skipped },
      },
      notes: [
        `Each server runs in its own process; autocannon (${connections} connections, ${durationSec} s per run, ${scale.rounds} rounds, order rotated) runs in the parent. The demo organism was seeded with ${scale.http.seedThreads} questions (${org.info.journalRows} journal rows, ${org.info.usageEvents} usage events) before measuring.`,
        `Server CPU per request, median (µs): ${cpuLine}. Main thread alone: ${mainCpuLine}.`,
        `Telemetry rows: agentsOff, agentsMetrics and agentsTraced are three servers of the same seeded demo organism, each in its own process and serving only GET /api/v1/agents: telemetry off, metrics on (prom-client), metrics and tracing on (100 % sampled; one SERVER span per request through @fastify/otel, exported by the export worker with OTLP/protobuf to a sink in another process: ${traceStats.exported.toLocaleString('en-US')} spans in ${traceStats.exports} exports, none dropped or failed).`,
        wrkNote(wrk),
        `Floor of /messages?limit=50: reading the same 50 rows straight from SQLite (better-sqlite3, prepared, SELECT *) takes ${sig(rawPageUs, 3)} µs, i.e. at most ${Math.round(1e6 / rawPageUs).toLocaleString('en-US')} pages/s on one core before any JSON work.`,
      ],
      seconds: (performance.now() - started) / 1000,
    };
  } finally {
    for (const s of servers) await s.stop();
    removeDir(dataDir);
    removeDir(offDir);
    removeDir(tracedDir);
    removeDir(metricsDir);
  }
}

const WRK_METRIC = 'GET /api/v1/agents throughput under wrk: supervised `organism serve` of the demo, auth on, vs bare node:http (issue 28)';
const WRK_TARGET = atLeast(0.6, '>= 0.6x bare node:http', 'ratio');

type WrkOutcome = { comparison: WrkComparison; skipped?: undefined } | { comparison?: undefined; skipped: string };

/** Issue 28's target 3, measured as the issue states it (see bench/lib/wrk-serve.ts); skipped when wrk cannot be had. */
async function measureWrk(scale: Scale, log: (line: string) => void): Promise<WrkOutcome> {
  try {
    const comparison = await compareWithBare({
      variants: [{ name: 'serve', bin: DEFAULT_BIN, args: [] }],
      rounds: scale.rounds,
      seconds: scale.http.wrkSec,
      log: (line) => log(`  wrk ${line}`),
    });
    return { comparison };
  } catch (err) {
    const why = (err as Error).message;
    if (!/wrk/.test(why)) throw err;
    log(`  wrk: skipped (${why})`);
    return { skipped: why };
  }
}

/**
 * The target row: the organism's req/s per round against the mean of the bare runs either side
 * of it, so the row's ratio (median over median) follows the per-round ratios the note lists.
 */
function wrkRow(wrk: WrkOutcome) {
  if (!wrk.comparison) return skippedRow(1, WRK_METRIC, WRK_TARGET, wrk.skipped);
  const v = wrk.comparison.variants[0]!;
  return row({
    scenario: 1,
    metric: WRK_METRIC,
    unit: 'req/s',
    rounds: v.rps,
    baseline: { name: 'bare node:http {"hello":"world"} (the runs either side)', unit: 'req/s', rounds: v.bareRps },
    target: WRK_TARGET,
  });
}

function wrkNote(wrk: WrkOutcome): string {
  if (!wrk.comparison) return `wrk target: skipped (${wrk.skipped}).`;
  const c = wrk.comparison;
  const v = c.variants[0]!;
  return `wrk target (issue 28): \`wrk -t${c.threads} -c${c.connections} -d${c.seconds}s\` on GET ${c.route} of a supervised \`organism serve\` (bundled demo, auth on, operator token), each run between two runs of a bare node:http server answering {"hello":"world"}; ratio per round ${v.ratios.map((r) => sig(r, 3)).join(', ')} (median ${sig(median(v.ratios), 3)}); server CPU per request ${v.cpuUs.map((r) => sig(r, 3)).join(', ')} µs vs bare ${v.bareCpuUs.map((r) => sig(r, 3)).join(', ')} µs; p99 ${v.p99Ms.map((r) => sig(r, 3)).join(', ')} ms; log lines per request ${v.logLinesPerRequest.map((r) => sig(r, 2)).join(', ')}.`;
}
