/**
 * Scenario 2: the pump with the SQLite journal. Every round runs in a fresh process on a fresh
 * database: the journaled 3-hop chain, the raw better-sqlite3 insert baseline, the same chain
 * on in-memory storage (context: the pump without its journal), and a steady offered rate.
 */
import { benchFile, runChild } from '../lib/child.js';
import { atLeast, atMost, row, type ScenarioResult } from '../lib/result.js';
import type { Scale } from '../lib/scale.js';
import { median, sig } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';
import type { PumpInput, RawResult, SteadyResult, ThroughputResult } from '../children/pump.js';

/** Wider concurrency limits (context row): more deliveries share each group commit. */
const WIDE = { maxConcurrentHandlers: 300, maxConcurrentPerAgent: 100 };

function ratioText(on: ThroughputResult, off: ThroughputResult): string {
  return `${(on.messagesPerSec / off.messagesPerSec).toFixed(2)}x, ${Math.round(on.cpuMicrosPerMessage)} µs CPU/msg, ${Math.round(on.mainThreadCpuMicrosPerMessage ?? NaN)} main thread`;
}

async function round<T>(input: Omit<PumpInput, 'dataDir'>): Promise<T> {
  const dataDir = tempDir(`pump-${input.mode}`);
  try {
    return await runChild<T>(benchFile('children/pump.ts'), { ...input, dataDir }, { timeoutMs: 900_000, what: `pump ${input.mode}` });
  } finally {
    removeDir(dataDir);
  }
}

