import { afterEach, describe, expect, it } from 'vitest';
import { BASE_LISTENERS, eventually, OPERATOR as OPS, organismYaml, probe, startService, type Service } from './fixture.js';

let svc: Service | undefined;
afterEach(async () => {
  await svc?.close();
  svc = undefined;
});

async function inject(s: Service, to: string, text: string, threadId?: string) {
  const res = await s.request('POST', '/api/v1/inject', { body: { to, payload: { Text: { text } }, ...(threadId ? { threadId } : {}) } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body as { threadId: string; messageId: string };
}

const textsOf = (listener: string, prefix: string) =>
  probe()
    .calls.filter((c) => c.listener === listener && c.text.startsWith(prefix))
    .map((c) => c.text);

describe('pause and resume', () => {
  it('pause holds messages (nothing dropped) and resume releases them in order', async () => {
    svc = await startService();
    const s = svc;
    expect((await s.request('POST', '/api/v1/agents/echo/pause')).status).toBe(200);
    const sent = ['held-1', 'held-2', 'held-3', 'held-4'];
    for (const text of sent) await inject(s, 'echo', text, 'held-thread');
    await eventually(async () => (await s.request('GET', '/api/v1/agents/echo')).body.queueDepth === 4 || null, 'four queued');
    const agent = (await s.request('GET', '/api/v1/agents/echo')).body;
    expect(agent).toMatchObject({ state: 'paused', queueDepth: 4 });
    expect(textsOf('echo', 'held-')).toEqual([]);
    expect((await s.request('POST', '/api/v1/agents/echo/resume')).body.state).toBe('idle');
    await eventually(() => textsOf('echo', 'held-').length === 4 || null, 'all four delivered');
    expect(textsOf('echo', 'held-')).toEqual(sent);
    expect((await s.request('GET', '/api/v1/agents/echo')).body.queueDepth).toBe(0);
  });
});

describe('kill', () => {
  it('aborts in-flight work, marks the thread killed and refuses new messages into it with 409', async () => {
    svc = await startService();
    const s = svc;
    const { threadId } = await inject(s, 'slow', 'kill-me');
    await eventually(() => probe().release.has('kill-me') || null, 'slow handler to start');
    expect((await s.request('GET', '/api/v1/agents/slow')).body).toMatchObject({ state: 'processing', currentThread: threadId });
    const res = await s.request('POST', `/api/v1/threads/${threadId}/kill`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, threadId });
    await eventually(() => probe().aborted.includes('kill-me') || null, 'handler to be aborted');
    const thread = await eventually(async () => {
      const t = (await s.request('GET', `/api/v1/threads/${threadId}`)).body;
      return t.status === 'killed' ? t : null;
    }, 'thread killed');
    expect(thread.status).toBe('killed');
    const refused = await s.request('POST', '/api/v1/inject', { body: { to: 'echo', threadId, payload: { Text: { text: 'late' } } } });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toBe(`Thread ${threadId} was killed; it accepts no more messages`);
    const killedList = await s.request('GET', '/api/v1/threads?status=killed');
    expect(killedList.body.threads.map((t: { id: string }) => t.id)).toContain(threadId);
  });
});

describe('stop and restart', () => {
  it('POST /organism/stop answers stopping, then calls onStop', async () => {
    svc = await startService();
    const s = svc;
    const res = await s.request('POST', '/api/v1/organism/stop');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, status: 'stopping' });
    await eventually(() => s.stops === 1 || null, 'onStop');
  });

  it('without onStop the organism itself stops and new injections get 503 with Retry-After', async () => {
    svc = await startService({ app: { onStop: undefined } });
    const s = svc;
    // the fixture passes onStop; drop it for this instance
    expect((await s.request('POST', '/api/v1/organism/stop')).status).toBe(200);
    await eventually(() => s.organism.status === 'stopped' || null, 'organism stopped');
    const res = await s.request('POST', '/api/v1/inject', { body: { to: 'echo', payload: { Text: { text: 'too late' } } } });
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(res.body.detail).toBe('Organism is stopped and accepts no new messages');
    expect((await s.request('GET', '/api/v1/organism')).body.status).toBe('stopped');
  });

  it('POST /organism/restart answers 202 restarting, then calls onRestart', async () => {
    svc = await startService();
    const s = svc;
    const res = await s.request('POST', '/api/v1/organism/restart');
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ success: true, status: 'restarting' });
    await eventually(() => s.restarts === 1 || null, 'onRestart');
  });
});

