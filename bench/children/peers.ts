/**
 * The peers scenario (bench/scenarios/peers.ts), one run in a fresh process: one queue system
 * (organism on SQLite or PostgreSQL, BullMQ, pg-boss, graphile-worker) running the durable
 * 3-hop chain of no-op handlers, after an unmeasured warm-up that has drained:
 *   throughput: N messages enqueued at hop1 as fast as the system takes them (batches of 500),
 *               timed from the first enqueue to the last final-hop completion;
 *   steady:     a fixed offered rate, each message's latency from its scheduled time to its
 *               final-hop completion (committed).
 * CPU: this process's (producer and workers share it, as organism's inject and handlers do),
 * and the server's (Redis, or the PostgreSQL backends of the run's database) from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import { childMain } from '../lib/child.js';
import { freePort } from '../lib/port.js';
import { meterServerCpu, postgresBackendsOf, type ServerCpuMeter } from '../lib/server-cpu.js';
import { percentile, sleep, until } from '../lib/stats.js';
import { bullmqChain } from './chains/bullmq.js';
import { graphileChain } from './chains/graphile.js';
import { organismChain } from './chains/organism.js';
import { pgBossChain } from './chains/pgboss.js';
import type { ChainSystem, SystemFactory, SystemInput, SystemName, WorkCounts } from './chains/system.js';

export interface ChainInput extends SystemInput {
  readonly system: SystemName;
  readonly mode: 'throughput' | 'steady';
  /** Throughput: messages timed. */
  readonly messages: number;
  /** Messages run through first, unmeasured (JIT, caches, the store's first pages). */
  readonly warmup: number;
  /** Steady: offered messages per second, and for how long. */
  readonly rate?: number;
  readonly seconds?: number;
  /** PostgreSQL systems: the run's database (its backends' CPU is measured). */
  readonly database?: string;
}

export interface ChainResult {
  readonly system: SystemName;
  readonly mode: 'throughput' | 'steady';
  readonly messages: number;
  readonly seconds: number;
  /** Throughput: messages / seconds. Steady: messages / (last completion - first scheduled send): below the offered rate when the system did not keep up. */
  readonly messagesPerSec: number;
  /** CPU (user + system, all threads) of this process per message, µs. */
  readonly processCpuMicrosPerMessage: number;
  /** CPU of the server processes serving this run per message, µs (null: no server, organism on SQLite). */
  readonly serverCpuMicrosPerMessage: number | null;
  readonly statementsPerMessage: number;
  readonly commitsPerMessage: number | null;
  readonly offeredPerSec?: number;
  readonly p50Ms?: number;
  readonly p99Ms?: number;
  readonly maxScheduleLagMs?: number;
}

const FACTORIES: Record<SystemName, SystemFactory> = {
  'organism-sqlite': organismChain('sqlite'),
  'organism-postgres': organismChain('postgres'),
  bullmq: bullmqChain,
  'pg-boss': pgBossChain,
  'graphile-worker': graphileChain,
};

const BATCH = 500;

/** A private Redis for this run: AOF on, fsync every second (BullMQ's durable setting), no RDB snapshots. */
async function startRedis(dir: string): Promise<{ port: number; process: ChildProcess }> {
  const port = await freePort();
  const redis = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--appendonly', 'yes', '--appendfsync', 'everysec', '--save', '', '--protected-mode', 'no'],
    {
      stdio: 'ignore',
    },
  );
  await until(
    () =>
      new Promise<boolean>((resolve) => {
        const socket = net.connect(port, '127.0.0.1', () => {
          socket.end();
          resolve(true);
        });
        socket.on('error', () => resolve(false));
      }),
    10_000,
    'the private redis-server to listen',
    20,
  );
  return { port, process: redis };
}

