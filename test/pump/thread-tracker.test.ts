import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/events/bus.js';
import type { OrganismEvent } from '../../src/events/types.js';
import { ThreadTracker } from '../../src/pump/thread-tracker.js';
import { MemoryThreadStore } from '../../src/store/memory/threads.js';
import type { ThreadRecord } from '../../src/core/thread.js';

class CountingStore extends MemoryThreadStore {
  puts: ThreadRecord[] = [];
  override put(thread: ThreadRecord): void {
    this.puts.push(thread);
    super.put(thread);
  }
}

const stored = (over: Partial<ThreadRecord> = {}): ThreadRecord => ({
  id: 't1',
  status: 'active',
  participants: ['api', 'a'],
  messageCount: 3,
  createdAt: 1,
  lastActivity: 2,
  error: null,
  metadata: { orgId: 'o' },
  ...over,
});

function setup() {
  const store = new CountingStore();
  const bus = new EventBus(() => {});
  const events: OrganismEvent[] = [];
  bus.on((e) => events.push(e));
  return { store, events, tracker: new ThreadTracker(store, bus) };
}

describe('ThreadTracker.activate', () => {
  it('a new thread is written and announced as created', () => {
    const { store, events, tracker } = setup();
    tracker.activate('t1', 10, { orgId: 'o' }, null);
    expect(store.puts).toHaveLength(1);
    expect(events.map((e) => e.type)).toEqual(['thread_created']);
  });

  it('a thread stored active with the same metadata (recovered at boot) is announced but not rewritten', () => {
    const { store, events, tracker } = setup();
    const thread = tracker.activate('t1', 10, { orgId: 'o' }, stored());
    expect(store.puts).toHaveLength(0);
    expect(events.map((e) => e.type)).toEqual(['thread_updated']);
    expect(thread).toMatchObject({ status: 'active', messageCount: 3, participants: ['api', 'a'], lastActivity: 10 });
  });

  it('a finished, failed or re-labelled stored thread is rewritten as active', () => {
    for (const [record, metadata] of [
      [stored({ status: 'completed' }), { orgId: 'o' }],
      [stored({ error: 'boom' }), { orgId: 'o' }],
      [stored(), { orgId: 'o', userId: 'u' }],
    ] as const) {
      const { store, tracker } = setup();
      tracker.activate('t1', 10, metadata, record);
      expect(store.puts).toEqual([expect.objectContaining({ id: 't1', status: 'active', error: null, lastActivity: 10 })]);
    }
  });
});
