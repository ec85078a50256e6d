import { afterEach, describe, expect, it } from 'vitest';
import type { AgentInfo } from '../../src/organism/views.js';
import { AgentListBody, COMPARED_FIELDS } from '../../src/service/agent-list.js';
import { eventually, OPERATOR, probe, startService, type Service } from './fixture.js';

const info = (over: Partial<AgentInfo> = {}): AgentInfo => ({
  name: 'echo',
  description: 'Records',
  isAgent: false,
  peers: ['a', 'b'],
  payloadClass: 'Text',
  state: 'idle',
  currentThread: null,
  queueDepth: 0,
  lastActivity: null,
  messageCount: 0,
  model: null,
  inFlight: 0,
  ...over,
});

describe('AgentListBody: the kept GET /agents body', () => {
  const serializeCounting = () => {
    const calls: (readonly AgentInfo[])[] = [];
    return { calls, serialize: (agents: readonly AgentInfo[]) => (calls.push(agents), JSON.stringify(agents)) };
  };

  it('is reused while every figure is the same, and made again when any differs', () => {
    const list = new AgentListBody();
    const { calls, serialize } = serializeCounting();
    const first = list.of([info(), info({ name: 'slow' })], serialize);
    // Fresh objects with equal values: the same body, not serialized again.
    expect(list.of([info(), info({ name: 'slow' })], serialize)).toBe(first);
    expect(calls).toHaveLength(1);
    // One change per field of AgentInfo (the Record type wants every field), each to a listed one.
    const byField: Record<keyof AgentInfo, Partial<AgentInfo>[]> = {
      name: [{ name: 'echo2' }],
      description: [{ description: 'Records what it receives' }],
      isAgent: [{ isAgent: true }],
      peers: [{ peers: ['a'] }, { peers: ['a', 'c'] }, { peers: [] }],
      payloadClass: [{ payloadClass: 'Other' }],
      payloadClasses: [{ payloadClasses: ['Text', 'Other'] }],
      state: [{ state: 'paused' }, { state: 'processing' }],
      currentThread: [{ currentThread: 't1' }],
      queueDepth: [{ queueDepth: 1 }],
      lastActivity: [{ lastActivity: 1_700_000_000_000 }],
      messageCount: [{ messageCount: 1 }],
      model: [{ model: 'm' }],
      inFlight: [{ inFlight: 1 }],
    };
    expect(Object.keys(byField).sort()).toEqual(Object.keys(COMPARED_FIELDS).sort());
    const changes = Object.values(byField).flat();
    for (const change of changes) {
      const body = list.of([info(change), info({ name: 'slow' })], serialize);
      expect(JSON.parse(body.toString())[0], JSON.stringify(change)).toMatchObject(change);
      // ... and back: a new body again, equal to the first.
      expect(list.of([info(), info({ name: 'slow' })], serialize).toString()).toBe(first.toString());
    }
    expect(calls).toHaveLength(1 + 2 * changes.length);
    // A listener more, fewer, or in another order.
    expect(JSON.parse(list.of([info(), info({ name: 'slow' }), info({ name: 'x' })], serialize).toString())).toHaveLength(3);
    expect(JSON.parse(list.of([info()], serialize).toString())).toHaveLength(1);
    expect(JSON.parse(list.of([info({ name: 'slow' }), info()], serialize).toString())[0].name).toBe('slow');
  });

  it('keeps a copy of the arrays it was made from: one changed in place is a difference', () => {
    const list = new AgentListBody();
    const { calls, serialize } = serializeCounting();
    const peers = ['a'];
    list.of([info({ peers })], serialize);
    peers.push('b');
    expect(JSON.parse(list.of([info({ peers })], serialize).toString())[0].peers).toEqual(['a', 'b']);
    expect(calls).toHaveLength(2);
  });
});

