/**
 * Scenario 7: organism beside its peers. The same durable 3-hop chain of no-op handlers on
 * organism (SQLite; PostgreSQL in cluster mode, as `organism serve --store` runs it), BullMQ
 * (a private Redis with AOF, fsync every second), pg-boss (batches of 50) and graphile-worker
 * (one named queue per thread, for FIFO), each run in a fresh process on a fresh store,
 * interleaved round by round: throughput, then inject-to-final-ack latency at each offered
 * rate. Medians of the rounds; ratios are taken within a round, then their median.
 * The peers are installed on demand into bench/peers (never the project's dependencies).
 * Besides its rows in latest.md it writes bench/results/latest-peers.md and .json.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { admin, ADMIN_URL, freshDatabase } from '../lib/pg-admin.js';
import type { ChainInput, ChainResult } from '../children/peers.js';
import { PEER_CONCURRENCY, PGBOSS_BATCH, SYSTEMS, type SystemName } from '../children/chains/system.js';
import { benchFile, runChild } from '../lib/child.js';
import { ensurePeersInstalled, peerVersion } from '../lib/peers-install.js';
import { atLeast, atMost, row, type Row, type Target, type ScenarioResult } from '../lib/result.js';
import type { Scale } from '../lib/scale.js';
import { median, sig } from '../lib/stats.js';
import { removeDir, tempDir } from '../lib/tmp.js';

const SCENARIO = 7;
const TITLE = 'organism beside BullMQ, pg-boss and graphile-worker';
const POSTGRES_SYSTEMS = new Set<SystemName>(['organism-postgres', 'pg-boss', 'graphile-worker']);

const LABEL: Record<SystemName, string> = {
  'organism-sqlite': 'organism, SQLite',
  'organism-postgres': 'organism, PostgreSQL',
  bullmq: 'BullMQ',
  'pg-boss': 'pg-boss',
  'graphile-worker': 'graphile-worker',
};

const loadAverage = () =>
  os
    .loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');

/** One system's runs in one round. */
interface SystemRound {
  readonly throughput: ChainResult;
  readonly steady: Record<number, ChainResult>;
  readonly load: string;
}

async function oneRun(system: SystemName, input: Omit<ChainInput, 'system' | 'dataDir'>): Promise<ChainResult> {
  const dataDir = tempDir(`peers-${system}`);
  const db = POSTGRES_SYSTEMS.has(system) ? await freshDatabase('bench_peers') : null;
  try {
    const full: ChainInput = { ...input, system, dataDir, ...(db ? { postgresUrl: db.url, database: db.name } : {}) };
    return await runChild<ChainResult>(benchFile('children/peers.ts'), full, { timeoutMs: 1_200_000, what: `${system} ${input.mode}` });
  } finally {
    if (db) await db.drop().catch(() => {});
    removeDir(dataDir);
  }
}

/** Which systems this machine can run, and why not the others. */
async function available(log: (line: string) => void): Promise<{ systems: SystemName[]; missing: string[] }> {
  const missing: string[] = [];
  let redis = true;
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
  } catch {
    redis = false;
    missing.push('BullMQ: no redis-server on PATH (Debian: apt-get install redis-server)');
  }
  let postgres = true;
  try {
    await admin((c) => c.query('SELECT 1'));
  } catch (err) {
    postgres = false;
    missing.push(`the PostgreSQL systems: no server at ${ADMIN_URL.replace(/\/\/[^@]*@/, '//')} (${err instanceof Error ? err.message : String(err)})`);
  }
  for (const m of missing) log(`  skipping ${m}`);
  return { systems: SYSTEMS.filter((s) => (s === 'bullmq' ? redis : POSTGRES_SYSTEMS.has(s) ? postgres : true)), missing };
}

const ms = (v: number | undefined) => (v === undefined ? 'n/a' : v >= 100 ? Math.round(v).toLocaleString('en-US') : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const int = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : Math.round(v).toLocaleString('en-US'));
const dec = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? 'n/a' : v >= 10 ? v.toFixed(1) : v.toFixed(2));
const med = (xs: ReadonlyArray<number | null | undefined>) => {
  const ok = xs.filter((x): x is number => x !== null && x !== undefined && Number.isFinite(x));
  return ok.length ? median(ok) : null;
};
const totalCpu = (r: ChainResult) => r.processCpuMicrosPerMessage + (r.serverCpuMicrosPerMessage ?? 0);

