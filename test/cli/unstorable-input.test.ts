import Database from 'better-sqlite3';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DATABASE_FILE } from '../../src/store/index.js';
import { createTestDatabase, testPool, withPostgres } from '../store/contract/backends.js';
import { killAll, organismDir, startCli, startServer, TOKEN, until, type Running, type ServerProcess } from './processes.js';

/**
 * Issue 23, item 2: text no store can keep, from a client or from a handler, against real
 * processes: `serve` on SQLite, and `serve --handlers off` with an `organism worker` on
 * PostgreSQL. Before the fix an inject whose metadata.orgId held a NUL was answered 200 on
 * PostgreSQL and its ack never committed (DISPATCHED for good, the worker's slot with it), a
 * NUL thread id was a 503, and a handler's error text with a NUL wedged the delivery the same
 * way; the same inject was ACKED on SQLite.
 *
 * Every agent takes one delivery at a time (max_concurrent_per_agent: 1): a delivery that
 * never settles would hold its agent's only slot, so "the next inject to that agent completes"
 * shows the slot was freed.
 */

const YAML = `organism:
  name: unstorable
max_concurrent_per_agent: 1
payloads:
  Text:
    description: Plain text
    fields:
      text: string
listeners:
  - name: echo
    description: Takes what it gets
    payload: Text
    handler: ./handlers.ts#echo
  - name: nul
    description: Sends text with a NUL on
    payload: Text
    peers: [echo]
    handler: ./handlers.ts#nul
  - name: throws
    description: Fails with a NUL in its error
    payload: Text
    handler: ./handlers.ts#throws
  - name: gate
    description: Returns once the test opens its gate
    payload: Text
    handler: ./handlers.ts#gate
`;

const HANDLERS = `import { existsSync } from 'node:fs';
export function echo() {}
export function nul(p: { text: string }) {
  return p.text === 'ok' ? undefined : { to: 'echo', payload: { text: 'before\\u0000after' } };
}
export function throws(p: { text: string }) {
  if (p.text !== 'ok') throw new Error('bad byte \\u0000 here');
}
/** Waits for the file gate-<text> beside it (the test's signal), or for the delivery to be aborted. */
export async function gate(p: { text: string }, ctx: { signal: AbortSignal }) {
  const file = new URL('./gate-' + p.text, import.meta.url);
  while (!existsSync(file) && !ctx.signal.aborted) await new Promise((r) => setTimeout(r, 20));
}
`;

type Body = Record<string, unknown>;

