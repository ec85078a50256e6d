import Database from 'better-sqlite3';
import fc from 'fast-check';
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Message } from '../../src/core/message.js';
import { DATABASE_FILE, MemoryJournal, openSqliteStorage, type SqliteStorage } from '../../src/store/index.js';
import type { Journal } from '../../src/core/journal.js';
import { newId } from '../../src/util/ids.js';

/**
 * /metrics reads the journal's entries per state from counts kept as entries move (no scan on
 * a scrape). Whatever the order of transitions, they must equal a count of the rows (asserted
 * on SQLite and PostgreSQL by test/store/contract/counts.contract.test.ts; the memory journal here).
 */
const opened: SqliteStorage[] = [];
afterEach(() => {
  while (opened.length) opened.pop()!.close();
});
const DAY = 86_400_000;

function msg(): Message {
  return { id: newId(), threadId: 't', from: 'a', to: 'b', payloadType: 'Text', payload: {}, timestamp: Date.now(), parentId: null, hops: 0, metadata: {}, attempt: 1 };
}

type Op = 'add' | 'dispatch' | 'ack' | 'fail' | 'ackUnjournaled' | 'failUnjournaled' | 'redeliver' | 'prune' | 'reopen';
const op = fc.constantFrom<Op>('add', 'add', 'dispatch', 'ack', 'fail', 'ackUnjournaled', 'failUnjournaled', 'redeliver', 'prune', 'reopen');

/** Applies one operation to a random entry (by index into what was journaled). */
async function apply(journal: Journal, known: Message[], o: Op, pick: number, clock: { t: number }): Promise<void> {
  const m = known.length ? known[pick % known.length]! : null;
  switch (o) {
    case 'add': {
      const fresh = msg();
      known.push(fresh);
      return journal.pending([fresh]);
    }
    case 'dispatch':
      return m ? journal.dispatched(m) : undefined;
    case 'ack':
      return m ? journal.acked(m, [], []) : undefined;
    case 'fail':
      return m ? journal.failed(m, 'handler_error', 'boom', [], []) : undefined;
    case 'ackUnjournaled': {
      const fresh = msg();
      known.push(fresh);
      return journal.acked(fresh, [msg()], []);
    }
    case 'failUnjournaled': {
      const fresh = msg();
      known.push(fresh);
      return journal.failed(fresh, 'killed', 'gone', [], []);
    }
    case 'redeliver':
      if (m) await journal.redeliver(m.id).catch(() => {});
      return;
    case 'prune':
      clock.t += 3 * DAY;
      if ('prune' in journal) await (journal as unknown as { prune(now: number): Promise<number> }).prune(Date.now() + clock.t);
      return;
    case 'reopen':
      return;
  }
}

describe('kept journal counts', () => {
  it('memory journal: equal a count of its entries, including evicted ones', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.tuple(op, fc.nat(50)), { minLength: 1, maxLength: 60 }), async (steps) => {
        const journal = new MemoryJournal(8);
        const known: Message[] = [];
        for (const [o, pick] of steps) await apply(journal, known, o, pick, { t: 0 });
        const kept = await journal.keptStats();
        const stats = await journal.stats();
        expect(kept.counts).toEqual(stats.counts);
        expect(kept.oldestPendingAgeMs === null).toBe(stats.counts.PENDING === 0);
      }),
      { numRuns: 50 },
    );
  });

  it('SQLite: the oldest PENDING age is found by the state index, not a scan', () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'organism-kept-'));
    const s = openSqliteStorage({ dataDir });
    opened.push(s);
    const db = new Database(path.join(dataDir, DATABASE_FILE), { readonly: true });
    try {
      const plan = db.prepare(`EXPLAIN QUERY PLAN SELECT created_at AS t FROM journal INDEXED BY journal_state WHERE state = 'PENDING' ORDER BY seq LIMIT 1`).all() as Array<{
        detail: string;
      }>;
      expect(plan.map((p) => p.detail).join('\n')).toMatch(/SEARCH journal USING INDEX journal_state \(state=\?\)/);
      expect(plan.map((p) => p.detail).join('\n')).not.toMatch(/TEMP B-TREE/);
    } finally {
      db.close();
    }
  });
});
