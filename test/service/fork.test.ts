import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { openAiChunks, openAiOk } from '../llm/servers/openai-server.js';
import { startScriptedServer, type ScriptedServer, type SeenRequest } from '../llm/servers/scripted-server.js';
import { eventually, STORAGE_KINDS, startService, VIEWER, type Service } from './fixture.js';

/** How many completed threads the acceptance forks (issue 29). */
const FORKED_THREADS = 100;

const RESEARCHER_PROMPT = 'You research questions. Send what you find to the writer.';
const WRITER_PROMPT = 'You write short announcements from findings and send them to the announcer.';

/**
 * An OpenAI-compatible model that answers from the request alone: the researcher (its system
 * prompt says "research") sends Findings on the question's text, the writer an announcement;
 * a writer whose prompt says LOUD announces in upper case. It counts every request.
 */
function answer(req: SeenRequest) {
  const messages = req.body['messages'] as Array<{ role: string; content: string }>;
  const system = messages.find((m) => m.role === 'system')?.content ?? '';
  const last = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  let text: string;
  if (system.includes('research')) {
    const topic = /<text>([^<]*)<\/text>/.exec(last)?.[1] ?? '?';
    text = `<send to="writer"><Findings><topic>${topic}</topic><summary>Sources agree on ${topic}.</summary></Findings></send>`;
  } else {
    const topic = /<topic>([^<]*)<\/topic>/.exec(last)?.[1] ?? '?';
    const news = `News on ${topic}`;
    text = `<send to="announcer"><Text><text>${system.includes('LOUD') ? news.toUpperCase() : news}</text></Text></send>`;
  }
  const completion = openAiOk(text, {}, 'gpt-test');
  return req.body['stream'] ? { events: openAiChunks(completion, true) } : { body: completion };
}

function yaml(url: string, writerPrompt = WRITER_PROMPT, record = 'full'): string {
  return `organism:
  name: fork-test
max_tokens_per_thread: 50000
llm:
  record: ${record}
  providers:
    - name: fake
      type: openai
      base_url: ${url}
      models: [gpt-test]
      max_retries: 0
  pricing:
    gpt-test: {prompt: 1, completion: 2}
payloads:
  Question:
    description: A question
    fields:
      text: string
  Findings:
    description: What was found
    fields:
      topic: string
      summary: string
  Text:
    description: Plain text
    fields:
      text: string
listeners:
  - name: researcher
    description: Researches
    handler: builtin:llm
    model: gpt-test
    reply_format: xml
    prompt: ${researcherPromptLine()}
    payload: Question
    peers: [writer]
  - name: writer
    description: Writes
    handler: builtin:llm
    model: gpt-test
    reply_format: xml
    prompt: ${writerPrompt}
    payload: Findings
    peers: [announcer]
  - name: announcer
    description: Records what it receives
    payload: Text
    handler: ./handlers.ts#echo
`;
}

function researcherPromptLine(): string {
  return RESEARCHER_PROMPT;
}

interface Msg {
  id: string;
  from: string;
  to: string;
  payloadType: string;
  payload: Record<string, unknown>;
}

const services: Service[] = [];
let server: ScriptedServer;
beforeAll(async () => {
  server = await startScriptedServer(answer);
});
afterAll(async () => {
  await server.close();
});
afterEach(async () => {
  while (services.length) await services.pop()!.close();
});

async function settled(s: Service, threadId: string): Promise<void> {
  await eventually(async () => (await s.request('GET', `/api/v1/threads/${threadId}`)).body.status === 'completed', `thread ${threadId} to complete`);
}

async function messagesOf(s: Service, threadId: string): Promise<Msg[]> {
  return (await s.request('GET', `/api/v1/threads/${threadId}/messages?limit=100`)).body.messages as Msg[];
}

const shape = (ms: readonly Msg[]) => ms.map((m) => ({ from: m.from, to: m.to, payloadType: m.payloadType, payload: m.payload }));

async function sources(s: Service, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await s.request('POST', '/api/v1/inject', { body: { to: 'researcher', payload: { text: `topic ${i}` } } });
    expect(res.status).toBe(200);
    ids.push(res.body.threadId as string);
  }
  for (const id of ids) await settled(s, id);
  return ids;
}