async function inject(server: ServerProcess, body: Body): Promise<{ status: number; body: Body }> {
  const res = await server.api('/inject', { method: 'POST', body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Body };
}

async function journalEntry(server: ServerProcess, messageId: string): Promise<Body> {
  return (await (await server.api(`/journal/${messageId}`)).json()) as Body;
}

/** Waits until the entry is ACKED or FAILED and returns it. */
async function settled(server: ServerProcess, messageId: string): Promise<Body> {
  return until(async () => {
    const e = await journalEntry(server, messageId);
    return e['deliveryState'] === 'ACKED' || e['deliveryState'] === 'FAILED' ? e : null;
  }, `entry ${messageId} to settle`);
}

/** Injects `text` to `to` and returns its settled journal entry. */
async function delivered(server: ServerProcess, to: string, text: string, threadId?: string): Promise<Body> {
  const res = await inject(server, { to, payload: { Text: { text } }, ...(threadId ? { threadId } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return settled(server, res.body['messageId'] as string);
}

async function wsCommand(server: ServerProcess, command: Body): Promise<Body> {
  const ws = new WebSocket(`${server.base.replace(/^http/, 'ws')}/ws`, { headers: { authorization: `Bearer ${TOKEN}` } });
  try {
    return await new Promise((resolve, reject) => {
      ws.on('error', reject);
      ws.on('open', () => ws.send(JSON.stringify({ ...command, id: 'c1' })));
      ws.on('message', (data) => {
        const frame = JSON.parse(String(data)) as Body;
        if (frame['id'] === 'c1') resolve(frame);
      });
    });
  } finally {
    ws.close();
  }
}

const fieldsOf = (body: Body) => ((body['errors'] ?? []) as Array<{ field: string }>).map((e) => e.field);

/** The refusals every store must give alike: each request, the answer's status and body. */
async function refusals(server: ServerProcess): Promise<Array<{ what: string; status: number; body: Body }>> {
  const cases: Array<[string, Body]> = [
    ['NUL in metadata.orgId', { to: 'echo', payload: { Text: { text: 'x' } }, metadata: { orgId: 'acme\u0000' } }],
    ['lone surrogate in metadata.userId', { to: 'echo', payload: { Text: { text: 'x' } }, metadata: { userId: 'u\uD800' } }],
    ['NUL in threadId', { to: 'echo', payload: { Text: { text: 'x' } }, threadId: 'a\u0000b' }],
    ['BEL in threadId', { to: 'echo', payload: { Text: { text: 'x' } }, threadId: 'a\u0007b' }],
    ['NUL in a payload string', { to: 'echo', payload: { Text: { text: 'a\u0000b' } } }],
    ['lone surrogate in a payload key', { to: 'echo', payload: { Text: { text: 'x', ['k\uDC00']: 1 } } }],
    ['unknown body key', { to: 'echo', payload: { Text: { text: 'x' } }, budget: 100 }],
    ['unknown metadata key', { to: 'echo', payload: { Text: { text: 'x' } }, metadata: { tenant: 'acme' } }],
    ['nested metadata value', { to: 'echo', payload: { Text: { text: 'x' } }, metadata: { orgId: { deep: { deeper: 'x' } } } }],
  ];
  const out = [];
  for (const [what, body] of cases) out.push({ what, ...(await inject(server, body)) });
  return out;
}

const EXPECTED_FIELDS: Record<string, string[]> = {
  'NUL in metadata.orgId': ['metadata.orgId'],
  'lone surrogate in metadata.userId': ['metadata.userId'],
  'NUL in threadId': ['threadId'],
  'BEL in threadId': ['threadId'],
  'NUL in a payload string': ['payload.Text.text'],
  'lone surrogate in a payload key': ['payload.Text["k\\udc00"]'],
  'unknown body key': ['body.budget'],
  'unknown metadata key': ['body.metadata.tenant'],
  'nested metadata value': ['body.metadata.orgId'],
};

function expectRefusals(list: Array<{ what: string; status: number; body: Body }>): void {
  for (const r of list) {
    expect(r.status, `${r.what}: ${JSON.stringify(r.body)}`).toBe(422);
    expect(r.body['code'], r.what).toBe('INVALID_REQUEST');
    expect(fieldsOf(r.body), r.what).toEqual(EXPECTED_FIELDS[r.what]);
  }
}

/**
 * A NUL payload sent on (invalid_result) and a NUL in a thrown error's text (written with
 * U+FFFD) each fail their delivery once; the agent's one slot is free again for the next.
 */
async function expectHandlerTextFailsOnce(server: ServerProcess): Promise<void> {
  const sent = await delivered(server, 'nul', 'go');
  expect(sent).toMatchObject({ deliveryState: 'FAILED', failureReason: 'invalid_result' });
  expect(sent['error']).toMatch(/payload\.text contains a NUL character/);
  expect((await delivered(server, 'nul', 'ok'))['deliveryState']).toBe('ACKED');
  const thrown = await delivered(server, 'throws', 'go');
  expect(thrown).toMatchObject({ deliveryState: 'FAILED', failureReason: 'handler_error', error: 'Handler throws failed: bad byte \uFFFD here' });
  expect((await delivered(server, 'throws', 'ok'))['deliveryState']).toBe('ACKED');
}

/** An entry refused by the store for `reason`; its thread ends in error; the agent goes on. */
async function expectRefusedOnce(server: ServerProcess, entry: Body, reason: RegExp): Promise<void> {
  expect(entry).toMatchObject({ deliveryState: 'FAILED', failureReason: 'storage_rejected' });
  expect(entry['error']).toMatch(reason);
  await until(async () => ((await (await server.api(`/threads/${entry['threadId'] as string}`)).json()) as Body)['status'] === 'error', 'the thread to end in error');
  expect((await delivered(server, 'echo', 'after'))['deliveryState']).toBe('ACKED');
}

/** What both stores answered, to compare them. */
const answers: Record<string, Array<{ what: string; status: number; body: Body }>> = {};

describe('text no store can keep, against a real serve on SQLite', () => {
  let dir: string;
  let server: ServerProcess;
  beforeAll(async () => {
    dir = organismDir(YAML, { 'handlers.ts': HANDLERS });
    server = await startServer(path.join(dir, 'organism.yaml'), ['--data-dir', path.join(dir, 'data')]);
  }, 120_000);
  afterAll(() => killAll());

  it('refuses NUL, lone surrogates, control characters in ids and unknown keys with 422 naming the field; the snake_case aliases and RTL / 4-byte text are kept', async () => {
    answers['sqlite'] = await refusals(server);
    expectRefusals(answers['sqlite']);
    const text = 'שלום \u200F😀 𝄞 \u202E done';
    const res = await inject(server, { to: 'echo', payload: { Text: { text } }, thread_id: 'rtl-😀', metadata: { org_id: '\u200Facme😀', user_id: 'u1' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const entry = await settled(server, res.body['messageId'] as string);
    expect(entry).toMatchObject({ deliveryState: 'ACKED', threadId: 'rtl-😀', payload: { text }, metadata: { orgId: '\u200Facme😀', userId: 'u1' } });
    const badPath = await server.api(`/threads/${encodeURIComponent('a\u0000b')}`);
    expect(badPath.status).toBe(422);
    expect(fieldsOf((await badPath.json()) as Body)).toEqual(['threadId']);
  }, 120_000);

  it('the WebSocket inject command refuses the same (and unknown keys, non-string metadata) naming the field', async () => {
    const nul = await wsCommand(server, { cmd: 'inject', to: 'echo', payload: { Text: { text: 'x' } }, metadata: { orgId: '\u0000' } });
    expect(nul).toMatchObject({ event: 'error', cmd: 'inject' });
    expect(fieldsOf(nul)).toEqual(['metadata.orgId']);
    const unknown = await wsCommand(server, { cmd: 'inject', to: 'echo', payload: { Text: { text: 'x' } }, budget: 100, metadata: { orgId: 5 } });
    expect(fieldsOf(unknown).sort()).toEqual(['budget', 'metadata.orgId']);
    const thread = await wsCommand(server, { cmd: 'inject', to: 'echo', payload: { Text: { text: 'x' } }, thread_id: 'a\u0001' });
    expect(fieldsOf(thread)).toEqual(['threadId']);
    const ok = await wsCommand(server, { cmd: 'inject', to: 'echo', payload: { Text: { text: '😀' } }, thread_id: 'ws-ok', metadata: { org_id: 'acme' } });
    expect(ok).toMatchObject({ event: 'injected', threadId: 'ws-ok' });
  }, 60_000);

  it('a handler that returns a NUL payload or throws an error text with a NUL fails that delivery once; the agent goes on', async () => {
    await expectHandlerTextFailsOnce(server);
  }, 60_000);

  it('an ack the store refuses for what it holds (SQLITE_CONSTRAINT) fails the delivery once with the reason; the thread ends in error, the agent goes on', async () => {
    const db = new Database(path.join(dir, 'data', DATABASE_FILE));
    db.pragma('busy_timeout = 10000');
    try {
      db.exec(`CREATE TRIGGER refuse_ack BEFORE UPDATE OF state ON journal FOR EACH ROW WHEN NEW.state = 'ACKED' AND NEW.thread_id = 'refuse-me'
               BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`);
    } finally {
      db.close();
    }
    await expectRefusedOnce(server, await delivered(server, 'echo', 'x', 'refuse-me'), /refused by the test.*SQLITE_CONSTRAINT/);
  }, 60_000);

  it('a kill settles a delivery whose ack keeps failing (the database locked by another connection: SQLITE_BUSY, retried): FAILED killed, the agent goes on', async () => {
    const res = await inject(server, { to: 'gate', payload: { Text: { text: 'busy' } }, threadId: 'stuck-sqlite' });
    expect(res.status).toBe(200);
    const id = res.body['messageId'] as string;
    await until(async () => (await journalEntry(server, id))['deliveryState'] === 'DISPATCHED', 'the delivery to start');
    const db = new Database(path.join(dir, 'data', DATABASE_FILE));
    db.pragma('busy_timeout = 20000');
    db.exec('BEGIN IMMEDIATE'); // holds the write lock: every write of the server fails SQLITE_BUSY
    try {
      writeFileSync(path.join(dir, 'gate-busy'), '');
      await until(() => server.output().includes('journal writes fail'), `the server's ack to fail (output: ${server.output()})`);
      const kill = await server.api('/threads/stuck-sqlite/kill', { method: 'POST' });
      expect(kill.status).toBe(200);
    } finally {
      db.exec('ROLLBACK');
      db.close();
    }
    expect(await settled(server, id)).toMatchObject({ deliveryState: 'FAILED', failureReason: 'killed' });
    writeFileSync(path.join(dir, 'gate-after'), '');
    expect((await delivered(server, 'gate', 'after'))['deliveryState']).toBe('ACKED');
  }, 120_000);
});

const runPg = withPostgres('unstorable input in cluster mode');

describe.skipIf(!runPg)('text no store can keep, against serve --handlers off and an organism worker on PostgreSQL', () => {
  let db: { url: string; drop(): Promise<void> };
  let dir: string;
  let server: ServerProcess;
  let pool: pg.Pool;
  let worker: Running;
  beforeAll(async () => {
    db = await createTestDatabase();
    pool = testPool({ connectionString: db.url, max: 2 });
    dir = organismDir(YAML, { 'handlers.ts': HANDLERS });
    const config = path.join(dir, 'organism.yaml');
    server = await startServer(config, ['--store', db.url, '--handlers', 'off', '--data-dir', path.join(dir, 'data')]);
    worker = startCli(['worker', config, '--store', db.url, '--name', 'w1', '--concurrency', '8', '--log-level', 'warn']);
    await until(() => worker.output().includes('organism worker w1 running'), `the worker to start (output: ${worker.output()})`, 90_000);
    // Refusals the test asks the database for: one for what the ack holds (a data exception,
    // 22023), one that passes (53300 too_many_connections), each for one thread's acks.
    await pool.query(`CREATE FUNCTION refuse_ack() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF NEW.state = 'ACKED' AND NEW.thread_id = 'refuse-me' THEN RAISE EXCEPTION 'refused by the test' USING ERRCODE = '22023'; END IF;
        IF NEW.state = 'ACKED' AND NEW.thread_id = 'stuck' THEN RAISE EXCEPTION 'not now' USING ERRCODE = '53300'; END IF;
        RETURN NEW;
      END $$`);
    await pool.query('CREATE TRIGGER refuse_ack BEFORE UPDATE ON journal FOR EACH ROW EXECUTE FUNCTION refuse_ack()');
  }, 180_000);
  afterAll(async () => {
    killAll();
    await pool?.end();
    await db?.drop();
  });

  it('refuses what SQLite refuses, with the same answers (the NUL orgId inject is no longer a 200 that never completes)', async () => {
    const list = await refusals(server);
    expectRefusals(list);
    if (answers['sqlite']) expect(list).toEqual(answers['sqlite']);
    const entry = await delivered(server, 'echo', '\u200F😀', 'rtl-😀');
    expect(entry).toMatchObject({ deliveryState: 'ACKED', payload: { text: '\u200F😀' }, threadId: 'rtl-😀' });
  }, 60_000);

  it('a handler that returns a NUL payload or throws an error text with a NUL fails that delivery once; the worker slot is freed', async () => {
    await expectHandlerTextFailsOnce(server);
  }, 90_000);

  it('an ack the database refuses for what it holds (SQLSTATE 22023) fails the delivery once with the reason; the thread ends in error, the slot is freed', async () => {
    await expectRefusedOnce(server, await delivered(server, 'echo', 'x', 'refuse-me'), /refused by the test \(SQLSTATE 22023\)/);
  }, 90_000);

  it('a kill settles a delivery whose ack keeps failing (SQLSTATE 53300, retried): FAILED killed, the slot is freed', async () => {
    const res = await inject(server, { to: 'gate', payload: { Text: { text: 'stuck' } }, threadId: 'stuck' });
    expect(res.status).toBe(200);
    const id = res.body['messageId'] as string;
    writeFileSync(path.join(dir, 'gate-stuck'), '');
    // The ack is being retried (the worker says its journal writes fail): the entry stays DISPATCHED.
    await until(() => worker.output().includes('journal writes fail'), `the worker's ack to fail (output: ${worker.output()})`);
    expect((await journalEntry(server, id))['deliveryState']).toBe('DISPATCHED');
    const kill = await server.api('/threads/stuck/kill', { method: 'POST' });
    expect(kill.status).toBe(200);
    const entry = await settled(server, id);
    expect(entry).toMatchObject({ deliveryState: 'FAILED', failureReason: 'killed' });
    writeFileSync(path.join(dir, 'gate-after'), '');
    expect((await delivered(server, 'gate', 'after'))['deliveryState']).toBe('ACKED');
  }, 90_000);
});
