import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startService, type Service } from './fixture.js';

/** An agent with a code tool on the mock provider: it looks the order up, then tells the outbox. */
const YAML = `organism: {name: desk}
llm:
  providers:
    - name: mock
      type: mock
      script:
        desk:
          - calls: [{name: lookupOrder, arguments: {orderId: '{{text}}'}}]
          - calls: [{name: send_to_outbox, arguments: {text: 'Found: {{result}}'}}]
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
  - name: outbox
    handler: ./tools.ts#collect
    payload: Answer
`;

const TOOLS = `import { defineTool, definePayload, type Handler } from 'organism';
export const lookupOrder = defineTool({
  description: 'Looks an order up',
  input: definePayload('OrderQuery', { orderId: 'string' }),
  run: ({ orderId }: { orderId: string }) => ({ orderId, status: 'shipped' }),
});
export const collect: Handler = () => undefined;
`;

const services: Service[] = [];
afterEach(async () => {
  while (services.length) await services.pop()!.close();
});

describe('code tools through the API', () => {
  it('the LLM call inspector’s routes show a code tool execution (kind code, its module, arguments and result); capabilities and the config list the tool', async () => {
    const s = await startService({ yaml: YAML, storage: 'sqlite', files: { 'tools.ts': TOOLS } });
    services.push(s);
    const injected = await s.request('POST', '/api/v1/inject', { body: { to: 'desk', payload: { text: 'A-1' } } });
    const threadId = injected.body.threadId as string;
    await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'completed', 'the thread to complete');

    const messages = (await s.request('GET', `/api/v1/threads/${threadId}/messages`)).body.messages as Array<{ from: string; to: string; payload: unknown }>;
    expect(messages.map((m) => `${m.from}->${m.to}`)).toEqual(['api->desk', 'desk->outbox']);
    expect(messages[1]!.payload).toEqual({ text: 'Found: {"orderId":"A-1","status":"shipped"}' });

    const calls = (await s.request('GET', `/api/v1/threads/${threadId}/llm-calls`)).body.calls as Array<{ id: string; tools: string[]; toolExecutions: unknown[] }>;
    expect(calls).toHaveLength(2);
    expect(calls[0]!.tools).toEqual(['send_to_outbox', 'reply', 'lookupOrder']);
    expect(calls[0]!.toolExecutions).toEqual([
      {
        id: expect.any(String),
        kind: 'code',
        server: './tools.ts',
        tool: 'lookupOrder',
        arguments: { orderId: 'A-1' },
        result: '{"orderId":"A-1","status":"shipped"}',
        isError: false,
        error: null,
        startedAt: expect.any(String),
        durationMs: expect.any(Number),
        replayed: false,
      },
    ]);
    expect(calls[1]!.toolExecutions).toEqual([]);

    const waterfall = (await s.request('GET', `/api/v1/threads/${threadId}/waterfall`)).body as { calls: Array<{ toolExecutions: unknown[] }> };
    expect(waterfall.calls[0]!.toolExecutions).toEqual([expect.objectContaining({ kind: 'code', server: './tools.ts', tool: 'lookupOrder', isError: false, error: null })]);

    expect((await s.request('GET', '/api/v1/capabilities/desk')).body.tools).toEqual(['send_to_outbox', 'reply', 'lookupOrder']);
    const config = (await s.request('GET', '/api/v1/organism/config')).body as { listeners: Array<{ name: string; tools?: unknown }> };
    expect(config.listeners.find((l) => l.name === 'desk')?.tools).toEqual([{ use: './tools.ts#lookupOrder', input: null, name: null, description: null, timeoutSeconds: null }]);
  });
});
