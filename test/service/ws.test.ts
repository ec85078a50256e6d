import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Organism } from '../../src/organism/organism.js';
import { send } from '../../src/core/handler.js';
import { buildApp } from '../../src/service/app.js';
import type { WsLimits } from '../../src/service/ws/plugin.js';
import { eventually, listener, startOrganism } from '../pump/harness.js';
import { upgrade } from './ws-helpers/harness.js';

const OP = 'ws-operator-token';
const VIEW = 'ws-viewer-token';

type Frame = Record<string, unknown> & { event: string; seq: number; timestamp: string };

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

async function server(ws: Partial<WsLimits> = {}) {
  const { organism } = await startOrganism([listener('a', { peers: ['b'], handler: (p) => send('b', p) }), listener('b')]);
  const app = await buildApp({
    organism,
    version: 'test',
    auth: {
      tokens: [
        { name: 'op', role: 'operator', token: OP },
        { name: 'view', role: 'viewer', token: VIEW },
      ],
    },
    ws,
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as AddressInfo).port;
  cleanup.push(async () => {
    await app.close();
    await organism.stop();
  });
  return { organism, app, url: `ws://127.0.0.1:${port}` };
}

/** A connected client that records every frame. */
async function client(url: string, headers: Record<string, string> = {}) {
  const frames: Frame[] = [];
  const socket = new WebSocket(url, { headers });
  socket.on('message', (d) => frames.push(JSON.parse(String(d)) as Frame));
  const closed = new Promise<{ code: number; reason: string }>((r) => socket.on('close', (code, reason) => r({ code, reason: String(reason) })));
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  cleanup.push(() => socket.terminate());
  const next = async (event: string, from = 0) => eventually(() => frames.slice(from).find((f) => f.event === event), 10_000, `a ${event} frame`);
  const cmd = (c: Record<string, unknown>) => socket.send(JSON.stringify(c));
  return { socket, frames, closed, next, cmd };
}

function upgradeStatus(url: string): Promise<number> {
  return new Promise((resolve) => {
    const s = new WebSocket(url);
    s.on('unexpected-response', (req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      req.destroy();
    });
    s.on('open', () => {
      resolve(101);
      s.terminate();
    });
    s.on('error', () => {});
  });
}

async function injectAndSettle(organism: Organism, text: string) {
  const r = await organism.inject('a', { text });
  await eventually(async () => (await organism.thread(r.threadId))?.status === 'completed');
  return r;
}

describe('/ws', () => {
  it('refuses an upgrade without a valid token (401); accepts the token in the header or the query', async () => {
    const { url } = await server();
    expect(await upgradeStatus(`${url}/ws`)).toBe(401);
    expect(await upgradeStatus(`${url}/ws?token=wrong`)).toBe(401);
    expect(await upgradeStatus(`${url}/ws?token=${VIEW}`)).toBe(101);
    const viaHeader = await client(`${url}/ws`, { authorization: `Bearer ${OP}` });
    expect((await viaHeader.next('connected')).bootId).toBeTypeOf('string');
  });

  it('takes a browser token as a bearer.<base64url> subprotocol beside organism.v1, answering organism.v1 only', async () => {
    const { url } = await server();
    const offer = (token: string, ...others: string[]) => [...others, `bearer.${Buffer.from(token).toString('base64url')}`];
    const viewer = new WebSocket(`${url}/ws`, offer(VIEW, 'organism.v1'));
    cleanup.push(() => viewer.terminate());
    const first = await new Promise<Frame>((resolve, reject) => {
      viewer.once('message', (d) => resolve(JSON.parse(String(d)) as Frame));
      viewer.once('error', reject);
    });
    expect(first.event).toBe('connected');
    expect(viewer.protocol).toBe('organism.v1');
    // The role follows the token: a viewer may not inject over the socket.
    viewer.send(JSON.stringify({ cmd: 'inject', to: 'a', payload: { Text: { text: 'x' } } }));
    const answer = await new Promise<Frame>((resolve) => viewer.once('message', (d) => resolve(JSON.parse(String(d)) as Frame)));
    expect(answer).toMatchObject({ event: 'error' });
    // A wrong token in the subprotocol is refused before any socket exists, like a wrong header.
    const refused = await new Promise<number>((resolve) => {
      const s = new WebSocket(`${url}/ws`, offer('wrong-token', 'organism.v1'));
      s.on('unexpected-response', (req, res) => {
        resolve(res.statusCode ?? 0);
        res.resume();
        req.destroy();
      });
      s.on('open', () => (resolve(101), s.terminate()));
      s.on('error', () => {});
    });
    expect(refused).toBe(401);
  });

  it('sends a snapshot, then events with increasing seq and ISO timestamps', async () => {
    const { url, organism } = await server();
    await injectAndSettle(organism, 'before');
    const c = await client(`${url}/ws?token=${VIEW}`);
    const snap = await c.next('connected');
    expect(snap).toMatchObject({ bootId: organism.bootId, organism: { name: 'test', status: 'running' } });
    expect((snap['agents'] as Array<{ name: string }>).map((a) => a.name)).toEqual(['a', 'b']);
    expect(snap['threads']).toHaveLength(1);
    expect(snap['usage']).toMatchObject({ requestCount: 0 });
    expect(snap['journal']).toMatchObject({ counts: expect.any(Object) });
    const { threadId } = await injectAndSettle(organism, 'live');
    await eventually(() => c.frames.filter((f) => f.event === 'message').length >= 4);
    const msg = c.frames.find((f) => f.event === 'message')!;
    expect(msg['message']).toMatchObject({ threadId, from: 'api', to: 'a', payloadType: 'Text', deliveryState: 'PENDING' });
    expect(Date.parse(msg.timestamp)).not.toBeNaN();
    const seqs = c.frames.map((f) => f.seq);
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(c.frames.some((f) => f.event === 'thread_created')).toBe(true);
    expect(c.frames.some((f) => f.event === 'agent_state')).toBe(true);
  });

  it('subscribe filters every event that concerns a thread, and by event kind', async () => {
    const { url, organism } = await server();
    const c = await client(`${url}/ws?token=${VIEW}`);
    await c.next('connected');
    const keep = await organism.inject('a', { text: 'keep' });
    await eventually(async () => (await organism.thread(keep.threadId))?.status === 'completed');
    const at = c.frames.length;
    c.cmd({ cmd: 'subscribe', threads: [keep.threadId], events: ['message', 'thread_updated'] });
    expect((await c.next('subscribed', at))['filter']).toMatchObject({ threads: [keep.threadId], events: ['message', 'thread_updated'] });
    await injectAndSettle(organism, 'other thread');
    await organism.inject('a', { text: 'again' }, { threadId: keep.threadId });
    await eventually(() => c.frames.slice(at).filter((f) => f.event === 'message').length >= 4);
    await new Promise((r) => setTimeout(r, 50));
    const after = c.frames.slice(c.frames.findIndex((f) => f.event === 'subscribed') + 1);
    for (const f of after) {
      expect(['message', 'thread_updated']).toContain(f.event);
      const threadId = (f['message'] as { threadId?: string } | undefined)?.threadId ?? (f['thread'] as { id?: string } | undefined)?.id;
      expect(threadId).toBe(keep.threadId);
    }
  });

  it('inject for operators, refused for viewers; ping; unknown and malformed commands', async () => {
    const { url } = await server();
    const op = await client(`${url}/ws?token=${OP}`);
    await op.next('connected');
    op.cmd({ cmd: 'inject', to: 'a', payload: { Text: { text: 'from ws' } }, thread_id: 'ws-thread', metadata: { org_id: 'acme' } });
    expect(await op.next('injected')).toMatchObject({ threadId: 'ws-thread', messageId: expect.any(String) });
    op.cmd({ cmd: 'inject', to: 'nobody', payload: {} });
    expect((await op.next('error'))['error']).toBe('Unknown target agent: nobody');
    const viewer = await client(`${url}/ws?token=${VIEW}`);
    await viewer.next('connected');
    viewer.cmd({ cmd: 'inject', to: 'a', payload: { text: 'x' } });
    expect((await viewer.next('error'))['error']).toBe('Operator role required');
    viewer.cmd({ cmd: 'ping' });
    await viewer.next('pong');
    const at = viewer.frames.length;
    viewer.cmd({ cmd: 'dance' });
    expect((await viewer.next('error', at))['error']).toBe('Unknown command: dance');
    const at2 = viewer.frames.length;
    viewer.socket.send('{not json');
    expect(String((await viewer.next('error', at2))['error'])).toMatch(/^Malformed command: /);
  });

  it('a command id is echoed by its reply, errors included; a bad id is refused', async () => {
    const { url } = await server();
    const op = await client(`${url}/ws?token=${OP}`);
    await op.next('connected');
    // Several commands in flight: each reply carries the id of the command it answers.
    op.cmd({ cmd: 'inject', id: 'inj-1', to: 'a', payload: { Text: { text: 'with id' } } });
    op.cmd({ cmd: 'ping', id: 7 });
    op.cmd({ cmd: 'subscribe', id: 'sub', events: ['message'] });
    op.cmd({ cmd: 'inject', id: 'inj-2', to: 'nobody', payload: {} });
    op.cmd({ cmd: 'dance', id: 'd' });
    await eventually(() => op.frames.filter((f) => f['id'] !== undefined).length === 5);
    const byId = Object.fromEntries(op.frames.filter((f) => f['id'] !== undefined).map((f) => [String(f['id']), f]));
    expect(byId['inj-1']).toMatchObject({ event: 'injected', threadId: expect.any(String) });
    expect(byId['7']).toMatchObject({ event: 'pong', id: 7 });
    expect(byId['sub']).toMatchObject({ event: 'subscribed' });
    expect(byId['inj-2']).toMatchObject({ event: 'error', error: 'Unknown target agent: nobody' });
    expect(byId['d']).toMatchObject({ event: 'error', error: 'Unknown command: dance' });
    const at = op.frames.length;
    op.cmd({ cmd: 'ping', id: { nested: true } });
    expect(await op.next('error', at)).toMatchObject({ error: 'Malformed command: id must be a string (up to 128 characters) or a number', cmd: 'ping' });
    const at2 = op.frames.length;
    op.cmd({ cmd: 'ping' });
    expect((await op.next('pong', at2))['id']).toBeUndefined();
  });

  it('resumes with since: replays what was missed, or resyncs when the boot changed', async () => {
    const { url, organism } = await server();
    const c = await client(`${url}/ws?token=${VIEW}`);
    const snap = await c.next('connected');
    await injectAndSettle(organism, 'one');
    await eventually(() => c.frames.some((f) => f.event === 'message'));
    const lastSeen = Math.max(...c.frames.map((f) => f.seq));
    c.socket.close();
    const missed = await injectAndSettle(organism, 'two');
    const back = await client(`${url}/ws?token=${VIEW}&since=${lastSeen}&bootId=${String(snap['bootId'])}`);
    const resumed = await back.next('connected');
    expect(resumed['resync']).toBeUndefined();
    await eventually(() => back.frames.some((f) => f.event === 'message' && (f['message'] as { threadId: string }).threadId === missed.threadId));
    expect(back.frames.filter((f) => f.event !== 'connected').every((f) => f.seq > lastSeen)).toBe(true);
    const stale = await client(`${url}/ws?token=${VIEW}&since=${lastSeen}&bootId=another-boot`);
    expect((await stale.next('connected'))['resync']).toBe(true);
  });

  it('refuses an upgrade over the connection limits before the handshake (503 server-wide, 429 per address; no 101), and admits again once a connection closes', async () => {
    const { url, app } = await server({ maxConnections: 2 });
    const first = await client(`${url}/ws?token=${VIEW}`);
    await client(`${url}/ws?token=${VIEW}`);
    const full = await upgrade(`${url}/ws?token=${VIEW}`);
    expect(full).toMatchObject({ status: 503, retryAfter: '1' });
    expect(JSON.parse(full.body)).toEqual({ detail: 'Too many connections (limit 2)', code: 'WS_TOO_MANY_CONNECTIONS' });
    // Unauthenticated upgrades are counted against the same limits before anything else runs.
    expect((await upgrade(`${url}/ws`)).status).toBe(503);
    first.socket.close();
    await first.closed;
    await eventually(async () => (await upgrade(`${url}/ws?token=${VIEW}`)).status === 101, 10_000, 'a free slot');
    const metrics = await app.inject({ method: 'GET', url: '/metrics', headers: { authorization: `Bearer ${OP}` } });
    expect(metrics.body).toMatch(/reason="too_many_connections"\} [1-9]/);

    const perAddress = await server({ maxPerIp: 1 });
    await client(`${perAddress.url}/ws?token=${VIEW}`);
    const second = await upgrade(`${perAddress.url}/ws/messages?token=${VIEW}`);
    expect(second).toMatchObject({ status: 429, retryAfter: '1' });
    expect(JSON.parse(second.body)).toEqual({ detail: 'Too many connections from 127.0.0.1 (limit 1)', code: 'WS_TOO_MANY_FROM_IP' });
  });

  it('a client that stops reading neither stalls the others nor keeps its backlog: it is resynced', async () => {
    const { url, organism } = await server({ sendBufferBytes: 256 * 1024 });
    const fast = await client(`${url}/ws?token=${VIEW}`);
    const slow = await client(`${url}/ws?token=${VIEW}`);
    await fast.next('connected');
    await slow.next('connected');
    (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.pause();
    // About 20 MB of frames, far more than the kernel buffers between the server and the paused client.
    const big = 'x'.repeat(5_000);
    for (let i = 0; i < 1000; i++) {
      await organism.inject('a', { text: `flood ${i} ${big}` });
      // Server and clients share this process: let the readers read, as they would elsewhere.
      await new Promise((r) => setImmediate(r));
    }
    await eventually(() => fast.frames.filter((f) => f.event === 'message').length >= 1000 * 4, 30_000, 'the fast client to get everything').catch((e) => {
      throw new Error(`${(e as Error).message}: got ${fast.frames.filter((f) => f.event === 'message').length}, resync ${fast.frames.some((f) => f['resync'] === true)}`);
    });
    expect(fast.frames.some((f) => f['resync'] === true)).toBe(false);
    (slow.socket as unknown as { _socket: { pause(): void; resume(): void } })._socket.resume();
    const resync = await eventually(() => slow.frames.find((f) => f.event === 'connected' && f['resync'] === true), 30_000, 'a resync');
    expect(resync['bootId']).toBe(organism.bootId);
    // It missed frames (they were dropped for it, not queued): fewer message frames than the fast one.
    expect(slow.frames.filter((f) => f.event === 'message').length).toBeLessThan(fast.frames.filter((f) => f.event === 'message').length);
  }, 60_000);

  it('closes every socket with 1001 when the server shuts down', async () => {
    const { url, app } = await server();
    const c = await client(`${url}/ws?token=${VIEW}`);
    await c.next('connected');
    await app.close();
    expect((await c.closed).code).toBe(1001);
  });
});

describe('/ws/messages', () => {
  it('carries message frames only, filtered by query parameters or a subscribe command', async () => {
    const { url, organism } = await server();
    const onlyB = await client(`${url}/ws/messages?token=${VIEW}&agent=b`);
    const all = await client(`${url}/ws/messages?token=${VIEW}`);
    await onlyB.next('connected');
    await all.next('connected');
    await injectAndSettle(organism, 'x');
    await eventually(() => all.frames.filter((f) => f.event === 'message').length >= 4);
    await new Promise((r) => setTimeout(r, 50));
    expect(all.frames.every((f) => f.event === 'message' || f.event === 'connected')).toBe(true);
    const forB = onlyB.frames.filter((f) => f.event === 'message');
    expect(forB.length).toBe(2); // a -> b, pending and acked
    for (const f of forB) expect(f['message']).toMatchObject({ from: 'a', to: 'b' });
    const at = all.frames.length;
    all.cmd({ cmd: 'subscribe', filter: { payload_types: ['Nope'] } });
    await all.next('subscribed', at);
    await injectAndSettle(organism, 'y');
    await new Promise((r) => setTimeout(r, 100));
    expect(all.frames.slice(at).filter((f) => f.event === 'message')).toEqual([]);
  });
});
