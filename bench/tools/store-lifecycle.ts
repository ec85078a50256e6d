/**
 * The journal's write path alone, SQLite beside PostgreSQL: N deliveries, each PENDING ->
 * DISPATCHED -> ACKED through the store (no pump, no handlers), CONC at a time. A rough figure
 * of the store's cost per delivery, not the bench of issue 15.
 *
 *   node --import tsx bench/tools/store-lifecycle.ts [postgres://user@host/db]
 */
import pg from 'pg';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openSqliteStorage } from '../../src/store/index.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { newId } from '../../src/util/ids.js';
import type { Message } from '../../src/core/message.js';
import type { Journal } from '../../src/core/journal.js';
const N = 3000,
  CONC = 50;
async function run(name: string, s: { journal: Journal; close(): unknown }) {
  const msgs: Message[] = Array.from({ length: N }, (_, i) => ({
    id: newId(),
    threadId: `t${i % 100}`,
    from: 'api',
    to: 'a',
    payloadType: 'Text',
    payload: { text: 'x' },
    timestamp: Date.now(),
    parentId: null,
    hops: 0,
    metadata: {},
    attempt: 1,
  }));
  const lat: number[] = [];
  const t0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONC }, async () => {
      while (next < N) {
        const m = msgs[next++]!;
        const a = performance.now();
        await s.journal.pending([m]);
        void s.journal.dispatched(m);
        await s.journal.acked(m, [], []);
        lat.push(performance.now() - a);
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  lat.sort((x, y) => x - y);
  console.log(
    `${name}: ${N} deliveries (pending+dispatched+acked), ${CONC} concurrent: ${(N / secs).toFixed(0)}/s, p50 ${lat[Math.floor(N * 0.5)]!.toFixed(1)} ms, p99 ${lat[Math.floor(N * 0.99)]!.toFixed(1)} ms`,
  );
  await s.close();
}
await run('sqlite', openSqliteStorage({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'm-')) }));
// A schema of its own in the given database, dropped after.
const url = process.argv[2] ?? process.env['ORGANISM_STORE'] ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const schema = `store_lifecycle_${Date.now()}`;
await run('postgres', await openPostgresStorage({ url, schema }));
const admin = new pg.Client({ connectionString: url });
await admin.connect();
await admin.query(`DROP SCHEMA ${schema} CASCADE`);
await admin.end();
