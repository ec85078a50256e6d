import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';
import { PgProxy } from '../store/pg-proxy.js';
import { cpuShare, freePort, jobYaml, killAll, organismDir, type ServerProcess, startServer, TOKEN, until } from './processes.js';

/**
 * PostgreSQL going away under a running `organism serve --store postgres://…`: the server
 * reaches the database through a TCP proxy this test owns (the PostgreSQL server itself is
 * shared with other tests and stays up), and the proxy is cut and reopened.
 */

const PASSWORD = 's3cret-pw-never-logged';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  killAll();
  while (cleanup.length) await cleanup.pop()!();
});

async function health(server: ServerProcess): Promise<{ status: number; body: { status: string; code?: string; detail?: string } }> {
  const res = await fetch(`${server.base}/health`);
  return { status: res.status, body: (await res.json()) as { status: string; code?: string; detail?: string } };
}

async function inject(server: ServerProcess, n: number): Promise<Response> {
  // An inject must be answered (accepted or refused) whatever the database does: a hang fails here, by name.
  return server.api('/inject', { method: 'POST', body: JSON.stringify({ to: 'worker', payload: { Job: { n } } }), signal: AbortSignal.timeout(60_000) });
}

/**
 * A control-channel WebSocket connected (its snapshot received) while the database answers;
 * `inject` sends one inject command on it later and waits for its answer.
 */
async function wsControl(base: string): Promise<{ inject(): Promise<Record<string, unknown>>; close(): void }> {
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const frames: Array<Record<string, unknown>> = [];
  ws.on('message', (data) => frames.push(JSON.parse(String(data)) as Record<string, unknown>));
  await new Promise<void>((resolve, reject) => {
    ws.on('error', reject);
    setTimeout(() => reject(new Error('no WebSocket snapshot in 60 s')), 60_000).unref();
    ws.on('message', () => frames.some((f) => f['event'] === 'connected') && resolve());
  });
  return {
    inject: async () => {
      ws.send(JSON.stringify({ cmd: 'inject', id: 'i1', to: 'worker', payload: { Job: { n: 1 } } }));
      return until(async () => frames.find((f) => f['id'] === 'i1') ?? null, 'the answer to the WebSocket inject', 60_000);
    },
    close: () => ws.close(),
  };
}

/** The server's JSON log lines whose message matches `re`. */
function logLines(output: string, re: RegExp): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => re.test(String(entry['msg'])));
}

