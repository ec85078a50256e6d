import { describe, expect, it } from 'vitest';
import { MemoryThreadStore } from '../../../src/store/memory/threads.js';
import { MemoryJournal } from '../../../src/store/memory/journal.js';
import type { Journal } from '../../../src/core/journal.js';
import type { Message } from '../../../src/core/message.js';
import type { ThreadQuery, ThreadRecord, ThreadStore } from '../../../src/core/thread.js';
import { newId } from '../../../src/util/ids.js';
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

  it('filters by time: startTime keeps threads active since (last activity not earlier), endTime those created before', async () => {
    const store = await make();
    store.put(thread('t1', { createdAt: 100, lastActivity: 200 }));
    store.put(thread('t2', { createdAt: 300, lastActivity: 400, participants: ['api', 'b'] }));
    store.put(thread('t3', { createdAt: 500, lastActivity: 600, status: 'completed' }));
    const ids = async (q: Partial<ThreadQuery>) => {
      const page = await store.list({ limit: 10, offset: 0, ...q });
      return { ids: page.items.map((t) => t.id), total: page.total, truncated: page.searchTruncated };
    };
    expect(await ids({ startTime: 350 })).toEqual({ ids: ['t3', 't2'], total: 2, truncated: undefined });
    expect(await ids({ startTime: 200 })).toEqual({ ids: ['t3', 't2', 't1'], total: 3, truncated: undefined });
    expect(await ids({ endTime: 300 })).toEqual({ ids: ['t1'], total: 1, truncated: undefined });
    expect(await ids({ startTime: 250, endTime: 550 })).toEqual({ ids: ['t3', 't2'], total: 2, truncated: undefined });
    expect(await ids({ startTime: 250, endTime: 550, status: 'completed' })).toEqual({ ids: ['t3'], total: 1, truncated: undefined });
    expect(await ids({ startTime: 250, agent: 'b', limit: 1 })).toEqual({ ids: ['t2'], total: 1, truncated: undefined });
    expect(await ids({ startTime: 601 })).toEqual({ ids: [], total: 0, truncated: undefined });
  });
}

const message = (threadId: string, payload: Record<string, unknown>): Message => ({
  id: newId(),
  threadId,
  from: 'api',
  to: 'a',
  payloadType: 'Text',
  payload,
  timestamp: 1,
  parentId: null,
  hops: 0,
  metadata: {},
  attempt: 1,
});

/** Thread text search: threads with a journal entry whose payload or error contains the text, among the newest `window` entries. */
function threadSearchRules(make: () => Promise<{ journal: Journal; threads: ThreadStore }>): void {
  it('text search finds the threads whose messages contain the text (case-insensitive, literal), reading the newest `window` entries', async () => {
    const { journal, threads } = await make();
    const m1 = message('s1', { text: 'Alpha tide, 100%_sure' });
    const m2 = message('s2', { text: 'beta "quoted"' });
    const m3 = message('s3', { other: 'gamma' });
    await journal.pending([m1, m2, m3]);
    await journal.failed(m3, 'handler_error', 'Provider TIMEOUT', [], []);
    threads.put(thread('s1', { lastActivity: 10 }));
    threads.put(thread('s2', { lastActivity: 20 }));
    threads.put(thread('s3', { lastActivity: 30, status: 'error' }));
    threads.put(thread('s4', { lastActivity: 40 }));
    const find = async (text: string, window = 100, q: Partial<ThreadQuery> = {}) => {
      const page = await threads.list({ limit: 10, offset: 0, text: { text, window }, ...q });
      return { ids: page.items.map((t) => t.id), total: page.total, truncated: page.searchTruncated };
    };
    expect(await find('ALPHA')).toEqual({ ids: ['s1'], total: 1, truncated: false });
    expect(await find('%_')).toEqual({ ids: ['s1'], total: 1, truncated: false });
    expect(await find('%')).toEqual({ ids: ['s1'], total: 1, truncated: false });
    expect(await find('_')).toEqual({ ids: ['s1'], total: 1, truncated: false });
    expect(await find('"quoted"')).toEqual({ ids: ['s2'], total: 1, truncated: false });
    expect(await find('timeout')).toEqual({ ids: ['s3'], total: 1, truncated: false });
    expect(await find('text')).toEqual({ ids: ['s2', 's1'], total: 2, truncated: false });
    expect(await find('text', 100, { status: 'active', limit: 1 })).toEqual({ ids: ['s2'], total: 2, truncated: false });
    expect(await find('nowhere')).toEqual({ ids: [], total: 0, truncated: false });
    // The window: the newest 2 entries are m2 and m3; m1 (the oldest) is not read.
    expect(await find('alpha', 2)).toEqual({ ids: [], total: 0, truncated: true });
    expect(await find('quoted', 2)).toEqual({ ids: ['s2'], total: 1, truncated: true });
    expect(await find('alpha', 3)).toEqual({ ids: ['s1'], total: 1, truncated: false });
  });
}

describe('memory thread store', () => {
  threadRules(() => new MemoryThreadStore());
  threadSearchRules(async () => {
    const journal = new MemoryJournal();
    return { journal, threads: new MemoryThreadStore(undefined, (search) => journal.threadsMatching(search)) };
  });
});

eachBackend('thread store contract', (backend) => {
  threadRules(async () => (await backend.place().open()).threads);
  threadSearchRules(async () => backend.place().open());

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
