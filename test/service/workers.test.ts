import { Value } from 'typebox/value';
import { afterEach, describe, expect, it } from 'vitest';
import { ServerFrame } from '../../src/service/schemas/frames.js';
import { toFrame } from '../../src/service/ws/frames.js';
import { eventually, startService, STORAGE_KINDS, VIEWER, type Service } from './fixture.js';

describe('GET /api/v1/workers', () => {
  let svc: Service | null = null;
  afterEach(async () => {
    await svc?.close();
    svc = null;
  });

  it('an embedded organism (SQLite) is one process: not a cluster, the serve process listed alive with its start and heartbeat', async () => {
    svc = await startService({ storage: 'sqlite' });
    const before = Date.now();
    const res = await svc.request('GET', '/api/v1/workers', { token: VIEWER });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ shared: false, count: 1 });
    const [me] = res.body.workers;
    expect(me).toMatchObject({ kind: 'serve', handlers: true, pid: process.pid, alive: true, stoppedAt: null, concurrency: null, inFlight: 0, leaseSeconds: null });
    expect(me.name).toBe(`${me.host}:${process.pid}`);
    expect(me.configHash).toMatch(/^[0-9a-f]{8,}$/);
    expect(Date.parse(me.startedAt)).toBeLessThanOrEqual(before);
    expect(Date.parse(me.lastHeartbeat)).toBeGreaterThanOrEqual(before);
    // Its id is the organism's boot id (the `connected` frame's bootId).
    const organism = (await svc.request('GET', '/api/v1/organism', { token: VIEWER })).body;
    expect(me.id).toBe(organism.bootId);
  });

  it('an embedded organism counts what its one process has in flight', async () => {
    svc = await startService({ storage: 'sqlite' });
    await svc.request('POST', '/api/v1/inject', { body: { to: 'slow', payload: { Text: { text: 'held-open' } } } });
    const busy = await eventually(async () => {
      const w = (await svc!.request('GET', '/api/v1/workers', { token: VIEWER })).body.workers[0];
      return w.inFlight === 1 ? w : null;
    }, 'the slow delivery in flight');
    expect(busy).toMatchObject({ kind: 'serve', alive: true });
  });

  it.skipIf(!STORAGE_KINDS.includes('postgres'))('on PostgreSQL lists this process, alive, with its heartbeat; agents show what waits in the database', async () => {
    svc = await startService({ storage: 'postgres' });
    const res = await svc.request('GET', '/api/v1/workers', { token: VIEWER });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ shared: true, count: 1 });
    expect(res.body.workers[0]).toMatchObject({ kind: 'serve', handlers: true, pid: process.pid, alive: true, stoppedAt: null, concurrency: null, leaseSeconds: 30 });
    // A paused agent's message waits PENDING in the database: the queue depth reads it from there.
    await svc.request('POST', '/api/v1/agents/echo/pause');
    await svc.request('POST', '/api/v1/inject', { body: { to: 'echo', payload: { Text: { text: 'held' } } } });
    const agent = await eventually(async () => {
      const a = (await svc!.request('GET', '/api/v1/agents/echo', { token: VIEWER })).body;
      return a.queueDepth === 1 ? a : null;
    }, 'the queued message');
    expect(agent).toMatchObject({ state: 'paused' });
    const list = (await svc.request('GET', '/api/v1/agents', { token: VIEWER })).body.agents;
    expect(list.find((a: { name: string }) => a.name === 'echo').queueDepth).toBe(1);
  });
});

describe('the worker frames of /ws', () => {
  it('a worker change and deliveries taken back become frames that match the published schema', () => {
    const worker = {
      id: 'w-1',
      kind: 'worker' as const,
      name: 'w1',
      host: 'h',
      pid: 42,
      handlers: true,
      configHash: 'abc',
      startedAt: Date.UTC(2026, 0, 1),
      heartbeatAt: Date.UTC(2026, 0, 1, 0, 1),
      stoppedAt: null,
      alive: false,
      concurrency: 2,
      inFlight: 1,
      leaseMs: 3000,
    };
    const lost = JSON.parse(toFrame({ type: 'worker', change: 'lost', worker }).json);
    expect(lost).toMatchObject({ event: 'worker', change: 'lost', worker: { name: 'w1', alive: false, inFlight: 1, leaseSeconds: 3, lastHeartbeat: '2026-01-01T00:01:00.000Z' } });
    const taken = JSON.parse(toFrame({ type: 'deliveries_taken_back', worker: 'w-1', name: 'w1', retried: 2, failed: 1 }).json);
    expect(taken).toMatchObject({ event: 'deliveries_taken_back', worker: 'w-1', name: 'w1', retried: 2, failed: 1 });
    for (const f of [lost, taken]) expect(Value.Check(ServerFrame, f), JSON.stringify(f)).toBe(true);
  });
});
