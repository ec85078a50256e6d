import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { eventually, OPERATOR, startService, STORAGE_KINDS, VIEWER, type Service } from './fixture.js';

const cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanup.length) await cleanup.pop()!();
});

/** A port nothing listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/** An OpenAI-compatible endpoint that answers every request 500. */
async function failingServer(): Promise<{ url: string; hits: () => number }> {
  let hits = 0;
  const s: Server = createServer((req, res) => {
    hits++;
    req.resume();
    res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'the model is on fire' } }));
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  cleanup.push(() => new Promise<void>((r) => s.close(() => r())));
  return { url: `http://127.0.0.1:${(s.address() as AddressInfo).port}/v1`, hits: () => hits };
}

function yaml(downUrl: string, burningUrl: string, record = 'full'): string {
  return `organism:
  name: llm-calls-test
llm:
  record: ${record}
  providers:
    - name: mock
      type: mock
      models: [mock-]
    - name: down
      type: openai
      base_url: ${downUrl}
      models: [down-]
      max_retries: 1
    - name: burning
      type: openai
      base_url: ${burningUrl}
      models: [burning-]
      max_retries: 1
payloads:
  Text:
    fields:
      text: string
listeners:
  - name: asker
    description: Asks a provider that is down
    payload: Text
    handler: builtin:llm
    model: down-1
    prompt: You ask a provider that cannot be reached.
    peers: []
  - name: burner
    description: Asks a provider that answers 500
    payload: Text
    handler: builtin:llm
    model: burning-1
    prompt: You ask a provider that fails.
    peers: []
  - name: talker
    description: Asks the mock
    payload: Text
    handler: builtin:llm
    model: mock-1
    prompt: You talk.
    peers: []
`;
}

async function settled(s: Service, to: string, text: string): Promise<string> {
  const injected = await s.request('POST', '/api/v1/inject', { body: { to, payload: { text } } });
  expect(injected.status).toBe(200);
  const threadId = injected.body.threadId as string;
  await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status !== 'active', `the ${to} thread to settle`);
  return threadId;
}

describe.each(STORAGE_KINDS)('failed provider calls and an agent’s calls (%s)', (storage) => {
  it('a provider that is down, or answers 500, leaves every attempt with its error; the agent’s calls list them newest first, operators only', async () => {
    const burning = await failingServer();
    const s = await startService({ yaml: yaml(`http://127.0.0.1:${await closedPort()}/v1`, burning.url), storage });
    cleanup.push(() => s.close());

    const down = await settled(s, 'asker', 'anyone there?');
    const { calls } = (await s.request('GET', `/api/v1/threads/${down}/llm-calls`)).body as { calls: Array<Record<string, unknown>> };
    // max_retries: 1 = two attempts, both failed, each with the request it tried to send.
    expect(calls.map((c) => [c.agent, c.provider, c.attempt, c.response, c.cost, c.record])).toEqual([
      ['asker', 'down', 1, null, null, 'full'],
      ['asker', 'down', 2, null, null, 'full'],
    ]);
    for (const c of calls) {
      expect(c.error).toMatch(/network error/);
      expect(JSON.stringify(c.request)).toContain('anyone there?');
    }

    const burnt = await settled(s, 'burner', 'hello?');
    const burnedCalls = (await s.request('GET', `/api/v1/threads/${burnt}/llm-calls`)).body.calls as Array<{ attempt: number; error: string }>;
    expect(burning.hits()).toBe(2);
    expect(burnedCalls.map((c) => c.attempt)).toEqual([1, 2]);
    for (const c of burnedCalls) expect(c.error).toMatch(/500/);

    await settled(s, 'talker', 'hi');
    const res = await s.request('GET', '/api/v1/agents/asker/llm-calls');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ agent: 'asker', count: 2, total: 2, offset: 0, limit: 50 });
    expect(res.body.calls.map((c: { attempt: number }) => c.attempt)).toEqual([2, 1]); // newest first
    expect((await s.request('GET', '/api/v1/agents/talker/llm-calls')).body.calls).toMatchObject([{ agent: 'talker', error: null, record: 'full' }]);
    expect((await s.request('GET', '/api/v1/agents/asker/llm-calls?limit=1&offset=1')).body).toMatchObject({ count: 1, total: 2, calls: [{ attempt: 1 }] });
    expect((await s.request('GET', '/api/v1/agents/asker/llm-calls', { token: VIEWER })).status).toBe(403);
    expect((await s.request('GET', '/api/v1/agents/nobody/llm-calls')).status).toBe(404);
    expect((await s.request('GET', '/api/v1/agents/asker/llm-calls?limit=0')).status).toBe(422);

    // The typed client reads the same route.
    const client = createClient({ baseUrl: s.url, token: OPERATOR });
    expect((await client.agents.llmCalls('burner', { limit: 1 })).calls.map((c) => [c.attempt, c.provider])).toEqual([[2, 'burning']]);
    const doc = (await s.request('GET', '/api/v1/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toContain('/api/v1/agents/{name}/llm-calls');
  });
});

describe('llm.record: metadata', () => {
  it('says so on every call: no request, no answer text', async () => {
    const burning = await failingServer();
    const s = await startService({ yaml: yaml(`http://127.0.0.1:${await closedPort()}/v1`, burning.url, 'metadata'), storage: 'sqlite' });
    cleanup.push(() => s.close());
    await settled(s, 'talker', 'secret');
    const calls = (await s.request('GET', '/api/v1/agents/talker/llm-calls')).body.calls as Array<{ record: string; request: unknown; response: { text: unknown } }>;
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ record: 'metadata', request: null, response: { text: null } });
  });
});
