/**
 * What tracing costs the pump, configuration by configuration, interleaved round by round
 * (ABCD ABCD ...) in one run so a busy machine weighs on every configuration alike. Each round
 * is the bench's pump child (scenario 2's journaled 3-hop chain, fresh process, fresh SQLite
 * database; tracing at 100 % sampling, OTLP/protobuf to a sink in another process, every span
 * checked to arrive). Reported per configuration, as medians and as ratios to telemetry off:
 * journaled messages/s, CPU per message of the whole process (all threads) and of its main
 * thread (the one that runs deliveries).
 *
 * "tracing" is what `organism serve` runs by default (export worker, no global context
 * manager); "context-manager" adds `telemetry.context_manager: true`.
 *
 *   node --import tsx bench/tools/tracing-cost.ts [rounds=5] [messages=10000] [configs=off,metrics,tracing,context-manager]
 */
import os from 'node:os';
import { benchFile, runChild } from '../lib/child.js';
import { median } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';
import type { PumpInput, ThroughputResult } from '../children/pump.js';

const rounds = Number(process.argv[2] ?? 5);
const messages = Number(process.argv[3] ?? 10_000);

const ALL: ReadonlyArray<{ key: string; name: string; input: Partial<PumpInput> }> = [
  { key: 'off', name: 'off', input: {} },
  { key: 'metrics', name: 'metrics on', input: { telemetry: 'metrics' } },
  { key: 'tracing', name: 'tracing on (default: export worker, no context manager)', input: { telemetry: 'tracing' } },
  { key: 'context-manager', name: 'tracing on, with the context manager (telemetry.context_manager)', input: { telemetry: 'tracing', contextManager: true } },
  { key: 'main-thread', name: 'tracing on, export on the main thread', input: { telemetry: 'tracing', exportOn: 'main-thread' } },
];
const keys = (process.argv[4] ?? 'off,metrics,tracing,context-manager').split(',');
const CONFIGS = ALL.filter((c) => keys.includes(c.key));
if (CONFIGS[0]?.key !== 'off') throw new Error('the configurations start with off (the baseline)');

async function round(extra: Partial<PumpInput>): Promise<ThroughputResult> {
  const dataDir = tempDir('tracing-cost');
  try {
    return await runChild<ThroughputResult>(benchFile('children/pump.ts'), { mode: 'throughput', messages, ...extra, dataDir }, { timeoutMs: 900_000, what: 'pump' });
  } finally {
    removeDir(dataDir);
  }
}

const results = new Map<string, ThroughputResult[]>(CONFIGS.map((c) => [c.key, []]));
const loads: number[] = [];
for (let r = 0; r < rounds; r++) {
  const line: string[] = [];
  for (const c of CONFIGS) {
    loads.push(os.loadavg()[0]!);
    const result = await round(c.input);
    results.get(c.key)!.push(result);
    line.push(`${c.key} ${Math.round(result.messagesPerSec)} msg/s ${Math.round(result.cpuMicrosPerMessage)}/${Math.round(result.mainThreadCpuMicrosPerMessage ?? NaN)} µs`);
  }
  console.log(`round ${r + 1} (msg/s, CPU µs/msg process/main thread): ${line.join(', ')}`);
}
const off = results.get('off')!;
const med = (xs: readonly ThroughputResult[], f: (t: ThroughputResult) => number) => median(xs.map(f));
const rate = (t: ThroughputResult) => t.messagesPerSec;
const cpu = (t: ThroughputResult) => t.cpuMicrosPerMessage;
const main = (t: ThroughputResult) => t.mainThreadCpuMicrosPerMessage ?? NaN;
for (const c of CONFIGS) {
  const xs = results.get(c.key)!;
  const perRound = xs.map((x, i) => (x.messagesPerSec / off[i]!.messagesPerSec).toFixed(2)).join(' ');
  console.log(
    `${c.name}: ${Math.round(med(xs, rate))} msg/s (${(med(xs, rate) / med(off, rate)).toFixed(2)}x off; per round ${perRound}), ` +
      `CPU/msg ${Math.round(med(xs, cpu))} µs process (${(med(xs, cpu) / med(off, cpu)).toFixed(2)}x), ${Math.round(med(xs, main))} µs main thread (${(med(xs, main) / med(off, main)).toFixed(2)}x)`,
  );
}
const sorted = [...loads].sort((a, b) => a - b);
console.log(
  `${messages} messages x 3 hops per round, ${rounds} rounds; 1-min load average ${sorted[0]!.toFixed(1)}-${sorted.at(-1)!.toFixed(1)}, median ${median(sorted).toFixed(1)} (${os.cpus().length} CPUs)`,
);
