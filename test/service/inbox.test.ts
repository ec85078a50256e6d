import { Value } from 'typebox/value';
import { afterEach, describe, expect, it } from 'vitest';
import { ServerFrame } from '../../src/service/schemas/frames.js';
import { toFrame } from '../../src/service/ws/frames.js';
import type { OrganismEvent } from '../../src/events/types.js';
import { eventually, OPERATOR, startService, STORAGE_KINDS, VIEWER, type Service } from './fixture.js';

const APPROVER = 'approver-token-0123456789';

const HANDLERS = `
export function intake(payload, ctx) {
  if (ctx.from === 'api') return { to: 'desk', payload: { text: 'approve? ' + payload.text }, payloadType: 'Text' };
  return undefined;
}
`;

const YAML = `organism:
  name: inbox-test
payloads:
  Text:
    description: Plain text
    fields:
      text: string
  Decision:
    description: A person's decision
    fields:
      approved: boolean
      comment: string
listeners:
  - name: intake
    description: Asks the desk
    payload: [Text, Decision]
    peers: [desk]
    handler: ./inbox-handlers.ts#intake
  - name: desk
    description: The refunds desk (people)
    payload: Text
    handler: builtin:human
`;

async function start(storage: (typeof STORAGE_KINDS)[number]): Promise<Service> {
  return startService({
    yaml: YAML,
    storage,
    files: { 'inbox-handlers.ts': HANDLERS },
    app: {
      auth: {
        tokens: [
          { name: 'ops', role: 'operator', token: OPERATOR },
          { name: 'dashboard', role: 'viewer', token: VIEWER },
          { name: 'alice', role: 'approver', token: APPROVER },
        ],
      },
    },
  });
}

async function openAsk(svc: Service) {
  const injected = await svc.request('POST', '/api/v1/inject', { body: { to: 'intake', payload: { Text: { text: 'refund 40' } } } });
  expect(injected.status).toBe(200);
  const threadId: string = injected.body.threadId;
  const item = await eventually(async () => {
    const res = await svc.request('GET', `/api/v1/inbox?threadId=${threadId}`, { token: VIEWER });
    expect(res.status).toBe(200);
    return res.body.items[0];
  }, 'the ask listed');
  return { threadId, item };
}