/** A row whose ratio is the median of the per-round ratios (each round interleaves the systems), not the ratio of the medians. */
export function ratioRow(metric: string, unit: string, rounds: readonly number[], baseline: { name: string; rounds: readonly number[] }, target: Target | null): Row {
  const base = row({ scenario: SCENARIO, metric, unit, rounds, baseline: { ...baseline, unit }, target });
  const ratios = rounds.map((v, i) => v / baseline.rounds[i]!).filter((r) => Number.isFinite(r));
  if (!ratios.length) return base;
  const ratio = median(ratios);
  let status = base.status;
  if (target) {
    const subject = target.on === 'ratio' ? ratio : base.value;
    if (subject !== null) status = (target.op === '>=' ? subject >= target.threshold : subject <= target.threshold) ? 'met' : 'missed';
  }
  return { ...base, ratio: sig(ratio, 3), status };
}

/**
 * The scale's settings, each overridable for a shorter or longer run (the report says which were
 * used): BENCH_PEERS_ROUNDS, BENCH_PEERS_MESSAGES, BENCH_PEERS_WARMUP, BENCH_PEERS_SECONDS,
 * BENCH_PEERS_RATES (e.g. 50,200). BENCH_PEERS_SYSTEMS picks the systems (see peersSystems).
 */
export function peersSettings(scale: Scale, env: NodeJS.ProcessEnv = process.env): { settings: Scale['peers']; overridden: string[] } {
  const overridden: string[] = [];
  const num = (name: string, fallback: number) => {
    const text = env[name];
    if (text === undefined || text === '') return fallback;
    const value = Number(text);
    if (!Number.isInteger(value) || value < 1) throw new Error(`${name} must be a whole number >= 1, not "${text}"`);
    overridden.push(`${name}=${text}`);
    return value;
  };
  const ratesText = env['BENCH_PEERS_RATES'];
  let rates = scale.peers.rates;
  if (ratesText) {
    rates = ratesText.split(',').map((r) => {
      const value = Number(r);
      if (!Number.isInteger(value) || value < 1) throw new Error(`BENCH_PEERS_RATES must be whole numbers >= 1, comma-separated, not "${ratesText}"`);
      return value;
    });
    overridden.push(`BENCH_PEERS_RATES=${ratesText}`);
  }
  const settings = {
    rounds: num('BENCH_PEERS_ROUNDS', scale.peers.rounds),
    messages: num('BENCH_PEERS_MESSAGES', scale.peers.messages),
    warmup: num('BENCH_PEERS_WARMUP', scale.peers.warmup),
    steadySec: num('BENCH_PEERS_SECONDS', scale.peers.steadySec),
    rates,
  };
  return { settings, overridden };
}

/**
 * Which systems to run: all of them, or those BENCH_PEERS_SYSTEMS names (comma-separated, e.g.
 * organism-postgres,pg-boss), in the scenario's order. The report says when it was narrowed.
 */
export function peersSystems(env: NodeJS.ProcessEnv = process.env): { systems: readonly SystemName[]; overridden: string[] } {
  const text = env['BENCH_PEERS_SYSTEMS'];
  if (text === undefined || text === '') return { systems: SYSTEMS, overridden: [] };
  const named = text.split(',').map((s) => s.trim());
  for (const name of named)
    if (!(SYSTEMS as readonly string[]).includes(name)) throw new Error(`BENCH_PEERS_SYSTEMS names systems among ${SYSTEMS.join(', ')}, comma-separated, not "${name}"`);
  return { systems: SYSTEMS.filter((s) => named.includes(s)), overridden: [`BENCH_PEERS_SYSTEMS=${text}`] };
}

