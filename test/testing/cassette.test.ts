import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { replayCassette } from '../../src/testing/index.js';
import { openAiChunks, openAiOk } from '../llm/servers/openai-server.js';
import { startScriptedServer, type ScriptedServer, type SeenRequest } from '../llm/servers/scripted-server.js';
import { eventually, startService, type Service } from '../service/fixture.js';
import { runCli } from '../cli/processes.js';

/** How many cassettes the acceptance replays (the number). */
const CASSETTES = 20;

function answer(req: SeenRequest) {
  const messages = req.body['messages'] as Array<{ role: string; content: string }>;
  const system = messages.find((m) => m.role === 'system')?.content ?? '';
  const last = [...messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  const text = system.includes('research')
    ? `<send to="writer"><Findings><topic>${/<text>([^<]*)<\/text>/.exec(last)?.[1]}</topic><summary>agreed</summary></Findings></send>`
    : `<send to="announcer"><Text><text>News on ${/<topic>([^<]*)<\/topic>/.exec(last)?.[1]}</text></Text></send>`;
  const completion = openAiOk(text, {}, 'gpt-test');
  return req.body['stream'] ? { events: openAiChunks(completion, true) } : { body: completion };
}

const yaml = (url: string, { writerPrompt = 'You write announcements.', writerPeers = '[announcer]' } = {}) => `organism: {name: cassettes}
llm:
  providers:
    - {name: fake, type: openai, base_url: ${url}, models: [gpt-test], max_retries: 0}
payloads:
  Question: {fields: {text: string}}
  Findings: {fields: {topic: string, summary: string}}
  Text: {fields: {text: string}}
listeners:
  - name: researcher
    description: Researches
    handler: builtin:llm
    model: gpt-test
    reply_format: xml
    prompt: You research questions.
    payload: Question
    peers: [writer]
  - name: writer
    description: Writes
    handler: builtin:llm
    model: gpt-test
    reply_format: xml
    prompt: ${writerPrompt}
    payload: Findings
    peers: ${writerPeers}
  - name: announcer
    description: Records what it receives
    payload: Text
    handler: ./handlers.ts#echo
`;

let fake: ScriptedServer;
let s: Service;
const files: string[] = [];
beforeAll(async () => {
  fake = await startScriptedServer(answer);
  s = await startService({ yaml: yaml(fake.url), storage: 'sqlite' });
  for (let i = 0; i < CASSETTES; i++) {
    const id = (await s.request('POST', '/api/v1/inject', { body: { to: 'researcher', payload: { text: `topic ${i}` } } })).body.threadId as string;
    await eventually(async () => (await s.request('GET', `/api/v1/threads/${id}`)).body.status === 'completed', `thread ${id}`);
    const file = path.join(s.dir, `cassette-${i}.json`);
    writeFileSync(file, JSON.stringify((await s.request('GET', `/api/v1/threads/${id}/export`)).body));
    files.push(file);
  }
}, 120_000);
afterAll(async () => {
  await s?.close();
  await fake?.close();
});
let requests = 0;
afterEach(() => {
  // Offline: the provider never hears of a replay.
  expect(fake.seen.length).toBe(requests);
});

describe('replayCassette (organism/testing)', () => {
  it(`replays ${CASSETTES} exported cassettes offline: all identical under the configuration that made them`, async () => {
    requests = fake.seen.length;
    for (const file of files) expect(await replayCassette(file, { config: { yaml: yaml(fake.url), dir: s.dir } })).toMatchObject({ verdict: 'identical', differences: [] });
  });

  it("a changed writer prompt: changed (the writer's requests differ, the same messages flow)", async () => {
    requests = fake.seen.length;
    const r = await replayCassette(files[0]!, { config: { yaml: yaml(fake.url, { writerPrompt: 'You write LOUD announcements.' }), dir: s.dir } });
    expect(r.verdict).toBe('changed');
    expect(r.differences).toEqual(["the request of writer's call 1 differs from its record"]);
  });

  it('the writer loses its peer announcer: regression, naming what is missing', async () => {
    requests = fake.seen.length;
    const r = await replayCassette(files[1]!, { config: { yaml: yaml(fake.url, { writerPeers: '[]' }), dir: s.dir } });
    expect(r.verdict).toBe('regression');
    expect(r.differences.join('\n')).toMatch(/message 3: recorded writer -> announcer \(Text\), replayed/);
  });

  it('organism replay CASSETTE... --config FILE: a verdict per cassette, exit 0 when none regressed, 7 when one did', async () => {
    requests = fake.seen.length;
    const same = path.join(s.dir, 'same.yaml');
    const peerless = path.join(s.dir, 'peerless.yaml');
    writeFileSync(same, yaml(fake.url));
    writeFileSync(peerless, yaml(fake.url, { writerPeers: '[]' }));
    const ok = runCli(['replay', ...files.slice(0, 3), '--config', same]);
    expect(ok.status, ok.stderr).toBe(0);
    expect(ok.stdout).toContain(`${files[0]}: identical`);
    expect(ok.stdout).toContain('3 cassette(s): 3 identical, 0 changed, 0 regression');
    const bad = runCli(['replay', files[0]!, '--config', peerless]);
    expect(bad.status, bad.stderr).toBe(7);
    expect(bad.stdout).toContain(`${files[0]}: regression`);
    expect(bad.stdout).toMatch(/message 3: recorded writer -> announcer/);
  }, 120_000);
});
