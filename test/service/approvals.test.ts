import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startService, type Service } from './fixture.js';

/**
 * Tool calls that need approval (issue 25), through the API: the agent `desk` proposes a
 * `lookupOrder` call (a code tool that appends the order id to side.log), which waits for a
 * person; approving runs it and the delivery continues (its next answer tells the outbox).
 */
const YAML = `organism: {name: desk}
llm:
  providers:
    - name: mock
      type: mock
      script:
        desk:
          - calls: [{name: lookupOrder, arguments: {orderId: '{{text}}'}}]
          - calls: [{name: send_to_outbox, arguments: {text: 'Done: {{result}}'}}]
payloads:
  Ticket: {fields: {text: string}}
  Answer: {fields: {text: string}}
listeners:
  - name: desk
    handler: builtin:llm
    prompt: You answer tickets.
    model: mock-1
    payload: Ticket
    peers: [outbox]
    tools: [./tools.ts#lookupOrder]
    approval: [lookupOrder]
  - name: outbox
    handler: ./tools.ts#collect
    payload: Answer
`;

const TOOLS = `import { appendFileSync } from 'node:fs';
import { defineTool, definePayload, type Handler } from 'organism';
export const lookupOrder = defineTool({
  description: 'Looks an order up',
  input: definePayload('OrderQuery', { orderId: 'string' }),
  run: ({ orderId }: { orderId: string }, ctx) => {
    appendFileSync(new URL('./side.log', import.meta.url), ctx.messageId + ' ' + orderId + '\\n');
    return { orderId, status: 'shipped' };
  },
});
export const collect: Handler = () => undefined;
`;

const services: Service[] = [];
afterEach(async () => {
  while (services.length) await services.pop()!.close();
});

interface Item {
  id: string;
  kind: string;
  threadId: string;
  proposedCalls: Array<{ id: string; name: string; arguments: unknown }>;
  answerSchema: Record<string, unknown>;
}

async function pending(s: Service, text: string): Promise<{ threadId: string; item: Item }> {
  const injected = await s.request('POST', '/api/v1/inject', { body: { to: 'desk', payload: { text } } });
  const threadId = injected.body.threadId as string;
  const item = await eventually(async () => {
    const page = (await s.request('GET', `/api/v1/inbox?kind=approval&threadId=${threadId}`)).body as { items: Item[] };
    return page.items[0] ?? null;
  }, 'the approval to be listed');
  return { threadId, item };
}

