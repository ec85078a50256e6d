import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startService, type Service } from './fixture.js';

/**
 * A fork's code tool calls (issue 29): they run again unless the listener says `replay:
 * recorded`, then the source's recorded result is reused while the replayed LLM call asks for
 * the same tool with the same arguments. The tool here answers differently each time it runs
 * (a counter), so running it again changes the next request and the fork goes live there.
 */
const yaml = (replay: string) => `organism: {name: desk}
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
${replay}
  - name: outbox
    handler: ./tools.ts#collect
    payload: Answer
`;

const TOOLS = `import { defineTool, definePayload, type Handler } from 'organism';
const g = globalThis as { __forkLookups?: number };
export const lookupOrder = defineTool({
  description: 'Looks an order up',
  input: definePayload('OrderQuery', { orderId: 'string' }),
  run: ({ orderId }: { orderId: string }) => {
    g.__forkLookups = (g.__forkLookups ?? 0) + 1;
    return { orderId, lookup: g.__forkLookups };
  },
});
export const collect: Handler = () => undefined;
`;

const lookups = () => (globalThis as { __forkLookups?: number }).__forkLookups ?? 0;

const services: Service[] = [];
afterEach(async () => {
  while (services.length) await services.pop()!.close();
});

async function run(replay: string) {
  const s = await startService({ yaml: yaml(replay), storage: 'sqlite', files: { 'tools.ts': TOOLS } });
  services.push(s);
  const settled = (id: string) => eventually(async () => (await s.request('GET', `/api/v1/threads/${id}`)).body.status === 'completed', `thread ${id} to complete`);
  const injected = await s.request('POST', '/api/v1/inject', { body: { to: 'desk', payload: { text: 'A-1' } } });
  const source = injected.body.threadId as string;
  await settled(source);
  const ran = lookups();
  const fork = (await s.request('POST', `/api/v1/threads/${source}/fork`, { body: {} })).body.threadId as string;
  await settled(fork);
  const calls = (await s.request('GET', `/api/v1/threads/${fork}/llm-calls`)).body.calls as Array<{ replayed: boolean; toolExecutions: Array<{ replayed: boolean; result: string }> }>;
  const payloads = async (id: string) => ((await s.request('GET', `/api/v1/threads/${id}/messages`)).body.messages as Array<{ payload: unknown }>).map((m) => m.payload);
  return { s, source, fork, calls, ranInFork: lookups() - ran, sourcePayloads: await payloads(source), forkPayloads: await payloads(fork) };
}

describe("time travel: a fork's code tools", () => {
  it('replay: recorded reuses the recorded result (the tool does not run) and the whole fork replays', async () => {
    const r = await run('    replay: recorded');
    expect(r.ranInFork).toBe(0);
    expect(r.calls.map((c) => c.replayed)).toEqual([true, true]);
    expect(r.calls[0]!.toolExecutions).toEqual([expect.objectContaining({ replayed: true, result: expect.stringContaining('"lookup"') })]);
    expect(r.forkPayloads).toEqual(r.sourcePayloads);
  });

  it('by default the tool runs again; its new result changes the next request, which goes live', async () => {
    const r = await run('');
    expect(r.ranInFork).toBe(1);
    expect(r.calls.map((c) => c.replayed)).toEqual([true, false]);
    expect(r.calls[0]!.toolExecutions).toEqual([expect.objectContaining({ replayed: false })]);
    expect(r.forkPayloads[1]).not.toEqual(r.sourcePayloads[1]);
    const cmp = (await r.s.request('GET', `/api/v1/threads/${r.source}/compare/${r.fork}`)).body;
    expect(cmp.firstCallDivergence).toMatchObject({ index: 1, agent: 'desk' });
    expect(cmp.firstDivergence).toBe(1);
  });
});
