import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BoundedMap } from '../../src/store/memory/bounded-map.js';
import { MemoryJournal } from '../../src/store/index.js';
import type { Message } from '../../src/core/message.js';

interface Item {
  readonly done: boolean;
}

describe('BoundedMap', () => {
  it('matches a plain model: at most max entries while finished ones remain, unfinished never dropped, the longest-finished dropped first', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 8 }), fc.array(fc.tuple(fc.integer({ min: 0, max: 15 }), fc.boolean()), { maxLength: 200 }), (max, writes) => {
        const map = new BoundedMap<Item>(max, (v) => v.done);
        // The model: entries with the time each last became finished.
        const model = new Map<string, { item: Item; finishedAt: number | null }>();
        let clock = 0;
        for (const [key, done] of writes) {
          const id = `k${key}`;
          const item = { done };
          map.set(id, item);
          model.set(id, { item, finishedAt: done ? ++clock : null });
          while (model.size > max) {
            let oldest: string | null = null;
            for (const [k, v] of model) if (v.finishedAt !== null && (oldest === null || v.finishedAt < model.get(oldest)!.finishedAt!)) oldest = k;
            if (oldest === null) break;
            model.delete(oldest);
          }
          expect([...map.entries.keys()].sort()).toEqual([...model.keys()].sort());
        }
      }),
    );
  });

  it('an entry changed in place is dropped only once it has finished', () => {
    const map = new BoundedMap<{ done: boolean }>(1, (v) => v.done);
    const a = { done: false };
    map.set('a', a);
    map.set('b', { done: false });
    expect(map.size).toBe(2); // nothing finished: over the bound rather than drop live work
    a.done = true;
    map.finished('a', a);
    expect([...map.entries.keys()]).toEqual(['b']);
  });

  it('keeps its queue bounded when entries are rewritten many times without eviction', () => {
    const map = new BoundedMap<Item>(10, (v) => v.done);
    for (let i = 0; i < 100_000; i++) map.set(`k${i % 5}`, { done: true });
    expect(map.size).toBe(5);
    expect((map as unknown as { queue: unknown[] }).queue.length).toBeLessThan(2 * 10 + 1_100);
  });
});

describe('MemoryJournal bound', () => {
  const msg = (i: number): Message => ({
    id: `m${i}`,
    threadId: `t${i}`,
    from: 'api',
    to: 'a',
    payloadType: 'Text',
    payload: {},
    timestamp: 0,
    parentId: null,
    hops: 0,
    metadata: {},
    attempt: 1,
  });

  it('holds the newest finished entries and every unfinished one, whatever the volume', async () => {
    const journal = new MemoryJournal(1_000);
    for (let i = 0; i < 20_000; i++) {
      journal.pending([msg(i)]);
      if (i % 10 !== 0) journal.acked(msg(i), []);
    }
    const stats = await journal.stats();
    expect(stats.counts.PENDING).toBe(2_000); // never dropped, even past the bound
    expect(stats.counts.ACKED).toBe(0);
    const fresh = new MemoryJournal(1_000);
    for (let i = 0; i < 20_000; i++) {
      fresh.pending([msg(i)]);
      fresh.acked(msg(i), []);
    }
    const page = await fresh.list({ limit: 1, offset: 0 });
    expect(page.total).toBe(1_000);
    expect(page.items[0]!.message.id).toBe('m19999');
    expect(await fresh.get('m18999')).toBeNull();
    expect(await fresh.get('m19000')).not.toBeNull();
  });
});
