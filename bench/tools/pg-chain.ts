/**
 * `node --import tsx bench/tools/pg-chain.ts`: the peers scenario's durable 3-hop chain of no-op
 * handlers on organism's PostgreSQL store alone (cluster mode, as `organism serve --store
 * postgres://...` runs it; bench/children/chains/organism.ts), for working on the PostgreSQL
 * path without running the peers. Per round, on a fresh database: WARMUP messages run through
 * and drain unmeasured, then MESSAGES are injected at hop1 in batches of 500 and timed to the
 * last hop3 ack. Reported per round and as medians:
 *   msg/s                 injected messages whose whole chain committed, per second;
 *   round trips/msg       queries the process sent to the run's database (bench/lib/pg-count.ts);
 *   transactions/msg      as the server counts them (pg_stat_database), and as the process sent them;
 *   CPU µs/msg            this process's (handlers, pump and driver share it).
 * Environment (defaults in brackets): PG_CHAIN_MESSAGES [5000], PG_CHAIN_WARMUP [500],
 * PG_CHAIN_ROUNDS [3], PG_CHAIN_BREAKDOWN [off] (1: each round's round trips per message by
 * query), ORGANISM_BENCH_POSTGRES [postgres://postgres@127.0.0.1:5432/postgres]
 * (databases bench_pgchain_<random> are created there and dropped after).
 */
import os from 'node:os';
import { organismChain } from '../children/chains/organism.js';
import { freshDatabase } from '../lib/pg-admin.js';
import { countPgRoundTrips, serverTransactions } from '../lib/pg-count.js';
import { median, until } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';

const num = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const MESSAGES = num('PG_CHAIN_MESSAGES', 5_000);
const WARMUP = num('PG_CHAIN_WARMUP', 500);
const ROUNDS = num('PG_CHAIN_ROUNDS', 3);
const BREAKDOWN = process.env['PG_CHAIN_BREAKDOWN'] === '1';
const BATCH = 500;

interface Round {
  readonly msgPerSec: number;
  readonly roundTripsPerMsg: number;
  readonly serverTransactionsPerMsg: number;
  readonly clientTransactionsPerMsg: number;
  readonly cpuMicrosPerMsg: number;
}

const log = (line: string) => process.stdout.write(`${line}\n`);
const load = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

async function round(): Promise<Round> {
  const db = await freshDatabase('bench_pgchain');
  const dataDir = tempDir('pgchain');
  const counting = countPgRoundTrips(db.name);
  try {
    let finals = 0;
    const system = await organismChain('postgres')({ dataDir, postgresUrl: db.url }, () => finals++);
    let key = 0;
    const injectAll = async (n: number) => {
      for (let i = 0; i < n; i += BATCH) await system.inject(Array.from({ length: Math.min(BATCH, n - i) }, () => key++));
    };
    try {
      await injectAll(WARMUP);
      await until(() => finals >= WARMUP, 300_000, `the ${WARMUP} warm-up chains`, 5);
      await system.drained();
      finals = 0;
      const server0 = await serverTransactions(db.name);
      const client0 = counting.counts();
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await injectAll(MESSAGES);
      await until(() => finals >= MESSAGES, 900_000, `the last of ${MESSAGES} chains`, 1);
      const seconds = (performance.now() - t0) / 1000;
      const cpu = process.cpuUsage(cpu0);
      const client1 = counting.counts();
      const server1 = await serverTransactions(db.name);
      if (BREAKDOWN) {
        const rows = [...client1.byQuery].map(([q, n]) => [q, (n - (client0.byQuery.get(q) ?? 0)) / MESSAGES] as const).filter(([, n]) => n > 0);
        for (const [q, n] of rows.sort((a, b) => b[1] - a[1])) log(`  ${n.toFixed(3)}  ${q}`);
      }
      return {
        msgPerSec: MESSAGES / seconds,
        roundTripsPerMsg: (client1.roundTrips - client0.roundTrips) / MESSAGES,
        serverTransactionsPerMsg: (server1 - server0) / MESSAGES,
        clientTransactionsPerMsg: (client1.transactions - client0.transactions) / MESSAGES,
        cpuMicrosPerMsg: (cpu.user + cpu.system) / MESSAGES,
      };
    } finally {
      await system.stop();
    }
  } finally {
    counting.restore();
    await db.drop().catch(() => {});
    removeDir(dataDir);
  }
}

const fmt = (r: Round) =>
  `${r.msgPerSec.toFixed(0)} msg/s, ${r.roundTripsPerMsg.toFixed(2)} round trips/msg, ${r.serverTransactionsPerMsg.toFixed(2)} transactions/msg (server; ${r.clientTransactionsPerMsg.toFixed(2)} sent), ${r.cpuMicrosPerMsg.toFixed(0)} CPU µs/msg`;

log(`pg-chain: ${ROUNDS} round(s) of ${MESSAGES} messages after ${WARMUP} warm-up; load ${load()}`);
const rounds: Round[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const r = await round();
  rounds.push(r);
  log(`round ${i + 1}: ${fmt(r)}; load ${load()}`);
}
const med = (pick: (r: Round) => number) => median(rounds.map(pick));
const summary: Round = {
  msgPerSec: med((r) => r.msgPerSec),
  roundTripsPerMsg: med((r) => r.roundTripsPerMsg),
  serverTransactionsPerMsg: med((r) => r.serverTransactionsPerMsg),
  clientTransactionsPerMsg: med((r) => r.clientTransactionsPerMsg),
  cpuMicrosPerMsg: med((r) => r.cpuMicrosPerMsg),
};
log(`median: ${fmt(summary)}; load ${load()}`);
log(JSON.stringify({ rounds, median: summary, load: os.loadavg() }));
process.exit(0);