export async function runPeers(scale: Scale, log: (line: string) => void): Promise<ScenarioResult> {
  const started = performance.now();
  const chosen = peersSystems();
  const { settings, overridden: settingsOverridden } = peersSettings(scale);
  const overridden = [...settingsOverridden, ...chosen.overridden];
  if (overridden.length) log(`  settings overridden: ${overridden.join(' ')}`);
  const loadAtStart = loadAverage();
  ensurePeersInstalled(log);
  const versions = { bullmq: peerVersion('bullmq'), ioredis: peerVersion('ioredis'), 'pg-boss': peerVersion('pg-boss'), 'graphile-worker': peerVersion('graphile-worker') };
  const redisVersion = (() => {
    try {
      return execFileSync('redis-server', ['--version']).toString().trim();
    } catch {
      return 'none';
    }
  })();
  const postgresVersion = await admin(async (c) => (await c.query<{ v: string }>("SELECT current_setting('server_version') AS v")).rows[0]!.v).catch(() => 'none');
  // Every system's tables are vacuumed (or not) by the same server: say which it was.
  const autovacuum = await admin(async (c) => (await c.query<{ v: string }>("SELECT current_setting('autovacuum') AS v")).rows[0]!.v).catch(() => 'unknown');
  const { systems: runnable, missing } = await available(log);
  const systems = runnable.filter((s) => chosen.systems.includes(s));
  const results = new Map<SystemName, SystemRound[]>(systems.map((s) => [s, []]));
  let last: ScenarioResult | undefined;
  for (let r = 0; r < settings.rounds; r++) {
    // The order turns each round, so no system always runs first (or right after the slowest).
    const order = systems.map((_, i) => systems[(i + r) % systems.length]!);
    for (const system of order) {
      const throughput = await oneRun(system, { mode: 'throughput', messages: settings.messages, warmup: settings.warmup });
      const steady: Record<number, ChainResult> = {};
      for (const rate of settings.rates) steady[rate] = await oneRun(system, { mode: 'steady', messages: 0, warmup: settings.warmup, rate, seconds: settings.steadySec });
      const load = loadAverage();
      results.get(system)!.push({ throughput, steady, load });
      const lat = settings.rates.map((rate) => {
        const s = steady[rate]!;
        return `${rate}/s: p50 ${ms(s.p50Ms)} p99 ${ms(s.p99Ms)} ms${s.messagesPerSec < 0.95 * rate ? ` (kept up ${Math.round(s.messagesPerSec)}/s)` : ''}`;
      });
      log(
        `  round ${r + 1}, ${LABEL[system]}: ${Math.round(throughput.messagesPerSec)} msg/s, CPU ${int(throughput.processCpuMicrosPerMessage)} µs/msg + server ${int(throughput.serverCpuMicrosPerMessage)}, ` +
          `${dec(throughput.statementsPerMessage)} statements/msg; ${lat.join('; ')}; load ${load}`,
      );
    }
    // Written after every round: a run stopped early keeps the rounds it finished.
    last = summarise(r + 1);
  }
  return last!;

  function summarise(roundsDone: number): ScenarioResult {
    const loadAtEnd = loadAverage();

    const of = (s: SystemName) => results.get(s) ?? [];
    const pick = (s: SystemName, f: (x: SystemRound) => number | null | undefined) => of(s).map(f);
    const rate = (s: SystemName) => pick(s, (x) => x.throughput.messagesPerSec) as number[];
    const [low, high] = [settings.rates[0]!, settings.rates.at(-1)!];
    const p = (s: SystemName, at: number, q: 'p50Ms' | 'p99Ms') => pick(s, (x) => x.steady[at]?.[q]) as number[];
    const rows: Row[] = [];
    const have = (s: SystemName) => of(s).length > 0;
    const sq = 'organism-sqlite';
    const pgo = 'organism-postgres';
    if (have(pgo) && have('pg-boss'))
      rows.push(ratioRow('organism on PostgreSQL vs pg-boss, 3-hop chain', 'msg/s', rate(pgo), { name: 'pg-boss', rounds: rate('pg-boss') }, atLeast(1.5, '>= 1.5x pg-boss', 'ratio')));
    for (const peer of ['graphile-worker', 'bullmq'] as const)
      if (have(pgo) && have(peer)) rows.push(ratioRow(`organism on PostgreSQL vs ${LABEL[peer]}, 3-hop chain`, 'msg/s', rate(pgo), { name: LABEL[peer], rounds: rate(peer) }, null));
    for (const peer of ['pg-boss', 'graphile-worker'] as const) {
      if (!(have(pgo) && have(peer))) continue;
      rows.push(
        ratioRow(
          `organism on PostgreSQL vs ${peer}: inject-to-final-ack p50 at ${low} msg/s`,
          'ms',
          p(pgo, low, 'p50Ms'),
          { name: peer, rounds: p(peer, low, 'p50Ms') },
          atMost(1, `<= 1x ${peer}`, 'ratio'),
        ),
      );
      rows.push(
        ratioRow(
          `organism on PostgreSQL vs ${peer}: inject-to-final-ack p99 at ${low} msg/s`,
          'ms',
          p(pgo, low, 'p99Ms'),
          { name: peer, rounds: p(peer, low, 'p99Ms') },
          atMost(1.2, `<= 1.2x ${peer}`, 'ratio'),
        ),
      );
    }
    if (have(pgo)) {
      const kept = pick(pgo, (x) => x.steady[high]?.messagesPerSec) as number[];
      rows.push(
        ratioRow(
          `organism on PostgreSQL: completions/s at ${high} msg/s offered (sustained?)`,
          'msg/s',
          kept,
          { name: 'offered', rounds: pick(pgo, (x) => x.steady[high]?.offeredPerSec) as number[] },
          atLeast(0.95, '>= 0.95x offered', 'ratio'),
        ),
      );
    }
    if (have(sq) && have('bullmq'))
      rows.push(ratioRow('organism on SQLite vs BullMQ, 3-hop chain', 'msg/s', rate(sq), { name: 'BullMQ', rounds: rate('bullmq') }, atLeast(3, '>= 3x BullMQ', 'ratio')));
    for (const peer of ['pg-boss', 'graphile-worker'] as const)
      if (have(sq) && have(peer)) rows.push(ratioRow(`organism on SQLite vs ${LABEL[peer]}, 3-hop chain`, 'msg/s', rate(sq), { name: LABEL[peer], rounds: rate(peer) }, null));
    if (have(sq) && have('bullmq')) {
      rows.push(ratioRow(`organism on SQLite vs BullMQ: inject-to-final-ack p50 at ${high} msg/s`, 'ms', p(sq, high, 'p50Ms'), { name: 'BullMQ', rounds: p('bullmq', high, 'p50Ms') }, null));
      rows.push(ratioRow(`organism on SQLite vs BullMQ: inject-to-final-ack p99 at ${high} msg/s`, 'ms', p(sq, high, 'p99Ms'), { name: 'BullMQ', rounds: p('bullmq', high, 'p99Ms') }, null));
    }
    const cpuVs = (s: SystemName, peer: SystemName) =>
      ratioRow(
        `CPU per message, ${LABEL[s]} vs ${LABEL[peer]} (process + server)`,
        'µs',
        pick(s, (x) => totalCpu(x.throughput)) as number[],
        { name: LABEL[peer], rounds: pick(peer, (x) => totalCpu(x.throughput)) as number[] },
        null,
      );
    if (have(sq) && have('bullmq')) rows.push(cpuVs(sq, 'bullmq'));
    if (have(pgo) && have('pg-boss')) rows.push(cpuVs(pgo, 'pg-boss'));
    if (have(sq))
      rows.push(
        row({
          scenario: SCENARIO,
          metric: 'organism on SQLite: statements per message',
          unit: 'statements',
          rounds: pick(sq, (x) => x.throughput.statementsPerMessage) as number[],
          baseline: null,
          target: atMost(7, '<= 7'),
        }),
      );
    if (have(pgo))
      rows.push(
        row({
          scenario: SCENARIO,
          metric: 'organism on PostgreSQL: statements per message',
          unit: 'statements',
          rounds: pick(pgo, (x) => x.throughput.statementsPerMessage) as number[],
          baseline: null,
          target: null,
        }),
      );

    const table = peersTable(systems, results, settings.rates);
    const ratios = ratioTable(systems, results, settings.rates);
    const notes = [
      `Each round runs every system in turn (the order turns by one each round), each run in a fresh process on a fresh store (a new SQLite directory; a new PostgreSQL database; a new private redis-server), after ${settings.warmup} unmeasured warm-up messages that have drained. Throughput: ${settings.messages.toLocaleString('en-US')} messages enqueued at hop1 in batches of 500 as fast as each system takes them, timed to the last final-hop completion. Latency: ${settings.rates.join(' and ')} msg/s offered for ${settings.steadySec} s, one enqueue per message, from each message's scheduled send time to the commit of its hop3 completion; a system that could not keep up shows the rate it completed. Figures are medians of ${roundsDone} round(s)${roundsDone < settings.rounds ? ` (of ${settings.rounds} planned: the run was still going when this was written)` : ''}; ratios are per round, then their median.`,
      `The chain: hop1 -> hop2 -> hop3 no-op handlers, each hop a durable write, the message's key carried through. organism: its compiled dist/ (as \`organism serve\` runs it; the peers run their published JavaScript), default limits (20 handlers, 5 per listener); SQLite as \`organism serve\` opens it; PostgreSQL in cluster mode (claims and leases: \`openPostgresStorage({ cluster: { kind: 'serve', handlers: true } })\`, the mode of bench/children/pump.ts and bench:scaleout), inject and ack in one transaction. BullMQ ${versions.bullmq} (ioredis ${versions.ioredis}): a queue and a Worker (concurrency ${PEER_CONCURRENCY}) per hop; a hop's processor adds the next hop's job, BullMQ then moves the job to completed (kept, its default); a private ${redisVersion.split(' ').slice(0, 3).join(' ')} with \`appendonly yes, appendfsync everysec\`, no RDB. pg-boss ${versions['pg-boss']}: a queue and a worker per hop fetching batches of ${PGBOSS_BATCH}; a hop inserts the batch's next jobs in one statement and pg-boss completes the batch in another; polling 0.5 s (its minimum), each worker woken with notifyWorker when this process adds work for it, and by its own handler after a full batch (pg-boss 10 otherwise sleeps out the interval after each batch, ~100 jobs/s a queue). graphile-worker ${versions['graphile-worker']}: a task per hop, every job of a message in the named queue of its thread (FIFO per thread), ${PEER_CONCURRENCY} workers woken by LISTEN/NOTIFY, logging off. The peers commit a hop's completion and the next hop's enqueue in two transactions; organism in one. PostgreSQL ${postgresVersion} on 127.0.0.1:5432 (shared with other work on this machine; autovacuum ${autovacuum}; organism vacuums its journal itself when the server does not, docs/scale-out.md, "Vacuum").`,
      `The peers are pinned in bench/peers/package.json and its lockfile (installed there on demand with \`npm ci --prefix bench/peers\`, never the project's dependencies): the newest releases that run on Node ${process.versions.node.split('.')[0]} (pg-boss 11+ and graphile-worker 0.18 need Node 22).`,
      `CPU per message: the run's process (producer and workers share it, as organism's inject and handlers do; all threads) over the timed part, from process.cpuUsage(); server: Redis's whole process (the private one serves only this run), or the PostgreSQL backends of the run's database (found by their process titles), from /proc/<pid>/stat sampled every 200 ms. The PostgreSQL server's shared processes (WAL writer, checkpointer, background writer) serve every database and are not counted, for any system. organism on SQLite has no server: its figure is all of its CPU.`,
      `Statements per message: counted in the process by wrapping the driver (better-sqlite3's Statement methods; node-postgres's Client.query; for BullMQ, commands sent by ioredis, a Lua script counting once), transaction control (BEGIN, COMMIT...) excluded; commits: explicit COMMITs plus writes sent outside a transaction.`,
      `Load average (1, 5, 15 min) at the start ${loadAtStart}, at the end ${loadAtEnd}; after each system's runs: ${[...results].map(([s, rs]) => `${LABEL[s]} ${rs.map((x) => x.load.split(' ')[0]).join(', ')}`).join('; ')}.`,
      ...(overridden.length ? [`Settings overridden from the ${scale.name} scale's: ${overridden.join(', ')}.`] : []),
      ...missing.map((m) => `Not run: ${m}.`),
    ];
    const seconds = (performance.now() - started) / 1000;
    writePeersReport(scale, settings, roundsDone, { table, ratios, notes, versions, loadAtStart, loadAtEnd, seconds, rows, results: Object.fromEntries(results) });
    return {
      scenario: SCENARIO,
      title: TITLE,
      rows,
      context: { settings, versions, redisVersion, postgresVersion, autovacuum, loadAtStart, loadAtEnd, results: Object.fromEntries(results) },
      notes: [`The peers table (also in bench/results/latest-peers.md):\n\n${table}\n\n${ratios}\n`, ...notes],
      seconds,
    };
  }
}

