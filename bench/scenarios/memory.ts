/**
 * Scenario 6: memory. In a fresh process per round, the journaled 3-hop chain runs `small`
 * messages, then on to `large` in all; RSS after full collections is compared. The headline
 * is the growth between the two; the baseline, from the same process, is its RSS after the
 * first `small` messages.
 */
import type { MemoryInput, MemoryResult } from '../children/memory.js';
import { benchFile, runChild } from '../lib/child.js';
import { atMost, row, type ScenarioResult } from '../lib/result.js';
import type { Scale } from '../lib/scale.js';
import { median, sig } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';

const count = (n: number) => (n >= 1e6 ? `${sig(n / 1e6, 3)}M` : `${sig(n / 1e3, 3)}k`);

export async function runMemory(scale: Scale, log: (line: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const { small, large } = scale.memory;
  const results: MemoryResult[] = [];
  for (let r = 0; r < scale.rounds; r++) {
    const dataDir = tempDir('memory');
    try {
      const input: MemoryInput = { dataDir, small, large };
      const m = await runChild<MemoryResult>(benchFile('children/memory.ts'), input, { timeoutMs: 60 * 60_000, execArgv: ['--expose-gc'], what: 'memory' });
      results.push(m);
      log(
        `  round ${r + 1}: RSS idle ${m.idle.rssMb.toFixed(1)} MB, after ${count(small)} ${m.small.rssMb.toFixed(1)} MB (heap ${m.small.heapUsedMb.toFixed(1)}), ` +
          `after ${count(large)} ${m.large.rssMb.toFixed(1)} MB (heap ${m.large.heapUsedMb.toFixed(1)}) in ${m.seconds.toFixed(0)} s; ` +
          `usage tracker heap ${m.usageTracker.small.heapUsedMb.toFixed(1)} MB with ${count(small)} threads, ${m.usageTracker.large.heapUsedMb.toFixed(1)} MB with ${count(large)}`,
      );
    } finally {
      removeDir(dataDir);
    }
  }
  const baseline = { name: `RSS after ${count(small)} messages`, unit: 'MB', rounds: results.map((m) => m.small.rssMb) };
  return {
    scenario: 6,
    title: 'Memory',
    rows: [
      row({
        scenario: 6,
        metric: `RSS growth from ${count(small)} to ${count(large)} messages`,
        unit: 'MB',
        rounds: results.map((m) => m.large.rssMb - m.small.rssMb),
        baseline,
        target: atMost(100, '<= 100 MB'),
      }),
      row({
        scenario: 6,
        metric: `JS heap growth from ${count(small)} to ${count(large)} messages`,
        unit: 'MB',
        rounds: results.map((m) => m.large.heapUsedMb - m.small.heapUsedMb),
        baseline: { name: `heap used after ${count(small)}`, unit: 'MB', rounds: results.map((m) => m.small.heapUsedMb) },
        target: null,
      }),
      row({
        scenario: 6,
        metric: `Usage tracker live aggregates alone: heap growth from ${count(small)} to ${count(large)} threads with one LLM call each`,
        unit: 'MB',
        rounds: results.map((m) => m.usageTracker.large.heapUsedMb - m.usageTracker.small.heapUsedMb),
        baseline: { name: `heap used with ${count(small)} threads tracked`, unit: 'MB', rounds: results.map((m) => m.usageTracker.small.heapUsedMb) },
        target: null,
        note: 'not reached by the code-handler chain above; the tracker keeps nothing per thread (it kept ~190 bytes per thread, never pruned, until 2026-11-26)',
      }),
      row({ scenario: 6, metric: `RSS after ${count(large)} messages`, unit: 'MB', rounds: results.map((m) => m.large.rssMb), baseline, target: null }),
    ],
    context: { small, large, results, medianSeconds: median(results.map((m) => m.seconds)) },
    notes: [
      `The 3-hop chain of no-op code handlers with the SQLite journal (every hop PENDING -> DISPATCHED -> ACKED), default limits; messages injected in batches of 500, in slices of 50,000 that are let run through before the next, each its own thread. Memory is read with process.memoryUsage() after three full collections (--expose-gc) and a short pause, in one process per round: after ${count(small)} messages and after ${count(large)} in all.`,
      `The chain's handlers are code, so no LLM usage is recorded. The usage-tracker row measures the tracker's live aggregates on their own, in the same child after the organism stopped: a UsageTracker fed one event per thread id (UUID-sized), JS heap after ${count(small)} and after ${count(large)} distinct threads. It keeps totals per agent and per model only (a thread's usage is read from the usage store), so this stays flat.`,
      `RSS includes SQLite's page cache (bounded by its cache_size) and the memory allocator's retained pages; the heap row shows the JavaScript side alone.`,
    ],
    seconds: (performance.now() - started) / 1000,
  };
}
