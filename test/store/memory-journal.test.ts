import { describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/message.js';
import { MemoryJournal } from '../../src/store/memory/journal.js';
import { newId } from '../../src/util/ids.js';

const msg = (threadId: string): Message => ({
  id: newId(),
  threadId,
  from: 'api',
  to: 'a',
  payloadType: 'Text',
  payload: { text: 'x' },
  timestamp: Date.now(),
  parentId: null,
  hops: 0,
  metadata: {},
  attempt: 1,
});

// The stores' contract suite runs SQLite and PostgreSQL; the in-memory journal answers the same.
describe('MemoryJournal.failedThreads', () => {
  it('names the threads among those asked with an entry FAILED other than by a kill', async () => {
    const journal = new MemoryJournal();
    const [failed, killed, acked, retried] = ['t-failed', 't-killed', 't-acked', 't-retried'].map(msg);
    await journal.pending([failed!, killed!, acked!, retried!]);
    await journal.failed(failed!, 'handler_error', 'boom', [], []);
    await journal.failed(killed!, 'killed', 'gone', [], []);
    await journal.acked(acked!, [], []);
    await journal.failed(retried!, 'timeout', 'slow', [], []);
    await journal.redeliver(retried!.id);
    expect([...(await journal.failedThreads(['t-failed', 't-killed', 't-acked', 't-retried', 't-none']))]).toEqual(['t-failed']);
    expect([...(await journal.failedThreads(['t-killed']))]).toEqual([]);
  });
});