describe('GET /api/v1/agents is never stale', () => {
  let svc: Service | undefined;
  afterEach(async () => {
    await svc?.close();
    svc = undefined;
  });

  /** The list's entry for `name`, and the same agent by its own route (never kept), read one after the other. */
  const both = async (s: Service, name: string) => {
    const list = (await s.request('GET', '/api/v1/agents')).body as { agents: Array<{ name: string }>; count: number };
    const one = (await s.request('GET', `/api/v1/agents/${name}`)).body;
    return { inList: list.agents.find((a) => a.name === name), one };
  };

  it('a state, queue depth, current thread, message count and last activity change shows in the very next response', async () => {
    svc = await startService();
    const s = svc;
    const get = async () => (await s.request('GET', '/api/v1/agents')).body as { agents: Array<Record<string, unknown>> };
    const echoIn = (body: { agents: Array<Record<string, unknown>> }) => body.agents.find((a) => a.name === 'echo')!;
    const slowIn = (body: { agents: Array<Record<string, unknown>> }) => body.agents.find((a) => a.name === 'slow')!;
    // Twice unchanged: the second answer is the kept body.
    expect(await get()).toEqual(await get());
    expect(echoIn(await get())).toMatchObject({ state: 'idle', queueDepth: 0 });

    // Pausing answers once the listener is paused: the very next list says so.
    expect((await s.request('POST', '/api/v1/agents/echo/pause')).status).toBe(200);
    expect(echoIn(await get())).toMatchObject({ state: 'paused' });
    const inject = async (to: string, text: string) => {
      const res = await s.request('POST', '/api/v1/inject', { body: { to, payload: { Text: { text } } } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };
    await inject('echo', 'held');
    await eventually(async () => (await s.request('GET', '/api/v1/agents/echo')).body.queueDepth === 1 || null, 'queued');
    expect(echoIn(await get())).toMatchObject({ state: 'paused', queueDepth: 1 });
    expect((await s.request('POST', '/api/v1/agents/echo/resume')).status).toBe(200);
    await eventually(() => probe().calls.some((c) => c.text === 'held') || null, 'delivered');
    await eventually(async () => (await s.request('GET', '/api/v1/agents/echo')).body.messageCount === 1 || null, 'counted');
    const { inList, one } = await both(s, 'echo');
    expect(inList).toEqual(one);
    expect(inList).toMatchObject({ state: 'idle', queueDepth: 0, messageCount: 1 });
    expect(one.lastActivity).not.toBeNull();

    // A delivery in flight: processing on its thread, then idle again once released.
    expect(slowIn(await get())).toMatchObject({ state: 'idle', currentThread: null });
    await inject('slow', 'hold-on');
    await eventually(async () => (await s.request('GET', '/api/v1/agents/slow')).body.state === 'processing' || null, 'processing');
    const busy = await both(s, 'slow');
    expect(busy.inList).toEqual(busy.one);
    expect(busy.inList).toMatchObject({ state: 'processing' });
    expect(busy.one.currentThread).not.toBeNull();
    probe().release.get('hold-on')!();
    await eventually(async () => (await s.request('GET', '/api/v1/agents/slow')).body.state === 'idle' || null, 'idle again');
    const done = await both(s, 'slow');
    expect(done.inList).toEqual(done.one);
    expect(done.inList).toMatchObject({ state: 'idle', currentThread: null });
  });

  it('HEAD answers the length of the body GET sends', async () => {
    svc = await startService();
    const get = await fetch(`${svc.url}/api/v1/agents`, { headers: { authorization: `Bearer ${OPERATOR}` } });
    const body = await get.text();
    const head = await fetch(`${svc.url}/api/v1/agents`, { method: 'HEAD', headers: { authorization: `Bearer ${OPERATOR}` } });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(head.headers.get('content-length')).toBe(String(Buffer.byteLength(body)));
    expect(get.headers.get('content-type')).toBe('application/json; charset=utf-8');
  });
});
