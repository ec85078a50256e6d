import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Organism } from '../../src/organism/organism.js';
import { EXTERNAL_SENDER, type Message } from '../../src/core/message.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { newId } from '../../src/util/ids.js';
import { listener, loaded, settled } from './harness.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function message(threadId: string, from: string, to: string, parent: Message | null): Message {
  return {
    id: newId(),
    threadId,
    from,
    to,
    payloadType: 'Text',
    payload: { text: `${from} to ${to}` },
    timestamp: Date.now(),
    parentId: parent?.id ?? null,
    hops: parent ? parent.hops + 1 : 0,
    metadata: {},
    attempt: 1,
    traceContext: null,
  };
}

describe('a thread recovered after a crash', () => {
  /**
   * The state a kill -9 leaves when it lands between a delivery's FAILED commit and the thread
   * record's write (which follows the journal): the thread stored active without its error,
   * a sibling of the failed delivery still PENDING.
   */
  function crashedWithAFailure(dataDir: string, threadId: string): void {
    const storage = openSqliteStorage({ dataDir });
    try {
      const root = message(threadId, 'client', 'a', null);
      const failing = message(threadId, 'a', 'b', root);
      const sibling = message(threadId, 'a', 'c', root);
      storage.journal.pending([root]);
      storage.journal.dispatched(root);
      storage.journal.acked(root, [failing, sibling], []);
      storage.journal.dispatched(failing);
      storage.journal.failed(failing, 'handler_error', 'b broke', [], []);
      storage.threads.put({
        id: threadId,
        status: 'active',
        participants: ['a', 'b', 'c'],
        messageCount: 3,
        createdAt: root.timestamp,
        lastActivity: root.timestamp,
        error: null,
        metadata: {},
      });
    } finally {
      storage.close();
    }
  }

  const listeners = () => [listener('a', { peers: ['b', 'c'] }), listener('b'), listener('c')];

  it('ends in error when one of its deliveries FAILED before the crash, though the rest completes after it', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-recovered-failure-'));
    dirs.push(dataDir);
    const threadId = newId();
    crashedWithAFailure(dataDir, threadId);

    const storage = openSqliteStorage({ dataDir });
    const organism = new Organism(loaded(listeners()), { storage });
    await organism.start();
    try {
      const thread = await settled(organism, threadId);
      expect(thread.status).toBe('error');
      expect(thread.error).toContain('b broke');
      const entries = (await storage.journal.list({ threadId, limit: 10, offset: 0 })).items;
      expect(
        entries
          .filter((e) => e.state === 'ACKED')
          .map((e) => e.message.to)
          .sort(),
      ).toEqual(['a', 'c']);
    } finally {
      await organism.stop({ timeoutMs: 1_000 });
      storage.close();
    }
  });

  it('ends in error when nothing of it was left to deliver (an orphan active record)', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-recovered-orphan-'));
    dirs.push(dataDir);
    const threadId = newId();
    crashedWithAFailure(dataDir, threadId);
    // The sibling was delivered before the crash too: nothing of the thread is recovered.
    const pre = openSqliteStorage({ dataDir });
    try {
      const sibling = (await pre.journal.list({ threadId, state: 'PENDING', limit: 10, offset: 0 })).items[0]!.message;
      pre.journal.dispatched(sibling);
      pre.journal.acked(sibling, [], []);
    } finally {
      pre.close();
    }

    const storage = openSqliteStorage({ dataDir });
    const organism = new Organism(loaded(listeners()), { storage });
    await organism.start();
    try {
      const thread = await settled(organism, threadId);
      expect(thread.status).toBe('error');
    } finally {
      await organism.stop({ timeoutMs: 1_000 });
      storage.close();
    }
  });

  it('ends in error when all that is left is the failure notice to the caller (it settles the thread at once)', async () => {
    for (const storedError of [null, 'a broke']) {
      const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-recovered-notice-'));
      dirs.push(dataDir);
      const threadId = newId();
      const pre = openSqliteStorage({ dataDir });
      try {
        const root = message(threadId, EXTERNAL_SENDER, 'a', null);
        const notice = message(threadId, 'system.pump', EXTERNAL_SENDER, root);
        pre.journal.pending([root]);
        pre.journal.dispatched(root);
        pre.journal.failed(root, 'handler_error', 'a broke', [notice], []);
        pre.threads.put({ id: threadId, status: 'active', participants: ['a'], messageCount: 1, createdAt: root.timestamp, lastActivity: root.timestamp, error: storedError, metadata: {} });
      } finally {
        pre.close();
      }
      const storage = openSqliteStorage({ dataDir });
      const organism = new Organism(loaded(listeners()), { storage });
      await organism.start();
      try {
        const thread = await settled(organism, threadId);
        expect(thread.status).toBe('error');
        // As stored, too (the thread store answers its reads after pending writes).
        expect((await storage.threads.get(threadId))?.status).toBe('error');
      } finally {
        await organism.stop({ timeoutMs: 1_000 });
        storage.close();
      }
    }
  });

  it('a later inject into a thread that failed starts afresh: a failure before it does not count', async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-recovered-reinject-'));
    dirs.push(dataDir);
    const threadId = newId();
    const storage0 = openSqliteStorage({ dataDir });
    try {
      const root = message(threadId, 'client', 'a', null);
      const failing = message(threadId, 'a', 'b', root);
      storage0.journal.pending([root]);
      storage0.journal.dispatched(root);
      storage0.journal.acked(root, [failing], []);
      storage0.journal.dispatched(failing);
      storage0.journal.failed(failing, 'handler_error', 'b broke', [], []);
      // Then a new inject into the same thread, interrupted by the crash.
      const again = message(threadId, 'client', 'c', null);
      storage0.journal.pending([again]);
      storage0.threads.put({
        id: threadId,
        status: 'active',
        participants: ['a', 'b', 'c'],
        messageCount: 3,
        createdAt: root.timestamp,
        lastActivity: root.timestamp,
        error: null,
        metadata: {},
      });
    } finally {
      storage0.close();
    }
    const storage = openSqliteStorage({ dataDir });
    const organism = new Organism(loaded(listeners()), { storage });
    await organism.start();
    try {
      expect((await settled(organism, threadId)).status).toBe('completed');
    } finally {
      await organism.stop({ timeoutMs: 1_000 });
      storage.close();
    }
  });
});
