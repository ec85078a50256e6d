import Database from 'better-sqlite3';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { Value } from 'typebox/value';
import { afterEach, describe, expect, it } from 'vitest';
import type { OrganismEvent } from '../../src/events/types.js';
import { ServerFrame } from '../../src/service/schemas/frames.js';
import { toFrame } from '../../src/service/ws/frames.js';
import { snapshotBody } from '../../src/service/ws/snapshot.js';
import { loadOrganism } from '../../src/config/index.js';
import { Organism } from '../../src/organism/organism.js';
import { DATABASE_FILE, openSqliteStorage } from '../../src/store/index.js';
import { openPostgresStorage } from '../../src/store/postgres/index.js';
import { createTestDatabase } from '../store/contract/backends.js';
import { eventually, startService, STORAGE_KINDS, VIEWER, type Service } from './fixture.js';

/**
 * Issue 30, items 1, 2 and 5 through the HTTP API on every store: holding a thread (its
 * deliveries stay PENDING, nothing in flight is interrupted), the loop breaker's three rules
 * with its default limits, and erasure (the text gone from every table, billing unchanged).
 */

interface Gates {
  release: Map<string, () => void>;
  echoed: string[];
}

const HANDLERS = `
const g = globalThis as { __safetyGates?: any };
g.__safetyGates ??= { release: new Map(), echoed: [] };
const gates = g.__safetyGates;

/** Sends the same ball back to its peer, for ever. */
export function ping(payload) { return { to: 'pong', payload: { text: payload.text } }; }
export function pong(payload) { return { to: 'ping', payload: { text: payload.text } }; }

/** a -> b -> c -> a with the same payload. */
export function a(payload) { return { to: 'b', payload: { text: payload.text } }; }
export function b(payload) { return { to: 'c', payload: { text: payload.text } }; }
export function c(payload) { return { to: 'a', payload: { text: payload.text } }; }

/** A long conversation of distinct messages: counts up to 120, then stops. */
export function up(payload) { return payload.n >= 120 ? undefined : { to: 'down', payload: { text: payload.text, n: payload.n + 1 } }; }
export function down(payload) { return { to: 'up', payload: { text: payload.text, n: payload.n + 1 } }; }

/** Waits until the test releases it, then sends to echo. */
export async function gate(payload) {
  await new Promise((resolve) => gates.release.set(payload.text, resolve));
  return { to: 'echo', payload: { text: 'after ' + payload.text } };
}

export function echo(payload) { gates.echoed.push(payload.text); }

/** Asks the desk (people): the thread waits. */
export function asker(payload) { return { to: 'desk', payload: { text: payload.text } }; }
`;

const YAML = `organism:
  name: safety-test
max_hops: 1000
max_tokens_per_thread: 1000000
llm:
  providers:
    - name: mock
      type: mock
      models: [mock-]
      script:
        talker:
          - '<send to="echo"><Text><text>said {{text}}</text></Text></send>'
        greeter:
          - '<send to="echo"><Text><text>greeted {{text}}</text></Text></send>'
  pricing:
    mock-small: {prompt: 0.5, completion: 1.5}
payloads:
  Text:
    fields:
      text: string
  Count:
    fields:
      text: string
      n: integer
listeners:
  - name: ping
    payload: Text
    peers: [pong]
    handler: ./safety.ts#ping
  - name: pong
    payload: Text
    peers: [ping]
    handler: ./safety.ts#pong
  - name: a
    payload: Text
    peers: [b]
    handler: ./safety.ts#a
  - name: b
    payload: Text
    peers: [c]
    handler: ./safety.ts#b
  - name: c
    payload: Text
    peers: [a]
    handler: ./safety.ts#c
  - name: up
    payload: Count
    peers: [down]
    handler: ./safety.ts#up
  - name: down
    payload: Count
    peers: [up]
    handler: ./safety.ts#down
  - name: gate
    payload: Text
    peers: [echo]
    handler: ./safety.ts#gate
    timeout_seconds: 60
  - name: echo
    payload: Text
    handler: ./safety.ts#echo
  - name: asker
    payload: Text
    peers: [desk]
    handler: ./safety.ts#asker
  - name: desk
    payload: Text
    handler: builtin:human
  - name: talker
    payload: Text
    peers: [echo]
    handler: builtin:llm
    model: mock-small
    prompt: Say it to echo.
    loop_guard:
      tokens_per_minute: 5
  - name: greeter
    payload: Text
    peers: [echo]
    handler: builtin:llm
    model: mock-small
    prompt: Greet.
`;

