import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { reader } from '../../src/store/postgres/pool.js';
import { JournalVacuum, serverVacuums, vacuumDue } from '../../src/store/postgres/vacuum.js';
import { memoryLogger } from '../../src/testing/logs.js';
import { admin, createTestDatabase, testPool, withPostgres } from './contract/backends.js';

/** The journal's vacuum when the server runs none (src/store/postgres/vacuum.ts). */
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!().catch(() => {});
});

describe('when the journal needs a vacuum of organism', () => {
  it('only when the server runs none on it: autovacuum off, or off for the table', () => {
    expect(serverVacuums({ autovacuum: 'on', tableOptions: null })).toBe(true);
    expect(serverVacuums({ autovacuum: 'on', tableOptions: ['fillfactor=90', 'autovacuum_enabled=true'] })).toBe(true);
    expect(serverVacuums({ autovacuum: 'off', tableOptions: null })).toBe(false);
    expect(serverVacuums({ autovacuum: 'on', tableOptions: ['autovacuum_enabled=false'] })).toBe(false);
    expect(serverVacuums({ autovacuum: 'on', tableOptions: ['autovacuum_enabled=OFF'] })).toBe(false);
  });

  it('once the dead rows reach the floor and the share of the live ones', () => {
    expect(vacuumDue(19_999, 0, 20_000, 0.1)).toBe(false);
    expect(vacuumDue(20_000, 0, 20_000, 0.1)).toBe(true);
    expect(vacuumDue(20_000, 1_000_000, 20_000, 0.1)).toBe(false);
    expect(vacuumDue(100_000, 1_000_000, 20_000, 0.1)).toBe(true);
  });
});

describe.skipIf(!withPostgres('journal vacuum tests'))('the journal vacuum on PostgreSQL', () => {
  /** A migrated database whose journal the server does not vacuum (whatever the server's own setting). */
  async function database(): Promise<{ url: string; pool: ReturnType<typeof testPool> }> {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const s = await openPostgresStorage({ url: db.url, vacuum: false });
    await s.close();
    const pool = testPool({ connectionString: db.url });
    cleanup.push(() => pool.end());
    await pool.query('ALTER TABLE journal SET (autovacuum_enabled = false)');
    return { url: db.url, pool };
  }

  /** Buffers read to find the listener's oldest PENDING entry, as the claim does (journal_claimable). */
  async function claimReads(pool: ReturnType<typeof testPool>): Promise<number> {
    await pool.query('SET enable_seqscan = off');
    const plan = (
      await pool.query<{ 'QUERY PLAN': string }>("EXPLAIN (ANALYZE, BUFFERS, FORMAT TEXT) SELECT seq FROM journal WHERE state = 'PENDING' AND recipient = 'a' ORDER BY seq LIMIT 1")
    ).rows
      .map((r) => r['QUERY PLAN'])
      .join('\n');
    expect(plan).toContain('journal_claimable');
    const hit = /Buffers: shared hit=(\d+)/.exec(plan);
    return Number(hit?.[1] ?? Number.NaN);
  }

  it('says at start that it will vacuum the journal, and does not when told never to', async () => {
    const { url } = await database();
    const told = memoryLogger();
    const s = await openPostgresStorage({ url, logger: told.logger });
    cleanup.push(() => s.close());
    const warning = told.lines.find((l) => l.level === 'warn' && l.msg.includes('runs no autovacuum on the journal'));
    expect(warning?.msg).toContain('organism vacuums it itself once 20000 rows are dead');
    expect(warning?.['tableOptions']).toEqual(['autovacuum_enabled=false']);

    const quiet = memoryLogger();
    const t = await openPostgresStorage({ url, schema: 'other', logger: quiet.logger, vacuum: false });
    cleanup.push(() => t.close());
    expect(quiet.lines.filter((l) => l.msg.includes('autovacuum'))).toEqual([]);
  });

  it('a role that may not vacuum the journal is told so once, and leaves it to the server', async () => {
    const role = `organism_test_${randomBytes(5).toString('hex')}`;
    await admin((c) => c.query(`CREATE ROLE ${role} LOGIN`));
    cleanup.push(() => admin((c) => c.query(`DROP ROLE ${role}`)).then(() => undefined));
    const { url } = await database();
    const as = new URL(url);
    as.username = role;
    const pool = testPool({ connectionString: as.toString() });
    cleanup.push(() => pool.end());
    const log = memoryLogger();
    const vacuum = new JournalVacuum(reader(pool, 'test'), log.logger);
    cleanup.push(() => vacuum.close());
    expect(await vacuum.start()).toBe(false);
    const told = log.lines.filter((l) => l.level === 'warn');
    expect(told).toHaveLength(1);
    expect(told[0]!.msg).toContain('this role may not vacuum it (its owner is ');
    expect(told[0]!['owner']).toBe(new URL(url).username);
  });

  it("vacuums once enough rows are dead, and the claim's read of the oldest PENDING entry no longer goes past them", async () => {
    const { pool } = await database();
    // 5,000 deliveries that left PENDING, then one still waiting: its index entry comes after 5,000 dead ones.
    await pool.query(
      `INSERT INTO journal (id, thread_id, sender, recipient, payload_type, payload, metadata, hops, msg_timestamp, attempt, state, attempts, created_at)
       SELECT 'm' || g, 't' || g, 'api', 'a', 'Text', '{}', '{}', 0, 0, 1, 'PENDING', 0, 0 FROM generate_series(1, 5001) g`,
    );
    await pool.query("UPDATE journal SET state = 'ACKED', acked_at = 1 WHERE id <> 'm5001'");
    // Once the scan has met the dead entries, it marks them; what stays is the pages it reads past.
    await claimReads(pool);
    const before = await claimReads(pool);

    const log = memoryLogger();
    const vacuum = new JournalVacuum(reader(pool, 'test'), log.logger, { minDead: 4_000, fraction: 0.5, intervalMs: 3_600_000 });
    cleanup.push(() => vacuum.close());
    // The server counts dead rows when the writing session reports them (within a second or so).
    let check = await vacuum.check();
    while (!check.vacuumed) {
      expect(check.dead).toBeLessThan(4_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
      check = await vacuum.check();
    }
    expect(check.dead).toBeGreaterThanOrEqual(4_000);
    expect(log.lines.find((l) => l.msg === 'vacuumed the journal')).toMatchObject({ level: 'info', dead: check.dead });
    const after = await claimReads(pool);
    expect(before).toBeGreaterThan(10);
    expect(after).toBeLessThanOrEqual(before / 4);

    // Nothing dead since: nothing to do.
    await pool.query('SELECT pg_stat_clear_snapshot()');
    expect(await vacuum.check()).toMatchObject({ vacuumed: false });
  });
});
