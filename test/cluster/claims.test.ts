import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { channelsFor } from '../../src/cluster/bus/channels.js';
import type { PgClusterJournal } from '../../src/cluster/queue/cluster-journal.js';
import { openPostgresStorage, type PostgresStorage, type ClusterStorageOptions } from '../../src/store/postgres/index.js';
import { createTestDatabase, withPostgres, testPool } from '../store/contract/backends.js';
import { message, usageOf } from './entries.js';

/**
 * Claims on the cluster-mode PostgreSQL journal, with several processes' pools claiming at once
 * (each storage is what one process opens: its own pool, LISTEN connection and workers row).
 */
const run = withPostgres('cluster-mode claims');
const NO_OUTCOME = { outgoing: [], usage: [], threadError: null } as const;

describe.skipIf(!run)('cluster-mode PostgreSQL journal: claims, leases, fenced outcomes', () => {
  let db: { url: string; drop(): Promise<void> };
  let admin: pg.Pool;
  let schema = '';
  const opened: PostgresStorage[] = [];

  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterEach(async () => {
    while (opened.length)
      await opened
        .pop()!
        .close()
        .catch(() => {});
    await admin?.end();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** A fresh schema per test; `open` opens one more process on it. */
  const place = () => {
    schema = `s_${randomBytes(5).toString('hex')}`;
    admin = testPool({ connectionString: db.url, max: 2, options: `-c search_path=${schema}` });
  };
  const open = async (cluster: ClusterStorageOptions = {}) => {
    const s = await openPostgresStorage({ url: db.url, schema, cluster: { maxAttempts: 3, ...cluster } });
    opened.push(s);
    return s;
  };
  const rows = async <T = Record<string, unknown>>(sql: string, params: unknown[] = []) => (await admin.query(sql, params)).rows as T[];

  it('keeps FIFO per (thread, recipient) while three processes claim concurrently, and finishes each thread once its last entry is acked', async () => {
    place();
    const procs = [await open(), await open(), await open()];
    const threads = Array.from({ length: 6 }, (_, i) => `t${i}`);
    const sent = new Map<string, string[]>();
    for (const t of threads) {
      for (const to of ['a', 'b']) {
        const batch = Array.from({ length: 5 }, (_, k) => message(t, to, `${t}-${to}-${k}`));
        sent.set(
          `${t}/${to}`,
          batch.map((m) => m.id),
        );
        await procs[0]!.journal.pending(batch);
      }
    }
    const delivered = new Map<string, string[]>();
    const held = new Set<string>();
    let violation: string | null = null;
    const total = threads.length * 2 * 5;
    let done = 0;
    await Promise.all(
      procs.map(async (p) => {
        while (done < total) {
          const work = await p.work!.claim(['a', 'b'], 4, { global: 100, perAgent: 100 });
          if (work.length === 0) {
            await new Promise((r) => setTimeout(r, 5));
            continue;
          }
          await Promise.all(
            work.map(async ({ message: m }) => {
              const pair = `${m.threadId}/${m.to}`;
              if (held.has(pair)) violation ??= `two deliveries of ${pair} at once`;
              held.add(pair);
              const list = delivered.get(pair) ?? [];
              list.push(m.id);
              delivered.set(pair, list);
              await new Promise((r) => setTimeout(r, Math.random() * 4));
              held.delete(pair);
              const r = await p.work!.ack(m, NO_OUTCOME);
              expect(r.committed).toBe(true);
              done++;
            }),
          );
        }
      }),
    );
    expect(violation).toBeNull();
    for (const [pair, ids] of sent) expect(delivered.get(pair)).toEqual(ids);
    const states = await rows<{ state: string; n: number }>(`SELECT state, COUNT(*)::int AS n FROM journal GROUP BY state`);
    expect(states).toEqual([{ state: 'ACKED', n: total }]);
    const statuses = await rows<{ status: string; message_count: number }>(`SELECT status, message_count FROM threads ORDER BY id`);
    expect(statuses).toEqual(threads.map(() => ({ status: 'completed', message_count: 10 })));
    // The kept counts followed the claims made outside the writer: each a sum of slots.
    const sums = `SELECT name, SUM(n)::int AS n FROM row_counts WHERE name LIKE 'journal:%' GROUP BY name ORDER BY name`;
    const expected = [
      { name: 'journal:ACKED', n: total },
      { name: 'journal:DISPATCHED', n: 0 },
      { name: 'journal:FAILED', n: 0 },
      { name: 'journal:PENDING', n: 0 },
    ];
    expect(await rows(sums)).toEqual(expected);
    // Each process added to its own slots (writer and claims apart): no row all of them update.
    const ids = procs.map((p) => p.cluster!.workerId);
    const slots = (await rows<{ slot: string }>(`SELECT DISTINCT slot FROM row_counts WHERE name = 'journal:DISPATCHED' AND slot <> ''`)).map((r) => r.slot).sort();
    expect(slots).toEqual(ids.flatMap((id) => [id, `${id}/claim`]).sort());
    // The slots of stopped processes fold into the base; the sums stay.
    await procs[1]!.close();
    await procs[2]!.close();
    await (procs[0]!.journal as unknown as { foldCountSlots(): Promise<void> }).foldCountSlots();
    const left = (await rows<{ slot: string }>(`SELECT DISTINCT slot FROM row_counts`)).map((r) => r.slot).sort();
    expect(left).toEqual(['', ids[0]!, `${ids[0]!}/claim`].sort());
    expect(await rows(sums)).toEqual(expected);
    expect(await rows(`SELECT SUM(n)::int AS n FROM journal_agent_counts`)).toEqual([{ n: 2 * total }]);
  });

  it('never exceeds the organism-wide global and per-agent limits, however many processes claim', async () => {
    place();
    const procs: PostgresStorage[] = [];
    for (let i = 0; i < 8; i++) procs.push(await open());
    const N = 120;
    await procs[0]!.journal.pending(Array.from({ length: N }, (_, t) => message(`t${t}`, t % 2 === 0 ? 'b' : 'a', `m${t}`)));
    let maxHeld = 0;
    let maxA = 0;
    let dbMax = 0;
    let done = 0;
    const heldBy = { a: 0, b: 0 } as Record<string, number>;
    await Promise.all(
      procs.map(async (p, i) => {
        // Processes that run different listeners pick different rows: only the limits keep them apart.
        const listeners = [['a'], ['b'], ['a', 'b']][i % 3]!;
        while (done < N) {
          const work = await p.work!.claim(listeners, 10, { global: 3, perAgent: 2 });
          for (const w of work) heldBy[w.message.to]!++;
          maxHeld = Math.max(maxHeld, heldBy['a']! + heldBy['b']!);
          maxA = Math.max(maxA, heldBy['a']!);
          const n = (await rows<{ n: number }>(`SELECT COUNT(*)::int AS n FROM journal WHERE state = 'DISPATCHED'`))[0]!.n;
          dbMax = Math.max(dbMax, n);
          if (work.length === 0) await new Promise((r) => setTimeout(r, Math.random() * 2));
          await Promise.all(
            work.map(async ({ message: m }) => {
              await new Promise((r) => setTimeout(r, Math.random() * 3));
              // Counted free before the ack is sent: the row is free once it commits, which a
              // decrement after the ack's promise resolves would trail (and over-count on a loaded machine).
              heldBy[m.to]!--;
              await p.work!.ack(m, NO_OUTCOME);
              done++;
            }),
          );
        }
      }),
    );
    expect(done).toBe(N);
    expect(maxHeld).toBeLessThanOrEqual(3);
    expect(maxA).toBeLessThanOrEqual(2);
    expect(dbMax).toBeLessThanOrEqual(3);
    expect(maxHeld).toBeGreaterThan(1); // the processes did run deliveries side by side
  });

  it('says whether a limit stopped the claim: a listener at its per-agent room, the global room, the free slots; not when it took everything there was', async () => {
    place();
    const p = await open();
    await p.journal.pending([message('t1', 'a', 'one'), message('t2', 'a', 'two'), message('t3', 'a', 'three'), message('t4', 'b', 'four')]);
    // a has three waiting and room for two: stopped by the per-agent limit.
    const perAgent = await p.work!.claim(['a'], 10, { global: 10, perAgent: 2 });
    expect(perAgent.map((c) => c.message.payload['text'])).toEqual(['one', 'two']);
    expect(perAgent.capped).toBe(true);
    // b's one entry, with room for more: everything there was.
    const all = await p.work!.claim(['b'], 10, { global: 10, perAgent: 10 });
    expect([all.length, all.capped]).toEqual([1, false]);
    // a's third, with one free slot: stopped by the slots, though it was the last one.
    const slots = await p.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    expect([slots.length, slots.capped]).toEqual([1, true]);
    // Nothing left, room everywhere.
    const none = await p.work!.claim(['a', 'b'], 10, { global: 10, perAgent: 10 });
    expect([none.length, none.capped]).toEqual([0, false]);
    // The global limit full (four DISPATCHED): no room to look with.
    await p.journal.pending([message('t5', 'a', 'five')]);
    const global = await p.work!.claim(['a'], 10, { global: 4, perAgent: 10 });
    expect([global.length, global.capped]).toEqual([0, true]);
    // A listener without room (a's three DISPATCHED, per-agent 3): its backlog was not looked at.
    const full = await p.work!.claim(['a'], 10, { global: 10, perAgent: 3 });
    expect([full.length, full.capped]).toEqual([0, true]);
  });

  it("counts against the limits the handlers the claimer says it runs, not its DISPATCHED entries, and every other process's DISPATCHED entries", async () => {
    place();
    const [p, q] = [await open(), await open()];
    await p.journal.pending(['one', 'two', 'three', 'four', 'five'].map((text, i) => message(`t${i}`, 'a', text)));
    const limits = { global: 10, perAgent: 1 };
    // Without a count of its own, p's DISPATCHED entries count: its handler still runs, the listener is full.
    const [first] = await p.work!.claim(['a'], 10, limits);
    expect(first).toBeDefined();
    expect(await p.work!.claim(['a'], 10, limits)).toHaveLength(0);
    // Its handler ended, the ack not committed yet: p runs none and may start the next. For q the
    // entry is another process's DISPATCHED one, whatever q runs: it counts.
    expect(await q.work!.claim(['a'], 10, { ...limits, running: new Map() })).toHaveLength(0);
    const [second] = await p.work!.claim(['a'], 10, { ...limits, running: new Map() });
    expect(second).toBeDefined();
    // p now runs the second's handler: full again, though p holds two entries and reads neither.
    expect(await p.work!.claim(['a'], 10, { ...limits, running: new Map([['a', 1]]) })).toHaveLength(0);
    // A handler of another listener counts toward the global limit, not this listener's.
    const elsewhere = { global: 2, perAgent: 10 };
    expect(await p.work!.claim(['a'], 10, { ...elsewhere, running: new Map([['b', 2]]) })).toHaveLength(0);
    const [third] = await p.work!.claim(['a'], 10, { ...elsewhere, running: new Map([['b', 1]]) });
    expect(third).toBeDefined();
    // q's own entry counts for p in all (global 2: q's one and p's running one leave no room).
    const [fourth] = await q.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    expect(fourth).toBeDefined();
    expect(await p.work!.claim(['a'], 10, { global: 2, perAgent: 10, running: new Map([['a', 1]]) })).toHaveLength(0);
    expect(await p.work!.claim(['a'], 10, { global: 3, perAgent: 10, running: new Map([['a', 1]]) })).toHaveLength(1);
    expect(await rows(`SELECT COUNT(*)::int AS n FROM journal WHERE state = 'DISPATCHED'`)).toEqual([{ n: 5 }]);
    // The booked outcomes commit, fenced as ever.
    for (const w of [first!, second!, third!]) expect((await p.work!.ack(w.message, NO_OUTCOME)).committed).toBe(true);
    expect(await rows(`SELECT COUNT(*)::int AS n FROM journal WHERE state = 'ACKED'`)).toEqual([{ n: 3 }]);
  });

  it('skips paused agents (stored, so every process honours it)', async () => {
    place();
    const [p, q] = [await open(), await open()];
    await p.journal.pending([message('t1', 'a', 'x'), message('t2', 'b', 'y')]);
    await p.operator.setPaused('a', true);
    const work = await q.work!.claim(['a', 'b'], 10, { global: 10, perAgent: 10 });
    expect(work.map((w) => w.message.to)).toEqual(['b']);
  });

  it("takes back the claim of a worker whose lease expired with attempt + 1; that worker's late ack is dropped whole (no outgoing message)", async () => {
    place();
    const slow = await open({ leaseMs: 60_000, name: 'slow' });
    const other = await open({ leaseMs: 300, name: 'other' });
    const m = message('t1', 'a', 'hello');
    await other.journal.pending([m]);
    const [claimed] = await slow.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    expect(claimed!.message.attempt).toBe(1);
    // The slow worker stops heartbeating (a pause, a partition): its heartbeat is older than its lease.
    await rows(`UPDATE workers SET heartbeat_at = 0 WHERE name = 'slow'`);
    const again = await waitFor(async () => (await other.work!.claim(['a'], 1, { global: 10, perAgent: 10 }))[0]);
    expect(again.message.id).toBe(m.id);
    expect(again.message.attempt).toBe(2);
    const late = await slow.work!.ack(claimed!.message, { outgoing: [message('t1', 'b', 'late', claimed!.message)], usage: [], threadError: null });
    expect(late).toEqual({ committed: false, threadFinished: null });
    expect(await rows(`SELECT COUNT(*)::int AS n FROM journal WHERE recipient = 'b'`)).toEqual([{ n: 0 }]);
    const ok = await other.work!.ack(again.message, NO_OUTCOME);
    expect(ok).toEqual({ committed: true, threadFinished: 'completed' });
    expect(await rows(`SELECT state, attempt, attempts FROM journal WHERE id = $1`, [m.id])).toEqual([{ state: 'ACKED', attempt: 2, attempts: 2 }]);
    // The attempt taken back is kept (the thread waterfall shows it), with when it was dispatched.
    const entry = (await other.journal.get(m.id))!;
    expect(entry.earlierAttempts).toEqual([
      { attempt: 1, dispatchedAt: expect.any(Number), endedAt: expect.any(Number), outcome: 'interrupted', failureReason: null, error: null, requeuedAt: expect.any(Number) },
    ]);
    expect(entry.dispatchedAt).toBeGreaterThanOrEqual(entry.earlierAttempts[0]!.requeuedAt);
  });

  it("takes a claim back under its listener's retry.max_attempts, which replaces journal.max_attempts for it", async () => {
    place();
    const limits = { default: 1, byListener: { a: 3 } };
    const p = await open({ leaseMs: 60_000, maxAttempts: limits, name: 'dead' });
    const [toA, toB] = [message('t1', 'a', 'kept'), message('t2', 'b', 'doomed')];
    await p.journal.pending([toA, toB]);
    await p.work!.claim(['a', 'b'], 2, { global: 10, perAgent: 10 });
    await rows(`UPDATE workers SET heartbeat_at = 0 WHERE name = 'dead'`);
    await open({ leaseMs: 300, maxAttempts: limits }); // notices at its start
    expect(await rows(`SELECT recipient, state, attempt, error FROM journal ORDER BY recipient`)).toEqual([
      { recipient: 'a', state: 'PENDING', attempt: 2, error: null },
      { recipient: 'b', state: 'FAILED', attempt: 1, error: 'Gave up after the worker holding it stopped or lost its lease 1 time(s) (journal.max_attempts = 1)' },
    ]);
  });

  it('fails a claim taken back past journal.max_attempts, and the thread ends in error', async () => {
    place();
    const p = await open({ leaseMs: 60_000, maxAttempts: 1, name: 'dead' });
    const m = message('t1', 'a', 'doomed');
    await p.journal.pending([m]);
    await p.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    await rows(`UPDATE workers SET heartbeat_at = 0 WHERE name = 'dead'`);
    await open({ leaseMs: 300, maxAttempts: 1 }); // notices at its start
    expect(await rows(`SELECT state, failure_reason FROM journal WHERE id = $1`, [m.id])).toEqual([{ state: 'FAILED', failure_reason: 'max_attempts' }]);
    expect((await rows<{ status: string }>(`SELECT status FROM threads WHERE id = 't1'`))[0]!.status).toBe('error');
  });

  it('a live process gives back a claim it holds in the database but does not run (its commit outlived the connection), once older than a lease', async () => {
    place();
    const p = await open({ leaseMs: 300, name: 'live' });
    const orphan = message('t1', 'a', 'claimed, never delivered');
    const running = message('t2', 'a', 'being delivered');
    await p.journal.pending([orphan, running]);
    await p.work!.claim(['a'], 2, { global: 10, perAgent: 10 });
    // The pump runs only one of them: the other's claim committed but the process never heard.
    p.work!.holding!(() => [running.id]);
    await waitFor(async () => (await rows<{ state: string }>(`SELECT state FROM journal WHERE id = $1 AND state = 'PENDING'`, [orphan.id]))[0]);
    expect(await rows(`SELECT id, state, attempt FROM journal ORDER BY seq`)).toEqual([
      { id: orphan.id, state: 'PENDING', attempt: 2 },
      { id: running.id, state: 'DISPATCHED', attempt: 1 },
    ]);
  });

  it('a process that stops gives back what it still holds with attempt + 1, at once', async () => {
    place();
    const p = await open({ leaseMs: 60_000 });
    const q = await open({ leaseMs: 60_000 });
    const m = message('t1', 'a', 'cut short');
    await p.journal.pending([m]);
    await p.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    await p.close();
    const [w] = await q.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    expect(w!.message).toMatchObject({ id: m.id, attempt: 2 });
    const listed = await q.cluster!.workers.list();
    expect(listed.map((x) => x.alive)).toEqual([true, false]);
  });

  it('a lost worker shows as in flight what it still holds, 0 once taken back; the taking back says from whom', async () => {
    place();
    const taker = await open({ leaseMs: 60_000, name: 'taker' });
    const dead = await open({ leaseMs: 60_000, name: 'dead' });
    await dead.journal.pending([message('t1', 'a', 'one'), message('t2', 'a', 'two')]);
    expect(await dead.work!.claim(['a'], 2, { global: 10, perAgent: 10 })).toHaveLength(2);
    // It falls silent (killed): its heartbeat is older than its lease; nobody has taken its claims back yet.
    await rows(`UPDATE workers SET heartbeat_at = 0 WHERE name = 'dead'`);
    const lost = (await taker.cluster!.workers.list()).find((w) => w.name === 'dead')!;
    expect(lost).toMatchObject({ alive: false, stoppedAt: null, inFlight: 2 });
    const taken = await (taker.journal as PgClusterJournal).reclaimExpired(3);
    expect(taken).toEqual({ retried: 2, failed: 0, from: [{ worker: dead.work!.workerId, name: 'dead', retried: 2, failed: 0 }] });
    expect((await taker.cluster!.workers.list()).find((w) => w.name === 'dead')).toMatchObject({ alive: false, inFlight: 0 });
  });

  it("an operator's redeliver of a FAILED entry wakes the claimers on the work channel (not only their next poll)", async () => {
    place();
    const p = await open();
    const heard: string[] = [];
    const ear = await admin.connect();
    try {
      ear.on('notification', (n) => heard.push(n.payload ?? ''));
      await ear.query(`LISTEN "${channelsFor(schema).work}"`);
      const m = message('t1', 'a', 'again');
      await p.journal.pending([m]);
      // Each payload names the process that committed the work, then the recipients.
      const payload = `${p.work!.workerId}|a`;
      await waitFor(async () => (heard.includes(payload) ? true : undefined));
      const [w] = await p.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
      await p.work!.fail(w!.message, 'handler_error', 'boom', NO_OUTCOME);
      heard.length = 0;
      await p.journal.redeliver(m.id);
      await waitFor(async () => (heard.length > 0 ? true : undefined));
      expect(heard).toEqual([payload]);
    } finally {
      ear.release();
    }
  });

  it('an ack commits its outgoing messages PENDING (an external reply ACKED) with the thread still open, then finishes it', async () => {
    place();
    const p = await open();
    const m = message('t1', 'a', 'q');
    await p.journal.pending([m]);
    const [w] = await p.work!.claim(['a', 'b'], 5, { global: 10, perAgent: 10 });
    const next = message('t1', 'b', 'r', m);
    const reply = { ...message('t1', 'api', 'done', m), from: 'a' };
    expect(await p.work!.ack(w!.message, { outgoing: [next, reply], usage: [], threadError: null })).toEqual({ committed: true, threadFinished: null });
    expect(await rows(`SELECT recipient, state FROM journal ORDER BY seq`)).toEqual([
      { recipient: 'a', state: 'ACKED' },
      { recipient: 'b', state: 'PENDING' },
      { recipient: 'api', state: 'ACKED' },
    ]);
    const [w2] = await p.work!.claim(['a', 'b'], 5, { global: 10, perAgent: 10 });
    expect(await p.work!.fail(w2!.message, 'handler_error', 'boom', NO_OUTCOME)).toEqual({ committed: true, threadFinished: 'error' });
    expect(await rows(`SELECT status, error, participants, message_count FROM threads`)).toEqual([{ status: 'error', error: 'boom', participants: ['api', 'a', 'b'], message_count: 3 }]);
  });

  it('outcomes arriving together commit as one lot: each fenced on its own claim, a thread finished reported once, a bad outcome failing only itself', async () => {
    place();
    const p = await open();
    const first = message('t1', 'a', 'one');
    await p.journal.pending([first, message('t2', 'a', 'two'), message('t3', 'a', 'three'), message('t4', 'a', 'four')]);
    const claimed = await p.work!.claim(['a'], 10, { global: 10, perAgent: 10 });
    expect(claimed.map((c) => c.message.threadId)).toEqual(['t1', 't2', 't3', 't4']);
    const [c1, c2, c3, c4] = claimed.map((c) => c.message);
    // Submitted in one tick: they reach the writer as one lot. c2's claim is not at this attempt
    // any more (fenced out), c4's usage cannot be stored (NaN tokens): the lot fails, and each
    // outcome is tried on its own.
    const results = await Promise.allSettled([
      p.work!.ack(c1!, { outgoing: [message('t1', 'b', 'next', c1!)], usage: [usageOf(c1!, 5)], threadError: null }),
      p.work!.ack({ ...c2!, attempt: c2!.attempt + 1 }, NO_OUTCOME),
      p.work!.fail(c3!, 'handler_error', 'boom', NO_OUTCOME),
      p.work!.ack(c4!, { outgoing: [], usage: [usageOf(c4!, Number.NaN)], threadError: null }),
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected'))).toEqual([
      { committed: true, threadFinished: null },
      { committed: false, threadFinished: null },
      { committed: true, threadFinished: 'error' },
      'rejected',
    ]);
    expect(await rows(`SELECT thread_id, recipient, state FROM journal ORDER BY seq`)).toEqual([
      { thread_id: 't1', recipient: 'a', state: 'ACKED' },
      { thread_id: 't2', recipient: 'a', state: 'DISPATCHED' },
      { thread_id: 't3', recipient: 'a', state: 'FAILED' },
      { thread_id: 't4', recipient: 'a', state: 'DISPATCHED' },
      { thread_id: 't1', recipient: 'b', state: 'PENDING' },
    ]);
    expect(await rows(`SELECT thread_id, prompt_tokens::int AS n FROM usage_events`)).toEqual([{ thread_id: 't1', n: 5 }]);
    // Several outcomes of one thread in a lot: the thread finishes once, on the last of them.
    const [next] = await p.work!.claim(['b'], 10, { global: 10, perAgent: 10 });
    await p.journal.pending([message('t9', 'a', 'x'), message('t9', 'b', 'y')]);
    const nine = await p.work!.claim(['a', 'b'], 10, { global: 10, perAgent: 10 });
    const lot = await Promise.all([p.work!.ack(next!.message, NO_OUTCOME), ...nine.map((c) => p.work!.ack(c.message, NO_OUTCOME))]);
    expect(lot).toEqual([
      { committed: true, threadFinished: 'completed' },
      { committed: true, threadFinished: null },
      { committed: true, threadFinished: 'completed' },
    ]);
    expect(await rows(`SELECT id, status, message_count FROM threads ORDER BY id`)).toEqual([
      { id: 't1', status: 'completed', message_count: 2 },
      { id: 't2', status: 'active', message_count: 1 },
      { id: 't3', status: 'error', message_count: 1 },
      { id: 't4', status: 'active', message_count: 1 },
      { id: 't9', status: 'completed', message_count: 2 },
    ]);
  });

  it('injects arriving together are admitted in order while the organism-wide queue has room, and journaled as one lot', async () => {
    place();
    const p = await open();
    const admitted = await Promise.all([1, 2, 3, 4].map((i) => p.work!.admit([message(`t${i}`, 'a', 'x')], 3)));
    expect(admitted).toEqual([true, true, true, false]);
    expect(await rows(`SELECT thread_id, state FROM journal ORDER BY seq`)).toEqual(['t1', 't2', 't3'].map((thread_id) => ({ thread_id, state: 'PENDING' })));
    expect(await rows(`SELECT SUM(n)::int AS n FROM row_counts WHERE name = 'threads'`)).toEqual([{ n: 3 }]);
  });

  it('two processes creating the same threads at once count every message in, and each thread once', async () => {
    place();
    const [a, b] = [await open(), await open()];
    const ids = Array.from({ length: 30 }, (_, i) => `race${i}`);
    await Promise.all(ids.flatMap((t) => [a.journal.pending([message(t, 'a', 'from a')]), b.journal.pending([message(t, 'b', 'from b')])]));
    const threads = await rows<{ id: string; message_count: number; participants: string[] }>(`SELECT id, message_count, participants FROM threads ORDER BY id`);
    expect(threads.map((t) => t.id)).toEqual([...ids].sort());
    for (const t of threads) {
      expect(t.message_count).toBe(2);
      expect([...t.participants].sort()).toEqual(['a', 'api', 'b']);
    }
    expect(await rows(`SELECT SUM(n)::int AS n FROM row_counts WHERE name = 'threads'`)).toEqual([{ n: ids.length }]);
  });

  it('claims for listener names that need quoting (the claim goes as one query string with its values written in)', async () => {
    place();
    const p = await open();
    const odd = 'o\'brien\\ "x"; DROP TABLE journal; --';
    await p.journal.pending([message('t1', odd, 'q')]);
    const claimed = await p.work!.claim([odd, 'b'], 5, { global: Number.POSITIVE_INFINITY, perAgent: 10 });
    expect(claimed.map((c) => c.message.to)).toEqual([odd]);
    expect(await rows(`SELECT recipient, state FROM journal`)).toEqual([{ recipient: odd, state: 'DISPATCHED' }]);
  });

  it("passes a retry over until its next try time (its thread's later message to the listener waits behind it, other threads go on); the retry is fenced by the claim", async () => {
    place();
    const [p, q] = [await open({ name: 'p' }), await open({ name: 'q' })];
    const first = message('t1', 'a', 'first');
    const later = message('t1', 'a', 'later');
    await p.journal.pending([first, later]);
    const [claimed] = await p.work!.claim(['a'], 1, { global: 10, perAgent: 10 });
    expect(claimed!.message.id).toBe(first.id);
    // Not q's claim: its retry writes nothing.
    expect(await q.work!.retry(claimed!.message, 'handler_error', 'boom', Date.now(), NO_OUTCOME)).toBeNull();
    const notBefore = Date.now() + 1_500;
    const next = await p.work!.retry(claimed!.message, 'handler_error', 'boom', notBefore, NO_OUTCOME);
    expect(next).toMatchObject({ id: first.id, attempt: 2, notBefore });
    expect(await rows(`SELECT state, attempt, attempts, next_attempt_at::float8 AS at, claimed_by FROM journal WHERE id = $1`, [first.id])).toEqual([
      { state: 'PENDING', attempt: 2, attempts: 1, at: notBefore, claimed_by: null },
    ]);
    await p.journal.pending([message('t2', 'a', 'other thread')]);
    // Before its time only the other thread's message is claimable (t1's later one waits behind the retry).
    const early = await q.work!.claim(['a'], 10, { global: 10, perAgent: 10 });
    expect(early.map((w) => w.message.threadId)).toEqual(['t2']);
    const again = await waitFor(async () => (await q.work!.claim(['a'], 10, { global: 10, perAgent: 10 }))[0]);
    expect(Date.now()).toBeGreaterThanOrEqual(notBefore);
    expect(again.message).toMatchObject({ id: first.id, attempt: 2 });
    expect(await rows(`SELECT state, attempts, next_attempt_at FROM journal WHERE id = $1`, [first.id])).toEqual([{ state: 'DISPATCHED', attempts: 2, next_attempt_at: null }]);
    expect((await q.journal.get(first.id))!.earlierAttempts).toEqual([
      { attempt: 1, dispatchedAt: expect.any(Number), endedAt: expect.any(Number), outcome: 'failed', failureReason: 'handler_error', error: 'boom', requeuedAt: expect.any(Number) },
    ]);
  });
});

async function waitFor<T>(fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
