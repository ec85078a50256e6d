import { describe, expect, it } from 'vitest';
import { loadOrganismFromString } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { tickThreadId } from '../../src/organism/schedules.js';
import { MemoryJournal, MemoryThreadStore, MemoryUsageStore } from '../../src/store/index.js';
import { MemoryScheduleStore } from '../../src/store/memory/schedules.js';
import { CONFIG_PATH } from '../config/helpers.js';

const YAML = `organism: {name: orphans}
listeners:
  - name: shout
    handler: ./tools.ts#uppercase
    payload: Announcement
schedules:
  - {name: hourly, every: 1h, to: shout, payload: {text: tick}}
`;

/** The messages injected into a thread (its replies aside). */
async function injections(journal: MemoryJournal, threadId: string): Promise<number> {
  return (await journal.list({ threadId, limit: 100, offset: 0 })).items.filter((e) => e.message.from === 'api').length;
}

async function until<T>(fn: () => Promise<T | null | undefined | false>, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A tick whose process stopped between claiming it and settling it (killed while injecting) is
 * taken over at the next start: injected once if its thread shows no message, only recorded if
 * the inject had happened.
 */
describe('schedule ticks left unsettled by a stopped process', () => {
  it('a tick claimed but never injected is injected at start, into its own thread, once', async () => {
    const schedules = new MemoryScheduleStore();
    const journal = new MemoryJournal();
    const tickAt = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    await schedules.cursor('hourly', tickAt - 3_600_000);
    await schedules.claim({ schedule: 'hourly', tickAt, claimedAt: Date.now() - 120_000, late: false, outcome: null });
    const org = new Organism(await loadOrganismFromString(YAML, CONFIG_PATH), {
      storage: { journal, threads: new MemoryThreadStore(), usage: new MemoryUsageStore(), schedules, close() {} },
    });
    await org.start();
    try {
      const tick = await until(async () => (await schedules.ticks('hourly', 10)).find((t) => t.tickAt === tickAt && t.outcome === 'fired'), 'the orphan to fire');
      expect(tick.threadId).toBe(tickThreadId('hourly', tickAt));
      expect(await injections(journal, tick.threadId!)).toBe(1);
    } finally {
      await org.stop();
    }
  });

  it('a tick whose inject had happened is only recorded fired: no second thread', async () => {
    const schedules = new MemoryScheduleStore();
    const journal = new MemoryJournal();
    const tickAt = Math.floor(Date.now() / 3_600_000) * 3_600_000;
    await schedules.cursor('hourly', tickAt - 3_600_000);
    await schedules.claim({ schedule: 'hourly', tickAt, claimedAt: Date.now() - 120_000, late: false, outcome: null });
    const loaded = await loadOrganismFromString(YAML, CONFIG_PATH);
    // The stopped process had injected it: its message is in the journal.
    const before = new Organism(loaded, { storage: { journal, threads: new MemoryThreadStore(), usage: new MemoryUsageStore(), close() {} } });
    await before.start();
    await before.inject('shout', { text: 'tick' }, { threadId: tickThreadId('hourly', tickAt) });
    await before.stop();
    const org = new Organism(loaded, { storage: { journal, threads: new MemoryThreadStore(), usage: new MemoryUsageStore(), schedules, close() {} } });
    await org.start();
    try {
      await until(async () => (await schedules.ticks('hourly', 10)).find((t) => t.tickAt === tickAt && t.outcome === 'fired'), 'the orphan to be recorded');
      expect(await injections(journal, tickThreadId('hourly', tickAt))).toBe(1);
    } finally {
      await org.stop();
    }
  });
});
