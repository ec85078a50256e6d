import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../pump/harness.js';
import { connect, injectAndSettle, OP, pluginServer, runCleanup, threadOf, upgrade, VIEW } from './ws-helpers/harness.js';

afterEach(runCleanup);

describe('wsPlugin on a bare Fastify: authentication on upgrade', () => {
  it('refuses a missing or unknown token with HTTP 401, a detail body and WWW-Authenticate', async () => {
    const { url } = await pluginServer();
    for (const target of [`${url}/ws`, `${url}/ws?token=wrong`, `${url}/ws/messages`]) {
      const r = await upgrade(target);
      expect(r.status).toBe(401);
      expect(JSON.parse(r.body)).toEqual({ detail: 'Authentication required' });
      expect(r.wwwAuthenticate).toBe('Bearer');
    }
    expect((await upgrade(`${url}/ws`, { authorization: 'Bearer wrong' })).status).toBe(401);
    expect((await upgrade(`${url}/ws`, { authorization: `Basic ${OP}` })).status).toBe(401);
  });

  it('accepts the token in the Authorization header or in the token query parameter', async () => {
    const { url, organism } = await pluginServer();
    const viaHeader = await connect(`${url}/ws`, { headers: { authorization: `Bearer ${OP}` } });
    const viaQuery = await connect(`${url}/ws/messages?token=${VIEW}`);
    expect((await viaHeader.next('connected'))['bootId']).toBe(organism.bootId);
    expect((await viaQuery.next('connected'))['bootId']).toBe(organism.bootId);
  });

  it('the role comes from the token: a header operator may inject, a query viewer may not', async () => {
    const { url } = await pluginServer();
    const op = await connect(`${url}/ws`, { headers: { authorization: `bearer ${OP}` } });
    await op.next('connected');
    op.cmd({ cmd: 'inject', to: 'a', payload: { text: 'hello' } });
    expect(await op.next('injected')).toMatchObject({ threadId: expect.any(String), messageId: expect.any(String) });
    const viewer = await connect(`${url}/ws?token=${VIEW}`);
    await viewer.next('connected');
    viewer.cmd({ cmd: 'inject', to: 'a', payload: { text: 'hello' } });
    expect(await viewer.next('error')).toMatchObject({ error: 'Operator role required', cmd: 'inject' });
  });
});

describe('/ws snapshot and events', () => {
  it('the first frame is the snapshot: bootId, organism, agents, newest threads, usage totals, journal stats', async () => {
    const { url, organism } = await pluginServer();
    const first = await injectAndSettle(organism, 'one');
    const second = await injectAndSettle(organism, 'two');
    organism.flush();
    const c = await connect(`${url}/ws?token=${VIEW}`);
    const snap = await c.next('connected');
    expect(c.frames[0]).toBe(snap);
    expect(snap).toMatchObject({
      bootId: organism.bootId,
      organism: { name: 'test', status: 'running', version: 'plugin-test', agentCount: 2, startedAt: expect.stringMatching(/Z$/) },
      usage: { requestCount: 0, totalTokens: 0 },
      journal: { counts: expect.any(Object) },
    });
    expect(snap['resync']).toBeUndefined();
    const agents = snap['agents'] as Array<Record<string, unknown>>;
    expect(agents.map((a) => a['name'])).toEqual(['a', 'b']);
    expect(agents[0]).toMatchObject({ isAgent: false, peers: ['b'], state: 'idle', payloadClass: 'Text' });
    const threads = snap['threads'] as Array<{ id: string; status: string; createdAt: string }>;
    expect(threads.map((t) => t.id)).toEqual([second.threadId, first.threadId]);
    expect(threads[0]).toMatchObject({ status: 'completed', createdAt: expect.stringMatching(/Z$/) });
  });

  it('a snapshot holds at most 100 threads', async () => {
    const { url, organism } = await pluginServer();
    await Promise.all(Array.from({ length: 105 }, (_, i) => injectAndSettle(organism, `t${i}`)));
    organism.flush();
    const c = await connect(`${url}/ws?token=${VIEW}`);
    expect((await c.next('connected'))['threads']).toHaveLength(100);
  });

  it('events flowing while the snapshot is read come after it, never before, with higher seqs', async () => {
    const { url, organism } = await pluginServer();
    let flooding = true;
    const flood = (async () => {
      // Yield a macrotask per inject: an in-memory inject settles in microtasks and would starve the sockets.
      while (flooding) {
        await organism.inject('a', { text: 'busy' });
        await new Promise((r) => setImmediate(r));
      }
    })();
    const clients = await Promise.all(Array.from({ length: 5 }, () => connect(`${url}/ws?token=${VIEW}`)));
    for (const c of clients) await c.next('connected');
    await eventually(() => clients.every((c) => c.of('message').length > 0));
    flooding = false;
    await flood;
    for (const c of clients) {
      expect(c.frames[0]!.event).toBe('connected');
      const seqs = c.frames.map((f) => f.seq);
      expect(seqs).toEqual([...seqs].sort((x, y) => x - y));
    }
  });

  it('sends every kind of runtime event: message, thread_created/updated, agent_state, peer_denied, organism_status', async () => {
    const { url, organism } = await pluginServer();
    const c = await connect(`${url}/ws?token=${VIEW}`);
    await c.next('connected');
    const { threadId } = await injectAndSettle(organism, 'hello');
    await eventually(() => c.of('message').length >= 4 && c.of('thread_updated').length > 0);
    const messages = c.of('message').map((f) => f['message'] as Record<string, unknown>);
    expect(messages[0]).toMatchObject({ threadId, from: 'api', to: 'a', payloadType: 'Text', payload: { text: 'hello' }, parentId: null, deliveryState: 'PENDING' });
    expect(messages.some((m) => m['from'] === 'a' && m['to'] === 'b' && m['deliveryState'] === 'ACKED')).toBe(true);
    expect(c.of('thread_created')[0]!['thread']).toMatchObject({ id: threadId, status: 'active' });
    expect(c.of('agent_state').some((f) => f['agent'] === 'a' && f['state'] === 'processing' && f['currentThread'] === threadId)).toBe(true);
    organism.bus.emit({ type: 'peer_denied', from: 'a', to: 'z', threadId, messageId: 'm', reason: 'z is not a peer of a' });
    expect(await c.next('peer_denied')).toMatchObject({ from: 'a', to: 'z', threadId, reason: 'z is not a peer of a' });
    organism.bus.emit({ type: 'budget_warning', threadId, agent: 'a', severity: 'warning', threshold: 0.75, percentUsed: 80, tokensUsed: 80, tokensRemaining: 20, maxTokens: 100 });
    expect(await c.next('budget_warning')).toMatchObject({ threadId, agent: 'a', percentUsed: 80 });
    const stopped = organism.stop();
    expect(await c.next('organism_status')).toMatchObject({ status: 'stopping' });
    await stopped;
  });
});

