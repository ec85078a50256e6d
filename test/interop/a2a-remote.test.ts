import { createServer, type Server } from 'node:http';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { OrganismEvent } from '../../src/events/types.js';
import { BASE_LISTENERS, OPERATOR, organismYaml, startService, type Service } from '../service/fixture.js';
import { exposedYaml } from './fixture.js';

/** Forwards to `target`, answering 503 to the first `failures` JSON-RPC calls (a flaky remote agent). */
async function flakyProxy(target: string, failures: number): Promise<{ url: string; server: Server; calls: () => number }> {
  let calls = 0;
  let port = 0;
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.method === 'POST' && calls++ < failures) {
      res.writeHead(503, { 'content-type': 'application/json' }).end('{"detail":"overloaded"}');
      return;
    }
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k, v]) => typeof v === 'string' && k !== 'host' && k !== 'content-length')) as Record<string, string>;
    const answer = await fetch(`${target}${req.url}`, { method: req.method ?? 'GET', headers, ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}) });
    if (req.url?.endsWith('agent-card.json')) {
      // The card names the endpoint as the first organism was reached: point it here.
      const card = (await answer.text()).replaceAll(target, `http://127.0.0.1:${port}`);
      res.writeHead(answer.status, { 'content-type': 'application/json' }).end(card);
      return;
    }
    res.writeHead(answer.status, Object.fromEntries(answer.headers.entries()));
    if (answer.body) Readable.fromWeb(answer.body as import('node:stream/web').ReadableStream).pipe(res);
    else res.end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : 0;
  return { url: `http://127.0.0.1:${port}`, server, calls: () => calls };
}

describe('remote A2A agents as listeners: handler a2a:<url> (issue 31)', () => {
  let first: Service;
  let second: Service;
  let proxy: Awaited<ReturnType<typeof flakyProxy>>;
  beforeAll(async () => {
    process.env['FIRST_ORGANISM_TOKEN'] = OPERATOR;
    first = await startService({ yaml: exposedYaml() });
    proxy = await flakyProxy(first.url, 1);
    const remote = (name: string, url: string, extra = '') => ({
      name,
      yaml: `  - name: ${name}
    description: The first organism's ${name}
    payload: Text
    handler: a2a:${url}
    token_env: FIRST_ORGANISM_TOKEN${extra}`,
    });
    second = await startService({
      yaml: organismYaml(
        [
          ...BASE_LISTENERS,
          remote('asker', `${first.url}/a2a/helper`),
          remote('flaky', `${proxy.url}/a2a/helper`, '\n    max_retries: 2'),
          remote('stuck', `${first.url}/a2a/slow`, '\n    timeout_seconds: 1'),
        ],
        'second',
      ),
    });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    proxy?.server.close();
  });

  async function replyOf(service: Service, threadId: string) {
    await vi.waitUntil(async () => ['completed', 'error'].includes((await service.organism.thread(threadId))?.status ?? ''), { timeout: 15_000, interval: 20 });
    const { messages } = await service.client.threads.messages(threadId);
    return { thread: await service.organism.thread(threadId), reply: messages.find((m) => m.to === 'api') };
  }

  it('a second organism uses the first through a handler: a2a listener; the thread completes across both, with live updates', async () => {
    const deltas: OrganismEvent[] = [];
    const off = second.organism.queries.events.on((e) => {
      if (e.type === 'llm_delta') deltas.push(e);
    });
    const { threadId } = await second.organism.inject('asker', { text: 'life' });
    const { thread, reply } = await replyOf(second, threadId);
    off();
    expect(thread?.status).toBe('completed');
    expect(reply).toMatchObject({ from: 'asker', payloadType: 'Text', payload: { text: 'The answer to life is 42' } });
    // The first organism ran it as a thread of its own (the A2A task), which completed too.
    const remoteThreads = await first.client.threads.list({ agent: 'helper' });
    expect(remoteThreads.threads.some((t) => t.status === 'completed')).toBe(true);
    expect(deltas.some((e) => e.type === 'llm_delta' && e.threadId === threadId && e.agent === 'asker' && e.text.includes('42'))).toBe(true);
  });

  it('retries a failing remote agent with backoff (503 first), as for LLM providers', async () => {
    const { threadId } = await second.organism.inject('flaky', { text: 'retries' });
    const { thread, reply } = await replyOf(second, threadId);
    expect(thread?.status).toBe('completed');
    expect(reply?.payload).toEqual({ text: 'The answer to retries is 42' });
    expect(proxy.calls()).toBeGreaterThanOrEqual(2);
  });

  it('a remote agent that does not answer in timeout_seconds fails the delivery', async () => {
    const { threadId } = await second.organism.inject('stuck', { text: 'never' });
    const { thread } = await replyOf(second, threadId);
    expect(thread?.status).toBe('error');
  });
});
