import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Organism, OrganismOptions } from '../../src/organism/organism.js';
import { openSqliteStorage } from '../../src/store/index.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';
import { listener, mockProvider, settled, startOrganism } from '../pump/harness.js';

/**
 * Issue 23, item 2: an LLM reply holding text no store keeps (a NUL, a lone surrogate) fails
 * its delivery once with a reason naming the field, on both stores, and the agent goes on:
 * before, the payload reached the journal as given (a NUL in text that PostgreSQL cannot keep
 * raw wedged an ack; SQLite kept a replacement character instead of the lone surrogate).
 */

const stores: Array<{ name: string; open(): Promise<{ storage: NonNullable<OrganismOptions['storage']>; drop(): Promise<void> }> }> = [
  {
    name: 'sqlite',
    open: async () => ({ storage: openSqliteStorage({ dataDir: mkdtempSync(path.join(os.tmpdir(), 'organism-reply-')) }), drop: async () => {} }),
  },
];
if (withPostgres('unstorable LLM replies')) {
  stores.push({
    name: 'postgres',
    open: async () => {
      const db = await createTestDatabase();
      return { storage: await openPostgresStorage({ url: db.url, cluster: { maxAttempts: 3 } }), drop: () => db.drop() };
    },
  });
}

const running: Array<{ organism: Organism; drop(): Promise<void> }> = [];
afterEach(async () => {
  for (const r of running.splice(0)) {
    await r.organism.stop({ timeoutMs: 2_000 });
    await r.drop();
  }
});

describe.each(stores)('an LLM reply with text no store keeps ($name)', (store) => {
  it.each([
    ['a NUL', 'a\u0000b', /payload\.text contains a NUL character \(U\+0000\)/],
    ['a lone surrogate', 'a\uD800b', /payload\.text contains a lone UTF-16 surrogate \(U\+D800\)/],
  ])(
    'with %s fails that delivery once (invalid_result naming the field); the next delivery of the agent runs',
    async (_, bad, reason) => {
      const got: unknown[] = [];
      const { storage, drop } = await store.open();
      const { organism } = await startOrganism(
        [listener('writer', { handler: null, agent: true, peers: ['sink'], prompt: 'p', model: 'mock-small' }), listener('sink', { handler: (p) => void got.push(p) })],
        {
          maxConcurrentPerAgent: 1,
          llm: { providers: [mockProvider({ writer: [`<send to="sink"><Text><text>${bad}</text></Text></send>`] })], pricing: {} },
        },
        { storage },
      );
      running.push({ organism, drop });
      const first = await organism.inject('writer', { text: 'go' });
      const t1 = await settled(organism, first.threadId);
      expect(t1.status).toBe('error');
      const entry = await organism.storage.journal.get(first.messageId);
      expect(entry).toMatchObject({ state: 'FAILED', failureReason: 'invalid_result', attempts: 1 });
      expect(entry!.error).toMatch(reason);
      expect(t1.error).toMatch(reason);
      // The agent's one slot was freed: the next delivery runs (and fails the same way, once).
      const second = await organism.inject('writer', { text: 'again' });
      expect((await settled(organism, second.threadId)).status).toBe('error');
      expect(got).toEqual([]);
    },
    60_000,
  );
});
