import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { channelName, channelsFor, notify, PgListener } from '../../src/cluster/bus/channels.js';
import { createTestDatabase, withPostgres, testPool } from '../store/contract/backends.js';

const run = withPostgres('LISTEN/NOTIFY channels');

describe.skipIf(!run)('PostgreSQL channels', () => {
  let db: { url: string; drop(): Promise<void> };
  let pool: pg.Pool;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = testPool({ connectionString: db.url, max: 2 });
  });
  afterAll(async () => {
    await pool.end();
    await db.drop();
  });

  it('names carry the schema and stay within PostgreSQL identifier length', () => {
    expect(channelsFor('tenant_a')).toEqual({ schema: 'tenant_a', work: 'organism_work:tenant_a', events: 'organism_events:tenant_a', control: 'organism_control:tenant_a' });
    const long = 'x'.repeat(63);
    expect(Buffer.byteLength(channelName('control', long))).toBeLessThanOrEqual(63);
    expect(channelName('control', long)).not.toBe(channelName('control', 'y'.repeat(63)));
  });

  it('a listener hears its schema only, and hears again after its connection is cut', async () => {
    const listener = new PgListener({ connectionString: db.url, where: 'test', minBackoffMs: 20 });
    const heard: string[] = [];
    await listener.subscribe(channelsFor('a').work, (p) => heard.push(`a:${p}`));
    await listener.subscribe(channelsFor('b').work, (p) => heard.push(`b:${p}`));
    let reconnects = 0;
    listener.onReconnect(() => reconnects++);
    await listener.start();
    try {
      await notify(pool, channelsFor('a').work, 'one');
      await notify(pool, channelsFor('c').work, 'other schema');
      await until(() => heard.length === 1);
      expect(heard).toEqual(['a:one']);
      await pool.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'organism-listen' AND datname = current_database()`);
      await until(() => reconnects === 1);
      await notify(pool, channelsFor('b').work, 'two');
      await until(() => heard.length === 2);
      expect(heard).toEqual(['a:one', 'b:two']);
    } finally {
      await listener.close();
    }
  });
});

async function until(check: () => boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 10));
  }
}
