import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Value } from 'typebox/value';
import WebSocket from 'ws';
import { createClient, OrganismApiError, OrganismCommandError, type OrganismSocket, type ServerFrame, type WebSocketFactory, type WebSocketLike } from '../../src/client/index.js';
import { ServerFrame as ServerFrameSchema } from '../../src/service/schemas/frames.js';
import { BASE_LISTENERS, eventually, OPERATOR, organismYaml, probe, startService, VIEWER, type Service } from '../service/fixture.js';

const APPROVER = 'client-approver-token-0123456789';

/** A code listener that asks the people of `desk` (builtin:human) about what the API sends it. */
const ASKER = `export function ask(payload, ctx) {
  if (ctx.from === 'api') return { to: 'desk', payload: { text: 'ok? ' + payload.text }, payloadType: 'Text' };
  return undefined;
}
`;
const PEOPLE = [
  { name: 'asker', yaml: '  - name: asker\n    description: Asks the desk\n    payload: Text\n    peers: [desk]\n    handler: ./asker.ts#ask' },
  { name: 'desk', yaml: '  - name: desk\n    description: People\n    payload: Text\n    peers: [echo]\n    handler: builtin:human' },
];

/** Every frame the client hands out must match the schema its types are derived from. */
const mismatched: string[] = [];
function recordFrames(live: OrganismSocket): ServerFrame[] {
  const frames: ServerFrame[] = [];
  live.on('frame', (f) => {
    if (!Value.Check(ServerFrameSchema, f)) mismatched.push(JSON.stringify(f).slice(0, 400));
    frames.push(f);
  });
  return frames;
}

/**
 * The `ws` package, keeping each socket so a test can cut the connection like a network drop
 * would, and refusing to connect while `offline` is set.
 */
function droppableFactory(): { factory: WebSocketFactory; sockets: WebSocket[]; urls: string[]; net: { offline: boolean } } {
  const sockets: WebSocket[] = [];
  const urls: string[] = [];
  const net = { offline: false };
  const factory: WebSocketFactory = (url, auth) => {
    if (net.offline) throw new Error('offline');
    urls.push(url);
    const s = new WebSocket(url, { headers: auth.headers });
    sockets.push(s);
    return s as unknown as WebSocketLike;
  };
  return { factory, sockets, urls, net };
}