async function fork(s: Service, threadId: string, body: Record<string, unknown> = {}): Promise<{ threadId: string; replay: string }> {
  const res = await s.request('POST', `/api/v1/threads/${threadId}/fork`, { body });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/**
 * A fork under a LOUD writer: the researcher's call replayed, the writer's live, the first two
 * messages as the source's and the announcement in upper case; compare names the writer.
 */
async function liveAtTheWriter(s: Service, sourceId: string, forkId: string) {
  const calls = (await s.request('GET', `/api/v1/threads/${forkId}/llm-calls`)).body.calls as Array<Record<string, unknown>>;
  expect(calls.map((c) => [c.agent, c.replayed])).toEqual([
    ['researcher', true],
    ['writer', false],
  ]);
  const forked = await messagesOf(s, forkId);
  const source = await messagesOf(s, sourceId);
  expect(shape(forked.slice(0, 2))).toEqual(shape(source.slice(0, 2)));
  expect(forked[2]!.payload['text']).toBe(String(source[2]!.payload['text']).toUpperCase());
  const cmp = (await s.request('GET', `/api/v1/threads/${sourceId}/compare/${forkId}`)).body;
  expect(cmp.firstCallDivergence).toMatchObject({ index: 1, agent: 'writer' });
  expect(cmp.firstDivergence).toBe(2);
  return { source, cmp };
}

describe.each(STORAGE_KINDS)('time travel: fork (%s)', (storage) => {
  async function start(text: string): Promise<Service> {
    const s = await startService({ yaml: text, storage });
    services.push(s);
    return s;
  }

  it(`forks ${FORKED_THREADS} completed threads with no config change: every fork's messages equal its source's, the provider gets no request, every call replayed at zero cost`, {
    timeout: 180_000,
  }, async () => {
    const s = await start(yaml(server.url));
    const ids = await sources(s, FORKED_THREADS);
    const before = new Map<string, Msg[]>();
    for (const id of ids) before.set(id, await messagesOf(s, id));
    const requests = server.seen.length;

    const forks = [];
    for (const id of ids) forks.push(await fork(s, id));
    for (const f of forks) await settled(s, f.threadId);

    expect(server.seen.length - requests).toBe(0);
    for (const [i, id] of ids.entries()) {
      const f = forks[i]!;
      expect(f).toMatchObject({ forkedFrom: { threadId: id, messageId: before.get(id)![0]!.id }, replay: 'record', liveReason: null, history: 0, dryRun: false });
      const forked = await messagesOf(s, f.threadId);
      expect(shape(forked)).toEqual(shape(before.get(id)!));
      expect(forked.every((m) => !before.get(id)!.some((b) => b.id === m.id))).toBe(true);
      // The source is never changed.
      expect(await messagesOf(s, id)).toEqual(before.get(id));
      const info = (await s.request('GET', `/api/v1/threads/${f.threadId}`)).body;
      expect(info.forkedFrom).toEqual({ threadId: id, messageId: before.get(id)![0]!.id });
      expect(info.forkConfig).toBeNull();
      expect((await s.request('GET', `/api/v1/threads/${id}`)).body.forkedFrom).toBeNull();
      const calls = (await s.request('GET', `/api/v1/threads/${f.threadId}/llm-calls`)).body.calls as Array<Record<string, unknown>>;
      const original = (await s.request('GET', `/api/v1/threads/${id}/llm-calls`)).body.calls as Array<Record<string, unknown>>;
      expect(calls.map((c) => [c.agent, c.replayed, c.cost])).toEqual([
        ['researcher', true, 0],
        ['writer', true, 0],
      ]);
      expect(calls.map((c) => c.replayOf)).toEqual(original.map((c) => c.id));
      expect(calls.map((c) => c.requestHash)).toEqual(original.map((c) => c.requestHash));
      expect(calls.map((c) => c.usage)).toEqual(original.map((c) => c.usage));
      expect(original.every((c) => c.replayed === false && typeof c.requestHash === 'string')).toBe(true);
      if (i < 3) {
        const cmp = (await s.request('GET', `/api/v1/threads/${id}/compare/${f.threadId}`)).body;
        expect(cmp).toMatchObject({ firstDivergence: null, firstCallDivergence: null, toolCallsOnlyIn: { a: [], b: [] } });
        expect(cmp.messages.every((m: { same: boolean }) => m.same)).toBe(true);
        expect(cmp.a).toMatchObject({ threadId: id, messages: 3, llmCalls: 2, replayedCalls: 0 });
        expect(cmp.b).toMatchObject({ threadId: f.threadId, messages: 3, llmCalls: 2, replayedCalls: 2, chargedTokens: 0, cost: 0, tokens: cmp.a.tokens });
        expect(cmp.a.cost).toBeGreaterThan(0);
      }
    }
    // A fork of a fork replays too.
    const second = await fork(s, forks[0]!.threadId);
    await settled(s, second.threadId);
    expect(shape(await messagesOf(s, second.threadId))).toEqual(shape(before.get(ids[0]!)!));
    expect(server.seen.length - requests).toBe(0);
  });

  it("a config whose writer prompt changed: each fork replays the researcher and goes live at the writer's first call", async () => {
    const s = await start(yaml(server.url));
    const ids = await sources(s, 3);
    s.writeConfig(yaml(server.url, 'You write LOUD announcements from findings and send them to the announcer.'));
    expect((await s.request('POST', '/api/v1/organism/reload')).status).toBe(200);
    const requests = server.seen.length;
    for (const id of ids) {
      const f = await fork(s, id);
      await settled(s, f.threadId);
      const { source, cmp } = await liveAtTheWriter(s, id, f.threadId);
      expect(cmp.firstCallDivergence).toMatchObject({ a: { agent: 'writer' }, b: { agent: 'writer' } });
      expect(cmp.firstCallDivergence.a.requestHash).not.toBe(cmp.firstCallDivergence.b.requestHash);
      expect(cmp.firstDivergence).toBe(2);
      expect(cmp.messages[2]).toMatchObject({ same: false, a: { from: 'writer', to: 'announcer' }, payloadDiff: [{ path: '$.text', a: source[2]!.payload['text'] }] });
      expect(cmp.b).toMatchObject({ replayedCalls: 1, llmCalls: 2 });
      expect(cmp.b.chargedTokens).toBeGreaterThan(0);
    }
    const live = server.seen.slice(requests);
    expect(live).toHaveLength(3);
    expect(live.every((r) => JSON.stringify(r.body).includes('LOUD'))).toBe(true);
  });

  it('forks at a later message: the messages before it are the history (not delivered again), the rest replays', async () => {
    const s = await start(yaml(server.url));
    const [id] = await sources(s, 1);
    const source = await messagesOf(s, id!);
    const requests = server.seen.length;
    const f = await fork(s, id!, { atMessageId: source[1]!.id });
    expect(f).toMatchObject({ forkedFrom: { threadId: id, messageId: source[1]!.id }, history: 1 });
    await settled(s, f.threadId);
    expect(shape(await messagesOf(s, f.threadId))).toEqual(shape(source));
    const calls = (await s.request('GET', `/api/v1/threads/${f.threadId}/llm-calls`)).body.calls as Array<Record<string, unknown>>;
    expect(calls.map((c) => [c.agent, c.replayed])).toEqual([['writer', true]]);
    expect(server.seen.length).toBe(requests);
    // The researcher's call belongs to the history (not made in the fork): no divergence.
    const cmp = (await s.request('GET', `/api/v1/threads/${id}/compare/${f.threadId}`)).body;
    expect(cmp).toMatchObject({ firstDivergence: null, firstCallDivergence: null, b: { llmCalls: 1, replayedCalls: 1 } });
    expect((await s.request('GET', `/api/v1/threads/${f.threadId}/compare/${id}`)).body.firstCallDivergence).toBeNull();
    const info = (await s.request('GET', `/api/v1/threads/${f.threadId}`)).body;
    expect(info).toMatchObject({ messageCount: 3, participants: expect.arrayContaining(['api', 'researcher', 'writer', 'announcer']) });
  });

  it('refuses what it cannot fork with a 4xx naming it; a dry run creates nothing; viewers may not fork', async () => {
    const s = await start(yaml(server.url));
    const [id] = await sources(s, 1);
    const source = await messagesOf(s, id!);
    expect((await s.request('POST', '/api/v1/threads/nope/fork', { body: {} })).body.code).toBe('THREAD_NOT_FOUND');
    const other = await s.request('POST', `/api/v1/threads/${id}/fork`, { body: { atMessageId: 'no-such-message' } });
    expect(other.status).toBe(422);
    expect(other.body.code).toBe('FORK_MESSAGE_NOT_IN_THREAD');
    expect((await s.request('POST', `/api/v1/threads/${id}/fork`, { body: { bogus: 1 } })).status).toBe(422);
    expect((await s.request('POST', `/api/v1/threads/${id}/fork`, { body: {}, token: VIEWER })).status).toBe(403);
    expect((await s.request('GET', `/api/v1/threads/${id}/compare/${id}`, { token: VIEWER })).status).toBe(403);
    expect((await s.request('GET', `/api/v1/threads/${id}/compare/nope`)).body.code).toBe('THREAD_NOT_FOUND');
    const total = (await s.request('GET', '/api/v1/threads')).body.total;
    // The cassette: versioned, the messages in order with the recorded calls, no key anywhere.
    const cassette = await s.request('GET', `/api/v1/threads/${id}/export`);
    expect(cassette.status).toBe(200);
    expect(cassette.body).toMatchObject({ format: 'organism.cassette', version: 1, organism: 'fork-test', thread: { id, status: 'completed', forkedFrom: null } });
    expect(cassette.body.messages.map((m: Msg) => m.id)).toEqual(source.map((m) => m.id));
    expect(cassette.body.llmCalls.map((c: { agent: string; requestHash: string }) => [c.agent, c.requestHash.length])).toEqual([
      ['researcher', 64],
      ['writer', 64],
    ]);
    expect(JSON.stringify(cassette.body)).not.toMatch(/authorization|bearer|api_key/i);
    expect((await s.request('GET', `/api/v1/threads/${id}/export`, { token: VIEWER })).status).toBe(403);
    const dry = await s.request('POST', `/api/v1/threads/${id}/fork`, { body: { dryRun: true } });
    expect(dry.body).toMatchObject({ threadId: null, dryRun: true, replay: 'record', forkedFrom: { threadId: id, messageId: source[0]!.id } });
    expect((await s.request('GET', '/api/v1/threads')).body.total).toBe(total);
  });

  it('a fork under another organism.yaml (configPath): only the fork runs it, replaying the researcher and going live at the changed writer', async () => {
    const s = await start(yaml(server.url));
    const ids = await sources(s, 3);
    writeFileSync(join(s.dir, 'loud.yaml'), yaml(server.url, 'You write LOUD announcements from findings and send them to the announcer.'));
    const requests = server.seen.length;
    for (const id of ids) {
      const res = await s.request('POST', `/api/v1/threads/${id}/fork`, { body: { configPath: 'loud.yaml' } });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body).toMatchObject({ replay: 'record', config: { path: realpathSync(join(s.dir, 'loud.yaml')), updated: ['writer'], removed: [], changed: [] } });
      expect(res.body.config.hash).toMatch(/^[0-9a-f]{16}$/);
      const f = res.body as { threadId: string };
      await settled(s, f.threadId);
      expect((await s.request('GET', `/api/v1/threads/${f.threadId}`)).body).toMatchObject({ forkedFrom: { threadId: id }, forkConfig: res.body.config.path });
      await liveAtTheWriter(s, id, f.threadId);
    }
    const live = server.seen.slice(requests);
    expect(live).toHaveLength(3);
    expect(live.every((r) => JSON.stringify(r.body).includes('LOUD'))).toBe(true);

    // The running organism is unchanged: a new thread's writer is not LOUD.
    const [fresh] = await sources(s, 1);
    const text = String((await messagesOf(s, fresh!))[2]!.payload['text']);
    expect(text).toBe('News on topic 0');
    expect((await s.request('GET', '/api/v1/agents')).body.agents.map((a: { name: string }) => a.name)).toEqual(['researcher', 'writer', 'announcer']);

    // What it refuses, with a 422 naming the problem.
    const refused = async (configPath: string) => {
      const res = await s.request('POST', `/api/v1/threads/${ids[0]}/fork`, { body: { configPath } });
      expect(res.status, JSON.stringify(res.body)).toBe(422);
      return res.body as { code: string; detail: string };
    };
    const outside = mkdtempSync(join(tmpdir(), 'fork-outside-'));
    writeFileSync(join(outside, 'organism.yaml'), yaml(server.url));
    expect(await refused(join(outside, 'organism.yaml'))).toMatchObject({ code: 'FORK_CONFIG_OUTSIDE' });
    expect(await refused('../' + basename(outside) + '/organism.yaml')).toMatchObject({ code: 'FORK_CONFIG_OUTSIDE' });
    rmSync(outside, { recursive: true, force: true });
    expect(await refused('nope.yaml')).toMatchObject({ code: 'FORK_CONFIG_INVALID', detail: expect.stringContaining('no such file') });
    writeFileSync(join(s.dir, 'broken.yaml'), yaml(server.url).replace('max_tokens_per_thread: 50000', 'max_tokens_per_thread: lots'));
    expect((await refused('broken.yaml')).detail).toContain('max_tokens_per_thread');
    writeFileSync(
      join(s.dir, 'added.yaml'),
      `${yaml(server.url)}  - name: critic
    description: Criticises
    payload: Text
    handler: ./handlers.ts#echo
`,
    );
    expect(await refused('added.yaml')).toMatchObject({ code: 'FORK_CONFIG_INVALID', detail: expect.stringContaining('adds listener critic') });
    const dry = await s.request('POST', `/api/v1/threads/${ids[0]}/fork`, { body: { configPath: 'loud.yaml', dryRun: true } });
    expect(dry.body).toMatchObject({ threadId: null, dryRun: true, config: { updated: ['writer'] } });
  });

  it('under llm.record: metadata the fork says it runs live, and calls the provider', async () => {
    const s = await start(yaml(server.url, WRITER_PROMPT, 'metadata'));
    const [id] = await sources(s, 1);
    const requests = server.seen.length;
    const f = await fork(s, id!);
    expect(f.replay).toBe('live');
    expect((f as unknown as { liveReason: string }).liveReason).toContain('llm.record');
    await settled(s, f.threadId);
    expect(server.seen.length - requests).toBe(2);
  });
});