function gates(): Gates {
  const g = globalThis as { __safetyGates?: Gates };
  g.__safetyGates ??= { release: new Map(), echoed: [] };
  return g.__safetyGates;
}

let service: Service | null = null;
afterEach(async () => {
  for (const release of gates().release.values()) release();
  gates().release.clear();
  gates().echoed.length = 0;
  await service?.close();
  service = null;
});

async function start(storage: (typeof STORAGE_KINDS)[number]): Promise<Service> {
  service = await startService({ yaml: YAML, storage, files: { 'safety.ts': HANDLERS } });
  return service;
}

/** Resolves with the first event of `type` for `threadId` (registered before the action that causes it). */
function nextEvent<T extends OrganismEvent['type']>(s: Service, type: T, threadId: string): Promise<Extract<OrganismEvent, { type: T }>> {
  return new Promise((resolve) => {
    const off = s.organism.bus.on((e) => {
      if (e.type === type && (e as { threadId?: string }).threadId === threadId) {
        off();
        resolve(e as Extract<OrganismEvent, { type: T }>);
      }
    });
  });
}

/** Every event of the thread's kinds, in order. */
function record(s: Service): OrganismEvent[] {
  const seen: OrganismEvent[] = [];
  s.organism.bus.on((e) => void seen.push(e));
  return seen;
}

/** The thread's journal entries, oldest first. */
async function journalOf(s: Service, threadId: string) {
  const page = await s.organism.queries.journal.list({ threadId, limit: 1000, offset: 0, order: 'oldest' });
  return page.items.map((e) => ({ id: e.message.id, from: e.message.from, to: e.message.to, state: e.state, payload: e.message.payload }));
}

