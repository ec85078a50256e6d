import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { OrganismEvent } from '../../src/events/types.js';
import type { ClusterCommand, ClusterHandlers } from '../../src/cluster/link.js';
import { PgClusterLink } from '../../src/cluster/bus/cluster-link.js';
import { coalesceDeltas, MAX_INLINE_BODY } from '../../src/cluster/bus/event-publisher.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { createTestDatabase, withPostgres, testPool } from '../store/contract/backends.js';

const run = withPostgres('cluster link');

/** What one link heard. */
class Ear implements ClusterHandlers {
  readonly events: Array<{ event: OrganismEvent; origin: string }> = [];
  readonly commands: Array<{ command: ClusterCommand; origin: string }> = [];
  resyncs = 0;
  event(event: OrganismEvent, origin: string) {
    this.events.push({ event, origin });
  }
  command(command: ClusterCommand, origin: string) {
    this.commands.push({ command, origin });
  }
  resync() {
    this.resyncs++;
  }
}

async function until(check: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

const delta = (callId: string, text: string): OrganismEvent => ({ type: 'llm_delta', threadId: 't', messageId: 'm', agent: 'a', callId, text });
const state = (agent: string, currentThread: string | null = null): OrganismEvent => ({ type: 'agent_state', agent, state: 'processing', currentThread });

describe('event coalescing', () => {
  it("joins one call's deltas at the place of its first and keeps everything else in order", () => {
    const out = coalesceDeltas([delta('c1', 'a'), state('x'), delta('c2', 'A'), delta('c1', 'b'), state('y'), delta('c1', 'c'), delta('c2', 'B')]);
    expect(out).toEqual([delta('c1', 'abc'), state('x'), delta('c2', 'AB'), state('y')]);
  });
});

describe.skipIf(!run)('PostgreSQL cluster link', () => {
  let db: { url: string; drop(): Promise<void> };
  let admin: pg.Pool;
  const links: PgClusterLink[] = [];
  const link = async (origin: string, hearEvents = true) => {
    const l = PgClusterLink.create({ url: db.url, origin, hearEvents });
    const ear = new Ear();
    await l.start(ear);
    links.push(l);
    return { link: l, ear };
  };

  beforeAll(async () => {
    db = await createTestDatabase();
    admin = testPool({ connectionString: db.url, max: 2 });
    await (await openPostgresStorage({ url: db.url })).close(); // the schema
  });
  afterEach(async () => {
    await Promise.all(links.splice(0).map((l) => l.close()));
  });
  afterAll(async () => {
    await admin.end();
    await db.drop();
  });

  it("one process's events reach another once each, in order, and never come back to it; large ones too", async () => {
    const a = await link('A');
    const b = await link('B');
    const big = 'x'.repeat(MAX_INLINE_BODY + 100);
    const sent: OrganismEvent[] = [];
    for (let i = 0; i < 1_000; i++) {
      const e: OrganismEvent = i % 250 === 7 ? state(`big-${i}`, big) : state(`agent-${i}`);
      sent.push(e);
      a.link.publishEvent(e);
      if (i % 100 === 0) await new Promise((r) => setImmediate(r)); // several batches
    }
    await until(() => b.ear.events.length >= sent.length, 'every event at B');
    await a.link.flush();
    await new Promise((r) => setTimeout(r, 200)); // a repeat or an echo would have come by now
    expect(b.ear.events.map((e) => e.event)).toEqual(sent);
    expect(new Set(b.ear.events.map((e) => e.origin))).toEqual(new Set(['A']));
    expect(a.ear.events).toEqual([]);
    expect(a.link.stats().batches).toBeGreaterThan(1);
    const stored = await admin.query<{ n: number }>('SELECT count(*)::int AS n FROM event_bodies');
    expect(stored.rows[0]!.n).toBe(4); // the four large ones, by reference
  });

  it('events of several processes each arrive in their own order', async () => {
    const a = await link('A');
    const b = await link('B');
    const c = await link('C');
    for (let i = 0; i < 300; i++) {
      a.link.publishEvent(state(`a${i}`));
      b.link.publishEvent(state(`b${i}`));
    }
    await until(() => c.ear.events.length >= 600, 'both origins at C');
    const from = (o: string) => c.ear.events.filter((e) => e.origin === o).map((e) => (e.event as { agent: string }).agent);
    expect(from('A')).toEqual(Array.from({ length: 300 }, (_, i) => `a${i}`));
    expect(from('B')).toEqual(Array.from({ length: 300 }, (_, i) => `b${i}`));
    expect(a.ear.events.every((e) => e.origin === 'B')).toBe(true);
  });

  it('a process that does not serve live views hears commands but no events', async () => {
    const a = await link('A');
    const worker = await link('W', false);
    a.link.publishEvent(state('x'));
    await a.link.publishCommand({ kind: 'kill', threadId: 't1' });
    await until(() => worker.ear.commands.length === 1, 'the command at the worker');
    expect(worker.ear.commands).toEqual([{ command: { kind: 'kill', threadId: 't1' }, origin: 'A' }]);
    expect(worker.ear.events).toEqual([]);
    expect(a.ear.commands).toEqual([]); // not its own
  });

  it('a reload stores the configuration and tells the others in one go', async () => {
    const a = await link('A');
    const b = await link('B');
    await a.link.publishConfig({ hash: 'h1', text: '{"name":"x"}' });
    await until(() => b.ear.commands.length === 1, 'the reload at B');
    expect(b.ear.commands[0]!.command).toEqual({ kind: 'reload', configHash: 'h1' });
    expect(await b.link.storedConfig()).toEqual({ hash: 'h1', text: '{"name":"x"}' });
  });

  it('after its LISTEN connection is cut a process is told to resync, and hears again', async () => {
    const a = await link('A');
    const b = await link('B');
    await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'organism-listen' AND datname = current_database()`);
    await until(() => b.ear.resyncs >= 1 && a.ear.resyncs >= 1, 'both links back');
    a.link.publishEvent(state('after'));
    await a.link.publishCommand({ kind: 'paused', agent: 'w', paused: true });
    await until(() => b.ear.events.length === 1 && b.ear.commands.length === 1, 'B hearing again');
    expect(b.ear.events[0]!.event).toEqual(state('after'));
  });
});
