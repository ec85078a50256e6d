import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { MemoryThreadStore } from '../../src/store/memory/threads.js';
import { openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import type { ThreadRecord, ThreadStore } from '../../src/store/types.js';

const opened: SqliteStorage[] = [];
afterEach(() => {
  while (opened.length) opened.pop()!.close();
});

const stores: Array<[string, () => ThreadStore]> = [
  ['memory', () => new MemoryThreadStore()],
  [
    'SQLite',
    () => {
      const s = openSqliteStorage({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'organism-threads-')) });
      opened.push(s);
      return s.threads;
    },
  ],
];

const thread = (id: string, over: Partial<ThreadRecord> = {}): ThreadRecord => ({
  id, status: 'active', participants: ['api', 'a'], messageCount: 1, createdAt: 1, lastActivity: 2, error: null, metadata: { orgId: 'o' }, ...over,
});

describe.each(stores)('%s thread store', (_name, make) => {
  it('getMany reads the stored records of many ids at once, including writes not yet committed', async () => {
    const store = make();
    for (let i = 0; i < 1_500; i++) store.put(thread(`t${i}`, { messageCount: i }));
    const ids = ['t0', 't42', 'missing', 't1499', "it's \"quoted\""];
    store.put(thread(ids[4]!));
    const found = await store.getMany(ids);
    expect([...found.keys()].sort()).toEqual(['t0', 't1499', 't42', ids[4]].sort());
    expect(found.get('t42')).toEqual(thread('t42', { messageCount: 42 }));
    expect((await store.getMany(Array.from({ length: 1_500 }, (_, i) => `t${i}`))).size).toBe(1_500);
    expect((await store.getMany([])).size).toBe(0);
  });
});
