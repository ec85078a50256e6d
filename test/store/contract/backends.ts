import type { ScheduleStore } from '../../../src/core/schedule.js';
import type { WebhookStore } from '../../../src/core/webhook.js';
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, it } from 'vitest';
import { DATABASE_FILE, openSqliteStorage } from '../../../src/store/index.js';
import { openPostgresStorage, PG_SCHEMA_VERSION } from '../../../src/store/postgres/index.js';
import { MIGRATIONS } from '../../../src/store/sqlite/migrations.js';
import type { Journal } from '../../../src/core/journal.js';
import type { LlmCallStore, OperatorStateStore, ThreadEraser } from '../../../src/core/storage.js';
import type { ThreadStore } from '../../../src/core/thread.js';
import type { UsageStore } from '../../../src/core/usage.js';
import { admin as adminOn } from '../../../bench/lib/pg-admin.js';

/**
 * The store contract suite runs every rule against each durable store: SQLite (a real file in
 * a temp directory) and PostgreSQL (a fresh database per describe block of a test file on the
 * local server, created as organism_test_<random> and dropped after; a schema per "place", so
 * each test starts empty and can reopen what it wrote).
 *
 * Without a PostgreSQL server the postgres half is skipped with a message, except in CI
 * (CI=true), where it fails: .ci/run starts the server.
 */

/** The server the suite creates its databases on (trust auth as user postgres by default). */
export const PG_ADMIN_URL = process.env['ORGANISM_TEST_POSTGRES'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface StoreUnderTest {
  readonly journal: Journal & { prune(now?: number): Promise<number> };
  readonly threads: ThreadStore;
  readonly usage: UsageStore;
  readonly llmCalls: LlmCallStore;
  readonly operator: OperatorStateStore;
  readonly eraser: ThreadEraser;
  readonly schedules: ScheduleStore;
  readonly webhooks: WebhookStore;
  readonly budgets: { load(): unknown[] | Promise<unknown[]>; save(snapshots: unknown[]): void | Promise<void> };
  close(): Promise<void>;
}

export interface OpenOptions {
  readonly retainDays?: number;
  readonly failedRetainDays?: number;
  /** PostgreSQL: how long to wait for another holder of the database (SQLite refuses at once). */
  readonly lockWaitMs?: number;
}

/** Where a store lives: a data directory, or a schema of the test database. */
export interface Place {
  open(options?: OpenOptions): Promise<StoreUnderTest>;
  /** Ground truth, straight from the tables (`?` placeholders on both). */
  rows<T = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<T[]>;
  /** Pretends a newer organism wrote the database. */
  setSchemaVersion(version: number): Promise<void>;
  readonly schemaVersion: number;
  /** Where it is, for a child process to open it: `--data-dir` or `--store` (with the schema). */
  readonly location: { readonly dataDir: string } | { readonly url: string; readonly schema: string };
  /** `organism serve` arguments that put its store here (and its data directory, which holds the token, somewhere new). */
  cliArgs(): Promise<string[]>;
}

export interface Backend {
  readonly name: 'sqlite' | 'postgres';
  /** A new, empty place (its stores are closed after each test). */
  place(): Place;
}

const opened: StoreUnderTest[] = [];
async function closeOpened(): Promise<void> {
  while (opened.length)
    await opened
      .pop()!
      .close()
      .catch(() => {});
}
const track = (s: StoreUnderTest) => (opened.push(s), s);

const sqlite: Backend = {
  name: 'sqlite',
  place() {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-contract-'));
    const withDb = <T>(fn: (db: Database.Database) => T): T => {
      const db = new Database(path.join(dataDir, DATABASE_FILE));
      try {
        return fn(db);
      } finally {
        db.close();
      }
    };
    return {
      async open(options = {}) {
        const s = openSqliteStorage({
          dataDir,
          ...(options.retainDays ? { retainDays: options.retainDays } : {}),
          ...(options.failedRetainDays ? { failedRetainDays: options.failedRetainDays } : {}),
        });
        return track({ ...s, journal: s.journal, close: async () => s.close() });
      },
      async rows<T>(sql: string, params: readonly unknown[] = []) {
        return withDb((db) => {
          const statement = db.prepare(sql);
          // DDL and writes return no rows (as on PostgreSQL).
          if (!statement.reader) {
            statement.run(...params);
            return [] as T[];
          }
          return statement.all(...params) as T[];
        });
      },
      async setSchemaVersion(version: number) {
        withDb((db) => db.pragma(`user_version = ${version}`));
      },
      schemaVersion: MIGRATIONS.length,
      location: { dataDir },
      cliArgs: async () => ['--data-dir', dataDir],
    };
  },
};

/** PostgreSQL: the test database of this file, created on first use. */
class PostgresBackend implements Backend {
  readonly name = 'postgres' as const;
  private database: string | null = null;
  private admin: pg.Pool | null = null;
  private pools: pg.Pool[] = [];

  async setup(): Promise<void> {
    this.database = `organism_test_${randomBytes(6).toString('hex')}`;
    this.admin = new pg.Pool({ connectionString: PG_ADMIN_URL, max: 1 });
    this.admin.on('error', () => {});
    await this.admin.query(`CREATE DATABASE ${this.database}`);
  }

  async teardown(): Promise<void> {
    await Promise.all(this.pools.map((p) => p.end().catch(() => {})));
    if (this.admin && this.database) await this.admin.query(`DROP DATABASE IF EXISTS ${this.database} WITH (FORCE)`);
    await this.admin?.end();
  }

  get url(): string {
    const u = new URL(PG_ADMIN_URL);
    u.pathname = `/${this.database}`;
    return u.toString();
  }

  place(): Place {
    const schema = `s_${randomBytes(6).toString('hex')}`;
    const url = this.url;
    let pool: pg.Pool | null = null;
    const query = async <T>(sql: string, params: readonly unknown[] = []): Promise<T[]> => {
      if (!pool) {
        pool = new pg.Pool({ connectionString: url, max: 2, options: `-c search_path=${schema}` });
        pool.on('error', () => {}); // an idle connection ended by the DROP DATABASE at teardown
        this.pools.push(pool);
      }
      let n = 0;
      return (
        await pool.query(
          sql.replace(/\?/g, () => `$${++n}`),
          [...params],
        )
      ).rows as T[];
    };
    return {
      async open(options = {}) {
        const s = await openPostgresStorage({ url, schema, ...options });
        return track(s);
      },
      rows: query,
      async setSchemaVersion(version: number) {
        await query('UPDATE schema_version SET version = ?', [version]);
      },
      schemaVersion: PG_SCHEMA_VERSION,
      location: { url, schema },
      // The schema reaches the CLI as the connection's search_path (libpq's `options` parameter).
      async cliArgs() {
        await query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
        const store = new URL(url);
        store.searchParams.set('options', `-c search_path=${schema}`);
        return ['--data-dir', mkdtempSync(path.join(os.tmpdir(), 'organism-pg-cli-')), '--store', store.toString()];
      },
    };
  }
}

/** Whether a PostgreSQL server answers (null) or why not. */
async function probePostgres(): Promise<string | null> {
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 3_000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return null;
  } catch (err) {
    return (err as Error).message || String(err);
  } finally {
    await client.end().catch(() => {});
  }
}

