import { afterEach, describe, expect, it } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { ProviderHttpError } from '../../src/llm/http-error.js';
import { AnthropicProvider } from '../../src/llm/providers/anthropic.js';
import { OpenAiProvider } from '../../src/llm/providers/openai.js';
import type { LlmProvider } from '../../src/llm/types.js';
import { listener, settled, startOrganism } from '../pump/harness.js';
import { call, makeRouter, providerConfig, rejection, request, track } from './helpers.js';
import { openAiChunks, openAiOk, startOpenAiServer } from './servers/openai-server.js';
import { startFloodServer, type Flood, type FloodServer } from './servers/flood-server.js';

const MB = 1024 * 1024;
const FLOOD = 150 * MB;
/** llm.max_reply_bytes in these tests. */
const CAP = 1 * MB;
/** Generous: the cap, the whole-body allowance (2 x cap + 64 KiB) and the runtime's own noise. */
const MAX_GROWTH = 64 * MB;

const floods: FloodServer[] = [];
afterEach(async () => {
  while (floods.length) await floods.pop()!.close();
});

const sse = (events: ReadonlyArray<{ event?: string; data: unknown }>) =>
  events.map((e) => `${e.event ? `event: ${e.event}\n` : ''}data: ${typeof e.data === 'string' ? e.data : JSON.stringify(e.data)}\n\n`).join('');
/** Many events in one filler chunk (~64 KiB), so the stream is made of ordinary small events. */
const repeatTo = (text: string, bytes: number) => text.repeat(Math.max(1, Math.floor(bytes / Buffer.byteLength(text))));
const text1k = 'a'.repeat(1000);

const openAiWhole: Flood = {
  contentType: 'application/json',
  head: '{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"',
  filler: 'a'.repeat(64 * 1024),
  tail: '"}}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}',
  totalBytes: FLOOD,
};
const openAiStream: Flood = {
  contentType: 'text/event-stream',
  head: sse([{ data: { object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] } }]),
  filler: repeatTo(sse([{ data: { object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { content: text1k } }] } }]), 64 * 1024),
  tail: sse([{ data: '[DONE]' }]),
  totalBytes: FLOOD,
};
const anthropicWhole: Flood = {
  contentType: 'application/json',
  head: '{"type":"message","role":"assistant","model":"m","stop_reason":"end_turn","content":[{"type":"text","text":"',
  filler: 'a'.repeat(64 * 1024),
  tail: '"}],"usage":{"input_tokens":1,"output_tokens":1}}',
  totalBytes: FLOOD,
};
const anthropicStream: Flood = {
  contentType: 'text/event-stream',
  head: sse([
    { event: 'message_start', data: { type: 'message_start', message: { model: 'm', usage: { input_tokens: 1, output_tokens: 1 } } } },
    { event: 'content_block_start', data: { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } } },
  ]),
  filler: repeatTo(sse([{ event: 'content_block_delta', data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: text1k } } }]), 64 * 1024),
  tail: sse([{ event: 'message_stop', data: { type: 'message_stop' } }]),
  totalBytes: FLOOD,
};
/** One event that never ends: the event parser would hold it whole. */
const endlessEvent: Flood = {
  contentType: 'text/event-stream',
  head: 'data: {"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"',
  filler: 'a'.repeat(64 * 1024),
  tail: '"}}]}\n\n',
  totalBytes: FLOOD,
};

/** Runs `work` while sampling this process's RSS; returns the highest growth seen over the start. */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ value: T; growth: number }> {
  const start = process.memoryUsage().rss;
  let peak = start;
  const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 10);
  try {
    const value = await work();
    return { value, growth: Math.max(peak, process.memoryUsage().rss) - start };
  } finally {
    clearInterval(sample);
  }
}

async function flood(f: Flood): Promise<FloodServer> {
  const s = await startFloodServer(f);
  floods.push(s);
  return s;
}

const providers: Record<'openai' | 'anthropic', (url: string) => LlmProvider> = {
  openai: (url) => new OpenAiProvider(providerConfig({ name: 'oa', type: 'openai', baseUrl: url, timeoutSeconds: 120 })),
  anthropic: (url) => new AnthropicProvider(providerConfig({ name: 'an', type: 'anthropic', baseUrl: url, timeoutSeconds: 120 })),
};

