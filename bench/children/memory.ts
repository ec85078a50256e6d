/**
 * Scenario 6 in a fresh process (run with --expose-gc): the journaled 3-hop chain on SQLite.
 * RSS and heap are read after the organism starts, after `small` messages went through, and
 * after `large` in all, each time after full garbage collections, so what is measured is what
 * the process keeps, not garbage not yet collected.
 */
import path from 'node:path';
import { Organism } from '../../src/organism/organism.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { UsageTracker } from '../../src/usage/tracker.js';
import type { UsageEvent } from '../../src/usage/types.js';
import { childMain } from '../lib/child.js';
import { ackCounter, pushThrough } from '../lib/drive.js';
import { chainOrganism } from '../lib/organisms.js';
import { sleep } from '../lib/stats.js';

export interface MemoryInput {
  readonly dataDir: string;
  readonly small: number;
  readonly large: number;
}

export interface MemoryPoint {
  readonly messages: number;
  readonly rssMb: number;
  readonly heapUsedMb: number;
  readonly externalMb: number;
}

export interface MemoryResult {
  readonly idle: MemoryPoint;
  readonly small: MemoryPoint;
  readonly large: MemoryPoint;
  readonly seconds: number;
  /**
   * The usage tracker's live aggregates, which the code-handler chain does not reach: a
   * standalone tracker fed one LLM-call event per thread, read after `small` and after `large`
   * threads (it keeps nothing per thread: this stays flat).
   */
  readonly usageTracker: { readonly small: MemoryPoint; readonly large: MemoryPoint };
}

const MB = 2 ** 20;

async function settle(messages: number): Promise<MemoryPoint> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  for (let i = 0; i < 3; i++) {
    gc();
    await sleep(50);
  }
  const m = process.memoryUsage();
  return { messages, rssMb: m.rss / MB, heapUsedMb: m.heapUsed / MB, externalMb: m.external / MB };
}

/** One event per thread, shaped as the LLM router records it (thread ids are UUID-sized). */
async function trackerGrowth(input: MemoryInput): Promise<{ small: MemoryPoint; large: MemoryPoint }> {
  const tracker = new UsageTracker();
  const feed = (from: number, to: number) => {
    for (let i = from; i < to; i++) {
      const event: UsageEvent = {
        id: `evt-${i}`,
        timestamp: Date.now(),
        threadId: `0190f5c2-7a1b-7c3d-8e4f-${i.toString(16).padStart(12, '0')}`,
        agentId: 'writer',
        messageId: null,
        model: 'mock-model',
        provider: 'mock',
        promptTokens: 100,
        completionTokens: 20,
        totalTokens: 120,
        cacheReadTokens: null,
        cacheWriteTokens: null,
        reasoningTokens: null,
        providerLatencyMs: 1,
        totalLatencyMs: 1,
        cost: 0.001,
        metadata: { orgId: 'acme' },
      };
      tracker.record(event);
    }
  };
  feed(0, input.small);
  const small = await settle(input.small);
  feed(input.small, input.large);
  const large = await settle(input.large);
  if (tracker.totals().requestCount !== input.large) throw new Error('tracker lost an event');
  return { small, large };
}

async function run(input: MemoryInput): Promise<MemoryResult> {
  const t0 = performance.now();
  const organism = new Organism(chainOrganism(3), { storage: openSqliteStorage({ dataDir: path.join(input.dataDir, 'data') }) });
  await organism.start();
  const acked = ackCounter(organism, 'hop3');
  const idle = await settle(0);
  await pushThrough(organism, 'hop1', input.small, () => acked.count, input.small, 600_000);
  const small = await settle(input.small);
  // The rest in slices, so the 10,000-entry queue never has to hold it all.
  const SLICE = 50_000;
  for (let done = input.small; done < input.large; done += SLICE) {
    const n = Math.min(SLICE, input.large - done);
    await pushThrough(organism, 'hop1', n, () => acked.count, done + n, 600_000);
  }
  const large = await settle(input.large);
  acked.off();
  await organism.stop();
  const seconds = (performance.now() - t0) / 1000;
  return { idle, small, large, seconds, usageTracker: await trackerGrowth(input) };
}

childMain<MemoryInput, MemoryResult>(run);
