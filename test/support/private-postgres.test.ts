import { test, expect } from 'vitest';
import pg from 'pg';
import { startPrivatePostgres } from './private-postgres.js';
test('private PostgreSQL server restarts', async () => {
  const c = await startPrivatePostgres();
  try {
    const q = async () => {
      const cl = new pg.Client({ connectionString: c.url });
      await cl.connect();
      const r = await cl.query('select 1 as x');
      await cl.end();
      return r.rows[0].x;
    };
    expect(await q()).toBe(1);
    c.restart();
    expect(await q()).toBe(1);
    c.psql('create database foo');
    expect(c.psql("select count(*) from pg_database where datname = 'foo'").trim()).toBe('1');
  } finally {
    c.destroy();
  }
}, 60000);