for (const storage of STORAGE_KINDS) {
  describe(`the inbox API (${storage})`, () => {
    let svc: Service | null = null;
    afterEach(async () => {
      await svc?.close();
      svc = null;
    });

    it('lists an ask (thread waiting, AWAITING counted); an approver answers it once, the thread completes; a second answer is 409', async () => {
      svc = await start(storage);
      const s = svc;
      const events: OrganismEvent[] = [];
      s.organism.bus.on((e) => events.push(e));
      const { threadId, item } = await openAsk(s);
      expect(item).toMatchObject({ kind: 'ask', threadId, listener: 'desk', from: 'intake', payloadType: 'Text', payload: { text: 'approve? refund 40' }, expiresAt: null });
      expect(item.answerSchema.oneOf).toHaveLength(2);
      expect(item.peerSchemas).toEqual({}); // desk has no peers
      expect(Date.parse(item.createdAt)).toBeGreaterThan(0);
      await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'waiting', 'thread waiting');
      expect((await s.request('GET', '/api/v1/journal/stats')).body.counts.AWAITING).toBe(1);
      expect((await s.request('GET', '/api/v1/organism')).body.inbox).toEqual({ open: 1, asks: 1, approvals: 0 });
      const listed = (await s.request('GET', '/api/v1/inbox?listener=desk&limit=10')).body;
      expect(listed).toMatchObject({ count: 1, total: 1, offset: 0, limit: 10 });
      expect((await s.request('GET', '/api/v1/inbox?listener=nobody')).body.total).toBe(0);

      // A viewer reads but may not answer.
      expect((await s.request('POST', `/api/v1/inbox/${item.id}/answer`, { token: VIEWER, body: { payload: { Decision: { approved: true, comment: '' } } } })).status).toBe(403);
      // 422 naming the field.
      const bad = await s.request('POST', `/api/v1/inbox/${item.id}/answer`, { token: APPROVER, body: { payload: { Decision: { approved: 'yes', comment: '' } } } });
      expect(bad.status).toBe(422);
      expect(JSON.stringify(bad.body)).toContain('approved');
      const nul = await s.request('POST', `/api/v1/inbox/${item.id}/answer`, { token: APPROVER, body: { payload: { Decision: { approved: true, comment: '' } }, note: 'a\u0000b' } });
      expect(nul.status).toBe(422);
      expect(JSON.stringify(nul.body)).toContain('note');
      const notPeer = await s.request('POST', `/api/v1/inbox/${item.id}/answer`, { token: APPROVER, body: { payload: { text: 'x' }, to: 'someone' } });
      expect(notPeer.status).toBe(422);

      const answered = await s.request('POST', `/api/v1/inbox/${item.id}/answer`, {
        token: APPROVER,
        body: { payload: { Decision: { approved: true, comment: 'ok' } }, note: 'receipt seen' },
      });
      expect(answered.status).toBe(200);
      expect(answered.body.message).toMatchObject({ from: 'desk', to: 'intake', payloadType: 'Decision', parentId: item.id, threadId });
      await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'completed', 'thread completed');
      const entry = (await s.request('GET', `/api/v1/journal/${item.id}`)).body;
      expect(entry).toMatchObject({ deliveryState: 'ACKED', closedBy: 'alice', closedNote: 'receipt seen' });
      const reply = (await s.request('GET', `/api/v1/journal/${answered.body.message.id}`)).body;
      expect(reply.deliveryState).toBe('ACKED');

      const again = await s.request('POST', `/api/v1/inbox/${item.id}/answer`, { token: OPERATOR, body: { payload: { Decision: { approved: false, comment: '' } } } });
      expect(again.status).toBe(409);
      expect((await s.request('GET', '/api/v1/inbox')).body.total).toBe(0);
      expect((await s.request('GET', '/api/v1/organism')).body.inbox.open).toBe(0);

      // The events, as WebSocket frames the schema accepts.
      const opened = events.find((e) => e.type === 'inbox_opened');
      const closed = events.find((e) => e.type === 'inbox_closed');
      expect(closed).toMatchObject({ closed: { id: item.id, outcome: 'answered', by: 'alice', note: 'receipt seen' } });
      for (const e of [opened!, closed!]) expect(Value.Check(ServerFrame, JSON.parse(toFrame(e).json))).toBe(true);
    });

    it('an approver may reject (the asker is told) but may not inject; 404 for an unknown item', async () => {
      svc = await start(storage);
      const s = svc;
      expect((await s.request('POST', '/api/v1/inject', { token: APPROVER, body: { to: 'intake', payload: { Text: { text: 'x' } } } })).status).toBe(403);
      expect((await s.request('GET', '/api/v1/threads', { token: APPROVER })).status).toBe(200);
      expect((await s.request('GET', '/api/v1/whoami', { token: APPROVER })).body).toEqual({ name: 'alice', role: 'approver' });
      const { threadId, item } = await openAsk(s);
      expect((await s.request('POST', `/api/v1/inbox/${item.id}/reject`, { token: VIEWER, body: { note: 'no' } })).status).toBe(403);
      const rejected = await s.request('POST', `/api/v1/inbox/${item.id}/reject`, { token: APPROVER, body: { note: 'no receipt' } });
      expect(rejected.status).toBe(200);
      expect(rejected.body).toMatchObject({ id: item.id, outcome: 'rejected', by: 'alice', note: 'no receipt' });
      const entry = (await s.request('GET', `/api/v1/journal/${item.id}`)).body;
      expect(entry).toMatchObject({ deliveryState: 'FAILED', failureReason: 'rejected', closedBy: 'alice', closedNote: 'no receipt' });
      const notice = await eventually(async () => {
        const msgs = (await s.request('GET', `/api/v1/threads/${threadId}/messages`)).body.messages as Array<{ to: string; payloadType: string; payload: Record<string, unknown> }>;
        return msgs.find((m) => m.to === 'intake' && m.payloadType === 'SystemError');
      }, 'the SystemError to the asker');
      expect(notice.payload).toMatchObject({ reason: 'rejected', messageId: item.id });
      expect((await s.request('POST', `/api/v1/inbox/${item.id}/reject`, { token: APPROVER, body: { note: 'again' } })).status).toBe(409);
      expect((await s.request('POST', '/api/v1/inbox/nope/answer', { token: APPROVER, body: { payload: {} } })).status).toBe(404);
    });

    it('50 concurrent answers to one ask: exactly one 200, the rest 409', async () => {
      svc = await start(storage);
      const s = svc;
      const { threadId, item } = await openAsk(s);
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          s.request('POST', `/api/v1/inbox/${item.id}/answer`, { token: APPROVER, body: { payload: { Decision: { approved: true, comment: `#${i}` } } } }),
        ),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status === 409)).toHaveLength(49);
      await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'completed', 'thread completed');
      const msgs = (await s.request('GET', `/api/v1/threads/${threadId}/messages`)).body.messages as Array<{ from: string; payloadType: string }>;
      expect(msgs.filter((m) => m.from === 'desk' && m.payloadType === 'Decision')).toHaveLength(1);
    });

    it('killing a waiting thread closes its ask: answering is then 409', async () => {
      svc = await start(storage);
      const s = svc;
      const { threadId, item } = await openAsk(s);
      await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'waiting', 'thread waiting');
      expect((await s.request('POST', `/api/v1/threads/${threadId}/kill`)).status).toBe(200);
      // Who killed it: the operator's token name, as an answer records the approver's.
      expect((await s.request('GET', `/api/v1/journal/${item.id}`)).body).toMatchObject({ deliveryState: 'FAILED', failureReason: 'killed', closedBy: 'ops' });
      expect((await s.request('POST', `/api/v1/inbox/${item.id}/answer`, { token: APPROVER, body: { payload: { Decision: { approved: true, comment: '' } } } })).status).toBe(409);
    });

    it('a bulk kill by filter kills a waiting thread too: its ask closes FAILED killed, closed by the operator', async () => {
      svc = await start(storage);
      const s = svc;
      const { threadId, item } = await openAsk(s);
      await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'waiting', 'thread waiting');
      // A filter naming the other unfinished status leaves it alone (the console kills what its status filter shows).
      expect((await s.request('POST', '/api/v1/threads/kill', { body: { filter: { agent: 'desk', status: 'active' } } })).body).toMatchObject({ matched: 0, killed: 0 });
      expect((await s.request('POST', '/api/v1/threads/kill', { body: { filter: { status: 'completed' } } })).status).toBe(422);
      const killed = await s.request('POST', '/api/v1/threads/kill', { body: { filter: { agent: 'desk', status: 'waiting' } } });
      expect(killed.status).toBe(200);
      expect(killed.body).toMatchObject({ matched: 1, attempted: 1, killed: 1, skipped: [] });
      expect((await s.request('GET', `/api/v1/threads/${threadId}`)).body.status).toBe('killed');
      expect((await s.request('GET', `/api/v1/journal/${item.id}`)).body).toMatchObject({ deliveryState: 'FAILED', failureReason: 'killed', closedBy: 'ops' });
      expect((await s.request('GET', '/api/v1/inbox')).body.total).toBe(0);
      // Nothing unfinished is left for the filter.
      expect((await s.request('POST', '/api/v1/threads/kill', { body: { filter: { agent: 'desk' } } })).body).toMatchObject({ matched: 0, attempted: 0, killed: 0 });
    });
  });
}
