import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe } from 'vitest';
import type { DeliveryQueue } from '../../src/core/queue.js';
import type { Journal } from '../../src/core/journal.js';
import type { UsageStore } from '../../src/core/usage.js';
import { EmbeddedQueue } from '../../src/queue/embedded.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { openPostgresStorage, type PostgresStorage } from '../../src/store/postgres/index.js';
import { createTestDatabase, testPool, withPostgres } from '../store/contract/backends.js';

/**
 * The queue contract suite runs every rule on both DeliveryQueue implementations, each over a
 * real store (as the store contract suite runs its rules on every store):
 * - embedded: the EmbeddedQueue over the SQLite storage of a temp data directory;
 * - cluster: the ClusterQueue a PostgreSQL storage brings when opened shared, on a fresh schema
 *   of a test database (organism_test_<random>, dropped after the file) on the local server.
 *
 * A "place" is one organism's store; each `process()` opened on it is one process of that
 * organism (embedded: one at a time, the data directory is locked; cluster: several side by side).
 */

/** One process's queue over its store. */
export interface QueueUnderTest {
  readonly queue: DeliveryQueue;
  /** The store's journal: what the rules check the queue wrote. */
  readonly journal: Journal;
  readonly usage: UsageStore;
  close(): Promise<void>;
}

export interface QueuePlace {
  /** A process of the organism, with its queue (not opened: the test's host opens it). */
  process(): Promise<QueueUnderTest>;
  /**
   * `crashed` dies with its deliveries unfinished (nothing acked, nothing given back). Answers
   * the process that carries on (embedded: the same organism restarted over its data directory;
   * cluster: another process, whose lease is short) and, when the crashed process lives on to
   * ask (cluster: it was only presumed dead, frozen past its lease), its queue.
   */
  crash(crashed: QueueUnderTest): Promise<{ next: QueueUnderTest; survivor: DeliveryQueue | null }>;
}

export interface QueueBackend {
  readonly name: 'embedded' | 'cluster';
  place(): QueuePlace;
}

const opened: QueueUnderTest[] = [];
const cleanups: Array<() => void | Promise<void>> = [];
async function closeOpened(): Promise<void> {
  while (opened.length)
    await opened
      .pop()!
      .close()
      .catch(() => {});
  while (cleanups.length) await cleanups.pop()!();
}
const track = (q: QueueUnderTest) => (opened.push(q), q);

const embedded: QueueBackend = {
  name: 'embedded',
  place() {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-queue-contract-'));
    cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
    const open = async () => {
      const s = openSqliteStorage({ dataDir });
      let closed = false;
      return track({
        queue: new EmbeddedQueue(s.journal, s.threads),
        journal: s.journal,
        usage: s.usage,
        close: async () => {
          if (closed) return;
          closed = true;
          s.close();
        },
      });
    };
    return {
      process: open,
      async crash(crashed) {
        // What a crash leaves is what was committed: the data directory is given up (its lock
        // with it) and the organism starts again over it.
        await crashed.close();
        return { next: await open(), survivor: null };
      },
    };
  },
};

/** The cluster: a test database for the file, a schema per place. */
class ClusterBackend implements QueueBackend {
  readonly name = 'cluster' as const;
  private db: { url: string; drop(): Promise<void> } | null = null;
  private admins: pg.Pool[] = [];

  async setup(): Promise<void> {
    this.db = await createTestDatabase();
  }

  async teardown(): Promise<void> {
    await Promise.all(this.admins.map((p) => p.end().catch(() => {})));
    await this.db?.drop();
  }

  place(): QueuePlace {
    const url = this.db!.url;
    const schema = `q_${randomBytes(5).toString('hex')}`;
    const admin = testPool({ connectionString: url, max: 1, options: `-c search_path=${schema}` });
    this.admins.push(admin);
    const stores = new Map<QueueUnderTest, PostgresStorage>();
    let n = 0;
    const open = async (leaseMs: number) => {
      const s = await openPostgresStorage({ url, schema, cluster: { maxAttempts: 3, leaseMs, name: `p${++n}` } });
      const queue = (s as PostgresStorage & { queue?: DeliveryQueue }).queue;
      if (!queue) throw new Error('a PostgreSQL storage opened for a cluster brings no queue');
      const q = track({ queue, journal: s.journal, usage: s.usage, close: () => s.close() });
      stores.set(q, s);
      return q;
    };
    return {
      // A long lease: a process's claims are taken back only when a rule makes it die.
      process: () => open(60_000),
      async crash(crashed) {
        // It stops heartbeating (killed, frozen, cut off): its row says it last renewed its
        // lease long ago. It is not closed: closing gives its claims back at once.
        const id = stores.get(crashed)!.cluster!.workerId;
        await admin.query(`UPDATE workers SET heartbeat_at = 0 WHERE id = $1`, [id]);
        // The process that carries on heartbeats every 100 ms and takes back expired leases.
        return { next: await open(300), survivor: crashed.queue };
      },
    };
  }
}

/**
 * Declares `body` once per queue (`<title> (embedded)`, `<title> (cluster)`), closing what a
 * test opened after it. Without a PostgreSQL server the cluster half is skipped (a failure in CI).
 */
export function eachQueue(title: string, body: (backend: QueueBackend) => void): void {
  describe(`${title} (embedded)`, () => {
    afterEach(closeOpened);
    body(embedded);
  });
  const cluster = new ClusterBackend();
  describe.skipIf(!withPostgres(`queue contract "${title}"`))(`${title} (cluster)`, () => {
    beforeAll(() => cluster.setup());
    afterEach(closeOpened);
    afterAll(() => cluster.teardown());
    body(cluster);
  });
}
