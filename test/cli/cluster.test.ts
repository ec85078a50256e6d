import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestDatabase, withPostgres } from '../store/contract/backends.js';
import { killAll, organismDir, startCli, startServer, TOKEN, until, type Running, type ServerProcess } from './processes.js';

/**
 * Control across processes (issue 15), with real processes on a fresh PostgreSQL database each:
 * events of work done on a worker reach the WebSocket clients of every serve, pause holds on a
 * worker started later, a kill aborts a handler in another process, a reload reaches the
 * workers with the same organism.yaml, and all of it survives the LISTEN connections being cut.
 */
const run = withPostgres('control across processes');

const VIEWER_TOKEN = 'cluster-viewer-token-123';
const yaml = (workerTimeout = 30, viewer = false) => `organism:
  name: shared
${viewer ? 'auth:\n  tokens:\n    - {name: watcher, role: viewer, token_env: CLUSTER_VIEWER_TOKEN}\n' : ''}max_concurrent_handlers: 100
max_concurrent_per_agent: 100
payloads:
  Text:
    description: Plain text
    fields:
      text: string
listeners:
  - name: first
    description: First hop
    payload: Text
    peers: [second]
    handler: ./handlers.ts#first
  - name: second
    description: Second hop
    payload: Text
    peers: [third]
    handler: ./handlers.ts#second
  - name: third
    description: Last hop
    payload: Text
    handler: ./handlers.ts#third
  - name: worker
    description: Logs what it gets
    payload: Text
    handler: ./handlers.ts#worker
    timeout_seconds: ${workerTimeout}
  - name: waiter
    description: Waits until it is aborted
    payload: Text
    handler: ./handlers.ts#waiter
    timeout_seconds: 120
`;

const HANDLERS = `import { appendFileSync } from 'node:fs';
const log = (line: string) => appendFileSync(new URL('./handlers.log', import.meta.url), line + '\\n');
export function first(p: { text: string }) { return { to: 'second', payload: { text: p.text } }; }
export function second(p: { text: string }) { return { to: 'third', payload: { text: p.text } }; }
export function third() {}
export function worker(p: { text: string }) { log('worker ' + p.text + ' ' + process.pid); }
export function waiter(_p: unknown, ctx: { threadId: string; signal: AbortSignal }) {
  log('started ' + ctx.threadId + ' ' + process.pid);
  return new Promise((_resolve, reject) => ctx.signal.addEventListener('abort', () => {
    log('aborted ' + ctx.threadId + ' ' + process.pid + ' ' + Date.now() + ' ' + String(ctx.signal.reason));
    reject(new Error('aborted'));
  }));
}
`;

interface WsFrame {
  readonly event: string;
  readonly seq: number;
  readonly message?: { id: string; threadId: string; to: string; deliveryState: string };
  readonly status?: string;
}