describe.skipIf(!withPostgres('PostgreSQL down tests'))('PostgreSQL unreachable under a running server', () => {
  it('refuses injects (REST and WebSocket) with 503 STORAGE_UNAVAILABLE, /health says degraded, one log line each way, no busy loop, no password; resumes without a restart and loses nothing it acknowledged', async () => {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const proxy = new PgProxy(await freePort());
    await proxy.open();
    cleanup.push(() => proxy.cut());
    const store = new URL(db.url);
    store.port = String(proxy.port);
    store.password = PASSWORD; // trust auth ignores it; it must still never be shown
    const dir = organismDir(jobYaml('pgdown', 'max_concurrent_per_agent: 8\n'), { 'worker.ts': `export const work = async () => { await new Promise((r) => setTimeout(r, 200)); };\n` });
    const stage = (what: string) => process.env['SHOW_OUTPUT'] && console.log(new Date().toISOString(), what);
    stage('start');
    const server = await startServer(path.join(dir, 'organism.yaml'), ['--store', store.toString(), '--data-dir', mkdtempSync(path.join(os.tmpdir(), 'organism-pgdown-'))]);
    expect((await health(server)).status).toBe(200);

    // Connected now: a client that connects while the database is down waits for its snapshot (known, see docs/scale-out.md).
    const control = await wsControl(server.base);
    cleanup.push(() => control.close());

    // Injects keep coming while the proxy is cut: every one answered 200 must be kept.
    const accepted: string[] = [];
    const refusals = new Map<string, number>();
    let n = 0;
    let injecting = true;
    let unanswered = 0;
    const injector = (async () => {
      while (injecting) {
        const res = await inject(server, n++).catch((err: Error) => {
          if (err.name === 'TimeoutError') unanswered++;
          return null;
        });
        if (res?.status === 200) accepted.push(((await res.json()) as { messageId: string }).messageId);
        else if (res) {
          const body = (await res.json()) as { code: string };
          refusals.set(body.code, (refusals.get(body.code) ?? 0) + 1);
          expect(res.status).toBe(503);
        }
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    stage('started');
    await until(() => accepted.length >= 5, 'some accepted injects', 60_000);
    stage('accepted 5');
    await proxy.cut();
    stage('cut');

    const sick = await until(
      async () => {
        const h = await health(server);
        return h.status === 503 ? h : null;
      },
      '/health to report the database unreachable',
      60_000,
    );
    expect(sick.body).toMatchObject({ status: 'degraded', code: 'STORAGE_UNAVAILABLE' });
    expect(sick.body.detail).toContain(`127.0.0.1:${proxy.port}`);
    stage('sick');
    injecting = false;
    await injector;
    stage('injector done');
    expect(unanswered, server.output()).toBe(0);

    const refused = await inject(server, -1);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    const body = (await refused.json()) as { code: string; detail: string };
    expect(body.code).toBe('STORAGE_UNAVAILABLE');
    expect(body.detail).toMatch(/^Database postgres:\/\/postgres:\*\*\*@127\.0\.0\.1:\d+\/organism_test_\w+ cannot be reached \(.+\): new messages are refused until it answers again/);
    // A read needs the database too: the same outage answer (code, Retry-After), not a bare STORAGE_FAILED.
    for (const route of ['/threads', '/journal?limit=5', `/journal/${accepted[0]}`]) {
      const read = await server.api(route, { signal: AbortSignal.timeout(60_000) });
      const readBody = (await read.json()) as { code: string; detail: string };
      expect([route, read.status, readBody.code, read.headers.get('retry-after')]).toEqual([route, 503, 'STORAGE_UNAVAILABLE', '5']);
      expect(readBody.detail).toMatch(/cannot be reached/);
    }
    const wsReply = await control.inject();
    expect(wsReply['event']).toBe('error');
    expect(String(wsReply['error'])).toContain('cannot be reached');

    // Down, it waits (backoff), it does not spin.
    expect(await cpuShare(server.child.pid!, 3_000)).toBeLessThan(0.3);
    expect(server.child.exitCode).toBeNull();

    stage('reopen');
    await proxy.open();
    await until(async () => (await health(server)).status === 200, '/health to be healthy again', 60_000);
    const after = await inject(server, 9_999);
    expect(after.status).toBe(200);
    accepted.push(((await after.json()) as { messageId: string }).messageId);

    // Every acknowledged inject is in the database and is delivered.
    const direct = new pg.Pool({ connectionString: db.url, max: 1 });
    direct.on('error', () => {}); // ended by the DROP DATABASE of the cleanup
    cleanup.push(() => direct.end());
    await until(
      async () => {
        const rows = (await direct.query<{ id: string; state: string }>('SELECT id, state FROM journal WHERE id = ANY($1)', [accepted])).rows;
        return rows.length === accepted.length && rows.every((r) => r.state === 'ACKED');
      },
      `every accepted inject ACKED (${accepted.length})`,
      60_000,
    );

    const out = server.output();
    if (process.env['SHOW_OUTPUT']) console.log(out);
    expect(out).not.toContain(PASSWORD);
    expect(logLines(out, /PostgreSQL cannot be reached/)).toHaveLength(1);
    expect(logLines(out, /PostgreSQL answers again/)).toHaveLength(1);
    expect(logLines(out, /storage write failed|idle PostgreSQL connection failed|request failed/)).toHaveLength(0);
  }, 420_000);
});
