/**
 * Scenario 2, one round in a fresh process:
 *   throughput: N messages injected into a 3-hop chain of no-op code handlers on the SQLite
 *               journal, timed from the first inject to the last final-hop ack;
 *   raw:        better-sqlite3 inserting N rows into the same journal schema (same pragmas) in
 *               1,000-row transactions (the baseline);
 *   steady:     a steady offered rate, each message's latency from its scheduled send time to
 *               its first-hop ack and to its final-hop ack.
 */
import Database from 'better-sqlite3';
import path from 'node:path';
import { Organism } from '../../src/organism/organism.js';
import { OrganismMetrics } from '../../src/telemetry/metrics.js';
import { createExporter, OrganismTracing, resolveTracing } from '../../src/telemetry/tracing.js';
import { ExportResultCode } from '@opentelemetry/core';
import type { SpanExporter } from '@opentelemetry/sdk-trace-base';
import { openSqliteStorage } from '../../src/store/index.js';
import { migrate } from '../../src/store/sqlite/migrations.js';
import { newId } from '../../src/util/ids.js';
import { benchFile, childMain, startServer } from '../lib/child.js';
import { threadCpuMicros } from '../lib/cpu.js';
import type { OtlpSinkInfo } from '../servers/otlp-sink.js';
import { ackCounter, injectAll } from '../lib/drive.js';
import { chainOrganism } from '../lib/organisms.js';
import { percentile, sleep, until } from '../lib/stats.js';
import { countSqliteStatements, Counter } from './chains/count.js';

export interface PumpInput {
  readonly mode: 'throughput' | 'raw' | 'steady';
  readonly dataDir: string;
  readonly messages: number;
  readonly rate?: number;
  readonly seconds?: number;
  /** Overrides of the organism's concurrency limits (default: a default organism.yaml's). */
  readonly limits?: { readonly maxConcurrentHandlers: number; readonly maxConcurrentPerAgent: number };
  /** The store in a PostgreSQL database instead of SQLite in `dataDir` (bench/tools/scaleout.ts). */
  readonly postgresUrl?: string;
  /** Run the throughput mode on in-memory storage (the pump without the journal). */
  readonly memory?: boolean;
  /** Telemetry on: Prometheus metrics, or traces at 100 % sampling exported to a local OTLP sink. */
  readonly telemetry?: 'metrics' | 'tracing';
  /** Tracing rounds: true installs the global AsyncLocalStorage context manager (telemetry.context_manager), measuring what it costs. */
  readonly contextManager?: boolean;
  /** Tracing rounds: 'main-thread' exports through a BatchSpanProcessor on the event loop (as before the export worker), for comparison. */
  readonly exportOn?: 'main-thread';
}

export interface ThroughputResult {
  readonly messagesPerSec: number;
  readonly deliveriesPerSec: number;
  readonly seconds: number;
  /** CPU time (user + system) the process spent per injected message over the timed part, in microseconds, all its threads (the trace export worker's included): less sensitive than the rate to other load on a shared machine. */
  readonly cpuMicrosPerMessage: number;
  /** The same, the main thread's alone (the one that runs deliveries; Linux, from /proc/thread-self/stat; null elsewhere). */
  readonly mainThreadCpuMicrosPerMessage: number | null;
  /** Tracing rounds: spans the OTLP exporter delivered (all of them or the round fails), and export calls. */
  readonly spansExported?: number;
  readonly exports?: number;
  readonly journal: Record<string, number>;
  /** SQLite rounds: SQL statements (transaction control excluded) and commits per injected message over the timed part; null on other stores. */
  readonly statementsPerMessage: number | null;
  readonly commitsPerMessage: number | null;
}

export interface RawResult {
  readonly rowsPerSec: number;
  readonly seconds: number;
  /** One-row transactions, each timed: the floor of any durable acknowledgement. */
  readonly commitP50Ms: number;
  readonly commitP99Ms: number;
}

export interface SteadyResult {
  readonly offered: number;
  readonly offeredPerSec: number;
  readonly firstHopP50Ms: number;
  readonly firstHopP99Ms: number;
  readonly endToEndP50Ms: number;
  readonly endToEndP99Ms: number;
  readonly injectP99Ms: number;
  readonly maxScheduleLagMs: number;
}

const HOPS = 3;

async function organismIn(input: PumpInput): Promise<Organism> {
  const loaded = chainOrganism(HOPS, { maxQueue: 10_000, ...(input.limits ?? {}) });
  if (input.memory) return new Organism(loaded);
  if (input.postgresUrl) {
    // Loaded only for a PostgreSQL round; cluster mode (claims, leases), as `organism serve --store` runs it.
    const { openPostgresStorage } = await import('../../src/store/postgres/index.js');
    const storage = await openPostgresStorage({ url: input.postgresUrl, cluster: { kind: 'serve', handlers: true, maxAttempts: loaded.config.journal.maxAttempts } });
    return new Organism(loaded, { storage });
  }
  return new Organism(loaded, { storage: openSqliteStorage({ dataDir: input.dataDir }) });
}