describe('reload', () => {
  const names = async (s: Service) => (await s.request('GET', '/api/v1/agents')).body.agents.map((a: { name: string }) => a.name).sort();

  it('adds, removes and updates listeners from the file', async () => {
    svc = await startService();
    const s = svc;
    const next = BASE_LISTENERS.filter((l) => l.name !== 'broken').map((l) => (l.name === 'echo' ? { ...l, yaml: l.yaml.replace('Records what it receives', 'Records everything') } : l));
    next.push({
      name: 'extra',
      yaml: `  - name: extra
    description: Added by reload
    payload: Text
    handler: ./handlers.ts#echo`,
    });
    s.writeConfig(organismYaml(next));
    const res = await s.request('POST', '/api/v1/organism/reload');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      success: true,
      added: ['extra'],
      removed: ['broken'],
      updated: ['echo'],
      updatedFields: { echo: ['description'] },
      changed: [],
      restartRequired: [],
      error: null,
      dryRun: false,
    });
    expect(await names(s)).toEqual(['echo', 'extra', 'greeter', 'shouter', 'slow']);
    expect((await s.request('GET', '/api/v1/agents/echo')).body.description).toBe('Records everything');
    const { messageId } = await inject(s, 'extra', 'to the new one');
    await eventually(() => probe().calls.find((c) => c.messageId === messageId && c.listener === 'extra'), 'extra to run');
  });

  it('dryRun reports the diff and changes nothing', async () => {
    svc = await startService();
    const s = svc;
    s.writeConfig(organismYaml(BASE_LISTENERS.filter((l) => l.name !== 'slow')));
    const res = await s.request('POST', '/api/v1/organism/reload?dry_run=true');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ success: true, added: [], removed: ['slow'], updated: [], updatedFields: {}, changed: [], restartRequired: [], error: null, dryRun: true });
    expect(await names(s)).toContain('slow');
  });

  it('an invalid file -> 500 RELOAD_INVALID with every problem (spec reload rule 7), and nothing changes; the dry run answers 422', async () => {
    svc = await startService();
    const s = svc;
    const before = await names(s);
    s.writeConfig(organismYaml(BASE_LISTENERS).replace('payload: Greeting', 'payload: Nonexistent').replace('max_tokens_per_thread: 50000', 'max_tokens_per_thread: lots'));
    const res = await s.request('POST', '/api/v1/organism/reload');
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('RELOAD_INVALID');
    expect(res.body.detail).toMatch(/^Configuration is invalid: 2 problems/);
    expect(res.body.errors).toHaveLength(2);
    expect(res.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['listeners[3].payload', 'max_tokens_per_thread']);
    expect(res.body.errors.find((e: { field: string }) => e.field === 'listeners[3].payload').message).toMatch(/organism\.yaml:\d+:\d+: .*Nonexistent/);
    expect(await names(s)).toEqual(before);
    const dry = await s.request('POST', '/api/v1/organism/reload?dryRun=true');
    expect(dry.status).toBe(422);
    expect(dry.body.code).toBe('RELOAD_INVALID');
    expect(dry.body.detail).toBe(res.body.detail);
    expect(dry.body.errors).toEqual(res.body.errors);
  });

  it('a provider an agent calls whose api_key_env is unset -> 500 RELOAD_INVALID naming the variable, and nothing changes', async () => {
    delete process.env['RELOAD_TEST_UNSET_KEY'];
    // No reloadConfig of its own: the route loads the file as serve does.
    svc = await startService({ app: { reloadConfig: undefined } });
    const s = svc;
    s.writeConfig(
      organismYaml(BASE_LISTENERS).replace(
        '  pricing:\n',
        '    - name: real\n      type: openai\n      base_url: http://127.0.0.1:9/v1\n      api_key_env: RELOAD_TEST_UNSET_KEY\n      models: [mock-small]\n      priority: -1\n  pricing:\n',
      ),
    );
    const res = await s.request('POST', '/api/v1/organism/reload');
    expect(res.status).toBe(500);
    expect(res.body.code).toBe('RELOAD_INVALID');
    expect(res.body.errors).toEqual([
      {
        location: 'config',
        field: 'llm.providers[1].api_key_env',
        message: expect.stringMatching(
          /organism\.yaml:\d+:\d+: llm\.providers\[1\]\.api_key_env: environment variable `RELOAD_TEST_UNSET_KEY` is not set: it holds the API key of provider `real`, which `greeter` calls/,
        ),
      },
    ]);
    const config = (await s.request('GET', '/api/v1/organism/config')).body as { llm: { providers: Array<{ name: string }> } };
    expect(config.llm.providers.map((p) => p.name)).toEqual(['mock']);
  });

  it('a failure without text -> 500 Reload failed', async () => {
    svc = await startService({ app: { reloadConfig: () => Promise.reject(new Error('')) } });
    const res = await svc.request('POST', '/api/v1/organism/reload');
    expect(res.status).toBe(500);
    expect(res.body.detail).toBe('Reload failed');
  });
});

