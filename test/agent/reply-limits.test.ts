import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { definePayload } from '../../src/payload/define.js';
import { openAiOk, startProtocolServer } from '../llm/protocol-server.js';
import { listener, mockProvider, settled, startOrganism, Text } from '../pump/harness.js';

const Task = definePayload('Task', { goal: 'string' });
const servers: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  while (servers.length) await servers.pop()!.close();
});

function openAi(url: string) {
  return { ...mockProvider(), name: 'local', type: 'openai' as const, baseUrl: url, maxRetries: 0 };
}

const sends = (n: number) => Array.from({ length: n }, (_, i) => `<send to="worker"><Task><goal>g${i}</goal></Task></send>`).join('\n');

async function boss(url: string, opts: { maxReplyBytes?: number; maxMessagesPerReply?: number; listenerMax?: number } = {}) {
  const got: unknown[] = [];
  const { organism } = await startOrganism(
    [
      listener('boss', { handler: null, agent: true, peers: ['worker'], prompt: 'p', model: 'gpt-4o', maxMessagesPerReply: opts.listenerMax ?? null }),
      listener('worker', { payload: 'Task', handler: (p) => void got.push(p) }),
    ],
    {
      llm: {
        providers: [openAi(url)],
        pricing: {},
        ...(opts.maxReplyBytes !== undefined ? { maxReplyBytes: opts.maxReplyBytes } : {}),
        ...(opts.maxMessagesPerReply !== undefined ? { maxMessagesPerReply: opts.maxMessagesPerReply } : {}),
      },
    },
    {},
    [Text, Task],
  );
  return { organism, got };
}

describe('llm.max_reply_bytes', () => {
  it('fails the delivery unread when an answer is over the cap, with no repair round', async () => {
    const reply = `<send to="worker"><Task><goal>${'é'.repeat(600)}</goal></Task></send>`; // 1,244 bytes, 644 characters
    const s = await startProtocolServer([{ body: openAiOk(reply) }]);
    servers.push(s);
    const { organism, got } = await boss(s.url, { maxReplyBytes: 1_000 });
    const { threadId } = await organism.inject('boss', { text: 'go' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    expect(thread.error).toContain(Errors.LLM_REPLY_TOO_LARGE('boss', Buffer.byteLength(reply), 1_000).detail);
    expect(s.seen).toHaveLength(1);
    expect(got).toEqual([]);
    await organism.stop();
  });

  it('reads an answer at the cap', async () => {
    const reply = sends(1);
    const s = await startProtocolServer([{ body: openAiOk(reply) }]);
    servers.push(s);
    const { organism, got } = await boss(s.url, { maxReplyBytes: Buffer.byteLength(reply) });
    const { threadId } = await organism.inject('boss', { text: 'go' });
    expect((await settled(organism, threadId)).status).toBe('completed');
    expect(got).toEqual([{ goal: 'g0' }]);
    await organism.stop();
  });
});

describe('max_messages_per_reply', () => {
  it('refuses an answer sending more than llm.max_messages_per_reply (default 20) and queues none of it', async () => {
    const s = await startProtocolServer([{ body: openAiOk(sends(21)) }]);
    servers.push(s);
    const { organism, got } = await boss(s.url);
    const { threadId } = await organism.inject('boss', { text: 'go' });
    const thread = await settled(organism, threadId);
    expect(thread.status).toBe('error');
    expect(thread.error).toContain(Errors.LLM_INVALID_REPLY('boss', 'the reply sends 21 messages; at most 20 are allowed in one reply').detail);
    expect(s.seen).toHaveLength(2); // the repair round was told why
    const repair = (s.seen[1]!.body as { messages: Array<{ content: string }> }).messages.at(-1)!.content;
    expect(repair).toContain('the reply sends 21 messages; at most 20 are allowed in one reply');
    expect(got).toEqual([]);
    await organism.stop();
  });

  it('takes the organism-wide value, and a listener value over it', async () => {
    const s = await startProtocolServer([{ body: openAiOk(sends(3)) }]);
    servers.push(s);
    const strict = await boss(s.url, { maxMessagesPerReply: 2 });
    const refused = await settled(strict.organism, (await strict.organism.inject('boss', { text: 'go' })).threadId);
    expect(refused.error).toContain('the reply sends 3 messages; at most 2 are allowed in one reply');
    await strict.organism.stop();

    const own = await boss(s.url, { maxMessagesPerReply: 2, listenerMax: 3 });
    const done = await settled(own.organism, (await own.organism.inject('boss', { text: 'go' })).threadId);
    expect(done.status).toBe('completed');
    expect(own.got).toHaveLength(3);
    await own.organism.stop();
  });
});
