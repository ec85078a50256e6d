import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../cli/processes.js';
import { withPostgres } from '../store/contract/backends.js';
import { startCluster, type Cluster, type RunLine } from './cluster.js';

const RUNS = Number(process.env['FIFO_RUNS'] ?? 6);

/**
 * FIFO within a thread across workers, as a property: random threads (each a number of
 * messages injected in order while the listener is paused, then released at once), 1 to 3
 * workers, random handler durations. The handlers' log
 * is appended by every worker in the order things happened, so per thread it must read
 * start 0, end 0, start 1, end 1, ...: never a later message before an earlier one, never two
 * of one thread at once, whichever worker ran each.
 */
describe.runIf(withPostgres('scale-out FIFO'))('per-thread FIFO across workers (PostgreSQL, property)', () => {
  let c: Cluster;
  beforeAll(async () => {
    // One delivery per worker at a time: a thread's messages then pass from worker to worker.
    c = await startCluster({ workers: 0, concurrency: 1 });
  }, 300_000);
  afterAll(() => c?.close());

  it(`holds for random threads × message counts × worker counts (${RUNS} runs)`, async () => {
    let run = 0;
    const spread: string[] = [];
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 5 }),
        fc.integer({ min: 1, max: 3 }),
        fc.array(fc.integer({ min: 0, max: 15 }), { minLength: 6, maxLength: 6 }),
        async (threads, workerCount, durations) => {
          run++;
          const workers = await Promise.all(Array.from({ length: workerCount }, (_, i) => c.startWorker(`fifo-${run}-${i}`)));
          try {
            // The listener is paused while the messages go in, so every thread has its whole backlog
            // waiting when the workers start on it (otherwise each message could be done before the
            // next is injected, and order would hold trivially). Threads are injected side by side;
            // within a thread each inject returns before the next.
            const post = async (p: string) => expect((await c.api(p, { method: 'POST' })).status).toBe(200);
            await post('/agents/ordered/pause');
            const sent = await Promise.all(
              threads.map(async (count, t) => {
                const ids: string[] = [];
                let threadId: string | undefined;
                for (let seq = 0; seq < count; seq++) {
                  const r = await c.inject('ordered', { seq, ms: durations[(t + seq) % durations.length]! }, threadId);
                  threadId = r.threadId;
                  ids.push(r.messageId);
                }
                return { threadId: threadId!, ids };
              }),
            );
            await post('/agents/ordered/resume');
            const all = new Set(sent.flatMap((s) => s.ids));
            const mine = (): RunLine[] => c.runs().filter((r) => all.has(r.messageId));
            await until(() => mine().filter((r) => r.ev === 'end').length === all.size, `run ${run}: every ordered message to finish`, 120_000);
            const lines = mine();
            for (const s of sent) {
              const got = lines.filter((r) => r.threadId === s.threadId).map((r) => `${r.ev} ${r.seq}`);
              const want = s.ids.flatMap((_, seq) => [`start ${seq}`, `end ${seq}`]);
              expect(got, `thread ${s.threadId} (${threads.length} threads, ${workerCount} workers)`).toEqual(want);
            }
            spread.push(`${threads.join('+')} msgs on ${workerCount} workers: ran on ${new Set(lines.map((r) => r.pid)).size}`);
          } finally {
            for (const w of workers) await c.stopWorker(w);
          }
        },
      ),
      { numRuns: RUNS, endOnFailure: true, ...(process.env['FIFO_SEED'] ? { seed: Number(process.env['FIFO_SEED']) } : {}) },
    );
    console.info(`scale-out FIFO runs: ${spread.join('; ')}`);
  }, 900_000);
});
