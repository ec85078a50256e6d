import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { Counter, countPgQueries, countSqliteStatements } from '../../bench/children/chains/count.js';
import { meterServerCpu, postgresBackendsOf, processCpuMicros } from '../../bench/lib/server-cpu.js';
import { scaleByName } from '../../bench/lib/scale.js';
import { peersSettings, peersSystems, ratioRow } from '../../bench/scenarios/peers.js';

const PG_URL = process.env['ORGANISM_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

describe('bench peers: statement counting', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'organism-peers-count-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('counts SQLite statements without transaction control, and commits: COMMITs plus writes outside a transaction', () => {
    const db = new Database(path.join(dir, 'count.db'));
    db.exec('CREATE TABLE t (x INTEGER)');
    const counter = new Counter();
    const undo = countSqliteStatements(Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<string, unknown>, counter);
    try {
      const insert = db.prepare('INSERT INTO t VALUES (?)');
      db.transaction(() => {
        insert.run(1);
        insert.run(2);
      })();
      insert.run(3); // autocommit: a statement and a commit
      db.prepare('SELECT count(*) FROM t').get(); // a read: a statement, no commit
      expect(counter.snapshot()).toEqual({ statements: 4, commits: 2 });
    } finally {
      undo();
      db.close();
    }
    // Undone: the prototype counts no more.
    const again = new Database(':memory:');
    again.prepare('SELECT 1').get();
    again.close();
    expect(counter.statements).toBe(4);
  });

  it('counts node-postgres statements (promise and Pool callback forms) and reports each finished one to onDone', async () => {
    const counter = new Counter();
    const done: Array<{ text: string; values: readonly unknown[] }> = [];
    const undo = countPgQueries(pg.Client as never, counter, (text, values) => done.push({ text, values }));
    const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
    try {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('CREATE TEMP TABLE peers_count (x int)');
        await client.query({ text: 'INSERT INTO peers_count VALUES ($1)', values: [1] });
        await client.query('COMMIT');
        await client.query('INSERT INTO peers_count VALUES ($1)', [2]); // autocommit write
      } finally {
        client.release();
      }
      await pool.query('SELECT $1::int AS n', [7]); // Pool.query passes a callback; a read, no commit
      expect(counter.snapshot()).toEqual({ statements: 4, commits: 2 });
      expect(done.at(-1)).toEqual({ text: 'SELECT $1::int AS n', values: [7] });
      expect(done.find((d) => d.text.startsWith('INSERT') && d.values[0] === 1)).toBeDefined();
      // organism's PostgreSQL writer sends a transaction's head and tail as simple-protocol strings.
      const c2 = await pool.connect();
      try {
        await c2.query('BEGIN; INSERT INTO peers_count VALUES (3)');
        await c2.query("INSERT INTO peers_count VALUES (4); UPDATE peers_count SET x = x WHERE x = 0 OR 'a;b' = 'a;b'; COMMIT");
      } finally {
        c2.release();
      }
      expect(counter.snapshot()).toEqual({ statements: 7, commits: 3 });
    } finally {
      await pool.end();
      undo();
    }
  });
});

describe('bench peers: server CPU', () => {
  it('reads a process CPU time from /proc and meters what it spends while the meter runs', async () => {
    expect(processCpuMicros(process.pid)).toBeGreaterThan(0);
    const meter = await meterServerCpu(async () => [process.pid], 10);
    const start = process.cpuUsage();
    // Busy until this process has spent 50 ms of CPU (clock ticks are 10 ms).
    while (process.cpuUsage(start).user < 50_000) Math.sqrt(Math.random());
    expect(await meter.stop()).toBeGreaterThanOrEqual(20_000);
  });

  it('finds the PostgreSQL backends of one database by their process titles', async () => {
    const client = new pg.Client({ connectionString: PG_URL });
    await client.connect();
    try {
      const { rows } = await client.query<{ pid: number; db: string }>('SELECT pg_backend_pid() AS pid, current_database() AS db');
      const pids = await postgresBackendsOf(rows[0]!.db)();
      expect(pids).toContain(rows[0]!.pid);
      expect(await postgresBackendsOf('no_such_database_here')()).toEqual([]);
    } finally {
      await client.end();
    }
  });
});

describe('bench peers: settings and ratios', () => {
  it('takes the scale settings unless BENCH_PEERS_* override them, and says which', () => {
    const quick = scaleByName('quick');
    expect(peersSettings(quick, {})).toEqual({ settings: quick.peers, overridden: [] });
    const { settings, overridden } = peersSettings(quick, { BENCH_PEERS_ROUNDS: '3', BENCH_PEERS_RATES: '25,100' });
    expect(settings).toEqual({ ...quick.peers, rounds: 3, rates: [25, 100] });
    expect([...overridden].sort()).toEqual(['BENCH_PEERS_RATES=25,100', 'BENCH_PEERS_ROUNDS=3']);
    expect(() => peersSettings(quick, { BENCH_PEERS_MESSAGES: 'lots' })).toThrow(/BENCH_PEERS_MESSAGES/);
    expect(() => peersSettings(quick, { BENCH_PEERS_RATES: '50,x' })).toThrow(/BENCH_PEERS_RATES/);
  });

  it('runs the systems BENCH_PEERS_SYSTEMS names, every one when unset', () => {
    expect(peersSystems({})).toEqual(['organism-sqlite', 'organism-postgres', 'bullmq', 'pg-boss', 'graphile-worker']);
    expect(peersSystems({ BENCH_PEERS_SYSTEMS: 'bullmq,organism-sqlite' })).toEqual(['organism-sqlite', 'bullmq']);
    expect(() => peersSystems({ BENCH_PEERS_SYSTEMS: 'organism-sqlite,redis' })).toThrow(/BENCH_PEERS_SYSTEMS.*redis/);
  });

  it('takes the ratio within each round, then the median (not the ratio of the medians), and judges the target on it', () => {
    // Per round 1, 3, 0.5: median 1. The medians (20 / 10) would say 2.
    const r = ratioRow('a vs b', 'msg/s', [10, 30, 20], { name: 'b', rounds: [10, 10, 40] }, { on: 'ratio', op: '>=', threshold: 1.5, text: '>= 1.5x b' });
    expect(r.value).toBe(20);
    expect(r.baseline?.value).toBe(10);
    expect(r.ratio).toBe(1);
    expect(r.status).toBe('missed');
  });
});
