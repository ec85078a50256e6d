/**
 * Does PostgreSQL NOTIFY keep up with the pump's events? (issue 15: events across processes)
 *
 *   chain:  the 3-hop chain of no-op handlers (N messages pushed through as fast as the pump
 *           takes them), its bus events published through a cluster link; a second link (a
 *           `serve` elsewhere) hears them. Reports the events/s the pump emits, the events/s
 *           the other side receives, how long after the pump finished the last one arrived,
 *           events per NOTIFY statement and drops. Once on the SQLite store (the pump's
 *           fastest, the worst case for NOTIFY) and once on PostgreSQL (cluster mode's store).
 *   flood:  NOTIFY alone: E events published as fast as the publisher takes them; the
 *           receiving side's rate is what NOTIFY carries at most here.
 *
 *   node --import tsx bench/tools/notify-events.ts [postgres://user@host/db] [N] [E]
 *   (ONLY=chain or ONLY=flood runs one part)
 */
import pg from 'pg';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { OrganismEvent } from '../../src/events/types.js';
import type { ClusterHandlers } from '../../src/cluster/link.js';
import { Organism, type StorageParts } from '../../src/organism/organism.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { PgClusterLink } from '../../src/cluster/bus/cluster-link.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { injectAll } from '../lib/drive.js';
import { chainOrganism } from '../lib/organisms.js';
import { until } from '../lib/stats.js';

const url = process.argv[2] ?? process.env['ORGANISM_STORE'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const N = Number(process.argv[3] ?? 5_000);
const E = Number(process.argv[4] ?? 100_000);
const schema = `notify_events_${Date.now()}`;
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`CREATE SCHEMA ${schema}`);
const schemaUrl = (() => {
  const u = new URL(url);
  u.searchParams.set('options', `-c search_path=${schema}`);
  return u.toString();
})();

/** A receiving process: counts what it hears, and when the last arrived. */
function ear() {
  let received = 0;
  let lastAt = 0;
  const handlers: ClusterHandlers = {
    event() {
      received++;
      lastAt = performance.now();
    },
    command() {},
    resync() {},
  };
  return {
    handlers,
    get received() {
      return received;
    },
    get lastAt() {
      return lastAt;
    },
  };
}

async function chain(name: string, storage: StorageParts): Promise<void> {
  const loaded = chainOrganism(3, { maxConcurrentHandlers: 100, maxConcurrentPerAgent: 100, maxQueue: 100_000 });
  const organism = new Organism(loaded, { storage });
  const link = PgClusterLink.create({ url: schemaUrl, origin: organism.bootId, hearEvents: false });
  organism.joinCluster(link);
  const other = PgClusterLink.create({ url: schemaUrl, origin: 'other', hearEvents: true });
  const heard = ear();
  await other.start(heard.handlers);
  let emitted = 0;
  organism.bus.on((e) => {
    if (e.type !== 'organism_status' && e.type !== 'reload') emitted++;
  });
  await organism.start();
  const base = emitted;
  let acked = 0;
  organism.bus.on((e) => {
    if (e.type === 'message' && e.state === 'ACKED' && e.message.to === 'hop3') acked++;
  });
  const t0 = performance.now();
  await injectAll(organism, 'hop1', N);
  await until(() => acked >= N, 600_000, 'the chain to finish', 2);
  await until(() => organism.activeThreads === 0, 600_000, 'threads to settle', 5);
  const pumpDone = performance.now();
  const events = emitted - base;
  await until(() => heard.received >= events, 600_000, `the other process to hear ${events} events (has ${heard.received})`, 5);
  const s = link.stats();
  const pumpSecs = (pumpDone - t0) / 1000;
  const recvSecs = (heard.lastAt - t0) / 1000;
  console.log(
    `${name}: ${N} messages through the 3-hop chain in ${pumpSecs.toFixed(2)} s: the pump emitted ${events} events (${(events / pumpSecs).toFixed(0)}/s); ` +
      `the other process heard ${heard.received} (${(heard.received / recvSecs).toFixed(0)}/s), the last ${(heard.lastAt - pumpDone).toFixed(0)} ms after the pump finished; ` +
      `${s.batches} NOTIFY statements (${(s.published / Math.max(1, s.batches)).toFixed(1)} events each), ${s.dropped} dropped`,
  );
  await organism.stop({ timeoutMs: 5_000 });
  await other.close();
}

async function flood(): Promise<void> {
  const link = PgClusterLink.create({ url: schemaUrl, origin: 'flood', hearEvents: false });
  await link.start(ear().handlers);
  const other = PgClusterLink.create({ url: schemaUrl, origin: 'other', hearEvents: true });
  const heard = ear();
  await other.start(heard.handlers);
  const event = (i: number): OrganismEvent => ({
    type: 'agent_state',
    agent: `agent-${i % 10}`,
    state: 'processing',
    currentThread: `0193f0c2-7d4e-7c1a-9a51-${String(i).padStart(12, '0')}`,
  });
  const t0 = performance.now();
  for (let i = 0; i < E; i++) {
    link.publishEvent(event(i));
    // A producer that waits for the publisher now and then (its queue is bounded: past 50,000 it drops).
    if (i % 5_000 === 4_999) await link.flush();
  }
  await link.flush();
  const sent = performance.now();
  await until(() => heard.received >= E, 600_000, `the other process to hear ${E} events`, 5);
  const s = link.stats();
  console.log(
    `flood: ${E} events (${Buffer.byteLength(JSON.stringify(event(0)))} bytes each) sent in ${((sent - t0) / 1000).toFixed(2)} s, heard in ${((heard.lastAt - t0) / 1000).toFixed(2)} s: ` +
      `${(E / ((heard.lastAt - t0) / 1000)).toFixed(0)} events/s through NOTIFY; ${s.batches} statements (${(s.published / Math.max(1, s.batches)).toFixed(1)} events each), ${s.dropped} dropped`,
  );
  await link.close();
  await other.close();
}

try {
  // The PostgreSQL store migrates the schema (event_seq, event_bodies) in any case.
  const pgStore = await openPostgresStorage({ url, schema });
  const only = process.env['ONLY'];
  if (!only || only === 'chain') {
    await chain('postgres store', pgStore);
    await chain('sqlite store', openSqliteStorage({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'notify-events-')) }));
  } else await pgStore.close();
  if (!only || only === 'flood') await flood();
} finally {
  await admin.query(`DROP SCHEMA ${schema} CASCADE`);
  await admin.end();
}
