/**
 * Scenario 3 in fresh processes.
 *   record:  the caller's cost of recording one usage event: UsageTracker.record with the
 *            SQLite usage store subscribed (events without a delivery are buffered by the
 *            store and written in the background, off the timed path), and the same inside a
 *            whole Organism (every subscriber it wires). Baseline: the store's own insert of
 *            one event, amortized in 1,000-event transactions.
 *   queries: usage history, billing and daily over generated events, through the real HTTP
 *            routes (Fastify inject: auth, validation, serialization; no network). Events are
 *            generated directly in SQL into the store's schema, the daily rollup rebuilt from
 *            them by SQL, then 1,000 more recorded through the real tracker and store.
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Organism } from '../../src/organism/organism.js';
import { buildApp } from '../../src/service/app.js';
import { DATABASE_FILE, openSqliteStorage } from '../../src/store/index.js';
import { migrate } from '../../src/store/sqlite/migrations.js';
import { usageInserter } from '../../src/store/sqlite/usage-writes.js';
import { UsageTracker } from '../../src/usage/tracker.js';
import type { UsageEvent } from '../../src/usage/types.js';
import { newId } from '../../src/util/ids.js';
import { VERSION } from '../../src/version.js';
import { childMain } from '../lib/child.js';
import { chainOrganism } from '../lib/organisms.js';
import { median, tick } from '../lib/stats.js';

export interface UsageInput {
  readonly mode: 'record' | 'queries';
  readonly dataDir: string;
  readonly events: number;
  /** queries: timed calls per query and round (their median is the round's figure). */
  readonly repeats?: number;
  readonly rounds?: number;
  /** record: events for the insert baseline (its cost per event does not depend on the count). */
  readonly insertEvents?: number;
}

export interface RecordResult {
  /** Tracker + SQLite usage store subscriber, per event. */
  readonly trackerUs: number;
  /** organism.tracker.record inside a running Organism (store, budgets, pump/bus subscribers). */
  readonly organismUs: number;
  /** The store's insert of one event (events row + daily rollup) in 1,000-event transactions. */
  readonly insertUs: number;
  readonly persisted: number;
}

export interface QueryTiming {
  readonly name: string;
  /** Per round, the median over the repeats, through the HTTP route. */
  readonly routeMs: number[];
  /** Per round, the median over the repeats, the store call alone. */
  readonly storeMs: number[];
}

export interface SizeResult {
  readonly events: number;
  readonly generateSec: number;
  readonly dbBytes: number;
  readonly queries: readonly QueryTiming[];
  /** Same-size baselines per round: the raw indexed read of the newest 100 rows, and one aggregate pass over every event. */
  readonly rawPageMs: readonly number[];
  readonly fullScanMs: readonly number[];
}

const DAY_MS = 86_400_000;
const AGENTS = 8;
const MODELS = 4;
const ORGS = 3;

function event(i: number, now: number): UsageEvent {
  return {
    id: newId(),
    timestamp: now,
    threadId: `thread-${i % 1_000}`,
    agentId: `agent-${i % AGENTS}`,
    messageId: null,
    model: `model-${i % MODELS}`,
    provider: 'mock',
    promptTokens: 100 + (i % 900),
    completionTokens: 50 + (i % 450),
    totalTokens: 150 + (i % 900) + (i % 450),
    cacheReadTokens: null,
    cacheWriteTokens: null,
    reasoningTokens: null,
    providerLatencyMs: 800.5,
    totalLatencyMs: 812.25,
    cost: i % 4 === 3 ? null : 0.0004,
    metadata: { orgId: `org-${i % ORGS}` },
  };
}

/** Times `record` over `n` fresh events in batches, yielding between batches so background writes run untimed. */
async function timeRecords(record: (e: UsageEvent) => void, n: number): Promise<number> {
  const BATCH = 250;
  let timed = 0;
  const now = Date.now();
  for (let i = 0; i < n; i += BATCH) {
    const batch: UsageEvent[] = [];
    for (let j = 0; j < BATCH && i + j < n; j++) batch.push(event(i + j, now));
    const t0 = performance.now();
    for (const e of batch) record(e);
    timed += performance.now() - t0;
    await tick();
  }
  return (timed * 1000) / n;
}

