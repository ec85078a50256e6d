// vitest globalSetup (the shared project): one PostgreSQL database for the run, dropped at its
// end. The service fixture gives each service a schema of its own in it (CREATE SCHEMA, a few
// ms) instead of a database of its own (CREATE DATABASE copies a template: 0.7-1.6 s, and the
// DROP ... WITH (FORCE) up to 0.9 s more, on a loaded 2-core machine): one PostgreSQL test of
// the service fixture per store test, 84 of them. Each schema is as fresh as a database: the
// organism's tables, its lock (keyed by schema) and its LISTEN channels (named by schema) are
// all per schema. No server: nothing provided, and the fixture falls back to a database per test.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The run's PostgreSQL database (URL), or null when no server answers. */
    organismRunDatabase: string | null;
  }
}

const ADMIN = process.env['ORGANISM_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: ADMIN, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    return await fn(client);
  } finally {
    await client.end().catch(() => {});
  }
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  const name = `organism_test_${randomBytes(6).toString('hex')}`;
  try {
    await admin((c) => c.query(`CREATE DATABASE ${name}`));
  } catch {
    project.provide('organismRunDatabase', null);
    return undefined;
  }
  const url = new URL(ADMIN);
  url.pathname = `/${name}`;
  project.provide('organismRunDatabase', url.toString());
  return async () => {
    await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
  };
}