/** The issue's table: one line per system, medians of the rounds. */
function peersTable(systems: readonly SystemName[], results: Map<SystemName, SystemRound[]>, rates: readonly number[]): string {
  const lines = [
    `| system | msg/s | CPU µs/msg (process + server = total) | statements/msg | commits/msg | ${rates.map((r) => `inject→final ack p50 / p99 at ${r} msg/s`).join(' | ')} |`,
    `|---|---|---|---|---|${rates.map(() => '---|').join('')}`,
  ];
  for (const s of systems) {
    const rs = results.get(s)!;
    const t = rs.map((x) => x.throughput);
    const server = med(t.map((x) => x.serverCpuMicrosPerMessage));
    const lat = rates.map((rate) => {
      const st = rs.map((x) => x.steady[rate]!);
      const kept = med(st.map((x) => x.messagesPerSec))!;
      return `${ms(med(st.map((x) => x.p50Ms)) ?? undefined)} / ${ms(med(st.map((x) => x.p99Ms)) ?? undefined)} ms${kept < 0.95 * rate ? ` (kept up: ${Math.round(kept)}/s)` : ''}`;
    });
    lines.push(
      `| ${LABEL[s]} | ${int(med(t.map((x) => x.messagesPerSec)))} | ${int(med(t.map((x) => x.processCpuMicrosPerMessage)))} + ${server === null ? '(no server)' : int(server)} = ${int(med(t.map(totalCpu)))} | ${dec(med(t.map((x) => x.statementsPerMessage)))}${s === 'bullmq' ? ' (Redis commands)' : ''} | ${dec(med(t.map((x) => x.commitsPerMessage)))} | ${lat.join(' | ')} |`,
    );
  }
  return lines.join('\n');
}