const pgProblem = await probePostgres();
const inCi = process.env['CI'] === 'true';

/**
 * Whether tests should run on PostgreSQL as well: when a server answers, and always in CI
 * (where a missing server then fails them). Otherwise says once why they are skipped.
 */
export function withPostgres(what: string): boolean {
  if (pgProblem === null || inCi) return true;
  console.warn(`${what}: PostgreSQL skipped (no server at ${new URL(PG_ADMIN_URL).host}: ${pgProblem}; CI=true makes this a failure)`);
  return false;
}

/** A fresh database on the test server (organism_test_<random>), dropped by `drop`. */
/**
 * A pool for a test's own queries on a test database. Its idle connections are ended by the
 * DROP DATABASE ... WITH (FORCE) at teardown, sometimes while pool.end() is still closing them
 * (pool.end() resolves before the sockets close): unheard, pg-pool re-emits that error on the
 * pool and it ends the test run as an uncaught exception.
 */
export function testPool(config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config);
  pool.on('error', () => {});
  return pool;
}

/** Runs `fn` on a connection of its own to the test server's maintenance database (as the admin). */
export const admin = <T>(fn: (c: pg.Client) => Promise<T>): Promise<T> => adminOn(fn, PG_ADMIN_URL);

export async function createTestDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `organism_test_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 5_000 });
  await client.connect().catch((err: Error) => {
    throw new Error(`no PostgreSQL server answers at ${new URL(PG_ADMIN_URL).host} (${err.message})`);
  });
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(PG_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      await admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/**
 * Declares `body` once per store, each in its own describe block (`<title> (sqlite)`,
 * `<title> (postgres)`), closing the stores a test opened after it.
 */
export function eachBackend(title: string, body: (backend: Backend) => void): void {
  describe(`${title} (sqlite)`, () => {
    afterEach(closeOpened);
    body(sqlite);
  });
  if (pgProblem !== null) {
    const where = new URL(PG_ADMIN_URL).host;
    if (inCi) {
      describe(`${title} (postgres)`, () => {
        it('needs a PostgreSQL server in CI', () => {
          throw new Error(`no PostgreSQL server answers at ${where} (${pgProblem}); CI=true requires one (.ci/run starts it)`);
        });
      });
    } else {
      console.warn(`store contract "${title}": PostgreSQL half skipped (no server at ${where}: ${pgProblem})`);
      describe.skip(`${title} (postgres: skipped, no PostgreSQL server answers at ${where}: ${pgProblem}; set CI=true to make this a failure)`, () => body(new PostgresBackend()));
    }
    return;
  }
  describe(`${title} (postgres)`, () => {
    const backend = new PostgresBackend();
    beforeAll(() => backend.setup());
    afterEach(closeOpened);
    afterAll(() => backend.teardown());
    body(backend);
  });
}