describe('organism/client against the real server (SQLite storage)', () => {
  let svc: Service;
  const opened: OrganismSocket[] = [];

  beforeAll(async () => {
    // gate: an LLM agent whose reply waits for approval (its mock script proposes one reply).
    const gate = { name: 'gate', yaml: '  - name: gate\n    handler: builtin:llm\n    prompt: Gate.\n    model: mock-1\n    payload: Text\n    approval: [reply]' };
    const yaml = organismYaml([...BASE_LISTENERS, ...PEOPLE, gate]).replace(
      '      script:\n',
      '      script:\n        gate:\n          - calls: [{name: reply, arguments: {payloadType: Text, payload: {text: ok}}}]\n',
    );
    svc = await startService({
      storage: 'sqlite',
      yaml,
      files: { 'asker.ts': ASKER },
      app: {
        ws: { replayBuffer: 8 },
        auth: {
          tokens: [
            { name: 'ops', role: 'operator', token: OPERATOR },
            { name: 'dashboard', role: 'viewer', token: VIEWER },
            { name: 'alice', role: 'approver', token: APPROVER },
          ],
        },
      },
    });
  });
  afterEach(() => {
    expect(mismatched).toEqual([]);
  });
  afterAll(async () => {
    for (const s of opened) s.close();
    await svc?.close();
  });

  function watch(...args: Parameters<Service['client']['watch']>): OrganismSocket {
    const live = svc.client.watch(...args);
    opened.push(live);
    return live;
  }

  async function settled(threadId: string) {
    return eventually(async () => {
      const t = await svc.client.threads.get(threadId).catch(() => null);
      return t && t.status !== 'active' ? t : null;
    }, `thread ${threadId} to settle`);
  }

  it('calls every REST route of the OpenAPI document with a 2xx answer that matches its schema', async () => {
    const c = svc.client;
    expect(await c.health()).toMatchObject({ status: 'healthy', organism: 'service-test' });
    expect((await c.openapi())['openapi']).toMatch(/^3\.1/);
    expect(await c.organism.info()).toMatchObject({ name: 'service-test', status: 'running' });
    expect((await c.organism.config())['name']).toBe('service-test');
    expect((await c.organism.edges()).edges).toEqual(expect.any(Array));
    expect(await c.workers()).toMatchObject({ shared: false, count: 1, workers: [{ kind: 'serve', pid: process.pid, alive: true, leaseSeconds: null }] });
    expect((await c.whoami()).role).toBe('operator');
    expect(await c.organism.reload({ dryRun: true })).toMatchObject({ success: true, dryRun: true });
    expect((await c.capabilities.list()).count).toBe(8);
    expect((await c.capabilities.get('greeter')).rootTag).toBe('Greeting');
    expect((await c.agents.list()).agents.map((a) => a.name)).toContain('echo');
    expect((await c.agents.get('echo')).payloadClass).toBe('Text');
    expect((await c.agents.config('greeter')).peers).toEqual(['shouter']);
    expect((await c.agents.schema('greeter')).contentType).toBe('application/xml');
    expect(await c.agents.pause('shouter')).toEqual({ success: true, agent: 'shouter', state: 'paused' });
    expect(await c.agents.resume('shouter')).toEqual({ success: true, agent: 'shouter', state: 'idle' });

    const { threadId, messageId } = await c.inject({ to: 'greeter', payload: { Greeting: { name: 'Ada' } }, metadata: { orgId: 'acme' } });
    const thread = await settled(threadId);
    expect(thread.messages[0]).toMatchObject({ id: messageId, from: 'api', to: 'greeter' });
    expect((await c.threads.list({ status: 'completed', limit: 10 })).threads.map((t) => t.id)).toContain(threadId);
    expect((await c.threads.messages(threadId, { limit: 1 })).messages[0]?.id).toBe(messageId);
    expect((await c.messages.list({ threadId })).total).toBeGreaterThanOrEqual(2);
    expect((await c.threads.llmCalls(threadId)).calls[0]).toMatchObject({ agent: 'greeter', tools: ['send_to_shouter', 'reply'] });
    expect((await c.journal.llmCalls(messageId)).count).toBe(1);
    expect((await c.agents.llmCalls('greeter', { limit: 5 })).calls[0]).toMatchObject({ agent: 'greeter', threadId, record: 'full' });
    const waterfall = await c.threads.waterfall(threadId);
    expect(waterfall.deliveries[0]).toMatchObject({ messageId, to: 'greeter', state: 'ACKED' });
    expect(waterfall.calls[0]).toMatchObject({ messageId, agent: 'greeter' });

    expect((await c.usage.overview()).usage.totals.requestCount).toBeGreaterThan(0);
    expect((await c.usage.threads()).defaultMaxTokens).toBe(50000);
    expect((await c.usage.agent('greeter')).requestCount).toBeGreaterThan(0);
    expect((await c.usage.model('mock-small')).requestCount).toBeGreaterThan(0);
    const history = await c.usage.history({ orgId: 'acme', limit: 10 });
    expect(history.events[0]).toMatchObject({ threadId, agentId: 'greeter', model: 'mock-small' });
    expect((await c.usage.billing({ orgId: 'acme' })).requestCount).toBeGreaterThan(0);
    expect((await c.usage.daily()).count).toBeGreaterThan(0);

    // A budget exists while a thread is live: hold one open on the slow listener.
    const held = await c.inject({ to: 'slow', payload: { Text: { text: 'client-held' } } });
    await eventually(() => probe().release.get('client-held'), 'slow to start');
    // The slow listener is a code tool: a budget comes with the first LLM call, so give the
    // thread one through the greeter and set its ceiling while the thread is still open.
    await c.inject({ to: 'greeter', payload: { Greeting: { name: 'Budget' } }, threadId: held.threadId });
    const budget = await eventually(() => c.usage.thread(held.threadId).catch(() => null), 'a budget');
    expect(budget.threadId).toBe(held.threadId);
    expect((await c.usage.setThreadBudget(held.threadId, 60000)).maxTokens).toBe(60000);
    expect(await c.threads.kill(held.threadId)).toEqual({ success: true, threadId: held.threadId });
    // The killed thread's budget is kept: listed among the finished ones, not the live ones.
    const finished = await eventually(async () => {
      const page = await c.usage.threads({ state: 'finished' });
      return page.threads.some((t) => t.threadId === held.threadId) ? page : null;
    }, 'the budget among the finished');
    expect(finished).toMatchObject({ state: 'finished', offset: 0, limit: 1000 });
    expect((await c.usage.threads()).threads.map((t) => t.threadId)).not.toContain(held.threadId);

    const failing = await c.inject({ to: 'broken', payload: { text: 'boom' } });
    await eventually(async () => (await c.journal.get(failing.messageId)).deliveryState === 'FAILED' || null, 'a FAILED entry');
    expect((await c.journal.list({ state: 'FAILED' })).entries.map((e) => e.id)).toContain(failing.messageId);
    expect((await c.journal.stats()).counts.FAILED).toBeGreaterThan(0);
    expect(await c.journal.redeliver(failing.messageId)).toEqual({ success: true, messageId: failing.messageId, threadId: failing.threadId, state: 'PENDING' });
    await eventually(
      async () => ((await c.journal.get(failing.messageId)).attempts === 2 && (await c.journal.get(failing.messageId)).deliveryState === 'FAILED') || null,
      'the redelivery to fail',
    );
    expect(await c.journal.redeliverMany({ messageIds: [failing.messageId] })).toMatchObject({ matched: 1, attempted: 1, redelivered: 1, skipped: [] });
    // Bulk kill by ids: a thread held open on the slow listener.
    const held2 = await c.inject({ to: 'slow', payload: { Text: { text: 'client-held-2' } } });
    await eventually(() => probe().release.get('client-held-2'), 'slow to start again');
    // Hold and resume (issue 30): a thread held open on the slow listener, then killed; a finished thread erased.
    const held3 = await c.inject({ to: 'slow', payload: { Text: { text: 'client-held-3' } } });
    await eventually(() => probe().release.get('client-held-3'), 'slow to start a third time');
    expect(await c.threads.pause(held3.threadId, { reason: 'look first' })).toMatchObject({ success: true, threadId: held3.threadId, status: 'held', hold: { reason: 'look first' } });
    expect(await c.threads.resume(held3.threadId, { raiseLimits: true })).toMatchObject({ success: true, status: 'active', hold: { held: false, limitFactor: 2 } });
    expect(await c.threads.killMany({ threadIds: [held2.threadId] })).toMatchObject({ matched: 1, attempted: 1, killed: 1, skipped: [] });
    expect(await c.threads.erase(held2.threadId)).toMatchObject({ success: true, threadId: held2.threadId, erasure: { erasedBy: 'ops' } });

    // The inbox: an ask answered by an approver (its thread completes), one rejected with a note.
    const asked = await c.inject({ to: 'asker', payload: { text: 'refund' } });
    const item = await eventually(async () => (await c.inbox.list({ threadId: asked.threadId })).items[0], 'the ask listed');
    expect(item).toMatchObject({ kind: 'ask', threadId: asked.threadId, listener: 'desk', from: 'asker', payload: { text: 'ok? refund' }, expiresAt: null });
    // What an answer sent on to desk's peer must meet comes with the item (an approver may not read /capabilities).
    expect(Object.keys(item.peerSchemas)).toEqual(['echo']);
    expect(item.peerSchemas['echo']).toMatchObject({ title: 'Text', required: ['text'] });
    expect((await c.inbox.list({ listener: 'desk', kind: 'ask', limit: 10 })).total).toBe(1);
    expect((await c.organism.info()).inbox.open).toBe(1);
    const alice = svc.clientAs(APPROVER);
    expect((await alice.whoami()).role).toBe('approver');
    const answered = await alice.inbox.answer(item.id, { payload: { text: 'yes' }, note: 'seen' });
    expect(answered.message).toMatchObject({ from: 'desk', to: 'asker', payload: { text: 'yes' }, threadId: asked.threadId });
    expect((await settled(asked.threadId)).status).toBe('completed');
    const toPeer = await c.inject({ to: 'asker', payload: { text: 'forward' } });
    const second = await eventually(async () => (await c.inbox.list({ threadId: toPeer.threadId })).items[0], 'the second ask');
    expect((await alice.inbox.answer(second.id, { payload: { text: 'for echo' }, to: 'echo' })).message).toMatchObject({ from: 'desk', to: 'echo' });
    const third = await c.inject({ to: 'asker', payload: { text: 'no' } });
    const refused = await eventually(async () => (await c.inbox.list({ threadId: third.threadId })).items[0], 'the third ask');
    expect(await c.inbox.reject(refused.id, 'not this one')).toMatchObject({ id: refused.id, outcome: 'rejected', by: 'ops', note: 'not this one' });
    expect((await c.inbox.list()).total).toBe(0);
    // An approval: gate's reply waits for a person; approving it sends it.
    const gated = await c.inject({ to: 'gate', payload: { text: 'let me through' } });
    const approval = await eventually(async () => (await c.inbox.list({ kind: 'approval', threadId: gated.threadId })).items[0] ?? null, 'the approval');
    expect(approval.proposedCalls).toEqual([{ id: expect.any(String), name: 'reply', arguments: { payloadType: 'Text', payload: { text: 'ok' } } }]);
    expect(await alice.inbox.approve(approval.id, { note: 'fine' })).toMatchObject({ kind: 'approval', outcome: 'approved', note: 'fine', by: 'alice' });

    // Time travel: a fork of the completed ask thread, then both side by side.
    const forked = await c.threads.fork(asked.threadId, { dryRun: true });
    expect(forked).toMatchObject({ threadId: null, dryRun: true, forkedFrom: { threadId: asked.threadId } });
    const greeted = await c.inject({ to: 'greeter', payload: { Greeting: { name: 'Fork' } } });
    await settled(greeted.threadId);
    const fork = await c.threads.fork(greeted.threadId);
    expect(fork).toMatchObject({ forkedFrom: { threadId: greeted.threadId, messageId: greeted.messageId }, replay: 'record', dryRun: false });
    expect((await settled(fork.threadId!)).forkedFrom).toEqual({ threadId: greeted.threadId, messageId: greeted.messageId });
    expect(await c.threads.compare(greeted.threadId, fork.threadId!)).toMatchObject({ firstDivergence: null, firstCallDivergence: null, b: { replayedCalls: 1, cost: 0 } });
    expect(await c.threads.export(fork.threadId!)).toMatchObject({ format: 'organism.cassette', version: 1, thread: { id: fork.threadId, forkedFrom: { threadId: greeted.threadId } } });
    // Schedules and webhooks (issue 31).
    expect(await c.schedules.add({ name: 'hourly', every: '1h', to: 'echo', payload: { Text: { text: 'tick' } } })).toMatchObject({ name: 'hourly', source: 'api', catchUp: true });
    expect((await c.schedules.list()).schedules.map((x) => x.name)).toEqual(['hourly']);
    expect((await c.schedules.get('hourly')).nextRunAt).toMatch(/T\d\d:00:00\.000Z$/);
    expect(await c.schedules.remove('hourly')).toEqual({ success: true });
    expect(await c.webhooks.list()).toEqual({ webhooks: [], deliveries: [], limit: 50 });

    expect(await c.usage.reset()).toEqual({ success: true, message: 'Usage tracking reset' });
    expect(await c.organism.restart()).toEqual({ success: true, status: 'restarting' });
    expect(await c.organism.stop()).toEqual({ success: true, status: 'stopping' });
    expect(svc.restarts).toBe(1);
    expect(svc.stops).toBe(1);

    // Coverage: the client reached every documented route with a success.
    const succeeded = new Set([...svc.checker.checked].filter((k) => /\s2\d\d$/.test(k)).map((k) => k.replace(/\s\d+$/, '')));
    const documented = svc.checker.routes.map((r) => `${r.method} ${r.template}`);
    expect(documented.filter((r) => !succeeded.has(r))).toEqual([]);
  });

  it('throws OrganismApiError with the status, code, detail and field errors', async () => {
    const err = await svc.client.agents.get('nobody').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OrganismApiError);
    expect(err).toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND', detail: 'Agent not found: nobody' });
    const invalid = (await svc.client.inject({ to: 'greeter', payload: { Greeting: { name: 5 } } }).catch((e: unknown) => e)) as OrganismApiError;
    expect(invalid.status).toBe(422);
    expect(invalid.errors).toContainEqual(expect.objectContaining({ location: 'payload', field: 'name' }));
    const denied = (await svc
      .clientAs(VIEWER)
      .agents.pause('echo')
      .catch((e: unknown) => e)) as OrganismApiError;
    expect(denied).toMatchObject({ status: 403, detail: 'Operator role required' });
    const anonymous = (await svc
      .clientAs(null)
      .organism.info()
      .catch((e: unknown) => e)) as OrganismApiError;
    expect(anonymous).toMatchObject({ status: 401, detail: 'Authentication required' });
    // The inbox's refusals: a viewer may not answer; a closed or unknown item.
    const viewerAnswer = (await svc
      .clientAs(VIEWER)
      .inbox.answer('x', { payload: { text: 'y' } })
      .catch((e: unknown) => e)) as OrganismApiError;
    expect(viewerAnswer).toMatchObject({ status: 403, detail: 'Approver or operator role required' });
    const unknown = (await svc.client.inbox.reject('no-such-item', 'n').catch((e: unknown) => e)) as OrganismApiError;
    expect(unknown.status).toBe(404);
    const bounds = (await svc.client.threads.list({ limit: 101 }).catch((e: unknown) => e)) as OrganismApiError;
    expect(bounds).toMatchObject({ status: 422, detail: 'limit must be <= 100' });
  });

  it('watch(): snapshot, typed frames, and the inject / subscribe / ping commands', async () => {
    const live = watch();
    const frames = recordFrames(live);
    const snapshot = await live.ready();
    expect(snapshot.bootId).toBe(svc.organism.bootId);
    expect(snapshot.agents?.map((a) => a.name)).toContain('greeter');
    expect(await live.ping()).toMatchObject({ event: 'pong' });

    const sub = await live.subscribe({ events: ['message', 'thread_updated'], agents: ['echo'] });
    expect(sub.filter).toEqual({ threads: [], agents: ['echo'], payloadTypes: [], events: ['message', 'thread_updated'] });
    const injected = await live.inject({ to: 'echo', payload: { Text: { text: 'via socket' } } });
    expect(injected).toMatchObject({ event: 'injected', threadId: expect.any(String), messageId: expect.any(String) });
    const acked = await eventually(() => frames.find((f) => f.event === 'message' && f.message.id === injected.messageId && f.message.deliveryState === 'ACKED'), 'the ACKED message frame');
    expect(acked.event === 'message' && acked.message.payload).toEqual({ text: 'via socket' });
    // The filter held: only messages and thread updates, all concerning echo.
    const after = frames.slice(frames.indexOf(sub as ServerFrame) + 1);
    expect(after.every((f) => ['message', 'thread_updated', 'injected'].includes(f.event))).toBe(true);

    const refused = await live.inject({ to: 'nobody', payload: { Text: { text: 'x' } } }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OrganismCommandError);
    expect((refused as OrganismCommandError).message).toBe('Unknown target agent: nobody');
    // Replies reach the command they answer even when several are in flight.
    const [p1, s1, p2] = await Promise.all([live.ping(), live.subscribe({}), live.ping()]);
    expect([p1.event, s1.event, p2.event]).toEqual(['pong', 'subscribed', 'pong']);
  });

  it('reconnects after a drop with since/bootId and receives the frames it missed', async () => {
    const { factory, sockets, urls } = droppableFactory();
    const client = createClient({ baseUrl: svc.url, token: OPERATOR, webSocket: factory });
    const live = client.watch({ filter: { agents: ['echo'], events: ['message'] }, backoff: { initialMs: 20 } });
    opened.push(live);
    const frames = recordFrames(live);
    let resyncs = 0;
    let drops = 0;
    live.on('resync', () => resyncs++);
    live.on('disconnected', (d) => void (drops += d.reconnecting ? 1 : 0));
    await live.ready();

    sockets[0]!.terminate(); // the connection drops
    await eventually(() => drops === 1, 'the drop');
    const { messageId } = await svc.client.inject({ to: 'echo', payload: { Text: { text: 'while away' } } });
    await eventually(() => frames.find((f) => f.event === 'message' && f.message.id === messageId && f.message.deliveryState === 'ACKED'), 'the missed frame');
    expect(urls.length).toBeGreaterThanOrEqual(2);
    const resumeUrl = new URL(urls[1]!);
    expect(resumeUrl.searchParams.get('bootId')).toBe(svc.organism.bootId);
    expect(Number(resumeUrl.searchParams.get('since'))).toBeGreaterThan(0);
    expect(resumeUrl.searchParams.getAll('agent')).toEqual(['echo']);
    expect(frames.filter((f) => f.event === 'connected').some((f) => f.event === 'connected' && f.resumed === true)).toBe(true);
    expect(resyncs).toBe(0);
  });

  it('reports resync when the frames it missed are gone (replay buffer overrun)', async () => {
    const { factory, sockets, net } = droppableFactory();
    const live = createClient({ baseUrl: svc.url, token: OPERATOR, webSocket: factory }).watch({ backoff: { initialMs: 10, maxMs: 50 } });
    opened.push(live);
    const resyncs: ServerFrame[] = [];
    live.on('resync', (f) => resyncs.push(f));
    await live.ready();
    const seqBefore = live.lastSeq;

    net.offline = true;
    sockets[0]!.terminate();
    await eventually(() => !live.connected, 'the drop');
    // More frames than the replay buffer (8) holds happen while it is away.
    for (let i = 0; i < 6; i++) await svc.client.inject({ to: 'echo', payload: { Text: { text: `overrun ${i}` } } });
    net.offline = false;
    const snapshot = await eventually(() => resyncs[0], 'a resync', 20_000);
    expect(snapshot.event === 'connected' && snapshot.resync).toBe(true);
    expect(live.lastSeq).toBeGreaterThan(seqBefore);
  });
});

