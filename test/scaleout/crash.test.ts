import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopProcess } from '../cli/processes.js';
import { withPostgres } from '../store/contract/backends.js';
import { durabilityViolations, rerunViolations } from './checks.js';
import { startCluster, type Cluster } from './cluster.js';

const KILLS = Number(process.env['SCALEOUT_KILLS'] ?? 8);

/**
 * The crash-safety test (test/crash) in cluster mode: `serve` (running handlers too) and two
 * workers on one database, under a steady load of injects through the API, while SIGKILLs hit
 * serve or a worker at random instants and each is started again. Afterwards the crash suite's
 * checks: every message whose inject returned ended ACKED with its thread completed and its
 * side effect exactly once, no delivery ran again once ACKED, usage adds up; and here also:
 * no delivery ran twice with the same attempt, and only a killed process's runs were repeated.
 */
describe.runIf(withPostgres('scale-out crash safety'))('crash safety on PostgreSQL (kill -9 of serve and of workers)', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster({ workers: 2, concurrency: 4, serveHandlers: true });
  }, 300_000);
  afterAll(() => c?.close());

  it(`loses nothing acknowledged and repeats no finished work across ${KILLS} kills`, async () => {
    const accepted: Array<{ threadId: string; messageId: string }> = [];
    const killed = new Set<number>();
    let driving = true;
    let next = 0;
    const backlog = async () => Number((await c.sql<{ n: string }>(`SELECT count(*) AS n FROM journal WHERE state IN ('PENDING', 'DISPATCHED')`))[0]!.n);
    const driver = Promise.all(
      Array.from({ length: 4 }, async () => {
        while (driving) {
          if ((await backlog()) > 40) {
            await new Promise((r) => setTimeout(r, 20));
            continue;
          }
          const i = next++;
          try {
            // Counted only once inject returned: then it must survive any kill.
            accepted.push(await c.inject('intake', { text: `job-${i}`, ms: 10 + ((i * 37) % 50) }));
          } catch {
            await new Promise((r) => setTimeout(r, 100)); // serve is down or restarting
          }
        }
      }),
    );

    let workerNo = c.workers.length;
    const victims: string[] = [];
    for (let k = 0; k < KILLS; k++) {
      await new Promise((r) => setTimeout(r, 300 + Math.random() * 1_200));
      const pick = Math.floor(Math.random() * (c.workers.length + 1));
      if (pick === c.workers.length) {
        killed.add(c.serve.child.pid!);
        victims.push('serve');
        await c.restartServe();
      } else {
        const w = c.workers[pick]!;
        killed.add(w.pid);
        victims.push(w.name);
        await c.stopWorker(w, 'SIGKILL');
        await c.startWorker(`w${++workerNo}`);
      }
    }
    driving = false;
    await driver;
    await c.drained();
    const runs = c.runs();

    // The kills hit work in flight: some deliveries ran again after a kill.
    const starts = new Map<string, number>();
    for (const r of runs) if (r.ev === 'start') starts.set(r.messageId, (starts.get(r.messageId) ?? 0) + 1);
    const repeated = [...starts.values()].filter((n) => n > 1).length;
    console.info(`scale-out crash: ${KILLS} kills (${victims.join(', ')}), ${accepted.length} accepted, ${repeated} deliveries run again after a kill`);
    expect(repeated).toBeGreaterThan(0);
    expect(accepted.length).toBeGreaterThan(KILLS);
    expect(rerunViolations(runs, killed)).toEqual([]);

    for (const w of [...c.workers]) await c.stopWorker(w);
    await stopProcess(c.serve);
    const result = await durabilityViolations(c.storeUrl, runs, accepted);
    expect(result.violations).toEqual([]);
    expect(result.failed).toBe(0);
    expect(result.usageEvents).toBe(result.thinkerAcked);
    expect(result.billingRequests).toBe(result.usageEvents);
  }, 900_000);
});