/** organism on each store against each peer: medians of the per-round ratios. */
function ratioTable(systems: readonly SystemName[], results: Map<SystemName, SystemRound[]>, rates: readonly number[]): string {
  const organisms = systems.filter((s) => s.startsWith('organism'));
  const peers = systems.filter((s) => !s.startsWith('organism'));
  const lines = [
    `| ratio (per round, median) | msg/s | CPU µs/msg (total) | ${rates.map((r) => `p50 at ${r}/s | p99 at ${r}/s`).join(' | ')} |`,
    `|---|---|---|${rates.map(() => '---|---|').join('')}`,
  ];
  for (const o of organisms)
    for (const peer of peers) {
      const a = results.get(o)!;
      const b = results.get(peer)!;
      const ratio = (f: (x: SystemRound) => number | undefined) => {
        const rs = a.map((x, i) => (f(x) ?? Number.NaN) / (f(b[i]!) ?? Number.NaN)).filter((v) => Number.isFinite(v));
        return rs.length ? `${dec(median(rs))}x` : 'n/a';
      };
      const lat = rates.map((rate) => `${ratio((x) => x.steady[rate]?.p50Ms)} | ${ratio((x) => x.steady[rate]?.p99Ms)}`);
      lines.push(`| ${LABEL[o]} / ${LABEL[peer]} | ${ratio((x) => x.throughput.messagesPerSec)} | ${ratio((x) => totalCpu(x.throughput))} | ${lat.join(' | ')} |`);
    }
  return lines.join('\n');
}