const sideLog = (s: Service): string[] => {
  try {
    return readFileSync(path.join(s.dir, 'side.log'), 'utf8').trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

async function outboxText(s: Service, threadId: string): Promise<string> {
  await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'completed', 'the thread to complete');
  const messages = (await s.request('GET', `/api/v1/threads/${threadId}/messages`)).body.messages as Array<{ to: string; payload: { text: string } }>;
  return messages.find((m) => m.to === 'outbox')!.payload.text;
}

// postgres: cluster mode (the continuation is claimed by the in-process worker like any delivery).
for (const storage of ['memory', 'sqlite', 'postgres'] as const) {
  describe(`tool calls that need approval (${storage})`, () => {
    it('the round waits (nothing run); approve runs the call as proposed once and the delivery continues; a second approve is 409', async () => {
      const s = await startService({ yaml: YAML, storage, files: { 'tools.ts': TOOLS } });
      services.push(s);
      const { threadId, item } = await pending(s, 'A-1');
      expect(item).toMatchObject({ kind: 'approval', threadId, proposedCalls: [{ id: expect.any(String), name: 'lookupOrder', arguments: { orderId: 'A-1' } }] });
      expect(item.answerSchema).toMatchObject({ type: 'array' });
      expect((await s.request('GET', `/api/v1/threads/${threadId}`)).body.status).toBe('waiting');
      expect((await s.request('GET', `/api/v1/journal/${item.id}`)).body).toMatchObject({ deliveryState: 'AWAITING' });
      expect((await s.request('GET', '/api/v1/inbox?kind=ask')).body.total).toBe(0);
      expect(sideLog(s)).toEqual([]);

      const approved = await s.request('POST', `/api/v1/inbox/${item.id}/approve`, { body: { note: 'fine' } });
      expect(approved.status).toBe(200);
      expect(approved.body).toMatchObject({ id: item.id, kind: 'approval', outcome: 'approved', note: 'fine', by: expect.any(String) });
      expect(await outboxText(s, threadId)).toBe('Done: {"orderId":"A-1","status":"shipped"}');
      expect(sideLog(s)).toEqual([`${item.id} A-1`]);
      const again = await s.request('POST', `/api/v1/inbox/${item.id}/approve`, { body: {} });
      expect(again.status).toBe(409);
      expect((await s.request('GET', `/api/v1/journal/${item.id}`)).body).toMatchObject({ deliveryState: 'ACKED' });
      expect(sideLog(s)).toHaveLength(1);
    });

    it('edit runs the call with the person’s arguments; an invalid edit is a 422 naming the field (and decides nothing)', async () => {
      const s = await startService({ yaml: YAML, storage, files: { 'tools.ts': TOOLS } });
      services.push(s);
      const { threadId, item } = await pending(s, 'A-1');
      const callId = item.proposedCalls[0]!.id;
      const bad = await s.request('POST', `/api/v1/inbox/${item.id}/approve`, { body: { calls: [{ id: callId, arguments: { orderId: 5 } }] } });
      expect(bad.status).toBe(422);
      expect(JSON.stringify(bad.body)).toContain('calls[0].arguments.orderId');
      const unknown = await s.request('POST', `/api/v1/inbox/${item.id}/approve`, { body: { calls: [{ id: 'nope', arguments: {} }] } });
      expect(unknown.status).toBe(422);
      const edited = await s.request('POST', `/api/v1/inbox/${item.id}/approve`, { body: { calls: [{ id: callId, arguments: { orderId: 'B-2' } }] } });
      expect(edited.status).toBe(200);
      expect(edited.body).toMatchObject({ outcome: 'edited' });
      expect(await outboxText(s, threadId)).toBe('Done: {"orderId":"B-2","status":"shipped"}');
      expect(sideLog(s)).toEqual([`${item.id} B-2`]);
    });

    it('reject: the model hears the refusal (with the note) and answers again; the call never runs', async () => {
      const s = await startService({ yaml: YAML, storage, files: { 'tools.ts': TOOLS } });
      services.push(s);
      const { threadId, item } = await pending(s, 'A-1');
      const rejected = await s.request('POST', `/api/v1/inbox/${item.id}/reject`, { body: { note: 'not this order' } });
      expect(rejected.status).toBe(200);
      expect(rejected.body).toMatchObject({ kind: 'approval', outcome: 'rejected', note: 'not this order' });
      const text = await outboxText(s, threadId);
      expect(text).toContain('refused');
      expect(text).toContain('not this order');
      expect(sideLog(s)).toEqual([]);
      expect((await s.request('POST', `/api/v1/inbox/${item.id}/approve`, { body: {} })).status).toBe(409);
    });

    it('killing the thread closes its pending approval (FAILED, killed); approving is then 409', async () => {
      const s = await startService({ yaml: YAML, storage, files: { 'tools.ts': TOOLS } });
      services.push(s);
      const { threadId, item } = await pending(s, 'A-1');
      expect((await s.request('POST', `/api/v1/threads/${threadId}/kill`)).status).toBe(200);
      await eventually(async () => (await s.request('GET', `/api/v1/journal/${item.id}`)).body.deliveryState === 'FAILED', 'the approval to close');
      expect((await s.request('GET', `/api/v1/journal/${item.id}`)).body).toMatchObject({ failureReason: 'killed' });
      expect((await s.request('POST', `/api/v1/inbox/${item.id}/approve`, { body: {} })).status).toBe(409);
      expect(sideLog(s)).toEqual([]);
    });
  });
}
