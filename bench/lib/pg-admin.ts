import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** The PostgreSQL server the bench's PostgreSQL rounds use (a fresh database each). */
export const ADMIN_URL = process.env['ORGANISM_BENCH_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** Runs `fn` on a connection of its own to `url` (default: the bench server's maintenance database). */
export async function admin<T>(fn: (c: pg.Client) => Promise<T>, url: string = ADMIN_URL): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh database `<prefix>_<random>` on the bench's server; `drop` removes it (sessions and all). */
export async function freshDatabase(prefix: string): Promise<{ name: string; url: string; drop(): Promise<void> }> {
  const name = `${prefix}_${randomBytes(5).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const url = new URL(ADMIN_URL);
  url.pathname = `/${name}`;
  return { name, url: url.toString(), drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined) };
}