describe('refusals change nothing (SQLite)', () => {
  it('a redeliver refused because the thread was killed leaves the entry FAILED and nothing pending', async () => {
    svc = await startService({ storage: 'sqlite' });
    const s = svc;
    const { threadId, messageId } = await inject(s, 'broken', 'fails');
    await eventually(async () => (await s.request('GET', `/api/v1/journal/${messageId}`)).body.deliveryState === 'FAILED' || null, 'entry FAILED');
    const before = (await s.request('GET', `/api/v1/journal/${messageId}`)).body;
    // The thread ended in error; kill is refused (see below), so kill it through a live message first.
    await inject(s, 'slow', 'keeps it alive', threadId);
    await eventually(() => probe().release.has('keeps it alive') || null, 'slow handler to start');
    expect((await s.request('POST', `/api/v1/threads/${threadId}/kill`)).status).toBe(200);

    const res = await s.request('POST', `/api/v1/journal/${messageId}/redeliver`);
    expect(res.status).toBe(409);
    expect(res.body.detail).toBe(`Thread ${threadId} was killed; it accepts no more messages`);
    const after = (await s.request('GET', `/api/v1/journal/${messageId}`)).body;
    expect(after).toEqual(before);
    const stats = (await s.request('GET', '/api/v1/journal/stats')).body;
    expect(stats.counts.PENDING).toBe(0);
    expect(stats.oldestPendingAgeMs).toBeNull();
  });

  it.each(['completed', 'error'])('kill of a %s thread is 409 Thread already finished and keeps its status', async (status) => {
    svc = await startService({ storage: 'sqlite' });
    const s = svc;
    const { threadId } = await inject(s, status === 'completed' ? 'echo' : 'broken', 'done');
    const thread = await eventually(async () => {
      const t = (await s.request('GET', `/api/v1/threads/${threadId}`)).body;
      return t.status === status ? t : null;
    }, `thread ${status}`);
    const res = await s.request('POST', `/api/v1/threads/${threadId}/kill`);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({ code: 'THREAD_FINISHED', detail: `Thread already finished: ${threadId}` });
    const again = (await s.request('GET', `/api/v1/threads/${threadId}`)).body;
    expect(again.status).toBe(status);
    expect(again.lastActivity).toBe(thread.lastActivity);
  });
});