export async function runPump(scale: Scale, log: (line: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const n = scale.pump.messages;
  const journaled: ThroughputResult[] = [];
  const memory: ThroughputResult[] = [];
  const wide: ThroughputResult[] = [];
  const raw: RawResult[] = [];
  const steady: SteadyResult[] = [];
  const withMetrics: ThroughputResult[] = [];
  const withTracing: ThroughputResult[] = [];
  for (let r = 0; r < scale.rounds; r++) {
    const j = await round<ThroughputResult>({ mode: 'throughput', messages: n });
    journaled.push(j);
    // Telemetry on vs off in the same run, interleaved with the plain rounds.
    withMetrics.push(await round<ThroughputResult>({ mode: 'throughput', messages: n, telemetry: 'metrics' }));
    withTracing.push(await round<ThroughputResult>({ mode: 'throughput', messages: n, telemetry: 'tracing' }));
    const [mt, tr] = [withMetrics.at(-1)!, withTracing.at(-1)!];
    log(
      `  round ${r + 1}: telemetry off ${Math.round(j.messagesPerSec)} msg/s (${Math.round(j.cpuMicrosPerMessage)} µs CPU/msg, ${Math.round(j.mainThreadCpuMicrosPerMessage ?? NaN)} main thread, ` +
        `${(j.statementsPerMessage ?? NaN).toFixed(2)} SQL statements/msg, ${(j.commitsPerMessage ?? NaN).toFixed(3)} commits/msg), metrics on ${Math.round(mt.messagesPerSec)} msg/s (${ratioText(mt, j)}), ` +
        `tracing on (100 %) ${Math.round(tr.messagesPerSec)} msg/s (${ratioText(tr, j)}; ${tr.spansExported} spans in ${tr.exports} exports)`,
    );
    const b = await round<RawResult>({ mode: 'raw', messages: n });
    raw.push(b);
    const m = await round<ThroughputResult>({ mode: 'throughput', messages: n, memory: true });
    memory.push(m);
    const w = await round<ThroughputResult>({ mode: 'throughput', messages: n, limits: WIDE });
    wide.push(w);
    const s = await round<SteadyResult>({ mode: 'steady', messages: 0, rate: scale.pump.steadyRate, seconds: scale.pump.steadySec });
    steady.push(s);
    log(
      `  round ${r + 1}: journaled ${Math.round(j.messagesPerSec)} msg/s (${Math.round(j.deliveriesPerSec)} deliveries/s), raw insert ${Math.round(b.rowsPerSec)} rows/s, ` +
        `in-memory ${Math.round(m.messagesPerSec)} msg/s, journaled with wider limits ${Math.round(w.messagesPerSec)} msg/s; steady ${Math.round(s.offeredPerSec)}/s: first-hop p50 ${s.firstHopP50Ms.toFixed(2)} p99 ${s.firstHopP99Ms.toFixed(2)} ms, ` +
        `3 hops p99 ${s.endToEndP99Ms.toFixed(2)} ms`,
    );
  }
  const rawRate = { name: `raw insert, ${n.toLocaleString('en-US')} rows in 1,000-row txns`, unit: 'rows/s', rounds: raw.map((b) => b.rowsPerSec) };
  const commitP50 = { name: 'raw 1-row commit p50', unit: 'ms', rounds: raw.map((b) => b.commitP50Ms) };
  const commitP99 = { name: 'raw 1-row commit p99', unit: 'ms', rounds: raw.map((b) => b.commitP99Ms) };
  const rate = scale.pump.steadyRate.toLocaleString('en-US');
  const telemetryOff = { name: 'journaled 3-hop chain, telemetry off (same run)', unit: 'msg/s', rounds: journaled.map((j) => j.messagesPerSec) };
  const cpuOff = { name: 'CPU per message, telemetry off (same run)', unit: 'µs', rounds: journaled.map((j) => j.cpuMicrosPerMessage) };
  const mainCpu = (t: ThroughputResult) => t.mainThreadCpuMicrosPerMessage ?? Number.NaN;
  const mainCpuOff = { name: 'main-thread CPU per message, telemetry off (same run)', unit: 'µs', rounds: journaled.map(mainCpu) };
  const perRound = (on: readonly ThroughputResult[]) => on.map((o, i) => (o.messagesPerSec / journaled[i]!.messagesPerSec).toFixed(2)).join(', ');
  const rows = [
    row({
      scenario: 2,
      metric: 'Journaled 3-hop chain with metrics on (prom-client), vs off',
      unit: 'msg/s',
      rounds: withMetrics.map((m) => m.messagesPerSec),
      baseline: telemetryOff,
      target: atLeast(0.95, '>= 0.95x off (metrics cost <= 5 %)', 'ratio'),
    }),
    row({
      scenario: 2,
      metric: 'Journaled 3-hop chain with tracing on (100 % sampled, OTLP/protobuf), vs off',
      unit: 'msg/s',
      rounds: withTracing.map((m) => m.messagesPerSec),
      baseline: telemetryOff,
      target: atLeast(0.75, '>= 0.75x off (tracing cost <= 25 %)', 'ratio'),
    }),
    row({
      scenario: 2,
      metric: 'CPU per message with metrics on, vs off (context: less sensitive to a busy machine than the rate)',
      unit: 'µs',
      rounds: withMetrics.map((m) => m.cpuMicrosPerMessage),
      baseline: cpuOff,
      target: null,
    }),
    row({
      scenario: 2,
      metric: "CPU per message with tracing on, vs off (all threads, the export worker's included)",
      unit: 'µs',
      rounds: withTracing.map((m) => m.cpuMicrosPerMessage),
      baseline: cpuOff,
      target: null,
    }),
    row({ scenario: 2, metric: 'Main-thread CPU per message with metrics on, vs off', unit: 'µs', rounds: withMetrics.map(mainCpu), baseline: mainCpuOff, target: null }),
    row({
      scenario: 2,
      metric: 'Main-thread CPU per message with tracing on, vs off (the thread that runs deliveries)',
      unit: 'µs',
      rounds: withTracing.map(mainCpu),
      baseline: mainCpuOff,
      target: null,
    }),
    row({
      scenario: 2,
      metric: `Journaled 3-hop chain: injected messages through all 3 hops (${n.toLocaleString('en-US')})`,
      unit: 'msg/s',
      rounds: journaled.map((j) => j.messagesPerSec),
      baseline: rawRate,
      target: atLeast(20_000, '>= 20,000 msg/s'),
    }),
    row({
      scenario: 2,
      metric: 'Journaled 3-hop chain vs raw insert rate',
      unit: 'msg/s',
      rounds: journaled.map((j) => j.messagesPerSec),
      baseline: rawRate,
      target: atLeast(0.1, '>= 0.1x raw insert', 'ratio'),
    }),
    row({
      scenario: 2,
      metric: 'SQL statements per message, journaled 3-hop chain (transaction control excluded; same run)',
      unit: 'statements',
      rounds: journaled.map((j) => j.statementsPerMessage ?? Number.NaN),
      target: atMost(7, '<= 7 (issue 28)'),
    }),
    row({ scenario: 2, metric: 'Commits per message, journaled 3-hop chain (same run)', unit: 'commits', rounds: journaled.map((j) => j.commitsPerMessage ?? Number.NaN), target: null }),
    row({ scenario: 2, metric: 'CPU per message, journaled 3-hop chain (all threads; same run)', unit: 'µs', rounds: journaled.map((j) => j.cpuMicrosPerMessage), target: null }),
    row({ scenario: 2, metric: 'Same run counted per journaled delivery (3 per message)', unit: 'msg/s', rounds: journaled.map((j) => j.deliveriesPerSec), baseline: rawRate, target: null }),
    row({
      scenario: 2,
      metric: `Journaled, concurrency limits ${WIDE.maxConcurrentHandlers} / ${WIDE.maxConcurrentPerAgent} per agent`,
      unit: 'msg/s',
      rounds: wide.map((w) => w.messagesPerSec),
      baseline: rawRate,
      target: null,
    }),
    row({ scenario: 2, metric: 'Same chain on in-memory storage (pump without journal)', unit: 'msg/s', rounds: memory.map((m) => m.messagesPerSec), baseline: rawRate, target: null }),
    row({ scenario: 2, metric: `Inject-to-ack p50 at ${rate} msg/s offered`, unit: 'ms', rounds: steady.map((s) => s.firstHopP50Ms), baseline: commitP50, target: null }),
    row({ scenario: 2, metric: `Inject-to-ack p99 at ${rate} msg/s offered`, unit: 'ms', rounds: steady.map((s) => s.firstHopP99Ms), baseline: commitP99, target: atMost(10, '<= 10 ms') }),
    row({ scenario: 2, metric: `Inject-to-last-hop-ack p50 at ${rate} msg/s (3 hops)`, unit: 'ms', rounds: steady.map((s) => s.endToEndP50Ms), baseline: commitP50, target: null }),
    row({ scenario: 2, metric: `Inject-to-last-hop-ack p99 at ${rate} msg/s (3 hops)`, unit: 'ms', rounds: steady.map((s) => s.endToEndP99Ms), baseline: commitP99, target: null }),
  ];
  const lag = sig(median(steady.map((s) => s.maxScheduleLagMs)), 3);
  return {
    scenario: 2,
    title: 'Pump with the SQLite journal',
    rows,
    context: {
      withMetrics,
      withTracing,
      messages: n,
      hops: 3,
      rounds: scale.rounds,
      limits: 'defaults (max_concurrent_handlers 20, max_concurrent_per_agent 5, max_queue 10,000)',
      wideLimits: WIDE,
      journaled,
      raw,
      memory,
      wide,
      steady,
    },
    notes: [
      `Telemetry rounds run right after the telemetry-off round they are compared with, each in a fresh process on a fresh database. Ratios per round: metrics on ${perRound(withMetrics)}; tracing on ${perRound(withTracing)}. Tracing exports every span (one per delivery, checked) with OTLP/protobuf to a sink in another process: the SDK's batch span processor (at its defaults) and exporter run in the export worker thread, as in \`organism serve\`. CPU per message counts all the process's threads (the export worker's and V8's GC helpers' included); main-thread CPU only the thread that runs deliveries.`,
      `A 3-hop chain of no-op code handlers (hop1 -> hop2 -> hop3) with default concurrency limits; every injected message is journaled PENDING -> DISPATCHED -> ACKED at each of its 3 hops (3 journal rows, 9 transitions). Throughput is timed from the first inject to the last hop3 ack, and checked: every journal row ACKED.`,
      `The baseline inserts the same number of rows (${n.toLocaleString('en-US')}) into the same journal schema and pragmas (WAL, synchronous=NORMAL) with better-sqlite3 in 1,000-row transactions. Latency baselines: one-row transactions on that database, each timed.`,
      `Steady rate: ${rate} new threads/s offered on a fixed schedule for ${scale.pump.steadySec} s after a 2,000-message warm-up; latency counts from each message's scheduled time (a stalled event loop cannot hide its delay; the largest schedule lag was ${lag} ms, median of rounds). "Inject-to-ack" is the injected message's own ack (hop1); the 3-hop rows wait for hop3's ack.`,
    ],
    seconds: (performance.now() - started) / 1000,
  };
}