describe.each(STORAGE_KINDS)('threads can be held (%s store)', (storage) => {
  it('a held thread keeps its next delivery PENDING (the one in flight finishes), reads `held` with the reason, and goes on when resumed', async () => {
    const s = await start(storage);
    const events = record(s);
    const { threadId } = await s.client.inject({ to: 'gate', payload: { text: 'g1' } });
    await eventually(() => gates().release.has('g1'), 'the gate running');

    const paused = await s.request('POST', `/api/v1/threads/${threadId}/pause`, { body: { reason: 'checking the refund' } });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ success: true, threadId, status: 'held', hold: { held: true, rule: 'operator', reason: 'checking the refund', by: 'ops' } });
    // Again: the first hold stays.
    expect((await s.request('POST', `/api/v1/threads/${threadId}/pause`)).body.hold.reason).toBe('checking the refund');

    // The delivery in flight is not interrupted: it acks, and what it sends waits PENDING.
    gates().release.get('g1')!();
    await eventually(async () => (await journalOf(s, threadId)).some((e) => e.to === 'echo' && e.state === 'PENDING'), 'the held message PENDING');
    const entries = await journalOf(s, threadId);
    expect(entries.find((e) => e.to === 'gate')!.state).toBe('ACKED');
    const detail = await s.client.threads.get(threadId);
    expect(detail.status).toBe('held');
    expect(detail.hold).toMatchObject({ held: true, reason: 'checking the refund' });
    expect((await s.client.threads.list({ status: 'held' })).threads.map((t) => t.id)).toEqual([threadId]);
    expect((await s.client.threads.list()).threads.find((t) => t.id === threadId)!.status).toBe('held');
    // The /ws `connected` snapshot shows it held too.
    const snapshot = (await snapshotBody(s.organism, null)) as { threads: Array<{ id: string; status: string }> };
    expect(snapshot.threads.find((t) => t.id === threadId)!.status).toBe('held');
    expect(gates().echoed).not.toContain('after g1');

    // Viewers may not; unknown threads are 404; resuming a thread that is not held is 409.
    expect((await s.request('POST', `/api/v1/threads/${threadId}/resume`, { token: VIEWER })).status).toBe(403);
    expect((await s.request('POST', '/api/v1/threads/no-such-thread/pause')).body.code).toBe('THREAD_NOT_FOUND');

    const resumed = await s.client.threads.resume(threadId);
    expect(resumed).toMatchObject({ success: true, threadId, hold: { held: false, resumedBy: 'ops', limitFactor: 1 } });
    await eventually(() => gates().echoed.includes('after g1'), 'the held message delivered after the resume');
    await eventually(async () => (await s.client.threads.get(threadId)).status === 'completed', 'the thread completed');
    const again = await s.request('POST', `/api/v1/threads/${threadId}/resume`);
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('THREAD_NOT_HELD');
    // A finished thread cannot be held.
    expect((await s.request('POST', `/api/v1/threads/${threadId}/pause`)).body.code).toBe('THREAD_NOT_HOLDABLE');

    // The WebSocket frames, valid against the documented frames.
    const held = events.find((e) => e.type === 'thread_held')!;
    const back = events.find((e) => e.type === 'thread_resumed')!;
    for (const e of [held, back]) expect(Value.Check(ServerFrame, JSON.parse(toFrame(e).json))).toBe(true);
  });

  it('held takes precedence over waiting (an open ask); resumed, the thread waits again', async () => {
    const s = await start(storage);
    const { threadId } = await s.client.inject({ to: 'asker', payload: { text: 'may I?' } });
    await eventually(async () => (await s.client.threads.get(threadId)).status === 'waiting', 'the thread waiting on the desk');
    const paused = await s.client.threads.pause(threadId);
    expect(paused.status).toBe('held');
    expect((await s.client.threads.get(threadId)).status).toBe('held');
    expect((await s.client.threads.list({ status: 'held' })).threads.map((t) => t.id)).toEqual([threadId]);
    expect((await s.client.threads.resume(threadId)).status).toBe('waiting');
    expect((await s.client.threads.get(threadId)).status).toBe('waiting');
  });

  it('a kill ends a held thread (bulk kill takes status held): its waiting messages fail as killed', async () => {
    const s = await start(storage);
    const { threadId } = await s.client.inject({ to: 'gate', payload: { text: 'g2' } });
    await eventually(() => gates().release.has('g2'), 'the gate running');
    await s.client.threads.pause(threadId, { reason: 'hold on' });
    gates().release.get('g2')!();
    await eventually(async () => (await journalOf(s, threadId)).some((e) => e.to === 'echo' && e.state === 'PENDING'), 'the held message PENDING');
    // Bulk kill takes the held threads by their status.
    const killed = await s.request('POST', '/api/v1/threads/kill', { body: { filter: { status: 'held' } } });
    expect(killed.status).toBe(200);
    expect(killed.body).toMatchObject({ matched: 1, attempted: 1, killed: 1, skipped: [] });
    await eventually(async () => (await s.client.threads.get(threadId)).status === 'killed', 'the thread killed');
    expect((await journalOf(s, threadId)).find((e) => e.to === 'echo')!.state).toBe('FAILED');
    expect(gates().echoed).not.toContain('after g2');
  });
});

