/**
 * How big each scenario runs. `BENCH_SCALE=quick` shrinks everything for a run of a few
 * minutes; the default `full` runs the sizes of the issue where this machine allows it.
 * Every loop in the suite is bounded by these counts and by time limits.
 */
export type ScaleName = 'full' | 'quick';

export interface Scale {
  readonly name: ScaleName;
  /** Rounds per measured configuration; headline figures are their median. */
  readonly rounds: number;
  /** wrkSec: each wrk run of issue 28's GET /api/v1/agents target (supervised serve vs bare node:http, bench/lib/wrk-serve.ts). */
  readonly http: { readonly connections: number; readonly durationSec: number; readonly warmupSec: number; readonly seedThreads: number; readonly wrkSec: number };
  readonly pump: { readonly messages: number; readonly steadyRate: number; readonly steadySec: number };
  readonly usage: { readonly recordEvents: number; readonly sizes: readonly number[]; readonly queryRepeats: number };
  readonly ws: { readonly clients: number; readonly eventsPerSec: number; readonly durationSec: number };
  readonly recovery: { readonly rows: number; readonly pending: number };
  readonly memory: { readonly small: number; readonly large: number };
  /** Scenario 7 (organism beside BullMQ, pg-boss, graphile-worker): its own rounds; messages per throughput run; offered rates and seconds of the latency runs. */
  readonly peers: { readonly rounds: number; readonly messages: number; readonly warmup: number; readonly rates: readonly number[]; readonly steadySec: number };
}

const FULL: Scale = {
  name: 'full',
  rounds: 3,
  http: { connections: 100, durationSec: 8, warmupSec: 2, seedThreads: 500, wrkSec: 5 },
  pump: { messages: 100_000, steadyRate: 2_000, steadySec: 10 },
  usage: { recordEvents: 1_000_000, sizes: [1_000_000, 10_000_000], queryRepeats: 15 },
  ws: { clients: 1_000, eventsPerSec: 1_000, durationSec: 8 },
  recovery: { rows: 1_000_000, pending: 10_000 },
  memory: { small: 10_000, large: 1_000_000 },
  peers: { rounds: 3, messages: 5_000, warmup: 500, rates: [50, 200], steadySec: 10 },
};

const QUICK: Scale = {
  name: 'quick',
  rounds: 3,
  http: { connections: 100, durationSec: 2, warmupSec: 1, seedThreads: 100, wrkSec: 2 },
  pump: { messages: 10_000, steadyRate: 2_000, steadySec: 2 },
  usage: { recordEvents: 200_000, sizes: [100_000, 300_000], queryRepeats: 7 },
  ws: { clients: 1_000, eventsPerSec: 1_000, durationSec: 2 },
  recovery: { rows: 100_000, pending: 1_000 },
  memory: { small: 10_000, large: 100_000 },
  peers: { rounds: 1, messages: 500, warmup: 100, rates: [50, 200], steadySec: 2 },
};

export function scaleFromEnv(env: NodeJS.ProcessEnv = process.env): Scale {
  const name = (env['BENCH_SCALE'] ?? 'full').toLowerCase();
  if (name === 'quick') return QUICK;
  if (name === 'full') return FULL;
  throw new Error(`BENCH_SCALE must be "full" or "quick", not "${name}"`);
}

export function scaleByName(name: ScaleName): Scale {
  return name === 'quick' ? QUICK : FULL;
}