async function recordCost(input: UsageInput): Promise<RecordResult> {
  const n = input.events;
  // Tracker + store subscriber, nothing else.
  const storage = openSqliteStorage({ dataDir: path.join(input.dataDir, 'tracker') });
  const tracker = new UsageTracker();
  storage.usage.attach(tracker);
  await timeRecords((e) => tracker.record(e), Math.min(n, 20_000)); // warm-up
  const trackerUs = await timeRecords((e) => tracker.record(e), n);
  await storage.usage.flush();
  const persisted = (await storage.usage.billing({})).requestCount;
  storage.close();

  // The same inside a running Organism.
  const organism = new Organism(chainOrganism(1), { storage: openSqliteStorage({ dataDir: path.join(input.dataDir, 'organism') }) });
  await organism.start();
  await timeRecords((e) => organism.tracker.record(e), Math.min(n, 20_000));
  const organismUs = await timeRecords((e) => organism.tracker.record(e), n);
  await organism.stop();

  // Baseline: the store's own insert path, synchronously, 1,000 events per transaction.
  const db = new Database(path.join(input.dataDir, 'insert.db'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  migrate(db);
  const insert = usageInserter(db);
  const write = db.transaction((events: UsageEvent[]) => insert(events));
  let timed = 0;
  const now = Date.now();
  const inserts = input.insertEvents ?? n;
  for (let i = 0; i < inserts; i += 1_000) {
    const batch: UsageEvent[] = [];
    for (let j = 0; j < 1_000 && i + j < inserts; j++) batch.push(event(i + j, now));
    const t0 = performance.now();
    write(batch);
    timed += performance.now() - t0;
  }
  db.close();
  return { trackerUs, organismUs, insertUs: (timed * 1000) / inserts, persisted };
}

// ------------------------------------------------------------------ queries

/** Appends events [from, to) spread evenly over the year before `end`, in time order, straight into the schema. */
function generate(db: Database.Database, from: number, to: number, total: number, end: number): void {
  const start = end - 365 * DAY_MS;
  const step = Math.max(1, Math.floor((365 * DAY_MS) / total));
  const insert = db.prepare(`WITH RECURSIVE c(x) AS (SELECT @from UNION ALL SELECT x + 1 FROM c WHERE x + 1 < @to)
    INSERT INTO usage_events (id, ts, thread_id, agent_id, message_id, model, provider, prompt_tokens, completion_tokens, total_tokens,
      cache_read_tokens, cache_write_tokens, reasoning_tokens, provider_latency_ms, total_latency_ms, cost, org_id, user_id, metadata)
    SELECT printf('%012x-7000-8000-%012x', @start + x * @step, x), @start + x * @step, printf('thread-%06d', x % 10000),
      'agent-' || (x % ${AGENTS}), printf('%012x-7000-9000-%012x', @start + x * @step, x), 'model-' || (x % ${MODELS}), 'mock',
      100 + x % 900, 50 + x % 450, 150 + x % 900 + x % 450, NULL, NULL, NULL, 800.5, 812.25,
      CASE WHEN x % 4 = 3 THEN NULL ELSE (100 + x % 900) * 0.0000005 + (50 + x % 450) * 0.0000015 END,
      'org-' || (x % ${ORGS}), NULL, '{"orgId":"org-' || (x % ${ORGS}) || '"}'
    FROM c`);
  const CHUNK = 250_000;
  for (let f = from; f < to; f += CHUNK) db.transaction(() => insert.run({ from: f, to: Math.min(to, f + CHUNK), start, step }))();
}

/** Rebuilds the daily rollup from the events, as the store's insert path maintains it. */
function rebuildRollup(db: Database.Database): void {
  db.transaction(() => {
    db.exec(`DELETE FROM usage_daily;
      INSERT INTO usage_daily (day, org_id, agent_id, model, total_tokens, prompt_tokens, completion_tokens, request_count, total_cost, unpriced_requests)
      SELECT strftime('%Y-%m-%d', ts / 1000, 'unixepoch'), org_id, agent_id, model, SUM(total_tokens), SUM(prompt_tokens), SUM(completion_tokens),
        COUNT(*), TOTAL(cost), SUM(cost IS NULL)
      FROM usage_events GROUP BY 1, 2, 3, 4`);
  })();
}

async function timeIt(fn: () => Promise<unknown>, repeats: number): Promise<number> {
  await fn(); // first call warms caches and plans
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

async function queries(input: UsageInput): Promise<SizeResult> {
  const size = input.events;
  const repeats = input.repeats ?? 10;
  const rounds = input.rounds ?? 3;
  const file = path.join(input.dataDir, DATABASE_FILE);
  openSqliteStorage({ dataDir: input.dataDir }).close(); // creates the schema
  const end = Date.now() - DAY_MS; // generated history ends yesterday; today holds only recorded events
  const t0 = performance.now();
  const gen = new Database(file);
  gen.pragma('journal_mode = WAL');
  gen.pragma('synchronous = OFF'); // generation only; the store reopens with its own settings
  gen.pragma('cache_size = -524288');
  generate(gen, 0, size - 1_000, size - 1_000, end);
  rebuildRollup(gen);
  gen.pragma('wal_checkpoint(TRUNCATE)');
  gen.close();

  // The last 1,000 events go through the real tracker and store (buffered, batched writes).
  const storage = openSqliteStorage({ dataDir: input.dataDir });
  const organism = new Organism(chainOrganism(1), { storage });
  await organism.start();
  const now = Date.now();
  for (let i = 0; i < 1_000; i++) organism.tracker.record(event(size + i, now));
  await storage.usage.flush();
  const generateSec = (performance.now() - t0) / 1000;
  const billed = await storage.usage.billing({});
  if (billed.requestCount !== size) throw new Error(`expected ${size} events billed, the store reports ${billed.requestCount}`);

  const token = randomBytes(16).toString('hex');
  const app: FastifyInstance = await buildApp({ organism, auth: { tokens: [{ name: 'bench', role: 'operator', token }] }, version: VERSION });
  const route = (url: string) => async () => {
    const res = await app.inject({ method: 'GET', url, headers: { authorization: `Bearer ${token}` } });
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
  };
  const iso = (ms: number) => new Date(ms).toISOString();
  const thirtyDaysAgo = now - 30 * DAY_MS;
  const yearAgo = now - 365 * DAY_MS;
  const store = storage.usage;
  const cases: Array<{ name: string; url: string; call: () => Promise<unknown> }> = [
    { name: 'history page (newest 100)', url: '/api/v1/usage/history', call: () => store.history({ limit: 100, offset: 0 }) },
    { name: 'history page, one org', url: '/api/v1/usage/history?orgId=org-1', call: () => store.history({ orgId: 'org-1', limit: 100, offset: 0 }) },
    { name: 'billing, all time', url: '/api/v1/usage/billing', call: () => store.billing({}) },
    {
      name: 'billing, last 30 days (partial-day edges)',
      url: `/api/v1/usage/billing?startTime=${iso(thirtyDaysAgo)}&endTime=${iso(now)}`,
      call: () => store.billing({ startTime: thirtyDaysAgo, endTime: now }),
    },
    { name: 'daily, default (30 days)', url: '/api/v1/usage/daily', call: () => store.daily({}) },
    { name: 'daily, one year', url: `/api/v1/usage/daily?startTime=${iso(yearAgo)}`, call: () => store.daily({ startTime: yearAgo }) },
  ];
  const raw = new Database(file, { readonly: true });
  const page = raw.prepare('SELECT * FROM usage_events ORDER BY ts DESC, id DESC LIMIT 100');
  const scan = raw.prepare('SELECT COUNT(*), SUM(total_tokens), TOTAL(cost) FROM usage_events');
  const timings: QueryTiming[] = cases.map((c) => ({ name: c.name, routeMs: [], storeMs: [] }));
  const rawPageMs: number[] = [];
  const fullScanMs: number[] = [];
  for (let r = 0; r < rounds; r++) {
    for (const [i, c] of cases.entries()) {
      timings[i]!.routeMs.push(await timeIt(route(c.url), repeats));
      timings[i]!.storeMs.push(await timeIt(c.call, repeats));
    }
    rawPageMs.push(await timeIt(async () => page.all(), repeats));
    fullScanMs.push(await timeIt(async () => scan.get(), 1));
  }
  raw.close();
  await app.close();
  await organism.stop();
  return { events: size, generateSec, dbBytes: statSync(file).size, queries: timings, rawPageMs, fullScanMs };
}

childMain<UsageInput, RecordResult | SizeResult>(async (input) => (input.mode === 'record' ? recordCost(input) : queries(input)));
