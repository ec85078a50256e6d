/**
 * CPU per journaled message with tracing off and on, interleaved round by round (ABCABC...) in
 * one run so a busy machine weighs on every configuration alike. Each round is the bench's pump
 * child (scenario 2's journaled 3-hop chain, fresh process, fresh SQLite database; tracing at
 * 100 % sampling, OTLP/protobuf to a sink in another process, every span checked to arrive).
 *
 *   node --import tsx bench/tools/tracing-cost.ts [rounds=5] [messages=10000]
 */
import os from 'node:os';
import { benchFile, runChild } from '../lib/child.js';
import { median } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';
import type { PumpInput, ThroughputResult } from '../children/pump.js';

const rounds = Number(process.argv[2] ?? 5);
const messages = Number(process.argv[3] ?? 10_000);

const CONFIGS: ReadonlyArray<{ name: string; input: Partial<PumpInput> }> = [
  { name: 'off', input: {} },
  { name: 'tracing', input: { telemetry: 'tracing' } },
  { name: 'tracing, context manager disabled', input: { telemetry: 'tracing', contextManager: 'disabled' } },
];

async function round(extra: Partial<PumpInput>): Promise<ThroughputResult> {
  const dataDir = tempDir('tracing-cost');
  try {
    return await runChild<ThroughputResult>(benchFile('children/pump.ts'), { mode: 'throughput', messages, ...extra, dataDir }, { timeoutMs: 900_000, what: 'pump' });
  } finally {
    removeDir(dataDir);
  }
}

const cpu = new Map<string, number[]>(CONFIGS.map((c) => [c.name, []]));
const loads: number[] = [];
for (let r = 0; r < rounds; r++) {
  const line: string[] = [];
  for (const c of CONFIGS) {
    loads.push(os.loadavg()[0]!);
    const result = await round(c.input);
    cpu.get(c.name)!.push(result.cpuMicrosPerMessage);
    line.push(`${c.name} ${Math.round(result.cpuMicrosPerMessage)} µs`);
  }
  const [off, ...on] = CONFIGS.map((c) => cpu.get(c.name)!.at(-1)!);
  console.log(`round ${r + 1}: ${line.join(', ')}; ratios ${on.map((v) => (v / off!).toFixed(2)).join(', ')}`);
}
const off = median(cpu.get('off')!);
for (const c of CONFIGS) {
  const values = cpu.get(c.name)!;
  const perRound = values.map((v, i) => (v / cpu.get('off')![i]!).toFixed(2)).join(' ');
  console.log(`${c.name}: median ${Math.round(median(values))} µs CPU/msg, ${(median(values) / off).toFixed(2)}x off (per round: ${perRound})`);
}
console.log(`${messages} messages x 3 hops per round, ${rounds} rounds; 1-min load average ${Math.min(...loads).toFixed(1)}-${Math.max(...loads).toFixed(1)}`);
