import { importPeer } from '../../lib/peers-install.js';
import { sleep } from '../../lib/stats.js';
import { HOPS, PEER_CONCURRENCY, type ChainSystem, type SystemFactory } from './system.js';

/** The part of BullMQ (and its ioredis) the chain uses. */
interface Job {
  readonly data: { readonly k: number };
}
interface Queue {
  add(name: string, data: unknown): Promise<unknown>;
  addBulk(jobs: ReadonlyArray<{ name: string; data: unknown }>): Promise<unknown>;
  getJobCounts(...types: string[]): Promise<Record<string, number>>;
  close(): Promise<void>;
}
interface Worker {
  on(event: 'completed', listener: (job: Job) => void): void;
  on(event: 'failed' | 'error', listener: (job: unknown, err?: Error) => void): void;
  waitUntilReady(): Promise<unknown>;
  close(): Promise<void>;
}
interface BullMQ {
  Queue: new (name: string, options: unknown) => Queue;
  Worker: new (name: string, processor: (job: Job) => Promise<unknown>, options: unknown) => Worker;
}
interface IORedisModule {
  default: { prototype: { sendCommand: (this: object, ...args: unknown[]) => unknown } };
}

/**
 * BullMQ: one queue per hop, one Worker per queue (concurrency PEER_CONCURRENCY); a hop's
 * handler adds the job of the next hop, and its completion is BullMQ's own (moveToCompleted,
 * after which the Worker emits `completed`). Completed jobs are kept (BullMQ's default), as
 * organism keeps its journal rows.
 */
export const bullmqChain: SystemFactory = async (input, onFinal) => {
  if (!input.redisPort) throw new Error('bullmq needs a Redis port');
  const { Queue, Worker } = await importPeer<BullMQ>('bullmq');
  // Commands sent to Redis (a Lua script counts once), from ioredis's single entry point.
  const ioredis = await importPeer<IORedisModule>('ioredis');
  let commands = 0;
  const send = ioredis.default.prototype.sendCommand;
  ioredis.default.prototype.sendCommand = function (this: object, ...args: unknown[]) {
    commands++;
    return send.apply(this, args);
  };
  const connection = { host: '127.0.0.1', port: input.redisPort, maxRetriesPerRequest: null };
  const queues = Array.from({ length: HOPS }, (_, i) => new Queue(`hop${i + 1}`, { connection }));
  const failures: string[] = [];
  const workers = queues.map((_, i) => {
    const next = queues[i + 1];
    const worker = new Worker(`hop${i + 1}`, next ? (job) => next.add('m', job.data) : async () => undefined, { connection, concurrency: PEER_CONCURRENCY });
    worker.on('failed', (_job, err) => failures.push(String(err)));
    worker.on('error', (err) => failures.push(String(err)));
    return worker;
  });
  workers[HOPS - 1]!.on('completed', (job) => onFinal(job.data.k));
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  const system: ChainSystem = {
    async inject(keys) {
      if (failures.length) throw new Error(`BullMQ: ${failures[0]}`);
      if (keys.length === 1) await queues[0]!.add('m', { k: keys[0] });
      else await queues[0]!.addBulk(keys.map((k) => ({ name: 'm', data: { k } })));
    },
    counts: () => ({ statements: commands, commits: null }),
    async drained() {
      for (;;) {
        let waiting = 0;
        for (const q of queues) {
          const c = await q.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
          waiting += Object.values(c).reduce((a, b) => a + b, 0);
        }
        if (waiting === 0) return;
        await sleep(20);
      }
    },
    async stop() {
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all(queues.map((q) => q.close()));
      if (failures.length) throw new Error(`BullMQ: ${failures.length} failures, first: ${failures[0]}`);
    },
  };
  return system;
};
