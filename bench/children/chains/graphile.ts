import { importPeer } from '../../lib/peers-install.js';
import { sleep } from '../../lib/stats.js';
import { Counter, countPgQueries } from './count.js';
import { HOPS, PEER_CONCURRENCY, type ChainSystem, type SystemFactory } from './system.js';

/** The part of graphile-worker 0.17 the chain uses. */
interface Payload {
  readonly k: number;
  readonly q: string;
}
interface Helpers {
  readonly job: { readonly id: string };
  addJob(identifier: string, payload: unknown, spec: { queueName: string }): Promise<unknown>;
}
type Task = (payload: unknown, helpers: Helpers) => Promise<void>;
interface Runner {
  stop(): Promise<void>;
  events: { on(event: string, listener: (e: { error?: unknown }) => void): void };
}
interface WorkerUtils {
  addJob(identifier: string, payload: unknown, spec: { queueName: string }): Promise<unknown>;
  addJobs(specs: ReadonlyArray<{ identifier: string; payload: unknown; queueName: string }>): Promise<unknown>;
  withPgClient<T>(fn: (client: { query(text: string): Promise<{ rows: Array<{ n: string }> }> }) => Promise<T>): Promise<T>;
  release(): Promise<void>;
}
interface GraphileWorker {
  run(options: unknown): Promise<Runner>;
  makeWorkerUtils(options: unknown): Promise<WorkerUtils>;
  Logger: new (factory: () => () => void) => unknown;
}
interface PgModule {
  default: { Client: { prototype: { query: (this: object, ...args: unknown[]) => unknown } } };
}

/**
 * graphile-worker: one task per hop, every job of a message in the named queue of its thread
 * (`t<key>`: FIFO per thread, as organism keeps a thread's messages in order), one pool of
 * PEER_CONCURRENCY workers woken by LISTEN/NOTIFY; a hop's task adds the next hop's job.
 * Logging off (its default logs a line per job). Final ack: the commit of graphile-worker's
 * completion of the hop3 job (the DELETE of the job row).
 */
export const graphileChain: SystemFactory = async (input, onFinal) => {
  if (!input.postgresUrl) throw new Error('graphile-worker needs a database');
  const counter = new Counter();
  const finishing = new Map<string, number>();
  const pg = await importPeer<PgModule>('pg');
  countPgQueries(pg.default.Client, counter, (text, values) => {
    if (!text.includes('delete from') || !text.includes('_private_jobs')) return;
    const ids = Array.isArray(values[0]) ? (values[0] as unknown[]) : [values[0]];
    for (const id of ids) {
      const key = finishing.get(String(id));
      if (key === undefined) continue;
      finishing.delete(String(id));
      onFinal(key);
    }
  });
  const gw = await importPeer<GraphileWorker>('graphile-worker');
  const logger = new gw.Logger(() => () => {});
  const forward =
    (next: string): Task =>
    async (payload, helpers) => {
      await helpers.addJob(next, payload, { queueName: (payload as Payload).q });
    };
  const taskList: Record<string, Task> = {};
  for (let i = 1; i < HOPS; i++) taskList[`hop${i}`] = forward(`hop${i + 1}`);
  taskList[`hop${HOPS}`] = async (payload, helpers) => {
    finishing.set(String(helpers.job.id), (payload as Payload).k);
  };
  const failures: string[] = [];
  const runner = await gw.run({ connectionString: input.postgresUrl, concurrency: PEER_CONCURRENCY, maxPoolSize: PEER_CONCURRENCY + 2, noHandleSignals: true, logger, taskList });
  runner.events.on('job:error', (e) => failures.push(String(e.error)));
  const utils = await gw.makeWorkerUtils({ connectionString: input.postgresUrl, logger });
  const system: ChainSystem = {
    async inject(keys) {
      if (failures.length) throw new Error(`graphile-worker: ${failures[0]}`);
      if (keys.length === 1) await utils.addJob('hop1', { k: keys[0], q: `t${keys[0]}` }, { queueName: `t${keys[0]}` });
      else await utils.addJobs(keys.map((k) => ({ identifier: 'hop1', payload: { k, q: `t${k}` }, queueName: `t${k}` })));
    },
    counts: () => counter.snapshot(),
    async drained() {
      for (;;) {
        const left = await utils.withPgClient((c) => c.query('SELECT count(*) AS n FROM graphile_worker._private_jobs'));
        if (Number(left.rows[0]!.n) === 0 && finishing.size === 0) return;
        await sleep(20);
      }
    },
    async stop() {
      await utils.release();
      await runner.stop();
      if (failures.length) throw new Error(`graphile-worker: ${failures.length} job errors, first: ${failures[0]}`);
    },
  };
  return system;
};
