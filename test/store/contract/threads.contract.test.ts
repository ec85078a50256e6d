import { describe, expect, it } from 'vitest';
import { MemoryThreadStore } from '../../../src/store/memory/threads.js';
import type { ThreadRecord, ThreadStore } from '../../../src/core/thread.js';
import { eachBackend } from './backends.js';

const thread = (id: string, over: Partial<ThreadRecord> = {}): ThreadRecord => ({
  id,
  status: 'active',
  participants: ['api', 'a'],
  messageCount: 1,
  createdAt: 1,
  lastActivity: 2,
  error: null,
  metadata: { orgId: 'o' },
  ...over,
});

/** The thread store's rules, for any store `make` opens (empty). */
function threadRules(make: () => ThreadStore | Promise<ThreadStore>): void {
  it('getMany reads the stored records of many ids at once, including writes not yet committed', async () => {
    const store = await make();
    for (let i = 0; i < 1_500; i++) store.put(thread(`t${i}`, { messageCount: i }));
    const ids = ['t0', 't42', 'missing', 't1499', 'it\'s "quoted"'];
    store.put(thread(ids[4]!));
    const found = await store.getMany(ids);
    expect([...found.keys()].sort()).toEqual(['t0', 't1499', 't42', ids[4]].sort());
    expect(found.get('t42')).toEqual(thread('t42', { messageCount: 42 }));
    expect((await store.getMany(Array.from({ length: 1_500 }, (_, i) => `t${i}`))).size).toBe(1_500);
    expect((await store.getMany([])).size).toBe(0);
  });

  it('a put replaces the record (the last write wins); lists are newest activity first, filtered by status and participant, with totals', async () => {
    const store = await make();
    store.put(thread('x', { lastActivity: 10 }));
    store.put(thread('y', { lastActivity: 30, participants: ['api', 'b'] }));
    store.put(thread('z', { lastActivity: 20 }));
    store.put(thread('x', { lastActivity: 40, status: 'error', error: 'boom', participants: ['api', 'a', 'c'], messageCount: 3 }));
    expect(await store.get('x')).toEqual(thread('x', { lastActivity: 40, status: 'error', error: 'boom', participants: ['api', 'a', 'c'], messageCount: 3 }));
    expect(await store.get('nope')).toBeNull();
    const all = await store.list({ limit: 2, offset: 0 });
    expect({ ids: all.items.map((t) => t.id), total: all.total }).toEqual({ ids: ['x', 'y'], total: 3 });
    expect((await store.list({ limit: 2, offset: 2 })).items.map((t) => t.id)).toEqual(['z']);
    const active = await store.list({ status: 'active', limit: 10, offset: 0 });
    expect({ ids: active.items.map((t) => t.id), total: active.total }).toEqual({ ids: ['y', 'z'], total: 2 });
    expect((await store.list({ status: 'completed', limit: 10, offset: 0 })).total).toBe(0);
    const withA = await store.list({ agent: 'a', limit: 10, offset: 0 });
    expect({ ids: withA.items.map((t) => t.id), total: withA.total }).toEqual({ ids: ['x', 'z'], total: 2 });
    expect((await store.list({ agent: 'c', status: 'error', limit: 10, offset: 0 })).total).toBe(1);
    expect((await store.list({ agent: 'zz', limit: 10, offset: 0 })).total).toBe(0);
  });
}

describe('memory thread store', () => threadRules(() => new MemoryThreadStore()));

eachBackend('thread store contract', (backend) => {
  threadRules(async () => (await backend.place().open()).threads);

  it('keeps thread records across a reopen (a put not awaited is written by close)', async () => {
    const place = backend.place();
    const s = await place.open();
    s.threads.put(thread('t1', { participants: ['api', 'a'], metadata: { orgId: 'o', userId: 'u' } }));
    await s.close();
    const t = await place.open();
    expect(await t.threads.get('t1')).toEqual(thread('t1', { participants: ['api', 'a'], metadata: { orgId: 'o', userId: 'u' } }));
    expect((await t.threads.list({ agent: 'a', limit: 10, offset: 0 })).total).toBe(1);
  });
});