describe('llm.max_reply_bytes holds while a reply is read', () => {
  const cases: Array<[string, 'openai' | 'anthropic', Flood, string]> = [
    ['OpenAI, whole JSON body', 'openai', openAiWhole, 'reply body passed'],
    ['OpenAI, streamed', 'openai', openAiStream, 'streamed reply passed'],
    ['OpenAI, one endless stream event', 'openai', endlessEvent, 'one stream event passed'],
    ['Anthropic, whole JSON body', 'anthropic', anthropicWhole, 'reply body passed'],
    ['Anthropic, streamed', 'anthropic', anthropicStream, 'streamed reply passed'],
  ];
  for (const [name, type, f, reason] of cases) {
    it(`${name}: a 150 MB reply is cut off at the cap, the connection closed, memory bounded`, { timeout: 120_000 }, async () => {
      const s = await flood(f);
      const provider = providers[type](s.url);
      const { value: err, growth } = await peakGrowth(() => rejection(provider.complete(request('m', { maxReplyBytes: CAP }), new AbortController().signal)));
      expect(Errors.LLM_BAD_RESPONSE.is(err)).toBe(true);
      expect(err.message).toContain(reason);
      expect(err.message).toContain('the request was aborted');
      const outcome = await s.outcome();
      expect(outcome.closedEarly).toBe(true);
      expect(outcome.sentBytes).toBeLessThan(FLOOD);
      expect(growth).toBeLessThan(MAX_GROWTH);
    });
  }

  it('reads an error body (4xx/5xx) only up to a small cap, keeping the status and the start of the message', { timeout: 120_000 }, async () => {
    const s = await flood({ status: 500, contentType: 'application/json', head: '{"error":{"message":"boom ', filler: 'x'.repeat(64 * 1024), tail: '"}}', totalBytes: FLOOD });
    const { value: err, growth } = await peakGrowth(() => rejection(providers.openai(s.url).complete(request('m', { maxReplyBytes: 100 * MB }), new AbortController().signal)));
    expect(err).toBeInstanceOf(ProviderHttpError);
    expect((err as ProviderHttpError).status).toBe(500);
    expect((err as ProviderHttpError).providerMessage.length).toBeLessThanOrEqual(16 * 1024);
    expect((await s.outcome()).closedEarly).toBe(true);
    expect(growth).toBeLessThan(MAX_GROWTH);
  });

  it('fails the call as a bad response: not retried on the same provider', { timeout: 120_000 }, async () => {
    const s = await flood(openAiStream);
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, maxRetries: 3, timeoutSeconds: 120 })]);
    const err = await rejection(router.complete(request('m', { maxReplyBytes: CAP }), call()));
    expect(Errors.LLM_REQUEST_FAILED.is(err)).toBe(true);
    expect(err.message).toContain('llm.max_reply_bytes');
    expect(s.requests).toBe(1);
  });

  it('an organism applies its llm.max_reply_bytes: the delivery fails with the reason, the connection is closed', { timeout: 120_000 }, async () => {
    const s = await flood(openAiStream);
    const { organism } = await startOrganism([listener('boss', { handler: null, agent: true, prompt: 'p', model: 'gpt-x' })], {
      llm: { providers: [providerConfig({ name: 'compat', type: 'openai', baseUrl: s.url, maxRetries: 3, timeoutSeconds: 120 })], pricing: {}, maxReplyBytes: CAP },
    });
    try {
      const { threadId } = await organism.inject('boss', { text: 'hi' });
      const thread = await settled(organism, threadId);
      expect(thread.error).toContain(`the streamed reply passed ${2 * CAP + 64 * 1024} bytes (twice llm.max_reply_bytes plus 64 KiB)`);
      expect((await s.outcome()).closedEarly).toBe(true);
      expect(s.requests).toBe(1);
    } finally {
      await organism.stop({ timeoutMs: 2_000 });
    }
  });

  it('reads a streamed reply up to twice the cap plus 64 KiB (the agent then refuses what is over the cap with its size); one byte more is cut off', async () => {
    const limit = 2 * 4_000 + 64 * 1024;
    const text = 'b'.repeat(limit);
    const s = await track(startOpenAiServer({ replies: [{ events: openAiChunks(openAiOk(text), true) }, { events: openAiChunks(openAiOk(`${text}b`), true) }] }));
    const provider = providers.openai(s.url);
    expect((await provider.complete(request('m', { maxReplyBytes: 4_000 }), new AbortController().signal)).content).toBe(text);
    const err = await rejection(provider.complete(request('m', { maxReplyBytes: 4_000 }), new AbortController().signal));
    expect(err.message).toContain(`the streamed reply passed ${limit} bytes (twice llm.max_reply_bytes plus 64 KiB)`);
  });
});