interface PeersReport {
  readonly table: string;
  readonly ratios: string;
  readonly notes: readonly string[];
  readonly versions: Record<string, string>;
  readonly loadAtStart: string;
  readonly loadAtEnd: string;
  readonly seconds: number;
  readonly rows: readonly Row[];
  readonly results: Record<string, SystemRound[]>;
}

function writePeersReport(scale: Scale, settings: Scale['peers'], roundsDone: number, report: PeersReport): void {
  const dir = fileURLToPath(new URL('../results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const cpu = os.cpus();
  const machine = `${cpu.length} x ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
  const commit = (() => {
    try {
      return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim();
    } catch {
      return 'unknown';
    }
  })();
  const at = new Date().toISOString();
  const md = [
    `# organism beside its peers (${scale.name} scale)`,
    '',
    `Run ending ${at} on ${machine}, commit ${commit}, ${Math.round(report.seconds)} s; ${roundsDone}${roundsDone < settings.rounds ? ` of ${settings.rounds} planned` : ''} round(s) of ${settings.messages.toLocaleString('en-US')} messages (throughput) and ${settings.steadySec} s at each of ${settings.rates.join(' and ')} msg/s; load average ${report.loadAtStart} at the start, ${report.loadAtEnd} at the end. Written by \`npm run bench\` (scenario 7, \`peers\`).`,
    '',
    report.table,
    '',
    report.ratios,
    '',
    '## Notes',
    '',
    ...report.notes.map((n) => `- ${n}`),
    '',
  ].join('\n');
  writeFileSync(path.join(dir, 'latest-peers.md'), md);
  writeFileSync(path.join(dir, 'latest-peers.json'), `${JSON.stringify({ scale: scale.name, settings, at, machine, commit, ...report }, null, 2)}\n`);
}
