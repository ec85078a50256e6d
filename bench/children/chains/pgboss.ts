import { importPeer } from '../../lib/peers-install.js';
import { sleep } from '../../lib/stats.js';
import { Counter, countPgQueries } from './count.js';
import { HOPS, PGBOSS_BATCH, type ChainSystem, type SystemFactory } from './system.js';

/** The part of pg-boss 10 the chain uses. */
interface Job {
  readonly id: string;
  readonly data: { readonly k: number };
}
interface PgBoss {
  on(event: 'error', listener: (err: Error) => void): void;
  start(): Promise<unknown>;
  stop(options: { graceful: boolean; wait: boolean; timeout?: number }): Promise<void>;
  createQueue(name: string): Promise<void>;
  insert(jobs: ReadonlyArray<{ name: string; data: unknown }>): Promise<unknown>;
  work(name: string, options: { batchSize: number; pollingIntervalSeconds: number }, handler: (jobs: Job[]) => Promise<unknown>): Promise<string>;
  notifyWorker(id: string): void;
  getQueueSize(name: string): Promise<number>;
}
interface PgModule {
  default: { Client: { prototype: { query: (this: object, ...args: unknown[]) => unknown } } };
}

/**
 * pg-boss: one queue per hop and one worker per queue fetching batches of PGBOSS_BATCH. A
 * hop's handler inserts the whole batch into the next queue in one statement; pg-boss then
 * completes the batch in one more. Workers poll (0.5 s, pg-boss's minimum) and are woken at
 * once by notifyWorker when work is added in this process (the producer, and each hop for the next),
 * and a worker whose batch was full fetches again at once (notified by its own handler).
 * Final ack: the commit of pg-boss's completion of the hop3 job (its completeJobs statement).
 */
export const pgBossChain: SystemFactory = async (input, onFinal) => {
  if (!input.postgresUrl) throw new Error('pg-boss needs a database');
  const counter = new Counter();
  const lastHop = `hop${HOPS}`;
  // Job ids of the last hop, while they run, to their message keys.
  const finishing = new Map<string, number>();
  const pg = await importPeer<PgModule>('pg');
  countPgQueries(pg.default.Client, counter, (text, values) => {
    if (values[0] !== lastHop || !text.includes("state = 'completed'") || !Array.isArray(values[1])) return;
    for (const id of values[1] as string[]) {
      const key = finishing.get(id);
      if (key === undefined) continue;
      finishing.delete(id);
      onFinal(key);
    }
  });
  const PgBossClass = (await importPeer<{ default: new (options: unknown) => PgBoss }>('pg-boss')).default;
  const boss = new PgBossClass({ connectionString: input.postgresUrl, max: 10, supervise: false, schedule: false });
  const failures: string[] = [];
  boss.on('error', (err) => failures.push(String(err)));
  await boss.start();
  const names = Array.from({ length: HOPS }, (_, i) => `hop${i + 1}`);
  for (const name of names) await boss.createQueue(name);
  const ids: string[] = [];
  for (let i = 0; i < HOPS; i++) {
    const next = names[i + 1];
    ids.push(
      await boss.work(names[i]!, { batchSize: PGBOSS_BATCH, pollingIntervalSeconds: 0.5 }, async (jobs) => {
        if (next) {
          await boss.insert(jobs.map((j) => ({ name: next, data: j.data })));
          boss.notifyWorker(ids[i + 1]!);
        } else for (const j of jobs) finishing.set(j.id, j.data.k);
        // A full batch says more may be waiting: fetch again at once. pg-boss 10's worker otherwise
        // sleeps out its polling interval after every batch it was not notified during, which
        // capped a queue with a backlog at PGBOSS_BATCH jobs per 0.5 s (~110 msg/s for the chain).
        if (jobs.length === PGBOSS_BATCH) boss.notifyWorker(ids[i]!);
      }),
    );
  }
  const system: ChainSystem = {
    async inject(keys) {
      if (failures.length) throw new Error(`pg-boss: ${failures[0]}`);
      await boss.insert(keys.map((k) => ({ name: names[0]!, data: { k } })));
      boss.notifyWorker(ids[0]!);
    },
    counts: () => counter.snapshot(),
    async drained() {
      for (;;) {
        let waiting = 0;
        for (const name of names) waiting += await boss.getQueueSize(name);
        if (waiting === 0 && finishing.size === 0) return;
        await sleep(20);
      }
    },
    async stop() {
      await boss.stop({ graceful: true, wait: true, timeout: 10_000 });
      if (failures.length) throw new Error(`pg-boss: ${failures.length} errors, first: ${failures[0]}`);
    },
  };
  return system;
};