describe('organism/client as a browser uses it', () => {
  let svc: Service;
  beforeAll(async () => {
    svc = await startService({ storage: 'sqlite' });
  });
  afterAll(async () => {
    await svc?.close();
  });

  it("the default WebSocket of a browser authenticates with the bearer subprotocol: the token is never in the socket's URL", async () => {
    const g = globalThis as Record<string, unknown>;
    const opened: Array<{ url: string; protocols: string[] | undefined; socket: WebSocket }> = [];
    // A browser's WebSocket: (url, protocols), no way to set headers.
    class BrowserWebSocket extends WebSocket {
      constructor(url: string, protocols?: string[]) {
        super(url, protocols);
        opened.push({ url, protocols, socket: this });
      }
    }
    const saved = { window: g['window'], WebSocket: g['WebSocket'] };
    g['window'] = {};
    g['WebSocket'] = BrowserWebSocket;
    let live: OrganismSocket | null = null;
    try {
      live = createClient({ baseUrl: svc.url, token: OPERATOR }).watch({ reconnect: false });
      const connected = await live.ready();
      expect(connected.event).toBe('connected');
    } finally {
      g['window'] = saved.window;
      g['WebSocket'] = saved.WebSocket;
      live?.close();
    }
    expect(opened).toHaveLength(1);
    expect(opened[0]!.url).not.toContain('token');
    expect(opened[0]!.url).not.toContain(OPERATOR);
    expect(opened[0]!.protocols).toEqual(['organism.v1', `bearer.${Buffer.from(OPERATOR).toString('base64url')}`]);
    expect(opened[0]!.socket.protocol).toBe('organism.v1');
  });

  it("calls the global fetch as a function, not as a method of the client (a browser's fetch throws Illegal invocation otherwise)", async () => {
    const realFetch = globalThis.fetch;
    globalThis.fetch = function (this: unknown, ...args: Parameters<typeof fetch>) {
      if (this !== undefined && this !== globalThis) throw new TypeError('Illegal invocation');
      return realFetch(...args);
    } as typeof fetch;
    try {
      const who = await createClient({ baseUrl: svc.url, token: OPERATOR }).whoami();
      expect(who.role).toBe('operator');
    } finally {
      globalThis.fetch = realFetch;
    }
  });
});

describe('organism/client in a browser bundle', () => {
  it('bundles for the browser with no Node built-in and without the ws package', async () => {
    const { build } = await import('esbuild');
    const result = await build({
      entryPoints: [new URL('../../src/client/index.ts', import.meta.url).pathname],
      bundle: true,
      platform: 'browser',
      format: 'esm',
      write: false,
      metafile: true,
      logLevel: 'silent',
    });
    const inputs = Object.keys(result.metafile.inputs);
    expect(inputs.filter((f) => f.includes('node_modules') || f.startsWith('node:'))).toEqual([]);
    expect(inputs.every((f) => f.startsWith('src/client/'))).toBe(true);
  });
});
