import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { UsageTracker } from '../../src/usage/tracker.js';
import { event } from './fixtures.js';

/** A full collection, so heap figures are what is kept, not garbage not yet collected. */
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const heapUsed = () => {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
};

describe('usage tracker memory', () => {
  // It used to keep counters per thread id, never read and never pruned: about 190 bytes for
  // every thread a worker ever ran (RSS 145 -> 329 MB after 32k injects was partly this).
  it('does not grow with the number of threads it has seen', () => {
    const tracker = new UsageTracker();
    const feed = (from: number, to: number) => {
      for (let i = from; i < to; i++) tracker.record(event({ threadId: `0190f5c2-7a1b-7c3d-8e4f-${i.toString(16).padStart(12, '0')}`, id: `e-${i}` }));
    };
    feed(0, 10_000);
    const before = heapUsed();
    feed(10_000, 210_000);
    const growth = heapUsed() - before;
    expect(tracker.totals().requestCount).toBe(210_000);
    // 200,000 threads at ~190 bytes each would be ~38 MB; a generous bound far below that.
    expect(growth, `heap grew ${(growth / 2 ** 20).toFixed(1)} MB`).toBeLessThan(8 * 2 ** 20);
  });
});