describe('/ws commands', () => {
  it('subscribe replaces the filter; the thread filter applies to agent states and thread records too', async () => {
    const { url, organism } = await pluginServer();
    const c = await connect(`${url}/ws?token=${VIEW}`);
    await c.next('connected');
    const watched = await injectAndSettle(organism, 'watched');
    let at = c.frames.length;
    c.cmd({ cmd: 'subscribe', threads: [watched.threadId] });
    expect((await c.next('subscribed', at))['filter']).toEqual({ threads: [watched.threadId], agents: [], payloadTypes: [], events: [] });
    at = c.frames.length;
    await injectAndSettle(organism, 'elsewhere');
    await injectAndSettle(organism, 'again', watched.threadId);
    await eventually(() => c.frames.slice(at).filter((f) => f.event === 'message').length >= 4);
    const seen = c.frames.slice(at);
    expect(new Set(seen.map((f) => f.event))).toEqual(new Set(['message', 'agent_state', 'thread_updated']));
    for (const f of seen) expect(threadOf(f)).toBe(watched.threadId);
    // A new subscribe replaces the old filter (not merged): now only agent states.
    at = c.frames.length;
    c.cmd({ cmd: 'subscribe', filter: { events: ['agent_state'] } });
    await c.next('subscribed', at);
    const other = await injectAndSettle(organism, 'any thread');
    await eventually(() => c.frames.slice(at).some((f) => f.event === 'agent_state' && f['currentThread'] === other.threadId));
    expect(c.frames.slice(at).every((f) => f.event === 'subscribed' || f.event === 'agent_state')).toBe(true);
  });

  it('a bad filter is answered with an error and leaves the filter as it was', async () => {
    const { url } = await pluginServer();
    const c = await connect(`${url}/ws?token=${VIEW}`);
    await c.next('connected');
    c.cmd({ cmd: 'subscribe', events: ['mesage'] });
    expect(String((await c.next('error'))['error'])).toMatch(/^Invalid filter: unknown event mesage/);
    c.cmd({ cmd: 'subscribe', payload_types: ['Text'] });
    expect((await c.next('subscribed'))['filter']).toMatchObject({ payloadTypes: ['Text'] });
  });

  it('inject: thread_id and metadata in snake_case; validation and unknown-target errors carry the REST texts', async () => {
    const { url, organism } = await pluginServer();
    const op = await connect(`${url}/ws?token=${OP}`);
    await op.next('connected');
    op.cmd({ cmd: 'inject', to: 'a', payload: { text: 'x' }, thread_id: 'ws-thread-1', metadata: { org_id: 'acme', user_id: 'u1' } });
    const injected = await op.next('injected');
    expect(injected).toMatchObject({ threadId: 'ws-thread-1', messageId: expect.any(String) });
    const record = await eventually(() => op.of('message').find((f) => (f['message'] as { id: string }).id === injected['messageId']));
    expect(record['message']).toMatchObject({ threadId: 'ws-thread-1', to: 'a' });
    expect((await organism.thread('ws-thread-1'))?.metadata).toMatchObject({ orgId: 'acme', userId: 'u1' });
    let at = op.frames.length;
    op.cmd({ cmd: 'inject', to: 'nobody', payload: {} });
    expect((await op.next('error', at))['error']).toBe('Unknown target agent: nobody');
    at = op.frames.length;
    op.cmd({ cmd: 'inject', to: 'a', payload: { text: 5 } });
    expect(String((await op.next('error', at))['error'])).toMatch(/^Invalid Text payload/);
    at = op.frames.length;
    op.cmd({ cmd: 'inject', payload: {} });
    expect((await op.next('error', at))['error']).toBe('inject needs "to": the name of the target listener');
  });

  it('ping is answered pong; unknown, malformed, non-object and binary commands get an error frame', async () => {
    const { url } = await pluginServer();
    const c = await connect(`${url}/ws?token=${VIEW}`);
    await c.next('connected');
    const answer = async (send: () => void) => {
      const at = c.frames.length;
      send();
      return eventually(() => c.frames[at]);
    };
    expect((await answer(() => c.cmd({ cmd: 'ping' }))).event).toBe('pong');
    expect(await answer(() => c.cmd({ cmd: 'dance' }))).toMatchObject({ event: 'error', error: 'Unknown command: dance' });
    expect(await answer(() => c.cmd({ nothing: true }))).toMatchObject({ event: 'error', error: 'Unknown command: null' });
    expect(String((await answer(() => c.socket.send('{oops'))).error)).toMatch(/^Malformed command: /);
    expect(String((await answer(() => c.socket.send('[1,2]'))).error)).toMatch(/^Malformed command: expected a JSON object/);
    expect(await answer(() => c.socket.send(Buffer.from([1, 2, 3]), { binary: true }))).toMatchObject({ event: 'error', error: 'Malformed command: send commands as text frames' });
  });
});

