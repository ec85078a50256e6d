import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { eventually, OPERATOR, startService, VIEWER, type Service } from './fixture.js';

const DEMO_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples', 'demo');
const DEMO_YAML = readFileSync(path.join(DEMO_DIR, 'organism.yaml'), 'utf8');
const DEMO_TOOLS = readFileSync(path.join(DEMO_DIR, 'tools.ts'), 'utf8');
/** The one key change of docs/configuration.md: the mock provider's agents answer in XML. */
const XML_DEMO = DEMO_YAML.replace('# reply_format: xml', 'reply_format: xml');

const services: Service[] = [];
afterEach(async () => {
  while (services.length) await services.pop()!.close();
});

async function demo(yaml: string): Promise<Service> {
  const s = await startService({ yaml, storage: 'sqlite', files: { 'tools.ts': DEMO_TOOLS } });
  services.push(s);
  return s;
}

async function runQuestion(s: Service, text: string): Promise<string> {
  const injected = await s.request('POST', '/api/v1/inject', { body: { to: 'researcher', payload: { text } } });
  expect(injected.status).toBe(200);
  const threadId = injected.body.threadId as string;
  await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'completed', 'the demo thread to complete');
  return threadId;
}

describe('recorded LLM calls through the API', () => {
  it('a demo thread (tools mode, the default) has its calls recorded: per thread and per delivery, operators only, in the OpenAPI document', async () => {
    const s = await demo(DEMO_YAML);
    const threadId = await runQuestion(s, 'tide pools');

    const messages = (await s.request('GET', `/api/v1/threads/${threadId}/messages`)).body.messages as Array<{ id: string; from: string; to: string; payload: Record<string, unknown> }>;
    expect(messages.map((m) => `${m.from}->${m.to}`)).toEqual(['api->researcher', 'researcher->writer', 'writer->announcer']);
    expect(messages[2]!.payload).toEqual({ text: 'News on tide pools: Three sources agree on tide pools.' });

    const res = await s.request('GET', `/api/v1/threads/${threadId}/llm-calls`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ threadId, count: 2, total: 2, offset: 0, limit: 50 });
    const [researcher, writer] = res.body.calls;
    expect(researcher).toMatchObject({ agent: 'researcher', provider: 'mock', model: 'mock-1', attempt: 1, repair: false, error: null, tools: ['send_to_writer', 'reply'] });
    expect(researcher.response.toolCalls).toEqual([
      { id: 'call_mock_1', name: 'send_to_writer', arguments: JSON.stringify({ topic: 'tide pools', summary: 'Three sources agree on tide pools.' }) },
    ]);
    expect(researcher.usage.totalTokens).toBeGreaterThan(0);
    expect(researcher.cost).toBeGreaterThan(0);
    expect(writer).toMatchObject({ agent: 'writer', tools: ['send_to_announcer', 'reply'] });

    const one = await s.request('GET', `/api/v1/journal/${messages[1]!.id}/llm-calls`);
    expect(one.status).toBe(200);
    expect(one.body).toMatchObject({ messageId: messages[1]!.id, count: 1, calls: [{ agent: 'writer', id: writer.id }] });
    expect((await s.request('GET', `/api/v1/journal/${messages[2]!.id}/llm-calls`)).body.count).toBe(0); // a code tool: no LLM

    expect((await s.request('GET', `/api/v1/threads/${threadId}/llm-calls`, { token: VIEWER })).status).toBe(403);
    expect((await s.request('GET', `/api/v1/journal/${messages[1]!.id}/llm-calls`, { token: VIEWER })).status).toBe(403);
    expect((await s.request('GET', '/api/v1/threads/nope/llm-calls')).status).toBe(404);
    expect((await s.request('GET', '/api/v1/journal/nope/llm-calls')).status).toBe(404);
    expect((await s.request('GET', `/api/v1/threads/${threadId}/llm-calls?limit=1&offset=1`)).body).toMatchObject({ count: 1, total: 2, calls: [{ agent: 'writer' }] });

    // The typed client reads the same routes.
    const client = createClient({ baseUrl: s.url, token: OPERATOR });
    expect((await client.threads.llmCalls(threadId, { limit: 1 })).calls.map((c) => c.agent)).toEqual(['researcher']);
    expect((await client.journal.llmCalls(messages[1]!.id)).calls[0]!.id).toBe(writer.id);

    const doc = (await s.request('GET', '/api/v1/openapi.json')).body as { paths: Record<string, unknown> };
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/v1/journal/{messageId}/llm-calls', '/api/v1/threads/{threadId}/llm-calls']));
  });

  it('a thread’s prompts never name a listener outside the agent’s peers (other than who wrote to it)', async () => {
    // The demo plus a listener that is nobody's peer.
    const s = await demo(
      `${DEMO_YAML.trimEnd()}\n\n  - name: auditor\n    description: Audits everything in secret\n    handler: ./tools.ts#uppercase\n    payload: Announcement\n    peers: []\n`,
    );
    const threadId = await runQuestion(s, 'volcanoes');
    const listeners = ((await s.request('GET', '/api/v1/agents')).body.agents as Array<{ name: string; peers: string[] }>).filter((a) => !a.name.startsWith('system.'));
    const messages = (await s.request('GET', `/api/v1/threads/${threadId}/messages`)).body.messages as Array<{ from: string; to: string }>;
    const { calls } = (await s.request('GET', `/api/v1/threads/${threadId}/llm-calls`)).body as { calls: Array<{ agent: string; request: unknown }> };
    expect(calls).toHaveLength(2);
    for (const c of calls) {
      const self = listeners.find((l) => l.name === c.agent)!;
      const senders = messages.filter((m) => m.to === c.agent).map((m) => m.from);
      const allowed = new Set([self.name, ...self.peers, ...senders]);
      const forbidden = listeners.map((l) => l.name).filter((n) => !allowed.has(n));
      expect(forbidden.length).toBeGreaterThan(0);
      const prompt = JSON.stringify(c.request);
      for (const name of forbidden) expect(prompt, `${c.agent}'s prompt names ${name}`).not.toContain(name);
      for (const peer of self.peers) expect(prompt).toContain(peer);
    }
  });

  it('the demo runs in xml mode by one key change: no tools offered, the XML format in the prompt', async () => {
    expect(XML_DEMO).not.toBe(DEMO_YAML);
    const s = await demo(XML_DEMO);
    const threadId = await runQuestion(s, 'glaciers');
    const messages = (await s.request('GET', `/api/v1/threads/${threadId}/messages`)).body.messages as Array<{ to: string; payload: Record<string, unknown> }>;
    expect(messages.at(-1)).toMatchObject({ to: 'announcer', payload: { text: 'News on glaciers: Three sources agree on glaciers.' } });
    const { calls } = (await s.request('GET', `/api/v1/threads/${threadId}/llm-calls`)).body as {
      calls: Array<{ tools: string[]; request: { system: string; tools: unknown[] }; response: { text: string } }>;
    };
    expect(calls).toHaveLength(2);
    for (const c of calls) {
      expect(c.tools).toEqual([]);
      expect(c.request.system).toContain('<send to="PEER">');
    }
    expect(calls[0]!.response.text).toContain('<send to="writer"><Findings>');
  });
});
