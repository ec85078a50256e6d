import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrganismApiError } from '../../src/client/index.js';
import { eventually, probe, startService, VIEWER, STORAGE_KINDS, type Service, type StorageKind } from './fixture.js';

describe.each<StorageKind>(STORAGE_KINDS)('contract with %s storage', (kind) => {
  let svc: Service;

  beforeAll(async () => {
    svc = await startService({ storage: kind });
  });
  afterAll(async () => {
    await svc?.close();
  });

  async function inject(to: string, payload: unknown, extra: Record<string, unknown> = {}) {
    const res = await svc.request('POST', '/api/v1/inject', { body: { to, payload, ...extra } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body as { threadId: string; messageId: string };
  }

  async function settledThread(threadId: string) {
    return eventually(async () => {
      const res = await svc.request('GET', `/api/v1/threads/${threadId}`);
      return res.status === 200 && res.body.status !== 'active' ? res.body : null;
    }, `thread ${threadId} to settle`);
  }

  describe('health and organism', () => {
    // These blocks go through the typed client (organism/client), as an application would.
    it('GET /health is open and reports the organism', async () => {
      expect(await svc.clientAs(null).health()).toEqual({ status: 'healthy', organism: 'service-test', uptimeSeconds: expect.any(Number) });
    });

    it('GET /organism reports every OrganismInfo field', async () => {
      const info = await svc.client.organism.info();
      expect(info).toMatchObject({
        name: 'service-test',
        status: 'running',
        agentCount: 5,
        version: '9.9.9-test',
        bootId: svc.organism.bootId,
        journal: { counts: { PENDING: expect.any(Number), DISPATCHED: expect.any(Number), AWAITING: expect.any(Number), ACKED: expect.any(Number), FAILED: expect.any(Number) } },
      });
      expect(info.startedAt).toMatch(/Z$/);
      expect(info.journal.lastRecovery).toMatchObject({ bootId: svc.organism.bootId });
      expect(Object.keys(info).sort()).toEqual(
        ['activeThreads', 'agentCount', 'bootId', 'inbox', 'journal', 'name', 'startedAt', 'status', 'totalMessages', 'uptimeSeconds', 'version'].sort(),
      );
    });

    it('GET /organism/config is the sanitized configuration', async () => {
      const config = await svc.client.organism.config();
      expect(config['name']).toBe('service-test');
      expect((config['listeners'] as Array<{ name: string }>).map((l) => l.name)).toEqual(['echo', 'slow', 'broken', 'greeter', 'shouter']);
    });
  });

  describe('agents', () => {
    it('lists every listener with its live state', async () => {
      const list = await svc.client.agents.list();
      expect(list.count).toBe(5);
      const greeter = list.agents.find((a) => a.name === 'greeter');
      expect(greeter).toEqual({
        name: 'greeter',
        description: 'Greets people and has the shouter announce it',
        isAgent: true,
        peers: ['shouter'],
        payloadClass: 'Greeting',
        state: 'idle',
        currentThread: null,
        queueDepth: 0,
        lastActivity: expect.toSatisfy((v: unknown) => v === null || typeof v === 'string'),
        messageCount: expect.any(Number),
        model: 'mock-small',
      });
      expect(list.agents.find((a) => a.name === 'echo')).toMatchObject({ isAgent: false, model: null });
    });

    it('GET /agents/{name}, /config and /schema', async () => {
      expect(await svc.client.agents.get('echo')).toMatchObject({ name: 'echo', payloadClass: 'Text', state: 'idle' });
      expect(await svc.client.agents.config('greeter')).toEqual({
        name: 'greeter',
        description: 'Greets people and has the shouter announce it',
        isAgent: true,
        peers: ['shouter'],
        payloadClass: 'Greeting',
      });
      const schema = await svc.client.agents.schema('greeter');
      expect(schema.contentType).toBe('application/xml');
      expect(schema.schema).toContain('Greeting');
      expect(schema.schema).toContain('schema');
    });

    it.each([
      ['get', 'Agent not found: nobody'],
      ['config', 'Agent not found: nobody'],
      ['schema', 'Schema not found for agent: nobody'],
      ['pause', 'Agent not found: nobody'],
      ['resume', 'Agent not found: nobody'],
    ] as const)('agents.%s(nobody) -> 404 %s', async (method, detail) => {
      const err = await svc.client.agents[method]('nobody').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(OrganismApiError);
      expect(err).toMatchObject({ status: 404, detail });
    });

    it('pause and resume answer with the new state', async () => {
      expect(await svc.client.agents.pause('shouter')).toEqual({ success: true, agent: 'shouter', state: 'paused' });
      expect((await svc.client.agents.get('shouter')).state).toBe('paused');
      expect(await svc.client.agents.resume('shouter')).toEqual({ success: true, agent: 'shouter', state: 'idle' });
      expect((await svc.client.agents.get('shouter')).state).toBe('idle');
    });
  });

  describe('capabilities', () => {
    it('lists every listener with its root tag', async () => {
      const list = await svc.client.capabilities.list();
      expect(list.count).toBe(5);
      expect(list.capabilities).toContainEqual({
        name: 'greeter',
        description: 'Greets people and has the shouter announce it',
        isAgent: true,
        peers: ['shouter'],
        rootTag: 'Greeting',
      });
    });

    it('GET /capabilities/{name} includes the XSD, an example and the JSON Schema', async () => {
      const cap = await svc.client.capabilities.get('greeter');
      expect(cap).toMatchObject({ name: 'greeter', payloadClass: 'Greeting', rootTag: 'Greeting' });
      expect(cap.schemaXsd).toMatch(/<xs:schema|<xsd:schema|schema/);
      expect(cap.exampleXml).toContain('<Greeting');
      expect(typeof cap.jsonSchema).toBe('object');
      expect(JSON.stringify(cap.jsonSchema)).toContain('name');
    });

    it('unknown capability -> 404', async () => {
      await expect(svc.client.capabilities.get('nothing')).rejects.toMatchObject({ status: 404, detail: 'Capability not found: nothing' });
    });
  });

  describe('inject, threads and messages', () => {
    it('inject reaches the handler and is recorded with sender api', async () => {
      const { threadId, messageId } = await inject('echo', { Text: { text: 'hello there' } });
      await eventually(() => probe().calls.find((c) => c.messageId === messageId), 'echo to run');
      expect(probe().calls.find((c) => c.messageId === messageId)).toMatchObject({ listener: 'echo', text: 'hello there', threadId });
      const thread = await settledThread(threadId);
      expect(thread).toMatchObject({ id: threadId, status: 'completed', participants: expect.arrayContaining(['echo']), messageCount: 1, error: null });
      expect(thread.messages).toEqual([
        {
          id: messageId,
          threadId,
          from: 'api',
          to: 'echo',
          payloadType: 'Text',
          payload: { text: 'hello there' },
          timestamp: expect.stringMatching(/Z$/),
          parentId: null,
          deliveryState: 'ACKED',
        },
      ]);
    });

    it('accepts snake_case (thread_id, metadata.org_id) and keeps the given thread id', async () => {
      const res = await svc.request('POST', '/api/v1/inject', {
        body: { to: 'echo', thread_id: 'snake-thread-1', payload: { Text: { text: 'snake' } }, metadata: { org_id: 'acme', user_id: 'u1' } },
      });
      expect(res.status).toBe(200);
      expect(res.body.threadId).toBe('snake-thread-1');
      const entry = await svc.request('GET', `/api/v1/journal/${res.body.messageId}`);
      expect(entry.body.metadata).toMatchObject({ orgId: 'acme', userId: 'u1' });
    });

    it('accepts the bare fields when the target accepts one type', async () => {
      const { messageId } = await inject('echo', { text: 'bare' });
      await eventually(() => probe().calls.find((c) => c.messageId === messageId), 'echo to run');
    });

    it('unknown target -> 400 with the spec text', async () => {
      const res = await svc.request('POST', '/api/v1/inject', { body: { to: 'nobody', payload: { Text: { text: 'x' } } } });
      expect(res.status).toBe(400);
      expect(res.body.detail).toBe('Unknown target agent: nobody');
    });

    it('invalid payload -> 422 naming the bad field', async () => {
      const res = await svc.request('POST', '/api/v1/inject', { body: { to: 'greeter', payload: { Greeting: { name: 5 } } } });
      expect(res.status).toBe(422);
      expect(res.body.detail).toContain('name');
      expect(res.body.errors).toContainEqual(expect.objectContaining({ location: 'payload', field: 'name' }));
    });

    it('missing or mistyped body fields -> 422 naming them', async () => {
      const res = await svc.request('POST', '/api/v1/inject', { body: { payload: 'text' } });
      expect(res.status).toBe(422);
      expect(res.body.detail).toBe('body.to is required; body.payload must be an object');
    });

    it('malformed JSON -> 400, too large -> 413, wrong content type -> 415', async () => {
      const bad = await svc.request('POST', '/api/v1/inject', { rawBody: '{"to": ' });
      expect(bad.status).toBe(400);
      expect(bad.body.detail).toMatch(/^Malformed JSON body/);
      const big = await svc.request('POST', '/api/v1/inject', { body: { to: 'echo', payload: { Text: { text: 'x'.repeat(1024 * 1024) } } } });
      expect(big.status).toBe(413);
      expect(big.body.detail).toBe('Request body is larger than 1048576 bytes');
      const xml = await svc.request('POST', '/api/v1/inject', { rawBody: '<Text/>', headers: { 'content-type': 'application/xml' } });
      expect(xml.status).toBe(415);
      expect(xml.body.detail).toContain('application/xml');
    });

    it('GET /threads filters, pages and reports total', async () => {
      const a = await inject('echo', { Text: { text: 'page-1' } });
      const b = await inject('echo', { Text: { text: 'page-2' } });
      await settledThread(a.threadId);
      await settledThread(b.threadId);
      const all = await svc.request('GET', '/api/v1/threads?limit=100');
      expect(all.status).toBe(200);
      expect(all.body).toMatchObject({ offset: 0, limit: 100 });
      expect(all.body.count).toBe(all.body.threads.length);
      expect(all.body.total).toBeGreaterThanOrEqual(2);
      const page = await svc.request('GET', '/api/v1/threads?limit=1&offset=1');
      expect(page.body).toMatchObject({ count: 1, limit: 1, offset: 1, total: all.body.total });
      expect(page.body.threads[0].id).toBe(all.body.threads[1].id);
      const defaults = await svc.request('GET', '/api/v1/threads');
      expect(defaults.body).toMatchObject({ limit: 50, offset: 0 });
      const completed = await svc.request('GET', '/api/v1/threads?status=completed&agent=echo');
      expect(completed.body.threads.length).toBeGreaterThan(0);
      for (const t of completed.body.threads) {
        expect(t.status).toBe('completed');
        expect(t.participants).toContain('echo');
      }
      const nobody = await svc.request('GET', '/api/v1/threads?agent=nobody');
      expect(nobody.body).toMatchObject({ threads: [], count: 0, total: 0 });
    });

    it('newest activity first', async () => {
      const res = await svc.request('GET', '/api/v1/threads?limit=100');
      const times = res.body.threads.map((t: { lastActivity: string }) => Date.parse(t.lastActivity));
      expect(times).toEqual([...times].sort((x, y) => y - x));
    });

    it('invalid status -> 400 with the valid values', async () => {
      const res = await svc.request('GET', '/api/v1/threads?status=bogus');
      expect(res.status).toBe(400);
      expect(res.body.detail).toBe('Invalid status: bogus. Valid values: active, waiting, held, completed, error, killed');
    });

    it.each([
      ['limit=101', 'limit must be <= 100'],
      ['limit=0', 'limit must be >= 1'],
      ['limit=abc', 'limit must be a decimal integer (digits only, e.g. 50), not "abc"'],
      ['limit=2.5', 'limit must be a decimal integer (digits only, e.g. 50), not "2.5"'],
      ['offset=-1', 'offset must be >= 0'],
    ])('GET /threads?%s -> 422 %s', async (query, detail) => {
      for (const path of ['/api/v1/threads', '/api/v1/messages']) {
        const res = await svc.request('GET', `${path}?${query}`);
        expect(res.status).toBe(422);
        expect(res.body.detail).toBe(detail);
      }
    });

    it.each([
      ['GET', '/api/v1/threads/no-such-thread'],
      ['GET', '/api/v1/threads/no-such-thread/messages'],
      ['POST', '/api/v1/threads/no-such-thread/kill'],
    ])('%s %s -> 404 Thread not found', async (method, path) => {
      const res = await svc.request(method, path);
      expect(res.status).toBe(404);
      expect(res.body.detail).toBe('Thread not found: no-such-thread');
    });

    it('GET /threads/{id}/messages pages the thread oldest first', async () => {
      const first = await inject('echo', { Text: { text: 'm1' } }, { threadId: 'paged-thread' });
      await settledThread(first.threadId);
      const second = await inject('echo', { Text: { text: 'm2' } }, { threadId: 'paged-thread' });
      await eventually(async () => (await svc.request('GET', '/api/v1/threads/paged-thread')).body.messageCount === 2 || null, 'two messages');
      await settledThread('paged-thread');
      const res = await svc.request('GET', '/api/v1/threads/paged-thread/messages');
      expect(res.body).toMatchObject({ count: 2, total: 2, offset: 0, limit: 50 });
      expect(res.body.messages.map((m: { id: string }) => m.id)).toEqual([first.messageId, second.messageId]);
      const page = await svc.request('GET', '/api/v1/threads/paged-thread/messages?limit=1&offset=1');
      expect(page.body.messages.map((m: { id: string }) => m.id)).toEqual([second.messageId]);
    });

    it('GET /messages is newest first and filters by agent (sender or receiver) and threadId', async () => {
      const { threadId, messageId } = await inject('echo', { Text: { text: 'latest' } });
      await settledThread(threadId);
      const res = await svc.request('GET', '/api/v1/messages?limit=100');
      expect(res.status).toBe(200);
      expect(res.body.messages[0].id).toBe(messageId);
      const times = res.body.messages.map((m: { timestamp: string }) => Date.parse(m.timestamp));
      expect(times).toEqual([...times].sort((x, y) => y - x));
      const byThread = await svc.request('GET', `/api/v1/messages?thread_id=${threadId}`);
      expect(byThread.body).toMatchObject({ count: 1, total: 1 });
      const byAgent = await svc.request('GET', '/api/v1/messages?agent=api&limit=100');
      expect(byAgent.body.messages.every((m: { from: string; to: string }) => m.from === 'api' || m.to === 'api')).toBe(true);
      expect(byAgent.body.total).toBeGreaterThan(0);
    });
  });

  describe('journal', () => {
    it('lists, counts, shows one entry and 404s unknown ones', async () => {
      const { threadId, messageId } = await inject('echo', { Text: { text: 'journaled' } });
      await settledThread(threadId);
      const list = await svc.request('GET', `/api/v1/journal?threadId=${threadId}`);
      expect(list.status).toBe(200);
      expect(list.body).toMatchObject({ count: 1, total: 1, offset: 0, limit: 50 });
      expect(list.body.entries[0]).toMatchObject({ id: messageId, deliveryState: 'ACKED', attempts: 1, failureReason: null });
      const acked = await svc.request('GET', '/api/v1/journal?state=ACKED&agent=echo&limit=5');
      expect(acked.body.entries.every((e: { deliveryState: string }) => e.deliveryState === 'ACKED')).toBe(true);
      const stats = await svc.request('GET', '/api/v1/journal/stats');
      expect(stats.body.counts.ACKED).toBeGreaterThan(0);
      const one = await svc.request('GET', `/api/v1/journal/${messageId}`);
      expect(one.body).toMatchObject({ id: messageId, threadId, from: 'api', to: 'echo', deliveryState: 'ACKED' });
      expect(one.body.ackedAt).toMatch(/Z$/);
      const missing = await svc.request('GET', '/api/v1/journal/nope');
      expect(missing.status).toBe(404);
      expect(missing.body.detail).toBe('Journal entry not found: nope');
      const bad = await svc.request('GET', '/api/v1/journal?state=LOST');
      expect(bad.status).toBe(422);
      expect(bad.body.detail).toBe('state must be one of PENDING, DISPATCHED, AWAITING, ACKED, FAILED');
    });

    it('redelivers FAILED entries only', async () => {
      const ok = await inject('echo', { Text: { text: 'fine' } });
      await settledThread(ok.threadId);
      const refused = await svc.request('POST', `/api/v1/journal/${ok.messageId}/redeliver`);
      expect(refused.status).toBe(409);
      expect(refused.body.detail).toBe(`Journal entry ${ok.messageId} is ACKED; only FAILED entries can be redelivered`);
      const missing = await svc.request('POST', '/api/v1/journal/nope/redeliver');
      expect(missing.status).toBe(404);

      const failing = await inject('broken', { Text: { text: 'boom' } });
      await eventually(async () => (await svc.request('GET', `/api/v1/journal/${failing.messageId}`)).body.deliveryState === 'FAILED' || null, 'FAILED entry');
      const failed = await svc.request('GET', `/api/v1/journal/${failing.messageId}`);
      expect(failed.body.error).toContain('broken on purpose');
      const again = await svc.request('POST', `/api/v1/journal/${failing.messageId}/redeliver`);
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ success: true, messageId: failing.messageId, threadId: failing.threadId, state: 'PENDING' });
      await eventually(async () => {
        const e = (await svc.request('GET', `/api/v1/journal/${failing.messageId}`)).body;
        return e.deliveryState === 'FAILED' && e.attempts >= 2 ? e : null;
      }, 'second attempt to fail');
    });
  });

  describe('errors in general', () => {
    it('unknown route -> 404 naming method and path', async () => {
      const res = await svc.request('GET', '/api/v1/nothing/here?x=1');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Not found: GET /api/v1/nothing/here', code: 'ROUTE_NOT_FOUND' });
    });

    it('a viewer may read but not act', async () => {
      expect((await svc.request('GET', '/api/v1/threads', { token: VIEWER })).status).toBe(200);
      const res = await svc.request('POST', '/api/v1/agents/echo/pause', { token: VIEWER });
      expect(res.status).toBe(403);
      expect(res.body.detail).toBe('Operator role required');
    });
  });
});
