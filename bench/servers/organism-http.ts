/**
 * The organism server of scenarios 1 and 4: the bundled demo organism (or a no-op code
 * listener) on durable SQLite storage, served by buildApp with authentication on, in its own
 * process. Seeded with demo traffic so lists and usage have content. Commands from the
 * parent drive injections at a steady rate inside this process (the pump runs here).
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Organism } from '../../src/organism/organism.js';
import { buildApp } from '../../src/service/app.js';
import { DATABASE_FILE, openSqliteStorage } from '../../src/store/index.js';
import { OrganismTracing, resolveTracing } from '../../src/telemetry/tracing.js';
import { VERSION } from '../../src/version.js';
import { benchFile, childInput, serverFailed, serverReady, startServer, type RunningServer } from '../lib/child.js';
import type { OtlpSinkInfo } from './otlp-sink.js';
import { threadCpuMicros } from '../lib/cpu.js';
import { chainOrganism, demoOrganism } from '../lib/organisms.js';
import { sleep, until } from '../lib/stats.js';

export interface OrganismServerInput {
  readonly dataDir: string;
  readonly organism: 'demo' | 'sink';
  /** Demo questions run to completion before serving measurements. */
  readonly seedThreads: number;
  /** Default: metrics on (as organism.yaml defaults). `off`: no /metrics; `tracing`: metrics and traces (100 %, OTLP/protobuf to a sink in its own process). */
  readonly telemetry?: 'off' | 'metrics' | 'tracing';
}

export interface OrganismServerInfo {
  readonly port: number;
  readonly token: string;
  readonly journalRows: number;
  readonly usageEvents: number;
}

export interface DriveResult {
  readonly injected: number;
  readonly seconds: number;
  readonly busEvents: number;
  readonly messageEvents: number;
  readonly behindMs: number;
  /** This process's event-loop utilization (0-1) from the first inject until the traffic finished. */
  readonly elu: number;
}

const input = childInput<OrganismServerInput>();

async function main(): Promise<void> {
  const loaded = input.organism === 'demo' ? await demoOrganism() : chainOrganism(1, { maxQueue: 100_000 });
  const storage = openSqliteStorage({ dataDir: input.dataDir });
  const organism = new Organism(loaded, { storage });
  let tracing: OrganismTracing | null = null;
  let sink: RunningServer<OtlpSinkInfo> | null = null;
  if (input.telemetry === 'tracing') {
    // The collector runs in its own process (stopped with this one: its IPC channel closes).
    sink = await startServer<OtlpSinkInfo>(benchFile('servers/otlp-sink.ts'), {}, { what: 'OTLP sink' });
    tracing = new OrganismTracing(resolveTracing({ otlp: { endpoint: sink.info.url, protocol: 'http/protobuf' }, captureContent: false }, { name: 'bench', version: VERSION }, {})!);
    // Loading the SDK in the export worker is start-up, not per-request, cost.
    await tracing.ready();
    tracing.attach(organism);
  }
  await organism.start();
  const token = randomBytes(24).toString('base64url');
  // Scenario 4 connects 1,000 clients (and one more) from one address, all at once: above the
  // per-address defaults (connections and handshakes in progress).
  const app = await buildApp({
    organism,
    auth: { tokens: [{ name: 'bench', role: 'operator', token }] },
    version: VERSION,
    ws: { maxPerIp: 5_000, maxConnections: 5_000, maxHandshakesPerIp: 5_000 },
    ...(input.telemetry === 'off' ? { metrics: false } : {}),
    ...(tracing ? { tracing: { provider: tracing.provider } } : {}),
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as AddressInfo;

  const target = input.organism === 'demo' ? 'researcher' : 'hop1';
  const payload = (i: number) => (input.organism === 'demo' ? { text: `tide pools ${i}` } : { text: `${i}` });
  for (let i = 0; i < input.seedThreads; i++) await organism.inject(target, payload(i), { metadata: { orgId: i % 2 ? 'acme' : 'globex' }, waitMs: 30_000 });
  await until(() => organism.activeThreads === 0, 120_000, 'seed traffic to finish', 20);
  organism.flush();
  const stats = await storage.journal.stats();
  const journalRows = Object.values(stats.counts).reduce((a, b) => a + b, 0);
  const usageEvents = organism.tracker.totals().requestCount;

  let busEvents = 0;
  let messageEvents = 0;
  organism.bus.on((e) => {
    busEvents++;
    if (e.type === 'message') messageEvents++;
  });

  const info: OrganismServerInfo = { port, token, journalRows, usageEvents };
  await serverReady(info, {
    /** Injects `rate` messages/s for `seconds`, each carrying its wall-clock send time. */
    drive: async (cmd) => {
      const rate = Number(cmd['rate']);
      const seconds = Number(cmd['seconds']);
      const total = Math.round(rate * seconds);
      const startBus = busEvents;
      const startMsg = messageEvents;
      const t0 = performance.now();
      const elu0 = performance.eventLoopUtilization();
      let behindMs = 0;
      for (let i = 0; i < total; i++) {
        const due = t0 + (i * 1000) / rate;
        const wait = due - performance.now();
        if (wait > 1) await sleep(wait);
        else behindMs = Math.max(behindMs, -wait);
        // The payload carries the time the inject was due (a late schedule counts as latency).
        void organism.inject(target, { text: `${performance.timeOrigin + due}` }, { waitMs: 5_000 }).catch(() => {});
      }
      await until(() => organism.activeThreads === 0, 60_000, 'driven traffic to finish', 10);
      return {
        injected: total,
        seconds: (performance.now() - t0) / 1000,
        busEvents: busEvents - startBus,
        messageEvents: messageEvents - startMsg,
        behindMs,
        elu: performance.eventLoopUtilization(elu0).utilization,
      } satisfies DriveResult;
    },
    memory: async () => process.memoryUsage(),
    /** CPU time of the process (all threads) and of its main thread alone (null off Linux), in µs. */
    cpu: async () => ({ ...process.cpuUsage(), main: threadCpuMicros() }),
    /** Tracing: what the export worker delivered, everything ended so far flushed first. */
    traceStats: async () => {
      if (!tracing) return null;
      await tracing.flush();
      return tracing.exportStats();
    },
    /** The floor of GET /messages?limit=50: the same page read straight from SQLite, in µs. */
    rawPage: async () => {
      const db = new Database(path.join(input.dataDir, DATABASE_FILE), { readonly: true });
      const page = db.prepare('SELECT * FROM journal ORDER BY seq DESC LIMIT 50');
      for (let i = 0; i < 200; i++) page.all();
      const n = 2_000;
      const t0 = performance.now();
      for (let i = 0; i < n; i++) page.all();
      const us = ((performance.now() - t0) * 1000) / n;
      db.close();
      return us;
    },
  });

  process.on('SIGTERM', () => {
    void (async () => {
      await app.close();
      await organism.stop({ timeoutMs: 5_000 });
      await tracing?.shutdown();
      await sink?.stop();
      process.exit(0);
    })();
  });
}

main().catch(serverFailed);
