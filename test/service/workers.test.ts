import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startService, STORAGE_KINDS, VIEWER, type Service } from './fixture.js';

describe('GET /api/v1/workers', () => {
  let svc: Service | null = null;
  afterEach(async () => {
    await svc?.close();
    svc = null;
  });

  it('an embedded organism (SQLite) is one process: not a cluster, nobody listed', async () => {
    svc = await startService({ storage: 'sqlite' });
    const res = await svc.request('GET', '/api/v1/workers', { token: VIEWER });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ shared: false, workers: [], count: 0 });
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
