import { afterEach, describe, expect, it } from 'vitest';
import { send } from '../../src/core/handler.js';
import { buildApp } from '../../src/service/app.js';
import { eventually, listener, settled, startOrganism } from '../pump/harness.js';

const TOKEN = 'edges-viewer-token';
const cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

describe('GET /organism/edges', () => {
  it('counts messages per sender -> receiver and denied sends (not a declared peer) since start', async () => {
    const { organism } = await startOrganism([
      listener('a', { peers: ['b'], handler: (p) => send('b', p) }),
      listener('b'),
      // c may talk to nobody: its send to b is denied.
      listener('c', { peers: [], handler: (p) => send('b', p) }),
    ]);
    const app = await buildApp({ organism, version: 'test', auth: { tokens: [{ name: 'v', role: 'viewer', token: TOKEN }] } });
    cleanup.push(async () => {
      await app.close();
      await organism.stop();
    });
    for (const text of ['one', 'two']) await settled(organism, (await organism.inject('a', { text })).threadId);
    await organism.inject('c', { text: 'sneaky' });
    const get = async () => {
      const res = await app.inject({ method: 'GET', url: '/api/v1/organism/edges', headers: { authorization: `Bearer ${TOKEN}` } });
      expect(res.statusCode).toBe(200);
      return res.json() as { edges: Array<{ from: string; to: string; messages: number; denied: number; lastAt: string }>; count: number };
    };
    const body = await eventually(async () => {
      const b = await get();
      return b.edges.some((e) => e.from === 'c' && e.to === 'b' && e.denied === 1) ? b : null;
    });
    const edge = (from: string, to: string) => body.edges.find((e) => e.from === from && e.to === to);
    expect(edge('api', 'a')).toMatchObject({ messages: 2, denied: 0 });
    expect(edge('a', 'b')).toMatchObject({ messages: 2, denied: 0 });
    expect(edge('api', 'c')).toMatchObject({ messages: 1, denied: 0 });
    expect(edge('c', 'b')).toMatchObject({ messages: 0, denied: 1 });
    expect(body.count).toBe(body.edges.length);
    expect(Date.parse(edge('a', 'b')!.lastAt)).not.toBeNaN();
  });
});
