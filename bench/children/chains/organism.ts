import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Organism } from '../../../src/organism/organism.js';
import { chainOrganism } from '../../lib/organisms.js';
import { sleep } from '../../lib/stats.js';
import { Counter, countPgQueries, countSqliteStatements } from './count.js';
import { HOPS, type ChainSystem, type SystemFactory } from './system.js';

type Runtime = {
  readonly Organism: typeof import('../../../src/organism/organism.js').Organism;
  readonly openSqliteStorage: typeof import('../../../src/store/index.js').openSqliteStorage;
  readonly openPostgresStorage: () => Promise<typeof import('../../../src/store/postgres/index.js').openPostgresStorage>;
};

/**
 * organism as it runs for its users: the compiled dist/ (`npm run bench` builds it first; what
 * `organism serve` and an embedder run), as each peer runs its published JavaScript. Through tsx
 * (src/ transformed as it loads) when dist/ is not built.
 */
async function runtime(): Promise<Runtime> {
  const dist = (file: string) => new URL(`../../../dist/${file}`, import.meta.url);
  if (existsSync(fileURLToPath(dist('organism/organism.js')))) {
    const organism = (await import(dist('organism/organism.js').href)) as typeof import('../../../src/organism/organism.js');
    const store = (await import(dist('store/index.js').href)) as typeof import('../../../src/store/index.js');
    const postgres = async () => ((await import(dist('store/postgres/index.js').href)) as typeof import('../../../src/store/postgres/index.js')).openPostgresStorage;
    return { Organism: organism.Organism, openSqliteStorage: store.openSqliteStorage, openPostgresStorage: postgres };
  }
  const { Organism } = await import('../../../src/organism/organism.js');
  const { openSqliteStorage } = await import('../../../src/store/index.js');
  return { Organism, openSqliteStorage, openPostgresStorage: async () => (await import('../../../src/store/postgres/index.js')).openPostgresStorage };
}

/**
 * organism running the chain as bench/children/pump.ts does (default limits: 20 handlers, 5 per
 * listener): SQLite in the run's data directory, or PostgreSQL in cluster mode (claims and
 * leases), as `organism serve --store postgres://...` runs it.
 */
export const organismChain =
  (store: 'sqlite' | 'postgres'): SystemFactory =>
  async (input, onFinal) => {
    const { Organism, openSqliteStorage, openPostgresStorage } = await runtime();
    const counter = new Counter();
    const loaded = chainOrganism(HOPS, { maxQueue: 10_000 });
    let organism: Organism;
    if (store === 'postgres') {
      if (!input.postgresUrl) throw new Error('organism-postgres needs a database');
      countPgQueries(pg.Client as never, counter);
      const storage = await (await openPostgresStorage())({ url: input.postgresUrl, cluster: { kind: 'serve', handlers: true, maxAttempts: loaded.config.journal.maxAttempts } });
      organism = new Organism(loaded, { storage });
    } else {
      const probe = new Database(':memory:');
      countSqliteStatements(Object.getPrototypeOf(probe.prepare('SELECT 1')) as Record<string, unknown>, counter);
      probe.close();
      organism = new Organism(loaded, { storage: openSqliteStorage({ dataDir: input.dataDir }) });
    }
    // Each message starts a thread of its own, as an inject without a thread id does: the id comes
    // back from inject (a caller-chosen id costs a read of the threads table first, to refuse a
    // killed thread). A final ack seen before its inject returned waits in `early`.
    const keys = new Map<string, number>();
    const early = new Set<string>();
    organism.bus.on((e) => {
      if (e.type !== 'message' || e.state !== 'ACKED' || e.message.to !== `hop${HOPS}`) return;
      const key = keys.get(e.message.threadId);
      if (key === undefined) {
        early.add(e.message.threadId);
        return;
      }
      keys.delete(e.message.threadId);
      onFinal(key);
    });
    await organism.start();
    const system: ChainSystem = {
      async inject(batch) {
        await Promise.all(
          batch.map(async (key) => {
            const { threadId } = await organism.inject('hop1', { text: `m${key}` }, { metadata: { orgId: 'acme' }, waitMs: 120_000 });
            if (early.delete(threadId)) onFinal(key);
            else keys.set(threadId, key);
          }),
        );
      },
      counts: () => counter.snapshot(),
      async drained() {
        // Cluster mode keeps waiting work in the database, not in the process.
        for (const deadline = performance.now() + 600_000; ; ) {
          const { counts } = await organism.storage.journal.stats();
          if (organism.activeThreads === 0 && counts.PENDING + counts.DISPATCHED === 0) return;
          if (performance.now() > deadline) throw new Error(`still ${counts.PENDING} PENDING and ${counts.DISPATCHED} DISPATCHED after 600 s`);
          await sleep(20);
        }
      },
      async stop() {
        await organism.stop();
      },
    };
    return system;
  };