async function run(input: ChainInput): Promise<ChainResult> {
  const redis = input.system === 'bullmq' ? await startRedis(input.dataDir) : null;
  try {
    const serverPids = redis ? async () => [redis.process.pid!] : input.database ? postgresBackendsOf(input.database) : null;
    let finals = 0;
    let onKey: (key: number) => void = () => {};
    const system = await FACTORIES[input.system]({ ...input, ...(redis ? { redisPort: redis.port } : {}) }, (key) => {
      finals++;
      onKey(key);
    });
    let nextKey = 0;
    const injectAll = async (n: number) => {
      for (let i = 0; i < n; i += BATCH) {
        const size = Math.min(BATCH, n - i);
        await system.inject(Array.from({ length: size }, () => nextKey++));
      }
    };
    if (input.warmup > 0) {
      await injectAll(input.warmup);
      await until(() => finals >= input.warmup, 300_000, `the ${input.warmup} warm-up messages`, 5);
      await system.drained();
    }
    finals = 0;
    const measure = await startMeasuring(system, serverPids);
    const result =
      input.mode === 'throughput'
        ? await throughput(input, injectAll, () => finals)
        : await steady(
            input,
            system,
            (f) => (onKey = f),
            () => nextKey++,
          );
    const used = await measure.stop(result.messages);
    await system.stop();
    return { system: input.system, mode: input.mode, ...result, ...used };
  } finally {
    if (redis) {
      const exited = new Promise((r) => redis.process.once('exit', r));
      redis.process.kill('SIGTERM');
      await exited;
    }
  }
}

interface Measuring {
  stop(messages: number): Promise<Pick<ChainResult, 'processCpuMicrosPerMessage' | 'serverCpuMicrosPerMessage' | 'statementsPerMessage' | 'commitsPerMessage'>>;
}

async function startMeasuring(system: ChainSystem, serverPids: (() => Promise<readonly number[]>) | null): Promise<Measuring> {
  const meter: ServerCpuMeter | null = serverPids ? await meterServerCpu(serverPids, 200) : null;
  const counts0: WorkCounts = system.counts();
  const cpu0 = process.cpuUsage();
  return {
    async stop(messages) {
      const cpu = process.cpuUsage(cpu0);
      const counts1 = system.counts();
      const server = meter ? await meter.stop() : null;
      return {
        processCpuMicrosPerMessage: (cpu.user + cpu.system) / messages,
        serverCpuMicrosPerMessage: server === null ? null : server / messages,
        statementsPerMessage: (counts1.statements - counts0.statements) / messages,
        commitsPerMessage: counts1.commits === null || counts0.commits === null ? null : (counts1.commits - counts0.commits) / messages,
      };
    },
  };
}

async function throughput(input: ChainInput, injectAll: (n: number) => Promise<void>, finals: () => number) {
  const t0 = performance.now();
  await injectAll(input.messages);
  await until(() => finals() >= input.messages, 900_000, `the last of ${input.messages} final-hop completions`, 1);
  const seconds = (performance.now() - t0) / 1000;
  return { messages: input.messages, seconds, messagesPerSec: input.messages / seconds };
}

async function steady(input: ChainInput, system: ChainSystem, listen: (f: (key: number) => void) => void, newKey: () => number) {
  const rate = input.rate ?? 50;
  const total = Math.round(rate * (input.seconds ?? 10));
  const due = new Map<number, number>();
  const latencies: number[] = [];
  let lastDone = 0;
  listen((key) => {
    const at = due.get(key);
    if (at === undefined) return;
    due.delete(key);
    lastDone = performance.now();
    latencies.push(lastDone - at);
  });
  const failures: unknown[] = [];
  let maxLag = 0;
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const at = t0 + (i * 1000) / rate;
    const wait = at - performance.now();
    if (wait >= 1) await sleep(wait);
    maxLag = Math.max(maxLag, performance.now() - at);
    const key = newKey();
    // Latency counts from the scheduled time, so a stalled loop cannot hide its own delay.
    due.set(key, at);
    system.inject([key]).catch((err: unknown) => failures.push(err));
  }
  const offeredSec = (performance.now() - t0) / 1000;
  await until(() => latencies.length >= total || failures.length > 0, 600_000, `${total} steady messages to finish (${latencies.length} have)`, 2);
  if (failures.length) throw failures[0];
  const seconds = (lastDone - t0) / 1000;
  return {
    messages: total,
    seconds,
    messagesPerSec: total / seconds,
    offeredPerSec: total / offeredSec,
    p50Ms: percentile(latencies, 50),
    p99Ms: percentile(latencies, 99),
    maxScheduleLagMs: maxLag,
  };
}

childMain<ChainInput, ChainResult>(run);