describe('reload of keys beyond the listeners', () => {
  const yaml = () => organismYaml(BASE_LISTENERS);

  it('max_tokens_per_thread: reported, and threads that start afterwards get the new ceiling', async () => {
    svc = await startService({ storage: 'sqlite' });
    const s = svc;
    s.writeConfig(yaml().replace('max_tokens_per_thread: 50000', 'max_tokens_per_thread: 777'));
    const dry = await s.request('POST', '/api/v1/organism/reload?dryRun=true');
    expect(dry.body).toMatchObject({ changed: ['max_tokens_per_thread'], restartRequired: [], dryRun: true });
    expect((await s.request('GET', '/api/v1/usage/threads')).body.defaultMaxTokens).toBe(50000);
    const res = await s.request('POST', '/api/v1/organism/reload');
    expect(res.body).toMatchObject({ success: true, added: [], removed: [], updated: [], changed: ['max_tokens_per_thread'], restartRequired: [] });
    expect((await s.request('GET', '/api/v1/usage/threads')).body.defaultMaxTokens).toBe(777);
    // A new thread's budget is created with the new ceiling.
    await s.request('POST', '/api/v1/agents/shouter/pause');
    const started = await s.request('POST', '/api/v1/inject', { body: { to: 'greeter', payload: { Greeting: { name: 'Ada' } } } });
    const threadId = started.body.threadId as string;
    const budget = await eventually(async () => {
      const r = await s.request('GET', `/api/v1/usage/threads/${threadId}`);
      return r.status === 200 ? r.body : null;
    }, 'the budget of the new thread');
    expect(budget.maxTokens).toBe(777);
  });

  it('a provider base_url, pricing and limits are reported by key (dry run too); journal keys need a restart', async () => {
    svc = await startService();
    const s = svc;
    const next = yaml()
      .replace('      type: mock\n', '      type: mock\n      base_url: http://127.0.0.1:9/v1\n')
      .replace('mock-small: {prompt: 0.5, completion: 1.5}', 'mock-small: {prompt: 0.7, completion: 1.5}')
      .replace('max_tokens_per_thread: 50000', 'max_tokens_per_thread: 50000\nmax_hops: 7\njournal:\n  max_attempts: 9');
    s.writeConfig(next);
    const expected = ['max_hops', 'llm.providers.mock.base_url', 'llm.pricing.mock-small', 'journal.max_attempts'];
    const dry = await s.request('POST', '/api/v1/organism/reload?dryRun=true');
    expect(dry.status, JSON.stringify(dry.body)).toBe(200);
    expect([...dry.body.changed].sort()).toEqual([...expected].sort());
    expect(dry.body.restartRequired).toEqual(['journal.max_attempts']);
    const res = await s.request('POST', '/api/v1/organism/reload');
    expect([...res.body.changed].sort()).toEqual([...expected].sort());
    const config = (await s.request('GET', '/api/v1/organism/config')).body;
    expect(JSON.stringify(config)).toContain('http://127.0.0.1:9/v1');
    // Applied: nothing changes on a second reload of the same file.
    expect((await s.request('POST', '/api/v1/organism/reload')).body).toMatchObject({ changed: [], restartRequired: [] });
  });

  it('auth tokens: a new token works after reload and the removed one stops; an unset variable is 500 RELOAD_INVALID and changes nothing', async () => {
    const env: Record<string, string> = { FIRST_TOKEN: 'first-token-123456', SECOND_TOKEN: 'second-token-654321' };
    const resolve = (config: { auth: { tokens: readonly { name: string; role: 'operator' | 'viewer' | 'approver'; tokenEnv: string }[] } }) => {
      const problems: string[] = [];
      const tokens = [{ name: 'ops', role: 'operator' as const, token: OPS }];
      for (const t of config.auth.tokens) {
        const value = env[t.tokenEnv];
        if (value) tokens.push({ name: t.name, role: t.role as 'operator', token: value });
        else problems.push(`auth token "${t.name}": environment variable ${t.tokenEnv} is not set`);
      }
      return { tokens, problems };
    };
    const withTokens = (names: Array<[string, string]>) => `${yaml()}auth:\n  tokens:\n${names.map(([n, e]) => `    - {name: ${n}, role: viewer, token_env: ${e}}`).join('\n')}\n`;
    svc = await startService({ yaml: withTokens([['first', 'FIRST_TOKEN']]), app: { resolveTokens: resolve } });
    const s = svc;
    const asToken = (token: string) => s.request('GET', '/api/v1/organism', { token });
    expect((await asToken('second-token-654321')).status).toBe(401);

    s.writeConfig(withTokens([['second', 'SECOND_TOKEN']]));
    const res = await s.request('POST', '/api/v1/organism/reload');
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.changed).toEqual(['auth.tokens.second', 'auth.tokens.first']);
    expect((await asToken('second-token-654321')).status).toBe(200);

    s.writeConfig(
      withTokens([
        ['second', 'SECOND_TOKEN'],
        ['third', 'THIRD_TOKEN_UNSET'],
      ]),
    );
    const bad = await s.request('POST', '/api/v1/organism/reload');
    expect(bad.status).toBe(500);
    expect(bad.body.code).toBe('RELOAD_INVALID');
    expect(bad.body.errors).toEqual([{ location: 'config', field: 'auth.tokens', message: 'auth token "third": environment variable THIRD_TOKEN_UNSET is not set' }]);
    expect((await asToken('second-token-654321')).status).toBe(200);
    expect((await s.request('GET', '/api/v1/organism/config')).body.auth.tokens).toHaveLength(1);
  });
});