describe('/ws/messages', () => {
  it('message frames only, filtered by repeatable query parameters (agent = sender or receiver, thread, payloadType)', async () => {
    const { url, organism } = await pluginServer();
    const keep = await injectAndSettle(organism, 'first');
    const byAgent = await connect(`${url}/ws/messages?token=${VIEW}&agent=b&agent=nobody`);
    const byThread = await connect(`${url}/ws/messages?token=${VIEW}&thread=${keep.threadId}`);
    const byType = await connect(`${url}/ws/messages?token=${VIEW}&payloadType=Num&payloadType=Other`);
    const all = await connect(`${url}/ws/messages?token=${VIEW}`);
    expect((await byAgent.next('connected'))['filter']).toMatchObject({ agents: ['b', 'nobody'] });
    for (const c of [byThread, byType, all]) await c.next('connected');
    const other = await injectAndSettle(organism, 'second');
    await injectAndSettle(organism, 'third', keep.threadId);
    await eventually(() => all.of('message').length >= 8 && byThread.of('message').length >= 4);
    expect(all.frames.every((f) => f.event === 'message' || f.event === 'connected')).toBe(true);
    for (const f of byAgent.of('message')) expect(f['message']).toMatchObject({ from: 'a', to: 'b' });
    expect(byAgent.of('message').length).toBe(4);
    expect(byThread.of('message').every((f) => threadOf(f) === keep.threadId)).toBe(true);
    expect(byThread.of('message').some((f) => threadOf(f) === other.threadId)).toBe(false);
    expect(byType.of('message')).toEqual([]);
  });

  it('a subscribe command with filter narrows it; inject is not offered there', async () => {
    const { url, organism } = await pluginServer();
    const c = await connect(`${url}/ws/messages?token=${OP}`);
    await c.next('connected');
    const t = await injectAndSettle(organism, 'one');
    c.cmd({ cmd: 'subscribe', filter: { thread: t.threadId, agent: 'b' } });
    // Frames of 'one' still batched when the command arrived go out before its reply.
    const at = c.frames.indexOf(await c.next('subscribed'));
    await injectAndSettle(organism, 'two');
    await injectAndSettle(organism, 'three', t.threadId);
    await eventually(() => c.frames.slice(at).filter((f) => f.event === 'message').length >= 2);
    for (const f of c.frames.slice(at).filter((x) => x.event === 'message')) {
      expect(f['message']).toMatchObject({ threadId: t.threadId, to: 'b' });
    }
    c.cmd({ cmd: 'inject', to: 'a', payload: { text: 'x' } });
    expect((await c.next('error'))['error']).toBe('inject is only available on /ws');
  });

  it('a malformed query filter closes the connection with 1008 and the reason', async () => {
    const { url } = await pluginServer();
    const c = await connect(`${url}/ws/messages?token=${VIEW}&event=nope`);
    const closed = await c.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toMatch(/^Invalid filter: unknown event nope/);
  });

  it('seq is shared by both channels (one process-wide counter)', async () => {
    const { url, organism } = await pluginServer();
    const control = await connect(`${url}/ws?token=${VIEW}`);
    const messages = await connect(`${url}/ws/messages?token=${VIEW}`);
    await control.next('connected');
    await messages.next('connected');
    await injectAndSettle(organism, 'x');
    await eventually(() => messages.of('message').length >= 4);
    for (const f of messages.of('message')) {
      const same = control.of('message').find((g) => g.seq === f.seq);
      expect(same?.['message']).toEqual(f['message']);
    }
  });
});