/** The real OTLP exporter, counting the spans it delivered (a round that lost spans would flatter tracing). */
function countingExporter(inner: SpanExporter): { exporter: SpanExporter; exported: () => number; exports: () => number } {
  let exported = 0;
  let exports = 0;
  const exporter: SpanExporter = {
    export: (spans, done) => {
      exports++;
      inner.export(spans, (result) => {
        if (result.code === ExportResultCode.SUCCESS) exported += spans.length;
        done(result);
      });
    },
    shutdown: () => inner.shutdown(),
    forceFlush: () => inner.forceFlush?.() ?? Promise.resolve(),
  };
  return { exporter, exported: () => exported, exports: () => exports };
}

interface TelemetryStop {
  stop(): Promise<void>;
  /** Tracing: spans exported and export calls, known after stop(). */
  spans?: { exported: () => number; exports: () => number };
}

/** Turns the asked-for telemetry on; stop() ends it (tracing flushes its last spans). */
async function telemetryOn(organism: Organism, input: PumpInput): Promise<TelemetryStop> {
  if (input.telemetry === 'metrics') {
    const metrics = new OrganismMetrics(organism);
    return {
      stop: async () => {
        await metrics.text(); // one scrape, as Prometheus would
        metrics.detach();
      },
    };
  }
  if (input.telemetry === 'tracing') {
    const sink = await startServer<OtlpSinkInfo>(benchFile('servers/otlp-sink.ts'), {}, { what: 'OTLP sink' });
    const settings = resolveTracing(
      { otlp: { endpoint: sink.info.url, protocol: 'http/protobuf' }, captureContent: false, contextManager: input.contextManager === true },
      { name: 'bench', version: 'bench' },
      {},
    )!;
    // As `organism serve` runs it (the export worker), unless the main-thread exporter is asked for.
    const counting = input.exportOn === 'main-thread' ? countingExporter(createExporter(settings)) : null;
    const tracing = new OrganismTracing(settings, counting ? { exporter: counting.exporter } : {});
    // Loading the SDK in the export worker is a start-up cost, like loading it on the main thread: not timed.
    await tracing.ready();
    const off = tracing.attach(organism);
    return {
      stop: async () => {
        off();
        await tracing.shutdown();
        await sink.stop();
      },
      spans: counting ?? { exported: () => tracing.exportStats()!.exported, exports: () => tracing.exportStats()!.exports },
    };
  }
  return { stop: async () => {} };
}

/** Counts the statements every better-sqlite3 database in this process runs (see chains/count.ts). */
function sqliteCounter(): Counter {
  const counter = new Counter();
  const probe = new Database(':memory:');
  countSqliteStatements(Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, unknown>, counter);
  probe.close();
  return counter;
}

async function throughput(input: PumpInput): Promise<ThroughputResult> {
  const counter = input.memory || input.postgresUrl ? null : sqliteCounter();
  const organism = await organismIn(input);
  const telemetry = await telemetryOn(organism, input);
  await organism.start();
  const done = ackCounter(organism, `hop${HOPS}`);
  const counted0 = counter?.snapshot() ?? null;
  const cpu0 = process.cpuUsage();
  const main0 = threadCpuMicros();
  const t0 = performance.now();
  await injectAll(organism, 'hop1', input.messages);
  await until(() => done.count >= input.messages, 600_000, 'the last final-hop ack', 1);
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const main1 = threadCpuMicros();
  await until(() => organism.activeThreads === 0, 60_000, 'threads to settle');
  // The settled threads' last records are written by the next group commit: counted too.
  await new Promise((resolve) => setImmediate(resolve));
  const counted1 = counter?.snapshot() ?? null;
  const stats = await organism.storage.journal.stats();
  await organism.stop();
  await telemetry.stop();
  // The in-memory journal keeps the newest 100,000 entries (bounded memory), so only the SQLite one is counted in full.
  const expected = input.memory ? Math.min(HOPS * input.messages, 100_000) : HOPS * input.messages;
  if (stats.counts.ACKED !== expected) throw new Error(`expected ${expected} ACKED journal entries, found ${JSON.stringify(stats.counts)}`);
  const spans = telemetry.spans ? { spansExported: telemetry.spans.exported(), exports: telemetry.spans.exports() } : {};
  // One span per delivery: a tracing round that dropped spans (a full queue) measured less work than it claims.
  if (telemetry.spans && spans.spansExported !== HOPS * input.messages) throw new Error(`expected ${HOPS * input.messages} spans exported, the exporter delivered ${spans.spansExported}`);
  return {
    messagesPerSec: input.messages / seconds,
    deliveriesPerSec: (HOPS * input.messages) / seconds,
    seconds,
    cpuMicrosPerMessage: (cpu.user + cpu.system) / input.messages,
    mainThreadCpuMicrosPerMessage: main0 !== null && main1 !== null ? (main1 - main0) / input.messages : null,
    ...spans,
    journal: { ...stats.counts },
    statementsPerMessage: counted0 && counted1 ? (counted1.statements - counted0.statements) / input.messages : null,
    commitsPerMessage: counted0 && counted1 ? ((counted1.commits ?? 0) - (counted0.commits ?? 0)) / input.messages : null,
  };
}

