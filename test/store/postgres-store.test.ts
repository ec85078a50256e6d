import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/message.js';
import { openPostgresStorage, type PostgresStorage } from '../../src/store/postgres/index.js';
import { newId } from '../../src/util/ids.js';
import { admin, createTestDatabase, PG_ADMIN_URL, withPostgres } from './contract/backends.js';

/** What is PostgreSQL's own (the rules shared with SQLite are in test/store/contract). */
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!().catch(() => {});
});

function msg(): Message {
  return { id: newId(), threadId: 't1', from: 'api', to: 'a', payloadType: 'Text', payload: { text: 'x' }, timestamp: Date.now(), parentId: null, hops: 0, metadata: {}, attempt: 1 };
}

describe.skipIf(!withPostgres('PostgreSQL store tests'))('PostgreSQL store', () => {
  it('a database that stops answering fails writes and reads with a clear storage error (503), and the store carries on once it is back', async () => {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const s: PostgresStorage = await openPostgresStorage({ url: db.url });
    cleanup.push(() => s.close());
    const kept = msg();
    await s.journal.pending([kept]);
    const name = new URL(db.url).pathname.slice(1);
    // Nobody may connect any more, and every open connection is cut.
    await admin(async (c) => {
      await c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
      await c.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);
    });
    const write = s.journal.pending([msg()]);
    await expect(write).rejects.toMatchObject({ code: 'STORAGE_FAILED', status: 503 });
    const burst = await Promise.allSettled(Array.from({ length: 20 }, () => s.journal.pending([msg()])));
    expect(burst.map((r) => (r.status === 'rejected' ? (r.reason as { code: string }).code : 'committed'))).toEqual(Array(20).fill('STORAGE_FAILED'));
    await expect(write).rejects.toThrow(`Storage failure in ${db.url}`);
    await expect(s.journal.get(kept.id)).rejects.toMatchObject({ code: 'STORAGE_FAILED', status: 503 });
    await admin((c) => c.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
    expect((await s.journal.get(kept.id))?.state).toBe('PENDING');
    const later = msg();
    await s.journal.pending([later]);
    expect((await s.journal.list({ limit: 10, offset: 0 })).total).toBe(2);
  });

  it('never shows the password of the URL in its errors', async () => {
    const err = await openPostgresStorage({ url: 'postgres://postgres:s3cret-pw@127.0.0.1:1/nowhere' }).catch((e: Error) => e);
    expect(err).toMatchObject({ code: 'STORAGE_FAILED' });
    expect((err as Error).message).toContain('postgres://postgres:***@127.0.0.1:1/nowhere');
    expect((err as Error).message).toContain('cannot reach the PostgreSQL server');
    expect((err as Error).message).not.toContain('s3cret-pw');
  });

  it('refuses a schema name it would have to quote, before connecting', async () => {
    await expect(openPostgresStorage({ url: PG_ADMIN_URL, schema: 'x; DROP TABLE y' })).rejects.toThrow('schema name "x; DROP TABLE y" must be letters, digits and underscores');
  });

  it('two organisms starting on one new database at once (two schemas): one migrates while the other waits, neither fails', async () => {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    // Two stores on two schemas of one database migrate concurrently (one advisory lock for both).
    const [a, b] = await Promise.all([openPostgresStorage({ url: db.url, schema: 'one' }), openPostgresStorage({ url: db.url, schema: 'two' })]);
    cleanup.push(
      () => a.close(),
      () => b.close(),
    );
    await a.journal.pending([msg()]);
    expect((await b.journal.list({ limit: 1, offset: 0 })).total).toBe(0);
    expect((await a.journal.list({ limit: 1, offset: 0 })).total).toBe(1);
  });
});
