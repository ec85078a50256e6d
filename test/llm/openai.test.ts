import { inspect } from 'node:util';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Errors } from '../../src/errors/catalogue.js';
import { OpenAiProvider } from '../../src/llm/providers/openai.js';
import { call, makeRouter, providerConfig, rejection, request, track } from './helpers.js';
import { openAiError, openAiOk, startOpenAiServer } from './servers/openai-server.js';
import { startScriptedServer } from './servers/scripted-server.js';

const KEY = 'sk-test-secret-123';
afterEach(() => {
  delete process.env['TEST_OPENAI_KEY'];
  vi.restoreAllMocks();
});

describe('OpenAI-compatible provider', () => {
  it('sends the key from its env var, system first, streaming with usage, and maps usage incl. cached and reasoning tokens', async () => {
    process.env['TEST_OPENAI_KEY'] = KEY;
    const s = await track(
      startOpenAiServer({
        key: KEY,
        replies: [{ body: openAiOk('hi there', { prompt_tokens_details: { cached_tokens: 40 }, completion_tokens_details: { reasoning_tokens: 7 } }) }],
      }),
    );
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, apiKeyEnv: 'TEST_OPENAI_KEY' })]);
    const result = await router.complete(request('gpt-4o-mini'), call());
    expect(s.seen[0]!.headers['authorization']).toBe(`Bearer ${KEY}`);
    expect(s.seen[0]!.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'hello' },
      ],
      max_tokens: 50,
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(result).toMatchObject({ content: 'hi there', model: 'gpt-4o-mini-2024-07-18', provider: 'oa', attempts: 1 });
    expect(result.usage).toEqual({ promptTokens: 100, completionTokens: 20, totalTokens: 120, cacheReadTokens: 40, cacheWriteTokens: null, reasoningTokens: 7 });
  });

  it('reports cache and reasoning tokens as null (not 0) when the server does not send them', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('x') }] }));
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    const { usage } = await router.complete(request('gpt-4o'), call());
    expect(usage).toMatchObject({ cacheReadTokens: null, cacheWriteTokens: null, reasoningTokens: null });
  });

  it('reads the key at request time and never holds it where it could be serialized or logged', async () => {
    const s = await track(startOpenAiServer({ replies: [{ body: openAiOk('x') }] }));
    const provider = new OpenAiProvider(providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, apiKeyEnv: 'TEST_OPENAI_KEY' }));
    process.env['TEST_OPENAI_KEY'] = 'sk-first';
    await provider.complete(request('gpt-4o'), new AbortController().signal);
    process.env['TEST_OPENAI_KEY'] = 'sk-second';
    await provider.complete(request('gpt-4o'), new AbortController().signal);
    expect(s.seen.map((r) => r.headers['authorization'])).toEqual(['Bearer sk-first', 'Bearer sk-second']);
    expect(JSON.stringify(provider)).not.toContain('sk-second');
    expect(inspect(provider, { depth: 10, showHidden: true })).not.toContain('sk-second');
  });

  it('works without any key (Ollama, vLLM, LM Studio) under a base_url with a path', async () => {
    const s = await track(startOpenAiServer({ prefix: '/v1', replies: [{ body: openAiOk('local') }] }));
    const { router } = makeRouter([providerConfig({ name: 'ollama', type: 'openai', baseUrl: `${s.url}/v1/` })]);
    expect((await router.complete(request('llama3'), call())).content).toBe('local');
    expect(s.seen[0]!.path).toBe('/v1/chat/completions');
    expect(s.seen[0]!.headers['authorization']).toBeUndefined();
  });

  it('an unset key env var sends no key; the server refusal (401) is reported once, not retried', async () => {
    const s = await track(startOpenAiServer({ key: KEY, replies: [{ body: openAiOk('x') }] }));
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, apiKeyEnv: 'TEST_OPENAI_KEY' })]);
    const err = await rejection(router.complete(request('gpt-4o'), call()));
    expect(s.seen).toHaveLength(1);
    expect(s.seen[0]!.headers['authorization']).toBeUndefined();
    expect(err.message).toBe(Errors.LLM_REQUEST_FAILED('oa', 'HTTP 401: Incorrect API key provided.').detail);
  });

  it('reports the provider error message; a key echoed back by the server is cut out', async () => {
    process.env['TEST_OPENAI_KEY'] = KEY;
    const s = await track(startScriptedServer(() => ({ status: 400, body: openAiError(`Invalid key ${KEY} for this model`, 'invalid_request_error') })));
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url, apiKeyEnv: 'TEST_OPENAI_KEY' })]);
    const err = await rejection(router.complete(request('gpt-4o'), call()));
    expect(Errors.LLM_REQUEST_FAILED.is(err)).toBe(true);
    expect(err.message).toBe('LLM request to oa failed: HTTP 400: Invalid key [redacted] for this model');
    expect(inspect(err, { depth: 10 })).not.toContain(KEY);
  });

  it('asks reasoning models with max_completion_tokens', async () => {
    const s = await track(startOpenAiServer({ completionTokensOnly: ['o3-mini'], replies: [{ body: openAiOk('x') }] }));
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    await router.complete(request('o3-mini'), call());
    expect(s.seen).toHaveLength(1);
    expect(s.seen[0]!.body['max_completion_tokens']).toBe(50);
    expect(s.seen[0]!.body).not.toHaveProperty('max_tokens');
  });

  it('switches to max_completion_tokens when a server refuses max_tokens for a model, and remembers it', async () => {
    const s = await track(startOpenAiServer({ completionTokensOnly: ['future-model'], replies: [{ body: openAiOk('x') }] }));
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    await router.complete(request('future-model'), call());
    await router.complete(request('future-model'), call());
    expect(s.seen.map((r) => ('max_tokens' in r.body ? 'max_tokens' : 'max_completion_tokens'))).toEqual(['max_tokens', 'max_completion_tokens', 'max_completion_tokens']);
  });

  it('a 2xx answer that is not JSON is an unreadable response, not retried', async () => {
    const s = await track(startScriptedServer(() => ({ rawBody: '<html>gateway</html>' })));
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    const err = await rejection(router.complete(request('gpt-4o'), call()));
    expect(s.seen).toHaveLength(1);
    expect(err.message).toBe(Errors.LLM_REQUEST_FAILED('oa', Errors.LLM_BAD_RESPONSE('not JSON (<html>gateway</html>)').detail).detail);
  });

  it('a 2xx JSON answer that is not an object is an unreadable response', async () => {
    const s = await track(startScriptedServer(() => ({ rawBody: 'null' })));
    const { router } = makeRouter([providerConfig({ name: 'oa', type: 'openai', baseUrl: s.url })]);
    const err = await rejection(router.complete(request('gpt-4o'), call()));
    expect(err.message).toBe(Errors.LLM_REQUEST_FAILED('oa', Errors.LLM_BAD_RESPONSE('not a JSON object (null)').detail).detail);
  });

  it('defaults to https://api.openai.com/v1', async () => {
    const fetchSpy = vi.spyOn(globalThis, 'fetch').mockResolvedValue(new Response(JSON.stringify(openAiOk('x')), { status: 200 }));
    const provider = new OpenAiProvider(providerConfig({ name: 'oa', type: 'openai' }));
    await provider.complete(request('gpt-4o'), new AbortController().signal);
    expect(fetchSpy.mock.calls[0]![0]).toBe('https://api.openai.com/v1/chat/completions');
  });
});
