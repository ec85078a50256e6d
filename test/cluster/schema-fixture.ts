import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll } from 'vitest';
import type { LoadedOrganism } from '../../src/config/types.js';
import { Organism, type OrganismOptions } from '../../src/organism/organism.js';
import { openPostgresStorage, type PostgresStorage } from '../../src/store/postgres/index.js';
import { createTestDatabase, testPool } from '../store/contract/backends.js';

/**
 * Cluster-mode organisms on PostgreSQL, each test in a schema of its own in one test database:
 * `place()` makes the schema's admin pool; `open()` a cluster store in it; `start()` an
 * organism on such a store. Everything is stopped and closed after each test, the database
 * dropped after the file. Call from inside a describe.
 */
export function clusterSchemas() {
  let db: { url: string; drop(): Promise<void> };
  let admin: pg.Pool | null = null;
  let schema = '';
  const organisms: Organism[] = [];
  const stores: PostgresStorage[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    await Promise.all(organisms.splice(0).map((o) => o.stop({ timeoutMs: 1_000 }).catch(() => undefined)));
    await Promise.all(stores.splice(0).map((s) => s.close().catch(() => undefined)));
    await admin?.end();
    admin = null;
  });
  afterAll(async () => {
    await db.drop();
  });

  return {
    /** A new schema for this test, and a pool of `max` connections whose search_path is it. */
    place(max: number): pg.Pool {
      schema = `s_${randomBytes(5).toString('hex')}`;
      admin = testPool({ connectionString: db.url, max, options: `-c search_path=${schema}` });
      return admin;
    },
    /** A cluster store in this test's schema. */
    async open(): Promise<PostgresStorage> {
      const storage = await openPostgresStorage({ url: db.url, schema, cluster: { maxAttempts: 3 } });
      stores.push(storage);
      return storage;
    },
    /** An organism on a new cluster store of this test's schema, started. */
    async start(config: LoadedOrganism, options: Omit<OrganismOptions, 'storage'> = {}): Promise<{ organism: Organism; storage: PostgresStorage }> {
      const storage = await this.open();
      const organism = new Organism(config, { ...options, storage });
      await organism.start();
      organisms.push(organism);
      return { organism, storage };
    },
  };
}