async function raw(input: PumpInput): Promise<RawResult> {
  const db = new Database(path.join(input.dataDir, 'raw.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  migrate(db);
  const insert = db.prepare(`INSERT INTO journal
    (id, thread_id, sender, recipient, payload_type, payload, metadata, hops, parent_id, msg_timestamp, attempt, state, attempts, created_at)
    VALUES (?, ?, 'api', 'hop1', 'Text', ?, '{"orgId":"acme"}', 0, NULL, ?, 1, 'PENDING', 0, ?)`);
  const batch = db.transaction((from: number, to: number) => {
    const now = Date.now();
    for (let i = from; i < to; i++) insert.run(newId(), newId(), JSON.stringify({ text: `m${i}` }), now, now);
  });
  const t0 = performance.now();
  for (let i = 0; i < input.messages; i += 1_000) batch(i, Math.min(input.messages, i + 1_000));
  const seconds = (performance.now() - t0) / 1000;
  const commits: number[] = [];
  for (let i = 0; i < 2_000; i++) {
    const c0 = performance.now();
    batch(input.messages + i, input.messages + i + 1);
    commits.push(performance.now() - c0);
  }
  db.close();
  return { rowsPerSec: input.messages / seconds, seconds, commitP50Ms: percentile(commits, 50), commitP99Ms: percentile(commits, 99) };
}

async function steady(input: PumpInput): Promise<SteadyResult> {
  const organism = await organismIn(input);
  await organism.start();
  const rate = input.rate ?? 2_000;
  const total = Math.round(rate * (input.seconds ?? 10));
  const due = new Map<string, number>();
  const firstHop: number[] = [];
  const endToEnd: number[] = [];
  const injectLatency: number[] = [];
  organism.bus.on((e) => {
    if (e.type !== 'message' || e.state !== 'ACKED') return;
    const start = due.get(e.message.threadId);
    if (start === undefined) return;
    if (e.message.to === 'hop1') firstHop.push(performance.now() - start);
    else if (e.message.to === `hop${HOPS}`) {
      endToEnd.push(performance.now() - start);
      due.delete(e.message.threadId);
    }
  });
  // Warm up the JIT and the database briefly, unmeasured.
  await injectAll(organism, 'hop1', 2_000);
  await until(() => organism.activeThreads === 0, 60_000, 'warm-up to settle');
  // Cluster mode (PostgreSQL) keeps waiting work in the database, not in the process: the
  // warm-up has settled when the journal has none left (else the steady part measures its backlog).
  for (let deadline = performance.now() + 600_000; ; ) {
    const { counts } = await organism.storage.journal.stats();
    if (counts.PENDING + counts.DISPATCHED === 0) break;
    if (performance.now() > deadline) throw new Error(`warm-up still has ${counts.PENDING} PENDING and ${counts.DISPATCHED} DISPATCHED entries after 600 s`);
    await sleep(50);
  }

  let maxLag = 0;
  const t0 = performance.now();
  for (let i = 0; i < total; i++) {
    const at = t0 + (i * 1000) / rate;
    const wait = at - performance.now();
    if (wait >= 1) await sleep(wait);
    maxLag = Math.max(maxLag, performance.now() - at);
    // Latency counts from the scheduled time, so a stalled loop cannot hide its own delay.
    const threadId = newId();
    due.set(threadId, at);
    void organism.inject('hop1', { text: `s${i}` }, { threadId, metadata: { orgId: 'acme' }, waitMs: 10_000 }).then(() => injectLatency.push(performance.now() - at));
  }
  const offeredSec = (performance.now() - t0) / 1000;
  await until(() => endToEnd.length >= total, 120_000, 'every steady message to finish');
  await organism.stop();
  await sleep(1);
  return {
    offered: total,
    offeredPerSec: total / offeredSec,
    firstHopP50Ms: percentile(firstHop, 50),
    firstHopP99Ms: percentile(firstHop, 99),
    endToEndP50Ms: percentile(endToEnd, 50),
    endToEndP99Ms: percentile(endToEnd, 99),
    injectP99Ms: percentile(injectLatency, 99),
    maxScheduleLagMs: maxLag,
  };
}

childMain<PumpInput, ThroughputResult | RawResult | SteadyResult>(async (input) => {
  if (input.mode === 'raw') return raw(input);
  if (input.mode === 'steady') return steady(input);
  return throughput(input);
});
