import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stopProcess, until } from '../cli/processes.js';
import { withPostgres } from '../store/contract/backends.js';
import { durabilityViolations, rerunViolations } from './checks.js';
import { startCluster, type Cluster } from './cluster.js';

/**
 * One `serve --handlers off` and two workers on a fresh database; one worker is SIGKILLed
 * while it runs handlers. Every message whose inject returned must end ACKED with its thread
 * completed, no delivery the journal had ACKED may run again, what the dead worker held comes
 * back (lease expiry, attempt + 1) and runs on the other, and usage adds up.
 */
describe.runIf(withPostgres('scale-out worker kill'))('a worker killed -9 under load (PostgreSQL, serve --handlers off + 2 workers)', () => {
  let c: Cluster;
  beforeAll(async () => {
    c = await startCluster({ workers: 2, concurrency: 4 });
  }, 300_000);
  afterAll(() => c?.close());

  it('loses nothing: every accepted message ends ACKED, nothing ACKED runs again, usage adds up', async () => {
    const N = 120;
    const accepted: Array<{ threadId: string; messageId: string }> = [];
    let next = 0;
    const injecting = Promise.all(
      Array.from({ length: 6 }, async () => {
        while (next < N) {
          const i = next++;
          accepted.push(await c.inject('intake', { text: `job-${i}`, ms: 20 + ((i * 37) % 60) }));
        }
      }),
    );
    const [victim, survivor] = c.workers as [(typeof c.workers)[0], (typeof c.workers)[0]];
    // Kill once the victim has done some work and has a handler running (started, not ended).
    const inFlight = () => {
      const open = new Set<string>();
      for (const r of c.runs()) {
        if (r.pid !== victim.pid) continue;
        if (r.ev === 'start') open.add(r.messageId);
        else open.delete(r.messageId);
      }
      return open;
    };
    await until(() => c.runs().filter((r) => r.pid === victim.pid && r.ev === 'end').length >= 10 && inFlight().size > 0, 'the victim worker to run handlers', 120_000);
    await stopProcess(victim, 'SIGKILL');
    const cutShort = inFlight();
    expect(cutShort.size).toBeGreaterThan(0);

    await injecting;
    await c.drained();
    const runs = c.runs();

    // What the victim was running came back and ran to its end on the survivor, one attempt later.
    for (const messageId of cutShort) {
      const mine = runs.filter((r) => r.messageId === messageId);
      const last = mine.filter((r) => r.ev === 'start').at(-1)!;
      const first = mine.find((r) => r.ev === 'start')!;
      expect(last.pid, `delivery ${messageId} cut short on the victim`).toBe(survivor.pid);
      expect(last.attempt).toBeGreaterThan(first.attempt);
      expect(mine.some((r) => r.ev === 'end' && r.pid === survivor.pid)).toBe(true);
    }
    expect(rerunViolations(runs, new Set([victim.pid]))).toEqual([]);
    const byPid = (pid: number) => runs.filter((r) => r.pid === pid && r.ev === 'start').length;
    console.info(
      `scale-out worker kill: ${byPid(victim.pid)} handler runs on the victim, ${byPid(survivor.pid)} on the survivor; ${cutShort.size} cut short by the kill, all run again on the survivor`,
    );

    // The other processes go (gracefully) before the checks open the database themselves.
    await stopProcess(survivor);
    await stopProcess(c.serve);
    const result = await durabilityViolations(c.storeUrl, runs, accepted);
    expect(result.violations).toEqual([]);
    expect(result.failed).toBe(0);
    expect(accepted).toHaveLength(N);
    // One usage event per acknowledged thinker delivery (none from a lost lease), and billing agrees.
    expect(result.usageEvents).toBe(result.thinkerAcked);
    expect(result.billingRequests).toBe(result.usageEvents);
    expect(result.thinkerAcked).toBe(N);
  }, 600_000);
});
