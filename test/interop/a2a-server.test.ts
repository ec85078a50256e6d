import { createServer } from 'node:http';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type StreamResponse, TaskState } from '@a2a-js/sdk';
import { OPERATOR, probe, STORAGE_KINDS, startService, VIEWER, type Service } from '../service/fixture.js';
import { a2aClient, exposedYaml, userText } from './fixture.js';

describe.each(STORAGE_KINDS)('A2A server: exposed listeners as A2A v1.0 agents (issue 31), %s store', (storage) => {
  let service: Service;
  beforeAll(async () => {
    service = await startService({ yaml: exposedYaml(), storage });
  });
  afterAll(async () => {
    await service?.close();
  });

  it('serves the agent card to a viewer (401 without a token, public when a2a_public_card)', async () => {
    const none = await fetch(`${service.url}/a2a/helper/.well-known/agent-card.json`);
    expect(none.status).toBe(401);
    const res = await fetch(`${service.url}/a2a/helper/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${VIEWER}` } });
    expect(res.status).toBe(200);
    // biome-ignore lint/suspicious/noExplicitAny: the card as JSON, read by the assertions
    const card = (await res.json()) as Record<string, any>;
    expect(card['name']).toBe('helper');
    expect(card['description']).toBe('Answers questions');
    expect(card['skills'].map((s: { id: string }) => s.id)).toEqual(['Text']);
    expect(card['securitySchemes']['bearer']).toEqual({ httpAuthSecurityScheme: { scheme: 'Bearer', description: expect.any(String) } });
    expect(card['supportedInterfaces'][0]).toMatchObject({ url: `${service.url}/a2a/helper`, protocolBinding: 'JSONRPC', protocolVersion: '1.0' });
    const open = await fetch(`${service.url}/a2a/slow/.well-known/agent-card.json`);
    expect(open.status).toBe(200);
    // Not exposed: 404 once authenticated, 401 before (nothing is revealed).
    expect((await fetch(`${service.url}/a2a/echo/.well-known/agent-card.json`)).status).toBe(401);
    const hidden = await fetch(`${service.url}/a2a/echo/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${VIEWER}` } });
    expect(hidden.status).toBe(404);
    expect(((await hidden.json()) as { code: string }).code).toBe('NOT_EXPOSED');
  });

  it('message/send: an SDK client gets the agent reply as the task result; the task is the thread', async () => {
    const client = await a2aClient(service, 'helper');
    const result = await client.sendMessage({ tenant: '', message: userText('life'), configuration: undefined, metadata: undefined });
    const task = result as { id: string; status: { state: TaskState }; artifacts: Array<{ parts: Array<{ content: { $case: string; value: unknown } }> }> };
    expect(task.status.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const parts = task.artifacts[0]!.parts;
    expect(parts.find((p) => p.content.$case === 'data')!.content.value).toEqual({ text: 'The answer to life is 42' });
    expect(parts.find((p) => p.content.$case === 'text')!.content.value).toBe('The answer to life is 42');
    const thread = await service.organism.thread(task.id);
    expect(thread?.participants).toContain('helper');
    const got = await client.getTask({ tenant: '', id: task.id, historyLength: undefined });
    expect(got.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    // The LLM call was paid for like any other thread's.
    expect((await service.organism.threadUsage(task.id))?.totalTokens ?? 0).toBeGreaterThan(0);
  });

  it('message/stream: the thread events arrive as task updates, ending completed', async () => {
    const client = await a2aClient(service, 'helper');
    const events: StreamResponse[] = [];
    for await (const event of client.sendMessageStream({ tenant: '', message: userText('everything'), configuration: undefined, metadata: undefined })) events.push(event);
    const cases = events.map((e) => e.payload?.$case);
    expect(cases[0]).toBe('task');
    expect(cases).toContain('artifactUpdate');
    const last = events[events.length - 1]!;
    expect(last.payload?.$case).toBe('statusUpdate');
    expect(last.payload?.$case === 'statusUpdate' && last.payload.value.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    const working = events.filter((e) => e.payload?.$case === 'statusUpdate' && e.payload.value.status?.state === TaskState.TASK_STATE_WORKING);
    expect(working.length).toBeGreaterThan(0);
  });

  it('tasks/cancel kills the thread', async () => {
    const client = await a2aClient(service, 'slow');
    const stream = client.sendMessageStream({ tenant: '', message: userText('cancel-me'), configuration: undefined, metadata: undefined });
    const first = await stream.next();
    const taskId = first.value?.payload?.$case === 'task' ? first.value.payload.value.id : '';
    expect(taskId).not.toBe('');
    await vi.waitUntil(() => probe().calls.some((c) => c.text === 'cancel-me'));
    const canceled = await client.cancelTask({ tenant: '', id: taskId, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await service.organism.thread(taskId))?.status).toBe('killed');
    const rest: StreamResponse[] = [];
    for await (const e of { [Symbol.asyncIterator]: () => stream }) rest.push(e);
    const end = rest[rest.length - 1];
    expect(end?.payload?.$case === 'statusUpdate' && end.payload.value.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
  });

  it('a task this process does not hold (a restart, another process) is read back from its thread, and cancel kills it', async () => {
    // As another process of the organism would have started it: a thread with the A2A context id.
    const { threadId } = await service.organism.inject('slow', { text: 'elsewhere' }, { metadata: { a2aContextId: 'ctx-elsewhere' } });
    await vi.waitUntil(() => probe().calls.some((c) => c.text === 'elsewhere'));
    const client = await a2aClient(service, 'slow');
    const got = await client.getTask({ tenant: '', id: threadId, historyLength: undefined });
    expect(got).toMatchObject({ id: threadId, contextId: 'ctx-elsewhere', status: { state: TaskState.TASK_STATE_WORKING } });
    const canceled = await client.cancelTask({ tenant: '', id: threadId, metadata: undefined });
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect((await service.organism.thread(threadId))?.status).toBe('killed');
    // A thread that is not an A2A task is no task.
    const { threadId: plain } = await service.organism.inject('echo', { text: 'not a task' });
    await expect(client.getTask({ tenant: '', id: plain, historyLength: undefined })).rejects.toThrow(/not found/i);
  });

  it('push notifications go through the journal: a receiver down (500) gets each one once it recovers, with one idempotency key per notification', async () => {
    const received: Array<{ key: string; token: string; body: { task?: { status?: { state?: string } }; statusUpdate?: { status?: { state?: string } } } }> = [];
    let failures = 2;
    const receiver = createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => {
        text += c.toString('utf8');
      });
      req.on('end', () => {
        if (failures-- > 0) return void res.writeHead(500).end();
        received.push({ key: String(req.headers['idempotency-key']), token: String(req.headers['x-a2a-notification-token']), body: JSON.parse(text) });
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const address = receiver.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;
    try {
      const client = await a2aClient(service, 'helper');
      const result = (await client.sendMessage({
        tenant: '',
        message: userText('push'),
        configuration: {
          acceptedOutputModes: [],
          taskPushNotificationConfig: { tenant: '', id: 'hook', taskId: '', url, token: 'client-token', authentication: undefined },
          historyLength: undefined,
          returnImmediately: false,
        },
        metadata: undefined,
      })) as { id: string };
      const completed = (r: (typeof received)[number]) => r.body.statusUpdate?.status?.state === 'TASK_STATE_COMPLETED';
      await vi.waitUntil(() => received.some(completed), { timeout: 20_000, interval: 50 });
      expect(received.every((r) => r.token === 'client-token')).toBe(true);
      // Journaled: the notifications are messages of the task's push thread, each its own id (the
      // key); the two the receiver refused were tried again, so every one arrives (none lost).
      const keys = async () => (await service.client.threads.messages(`${result.id}.push`)).messages.map((m) => m.id).sort();
      await vi.waitUntil(async () => (await keys()).length > 0 && (await keys()).every((k) => received.some((r) => r.key === k)), { timeout: 20_000, interval: 100 });
      expect((await keys()).length).toBeGreaterThanOrEqual(3);
      expect([...new Set(received.map((r) => r.key))].sort()).toEqual(await keys());
      expect(failures).toBeLessThan(0);
    } finally {
      receiver.close();
    }
  });

  it('a payload that does not fit is a JSON-RPC error naming the field; a viewer cannot send', async () => {
    const body = (parts: unknown[]) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { messageId: 'm1', role: 'ROLE_USER', parts } } });
    const headers = { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json', 'a2a-version': '1.0' };
    const bad = await fetch(`${service.url}/a2a/helper`, { method: 'POST', headers, body: body([{ data: { text: 5 } }]) });
    const answer = (await bad.json()) as { error: { code: number; message: string } };
    expect(answer.error.code).toBe(-32602);
    expect(answer.error.message).toContain('text');
    const viewer = await fetch(`${service.url}/a2a/helper`, { method: 'POST', headers: { ...headers, authorization: `Bearer ${VIEWER}` }, body: body([{ text: 'x' }]) });
    expect(viewer.status).toBe(403);
  });

  it('speaks v0.3 method names (message/send) to clients that send no A2A-Version', async () => {
    const res = await fetch(`${service.url}/a2a/helper`, {
      method: 'POST',
      headers: { authorization: `Bearer ${OPERATOR}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'message/send',
        params: { message: { kind: 'message', messageId: 'm2', role: 'user', parts: [{ kind: 'text', text: 'v03' }] } },
      }),
    });
    const answer = (await res.json()) as { result: { kind: string; status: { state: string }; artifacts: Array<{ parts: Array<{ kind: string; text?: string }> }> } };
    expect(answer.result.kind).toBe('task');
    expect(answer.result.status.state).toBe('completed');
    expect(answer.result.artifacts[0]!.parts.find((p) => p.kind === 'text')?.text).toBe('The answer to v03 is 42');
  });
});