/** A real WebSocket client of a serve process (the token as the bearer subprotocol, as browsers send it). */
async function wsClient(base: string): Promise<{ frames: WsFrame[]; close(): void }> {
  const frames: WsFrame[] = [];
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}/ws`, ['organism.v1', `bearer.${Buffer.from(TOKEN).toString('base64url')}`]);
  await new Promise<void>((resolve, reject) => {
    ws.on('message', (data) => {
      const frame = JSON.parse(String(data)) as WsFrame;
      frames.push(frame);
      if (frame.event === 'connected') resolve();
    });
    ws.once('error', reject);
  });
  return { frames, close: () => ws.terminate() };
}

const messageFrames = (frames: readonly WsFrame[], threadId: string) => frames.filter((f) => f.event === 'message' && f.message?.threadId === threadId);

describe.skipIf(!run)('control across processes (PostgreSQL, real processes)', () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    killAll();
    for (const fn of cleanup.splice(0).reverse()) await fn();
  });

  async function organism(yamlText = yaml()) {
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const dir = organismDir(yamlText, { 'handlers.ts': HANDLERS });
    return { db, dir, config: path.join(dir, 'organism.yaml') };
  }

  const serve = (config: string, url: string, name: string, dir: string): Promise<ServerProcess> =>
    startServer(config, ['--store', url, '--handlers', 'off', '--name', name, '--data-dir', path.join(dir, `data-${name}`)], { env: { CLUSTER_VIEWER_TOKEN: VIEWER_TOKEN } });

  async function worker(config: string, url: string, name: string, logLevel = 'warn'): Promise<Running> {
    const w = startCli(['worker', config, '--store', url, '--name', name, '--log-level', logLevel]);
    await until(() => w.output().includes(`organism worker ${name} running`), `worker ${name} to start (output: ${w.output()})`, 90_000);
    return w;
  }

  const inject = async (server: ServerProcess, to: string, text: string): Promise<string> => {
    const res = await server.api('/inject', { method: 'POST', body: JSON.stringify({ to, payload: { Text: { text } } }) });
    expect(res.status).toBe(200);
    return ((await res.json()) as { threadId: string }).threadId;
  };
  const threadStatus = async (server: ServerProcess, id: string) => ((await (await server.api(`/threads/${id}`)).json()) as { status: string }).status;
  const handlerLog = (dir: string) => {
    try {
      return readFileSync(path.join(dir, 'handlers.log'), 'utf8').trim().split('\n');
    } catch {
      return [];
    }
  };

  it("a worker's events reach the WebSocket clients of every serve, once each and in its order; one serve stopping stops nothing else", async () => {
    const { db, dir, config } = await organism();
    const a = await serve(config, db.url, 'api-a', dir);
    const b = await serve(config, db.url, 'api-b', dir);
    await worker(config, db.url, 'w1');
    const onA = await wsClient(a.base);
    const onB = await wsClient(b.base);
    cleanup.push(
      () => onA.close(),
      () => onB.close(),
    );

    const threads: string[] = [];
    for (let i = 0; i < 5; i++) threads.push(await inject(a, 'first', `m${i}`));
    for (const id of threads) await until(async () => (await threadStatus(a, id)) === 'completed', `thread ${id} to complete`);
    for (const client of [onA, onB]) {
      for (const id of threads) {
        await until(() => messageFrames(client.frames, id).filter((f) => f.message!.deliveryState === 'ACKED').length >= 3, `the acks of ${id} at a WebSocket client`);
      }
    }
    await new Promise((r) => setTimeout(r, 500)); // a repeat or an echo would have arrived by now
    for (const client of [onA, onB]) {
      for (const id of threads) {
        const frames = messageFrames(client.frames, id);
        const seen = frames.map((f) => `${f.message!.to}:${f.message!.deliveryState}`);
        // Each message PENDING once and ACKED once (the inject's PENDING from serve A, the rest from the worker).
        expect([...seen].sort()).toEqual(['first:ACKED', 'first:PENDING', 'second:ACKED', 'second:PENDING', 'third:ACKED', 'third:PENDING']);
        // What the worker emitted, in the order it emitted it.
        expect(seen.filter((s) => s !== 'first:PENDING')).toEqual(['first:ACKED', 'second:PENDING', 'second:ACKED', 'third:PENDING', 'third:ACKED']);
        // Frames keep the seq order of the process that serves them.
        expect(frames.map((f) => f.seq)).toEqual([...frames.map((f) => f.seq)].sort((x, y) => x - y));
      }
    }

    // Serve B stops: A and the worker go on, and A's clients hear nothing of B's stopping.
    b.child.kill('SIGTERM');
    expect(await b.exited).toBe(0);
    const after = await inject(a, 'first', 'after B stopped');
    await until(async () => (await threadStatus(a, after)) === 'completed', 'a thread after B stopped');
    expect(onA.frames.filter((f) => f.event === 'organism_status')).toEqual([]);
  }, 300_000);

  it('a paused agent stays paused on a worker started after the pause, until it is resumed', async () => {
    const { db, dir, config } = await organism();
    const a = await serve(config, db.url, 'api', dir);
    await worker(config, db.url, 'w1');
    expect((await a.api('/agents/worker/pause', { method: 'POST' })).status).toBe(200);
    await worker(config, db.url, 'w2'); // started while the agent is paused
    const held = [await inject(a, 'worker', 'held-1'), await inject(a, 'worker', 'held-2')];
    // Both workers are up and have claimed what they could: nothing of the paused agent ran.
    await until(async () => {
      const listed = (await (await a.api('/workers')).json()) as { workers: Array<{ alive: boolean; kind: string }> };
      return listed.workers.filter((w) => w.kind === 'worker' && w.alive).length === 2;
    }, 'both workers listed');
    await new Promise((r) => setTimeout(r, 2_000));
    expect(handlerLog(dir).filter((l) => l.startsWith('worker '))).toEqual([]);
    for (const id of held) expect(await threadStatus(a, id)).toBe('active');

    expect((await a.api('/agents/worker/resume', { method: 'POST' })).status).toBe(200);
    for (const id of held) await until(async () => (await threadStatus(a, id)) === 'completed', `held thread ${id} to complete after resume`);
    expect(
      handlerLog(dir)
        .filter((l) => l.startsWith('worker '))
        .map((l) => l.split(' ')[1])
        .sort(),
    ).toEqual(['held-1', 'held-2']);
  }, 300_000);

  it('a kill through one serve aborts the in-flight handler on a worker', async () => {
    const { db, dir, config } = await organism();
    const a = await serve(config, db.url, 'api', dir);
    const w = await worker(config, db.url, 'w1');
    const threadId = await inject(a, 'waiter', 'wait');
    await until(() => handlerLog(dir).some((l) => l.startsWith(`started ${threadId} ${w.child.pid}`)), 'the handler to start on the worker');
    const killedAt = Date.now();
    expect((await a.api(`/threads/${threadId}/kill`, { method: 'POST' })).status).toBe(200);
    const line = await until(() => handlerLog(dir).find((l) => l.startsWith(`aborted ${threadId}`)), 'the handler to be aborted');
    const [, , pid, at, reason] = line.split(' ');
    expect(Number(pid)).toBe(w.child.pid);
    expect(reason).toBe('killed');
    console.log(`kill through serve -> handler aborted on the worker: ${Number(at) - killedAt} ms after the request was sent`);
    expect(await threadStatus(a, threadId)).toBe('killed');
  }, 300_000);

  it('a reload reaches a serve and a worker with the same organism.yaml (tokens included); a worker with another one logs the difference and keeps its configuration', async () => {
    const { db, dir, config } = await organism(yaml(30));
    const elsewhere = organismDir(yaml(30), { 'handlers.ts': HANDLERS }); // a copy on "another machine", not redeployed
    const a = await serve(config, db.url, 'api', dir);
    const b = await serve(config, db.url, 'api-b', dir);
    const asViewer = () => fetch(`${b.base}/api/v1/whoami`, { headers: { authorization: `Bearer ${VIEWER_TOKEN}` } });
    expect((await asViewer()).status).toBe(401);
    const same = await worker(config, db.url, 'same');
    const other = await worker(path.join(elsewhere, 'organism.yaml'), db.url, 'other');
    const hashes = async () => {
      const listed = (await (await a.api('/workers')).json()) as { workers: Array<{ name: string; configHash: string }> };
      return Object.fromEntries(listed.workers.map((w) => [w.name, w.configHash]));
    };
    const before = await hashes();
    expect(new Set(Object.values(before)).size).toBe(1);

    writeFileSync(config, yaml(45, true));
    const res = await a.api('/organism/reload', { method: 'POST' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { updated: string[] }).updated).toEqual(['worker']);
    const after = await until(async () => {
      const h = await hashes();
      return h['same'] !== before['same'] ? h : null;
    }, 'the worker with the same file to reload');
    expect(after['same']).toBe(after['api']);
    // Serve B followed, its tokens too: the token added to organism.yaml works there.
    await until(async () => (await asViewer()).status === 200, 'serve B to take the new token');
    expect((await hashes())['api-b']).toBe(after['api']);
    expect(after['api']).not.toBe(before['api']);
    await until(() => other.output().includes('still running the previous configuration'), `the other worker to refuse (output: ${other.output()})`);
    expect(other.output()).toContain("listeners[worker].timeoutSeconds: 30 here, 45 in the database's organism");
    expect((await hashes())['other']).toBe(before['other']);
    expect(same.output()).not.toContain('still running the previous configuration');

    // Deployed there too: the next reload brings it along.
    cpSync(config, path.join(elsewhere, 'organism.yaml'));
    expect((await a.api('/organism/reload', { method: 'POST' })).status).toBe(200);
    await until(async () => (await hashes())['other'] === after['api'], 'the other worker to follow once its file matches');
  }, 300_000);

  it('after the LISTEN connections are cut, kills and events reach every process again', async () => {
    const { db, dir, config } = await organism();
    const a = await serve(config, db.url, 'api-a', dir);
    const b = await serve(config, db.url, 'api-b', dir);
    const w = await worker(config, db.url, 'w1', 'info');
    const onB = await wsClient(b.base);
    cleanup.push(() => onB.close());
    const admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    cleanup.push(() => admin.end());
    const cut = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'organism-listen' AND datname = current_database()`);
    expect(cut.rowCount).toBeGreaterThanOrEqual(3); // one per process
    await until(() => w.output().includes('the PostgreSQL LISTEN connection is back'), `the worker's LISTEN connection to come back (output: ${w.output()})`);
    await until(async () => {
      const r = await admin.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'organism-listen' AND datname = current_database()`);
      return r.rows[0].n >= 3;
    }, 'every LISTEN connection to be back');

    const chain = await inject(a, 'first', 'after the cut');
    await until(() => messageFrames(onB.frames, chain).some((f) => f.message!.to === 'third' && f.message!.deliveryState === 'ACKED'), "the chain's events at serve B");
    const waiting = await inject(a, 'waiter', 'wait');
    await until(() => handlerLog(dir).some((l) => l.startsWith(`started ${waiting}`)), 'the handler to start');
    expect((await b.api(`/threads/${waiting}/kill`, { method: 'POST' })).status).toBe(200);
    await until(() => handlerLog(dir).some((l) => l.startsWith(`aborted ${waiting}`)), 'the handler to be aborted');
  }, 300_000);
});
