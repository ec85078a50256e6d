import { afterEach, describe, expect, it } from 'vitest';
import { BASE_LISTENERS, eventually, organismYaml, STORAGE_KINDS, startService, type Service } from './fixture.js';

let svc: Service | null = null;
afterEach(async () => {
  await svc?.close();
  svc = null;
});

const withCeiling = (n: number) => organismYaml(BASE_LISTENERS).replace('max_tokens_per_thread: 50000', `max_tokens_per_thread: ${n}`);

interface Budget {
  maxTokens: number;
  totalTokens: number;
  promptTokens: number;
  completionTokens: number;
  isExhausted: boolean;
  active: boolean;
}

describe.each(STORAGE_KINDS)('reload of max_tokens_per_thread (%s store)', (storage) => {
  it('running threads at the default take the new ceiling, spend kept; a ceiling the operator set is kept; lowering below spend exhausts', async () => {
    svc = await startService({ storage });
    const s = svc;
    const budget = async (threadId: string): Promise<Budget> => (await s.request('GET', `/api/v1/usage/threads/${threadId}`)).body as Budget;
    // The shouter is paused: greeter's message waits for it, so both threads stay live.
    await s.request('POST', '/api/v1/agents/shouter/pause');
    const own = 'thread-with-own-ceiling';
    expect((await s.request('PUT', `/api/v1/usage/threads/${own}`, { body: { maxTokens: 60_000 } })).status).toBe(200);
    const threads: string[] = [];
    for (const threadId of [undefined, own]) {
      const res = await s.request('POST', '/api/v1/inject', { body: { to: 'greeter', payload: { Greeting: { name: 'Ada' } }, ...(threadId ? { threadId } : {}) } });
      threads.push(res.body.threadId as string);
    }
    const [byDefault] = threads as [string];
    const spent = await eventually(async () => {
      const b = await budget(byDefault);
      return b.totalTokens > 0 && (await budget(own)).totalTokens > 0 ? b : null;
    }, 'both threads to have spent tokens');
    expect(spent).toMatchObject({ maxTokens: 50_000, active: true });

    s.writeConfig(withCeiling(90_000));
    const res = await s.request('POST', '/api/v1/organism/reload');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toMatchObject({ changed: ['max_tokens_per_thread'], restartRequired: [] });
    const raised = await eventually(async () => {
      const b = await budget(byDefault);
      return b.maxTokens === 90_000 ? b : null;
    }, 'the running thread to take the new ceiling');
    expect(raised).toMatchObject({ promptTokens: spent.promptTokens, completionTokens: spent.completionTokens, active: true, isExhausted: false });
    expect((await budget(own)).maxTokens).toBe(60_000);
    expect((await s.request('GET', '/api/v1/usage/threads')).body.defaultMaxTokens).toBe(90_000);

    // Lowered below what the thread has spent: it is exhausted, its spend untouched.
    const below = Math.max(1, spent.totalTokens - 1);
    s.writeConfig(withCeiling(below));
    expect((await s.request('POST', '/api/v1/organism/reload')).status).toBe(200);
    const lowered = await eventually(async () => {
      const b = await budget(byDefault);
      return b.maxTokens === below ? b : null;
    }, 'the running thread to take the lowered ceiling');
    expect(lowered).toMatchObject({ totalTokens: spent.totalTokens, isExhausted: true });
    expect((await budget(own)).maxTokens).toBe(60_000);
  });
});
