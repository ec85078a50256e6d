import { afterEach, describe, expect, it, vi } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { AnthropicProvider } from '../../src/llm/providers/anthropic.js';
import { call, makeRouter, providerConfig, rejection, request, track } from './helpers.js';
import { anthropicError, anthropicOk, startAnthropicServer } from './servers/anthropic-server.js';

const KEY = 'ant-secret-456';
afterEach(() => {
  delete process.env['TEST_ANTHROPIC_KEY'];
  vi.restoreAllMocks();
});

describe('Anthropic provider', () => {
  it('speaks the Messages API: key and version headers, top-level system, max_tokens', async () => {
    process.env['TEST_ANTHROPIC_KEY'] = KEY;
    const s = await track(startAnthropicServer({ key: KEY, replies: [{ body: anthropicOk('bonjour') }] }));
    const { router } = makeRouter([providerConfig({ name: 'an', type: 'anthropic', baseUrl: s.url, apiKeyEnv: 'TEST_ANTHROPIC_KEY' })]);
    const result = await router.complete(
      request('claude-sonnet-4', {
        messages: [
          { role: 'user', content: 'hi' },
          { role: 'assistant', content: 'yes?' },
          { role: 'user', content: 'go' },
        ],
      }),
      call(),
    );
    expect(s.seen[0]!.headers['x-api-key']).toBe(KEY);
    expect(s.seen[0]!.headers['anthropic-version']).toBe('2023-06-01');
    expect(s.seen[0]!.body).toEqual({
      model: 'claude-sonnet-4',
      system: 'be brief',
      max_tokens: 50,
      messages: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'yes?' },
        { role: 'user', content: 'go' },
      ],
      stream: true,
    });
    expect(result).toMatchObject({ content: 'bonjour', model: 'claude-sonnet-4-20250514', provider: 'an' });
  });

  it('joins the text blocks of the content and skips the others', async () => {
    const s = await track(
      startAnthropicServer({
        replies: [
          {
            body: anthropicOk([
              { type: 'thinking', thinking: 'hmm', signature: 'x' },
              { type: 'text', text: 'one ' },
              { type: 'text', text: 'two' },
            ]),
          },
        ],
      }),
    );
    const { router } = makeRouter([providerConfig({ name: 'an', type: 'anthropic', baseUrl: s.url })]);
    expect((await router.complete(request('claude-sonnet-4'), call())).content).toBe('one two');
  });

  it('maps usage: cache read and cache creation tokens, counted into the prompt tokens', async () => {
    const s = await track(startAnthropicServer({ replies: [{ body: anthropicOk('x', { cache_read_input_tokens: 30, cache_creation_input_tokens: 5 }) }] }));
    const { router } = makeRouter([providerConfig({ name: 'an', type: 'anthropic', baseUrl: s.url })]);
    const { usage } = await router.complete(request('claude-sonnet-4'), call());
    expect(usage).toEqual({ promptTokens: 85, completionTokens: 10, totalTokens: 95, cacheReadTokens: 30, cacheWriteTokens: 5, reasoningTokens: null });
  });

  it('no cache fields -> null cache tokens', async () => {
    const s = await track(startAnthropicServer({ replies: [{ body: anthropicOk('x') }] }));
    const { router } = makeRouter([providerConfig({ name: 'an', type: 'anthropic', baseUrl: s.url })]);
    const { usage } = await router.complete(request('claude-sonnet-4'), call());
    expect(usage).toEqual({ promptTokens: 50, completionTokens: 10, totalTokens: 60, cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null });
  });

  it('sends no system field when the system prompt is empty', async () => {
    const s = await track(startAnthropicServer({ replies: [{ body: anthropicOk('x') }] }));
    const { router } = makeRouter([providerConfig({ name: 'an', type: 'anthropic', baseUrl: s.url })]);
    await router.complete(request('claude-sonnet-4', { system: '' }), call());
    expect(s.seen[0]!.body).not.toHaveProperty('system');
  });

  it('reads its error bodies; a wrong key (401) is not retried and the key is not in the error', async () => {
    process.env['TEST_ANTHROPIC_KEY'] = 'wrong-key-789';
    const s = await track(startAnthropicServer({ key: KEY, replies: [{ body: anthropicOk('x') }] }));
    const { router } = makeRouter([providerConfig({ name: 'an', type: 'anthropic', baseUrl: s.url, apiKeyEnv: 'TEST_ANTHROPIC_KEY' })]);
    const err = await rejection(router.complete(request('claude-sonnet-4'), call()));
    expect(s.seen).toHaveLength(1);
    expect(err.message).toBe(Errors.LLM_REQUEST_FAILED('an', 'HTTP 401: invalid x-api-key').detail);
    expect(err.message).not.toContain('wrong-key-789');
  });

  it('treats 529 overloaded as retryable', async () => {
    const s = await track(startAnthropicServer({ replies: [{ status: 529, body: anthropicError('overloaded_error', 'Overloaded') }, { body: anthropicOk('fine') }] }));
    const { router, sleeps } = makeRouter([providerConfig({ name: 'an', type: 'anthropic', baseUrl: s.url })]);
    const result = await router.complete(request('claude-opus-4'), call());
    expect(result).toMatchObject({ content: 'fine', attempts: 2 });
    expect(s.seen).toHaveLength(2);
    expect(sleeps).toHaveLength(1);
  });

  it('an exhausted 529 names the provider and its message', async () => {
    const s = await track(startAnthropicServer({ replies: [{ status: 529, body: anthropicError('overloaded_error', 'Overloaded') }] }));
    const { router } = makeRouter([providerConfig({ name: 'an', type: 'anthropic', baseUrl: s.url, maxRetries: 1 })]);
    const err = await rejection(router.complete(request('claude-opus-4'), call()));
    expect(s.seen).toHaveLength(2);
    expect(err.message).toBe('LLM request to an failed: HTTP 529: Overloaded');
  });

  it('defaults to https://api.anthropic.com', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch').mockResolvedValue(new Response(JSON.stringify(anthropicOk('x')), { status: 200 }));
    const provider = new AnthropicProvider(providerConfig({ name: 'an', type: 'anthropic' }));
    await provider.complete(request('claude-sonnet-4'), new AbortController().signal);
    expect(fetchSpy.mock.calls[0]![0]).toBe('https://api.anthropic.com/v1/messages');
  });
});