describe.each(STORAGE_KINDS.filter((k) => k !== 'memory'))('a hold outlives a restart (%s store)', (storage) => {
  it('the held message stays PENDING after the restart while other threads run, and goes on once resumed', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'organism-safety-'));
    writeFileSync(path.join(dir, 'organism.yaml'), YAML);
    writeFileSync(path.join(dir, 'safety.ts'), HANDLERS);
    const loaded = await loadOrganism(path.join(dir, 'organism.yaml'));
    const database = storage === 'postgres' ? await createTestDatabase() : null;
    const open = async () =>
      database ? await openPostgresStorage({ url: database.url, cluster: { maxAttempts: loaded.config.journal.maxAttempts } }) : openSqliteStorage({ dataDir: path.join(dir, 'data') });
    let organism = new Organism(loaded, { storage: await open() });
    try {
      await organism.start();
      const { threadId } = await organism.inject('gate', { text: 'r1' });
      await eventually(() => gates().release.has('r1'), 'the gate running');
      await organism.pauseThread(threadId, 'ops', 'over the weekend');
      gates().release.get('r1')!();
      const pending = async () => (await organism.queries.journal.list({ threadId, limit: 10, offset: 0, order: 'oldest' })).items.find((e) => e.message.to === 'echo')?.state;
      await eventually(async () => (await pending()) === 'PENDING', 'the held message PENDING');
      await organism.stop({ timeoutMs: 2_000 });

      organism = new Organism(loaded, { storage: await open() });
      await organism.start();
      const view = await organism.threadView(threadId);
      expect(view.status).toBe('held');
      expect(view.hold).toMatchObject({ held: true, reason: 'over the weekend', by: 'ops' });
      // Another thread runs to its end: the held one did not move meanwhile.
      await organism.inject('echo', { text: 'other thread' });
      await eventually(() => gates().echoed.includes('other thread'), 'the other thread delivered');
      expect(await pending()).toBe('PENDING');
      expect(gates().echoed).not.toContain('after r1');
      await organism.resumeThread(threadId, 'ops');
      await eventually(() => gates().echoed.includes('after r1'), 'the held message delivered after the resume');
    } finally {
      if (organism.status !== 'stopped') await organism.stop({ timeoutMs: 2_000 });
      await database?.drop();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(STORAGE_KINDS)('the loop breaker with its default limits (%s store)', (storage) => {
  it('holds a two-listener ping-pong of identical messages before its 50th message; resume with raiseLimits lets it go on, kill ends it', async () => {
    const s = await start(storage);
    const events = record(s);
    const { threadId } = await s.client.inject({ to: 'ping', payload: { text: 'same ball' } });
    const held = await nextEventOrNow(s, events, 'thread_held', threadId);
    expect(held.hold.by).toBe('loop_guard');
    const detected = events.find((e) => e.type === 'loop_detected' && e.threadId === threadId) as Extract<OrganismEvent, { type: 'loop_detected' }>;
    expect(detected.rule).toBe('cycle');
    expect(detected.edges.map((e) => `${e.from}>${e.to}`).sort()).toEqual(['ping>pong', 'pong>ping']);
    expect(Value.Check(ServerFrame, JSON.parse(toFrame(detected).json))).toBe(true);

    // Nothing moves while held: the last message waits PENDING.
    const entries = await eventually(async () => {
      const list = await journalOf(s, threadId);
      return list.some((e) => e.state === 'PENDING') && list.every((e) => e.state !== 'DISPATCHED') ? list : null;
    }, 'the thread at rest');
    expect(entries.length).toBeLessThan(50);
    const detail = await s.client.threads.get(threadId);
    expect(detail.status).toBe('held');
    expect(detail.hold!.rule).toBe('cycle');
    expect(detail.hold!.reason).toMatch(/repeated \d+ times without a new payload/);

    // Metric and resume: with raised limits it runs again, and is held again later (twice the limit).
    const metrics = await s.request('GET', '/metrics');
    expect(String(metrics.body)).toMatch(/organism_loop_detections_total\{rule="cycle"\} 1/);
    const heldAgain = nextEvent(s, 'thread_held', threadId);
    const resumed = await s.client.threads.resume(threadId, { raiseLimits: true });
    expect(resumed.hold!.limitFactor).toBe(2);
    await heldAgain;
    const after = await eventually(async () => {
      const list = await journalOf(s, threadId);
      return list.some((e) => e.state === 'PENDING') && list.every((e) => e.state !== 'DISPATCHED') ? list : null;
    }, 'the thread at rest again');
    expect(after.length).toBeGreaterThan(entries.length + 40);
    expect(after.length).toBeLessThan(entries.length + 90);

    expect((await s.request('POST', `/api/v1/threads/${threadId}/kill`)).status).toBe(200);
    await eventually(async () => (await s.client.threads.get(threadId)).status === 'killed', 'killed');
  });

  it('catches an a -> b -> c -> a cycle', async () => {
    const s = await start(storage);
    const events = record(s);
    const { threadId } = await s.client.inject({ to: 'a', payload: { text: 'round and round' } });
    await nextEventOrNow(s, events, 'thread_held', threadId);
    const detected = events.find((e) => e.type === 'loop_detected' && e.threadId === threadId) as Extract<OrganismEvent, { type: 'loop_detected' }>;
    expect(detected.rule).toBe('cycle');
    expect(detected.edges).toHaveLength(3);
    expect(new Set(detected.edges.map((e) => e.from))).toEqual(new Set(['a', 'b', 'c']));
    expect((await s.client.threads.get(threadId)).status).toBe('held');
  });

  it('catches a velocity breach (tokens per minute past the listener override) before the next message is delivered', async () => {
    const s = await start(storage);
    const events = record(s);
    const { threadId } = await s.client.inject({ to: 'talker', payload: { text: 'hello' } });
    await nextEventOrNow(s, events, 'thread_held', threadId);
    const detected = events.find((e) => e.type === 'loop_detected' && e.threadId === threadId) as Extract<OrganismEvent, { type: 'loop_detected' }>;
    expect(detected.rule).toBe('velocity');
    expect(detected.evidence).toMatchObject({ limit: 5 });
    expect(Number(detected.evidence['tokensLastMinute'])).toBeGreaterThan(5);
    const entries = await eventually(async () => {
      const list = await journalOf(s, threadId);
      return list.some((e) => e.to === 'echo') ? list : null;
    }, "the talker's message journaled");
    expect(entries.find((e) => e.to === 'echo')!.state).toBe('PENDING');
    expect(gates().echoed).not.toContain('said hello');
  });

  it('never holds a long thread of distinct messages', async () => {
    const s = await start(storage);
    const events = record(s);
    const { threadId } = await s.client.inject({ to: 'up', payload: { text: 'count', n: 0 } });
    await eventually(async () => (await s.client.threads.get(threadId)).status === 'completed', 'the count finished', 30_000);
    expect((await journalOf(s, threadId)).length).toBe(121);
    expect(events.filter((e) => e.type === 'loop_detected' || e.type === 'thread_held')).toEqual([]);
  });
});

/** The thread_held event of the thread: already seen, or the next one. */
async function nextEventOrNow(s: Service, seen: OrganismEvent[], type: 'thread_held', threadId: string): Promise<Extract<OrganismEvent, { type: 'thread_held' }>> {
  const waiting = nextEvent(s, type, threadId);
  const already = seen.find((e) => e.type === type && e.threadId === threadId);
  return (already as Extract<OrganismEvent, { type: 'thread_held' }> | undefined) ?? (await waiting);
}

const SECRET = 'Zebulon-Quartz-7731';

describe.each(STORAGE_KINDS)('erasure (%s store)', (storage) => {
  it("replaces the thread's payloads, recorded calls and events by tombstones; billing totals stay exact; 409 while it runs", async () => {
    const s = await start(storage);
    const { threadId } = await s.client.inject({ to: 'greeter', payload: { text: `hello ${SECRET}` } });
    await eventually(() => gates().echoed.some((t) => t.includes(SECRET)), 'the greeting echoed');
    await eventually(async () => (await s.client.threads.get(threadId)).status === 'completed', 'the thread completed');
    await s.organism.storage.flush();
    await s.organism.storage.usage.flush();
    const billingBefore = (await s.request('GET', '/api/v1/usage/billing')).body;
    const usageBefore = (await s.client.threads.get(threadId)).usage;
    expect(usageBefore.totalTokens).toBeGreaterThan(0);
    expect(await textsWith(s, storage, SECRET)).not.toEqual([]);

    const erased = await s.request('DELETE', `/api/v1/threads/${threadId}`);
    expect(erased.status).toBe(200);
    expect(erased.body).toMatchObject({ success: true, threadId, erasure: { threadId, erasedBy: 'ops', messages: 2, llmCalls: 1 } });

    expect(await textsWith(s, storage, SECRET)).toEqual([]);
    const detail = await s.client.threads.get(threadId);
    expect(detail.erasure).toMatchObject({ erasedBy: 'ops', messages: 2 });
    expect(detail.messages.map((m) => m.payload)).toEqual([{ erased: true }, { erased: true }]);
    expect(detail.messages.map((m) => m.deliveryState)).toEqual(['ACKED', 'ACKED']);
    expect(detail.usage).toEqual(usageBefore);
    expect((await s.request('GET', '/api/v1/usage/billing')).body).toEqual(billingBefore);
    const calls = await s.client.threads.llmCalls(threadId);
    expect(JSON.stringify(calls)).not.toContain(SECRET);
    expect(calls.calls[0]!.usage).toEqual(expect.objectContaining({ totalTokens: usageBefore.totalTokens }));

    // A running thread is refused; a viewer may not.
    const running = await s.client.inject({ to: 'gate', payload: { text: 'g3' } });
    await eventually(() => gates().release.has('g3'), 'the gate running');
    const refused = await s.request('DELETE', `/api/v1/threads/${running.threadId}`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('THREAD_STILL_RUNNING');
    expect((await s.request('DELETE', `/api/v1/threads/${threadId}`, { token: VIEWER })).status).toBe(403);
    expect((await s.request('DELETE', '/api/v1/threads/no-such-thread')).status).toBe(404);
  });
});

/** Where `text` is still stored: every text column of every table (durable stores), or what the API reads (memory). */
async function textsWith(s: Service, storage: (typeof STORAGE_KINDS)[number], text: string): Promise<string[]> {
  if (storage === 'sqlite') {
    const db = new Database(path.join(s.dir, 'data', DATABASE_FILE), { readonly: true });
    try {
      const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as Array<{ name: string }>).map((t) => t.name);
      const found: string[] = [];
      for (const table of tables) {
        const rows = db.prepare(`SELECT * FROM "${table}"`).all() as Array<Record<string, unknown>>;
        if (rows.some((r) => JSON.stringify(r).includes(text))) found.push(table);
      }
      return found;
    } finally {
      db.close();
    }
  }
  if (storage === 'postgres') {
    const client = new pg.Client({ connectionString: s.databaseUrl! });
    await client.connect();
    try {
      const tables = (
        await client.query<{ t: string }>("SELECT table_name AS t FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'")
      ).rows.map((r) => r.t);
      const found: string[] = [];
      for (const table of tables) {
        const hit = await client.query(`SELECT 1 FROM "${table}" x WHERE strpos(x::text, $1) > 0 LIMIT 1`, [text]);
        if (hit.rowCount) found.push(table);
      }
      return found;
    } finally {
      await client.end();
    }
  }
  const found: string[] = [];
  for (const t of (await s.client.threads.list({ limit: 100 })).threads) {
    if (JSON.stringify(await s.client.threads.get(t.id)).includes(text)) found.push(`thread ${t.id}`);
    if (JSON.stringify(await s.client.threads.llmCalls(t.id)).includes(text)) found.push(`llm calls ${t.id}`);
  }
  if (JSON.stringify((await s.request('GET', '/api/v1/journal?limit=100')).body).includes(text)) found.push('journal');
  return found;
}
